//! The Lua port of the mod_rewrite engine (`templates/lua/lighten_rewrite.lua`) against
//! the Rust one (`src/eval/rewrite.rs`): every rule list of every fixture with a
//! `requests.txt` under `fixtures/` and `tests/luarewrite/` (server context per vhost,
//! every per-directory list, every `.htaccess`) runs on synthetic inputs derived from
//! those requests, in Rust and in one `lua5.4` process per fixture, with the same mock
//! environment; action, flags, final state, `[E=]` changes and trace must be the same,
//! byte for byte.  `tests/luarewrite/edge` holds rules written to reach every flag and
//! condition kind; it is not run against Apache.
//!
//! The Lua side runs with two regex back ends:
//! - *oracle*: lighten_re is replaced by a stub that asks this test over a pipe and PCRE2
//!   answers, so the engine alone is compared, on every pattern of the corpus;
//! - *luare*: the patterns `lighten::luare::compile_with` prints with DOTALL, as the Rust
//!   evaluator compiles (Apache also sets DOLLAR_ENDONLY, which the pcre2 crate cannot set,
//!   so both sides leave it out here), run by `lighten_re.lua` on the system's PCRE2
//!   (lua-rex-pcre2): the stack as shipped.  A pattern that runs out of lighten_re's match
//!   limit must fail closed (403 after the same trace up to that rule or condition);
//!   everything else must agree.
//!
//! Each input also runs once without a trace (the production path), which must end in
//! the same action, flags, state and environment.
//!
//! Needs `lua5.4`: without it the test says "skipped", unless CI is set.

use lighten::config::{self, LoadOptions};
use lighten::eval::expand::Lookup;
use lighten::eval::request::{self, Request};
use lighten::eval::rewrite::{Action, Flags, RewriteEnv, State, apply_list};
use lighten::eval::{Step, decode_path};
use lighten::model::rewrite::{CondKind, RewriteCond, RewriteRule};
use lighten::model::{self, Matcher, Model, Scope, ScopeKind};
use lighten::source::{SourceMap, Sysroot};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LUA: &str = "lua5.4";

// ---------------------------------------------------------------------------------------
// fixtures

#[derive(Deserialize)]
struct Manifest {
    config: String,
    sysroot: Option<String>,
    #[serde(default)]
    args: Vec<String>,
}

/// One fixture, loaded: the model, its sources (for `file:line`), and what the mock
/// environment answers from.
struct Fixture {
    name: String,
    model: Model,
    sources: SourceMap,
    requests: Vec<Request>,
    docroot: String,
    /// The host `is_self()` recognises and `self_url()` names, lower-case.
    host: String,
    /// Apache path -> what a stat finds: `f` file, `d` directory, `s` not empty,
    /// `x` executable, `l` symbolic link.
    files: BTreeMap<String, String>,
    maps: BTreeMap<String, MapDef>,
}

enum MapDef {
    /// txt: and rnd: maps, read from the fixture.
    Table(BTreeMap<String, String>),
    /// int: maps; the mock knows toupper and tolower (ASCII).
    Int(String),
}

/// Fixtures with a `fixture.toml` and a `requests.txt` directly under `dir`, sorted.
fn fixture_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("fixture.toml").is_file() && p.join("requests.txt").is_file())
        .collect();
    out.sort();
    out
}

fn load(dir: &Path) -> Fixture {
    let text = std::fs::read_to_string(dir.join("fixture.toml")).expect("manifest");
    let manifest: Manifest = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let root = dir.join(manifest.sysroot.as_deref().unwrap_or("."));
    let mut opts = LoadOptions { sysroot: Sysroot::at(&root), ..LoadOptions::default() };
    let mut args = manifest.args.iter();
    while let Some(a) = args.next() {
        if a == "--server-name" {
            opts.server_name = args.next().cloned().unwrap_or_default();
        }
    }
    let mut cfg = config::load(&dir.join(&manifest.config), &opts).expect("fixture loads");
    let (model, _) = model::build(&mut cfg);
    let reqs = std::fs::read_to_string(dir.join("requests.txt")).expect("requests.txt");
    let requests = request::parse_file(&reqs).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let docroot = model
        .vhosts
        .first()
        .and_then(|v| v.document_root.clone())
        .or_else(|| model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()))
        .unwrap_or_else(|| "/var/www/html".into())
        .trim_end_matches('/')
        .to_string();
    let host = model
        .server
        .settings
        .host()
        .server_name
        .as_ref()
        .map(|n| n.value.clone())
        .or_else(|| model.vhosts.first().and_then(|v| v.server_name.clone()))
        .unwrap_or_else(|| "localhost".into())
        .split(':')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let maps = maps_of(&model, &cfg.sysroot);
    Fixture {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        files: files_under(&root),
        model,
        sources: cfg.sources,
        requests,
        docroot,
        host,
        maps,
    }
}

fn files_under(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).into_iter().flatten() {
        let Ok(rel) = e.path().strip_prefix(root) else { continue };
        let path = format!("/{}", rel.to_string_lossy());
        let mut what = String::new();
        if let Ok(m) = std::fs::metadata(e.path()) {
            use std::os::unix::fs::PermissionsExt;
            what.push(if m.is_dir() { 'd' } else { 'f' });
            if m.is_file() && m.len() > 0 {
                what.push('s');
            }
            if m.permissions().mode() & 0o111 != 0 {
                what.push('x');
            }
        }
        if e.path_is_symlink() {
            what.push('l');
        }
        out.insert(if path == "/" { path } else { path.trim_end_matches('/').to_string() }, what);
    }
    out
}

