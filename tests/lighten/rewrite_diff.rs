//! The evaluator against real Apache: every fixture with a `requests.txt` is served by
//! Apache in a sandbox, each request is sent, and Apache's answer must be what the
//! evaluator predicts.

use crate::helpers::fixtures;
use lighten::config::{self, LoadOptions};
use lighten::eval::{self, Request};
use lighten::model;
use lighten::run::{apache, http, observe, sandbox::Sandbox};
use lighten::source::Sysroot;
use std::net::SocketAddr;

/// Differences the evaluator knowingly does not reproduce: (fixture, request line, why).
const KNOWN: &[(&str, &str, &str)] = &[];

fn have(cmd: &str) -> bool {
    std::process::Command::new(cmd).arg("-v").output().is_ok()
}

pub struct Report {
    pub total: usize,
    pub agreed: usize,
    pub differences: Vec<String>,
}

/// Runs one fixture's requests against Apache and the evaluator.
pub fn run_fixture(f: &crate::helpers::Fixture, requests: &[Request]) -> Report {
    let sysroot = f.dir.join(f.manifest.sysroot.as_deref().unwrap_or("."));
    let mut opts = LoadOptions { sysroot: Sysroot::at(&sysroot), ..LoadOptions::default() };
    let mut args = f.manifest.args.iter();
    while let Some(a) = args.next() {
        if a == "--server-name" {
            opts.server_name = args.next().cloned().unwrap_or_default();
        }
    }
    let input = f.dir.join(&f.manifest.config);
    let cfg_for_run = config::load(&input, &opts).expect("fixture loads");
    let mut cfg = config::load(&input, &opts).expect("fixture loads");
    let (model, _) = model::build(&mut cfg);
    let mut sb = Sandbox::new("lighten-diff-").unwrap();
    // LIGHTEN_KEEP=1 keeps the sandbox folder for a look at Apache's config and logs.
    if std::env::var_os("LIGHTEN_KEEP").is_some() {
        eprintln!("{}: sandbox kept at {}", f.name, sb.keep().display());
    }
    let a = apache::start(&cfg_for_run, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: None })
        .unwrap_or_else(|e| panic!("{}: {e}", f.name));
    let paths = apache::PathMap { root: a.root.clone() };
    let default_host =
        model.vhosts.first().and_then(|v| v.server_name.clone()).unwrap_or_else(|| opts.server_name.clone());
    let mut report = Report { total: 0, agreed: 0, differences: Vec::new() };
    for req in requests {
        let port = if req.scheme == "https" { 443 } else { 80 };
        let Some(sport) = a.port_for(port).or(if port == 80 { a.http_port() } else { None }) else {
            continue;
        };
        let mut headers: Vec<(String, String)> =
            vec![("Host".into(), req.host.clone().unwrap_or_else(|| default_host.clone()))];
        headers.extend(req.headers.iter().cloned());
        let mut r = req.clone();
        r.host = Some(headers[0].1.clone());
        let ev = eval::evaluate(&model, &cfg.sysroot, &r, port);
        report.total += 1;
        let resp = match http::send(
            SocketAddr::from(([127, 0, 0, 1], sport)),
            &req.method,
            &req.target(),
            &headers,
            b"",
        ) {
            Ok(r) => r,
            Err(e) => {
                report.differences.push(format!("{}: {} -> no answer: {e}", f.name, req.to_line()));
                continue;
            }
        };
        let seen = observe::observe(&resp, &paths, &cfg.sysroot, Some(&ev.outcome), req.method == "HEAD");
        match observe::agree(&ev.outcome, &seen) {
            Ok(()) => report.agreed += 1,
            Err(d) => {
                let line = req.to_line();
                if KNOWN.iter().any(|(fx, l, _)| *fx == f.name && *l == line) {
                    report.agreed += 1;
                } else {
                    let trace: Vec<String> = ev
                        .trace
                        .iter()
                        .map(|s| format!("      {}{}", "  ".repeat(s.depth as usize), s.text))
                        .collect();
                    report.differences.push(format!("{}: {line}\n    {d}\n{}", f.name, trace.join("\n")));
                }
            }
        }
    }
    report
}

#[test]
fn evaluator_agrees_with_apache() {
    if !have("apache2") || !have("php-cgi") {
        eprintln!("skipped: apache2 or php-cgi is not installed");
        return;
    }
    let mut total = 0;
    let mut sets = 0;
    let mut all_diffs = Vec::new();
    for f in fixtures("fixtures") {
        let path = f.dir.join("requests.txt");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let requests =
            lighten::eval::request::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let r = run_fixture(&f, &requests);
        eprintln!("{}: {}/{} agree", f.name, r.agreed, r.total);
        total += r.total;
        sets += 1;
        all_diffs.extend(r.differences);
    }
    assert!(all_diffs.is_empty(), "{} difference(s):\n{}", all_diffs.len(), all_diffs.join("\n"));
    assert!(sets >= 1, "no fixture has requests");
    eprintln!("{total} requests over {sets} rule sets");
}
