//! Finding .htaccess files and deciding what Apache makes of each one.
//!
//! A file counts for a server (main or virtual host) when a URL of that server maps into
//! its directory: under the DocumentRoot or an Alias target.  What it may contain is the
//! `AllowOverride` / `AllowOverrideList` in force for the directory, taken from the
//! non-regex `<Directory>` sections that match it, applied shortest path first (main
//! server before virtual host for equal lengths), the last one that sets it winning;
//! Apache 2.4's default is `None`, under which the file is never read.  Regex sections
//! cannot set AllowOverride.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/core.html#allowoverride> and
//! <https://httpd.apache.org/docs/2.4/sections.html#merging>.

use super::scope::{Matcher, Scope, ScopeKind};
use crate::config::HtaccessPerms;
use crate::source::{FileId, Span, Sysroot};
use glob::{MatchOptions, Pattern};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HtaccessStatus {
    /// Read and applied.
    Applied,
    /// AllowOverride None: Apache never reads it.
    Ignored,
    /// Apache answers 500 for the directory (and below) because of this file.
    Broken,
    /// No URL of any server maps to its directory.
    Unreachable,
}

#[derive(Clone, Debug, Serialize)]
pub struct Htaccess {
    /// The file, as Apache names it.
    pub path: String,
    pub dir: String,
    /// The servers that reach it: `"server"` or the vhost's index and name.
    pub hosts: Vec<String>,
    /// The same as indices into `Model::vhosts` (`None` for the main server).
    #[serde(skip)]
    pub host_ids: Vec<Option<usize>>,
    pub status: HtaccessStatus,
    /// The AllowOverride in force, in words.
    pub allow_override: String,
    #[serde(skip)]
    pub file: Option<FileId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Found {
    /// The Apache paths (as named, through the links), sorted.
    pub files: Vec<String>,
    /// Whether the limit stopped the walk.
    pub truncated: bool,
    /// What each symbolic link the walk went through points at, as a path on this
    /// machine: a file there is also found under the link's name.
    pub link_targets: Vec<std::path::PathBuf>,
}

/// Finds files named in `names` under `roots`, through symbolic links, sorted, visiting at
/// most `limit` entries.
pub fn discover(fs: &Sysroot, roots: &[String], names: &[String], limit: usize) -> Found {
    let mut out = Found::default();
    let mut visited = 0usize;
    let mut sorted: Vec<String> = roots.iter().map(|r| r.trim_end_matches('/').to_string()).collect();
    sorted.sort();
    sorted.dedup();
    // A root inside another root is walked once: keep a root only if none of its
    // ancestors is kept (sorted order puts ancestors first).
    let mut kept: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut walk_roots = Vec::new();
    for r in sorted {
        if ancestors(&r).skip(1).any(|a| kept.contains(a)) {
            continue;
        }
        kept.insert(r.clone());
        walk_roots.push(r);
    }
    for root in walk_roots {
        let host = fs.host_path(if root.is_empty() { "/" } else { &root });
        if !host.is_dir() {
            continue;
        }
        // Links are followed: Apache reads `<link>/.htaccess` through a link it follows
        // (the target's file, under the link's name); walkdir skips a loop.
        for entry in walkdir::WalkDir::new(&host).follow_links(true).sort_by_file_name() {
            visited += 1;
            if visited > limit {
                out.truncated = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            if entry.path_is_symlink()
                && let Ok(target) = std::fs::canonicalize(entry.path())
            {
                out.link_targets.push(target);
            }
            if !entry.file_type().is_file() {
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            if names.iter().any(|n| *n == name)
                && let Some(p) = fs.apache_path(entry.path())
            {
                out.files.push(p);
            }
        }
    }
    out.files.sort();
    out.files.dedup();
    out.link_targets.sort();
    out.link_targets.dedup();
    out
}

/// `path` and each of its ancestors, `/a/b/c`, `/a/b`, `/a`, `` (the root).
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path.trim_end_matches('/'));
    std::iter::from_fn(move || {
        let cur = next?;
        next = if cur.is_empty() { None } else { Some(cur.rsplit_once('/').map_or("", |(d, _)| d)) };
        Some(cur)
    })
}

/// Number of components, as Apache sorts `<Directory>` sections (`/` is 1, `/var/www` 3).
fn components(path: &str) -> usize {
    let trimmed = path.trim_end_matches('/');
    trimmed.matches('/').count() + 1
}

/// Whether a non-regex `<Directory>` path applies to directory `dir` (or an ancestor of it).
pub fn directory_matches(section: &str, dir: &str) -> bool {
    let sec = section.trim_end_matches('/');
    if sec.is_empty() {
        return true;
    }
    if sec.contains(['*', '?', '[']) {
        let n = sec.split('/').count();
        let parts: Vec<&str> = dir.trim_end_matches('/').split('/').collect();
        if parts.len() < n {
            return false;
        }
        let prefix = parts[..n].join("/");
        let opts = MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        return Pattern::new(sec).is_ok_and(|p| p.matches_with(&prefix, opts));
    }
    let d = dir.trim_end_matches('/');
    d == sec || d.starts_with(&format!("{sec}/"))
}

/// The `<Directory>` scopes (non-regex) that can set AllowOverride, with a sort key.
pub fn directory_sections<'a>(server: &'a Scope, vhost: Option<&'a Scope>) -> Vec<(&'a Scope, String)> {
    let mut out = Vec::new();
    for (order, top) in [Some(server), vhost].into_iter().flatten().enumerate() {
        for child in &top.children {
            if child.kind == ScopeKind::Directory
                && child.enabled
                && let Some(Matcher::Path(p)) = &child.matcher
            {
                out.push((order, child, p.clone()));
            }
        }
    }
    // Stable: shortest first, main server before vhost, then configuration order.
    out.sort_by_key(|(order, _, p)| (components(p), *order));
    out.into_iter().map(|(_, s, p)| (s, p)).collect()
}

