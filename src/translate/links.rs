//! Symbolic links in the converted site.
//!
//! Apache judges every link its directory walk meets under the Options of the folder that
//! holds it (`eval::symlink`).  lighttpd follows every link, unless
//! `server.follow-symlink = "disable"`, which refuses (403) any path with a link anywhere
//! in it, checked on the path lighttpd finally opens after mod_magnet has set it: a static
//! file, mod_magnet's send-file, mod_fastcgi's script, a listing (measured on 1.4.69);
//! it cannot compare owners, and the Lua cannot see links at all (`lighty.c.stat`
//! follows them).  So each host gets one of two modes:
//!
//! - **follow**: every folder under the host's roots follows links without comparing
//!   owners (Apache's default, Debian's configuration).  lighttpd follows links as Apache
//!   does; the links Apache refuses anyway (dangling ones) are listed for the Lua.
//! - **strict**: some folder refuses links or compares owners.  lighttpd's follow-symlink
//!   is off for the host, so a link made after the conversion is refused, also where
//!   Apache would follow it (stricter; reported on the Options lines that cause it).
//!   Each link found now is listed: the Lua refuses the ones Apache refuses and hands
//!   lighttpd the target's path for the others (PHP still gets the link's path as
//!   SCRIPT_FILENAME, and the response's headers are those of the link's folder).
//!
//! The links are found by walking each root through the links Apache follows, and the
//! folders above each root (a DocumentRoot under a linked `/var/www`).

use super::{Code, Finding};
use crate::eval::dirconf::{opt, option_bit, walk_options};
use crate::eval::symlink;
use crate::model::htaccess::{ancestors, directory_matches, directory_sections};
use crate::model::{HtaccessStatus, Model, Scope};
use crate::source::{Span, Sysroot};
use std::collections::BTreeMap;

/// The most entries the walk visits per conversion; links past it are not listed (in a
/// strict host lighttpd then refuses them, in a follow host it follows them).
const WALK_LIMIT: usize = 100_000;

/// What one host does with links.
#[derive(Clone, Debug, Default)]
pub struct HostLinks {
    /// lighttpd's `server.follow-symlink` is off for the host.
    pub strict: bool,
    /// The Options lines that make the host strict.
    pub causes: Vec<Span>,
    /// The links found, by the path lighttpd sees: `None` when Apache refuses the link,
    /// else the path of its target (kept for strict hosts only).
    pub links: BTreeMap<String, Option<String>>,
}

impl HostLinks {
    /// The Lua table `links`: a link's path, false when Apache refuses it, else its
    /// target's path; nil when there is none.
    pub fn lua(&self) -> super::lua::Value {
        use super::lua::Value;
        let mut links = Value::table();
        for (name, target) in &self.links {
            links.set(name, target.clone().map_or(Value::Bool(false), Value::Str));
        }
        links
    }
}

/// The links of every host (as `conf::hosts` numbers them), with a finding on each
/// Options line that makes a host strict.
pub fn inventory(
    model: &Model,
    fs: &Sysroot,
    map_path: &dyn Fn(&str) -> String,
    findings: &mut Vec<Finding>,
) -> Vec<HostLinks> {
    let mut seen = 0usize;
    let mut reported = std::collections::BTreeSet::new();
    super::conf::hosts(model)
        .into_iter()
        .map(|h| {
            let mut hl = host(model, fs, map_path, h, &mut seen);
            if hl.strict {
                for at in &hl.causes {
                    if reported.insert(*at) {
                        findings.push(Finding::approximated(Code::SymlinksAtConversion, *at, REASON.into()));
                    }
                }
            } else {
                hl.links.retain(|_, t| t.is_none());
            }
            hl
        })
        .collect()
}

const REASON: &str = "lighttpd cannot follow links only in some folders, nor compare a link's owner \
     with its target's: the host runs with server.follow-symlink = \"disable\"; the links found at \
     conversion that Apache follows are served through their targets' paths, any link made later is \
     refused (403, stricter than Apache where it would follow it), and so is a listing of a folder \
     holding a link Apache refuses (mod_autoindex leaves the link out)";

