//! Reading some per-directory files again into a model, without the rest: what `lighten
//! watch` does when an .htaccess changes on a big server (one account's file, among
//! thousands, read and modelled again in a millisecond instead of the whole server in
//! seconds).
//!
//! The result is the model [`super::build`] would give for the configuration and the files
//! as they are now: the same discovery (the changed paths walked as the full walk would
//! walk them), the same servers reaching each file with the same permissions, the same
//! order. When that cannot be promised, nothing is changed and the caller reads the whole
//! configuration again ([`Reread::Whole`]): a path a symbolic link reaches or a file with
//! another name (a symbolic or hard link: the file is also read under that name, which no
//! event names), a walk that hit its limit, a path outside the folders looked in.

use super::{Builder, Model, htaccess, jobs_for, reaches};
use crate::config::Config;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::FileId;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// What reading the changed paths again did.
#[derive(Debug)]
pub enum Reread {
    /// The model now holds the files as they are; the sites reaching the files read before
    /// or now are `vhosts` (indices into `Model::vhosts`), with `main` when the main server
    /// reaches one.
    Changed { vhosts: Vec<usize>, main: bool },
    /// The files read are what the model held (a folder of cache pages appeared, a file
    /// was saved with the same bytes): nothing changed.
    Same,
    /// Only a whole reading is exact here; the model is untouched.
    Whole(String),
}

/// Reads the per-directory files at or below `changed` (paths on this machine: files
/// written, created, removed, renamed, or folders) again into `model`; `config` gains the
/// files read (new file ids) and their diagnostics, and loses those of the files replaced.
pub fn reread(config: &mut Config, model: &mut Model, changed: &[PathBuf]) -> Reread {
    if config.diagnostics.iter().any(|d| d.code == Code::WalkLimit) {
        return Reread::Whole("the last walk for .htaccess files stopped at its limit".into());
    }
    let mut paths: Vec<String> = Vec::new();
    for c in changed {
        // A link on the way, or a link elsewhere pointing here: the file is also read
        // under another name, which no event names.
        // (the nearest folder that exists: a folder removed with its files)
        let existing = c.ancestors().skip(1).find(|a| a.exists());
        if existing.is_none_or(|a| std::fs::canonicalize(a).ok().as_deref() != Some(a)) {
            return Reread::Whole(format!("{} is reached through a symbolic link", c.display()));
        }
        // A file that is a link, or has another name (a hard link): another site may read
        // it under that name.
        if let Ok(m) = std::fs::symlink_metadata(c)
            && (m.file_type().is_symlink() || (m.is_file() && m.nlink() > 1))
        {
            return Reread::Whole(format!("{} is a link: another name may read it", c.display()));
        }
        if model.access_links.iter().any(|t| c.starts_with(t) || t.starts_with(c)) {
            return Reread::Whole(format!("a symbolic link points at {}", c.display()));
        }
        let Some(p) = config.sysroot.apache_path(c) else {
            return Reread::Whole(format!("{} is outside the configuration's root", c.display()));
        };
        if !model.access_roots.iter().any(|r| under(&p, r.trim_end_matches('/'))) {
            return Reread::Whole(format!(
                "{} is outside the folders .htaccess files are read in",
                c.display()
            ));
        }
        paths.push(p);
    }
    // What the full walk finds at those paths now.
    let mut files = Vec::new();
    for (p, host) in paths.iter().zip(changed) {
        if host.is_dir() {
            let found = htaccess::discover(
                &config.sysroot,
                std::slice::from_ref(p),
                &model.access_names,
                config.walk_limit,
            );
            if found.truncated || !found.link_targets.is_empty() {
                return Reread::Whole(format!("{} holds symbolic links or too many entries", host.display()));
            }
            if found
                .files
                .iter()
                .any(|f| std::fs::metadata(config.sysroot.host_path(f)).is_ok_and(|m| m.nlink() > 1))
            {
                return Reread::Whole(format!(
                    "{} holds a file with another name (a hard link)",
                    host.display()
                ));
            }
            files.extend(found.files);
        } else if host.is_file()
            && host.file_name().is_some_and(|n| model.access_names.iter().any(|a| a.as_str() == n))
        {
            files.push(p.clone());
        }
    }
    files.sort();
    files.dedup();
    let old: Vec<usize> = (0..model.htaccess.len())
        .filter(|&i| paths.iter().any(|p| under(&model.htaccess[i].path, p)))
        .collect();
    let servers = reaches(&model.server, &model.vhosts);
    let jobs = jobs_for(&model.server, &servers, files);
    let mut b = Builder {
        diags: Vec::new(),
        htaccess: true,
        registered: model.registered_methods.clone(),
        vhost_items: Vec::new(),
        expr_modules: super::expr_modules(&model.modules),
    };
    let base = config.sources.len();
    drop(servers);
    let new = b.read_all(config, jobs);
    // The same files with the same bytes, reached the same way: the model stays.
    let text = |f: Option<FileId>| f.map(|f| config.sources.file(f).text.as_str());
    let same = old.len() == new.len()
        && old.iter().zip(&new).all(|(&i, n)| {
            let o = &model.htaccess[i];
            o.path == n.path
                && o.host_ids == n.host_ids
                && o.allow_override == n.allow_override
                && text(o.file) == text(n.file)
        });
    if same {
        config.sources.truncate(base);
        return Reread::Same;
    }
    let mut vhosts = Vec::new();
    let mut main = false;
    for h in old.iter().map(|&i| &model.htaccess[i]).chain(&new) {
        for id in &h.host_ids {
            match id {
                Some(i) => vhosts.push(*i),
                None => main = true,
            }
        }
    }
    vhosts.sort_unstable();
    vhosts.dedup();
    // The replaced files' diagnostics go; the new ones come.
    let gone: Vec<FileId> = old.iter().filter_map(|&i| model.htaccess[i].file).collect();
    config.diagnostics.retain(|d: &Diagnostic| !d.span.is_some_and(|s| gone.contains(&s.file)));
    config.diagnostics.extend(b.diags);
    let mut kept: Vec<_> = std::mem::take(&mut model.htaccess)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !old.contains(i))
        .map(|(_, h)| h)
        .collect();
    kept.extend(new);
    // The full walk's order: by path, a file's groups in the order they were made.
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    model.htaccess = kept;
    model.coverage = super::Coverage::count(&model.server, &model.vhosts, &model.htaccess);
    Reread::Changed { vhosts, main }
}