fn maps_of(model: &Model, fs: &Sysroot) -> BTreeMap<String, MapDef> {
    let mut out = BTreeMap::new();
    let scopes = std::iter::once(&model.server).chain(model.vhosts.iter().map(|v| &v.scope));
    for s in scopes {
        for m in &s.settings.rewrite().maps {
            let def = match m.kind.as_str() {
                "int" => MapDef::Int(m.source.clone()),
                "txt" | "rnd" => {
                    let text = String::from_utf8_lossy(&fs.read(&m.source).unwrap_or_default()).into_owned();
                    let mut t = BTreeMap::new();
                    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
                        let mut parts = line.split_whitespace();
                        if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
                            t.entry(k.to_string()).or_insert_with(|| v.to_string());
                        }
                    }
                    MapDef::Table(t)
                }
                _ => continue,
            };
            out.insert(m.name.clone(), def);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// rule lists and inputs

struct List<'m> {
    rules: Vec<&'m RewriteRule>,
    perdir: Option<String>,
}

/// Every rule list of the model: server context (main server, each vhost), then the
/// per-directory ones (sections, then .htaccess files).
fn rule_lists<'m>(model: &'m Model, docroot: &str) -> Vec<List<'m>> {
    let mut out: Vec<List> = Vec::new();
    for s in std::iter::once(&model.server).chain(model.vhosts.iter().map(|v| &v.scope)) {
        let rules = &s.settings.rewrite().rules;
        if !rules.is_empty() {
            out.push(List { rules: rules.iter().collect(), perdir: None });
        }
    }
    let mut perdir = |s: &'m Scope, dir: Option<&str>| {
        if matches!(s.kind, ScopeKind::Server | ScopeKind::VirtualHost) {
            return;
        }
        let rules = &s.settings.rewrite().rules;
        if rules.is_empty() {
            return;
        }
        let prefix = match (dir, &s.kind, &s.matcher) {
            (Some(d), _, _) => format!("{d}/"),
            (None, ScopeKind::Directory, Some(Matcher::Path(p))) if !p.contains(['*', '?', '[']) => {
                format!("{}/", p.trim_end_matches('/'))
            }
            _ => format!("{docroot}/"),
        };
        out.push(List { rules: rules.iter().collect(), perdir: Some(prefix) });
    };
    for top in std::iter::once(&model.server).chain(model.vhosts.iter().map(|v| &v.scope)) {
        top.walk(&mut |s| perdir(s, None));
    }
    for h in &model.htaccess {
        if let Some(s) = &h.scope {
            s.walk(&mut |x| perdir(x, Some(&h.dir)));
        }
    }
    out
}

/// One request situation shared by all lists: URL, query, variables, environment, what
/// the file system says and what `expr` conditions answer.
struct Case {
    uri: String,
    /// PATH_INFO the per-directory walk would split off (a suffix of `uri`).
    path_info: Option<String>,
    args: Option<String>,
    vars: BTreeMap<String, String>,
    /// Lower-case header name -> value.
    headers: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    /// 0 the fixture's files, 1 nothing exists, 2 everything is a non-empty executable
    /// file, 3 everything is a directory.
    fs: u8,
    expr: bool,
}

