//! Proof before the switch: Apache on the original configuration and lighttpd on its
//! conversion, side by side in one sandbox (the same copy of the files, the same PHP
//! backend, loopback ports), answer the same requests; every difference is reported with
//! both answers and the `file:line` of what decided Apache's.
//!
//! PHP runs in echo mode: every script answers with the variables it was handed, so the
//! comparison proves routing (which script, with which SCRIPT_NAME, PATH_INFO and query)
//! without needing the application's database.

pub mod attack;
pub mod derive;
pub mod report;

use crate::config::Config;
use crate::eval::request::Wire;
use crate::eval::{self, Request, Served};
use crate::model::Model;
use crate::run::http::{self, HttpResponse};
use crate::run::{apache, lighttpd, observe, sandbox::Sandbox};
use crate::translate;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Response headers compared besides those the configuration sets with `Header`.
pub const HEADERS: &[&str] =
    &["Content-Type", "Content-Encoding", "Cache-Control", "Vary", "WWW-Authenticate"];

/// A change made to the converted files (path, text) before lighttpd starts.
pub type Tamper = Box<dyn Fn(&mut Vec<(std::path::PathBuf, String)>)>;

pub struct Options {
    /// Keep the sandbox folder (configurations, logs) after the run.
    pub keep: bool,
    /// Make lighten.lua write its steps to lighttpd's error log.
    pub lua_trace: bool,
    /// Called after each request with (done, total): a progress bar.
    pub progress: Option<Box<dyn FnMut(usize, usize)>>,
    /// Changes the converted files before lighttpd starts: how the tests prove that a
    /// broken conversion is caught.
    pub tamper: Option<Tamper>,
    /// After each request Apache refuses (401, 403), its attacker variants
    /// (`attack::variants`), compared the same way.
    pub attack: bool,
}

impl Options {
    /// No progress, no trace, nothing kept.
    pub fn quiet() -> Options {
        Options { keep: false, lua_trace: false, progress: None, tamper: None, attack: false }
    }
}

/// One answer, as much as the report shows.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub served: String,
    pub headers: BTreeMap<String, String>,
    pub body_bytes: usize,
}

/// One request, both answers, and how they differ.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The request in the requests-file format.
    pub request: String,
    /// The virtual host Apache answered it with.
    pub vhost: String,
    /// The rewrite rules that applied (`file:line`).
    pub rules: Vec<String>,
    /// What decided Apache's answer (`file:line`), when the evaluator can tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    pub apache: Answer,
    pub lighttpd: Answer,
    /// Empty when the answers agree.
    pub differences: Vec<String>,
    /// Apache refused (4xx) and lighttpd answered 2xx: the converted site is more open.
    pub fail_open: bool,
    /// For an attacker variant of a request Apache refused: what it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attack: Option<String>,
}

/// The whole run.
#[derive(Debug, Serialize)]
pub struct Verification {
    pub comparisons: Vec<Comparison>,
    /// The conversion's report counts (exact, approximated, ...).
    pub conversion: BTreeMap<String, usize>,
    /// Each site's verdict, as in the conversion's report.md.
    pub sites: Vec<crate::translate::SiteVerdict>,
    /// Where the sandbox was kept, with `--keep`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

impl Verification {
    pub fn fail_open(&self) -> usize {
        self.comparisons.iter().filter(|c| c.fail_open).count()
    }

