//! `lighten verify`.

use super::args::VerifyArgs;
use super::inspect::load_options;
use crate::eval::Request;
use crate::verify::{self, Options, derive};
use crate::{config, model};
use anyhow::Context;
use std::io::{IsTerminal, Write};

pub fn run(a: VerifyArgs, color: bool) -> anyhow::Result<i32> {
    let opts = load_options(&a.load);
    let for_run = config::load(&a.config, &opts)?;
    let (cfg, model) = super::load::checked(&a.config, &opts, color)?;
    let mut requests: Vec<Request> = Vec::new();
    for f in &a.requests {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        requests.extend(
            crate::eval::request::parse_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?,
        );
    }
    if let Some(log) = &a.from_log {
        let text = std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        requests.extend(from_log(&text, a.limit));
    }
    if a.requests.is_empty() && a.from_log.is_none() {
        requests =
            derive::requests(&model, &cfg.sysroot, &derive::Limits { total: a.limit, ..Default::default() });
    }
    requests.truncate(a.limit);
    let v = run_with_progress(&for_run, &cfg, &model, &requests, a.keep, a.attack)?;
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        out.write_all(verify::report::text(&v, color && std::io::stdout().is_terminal()).as_bytes())?;
    }
    Ok(exit_status(&v))
}

/// 0 all the same, 1 differences, 3 a fail-open. The --attack variants count only when
/// they fail open: Apache and lighttpd word many malformed requests differently (400 or
/// 404, 501 or 403) and both refuse them.
pub fn exit_status(v: &verify::Verification) -> i32 {
    if v.fail_open() > 0 {
        3
    } else if v.comparisons.iter().any(|c| c.attack.is_none() && !c.differences.is_empty()) {
        1
    } else {
        0
    }
}

/// Runs the verification with a progress bar on standard error when it is a terminal.
pub fn run_with_progress(
    for_run: &config::Config,
    cfg: &config::Config,
    model: &model::Model,
    requests: &[Request],
    keep: bool,
    attack: bool,
) -> anyhow::Result<verify::Verification> {
    let bar = super::progress::bar(true, requests.len() as u64, "  {bar:30} {pos}/{len} requests");
    let progress: Option<Box<dyn FnMut(usize, usize)>> = bar.map(|b| -> Box<dyn FnMut(usize, usize)> {
        Box::new(move |done, total| {
            // --attack adds the variants of each refused request as it goes
            b.set_length(total as u64);
            b.set_position(done as u64);
            if done == total {
                b.finish();
            }
        })
    });
    Ok(verify::run(
        for_run,
        cfg,
        model,
        requests,
        Options { keep, lua_trace: false, progress, tamper: None, attack },
    )?)
}

/// GET and HEAD requests of an Apache access log (common or combined), in order.
fn from_log(text: &str, limit: usize) -> Vec<Request> {
    let mut out = Vec::new();
    for line in text.lines() {
        if out.len() >= limit {
            break;
        }
        let Some(start) = line.find('"') else { continue };
        let rest = &line[start + 1..];
        let Some(end) = rest.find('"') else { continue };
        let mut parts = rest[..end].split_whitespace();
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else { continue };
        if !(method == "GET" || method == "HEAD") || !target.starts_with('/') {
            continue;
        }
        if let Ok(Some(r)) = Request::parse_line(&format!("{method} {target}")) {
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_lines_become_requests() {
        let log = "127.0.0.1 - - [29/Nov/2026:10:00:00 +0000] \"GET /a?b=1 HTTP/1.1\" 200 12 \"-\" \"curl\"\n\
                   127.0.0.1 - - [29/Nov/2026:10:00:01 +0000] \"POST /login HTTP/1.1\" 302 0\n\
                   garbage\n\
                   ::1 - - [29/Nov/2026:10:00:02 +0000] \"HEAD / HTTP/1.0\" 200 0\n";
        let r = super::from_log(log, 10);
        let lines: Vec<String> = r.iter().map(|x| x.to_line()).collect();
        assert_eq!(lines, vec!["GET /a?b=1", "HEAD /"]);
    }
}