/// Four variations of each request: as sent; trailing slash toggled, no query, no files;
/// a PATH_INFO tail, an encoded `?` in the request line, a query ending in `&`, every
/// file present, REDIRECT_STATUS set; upper-cased, a query with a space, every path a
/// directory.
fn cases(fx: &Fixture) -> Vec<Case> {
    let mut out = Vec::new();
    for r in &fx.requests {
        let Ok(uri) = decode_path(&r.path) else { continue };
        for variant in 0..4u8 {
            let (mut uri, mut raw, mut args, mut pi) = (uri.clone(), r.path.clone(), r.query.clone(), None);
            let mut env = BTreeMap::new();
            match variant {
                1 => {
                    uri = if uri.len() > 1 && uri.ends_with('/') {
                        uri.trim_end_matches('/').to_string()
                    } else {
                        format!("{uri}/")
                    };
                    raw = uri.clone();
                    args = None;
                }
                2 => {
                    let tail = "/extra/part.php".to_string();
                    uri = format!("{}{tail}", uri.trim_end_matches('/'));
                    raw = format!("{}%3Fz", uri);
                    pi = Some(tail);
                    args = Some(format!("{}x=1&y=%3f&", args.map(|a| a + "&").unwrap_or_default()));
                    env.insert("REDIRECT_STATUS".to_string(), "200".to_string());
                }
                3 => {
                    uri = uri.to_ascii_uppercase();
                    raw = uri.clone();
                    args = Some("a=b c&d".into());
                    env.insert("HTTPS".to_string(), "on".to_string());
                }
                _ => {}
            }
            let host = r.host.clone().unwrap_or_else(|| fx.host.clone());
            let https = r.scheme == "https";
            let mut headers: BTreeMap<String, String> = BTreeMap::new();
            headers.insert("host".into(), host.clone());
            for (n, v) in &r.headers {
                headers.entry(n.to_ascii_lowercase()).or_insert_with(|| v.clone());
            }
            if variant == 3 {
                headers.entry("cookie".into()).or_insert_with(|| "wordpress_logged_in_x=1; a=b".into());
            }
            let h = |n: &str| headers.get(n).cloned().unwrap_or_default();
            let (name, port) = match host.split_once(':') {
                Some((n, p)) => (n.to_string(), p.to_string()),
                None => (host.clone(), if https { "443" } else { "80" }.to_string()),
            };
            let target = match &args {
                Some(a) => format!("{raw}?{a}"),
                None => raw.clone(),
            };
            let mut vars = BTreeMap::new();
            for (k, v) in [
                ("HTTP_HOST", host.clone()),
                ("HTTP_USER_AGENT", h("user-agent")),
                ("HTTP_REFERER", h("referer")),
                ("HTTP_COOKIE", h("cookie")),
                ("HTTP_FORWARDED", h("forwarded")),
                ("HTTP_PROXY_CONNECTION", h("proxy-connection")),
                ("HTTP_ACCEPT", h("accept")),
                ("REQUEST_METHOD", r.method.clone()),
                ("REQUEST_SCHEME", r.scheme.clone()),
                ("REQUEST_URI", uri.clone()),
                ("QUERY_STRING", args.clone().unwrap_or_default()),
                ("THE_REQUEST", format!("{} {target} HTTP/1.1", r.method)),
                ("HTTPS", if https { "on" } else { "off" }.to_string()),
                ("SERVER_NAME", name),
                ("SERVER_PORT", port),
                ("SERVER_ADDR", "127.0.0.1".into()),
                ("SERVER_PROTOCOL", "HTTP/1.1".into()),
                ("SERVER_SOFTWARE", "Apache".into()),
                ("DOCUMENT_ROOT", fx.docroot.clone()),
                ("CONTEXT_DOCUMENT_ROOT", fx.docroot.clone()),
                ("CONTEXT_PREFIX", String::new()),
                ("REMOTE_ADDR", "127.0.0.1".into()),
                ("REMOTE_HOST", "127.0.0.1".into()),
                ("IS_SUBREQ", "false".into()),
                ("API_VERSION", "20120211:139".into()),
            ] {
                vars.insert(k.to_string(), v);
            }
            out.push(Case {
                uri,
                path_info: pi,
                args,
                vars,
                headers,
                env,
                fs: variant,
                expr: variant % 2 == 0,
            });
        }
    }
    out
}

/// Where one list meets one case: the initial filename and PATH_INFO.
struct Input {
    list: usize,
    case: usize,
    filename: String,
    path_info: Option<String>,
}

fn inputs(lists: &[List], cases: &[Case], docroot: &str) -> Vec<Input> {
    let mut out = Vec::new();
    for (li, l) in lists.iter().enumerate() {
        for (ci, c) in cases.iter().enumerate() {
            let (filename, path_info) = match &l.perdir {
                None => (c.uri.clone(), None),
                Some(dir) => {
                    let path = match &c.path_info {
                        Some(pi) => &c.uri[..c.uri.len() - pi.len()],
                        None => c.uri.as_str(),
                    };
                    // A request outside the list's directory still gets a subject below it.
                    let mapped = format!("{docroot}{path}");
                    let f = if mapped.starts_with(dir.as_str()) {
                        mapped
                    } else {
                        format!("{dir}{}", path.trim_start_matches('/'))
                    };
                    (f, c.path_info.clone())
                }
            };
            out.push(Input { list: li, case: ci, filename, path_info });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// the mock environment, Rust side (the Lua side in DRIVER does the same)

struct Mock<'a> {
    fx: &'a Fixture,
    case: &'a Case,
    filename: &'a str,
    path_info: Option<&'a str>,
    env: BTreeMap<String, String>,
    log: Vec<String>,
}

impl Mock<'_> {
    fn stat(&self, path: &str) -> &str {
        match self.case.fs {
            0 => self.fx.files.get(path).map(String::as_str).unwrap_or(""),
            1 => "",
            2 => "fsx",
            _ => "d",
        }
    }
}

impl Lookup for Mock<'_> {
    fn var(&mut self, name: &str) -> String {
        if let Some(h) = name.strip_prefix("HTTP:") {
            return self.case.headers.get(&h.to_ascii_lowercase()).cloned().unwrap_or_default();
        }
        if let Some(v) = name.strip_prefix("ENV:") {
            return self.env.get(v).cloned().unwrap_or_default();
        }
        match name {
            "REQUEST_FILENAME" | "SCRIPT_FILENAME" => self.filename.to_string(),
            "PATH_INFO" => self.path_info.unwrap_or("").to_string(),
            _ => self.case.vars.get(name).or_else(|| self.env.get(name)).cloned().unwrap_or_default(),
        }
    }

    fn map(&mut self, map: &str, key: &str) -> Option<String> {
        match self.fx.maps.get(map)? {
            MapDef::Table(t) => t.get(key).cloned(),
            MapDef::Int(f) if f == "toupper" => Some(key.to_ascii_uppercase()),
            MapDef::Int(f) if f == "tolower" => Some(key.to_ascii_lowercase()),
            MapDef::Int(_) => None,
        }
    }
}