    pub fn agreed(&self) -> usize {
        self.comparisons.iter().filter(|c| c.differences.is_empty()).count()
    }
}

/// Apache on the original and lighttpd on its conversion, running side by side in one
/// sandbox (the same copy of the files, the same PHP backend). Stopped on drop,
/// lighttpd first.
pub struct Pair {
    pub lighttpd: lighttpd::RunningLighttpd,
    pub apache: apache::RunningApache,
    /// Original port -> (lighttpd's port, TLS).
    pub lighttpd_ports: BTreeMap<u16, (u16, bool)>,
    pub paths: apache::PathMap,
    /// The conversion's report counts (exact, approximated, ...).
    pub conversion: BTreeMap<String, usize>,
    /// Each site's verdict, as in the conversion's report.md.
    pub sites: Vec<crate::translate::SiteVerdict>,
    /// Where the sandbox was kept, when asked to keep it.
    pub kept: Option<String>,
    pub sandbox: Sandbox,
}

/// Starts both servers. `php_echo` puts the PHP backend in echo mode (every script
/// answers with the variables it was given: routing without the application).
pub fn launch(
    for_run: &Config,
    cfg: &Config,
    model: &Model,
    opts: &Options,
    php_echo: bool,
) -> std::io::Result<Pair> {
    let mut sb = Sandbox::new("lighten-verify-")?;
    let kept = opts.keep.then(|| sb.keep().display().to_string());
    let a = apache::start(for_run, &sb, &apache::ApacheOptions { php_echo, rewrite_trace: None })?;
    let paths = apache::PathMap { root: a.root.clone() };

    // The converted site: the same copy of the files, the same PHP, its own ports.
    let out_dir = sb.path().join("lighttpd");
    let mut listen = Vec::new();
    let mut lports = BTreeMap::new();
    for l in &a.listeners {
        let p = crate::run::sandbox::free_port()?;
        listen.push((Some(l.original), "127.0.0.1".to_string(), p));
        lports.insert(l.original, (p, l.tls));
    }
    let cert = sb.self_signed_cert();
    let map = paths.clone();
    let topts = translate::Options {
        out_dir: out_dir.clone(),
        listen,
        runtime_dir: out_dir.join("run"),
        map_path: Box::new(move |p: &str| map.map(p)),
        php_backend: a.php.as_ref().map(|p| format!("127.0.0.1:{}", p.port)),
        fallback_cert: Some((cert.0.display().to_string(), cert.1.display().to_string())),
        trace: opts.lua_trace,
        // the sandbox's logs stay in the sandbox
        apache_log_paths: false,
    };
    let mut conv = translate::convert(model, cfg, &topts);
    // lighttpd holds an answer to a wrong password back for a second (against guessing);
    // the sandbox answers at once, or a run with many such requests takes minutes. The
    // converted lighttpd.conf keeps lighttpd's default.
    if let Some((_, text)) = conv.files.iter_mut().find(|(p, _)| p.as_os_str() == "lighttpd.conf") {
        text.push_str(
            "\n# lighten verify's sandbox: answers to a wrong password are not delayed\n\
             server.feature-flags += ( \"auth.delay-invalid-creds\" => \"disable\" )\n",
        );
    }
    if let Some(t) = &opts.tamper {
        t(&mut conv.files);
    }
    crate::output::write_files(&out_dir, &conv.files)?;
    std::fs::create_dir_all(out_dir.join("run"))?;
    // lighttpd switches to the configuration's User: let it write its logs.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out_dir.join("run"), std::fs::Permissions::from_mode(0o777))?;
    }
    // The static lane on, as `lighten watch` runs it (translate::lane): what is not in the
    // lane goes through the Lua alike, on or off.
    std::fs::write(out_dir.join(translate::lane::WATCHING), translate::lane::WATCHING_TEXT)?;
    let first = lports.values().next().map(|(p, _)| *p).unwrap_or(80);
    let l = lighttpd::start(&out_dir.join("lighttpd.conf"), &sb, first)?;
    Ok(Pair {
        lighttpd: l,
        apache: a,
        lighttpd_ports: lports,
        paths,
        conversion: conv.report.counts.clone(),
        sites: conv.report.sites.clone(),
        kept,
        sandbox: sb,
    })
}

