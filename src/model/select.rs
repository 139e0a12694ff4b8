//! Keeping some virtual hosts: the model as if the others were not in the configuration,
//! so that only the sites being moved are converted (and verified).
//!
//! The main server is untouched: its settings and sections apply to every kept vhost as
//! before.  Dropped vhosts go with everything that exists only through them: their
//! `<VirtualHost>` line in the main server, the `.htaccess` files only they reach (a file
//! other servers reach stays, without them).  For each address the first kept vhost that
//! lists it becomes the default, which is what Apache picks once the others are removed
//! from its configuration.  Nothing is read again.

use super::{Coverage, Model, VirtualHost, vhost};
use crate::source::FileId;

impl Model {
    /// Keeps the virtual hosts at the indices `keep` (into `self.vhosts`), in their order.
    pub fn keep_vhosts(&mut self, keep: &[usize]) {
        let old: Vec<Option<VirtualHost>> = std::mem::take(&mut self.vhosts).into_iter().map(Some).collect();
        self.select(old, keep);
    }

    /// The model with only the virtual hosts at the indices `keep`, as [`Model::keep_vhosts`]
    /// makes it; only what is kept is copied (one account of a server of thousands).
    pub fn only_vhosts(&self, keep: &[usize]) -> Model {
        let kept: std::collections::HashSet<Option<usize>> =
            keep.iter().map(|&i| Some(i)).chain([None]).collect();
        let mut m = Model {
            input: self.input.clone(),
            apache_version: self.apache_version.clone(),
            server_root: self.server_root.clone(),
            modules: self.modules.clone(),
            server: self.server.clone(),
            vhosts: Vec::new(),
            skipped_vhosts: self.skipped_vhosts.clone(),
            htaccess: self
                .htaccess
                .iter()
                .filter(|h| h.host_ids.is_empty() || h.host_ids.iter().any(|id| kept.contains(id)))
                .cloned()
                .collect(),
            coverage: Coverage::default(),
            access_roots: self.access_roots.clone(),
            access_names: self.access_names.clone(),
            access_links: self.access_links.clone(),
            registered_methods: self.registered_methods.clone(),
        };
        let old: Vec<Option<VirtualHost>> = self
            .vhosts
            .iter()
            .enumerate()
            .map(|(i, v)| if keep.contains(&i) { Some(v.clone()) } else { None })
            .collect();
        let spans: Vec<(usize, crate::source::Span)> =
            self.vhosts.iter().enumerate().map(|(i, v)| (i, v.scope.at)).collect();
        m.select_with(old, keep, &spans);
        m
    }

    fn select(&mut self, old: Vec<Option<VirtualHost>>, keep: &[usize]) {
        let spans: Vec<(usize, crate::source::Span)> =
            old.iter().enumerate().filter_map(|(i, v)| Some((i, v.as_ref()?.scope.at))).collect();
        self.select_with(old, keep, &spans);
    }

    /// `old`: the vhosts by their old index (`None` for one not copied, never kept);
    /// `spans`: where each old vhost starts.
    fn select_with(
        &mut self,
        old: Vec<Option<VirtualHost>>,
        keep: &[usize],
        spans: &[(usize, crate::source::Span)],
    ) {
        // Old index -> new index.
        let mut renumber: Vec<Option<usize>> = vec![None; old.len()];
        for (i, v) in old.into_iter().enumerate() {
            if let Some(v) = v
                && keep.contains(&i)
            {
                renumber[i] = Some(self.vhosts.len());
                self.vhosts.push(v);
            }
        }
        let dropped_at: std::collections::HashSet<crate::source::Span> =
            spans.iter().filter(|(i, _)| renumber[*i].is_none()).map(|(_, at)| *at).collect();
        self.server
            .directives
            .retain(|d| !(d.name.eq_ignore_ascii_case("<VirtualHost") && dropped_at.contains(&d.at)));
        for v in &mut self.vhosts {
            v.default_for.clear();
        }
        vhost::mark_defaults(&mut self.vhosts);

        let vhosts = &self.vhosts;
        self.htaccess.retain_mut(|h| {
            let reached = !h.host_ids.is_empty();
            let mut ids = Vec::new();
            let mut labels = Vec::new();
            for (id, label) in h.host_ids.iter().zip(&h.hosts) {
                match id {
                    None => {
                        ids.push(None);
                        labels.push(label.clone());
                    }
                    Some(i) => {
                        if let Some(n) = renumber[*i] {
                            ids.push(Some(n));
                            labels.push(vhosts[n].label(n));
                        }
                    }
                }
            }
            h.host_ids = ids;
            h.hosts = labels;
            // A file no server reached stays what it was (unreachable); one reached only
            // through dropped vhosts is not part of the sites kept.
            !reached || !h.host_ids.is_empty()
        });
        self.coverage = Coverage::count(&self.server, &self.vhosts, &self.htaccess);
    }
}