/// The AllowOverride in force for `dir`.
pub fn perms_for(dir: &str, sections: &[(&Scope, String)]) -> HtaccessPerms {
    let mut perms = HtaccessPerms::default_none();
    for (scope, path) in sections {
        if !directory_matches(path, dir) {
            continue;
        }
        if let Some(ao) = &scope.settings.allow_override {
            perms.overrides = ao.classes;
            perms.options = ao.options.clone();
            perms.nonfatal_override = ao.nonfatal_override;
            perms.nonfatal_unknown = ao.nonfatal_unknown;
            perms.span = ao.at;
        }
        if let Some(list) = &scope.settings.allow_override_list {
            perms.list = list.value.clone();
            if perms.span.end == perms.span.start {
                perms.span = list.span;
            }
        }
    }
    perms
}

/// The span of the AllowOverride that decided, or `None` for Apache's default.
pub fn decided_by(perms: &HtaccessPerms) -> Option<Span> {
    (perms.span.end > perms.span.start).then_some(perms.span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_walk_up_to_the_root() {
        assert_eq!(ancestors("/a/b/").collect::<Vec<_>>(), ["/a/b", "/a", ""]);
        assert_eq!(ancestors("/").collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn directory_paths_match_like_apache() {
        assert!(directory_matches("/", "/var/www/html"));
        assert!(directory_matches("/var/www/", "/var/www/html"));
        assert!(directory_matches("/var/www", "/var/www"));
        assert!(!directory_matches("/var/www", "/var/wwwx"));
        assert!(directory_matches("/var/www/vhosts/*/httpdocs", "/var/www/vhosts/a.test/httpdocs/sub"));
        assert!(!directory_matches("/var/www/*/httpdocs", "/var/www/a/b/httpdocs"));
        assert_eq!(components("/"), 1);
        assert_eq!(components("/var/www/"), 3);
    }
}
