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

/// Files to read for `path` (absolute, after ServerRoot resolution), with the problems
/// Apache would report.  With `optional`, wildcard misses are not problems.
pub fn expand(fs: &Sysroot, path: &str, optional: bool) -> (Vec<String>, Vec<IncludeProblem>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let path = clean_path(path);
    if !has_wildcard(&path) {
        if fs.exists(&path) {
            read_path(fs, &path, &mut files);
        } else if !optional {
            problems.push(IncludeProblem::NotFound(path));
        }
        return (files, problems);
    }
    let comps: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    walk(fs, "", &comps, optional, &mut files, &mut problems);
    (files, problems)
}

fn walk(
    fs: &Sysroot,
    base: &str,
    comps: &[&str],
    optional: bool,
    files: &mut Vec<String>,
    problems: &mut Vec<IncludeProblem>,
) {
    let Some(i) = comps.iter().position(|c| has_wildcard(c)) else {
        let p = format!("{base}/{}", comps.join("/"));
        if fs.exists(&p) {
            read_path(fs, &p, files);
        } else if !optional {
            problems.push(IncludeProblem::NotFound(p));
        }
        return;
    };
    let dir = if i == 0 { base.to_string() } else { format!("{base}/{}", comps[..i].join("/")) };
    let dir_name = if dir.is_empty() { "/".to_string() } else { dir.clone() };
    let pattern = comps[i];
    let last = i + 1 == comps.len();
    let matcher = Pattern::new(pattern).ok();
    let mut matched = 0;
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
            read_path(fs, &child, files);
        } else if fs.is_dir(&child) {
            matched += 1;
            walk(fs, &child, &comps[i + 1..], optional, files, problems);
        }
    }
    if matched == 0 && !optional {
        problems.push(IncludeProblem::NoMatch { pattern: pattern.to_string(), dir: dir_name });
    }
}

/// A file, or every file below a directory in bytewise order.
fn read_path(fs: &Sysroot, path: &str, files: &mut Vec<String>) {
    if fs.is_dir(path) {
        for name in fs.list_dir(path).unwrap_or_default() {
            read_path(fs, &format!("{}/{name}", path.trim_end_matches('/')), files);
        }
    } else {
        files.push(path.to_string());
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
        assert_eq!(expand(&fs, "/etc/a/*.conf", false).0, ["/etc/a/1.conf", "/etc/a/2.conf"]);
        assert_eq!(
            expand(&fs, "/etc/a", false).0,
            ["/etc/a/.hidden.conf", "/etc/a/1.conf", "/etc/a/2.conf", "/etc/a/sub/3.conf"]
        );
        assert_eq!(expand(&fs, "/etc/a/*", false).0, ["/etc/a/1.conf", "/etc/a/2.conf", "/etc/a/sub/3.conf"]);
        let (files, problems) = expand(&fs, "/etc/*/1.conf", false);
        assert_eq!(files, ["/etc/a/1.conf", "/etc/b/1.conf"]);
        assert_eq!(problems, [IncludeProblem::NotFound("/etc/c/1.conf".into())]);
        assert!(expand(&fs, "/etc/*/1.conf", true).1.is_empty());
        assert_eq!(
            expand(&fs, "/etc/a/*.nope", false).1,
            [IncludeProblem::NoMatch { pattern: "*.nope".into(), dir: "/etc/a".into() }]
        );
        assert!(expand(&fs, "/etc/a/*.nope", true).1.is_empty());
        assert_eq!(
            expand(&fs, "/etc/none.conf", false).1,
            [IncludeProblem::NotFound("/etc/none.conf".into())]
        );
        assert!(expand(&fs, "/etc/none.conf", true).1.is_empty());
    }
}