/// Starts both servers and replays `requests`.  `for_run` and `cfg` are the same
/// configuration loaded twice (the sandbox rewrites one; `model` is built from the other).
pub fn run(
    for_run: &Config,
    cfg: &Config,
    model: &Model,
    requests: &[Request],
    mut opts: Options,
) -> std::io::Result<Verification> {
    let pair = launch(for_run, cfg, model, &opts, true)?;
    let (a, lports, paths) = (&pair.apache, &pair.lighttpd_ports, &pair.paths);
    let custom = header_names(model);
    let default_host = default_host(model);
    let mut comparisons = Vec::new();
    // The requests to send: those given, then the attacker variants of each Apache refuses.
    let mut queue: Vec<(Request, Option<&'static str>)> =
        requests.iter().map(|r| (r.clone(), None)).collect();
    let mut i = 0;
    while i < queue.len() {
        let (req, attack) = queue[i].clone();
        let req = &req;
        i += 1;
        let total = queue.len();
        // The servers are being stopped: nothing sent now would mean anything.
        crate::run::process::not_interrupted()?;
        if let Some(p) = opts.progress.as_mut() {
            p(i - 1, total);
        }
        let port = req
            .host
            .as_deref()
            .and_then(|h| crate::model::server::split_host_port(h).1.and_then(|p| p.parse::<u16>().ok()))
            .unwrap_or(if req.scheme == "https" { 443 } else { 80 });
        let (Some(aport), Some(&(lport, tls))) = (a.port_for(port), lports.get(&port)) else { continue };
        // As a browser sends it: no port in Host when it is the scheme's default.
        let mut host = req.host.clone().unwrap_or_else(|| default_host.clone());
        let default_port = if req.scheme == "https" { ":443" } else { ":80" };
        if let Some(h) = host.strip_suffix(default_port) {
            host = h.to_string();
        }
        let mut headers: Vec<(String, String)> = vec![("Host".into(), host.clone())];
        headers.extend(req.headers.iter().cloned());
        let mut r = req.clone();
        r.host = req.host_header(&host);
        let ev = eval::evaluate(model, &cfg.sysroot, &r, port);
        let sent = Sent::new(req, &host, headers);
        let ra = send(aport, tls, &sent);
        let rl = send(lport, tls, &sent);
        crate::run::process::not_interrupted()?;
        let (ra, rl) = match (ra, rl) {
            (Ok(x), Ok(y)) => (x, y),
            (x, y) => {
                let err =
                    |r: std::io::Result<HttpResponse>| r.err().map(|e| e.to_string()).unwrap_or_default();
                let none = Answer {
                    status: 0,
                    location: None,
                    served: String::new(),
                    headers: BTreeMap::new(),
                    body_bytes: 0,
                };
                comparisons.push(Comparison {
                    request: req.to_line(),
                    vhost: String::new(),
                    rules: Vec::new(),
                    decided_at: None,
                    apache: none.clone(),
                    lighttpd: none,
                    differences: vec![format!("no answer: {} / {}", err(x), err(y))],
                    fail_open: false,
                    attack: attack.map(str::to_string),
                });
                continue;
            }
        };
        let head = req.method == "HEAD";
        let sa = observe::observe(&ra, paths, &cfg.sysroot, Some(&ev.outcome), head);
        let sl = observe::observe(&rl, paths, &cfg.sysroot, Some(&ev.outcome), head);
        let mut differences = compare(&ra, &rl, &sa.served, &sl.served, &custom, head);
        // Apache refused (a 4xx, or the 500 of a configuration it will not apply: a
        // broken .htaccess, a Require with no AuthType) and lighttpd served.
        let refused = (400..=500).contains(&ra.status);
        let mut fail_open = refused && (200..300).contains(&rl.status);
        // PHP Apache runs that lighttpd sends as its source (database passwords and all):
        // as bad as a refusal served.
        if let Served::Php { script, .. } = &sa.served
            && (200..300).contains(&rl.status)
            && !rl.body.is_empty()
            && cfg.sysroot.read(script).is_ok_and(|b| b == rl.body)
        {
            fail_open = true;
            differences.push(format!("lighttpd sent the source of {script}, which Apache runs as PHP"));
        }
        // The same request again: the converted site may answer it from its decision
        // cache (lighten_core.lua), which must answer as the evaluation did.
        match send(lport, tls, &sent) {
            Ok(again) => {
                let s2 = observe::observe(&again, paths, &cfg.sysroot, Some(&ev.outcome), head);
                for d in compare(&ra, &again, &sa.served, &s2.served, &custom, head) {
                    if !differences.contains(&d) {
                        differences.push(format!("sent again: {d}"));
                    }
                }
                fail_open |= refused && (200..300).contains(&again.status);
            }
            Err(e) => differences.push(format!("sent again: no answer: {e}")),
        }
        // lighttpd lower-cases the Host before anything reads it, so the converted site
        // answers an upper-case Host as Apache answers the lower-case one: that is no
        // fail-open when Apache serves the lower-case name alike (anyone may ask for it).
        if fail_open
            && sent.host().is_some_and(|h| h.bytes().any(|b| b.is_ascii_uppercase()))
            && let Ok(lower) = send(aport, tls, &sent.with_host_lowercased())
            && lower.status == rl.status
        {
            fail_open = false;
            differences.push(format!(
                "Apache answers the lower-case Host {} too: lighttpd lower-cases the Host \
                 header before anything reads it (reported as approximated)",
                lower.status
            ));
        }
        let (vhost, rules, decided_at) = attribution(&ev, &cfg.sources);
        comparisons.push(Comparison {
            request: req.to_line(),
            vhost,
            rules,
            decided_at,
            apache: answer(&ra, &sa.served, &custom),
            lighttpd: answer(&rl, &sl.served, &custom),
            differences,
            fail_open,
            attack: attack.map(str::to_string),
        });
        if opts.attack && attack.is_none() && matches!(ra.status, 401 | 403) {
            queue.extend(
                attack::variants(req)
                    .into_iter()
                    .chain(attack::wire_variants(req, &host))
                    .map(|(r, what)| (r, Some(what))),
            );
        }
    }
    if let Some(p) = opts.progress.as_mut() {
        p(queue.len(), queue.len());
    }
    let kept = pair.kept.clone();
    let conversion = pair.conversion.clone();
    let sites = pair.sites.clone();
    drop(pair);
    Ok(Verification { comparisons, conversion, sites, kept })
}

/// A request as it goes on the wire: request line and headers.
#[derive(Clone)]
pub struct Sent {
    method: String,
    target: String,
    version: &'static str,
    headers: Vec<(String, String)>,
    /// The name TLS asks for: the request's host, whatever Host header is sent.
    sni: String,
}

impl Sent {
    /// `req` sent as its `wire` says, to `host` (the Host header it would carry), with
    /// `headers` (Host first).
    pub fn new(req: &Request, host: &str, mut headers: Vec<(String, String)>) -> Sent {
        let sni = crate::model::server::split_host_port(host).0.unwrap_or_default();
        let mut target = req.target();
        let mut version = "HTTP/1.1";
        match &req.wire {
            Wire::Origin => {}
            Wire::Absolute => target = format!("{}://{host}{target}", req.scheme),
            Wire::Http10NoHost => {
                version = "HTTP/1.0";
                headers.remove(0);
            }
            Wire::Host(h) => headers[0].1 = h.clone(),
        }
        Sent { method: req.method.clone(), target, version, headers, sni }
    }

    /// The Host header sent, if any.
    fn host(&self) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")).map(|(_, v)| v.as_str())
    }

    /// The same request with its Host header in lower case.
    fn with_host_lowercased(&self) -> Sent {
        let mut s = self.clone();
        for (n, v) in &mut s.headers {
            if n.eq_ignore_ascii_case("host") {
                v.make_ascii_lowercase();
            }
        }
        s
    }
}

