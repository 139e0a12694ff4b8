//! Expanding an `Include` path into files, in the order Apache reads them.
//!
//! Verified against `apache2 -t` on Debian 12:
//! - A wildcard may stand in any path component; entries are matched with `fnmatch()` and a
//!   leading dot must be matched literally; matches are read in bytewise order.
//! - A directory (named, or matched by the last component) is read whole and recursively,
//!   dot files included, in bytewise order.
//! - `Include` fails when a wildcard matches nothing, or a matched directory lacks the rest
//!   of the path, or a literal path does not exist; `IncludeOptional` skips all three
//!   silently.

use crate::source::{Sysroot, clean_path};
use glob::{MatchOptions, Pattern};

/// Why an include could not be expanded completely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncludeProblem {
    /// A literal path that does not exist.
    NotFound(String),
    /// `pattern` matched nothing inside `dir`.
    NoMatch { pattern: String, dir: String },
}

const OPTIONS: MatchOptions =
    MatchOptions { case_sensitive: true, require_literal_separator: true, require_literal_leading_dot: true };

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// What an `Include` reads: its files in Apache's order, the problems Apache would
/// report, and the folders where a file added or removed would change what it reads (each
/// folder a wildcard lists, each folder read whole, the nearest existing folder above a
/// path that does not exist): what `lighten watch` watches beside the files.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    pub files: Vec<String>,
    pub problems: Vec<IncludeProblem>,
    pub dirs: Vec<String>,
}

/// Files to read for `path` (absolute, after ServerRoot resolution), with the problems
/// Apache would report.  With `optional`, wildcard misses are not problems.
pub fn expand(fs: &Sysroot, path: &str, optional: bool) -> Expansion {
    let mut e = Expansion::default();
    let path = clean_path(path);
    if !has_wildcard(&path) {
        literal(fs, &path, optional, &mut e);
        return e;
    }
    let comps: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    walk(fs, "", &comps, optional, &mut e);
    e
}

/// A path without wildcards: read if it exists, else a problem (unless optional) and its
/// nearest existing folder watched.
fn literal(fs: &Sysroot, p: &str, optional: bool, e: &mut Expansion) {
    if fs.exists(p) {
        read_path(fs, p, e);
        return;
    }
    if !optional {
        e.problems.push(IncludeProblem::NotFound(p.to_string()));
    }
    let mut dir = p;
    while let Some((up, _)) = dir.rsplit_once('/') {
        dir = up;
        let d = if dir.is_empty() { "/" } else { dir };
        if fs.is_dir(d) {
            e.dirs.push(d.to_string());
            break;
        }
    }
}

fn walk(fs: &Sysroot, base: &str, comps: &[&str], optional: bool, e: &mut Expansion) {
    let Some(i) = comps.iter().position(|c| has_wildcard(c)) else {
        literal(fs, &format!("{base}/{}", comps.join("/")), optional, e);
        return;
    };
    let dir = if i == 0 { base.to_string() } else { format!("{base}/{}", comps[..i].join("/")) };
    let dir_name = if dir.is_empty() { "/".to_string() } else { dir.clone() };
    let pattern = comps[i];
    let last = i + 1 == comps.len();
    let matcher = Pattern::new(pattern).ok();
    let mut matched = 0;
    e.dirs.push(dir_name.clone());
    for name in fs.list_dir(&dir_name).unwrap_or_default() {
        if name == "." || name == ".." {
            continue;
        }
        let hit = match &matcher {
            Some(m) => m.matches_with(&name, OPTIONS),
            None => name == pattern,
        };
        if !hit {
            continue;
        }
        let child = format!("{dir}/{name}");
        if last {
            matched += 1;
            read_path(fs, &child, e);
        } else if fs.is_dir(&child) {
            matched += 1;
            walk(fs, &child, &comps[i + 1..], optional, e);
        }
    }
    if matched == 0 && !optional {
        e.problems.push(IncludeProblem::NoMatch { pattern: pattern.to_string(), dir: dir_name });
    }
}

/// A file, or every file below a directory in bytewise order.
fn read_path(fs: &Sysroot, path: &str, e: &mut Expansion) {
    if fs.is_dir(path) {
        e.dirs.push(path.to_string());
        for name in fs.list_dir(path).unwrap_or_default() {
            read_path(fs, &format!("{}/{name}", path.trim_end_matches('/')), e);
        }
    } else {
        e.files.push(path.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for (p, body) in [
            ("etc/a/1.conf", "x"),
            ("etc/a/2.conf", "x"),
            ("etc/a/.hidden.conf", "x"),
            ("etc/a/sub/3.conf", "x"),
            ("etc/b/1.conf", "x"),
            ("etc/c/other", "x"),
        ] {
            fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
            fs::write(r.join(p), body).unwrap();
        }
        t
    }

    #[test]
    fn orders_and_misses_match_apache() {
        let t = tree();
        let fs = Sysroot::at(t.path());
        assert_eq!(expand(&fs, "/etc/a/*.conf", false).files, ["/etc/a/1.conf", "/etc/a/2.conf"]);
        assert_eq!(
            expand(&fs, "/etc/a", false).files,
            ["/etc/a/.hidden.conf", "/etc/a/1.conf", "/etc/a/2.conf", "/etc/a/sub/3.conf"]
        );
        assert_eq!(
            expand(&fs, "/etc/a/*", false).files,
            ["/etc/a/1.conf", "/etc/a/2.conf", "/etc/a/sub/3.conf"]
        );
        let Expansion { files, problems, .. } = expand(&fs, "/etc/*/1.conf", false);
        assert_eq!(files, ["/etc/a/1.conf", "/etc/b/1.conf"]);
        assert_eq!(problems, [IncludeProblem::NotFound("/etc/c/1.conf".into())]);
        assert!(expand(&fs, "/etc/*/1.conf", true).problems.is_empty());
        assert_eq!(
            expand(&fs, "/etc/a/*.nope", false).problems,
            [IncludeProblem::NoMatch { pattern: "*.nope".into(), dir: "/etc/a".into() }]
        );
        assert!(expand(&fs, "/etc/a/*.nope", true).problems.is_empty());
        assert_eq!(
            expand(&fs, "/etc/none.conf", false).problems,
            [IncludeProblem::NotFound("/etc/none.conf".into())]
        );
        assert!(expand(&fs, "/etc/none.conf", true).problems.is_empty());
    }

    #[test]
    fn the_folders_where_a_new_file_would_be_read_are_named() {
        let t = tree();
        let fs = Sysroot::at(t.path());
        // an empty match: the folder listed
        assert_eq!(expand(&fs, "/etc/a/*.nope", true).dirs, ["/etc/a"]);
        // a path that does not exist: the nearest folder above it
        assert_eq!(expand(&fs, "/etc/none/x.conf", true).dirs, ["/etc"]);
        // each level of the wildcard, and each folder read whole
        let dirs = expand(&fs, "/etc/*/1.conf", true).dirs;
        assert!(dirs.contains(&"/etc".to_string()) && dirs.contains(&"/etc/c".to_string()), "{dirs:?}");
        assert!(expand(&fs, "/etc/a", false).dirs.contains(&"/etc/a/sub".to_string()));
    }
}