impl RewriteEnv for Mock<'_> {
    fn test_file(&mut self, kind: CondKind, path: &str) -> bool {
        let f = self.stat(path);
        let has = |c: char| f.contains(c);
        match kind {
            CondKind::FileExists | CondKind::LookupFile => has('f'),
            CondKind::FileSize => has('f') && has('s'),
            CondKind::FileDir => has('d'),
            CondKind::FileLink => has('l'),
            CondKind::FileExecutable => (has('f') || has('d')) && has('x'),
            CondKind::LookupUrl => {
                let g = if self.case.fs == 0 { self.stat(&format!("{}{path}", self.fx.docroot)) } else { f };
                g.contains(['f', 'd'])
            }
            _ => false,
        }
    }

    fn is_self(&mut self, url: &str) -> Option<String> {
        let (_, rest) = url.split_once("://")?;
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let host = hostport.split(':').next().unwrap_or("").to_ascii_lowercase();
        (host == self.fx.host).then(|| path.to_string())
    }

    fn self_url(&mut self) -> String {
        format!("http://{}", self.fx.host)
    }

    fn set_env(&mut self, name: &str, value: Option<&str>) {
        match value {
            Some(v) => {
                self.log.push(format!("{name}={v}"));
                self.env.insert(name.to_string(), v.to_string());
            }
            None => {
                self.log.push(format!("!{name}"));
                self.env.remove(name);
            }
        }
    }

    fn expr_cond(&mut self, _text: &str) -> bool {
        self.case.expr
    }
}

// ---------------------------------------------------------------------------------------
// the canonical result text both sides print

/// Bytes outside `!`..`~`, and `\`, as `\xNN`.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x21..=0x7e).contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

fn enc_opt(s: Option<&str>) -> String {
    s.map_or("!".into(), |s| format!("={}", enc(s)))
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::None => "none",
        Action::Changed => "changed",
        Action::ChangedNoEscape => "changed-no-escape",
        Action::Status => "status",
    }
}

fn b01(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

fn rust_block(
    sources: &SourceMap,
    action: Action,
    flags: &Flags,
    st: &State,
    log: &[String],
    trace: &[Step],
) -> String {
    let mut s = format!(
        "A {}\nF {} {} {} {}\n",
        action_name(action),
        b01(flags.passthrough),
        b01(flags.end),
        b01(flags.proxy),
        flags.redirect.map_or("-".into(), |c| c.to_string())
    );
    let _ = write!(
        s,
        "S filename {}\nS path_info {}\nS args {}\nS forced_type {}\nS forced_handler {}\n\
         S status {}\nS literal_prefix {}\nS unsafe_prefix_stat {}\n",
        enc_opt(Some(&st.filename)),
        enc_opt(st.path_info.as_deref()),
        enc_opt(st.args.as_deref()),
        enc_opt(st.forced_type.as_deref()),
        enc_opt(st.forced_handler.as_deref()),
        st.status,
        enc_opt(Some(&st.literal_prefix)),
        b01(st.unsafe_prefix_stat),
    );
    for l in log {
        let _ = writeln!(s, "E {}", enc(l));
    }
    for t in trace {
        let at = t.at.map(|a| sources.line_ref(a)).unwrap_or_default();
        let _ = writeln!(s, "T {} {} {}", enc(&at), t.depth, enc(&t.text));
    }
    s
}

// ---------------------------------------------------------------------------------------
// Lua source

/// A Lua string literal: printable ASCII as is, everything else as `\ddd`.
fn lua_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:03}");
        }
    }
    out.push('"');
    out
}

fn lua_opt(s: Option<&str>) -> String {
    s.map_or("nil".into(), lua_str)
}

fn lua_table(m: &BTreeMap<String, String>) -> String {
    let mut s = String::from("{");
    for (k, v) in m {
        let _ = write!(s, "[{}]={},", lua_str(k), lua_str(v));
    }
    s.push('}');
    s
}

/// The kebab-case name serde gives a flag or condition kind: the translator's spelling.
fn kebab<T: serde::Serialize>(kind: T) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("kind serializes as {other:?}"),
    }
}

/// Regex programs by (pattern, caseless): what a rule's `re` field holds.
trait Programs {
    fn program(&mut self, pattern: &str, caseless: bool) -> String;
    /// Lua statements that define what `program()` refers to, put before the rules.
    fn prelude(&self) -> String;
}

/// The Lua rule format the translator emits (see the module doc of lighten_rewrite.lua).
fn lua_rule(rule: &RewriteRule, sources: &SourceMap, re: &mut dyn Programs) -> String {
    let nocase = rule.flags.iter().any(|f| kebab(f.kind) == "no-case");
    let mut s = format!(
        "{{at={},pattern={},re={},subst={},literal_prefix={},",
        lua_str(&sources.line_ref(rule.at)),
        lua_str(&rule.pattern),
        re.program(&rule.pattern, nocase),
        lua_str(&rule.substitution),
        lua_str(lighten::eval::literal_prefix(&rule.substitution)),
    );
    if rule.negated {
        s.push_str("negated=true,");
    }
    s.push_str("flags={");
    for f in &rule.flags {
        let _ = write!(s, "{{k={},v={}}},", lua_str(&kebab(f.kind)), lua_opt(f.value.as_deref()));
    }
    s.push_str("},conds={");
    for c in &rule.conditions {
        s.push_str(&lua_cond(c, sources, re));
    }
    s.push_str("}}");
    s
}