/// A digest of a value's `Debug` text, and the source files its spans name (`FileId(N)`),
/// taken as the text is written: a big server's model is never held twice as text.
#[derive(Default)]
struct Print {
    hash: std::collections::hash_map::DefaultHasher,
    files: std::collections::BTreeSet<u32>,
    /// How much of `FileId(` the text just written ends with, and the digits after it.
    matched: usize,
    number: Option<u32>,
}

impl Print {
    fn of(value: &dyn std::fmt::Debug) -> Print {
        let mut p = Print::default();
        let _ = std::fmt::write(&mut p, format_args!("{value:?}"));
        p
    }

    fn digest(&self) -> u64 {
        use std::hash::Hasher;
        self.hash.finish()
    }
}

impl std::fmt::Write for Print {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        use std::hash::Hasher;
        const OPEN: &[u8] = b"FileId(";
        self.hash.write(s.as_bytes());
        for &b in s.as_bytes() {
            if self.matched < OPEN.len() {
                self.matched =
                    if b == OPEN[self.matched] { self.matched + 1 } else { usize::from(b == b'F') };
                continue;
            }
            match (b, self.number) {
                (b'0'..=b'9', n) => {
                    self.number = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(u32::from(b - b'0')))
                }
                (b')', Some(n)) => {
                    self.files.insert(n);
                    self.number = None;
                    self.matched = 0;
                }
                _ => {
                    self.number = None;
                    self.matched = usize::from(b == b'F');
                }
            }
        }
        Ok(())
    }
}

/// What [`Prints::changed_vhosts`] compares of a model: the digest of each part and the
/// source files it names (`lighten watch` keeps those of the model in force).
pub struct Prints {
    server: (u64, std::collections::BTreeSet<u32>),
    vhosts: Vec<(u64, std::collections::BTreeSet<u32>)>,
}

impl Model {
    /// The digests of the main server (its sections but the `<VirtualHost>` lines, which
    /// are the vhosts' own, its .htaccess files, the modules, where .htaccess files are
    /// looked for) and of each virtual host with the .htaccess files only it reaches.
    pub fn prints(&self) -> Prints {
        let mut scope = self.server.clone();
        scope.directives.retain(|d| !d.name.eq_ignore_ascii_case("<VirtualHost"));
        let main: Vec<&super::Htaccess> =
            self.htaccess.iter().filter(|h| h.host_ids.is_empty() || h.host_ids.contains(&None)).collect();
        let server = Print::of(&(
            &self.input,
            &self.apache_version,
            &self.server_root,
            &self.modules,
            &scope,
            &self.skipped_vhosts,
            (&self.access_roots, &self.access_names, &self.access_links, &self.registered_methods),
            main,
        ));
        // (the .htaccess files each vhost reaches, found in one pass)
        let mut own: Vec<Vec<&super::Htaccess>> = vec![Vec::new(); self.vhosts.len()];
        for h in &self.htaccess {
            for i in h.host_ids.iter().flatten() {
                own[*i].push(h);
            }
        }
        let vhosts = crate::par::map(&self.vhosts, |i, v| {
            let p = Print::of(&(v, &own[i]));
            (p.digest(), p.files)
        });
        Prints { server: (server.digest(), server.files), vhosts }
    }
}