fn host(
    model: &Model,
    fs: &Sysroot,
    map_path: &dyn Fn(&str) -> String,
    h: Option<usize>,
    seen: &mut usize,
) -> HostLinks {
    let roots: Vec<String> = crate::model::url_roots(model, h)
        .into_iter()
        .map(|r| r.trim_end_matches('/').to_string())
        .filter(|r| !r.is_empty())
        .collect();
    let mut out = HostLinks::default();
    decide_mode(model, h, &roots, &mut out);
    for root in &roots {
        // The folders above the root and the root itself.
        let mut levels: Vec<&str> = ancestors(root).filter(|a| !a.is_empty()).collect();
        levels.reverse();
        // Nothing under a link Apache refuses is listed: the Lua takes the longest link
        // on a path, which must not be one past a refused link.
        let mut refused = false;
        for p in levels {
            if symlink::is_link(fs, p) && !judge(model, fs, map_path, h, p, &mut out.links) {
                refused = true;
                break;
            }
        }
        if !refused {
            walk(model, fs, map_path, h, root, seen, &mut out.links);
        }
    }
    out
}

/// Apache's verdict on the link `p`, recorded; whether the walk goes on into it.
fn judge(
    model: &Model,
    fs: &Sysroot,
    map_path: &dyn Fn(&str) -> String,
    h: Option<usize>,
    p: &str,
    links: &mut BTreeMap<String, Option<String>>,
) -> bool {
    let folder = p.rsplit_once('/').map_or("", |(d, _)| d);
    // A broken .htaccess on the way: Apache answers 500 there first.
    let Some(options) = walk_options(model, h, folder) else { return false };
    match symlink::judge(fs, p, options) {
        Err(_) => {
            links.insert(map_path(p), None);
            false
        }
        Ok(()) => {
            links.insert(map_path(p), target(fs, map_path, p));
            true
        }
    }
}

/// The path lighttpd sees of where the link `p` leads, every link on the way resolved:
/// inside the sysroot as the sysroot's path mapped, else as the host has it.
fn target(fs: &Sysroot, map_path: &dyn Fn(&str) -> String, p: &str) -> Option<String> {
    let t = std::fs::canonicalize(fs.host_path(p)).ok()?;
    let root = match fs.root() {
        Some(r) => std::fs::canonicalize(r).ok()?,
        None => return Some(t.to_string_lossy().into_owned()),
    };
    Some(match t.strip_prefix(&root) {
        Ok(rel) => map_path(&format!("/{}", rel.to_string_lossy())),
        Err(_) => t.to_string_lossy().into_owned(),
    })
}

fn walk(
    model: &Model,
    fs: &Sysroot,
    map_path: &dyn Fn(&str) -> String,
    h: Option<usize>,
    root: &str,
    seen: &mut usize,
    links: &mut BTreeMap<String, Option<String>>,
) {
    let host_root = fs.host_path(root);
    let mut it =
        walkdir::WalkDir::new(&host_root).min_depth(1).follow_links(true).sort_by_file_name().into_iter();
    loop {
        // walkdir reports a dangling link and a link back to a folder above as errors:
        // both are links Apache judges too (it refuses the first, may follow the second).
        let (path, dir) = match it.next() {
            None => break,
            Some(Ok(e)) if e.path_is_symlink() => (e.path().to_path_buf(), e.file_type().is_dir()),
            Some(Ok(_)) => (std::path::PathBuf::new(), false),
            Some(Err(err)) => match err.path() {
                Some(p) if p.is_symlink() => (p.to_path_buf(), false),
                _ => continue,
            },
        };
        *seen += 1;
        if *seen > WALK_LIMIT {
            break;
        }
        if path.as_os_str().is_empty() {
            continue;
        }
        let rel = path.strip_prefix(&host_root).unwrap_or(&path);
        let p = format!("{root}/{}", rel.to_string_lossy());
        if !judge(model, fs, map_path, h, &p, links) && dir {
            it.skip_current_dir();
        }
    }
}