fn lua_cond(c: &RewriteCond, sources: &SourceMap, re: &mut dyn Programs) -> String {
    let mut s = format!(
        "{{at={},test={},kind={},operand={},",
        lua_str(&sources.line_ref(c.at)),
        lua_str(&c.test),
        lua_str(&kebab(c.pattern.kind)),
        lua_str(&c.pattern.operand)
    );
    for (on, key) in [(c.pattern.negated, "negated"), (c.nocase(), "nocase"), (c.ornext(), "ornext")] {
        if on {
            let _ = write!(s, "{key}=true,");
        }
    }
    match c.pattern.kind {
        CondKind::Regex => {
            let _ = write!(s, "re={},", re.program(&c.pattern.operand, c.nocase()));
        }
        // The translator writes `false` for an expression it cannot compile; the edge
        // fixture marks one such by its text.
        CondKind::Expr if c.pattern.operand.contains("untranslatable") => s.push_str("expr=false,"),
        CondKind::Expr => s.push_str("expr=function(env) return env.expr end,"),
        _ => {}
    }
    s.push_str("},");
    s
}

/// The oracle back end: `re = {oracle=N}`, answered by PCRE2 in this process.
#[derive(Default)]
struct Oracle {
    ids: HashMap<(String, bool), usize>,
    patterns: Vec<(String, bool)>,
    compiled: Vec<Option<Option<pcre2::bytes::Regex>>>,
}

impl Programs for Oracle {
    fn program(&mut self, pattern: &str, caseless: bool) -> String {
        let key = (pattern.to_string(), caseless);
        let n = self.patterns.len();
        let id = *self.ids.entry(key.clone()).or_insert(n);
        if id == n {
            self.patterns.push(key);
            self.compiled.push(None);
        }
        format!("{{oracle={id}}}")
    }

    fn prelude(&self) -> String {
        ORACLE_STUB.to_string()
    }
}

impl Oracle {
    /// The answer line for a query line `?N subject`: `-`, or `+` and the groups
    /// (`=text`, `!` for a group that did not take part), as rewrite.rs sees them.
    fn answer(&mut self, query: &str) -> String {
        let (id, subject) = query[1..].split_once(' ').expect("query has a subject");
        let id: usize = id.parse().expect("query id");
        let (pattern, caseless) = &self.patterns[id];
        let re = self.compiled[id].get_or_insert_with(|| {
            pcre2::bytes::RegexBuilder::new().caseless(*caseless).dotall(true).build(pattern).ok()
        });
        let subject = dec(subject);
        let Some(caps) = re.as_ref().and_then(|re| re.captures(&subject).ok().flatten()) else {
            return "-".into();
        };
        let mut out = String::from("+");
        for i in 0..caps.len() {
            match caps.get(i) {
                Some(m) => {
                    let _ = write!(out, " ={}", enc(&String::from_utf8_lossy(m.as_bytes())));
                }
                None => out.push_str(" !"),
            }
        }
        out
    }
}

/// The shipped back end: `re = P[N]`, programs from `lighten::luare::compile` (PCRE2's
/// default options, as src/eval/rewrite.rs compiles), `false` where it cannot compile.
#[derive(Default)]
struct Luare {
    ids: HashMap<(String, bool), String>,
    defs: String,
    unsupported: usize,
}

impl Programs for Luare {
    fn program(&mut self, pattern: &str, caseless: bool) -> String {
        let n = self.ids.len();
        let defs = &mut self.defs;
        let unsupported = &mut self.unsupported;
        self.ids
            .entry((pattern.to_string(), caseless))
            .or_insert_with(|| {
                match lighten::luare::compile_with(
                    pattern,
                    &lighten::luare::Options { caseless, dotall: true, ..Default::default() },
                ) {
                    Ok(c) => {
                        let _ = writeln!(defs, "P[{n}] = {}", c.program);
                        format!("P[{n}]")
                    }
                    Err(_) => {
                        *unsupported += 1;
                        "false".into()
                    }
                }
            })
            .clone()
    }

    fn prelude(&self) -> String {
        format!("P = {{}}\n{}", self.defs)
    }
}

fn dec(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1] == b'x' {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).expect("hex escape"));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// lighten_re replaced by a stub that asks the test (`?N subject` on stdout, the answer
/// on stdin); answers are kept per (pattern, subject).
const ORACLE_STUB: &str = r#"
local oracle_cache = {}
package.loaded["lighten_re"] = { exec = function(prog, subject, init)
  assert(init == 1, "the engine matches from the start")
  local key = prog.oracle .. " " .. enc(subject)
  local r = oracle_cache[key]
  if r == nil then
    io.write("?", key, "\n")
    io.flush()
    local line = io.read("l")
    if line == "-" then
      r = false
    else
      r = {}
      local i = -1
      for f in line:gmatch("%S+") do
        if i >= 0 then r[i] = (f ~= "!") and dec(f:sub(2)) end
        i = i + 1
      end
    end
    oracle_cache[key] = r
  end
  return r or nil
end }
"#;