/// Sends `s` to the server on loopback `port`, over TLS when `tls`.
pub fn send(port: u16, tls: bool, s: &Sent) -> std::io::Result<HttpResponse> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    if tls {
        http::send_tls(addr, &s.sni, s.version, &s.method, &s.target, &s.headers, b"")
    } else {
        http::send_version(addr, s.version, &s.method, &s.target, &s.headers, b"")
    }
}

/// How two answers to the same request differ (empty when they agree): status,
/// Location, what was served, the body when Apache served content, and the headers that
/// matter. An error page each server writes in its own words is the same answer.
pub fn compare(
    ra: &HttpResponse,
    rl: &HttpResponse,
    sa: &Served,
    sl: &Served,
    custom: &[String],
    head: bool,
) -> Vec<String> {
    let mut diffs = Vec::new();
    if ra.status != rl.status {
        diffs.push(format!("status {} vs {}", ra.status, rl.status));
    }
    if ra.header("Location") != rl.header("Location") {
        diffs.push(format!("Location {:?} vs {:?}", ra.header("Location"), rl.header("Location")));
    }
    let content = matches!(sa, Served::File { .. } | Served::Php { .. });
    if sa != sl && (content || *sl != Served::Error) {
        diffs.push(format!("served {sa:?} vs {sl:?}"));
    }
    if content && !head && decoded(ra) != decoded(rl) && !matches!(sa, Served::Php { .. }) {
        diffs.push(format!("body {} bytes vs {} bytes", ra.body.len(), rl.body.len()));
    }
    if content {
        for h in HEADERS.iter().map(|s| s.to_string()).chain(custom.iter().cloned()) {
            // Each server computes its own validator (Apache: size and mtime in hex, weak
            // within a second of the mtime; lighttpd: its own hash): whether there is one
            // is what the configuration decides (FileETag None, Header unset ETag).
            if h.eq_ignore_ascii_case("etag") {
                let has = |r: &HttpResponse| if r.header(&h).is_some() { "present" } else { "absent" };
                if has(ra) != has(rl) {
                    diffs.push(format!("{h}: {} vs {}", has(ra), has(rl)));
                }
                continue;
            }
            let (x, y) = (norm(ra.header_joined(&h).as_deref()), norm(rl.header_joined(&h).as_deref()));
            if x != y {
                diffs.push(format!("{h}: {x:?} vs {y:?}"));
            }
        }
        if ra.header("Expires").is_some() != rl.header("Expires").is_some() {
            diffs.push(format!("Expires {:?} vs {:?}", ra.header("Expires"), rl.header("Expires")));
        }
    } else if ra.status == 401 && norm(ra.header("WWW-Authenticate")) != norm(rl.header("WWW-Authenticate")) {
        diffs.push(format!(
            "WWW-Authenticate {:?} vs {:?}",
            ra.header("WWW-Authenticate"),
            rl.header("WWW-Authenticate")
        ));
    }
    diffs
}

