//! The converted site against the original: every fixture with a `requests.txt` is served
//! by Apache from its configuration and by lighttpd from `lighten convert`'s output, side
//! by side in one sandbox with the same files and the same PHP backend, and every request
//! must be answered the same way: status, Location, body, and the headers that matter.
//! A denial on Apache that lighttpd answers with a 2xx is a fail-open and fails the test
//! whatever else happens.

use crate::helpers::fixtures;
use lighten::eval::{self, Request};
use lighten::run::{apache, http, lighttpd, observe, sandbox::Sandbox};
use lighten::translate;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Differences accepted with their reason: (fixture, request line, why).
const KNOWN: &[(&str, &str, &str)] = &[
    ("codeigniter4", "GET http://WWW.Example.com/", HOST_CASE),
    ("h5bp", "GET http://WWW.Example.Test/about", HOST_CASE),
    ("w3tc", "GET http://EXAMPLE.TEST/about/", HOST_CASE),
    ("magento2", "TRACE /", TRACE),
    ("magento2", "TRACE /pub/", TRACE),
    ("magento2", "TRACK /", TRACE),
    ("plesk", "GET http://shop.example:80/autodiscover/autodiscover.xml", PROXY),
    ("plesk", "POST http://blog.example:80/Autodiscover/Autodiscover.xml", PROXY),
    ("plesk", "GET http://shop.example:80/mail/config-v1.1.xml?emailaddress=a%40shop.example", PROXY),
];

const HOST_CASE: &str = "lighttpd lower-cases the Host header before anything reads it, so %{HTTP_HOST} and \
     %{SERVER_NAME} are lower case (a redirect's Location, W3TC's cache path)";
const TRACE: &str = "lighttpd does not implement TRACE (405) and rejects the unknown method TRACK (501); Apache \
     echoes TRACE and answers TRACK with 405: both refuse, lighttpd more strictly";
const PROXY: &str = "a [P] rule proxies to a URL computed per request, which lighttpd's mod_proxy cannot do: the \
     translation refuses (403, fails closed); Apache's 503 only says the sandbox has no backend";

/// Response headers compared besides those the configuration sets with `Header`.
const HEADERS: &[&str] = &["Content-Type", "Content-Encoding", "Cache-Control", "Vary", "WWW-Authenticate"];

fn have(cmd: &str) -> bool {
    std::process::Command::new(cmd).arg("-v").output().is_ok()
}

#[derive(Default)]
struct Tally {
    total: usize,
    same: usize,
    known: usize,
    differences: Vec<String>,
    fail_open: Vec<String>,
    /// Requests of fail-open-only fixtures.
    checked_elsewhere: usize,
}

fn send(
    port: u16,
    tls: bool,
    req: &Request,
    headers: &[(String, String)],
) -> std::io::Result<http::HttpResponse> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    if tls {
        let sni = lighten::model::server::split_host_port(&headers[0].1).0.unwrap_or_default();
        http::send_tls(addr, &sni, &req.method, &req.target(), headers, b"")
    } else {
        http::send(addr, &req.method, &req.target(), headers, b"")
    }
}