/// The mock environment and the loop over the inputs; prints one block per input.
const DRIVER: &str = r#"
local rw = require "lighten_rewrite"

local Mock = {}
Mock.__index = Mock
function Mock:var(name)
  if name:sub(1, 5) == "HTTP:" then return self.hdr[name:sub(6):lower()] or "" end
  if name:sub(1, 4) == "ENV:" then return self.env[name:sub(5)] or "" end
  if name == "REQUEST_FILENAME" or name == "SCRIPT_FILENAME" then return self.filename end
  if name == "PATH_INFO" then return self.pi or "" end
  local v = self.vars[name]
  if v ~= nil then return v end
  return self.env[name] or ""
end
function Mock:map(name, key)
  local m = MAPS[name]
  if not m then return nil end
  if m.int == "toupper" then return key:upper() end
  if m.int == "tolower" then return key:lower() end
  if m.int then return nil end
  return m.t[key]
end
function Mock:stat(path)
  if self.fs == 0 then return FILES[path] or "" end
  if self.fs == 1 then return "" end
  if self.fs == 2 then return "fsx" end
  return "d"
end
function Mock:test_file(kind, path)
  local f = self:stat(path)
  local function has(c) return f:find(c, 1, true) ~= nil end
  if kind == "file-exists" or kind == "lookup-file" then return has("f") end
  if kind == "file-size" then return has("f") and has("s") end
  if kind == "file-dir" then return has("d") end
  if kind == "file-link" then return has("l") end
  if kind == "file-executable" then return (has("f") or has("d")) and has("x") end
  if kind == "lookup-url" then
    local g = f
    if self.fs == 0 then g = self:stat(DOCROOT .. path) end
    return g:find("[fd]") ~= nil
  end
  return false
end
function Mock:is_self(url)
  local _, e = url:find("://", 1, true)
  if not e then return nil end
  local rest = url:sub(e + 1)
  local slash = rest:find("/", 1, true)
  local hostport, path = rest, "/"
  if slash then hostport, path = rest:sub(1, slash - 1), rest:sub(slash) end
  if hostport:match("^[^:]*"):lower() == HOST then return path end
  return nil
