//! Requests built from the configuration itself, for `lighten verify` without a
//! requests file: every host by each of its names (and an unknown one), the files and
//! directories under each document root (bounded), for every rewrite rule a request its
//! pattern matches plus variants that change what its conditions read (query string,
//! cookie or header, method, scheme), and every denied or password-protected place.

use crate::eval::Request;
use crate::model::rewrite::{CondKind, RewriteRule};
use crate::model::{Matcher, Model, Scope, ScopeKind};
use crate::source::Sysroot;
use std::collections::BTreeSet;

pub struct Limits {
    /// Files and directories visited under each document root.
    pub files: usize,
    /// Requests in all.
    pub total: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { files: 200, total: 2000 }
    }
}

struct Host {
    names: Vec<String>,
    scheme: &'static str,
    port: u16,
    docroot: String,
}

/// The requests, in a stable order, without repeats.
pub fn requests(model: &Model, fs: &Sysroot, limits: &Limits) -> Vec<Request> {
    let mut out: Vec<Request> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push = |r: Request, out: &mut Vec<Request>| {
        if out.len() < limits.total && seen.insert(r.to_line()) {
            out.push(r);
        }
    };
    let hosts = hosts(model);
    let mut ports_done = BTreeSet::new();
    for (i, h) in hosts.iter().enumerate() {
        let valid = |n: &&String| n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        let Some(name) = h.names.iter().find(valid).cloned() else { continue };
        let url = |host: &str, path: &str| {
            let default = if h.scheme == "https" { 443 } else { 80 };
            let authority = if h.port == default { host.to_string() } else { format!("{host}:{}", h.port) };
            format!("{}://{authority}{path}", h.scheme)
        };
        let get = |host: &str, path: &str| Request::parse_url("GET", &url(host, path)).ok();
        for n in &h.names {
            // A name no DNS or browser would send (Plesk's `default-203_0_113_10`) is skipped.
            if !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.') {
                continue;
            }
            if let Some(r) = get(n, "/") {
                push(r, &mut out);
            }
        }
        if ports_done.insert((h.scheme, h.port))
            && let Some(r) = get("unknown.invalid", "/")
        {
            push(r, &mut out);
        }
        // Files and directories under the document root.
        for (rel, is_dir) in walk(fs, &h.docroot, limits.files) {
            let path = encode(&rel);
            if is_dir {
                for p in [format!("{path}/"), path.clone()] {
                    if let Some(r) = get(&name, &p) {
                        push(r, &mut out);
                    }
                }
            } else if let Some(r) = get(&name, &path) {
                push(r, &mut out);
            }
        }
        let vhost = if i < model.vhosts.len() { Some(i) } else { None };
        // Server-context rules match the URL-path.
        for rule in crate::eval::server_rules(model, vhost) {
            for r in rule_requests(rule, "", &|p| url(&name, p)) {
                push(r, &mut out);
            }
        }
        // Per-directory rules, denials and password areas, by the URL their folder serves.
        let mut dirs: Vec<(String, &Scope)> = Vec::new();
        let tops: Vec<&Scope> = match vhost {
            Some(v) => vec![&model.server, &model.vhosts[v].scope],
            None => vec![&model.server],
        };
        for t in &tops {
            for c in t.children.iter().filter(|c| c.enabled && c.kind == ScopeKind::Directory) {
                if let Some(Matcher::Path(p)) = &c.matcher {
                    dirs.push((p.clone(), c));
                }
            }
        }
        for ht in model.htaccess.iter().filter(|x| x.host_ids.contains(&vhost)) {
            if let Some(s) = &ht.scope {
                dirs.push((ht.dir.clone(), s));
            }
        }
        let root = h.docroot.trim_end_matches('/');
        for (dir, scope) in dirs {
            let Some(prefix) =
                dir.trim_end_matches('/').strip_prefix(root).filter(|r| r.is_empty() || r.starts_with('/'))
            else {
                continue;
            };
            let prefix = format!("{prefix}/");
            if let Some(r) = get(&name, &prefix) {
                push(r, &mut out);
            }
            for rule in &scope.settings.rewrite().rules {
                for r in rule_requests(rule, &prefix, &|p| url(&name, p)) {
                    push(r, &mut out);
                }
            }
            visit_files(scope, &mut |f| {
                if let Some(s) = file_sample(f)
                    && let Some(r) = get(&name, &format!("{prefix}{}", encode(&s)))
                {
                    push(r, &mut out);
                }
            });
        }
        for t in &tops {
            visit_files(t, &mut |f| {
                if let Some(s) = file_sample(f)
                    && let Some(r) = get(&name, &format!("/{}", encode(&s)))
                {
                    push(r, &mut out);
                }
            });
        }
    }
    out
}