fn run_fixture(f: &crate::helpers::Fixture, requests: &[Request], t: &mut Tally) {
    let (opts, cfg_for_run, cfg, model) = f.load();
    let mut sb = Sandbox::new("lighten-conv-").unwrap();
    if std::env::var_os("LIGHTEN_KEEP").is_some() {
        eprintln!("{}: sandbox kept at {}", f.name, sb.keep().display());
    }
    let a = apache::start(&cfg_for_run, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: None })
        .unwrap_or_else(|e| panic!("{}: {e}", f.name));
    let paths = apache::PathMap { root: a.root.clone() };

    // The converted site: the same copy of the files, the same PHP, its own ports.
    let out_dir = sb.path().join("lighttpd");
    let mut listen = Vec::new();
    let mut lports = BTreeMap::new();
    for l in &a.listeners {
        let p = lighten::run::sandbox::free_port().unwrap();
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
        trace: std::env::var_os("LIGHTEN_LUA_TRACE").is_some(),
    };
    let conv = translate::convert(&model, &cfg, &topts);
    for (rel, text) in &conv.files {
        let p = out_dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    std::fs::create_dir_all(out_dir.join("run")).unwrap();
    // lighttpd switches to the configuration's User: let it write its logs.
    let _ = std::process::Command::new("chmod").arg("0777").arg(out_dir.join("run")).status();
    let first = lports.values().next().map(|(p, _)| *p).expect("a listener");
    let l = lighttpd::start(&out_dir.join("lighttpd.conf"), &sb, first)
        .unwrap_or_else(|e| panic!("{}: {e}", f.name));

    let custom: Vec<String> = header_names(&model);
    let default_host =
        model.vhosts.first().and_then(|v| v.server_name.clone()).unwrap_or_else(|| opts.server_name.clone());
    let fail_open_only = f.manifest.convert.as_deref() == Some("fail-open-only");
    let mut same = 0;
    let mut total = 0;
    for req in requests {
        let port = req
            .host
            .as_deref()
            .and_then(|h| lighten::model::server::split_host_port(h).1.and_then(|p| p.parse::<u16>().ok()))
            .unwrap_or(if req.scheme == "https" { 443 } else { 80 });
        let (Some(aport), Some(&(lport, tls))) = (a.port_for(port), lports.get(&port)) else { continue };
        // As a browser sends it: no port in Host when it is the scheme's default.
        let mut host = req.host.clone().unwrap_or_else(|| default_host.clone());
        let default_port = if req.scheme == "https" { ":443" } else { ":80" };
        if let Some(h) = host.strip_suffix(default_port) {
            host = h.to_string();
        }
        let mut headers: Vec<(String, String)> = vec![("Host".into(), host)];
        headers.extend(req.headers.iter().cloned());
        let mut r = req.clone();
        r.host = Some(headers[0].1.clone());
        let ev = eval::evaluate(&model, &cfg.sysroot, &r, port);
        total += 1;
        let line = req.to_line();
        let (ra, rl) = match (send(aport, tls, req, &headers), send(lport, tls, req, &headers)) {
            (Ok(x), Ok(y)) => (x, y),
            (x, y) => {
                t.differences.push(format!("{}: {line}: no answer: {:?} / {:?}", f.name, x.err(), y.err()));
                continue;
            }
        };
        let head = req.method == "HEAD";
        let sa = observe::observe(&ra, &paths, &cfg.sysroot, Some(&ev.outcome), head);
        let sl = observe::observe(&rl, &paths, &cfg.sysroot, Some(&ev.outcome), head);
        if (400..500).contains(&ra.status) && (200..300).contains(&rl.status) {
            t.fail_open.push(format!("{}: {line}: Apache {} but lighttpd {}", f.name, ra.status, rl.status));
        }
        let mut diffs = Vec::new();
        if ra.status != rl.status {
            diffs.push(format!("status {} vs {}", ra.status, rl.status));
        }
        if ra.header("Location") != rl.header("Location") {
            diffs.push(format!("Location {:?} vs {:?}", ra.header("Location"), rl.header("Location")));
        }
        // Bodies and their headers count when Apache served content, not its own pages.
        let content =
            matches!(sa.served, lighten::eval::Served::File { .. } | lighten::eval::Served::Php { .. });
        // What was served must agree; lighttpd answering with its own error page where
        // Apache did too (any status difference is reported above) is the same thing.
        if sa.served != sl.served && (content || sl.served != lighten::eval::Served::Error) {
            diffs.push(format!("served {:?} vs {:?}", sa.served, sl.served));
        }
        if content
            && !head
            && decoded(&ra) != decoded(&rl)
            && !matches!(sa.served, lighten::eval::Served::Php { .. })
        {
            diffs.push(format!("body {} bytes vs {} bytes", ra.body.len(), rl.body.len()));
        }
        if content {
            for h in HEADERS.iter().map(|s| s.to_string()).chain(custom.iter().cloned()) {
                let (x, y) = (norm(ra.header_joined(&h).as_deref()), norm(rl.header_joined(&h).as_deref()));
                if x != y {
                    diffs.push(format!("{h}: {x:?} vs {y:?}"));
                }
            }
            if ra.header("Expires").is_some() != rl.header("Expires").is_some() {
                diffs.push(format!("Expires {:?} vs {:?}", ra.header("Expires"), rl.header("Expires")));
            }
        } else if ra.status == 401
            && norm(ra.header("WWW-Authenticate")) != norm(rl.header("WWW-Authenticate"))
        {
            diffs.push(format!(
                "WWW-Authenticate {:?} vs {:?}",
                ra.header("WWW-Authenticate"),
                rl.header("WWW-Authenticate")
            ));
        }
        if fail_open_only {
            if diffs.is_empty() {
                same += 1;
            }
            continue;
        }
        let known = KNOWN.iter().any(|(fx, l, _)| *fx == f.name && *l == line);
        match (diffs.is_empty(), known) {
            (true, false) => same += 1,
            (true, true) => {
                t.differences.push(format!("{}: {line} is listed in KNOWN but now agrees", f.name))
            }
            (false, true) => t.known += 1,
            (false, false) => t.differences.push(format!("{}: {line}\n    {}", f.name, diffs.join("\n    "))),
        }
    }
    drop(l);
    if fail_open_only {
        eprintln!(
            "{}: {same}/{total} the same (checked for fail-open only: {})",
            f.name,
            f.manifest.convert_reason.as_deref().unwrap_or("")
        );
        t.checked_elsewhere += total;
        return;
    }
    eprintln!("{}: {same}/{total} the same", f.name);
    t.total += total;
    t.same += same;
}