end
function Mock:self_url() return "http://" .. HOST end
function Mock:set_env(name, value)
  if value == nil then
    self.log[#self.log + 1] = "!" .. name
  else
    self.log[#self.log + 1] = name .. "=" .. value
  end
  self.env[name] = value
end
function Mock:expr_cond(cond) return cond.expr(self) == true end

local function b01(b) return b and "1" or "0" end
local function eo(s) if s == nil then return "!" end return "=" .. enc(s) end

local function run(inp, with_trace)
  local L, C = LISTS[inp[1]], CASES[inp[2]]
  local env = {}
  for k, v in pairs(C.env) do env[k] = v end
  local m = setmetatable({ vars = C.vars, hdr = C.hdr, env = env, fs = C.fs, expr = C.expr,
    filename = inp[3], pi = inp[4], log = {} }, Mock)
  local st = { filename = inp[3], path_info = inp[4], args = C.args, status = 200,
    literal_prefix = "", unsafe_prefix_stat = false }
  local trace = with_trace and {} or nil
  local action, flags = rw.apply_list(L.rules, L.perdir, st, m, trace)
  local out = {
    "A " .. action,
    "F " .. b01(flags.passthrough) .. " " .. b01(flags["end"]) .. " " .. b01(flags.proxy) .. " "
      .. (flags.redirect and tostring(flags.redirect) or "-"),
    "S filename " .. eo(st.filename),
    "S path_info " .. eo(st.path_info),
    "S args " .. eo(st.args),
    "S forced_type " .. eo(st.forced_type),
    "S forced_handler " .. eo(st.forced_handler),
    "S status " .. tostring(st.status),
    "S literal_prefix " .. eo(st.literal_prefix),
    "S unsafe_prefix_stat " .. b01(st.unsafe_prefix_stat),
  }
  for _, l in ipairs(m.log) do out[#out + 1] = "E " .. enc(l) end
  local head = table.concat(out, "\n")
  if trace then
    for _, t in ipairs(trace) do
      out[#out + 1] = "T " .. enc(t.at) .. " " .. tostring(t.depth) .. " " .. enc(t.text)
    end
  end
  return table.concat(out, "\n"), head
end

for i, inp in ipairs(INPUTS) do
  local _, quiet = run(inp, false)
  local full, head = run(inp, true)
  io.write("@", i - 1, "\n", full, "\n")
  if quiet ~= head then io.write("X the run without a trace ends differently\n") end
  io.write(".\n")
end
"#;

const CODEC: &str = r#"
function enc(s)
  return (s:gsub("[\0-\32\\\127-\255]", function(c) return string.format("\\x%02x", c:byte()) end))
end
function dec(s)
  return (s:gsub("\\x(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end
"#;

/// The whole Lua script for one fixture.
fn lua_script(
    fx: &Fixture,
    lists: &[List],
    cases: &[Case],
    inputs: &[Input],
    re: &mut dyn Programs,
) -> String {
    let lua_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/lua");
    let mut s =
        format!("package.path = {} .. package.path\n", lua_str(&format!("{}/?.lua;", lua_dir.display())));
    s.push_str(CODEC);
    let mut rules = String::from("LISTS = {\n");
    for l in lists {
        let _ = writeln!(rules, "{{perdir={},rules={{", lua_opt(l.perdir.as_deref()));
        for r in &l.rules {
            rules.push_str(&lua_rule(r, &fx.sources, re));
            rules.push_str(",\n");
        }
        rules.push_str("}},\n");
    }
    rules.push_str("}\n");
    s.push_str(&re.prelude());
    s.push_str(&rules);
    let _ = writeln!(s, "HOST = {}\nDOCROOT = {}", lua_str(&fx.host), lua_str(&fx.docroot));
    s.push_str("FILES = ");
    s.push_str(&lua_table(&fx.files));
    s.push_str("\nMAPS = {");
    for (name, m) in &fx.maps {
        match m {
            MapDef::Table(t) => {
                let _ = write!(s, "[{}]={{t={}}},", lua_str(name), lua_table(t));
            }
            MapDef::Int(f) => {
                let _ = write!(s, "[{}]={{int={}}},", lua_str(name), lua_str(f));
            }
        }
    }
    s.push_str("}\nCASES = {\n");
    for c in cases {
        let _ = writeln!(
            s,
            "{{vars={},hdr={},env={},args={},fs={},expr={}}},",
            lua_table(&c.vars),
            lua_table(&c.headers),
            lua_table(&c.env),
            lua_opt(c.args.as_deref()),
            c.fs,
            c.expr
        );
    }
    s.push_str("}\nINPUTS = {\n");
    for i in inputs {
        let _ = writeln!(
            s,
            "{{{},{},{},{}}},",
            i.list + 1,
            i.case + 1,
            lua_str(&i.filename),
            lua_opt(i.path_info.as_deref())
        );
    }
    s.push_str("}\n");
    s.push_str(DRIVER);
    s
}

/// Runs the script; `?` lines go to `oracle`, the rest is returned as blocks by input.
fn run_lua(script: &str, mut oracle: Option<&mut Oracle>) -> Result<Vec<String>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("luarewrite.lua");
    std::fs::write(&path, script).map_err(|e| e.to_string())?;
    let errpath = dir.path().join("stderr");
    let mut child = Command::new(LUA)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&errpath).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("{LUA}: {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut blocks: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for line in stdout.lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.starts_with('?') {
            let o = oracle.as_deref_mut().ok_or("a regex query without the oracle")?;
            writeln!(stdin, "{}", o.answer(&line)).map_err(|e| e.to_string())?;
            stdin.flush().map_err(|e| e.to_string())?;
        } else if let Some(n) = line.strip_prefix('@') {
            if n.parse::<usize>().ok() != Some(blocks.len()) {
                return Err(format!("block {n} out of order"));
            }
            cur = Some(String::new());
        } else if line == "." {
            blocks.push(cur.take().ok_or("'.' outside a block")?);
        } else {
            let b = cur.as_mut().ok_or_else(|| format!("output outside a block: {line}"))?;
            b.push_str(&line);
            b.push('\n');
        }
    }
    drop(stdin);
    let status = child.wait().map_err(|e| e.to_string())?;
    let err = std::fs::read_to_string(&errpath).unwrap_or_default();
    if !status.success() {
        return Err(format!("{LUA} failed ({status}):\n{err}"));
    }
    Ok(blocks)
}

// ---------------------------------------------------------------------------------------
// the comparison

#[derive(Default)]
struct Tally {
    fixtures: usize,
    lists: usize,
    inputs: usize,
    agreed: usize,
    failed_closed: usize,
    /// Patterns luare could not compile (their rules fail closed).
    unsupported: usize,
    /// What failed closed, and why.
    reasons: std::collections::BTreeSet<String>,
    differences: Vec<String>,
}

/// The Rust result of every input, as the canonical text.
fn rust_results(fx: &Fixture, lists: &[List], cases: &[Case], inputs: &[Input]) -> Vec<String> {
    inputs
        .iter()
        .map(|i| {
            let case = &cases[i.case];
            let list = &lists[i.list];
            let mut mock = Mock {
                fx,
                case,
                filename: &i.filename,
                path_info: i.path_info.as_deref(),
                env: case.env.clone(),
                log: Vec::new(),
            };
            let mut st = State::new(i.filename.clone(), i.path_info.clone(), case.args.clone());
            let mut trace = Vec::new();
            let (action, flags) =
                apply_list(&list.rules, list.perdir.as_deref(), &mut st, &mut mock, &mut trace);
            rust_block(&fx.sources, action, &flags, &st, &mock.log, &trace)
        })
        .collect()
}

/// The reason a Lua block failed closed, when it did: it answers 403, its trace ends with
/// the fail-closed step, and up to that step it is the Rust trace.
fn failed_closed(lua: &str, rust: &str) -> Option<String> {
    let lua_trace: Vec<&str> = lua.lines().filter(|l| l.starts_with("T ")).collect();
    let rust_trace: Vec<&str> = rust.lines().filter(|l| l.starts_with("T ")).collect();
    let (last, before) = lua_trace.split_last()?;
    let closed = last.ends_with(":\\x20403\\x20(fail\\x20closed)")
        && lua.starts_with("A status\n")
        && lua.contains("\nS status 403\n")
        && rust_trace.len() >= before.len()
        && rust_trace[..before.len()] == *before;
    let text = last.splitn(4, ' ').nth(3)?;
    closed.then(|| String::from_utf8_lossy(&dec(text)).into_owned())
}

/// Compares one fixture's results; returns how many agreed and how many failed closed.
fn compare(
    fx: &Fixture,
    lists: &[List],
    inputs: &[Input],
    rust: &[String],
    lua: &[String],
    tally: &mut Tally,
) -> (usize, usize) {
    if lua.len() != rust.len() {
        tally.differences.push(format!("{}: {} Lua results for {} inputs", fx.name, lua.len(), rust.len()));
        return (0, 0);
    }
    let (mut agreed, mut closed) = (0, 0);
    for (k, (r, l)) in rust.iter().zip(lua).enumerate() {
        tally.inputs += 1;
        if r == l {
            tally.agreed += 1;
            agreed += 1;
        } else if let Some(why) = failed_closed(l, r) {
            tally.failed_closed += 1;
            closed += 1;
            let why = why.rsplit_once(": 403").map_or(why.as_str(), |w| w.0).to_string();
            tally.reasons.insert(format!("{}: {why}", fx.name));
        } else if tally.differences.len() < 20 {
            let i = &inputs[k];
            tally.differences.push(format!(
                "{}: list {} (perdir {:?}, first rule {}), filename {} path_info {:?}\n--- rust\n{r}--- lua\n{l}",
                fx.name,
                i.list,
                lists[i.list].perdir,
                fx.sources.line_ref(lists[i.list].rules[0].at),
                i.filename,
                i.path_info
            ));
        } else {
            tally.differences.push(String::new());
        }
    }
    (agreed, closed)
}

fn have_lua() -> bool {
    Command::new(LUA).arg("-v").output().is_ok_and(|o| o.status.success())
}

#[test]
fn lua_rewrite_engine_agrees_with_rust() {
    if !have_lua() {
        assert!(std::env::var_os("CI").is_none(), "{LUA} is not installed");
        eprintln!("skipped: {LUA} is not installed");
        return;
    }
    let (mut oracle_tally, mut luare_tally) = (Tally::default(), Tally::default());
    let dirs = [fixture_dirs(Path::new("fixtures")), fixture_dirs(Path::new("tests/luarewrite"))];
    for dir in dirs.into_iter().flatten() {
        let fx = load(&dir);
        let lists = rule_lists(&fx.model, &fx.docroot);
        if lists.is_empty() {
            continue;
        }
        let cases = cases(&fx);
        let inputs = inputs(&lists, &cases, &fx.docroot);
        let rust = rust_results(&fx, &lists, &cases, &inputs);

        let mut oracle = Oracle::default();
        let script = lua_script(&fx, &lists, &cases, &inputs, &mut oracle);
        let lua = run_lua(&script, Some(&mut oracle)).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        let o = compare(&fx, &lists, &inputs, &rust, &lua, &mut oracle_tally);

        let mut luare = Luare::default();
        let script = lua_script(&fx, &lists, &cases, &inputs, &mut luare);
        let lua = run_lua(&script, None).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        let l = compare(&fx, &lists, &inputs, &rust, &lua, &mut luare_tally);
        luare_tally.unsupported += luare.unsupported;

        eprintln!(
            "{}: {} lists, {} inputs; oracle: {} agree; luare: {} agree, {} failed closed \
             ({} patterns it cannot compile)",
            fx.name,
            lists.len(),
            inputs.len(),
            o.0,
            l.0,
            l.1,
            luare.unsupported
        );
        for t in [&mut oracle_tally, &mut luare_tally] {
            t.fixtures += 1;
            t.lists += lists.len();
        }
    }
    for (name, t) in [("oracle", &oracle_tally), ("luare", &luare_tally)] {
        let shown: Vec<&str> = t.differences.iter().filter(|d| !d.is_empty()).map(String::as_str).collect();
        assert!(
            t.differences.is_empty(),
            "{name}: {} difference(s), the first {}:\n{}",
            t.differences.len(),
            shown.len(),
            shown.join("\n")
        );
        eprintln!(
            "{name}: {} fixtures, {} rule lists, {} inputs: {} agree, {} failed closed ({} patterns not compiled)",
            t.fixtures, t.lists, t.inputs, t.agreed, t.failed_closed, t.unsupported
        );
    }
    for r in &luare_tally.reasons {
        eprintln!("  failed closed: {r}");
    }
    // PCRE2 runs every pattern: with the oracle only the uncompiled expression remains.
    for r in &oracle_tally.reasons {
        assert!(r.contains("cannot be evaluated here"), "the oracle back end failed closed: {r}");
    }
    // tests/luarewrite/edge has one of each: a pattern that runs out of PCRE2's match
    // limit, an expression the translator could not compile.
    for why in ["PCRE2_ERROR_MATCHLIMIT", "cannot be evaluated here"] {
        assert!(luare_tally.reasons.iter().any(|r| r.contains(why)), "nothing failed closed with '{why}'");
    }
    // The corpus is the evidence: it must not shrink unnoticed.
    assert!(
        oracle_tally.lists >= 28 && oracle_tally.inputs >= 8000,
        "only {} inputs over {} rule lists",
        oracle_tally.inputs,
        oracle_tally.lists
    );
}
