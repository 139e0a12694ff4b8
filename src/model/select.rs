//! Keeping some virtual hosts: the model as if the others were not in the configuration,
//! so that only the sites being moved are converted (and verified).
//!
//! The main server is untouched: its settings and sections apply to every kept vhost as
//! before.  Dropped vhosts go with everything that exists only through them: their
//! `<VirtualHost>` line in the main server, the `.htaccess` files only they reach (a file
//! other servers reach stays, without them).  For each address the first kept vhost that
//! lists it becomes the default, which is what Apache picks once the others are removed
//! from its configuration.  Nothing is read again.

use super::{Coverage, Model, vhost};

impl Model {
    /// Keeps the virtual hosts at the indices `keep` (into `self.vhosts`), in their order.
    pub fn keep_vhosts(&mut self, keep: &[usize]) {
        let old = std::mem::take(&mut self.vhosts);
        // Old index -> new index.
        let mut renumber: Vec<Option<usize>> = vec![None; old.len()];
        let mut dropped_at = Vec::new();
        for (i, v) in old.into_iter().enumerate() {
            if keep.contains(&i) {
                renumber[i] = Some(self.vhosts.len());
                self.vhosts.push(v);
            } else {
                dropped_at.push(v.scope.at);
            }
        }
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
    fn keeping_every_vhost_changes_nothing() {
        let (_, mut model) = plesk();
        let before = serde_json::to_string(&model).unwrap();
        let all: Vec<usize> = (0..model.vhosts.len()).collect();
        model.keep_vhosts(&all);
        assert_eq!(serde_json::to_string(&model).unwrap(), before);
    }
}