/// `path` is `dir` or below it.
fn under(path: &str, dir: &str) -> bool {
    path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/')) || dir.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, LoadOptions};
    use crate::source::Sysroot;
    use std::path::Path;

    fn copy_tree(from: &Path, to: &Path) {
        for e in walkdir::WalkDir::new(from) {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(from).unwrap();
            if e.file_type().is_dir() {
                std::fs::create_dir_all(to.join(rel)).unwrap();
            } else if e.file_type().is_file() {
                std::fs::copy(e.path(), to.join(rel)).unwrap();
            }
        }
    }

    fn load(root: &Path) -> (Config, Model) {
        let opts = LoadOptions { sysroot: Sysroot::at(root), ..LoadOptions::default() };
        let mut cfg = config::load(&root.join("var/www/vhosts"), &opts).unwrap();
        let (model, diags) = crate::model::build(&mut cfg);
        cfg.diagnostics.extend(diags);
        (cfg, model)
    }

    /// The model after re-reading, as JSON, with each .htaccess's text (file ids differ).
    fn seen(cfg: &Config, m: &Model) -> String {
        let texts: Vec<String> = m
            .htaccess
            .iter()
            .map(|h| h.file.map(|f| cfg.sources.file(f).text.clone()).unwrap_or_default())
            .collect();
        let json = serde_json::to_string(m).unwrap();
        let mut named = String::new();
        let mut rest = json.as_str();
        while let Some(k) = rest.find("\"file\":") {
            let (head, tail) = rest.split_at(k + 7);
            named.push_str(head);
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            match tail[..digits].parse::<u32>() {
                Ok(id) => named.push_str(&format!("{:?}", cfg.sources.file(FileId(id)).display)),
                Err(_) => named.push_str(&tail[..digits]),
            }
            rest = &tail[digits..];
        }
        named.push_str(rest);
        format!("{named}\n{texts:?}")
    }

    #[test]
    fn rereading_changed_files_gives_the_model_a_whole_reading_gives() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("plesk");
        copy_tree(Path::new("fixtures/plesk"), &root);
        let (mut cfg, mut model) = load(&root);
        let shop = root.join("var/www/vhosts/shop.example/httpdocs");
        let blog = root.join("var/www/vhosts/blog.example/httpdocs");
        // edited, new in a new folder, removed with its folder, and a new folder without one
        std::fs::write(shop.join(".htaccess"), "RewriteEngine On\nRewriteRule ^old$ /new [R=301,L]\n")
            .unwrap();
        std::fs::create_dir_all(shop.join("private")).unwrap();
        std::fs::write(shop.join("private/.htaccess"), "Require all denied\n<Files\n").unwrap();
        std::fs::remove_dir_all(blog.join("wp-content/uploads/backups")).unwrap();
        std::fs::create_dir_all(blog.join("wp-content/cache/page")).unwrap();
        let changed = [
            shop.join(".htaccess"),
            shop.join("private"),
            blog.join("wp-content/uploads/backups"),
            blog.join("wp-content/cache/page"),
        ];
        let vhosts = match reread(&mut cfg, &mut model, &changed) {
            Reread::Changed { vhosts, main } => {
                assert!(!main);
                vhosts
            }
            other => panic!("{other:?}"),
        };
        let names: Vec<&str> =
            vhosts.iter().filter_map(|&i| model.vhosts[i].server_name.as_deref()).collect();
        assert!(names.contains(&"shop.example") && names.contains(&"blog.example"), "{names:?}");
        assert!(!names.contains(&"static.example"), "{names:?}");
        let (whole_cfg, whole) = load(&root);
        assert!(
            seen(&cfg, &model) == seen(&whole_cfg, &whole),
            "the re-read model differs from a whole reading"
        );
        // the broken file's error is the configuration's, once
        let errors = |c: &Config| {
            c.diagnostics
                .iter()
                .filter(|d| {
                    d.span.is_some_and(|s| c.sources.file(s.file).display.ends_with("private/.htaccess"))
                })
                .count()
        };
        assert!(errors(&cfg) > 0);
        assert_eq!(errors(&cfg), errors(&whole_cfg));

        // The same bytes saved again, and a folder of cache pages: nothing changes.
        std::fs::write(shop.join(".htaccess"), "RewriteEngine On\nRewriteRule ^old$ /new [R=301,L]\n")
            .unwrap();
        std::fs::create_dir_all(blog.join("wp-content/cache/page2")).unwrap();
        let again = [shop.join(".htaccess"), blog.join("wp-content/cache/page2")];
        assert!(matches!(reread(&mut cfg, &mut model, &again), Reread::Same));

        // A file another site reads under another name, by a symbolic or a hard link:
        // only a whole reading knows both names.
        let blog_priv = blog.join("private");
        std::fs::create_dir_all(&blog_priv).unwrap();
        std::os::unix::fs::symlink(shop.join(".htaccess"), blog_priv.join(".htaccess")).unwrap();
        assert!(matches!(reread(&mut cfg, &mut model, &[blog_priv.join(".htaccess")]), Reread::Whole(_)));
        std::fs::remove_file(blog_priv.join(".htaccess")).unwrap();
        std::fs::hard_link(shop.join(".htaccess"), blog_priv.join(".htaccess")).unwrap();
        assert!(matches!(reread(&mut cfg, &mut model, &[shop.join(".htaccess")]), Reread::Whole(_)));
        assert!(matches!(reread(&mut cfg, &mut model, std::slice::from_ref(&blog_priv)), Reread::Whole(_)));
        std::fs::remove_file(blog_priv.join(".htaccess")).unwrap();

        // A link to a folder: only a whole reading knows both names.
        std::os::unix::fs::symlink(shop.join("private"), shop.join("alias")).unwrap();
        let (mut cfg, mut model) = load(&root);
        std::fs::write(shop.join("private/.htaccess"), "Require all denied\n").unwrap();
        assert!(matches!(reread(&mut cfg, &mut model, &[shop.join("private/.htaccess")]), Reread::Whole(_)));
    }
}
