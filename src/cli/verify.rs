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
    let (cfg, model) = super::convert::load_sites(&a.config, &opts, &a.vhosts, color)?;
    let mut requests: Vec<Request> = Vec::new();
    for f in &a.requests {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        requests.extend(
            crate::eval::request::parse_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?,
        );
    }
    if let Some(log) = &a.from_log {
        let text = std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        let site = log_site(&model, &cfg.sysroot, log);
        requests.extend(from_log(&text, a.limit, site.as_ref()));
    }
    if a.requests.is_empty() && a.from_log.is_none() {
        requests =
            derive::requests(&model, &cfg.sysroot, &derive::Limits { total: a.limit, ..Default::default() });
        if !a.vhosts.is_empty() {
            // Only the sites named: a probe of another name (an unknown Host, the main
            // server's) asks Apache's default host, which the named sites need not hold.
            let names = site_names(&model);
            requests.retain(|r| {
                r.host.as_deref().is_none_or(|h| {
                    let h = h
                        .rsplit_once(':')
                        .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
                        .map_or(h, |(h, _)| h);
                    names.iter().any(|n| n.eq_ignore_ascii_case(h.trim_end_matches('.')))
                })
            });
        }
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

/// The ServerNames and ServerAliases of the virtual hosts Apache serves.
fn site_names(model: &model::Model) -> Vec<String> {
    model
        .vhosts
        .iter()
        .filter(|v| v.scope.enabled)
        .flat_map(|v| v.server_name.iter().chain(&v.aliases).cloned())
        .collect()
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

/// The site that writes the access log at `path` (as on this machine): the virtual host
/// whose own CustomLog is that file, or the file it was rotated from (`access_log.1`,
/// `access_log.processed`), as its scheme and ServerName. A log the main server writes
/// (vhosts without a CustomLog of their own share it) names no site.
fn log_site(
    model: &model::Model,
    sysroot: &crate::source::Sysroot,
    path: &std::path::Path,
) -> Option<(String, String)> {
    let given = std::fs::canonicalize(path).ok()?;
    let (dir, name) = (given.parent()?, given.file_name()?.to_str()?);
    let main: Vec<_> = model.server.settings.host().custom_logs.iter().map(|l| l.at).collect();
    for v in model.vhosts.iter().filter(|v| v.scope.enabled) {
        for l in v.scope.settings.host().custom_logs.iter().filter(|l| !main.contains(&l.at)) {
            if !l.target.starts_with('/') {
                continue;
            }
            let t = sysroot.host_path(&l.target);
            let (Some(tdir), Some(tname)) = (t.parent(), t.file_name().and_then(|n| n.to_str())) else {
                continue;
            };
            let same_dir = std::fs::canonicalize(tdir).is_ok_and(|d| d == dir);
            if same_dir
                && (name == tname || name.strip_prefix(tname).is_some_and(|rest| rest.starts_with('.')))
            {
                let scheme = if v.tls { "https" } else { "http" };
                return Some((scheme.to_string(), v.server_name.clone()?));
            }
        }
    }
    None
}

/// GET and HEAD requests of an Apache access log (common or combined; `vhost_combined`,
/// which starts with `%v:%p`, too), in order, each sent to the site that logged it: the
/// line's `%v` (https when `%p` is 443), else `site` (the log's own, `log_site`), else the
/// default host.
fn from_log(text: &str, limit: usize, site: Option<&(String, String)>) -> Vec<Request> {
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
        // `%h %l %u [%t]`: three fields before the time; `%v:%p %h %l %u [%t]`: four.
        let before: Vec<&str> = line[..line.find(" [").unwrap_or(0)].split_whitespace().collect();
        let logged = match before.as_slice() {
            [vp, _, _, _] => vp
                .rsplit_once(':')
                .filter(|(v, p)| !v.is_empty() && p.parse::<u16>().is_ok())
                .map(|(v, p)| (if p == "443" { "https" } else { "http" }.to_string(), v.to_string())),
            _ => None,
        };
        let line = match logged.as_ref().or(site) {
            Some((scheme, host)) => format!("{method} {scheme}://{host}{target}"),
            None => format!("{method} {target}"),
        };
        if let Ok(Some(r)) = Request::parse_line(&line) {
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
        let r = super::from_log(log, 10, None);
        let lines: Vec<String> = r.iter().map(|x| x.to_line()).collect();
        assert_eq!(lines, vec!["GET /a?b=1", "HEAD /"]);
        // A per-site log (Plesk's access_ssl_log): every line goes to its site.
        let site = ("https".to_string(), "shop.example".to_string());
        let lines: Vec<String> = super::from_log(log, 10, Some(&site)).iter().map(|x| x.to_line()).collect();
        assert_eq!(lines, vec!["GET https://shop.example/a?b=1", "HEAD https://shop.example/"]);
    }

    #[test]
    fn vhost_combined_lines_go_to_the_host_that_logged_them() {
        // Debian's other_vhosts_access.log: LogFormat "%v:%p %h %l %u %t \"%r\" ..." vhost_combined
        let log = "blog.example:80 10.0.0.1 - - [29/Nov/2026:10:00:00 +0000] \"GET /feed HTTP/1.1\" 200 12 \"-\" \"x\"\n\
                   shop.example:443 10.0.0.2 - - [29/Nov/2026:10:00:01 +0000] \"GET /cart HTTP/1.1\" 200 1 \"-\" \"x\"\n\
                   10.0.0.3 - - [29/Nov/2026:10:00:02 +0000] \"GET /plain HTTP/1.1\" 200 1\n";
        let site = ("http".to_string(), "default.example".to_string());
        let lines: Vec<String> = super::from_log(log, 10, Some(&site)).iter().map(|x| x.to_line()).collect();
        assert_eq!(
            lines,
            vec![
                "GET http://blog.example/feed",
                "GET https://shop.example/cart",
                "GET http://default.example/plain"
            ]
        );
    }
}