/// Strict when a folder under the roots (or a root) has Options under which the walk
/// refuses links or compares owners.  The folders with configuration of their own decide
/// for the folders under them; a wildcard `<Directory>` may match any folder, so one
/// with such an Options line makes the host strict.
fn decide_mode(model: &Model, h: Option<usize>, roots: &[String], out: &mut HostLinks) {
    let vscope = h.map(|i| &model.vhosts[i].scope);
    let under = |d: &str| {
        let d = d.trim_end_matches('/');
        roots.iter().any(|r| d == r || d.starts_with(&format!("{r}/")))
    };
    let mut dirs: Vec<String> = roots.to_vec();
    let mut scopes: Vec<&Scope> = std::iter::once(&model.server).chain(vscope).collect();
    let mut wildcard_bad = false;
    for (scope, path) in directory_sections(&model.server, vscope) {
        let applies = roots.iter().any(|r| directory_matches(&path, r)) || under(&path);
        if !applies {
            continue;
        }
        scopes.push(scope);
        if path.contains(['*', '?', '[']) {
            wildcard_bad |= scope.settings.options.iter().any(refuses_links);
        } else if under(&path) {
            dirs.push(path.trim_end_matches('/').to_string());
        }
    }
    for ht in model.htaccess.iter().filter(|x| x.host_ids.contains(&h) && under(&x.dir)) {
        if let (HtaccessStatus::Applied, Some(s)) = (ht.status, &ht.scope) {
            scopes.push(s);
            dirs.push(ht.dir.clone());
        }
    }
    let bad = |o: u8| o & opt::SYM_LINKS == 0 || o & opt::SYM_OWNER != 0;
    out.strict = wildcard_bad || dirs.iter().any(|d| walk_options(model, h, d).is_some_and(bad));
    if out.strict {
        for s in scopes {
            out.causes.extend(s.settings.options.iter().filter(|l| refuses_links(l)).map(|l| l.at));
        }
        out.causes.sort();
        out.causes.dedup();
    }
}

/// An Options line after which the walk refuses links or compares owners: one without
/// signs that lacks FollowSymLinks (and All) or names SymLinksIfOwnerMatch, or
/// `-FollowSymLinks`, `-All`, `+SymLinksIfOwnerMatch`.
fn refuses_links(line: &crate::model::dir::OptionsLine) -> bool {
    let signed = line.changes.iter().any(|(s, _)| *s != '=');
    let bits = |sign: char| {
        line.changes.iter().filter(|(s, _)| *s == sign).fold(0u8, |acc, (_, n)| acc | option_bit(n))
    };
    if signed {
        bits('-') & opt::SYM_LINKS != 0 || bits('+') & opt::SYM_OWNER != 0
    } else {
        let set = bits('=');
        set & opt::SYM_LINKS == 0 || set & opt::SYM_OWNER != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dir::OptionsLine;

    fn line(words: &[&str]) -> OptionsLine {
        let changes = words
            .iter()
            .map(|w| match w.split_at(1) {
                ("+", n) => ('+', n.to_string()),
                ("-", n) => ('-', n.to_string()),
                _ => ('=', w.to_string()),
            })
            .collect();
        OptionsLine { changes, at: Span::new(crate::source::FileId(0), 0, 0) }
    }

    #[test]
    fn options_lines_that_refuse_links_or_compare_owners() {
        for refuses in [
            &["None"][..],
            &["Indexes"],
            &["Includes"],
            &["SymLinksIfOwnerMatch"],
            &["FollowSymLinks", "SymLinksIfOwnerMatch"],
            &["-FollowSymLinks"],
            &["+Indexes", "-FollowSymLinks"],
            &["+SymLinksIfOwnerMatch"],
            &["-All"],
        ] {
            assert!(refuses_links(&line(refuses)), "{refuses:?}");
        }
        for follows in
            [&["FollowSymLinks"][..], &["Indexes", "FollowSymLinks"], &["All"], &["+Indexes"], &["-Indexes"]]
        {
            assert!(!refuses_links(&line(follows)), "{follows:?}");
        }
    }
}