/// The body as sent before compression: two gzip encoders do not write the same bytes.
fn decoded(r: &http::HttpResponse) -> Vec<u8> {
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

/// Header values compared as Apache and lighttpd may spell them: token lists without
/// the spaces after commas.
fn norm(v: Option<&str>) -> Option<String> {
    v.map(|s| {
        // lighttpd's mod_auth adds RFC 7617's charset="UTF-8" to a Basic challenge; the
        // realm is what a client shows and uses.
        let s = s.replace(", charset=\"UTF-8\"", "");
        s.split(',').map(str::trim).collect::<Vec<_>>().join(",")
    })
}

/// The response headers the configuration sets.
fn header_names(model: &lighten::model::Model) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut visit = |s: &lighten::model::Scope| {
        fn walk(s: &lighten::model::Scope, names: &mut std::collections::BTreeSet<String>) {
            for h in s.settings.headers.iter().filter(|h| !h.request) {
                names.insert(h.name.clone());
            }
            for c in &s.children {
                walk(c, names);
            }
        }
        walk(s, &mut names);
    };
    visit(&model.server);
    for v in &model.vhosts {
        visit(&v.scope);
    }
    for h in &model.htaccess {
        if let Some(s) = &h.scope {
            visit(s);
        }
    }
    names.into_iter().filter(|n| !HEADERS.iter().any(|h| h.eq_ignore_ascii_case(n))).collect()
}

#[test]
fn converted_sites_answer_like_apache() {
    if !have("apache2") || !have("lighttpd") {
        assert!(std::env::var_os("CI").is_none(), "apache2 and lighttpd must be installed");
        eprintln!("skipped: apache2 or lighttpd is not installed");
        return;
    }
    let mut t = Tally::default();
    let mut sets = 0;
    for f in fixtures("fixtures") {
        // LIGHTEN_FIXTURE=name runs one fixture (then the totals are not checked).
        if std::env::var("LIGHTEN_FIXTURE").is_ok_and(|n| n != f.name) {
            continue;
        }
        let Ok(mut text) = std::fs::read_to_string(f.dir.join("requests.txt")) else { continue };
        // Requests only the real servers can answer (passwords) come on top.
        if let Ok(more) = std::fs::read_to_string(f.dir.join("requests-convert.txt")) {
            text.push('\n');
            text.push_str(&more);
        }
        let requests = lighten::eval::request::parse_file(&text).unwrap();
        run_fixture(&f, &requests, &mut t);
        if f.manifest.convert.is_none() {
            sets += 1;
        }
    }
    eprintln!(
        "{} requests over {sets} sites: {} the same, {} known differences, {} other differences, {} fail-open \
         (and {} more requests checked for fail-open only)",
        t.total,
        t.same,
        t.known,
        t.differences.len(),
        t.fail_open.len(),
        t.checked_elsewhere
    );
    for d in &t.differences {
        eprintln!("{d}");
    }
    assert!(t.fail_open.is_empty(), "FAIL-OPEN:\n{}", t.fail_open.join("\n"));
    assert!(t.differences.is_empty(), "{} difference(s):\n{}", t.differences.len(), t.differences.join("\n"));
    if std::env::var_os("LIGHTEN_FIXTURE").is_some() {
        return;
    }
    assert!(sets >= 12 && t.total >= 400, "only {} requests over {sets} sites", t.total);
    assert!(t.same * 100 >= t.total * 98, "only {} of {} the same", t.same, t.total);
}