impl Prints {
    /// The virtual hosts (their indices, the same in both) in which the model `new` was
    /// made from differs from this one's, with the .htaccess files only they reach, or
    /// that read one of the changed files (`old_files` here, `new_files` there: an edit
    /// that moves no directive can still move their lines, which the output names).
    /// `Err` when anything else differs or reads a changed file: the main server, the
    /// virtual hosts' number. What `lighten watch` asks of a change to the configuration.
    pub fn changed_vhosts(
        &self,
        old_files: &[FileId],
        new: &Prints,
        new_files: &[FileId],
    ) -> Result<Vec<usize>, String> {
        let names = |files: &std::collections::BTreeSet<u32>, ids: &[FileId]| {
            ids.iter().any(|f| files.contains(&f.0))
        };
        if self.vhosts.len() != new.vhosts.len() {
            return Err("virtual hosts come or go".into());
        }
        if self.server.0 != new.server.0
            || names(&self.server.1, old_files)
            || names(&new.server.1, new_files)
        {
            return Err("the main server's configuration changes, or reads a changed file".into());
        }
        Ok((0..self.vhosts.len())
            .filter(|&i| {
                let (was, now) = (&self.vhosts[i], &new.vhosts[i]);
                was.0 != now.0 || names(&was.1, old_files) || names(&now.1, new_files)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{self, LoadOptions};
    use crate::source::Sysroot;
    use std::path::PathBuf;

    fn plesk() -> (config::Config, super::Model) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/plesk");
        let opts = LoadOptions { sysroot: Sysroot::at(&root), ..LoadOptions::default() };
        let mut cfg = config::load(&root.join("var/www/vhosts"), &opts).unwrap();
        let (model, _) = crate::model::build(&mut cfg);
        (cfg, model)
    }

    fn load_at(root: &std::path::Path) -> (config::Config, super::Model) {
        let opts = LoadOptions { sysroot: Sysroot::at(root), ..LoadOptions::default() };
        let mut cfg = config::load(&root.join("var/www/vhosts"), &opts).unwrap();
        let (model, _) = crate::model::build(&mut cfg);
        (cfg, model)
    }

    /// The ids of the files whose path ends with `rel`.
    fn ids(cfg: &config::Config, rel: &str) -> Vec<crate::source::FileId> {
        cfg.sources.files().filter(|(_, f)| f.display.ends_with(rel)).map(|(id, _)| id).collect()
    }

    fn append(path: &std::path::Path, text: &str) {
        let now = std::fs::read_to_string(path).unwrap();
        std::fs::write(path, now + text).unwrap();
    }

    #[test]
    fn an_accounts_own_file_changes_the_vhost_that_reads_it_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("plesk");
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/plesk");
        assert!(
            std::process::Command::new("cp").arg("-a").arg(&fixture).arg(&root).status().unwrap().success()
        );
        let (old_cfg, old) = load_at(&root);
        // Read again, unchanged: the same model, no vhost differs.
        let (_, same) = load_at(&root);
        assert_eq!(old.prints().changed_vhosts(&[], &same.prints(), &[]).unwrap(), Vec::<usize>::new());

        let conf = "system/shop.example/conf/vhost.conf";
        append(&root.join("var/www/vhosts").join(conf), "\nRedirect 301 /moved /shop\n");
        let (new_cfg, new) = load_at(&root);
        let hit =
            old.prints().changed_vhosts(&ids(&old_cfg, conf), &new.prints(), &ids(&new_cfg, conf)).unwrap();
        assert_eq!(names(&new).len(), names(&old).len());
        // (the https vhost's vhost_ssl.conf includes vhost.conf too: both read it)
        let hit_names: Vec<String> = hit.iter().map(|&i| names(&new)[i].clone()).collect();
        assert_eq!(hit_names, ["shop.example", "shop.example"], "{hit:?}");
        // A comment added: nothing differs, but the vhost that reads the file is named.
        append(&root.join("var/www/vhosts").join(conf), "\n# moved\n");
        let (c3, m3) = load_at(&root);
        assert_eq!(
            new.prints().changed_vhosts(&ids(&new_cfg, conf), &m3.prints(), &ids(&c3, conf)).unwrap(),
            hit
        );

        // The main server's own file concerns every site.
        let server = "etc/apache2/plesk.conf.d/server.conf";
        append(&root.join(server), "\n# an admin's note\n");
        let (c4, m4) = load_at(&root);
        assert!(m3.prints().changed_vhosts(&ids(&c3, server), &m4.prints(), &ids(&c4, server)).is_err());
    }

    #[test]
    fn a_print_names_the_files_its_spans_point_into() {
        use crate::source::{FileId, Span};
        let spans = [Span::new(FileId(12), 0, 1), Span::new(FileId(3), 4, 5)];
        let p = super::Print::of(&spans);
        assert_eq!(p.files.iter().copied().collect::<Vec<_>>(), [3, 12]);
        assert_eq!(p.digest(), super::Print::of(&spans).digest());
        assert_ne!(p.digest(), super::Print::of(&[spans[0]]).digest());
    }

    fn names(m: &super::Model) -> Vec<String> {
        m.vhosts.iter().map(|v| v.server_name.clone().unwrap_or_default()).collect()
    }

    #[test]
    fn kept_vhosts_are_converted_and_the_others_are_gone() {
        let (cfg, mut model) = plesk();
        let all = names(&model);
        let blog = all.iter().position(|n| n == "blog.example").unwrap();
        let statics: Vec<usize> =
            all.iter().enumerate().filter(|(_, n)| *n == "static.example").map(|(i, _)| i).collect();
        assert_eq!(statics.len(), 2, "{all:?}");
        let before = model.coverage.total();
        let mut keep = vec![blog];
        keep.extend(&statics);
        model.keep_vhosts(&keep);

        assert_eq!(names(&model), ["blog.example", "static.example", "static.example"]);
        // blog.example is now the first vhost on 203.0.113.10:80, so its default.
        assert_eq!(model.vhosts[0].default_for, ["203.0.113.10:80"]);
        assert_eq!(model.vhosts[2].default_for, ["[2001:db8::10]:80"]);
        // .htaccess files: only those the kept sites reach, with the new numbers.
        assert!(!model.htaccess.is_empty());
        for h in &model.htaccess {
            assert!(!h.path.contains("shop.example"), "{}", h.path);
            for (id, label) in h.host_ids.iter().zip(&h.hosts) {
                let n = id.expect("the main server reaches no .htaccess here");
                assert!(n < 3);
                assert_eq!(*label, model.vhosts[n].label(n));
            }
        }
        assert!(model.coverage.total() < before);

        // The conversion knows nothing of the dropped sites.
        let opts = crate::translate::Options {
            out_dir: "/srv/out".into(),
            listen: Vec::new(),
            runtime_dir: "/srv/out/run".into(),
            map_path: Box::new(|p: &str| p.to_string()),
            php_backend: None,
            fallback_cert: None,
            trace: false,
            apache_log_paths: false,
        };
        let conv = crate::translate::convert(&model, &cfg, &opts);
        let conf = &conv.files.iter().find(|(p, _)| p == &PathBuf::from("lighttpd.conf")).unwrap().1;
        assert!(conf.contains("blog\\.example") && conf.contains("static\\.example"), "{conf}");
        assert!(!conf.contains("shop") && !conf.contains("default-203"), "{conf}");
        for e in &conv.report.entries {
            // Only the main server's lines around the dropped vhosts stay.
            let around = matches!(e.directive.as_str(), "Include" | "<IfModule");
            assert!(!e.at.contains("shop.example") || around, "{} {}", e.at, e.directive);
        }
    }

    #[test]
    fn a_copy_of_some_vhosts_is_what_keeping_them_makes() {
        let (_, model) = plesk();
        for keep in [vec![], vec![0], vec![1, 3], (0..model.vhosts.len()).collect::<Vec<_>>()] {
            let copy = model.only_vhosts(&keep);
            let (_, mut kept) = plesk();
            kept.keep_vhosts(&keep);
            assert_eq!(serde_json::to_string(&copy).unwrap(), serde_json::to_string(&kept).unwrap());
        }
    }

    #[test]
    fn keeping_every_vhost_changes_nothing() {
        let (_, mut model) = plesk();
        let before = serde_json::to_string(&model).unwrap();
        let all: Vec<usize> = (0..model.vhosts.len()).collect();
        model.keep_vhosts(&all);
        assert_eq!(serde_json::to_string(&model).unwrap(), before);
    }
}