fn hosts(model: &Model) -> Vec<Host> {
    let mut out = Vec::new();
    for v in model.vhosts.iter().filter(|v| v.scope.enabled) {
        let mut names: Vec<String> = v.server_name.iter().cloned().collect();
        names.extend(v.aliases.iter().map(|a| a.replace('*', "www").replace('?', "a")));
        let port = v.addresses.iter().find_map(|a| a.port).unwrap_or(if v.tls { 443 } else { 80 });
        out.push(Host {
            names,
            scheme: if v.tls { "https" } else { "http" },
            port,
            docroot: v.document_root.clone().unwrap_or_else(|| "/var/www/html".into()),
        });
    }
    let h = model.server.settings.host();
    out.push(Host {
        names: vec![h.server_name.as_ref().map(|s| s.value.clone()).unwrap_or_else(|| "localhost".into())],
        scheme: "http",
        port: h.listen.first().map(|l| l.port).unwrap_or(80),
        docroot: h.document_root.as_ref().map(|d| d.value.clone()).unwrap_or_else(|| "/var/www/html".into()),
    });
    out
}

/// Files and folders under `root` (relative paths starting with `/`), sorted, at most
/// `limit` of them.
fn walk(fs: &Sysroot, root: &str, limit: usize) -> Vec<(String, bool)> {
    let host = fs.host_path(root);
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(&host).min_depth(1).follow_links(false).sort_by_file_name() {
        let Ok(e) = e else { continue };
        if out.len() >= limit {
            break;
        }
        let rel =
            e.path().strip_prefix(&host).map(|r| format!("/{}", r.to_string_lossy())).unwrap_or_default();
        out.push((rel, e.file_type().is_dir()));
    }
    out
}

/// A request each rule's pattern matches (under the folder's URL `prefix` for per-dir
/// rules), and variants for what its conditions read.
fn rule_requests(rule: &RewriteRule, prefix: &str, url: &dyn Fn(&str) -> String) -> Vec<Request> {
    if rule.negated {
        return Vec::new();
    }
    let opts = crate::luare::Options::apache(rule.has(crate::model::rewrite::RuleFlagKind::NoCase));
    let Some(s) = crate::luare::sample::sample(&rule.pattern, &opts) else { return Vec::new() };
    let s = String::from_utf8_lossy(&s).into_owned();
    let path = if prefix.is_empty() {
        if s.starts_with('/') { s } else { format!("/{s}") }
    } else {
        format!("{prefix}{}", s.trim_start_matches('/'))
    };
    let path = encode(&path);
    let mut out = Vec::new();
    let Ok(base) = Request::parse_url("GET", &url(&path)) else { return out };
    out.push(base.clone());
    if let Ok(r) = Request::parse_url("GET", &url(&format!("{path}?lighten=1"))) {
        out.push(r);
    }
    for c in &rule.conditions {
        let test = c.test.to_ascii_uppercase();
        let value = if c.pattern.kind == CondKind::Regex {
            crate::luare::sample::sample(&c.pattern.operand, &crate::luare::Options::apache(c.nocase()))
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_else(|| "lighten".into())
        } else {
            c.pattern.operand.clone()
        };
        let header = if let Some(h) = c.test.strip_prefix("%{HTTP:").and_then(|r| r.strip_suffix('}')) {
            Some(h.to_string())
        } else {
            [
                ("%{HTTP_COOKIE}", "Cookie"),
                ("%{HTTP_USER_AGENT}", "User-Agent"),
                ("%{HTTP_REFERER}", "Referer"),
                ("%{HTTP_ACCEPT}", "Accept"),
            ]
            .iter()
            .find(|(v, _)| test.contains(v))
            .map(|(_, h)| h.to_string())
        };
        if let Some(h) = header
            && !value.contains(['\r', '\n'])
            && let Ok(r) = base.clone().with_header(&format!("{h}: {value}"))
        {
            out.push(r);
        }
        if test.contains("%{REQUEST_METHOD}")
            && let Ok(r) = Request::parse_url("POST", &url(&path))
        {
            out.push(r);
        }
    }
    out
}

fn visit_files(s: &Scope, f: &mut dyn FnMut(&Scope)) {
    for c in s.children.iter().filter(|c| c.enabled) {
        if matches!(c.kind, ScopeKind::Files | ScopeKind::FilesMatch) {
            f(c);
        }
    }
}

/// A file name a `<Files>`/`<FilesMatch>` section applies to.
fn file_sample(f: &Scope) -> Option<String> {
    match &f.matcher {
        Some(Matcher::Regex(re)) => crate::luare::sample::sample(re, &crate::luare::Options::apache(false))
            .map(|v| String::from_utf8_lossy(&v).into_owned()),
        Some(Matcher::Path(p)) => Some(p.replace(['*', '?'], "x")),
        _ => None,
    }
    .filter(|s| !s.is_empty() && !s.contains('/'))
}

/// A path as a request-target: what is not safe in a URL is percent-encoded.
fn encode(p: &str) -> String {
    let mut out = String::new();
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