fn answer(r: &HttpResponse, served: &Served, custom: &[String]) -> Answer {
    let mut headers = BTreeMap::new();
    for h in
        HEADERS.iter().map(|s| s.to_string()).chain(custom.iter().cloned()).chain(["Expires".to_string()])
    {
        if let Some(v) = r.header_joined(&h) {
            headers.insert(h, v);
        }
    }
    Answer {
        status: r.status,
        location: r.header("Location").map(str::to_string),
        served: describe(served),
        headers,
        body_bytes: r.body.len(),
    }
}

fn describe(s: &Served) -> String {
    match s {
        Served::File { path } => format!("file {path}"),
        Served::Php { script, script_name, path_info, query_string, .. } => format!(
            "PHP {script} (SCRIPT_NAME={script_name} PATH_INFO={} QUERY_STRING={query_string})",
            path_info.as_deref().unwrap_or("")
        ),
        Served::Listing { .. } => "a directory listing".into(),
        Served::Redirect => "a redirect".into(),
        Served::Error => "an error page".into(),
        Served::Proxy { url } => format!("proxy to {url}"),
        Served::Trace => "the TRACE echo".into(),
        Served::Options => "the OPTIONS answer (no body)".into(),
        Served::Unknown { reason } => reason.clone(),
    }
}

/// Which vhost, which rewrite rules applied, and the last step of the evaluation that
/// names a source line.
fn attribution(
    ev: &eval::Evaluation,
    sources: &crate::source::SourceMap,
) -> (String, Vec<String>, Option<String>) {
    let mut vhost = String::new();
    let mut rules = Vec::new();
    let steps = &ev.trace;
    for (i, s) in steps.iter().enumerate() {
        if s.text.starts_with("virtual host ") || s.text.starts_with("main server") {
            vhost = s.text.trim_start_matches("virtual host ").to_string();
        }
        if s.depth == 0 && s.text.starts_with("RewriteRule ") && s.text.ends_with(": matches") {
            let failed = steps[i + 1..]
                .iter()
                .take_while(|n| n.depth > 0)
                .any(|n| n.text.starts_with("conditions fail"));
            if !failed && let Some(at) = s.at {
                let r = sources.line_ref(at);
                if !rules.contains(&r) {
                    rules.push(r);
                }
            }
        }
    }
    let decided = steps.iter().rev().find_map(|s| s.at).map(|at| sources.line_ref(at));
    (vhost, rules, decided)
}

/// The body as sent before compression: two gzip encoders do not write the same bytes.
pub fn decoded(r: &HttpResponse) -> Vec<u8> {
    use std::io::Read;
    let enc = r.header("Content-Encoding").unwrap_or("").to_ascii_lowercase();
    let mut out = Vec::new();
    let ok = match enc.as_str() {
        "gzip" => flate2::read::GzDecoder::new(&r.body[..]).read_to_end(&mut out).is_ok(),
        "deflate" => flate2::read::ZlibDecoder::new(&r.body[..]).read_to_end(&mut out).is_ok(),
        _ => false,
    };
    if ok { out } else { r.body.clone() }
}

/// Header values compared as Apache and lighttpd may spell them: token lists without the
/// spaces after commas; lighttpd's mod_auth adds RFC 7617's `charset="UTF-8"` to a Basic
/// challenge, which changes nothing for a client.
pub fn norm(v: Option<&str>) -> Option<String> {
    v.map(|s| {
        let s = s.replace(", charset=\"UTF-8\"", "");
        s.split(',').map(str::trim).collect::<Vec<_>>().join(",")
    })
}

/// The name the first virtual host answers to: where a request without a host goes.
pub fn default_host(model: &Model) -> String {
    model
        .vhosts
        .iter()
        .find(|v| v.scope.enabled)
        .and_then(|v| v.server_name.clone())
        .unwrap_or_else(|| "localhost".into())
}

/// The response headers the configuration sets.
pub fn header_names(model: &Model) -> Vec<String> {
    fn walk(s: &crate::model::Scope, names: &mut std::collections::BTreeSet<String>) {
        for h in s.settings.headers.iter().filter(|h| !h.request) {
            names.insert(h.name.clone());
        }
        for c in &s.children {
            walk(c, names);
        }
    }
    let mut names = std::collections::BTreeSet::new();
    walk(&model.server, &mut names);
    for v in &model.vhosts {
        walk(&v.scope, &mut names);
    }
    for h in &model.htaccess {
        if let Some(s) = &h.scope {
            walk(s, &mut names);
        }
    }
    names.into_iter().filter(|n| !HEADERS.iter().any(|h| h.eq_ignore_ascii_case(n))).collect()
}
