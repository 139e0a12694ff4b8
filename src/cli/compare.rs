//! `lighten bench --compare`: starts Apache and the converted lighttpd side by side
//! (the verify machinery, with the real PHP backend), runs the loads in turns and
//! writes the comparison.

use super::args::BenchArgs;
use super::inspect::load_options;
use crate::bench::compare::{self, Comparison, Load, Plan, Server};
use crate::config;
use crate::verify::{self, Pair};
use anyhow::{Context, bail};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

pub fn run(a: BenchArgs, settings: &crate::settings::Resolved, color: bool) -> anyhow::Result<i32> {
    let config_path = a.compare.clone().context("--compare needs a configuration")?;
    let opts = load_options(&a.load);
    let for_run = config::load(&config_path, &opts)?;
    let (cfg, model) = super::convert::load_sites(&config_path, &opts, &a.vhosts, color)?;
    let default_host = verify::default_host(&model);
    let paths = if a.paths.is_empty() { vec!["/".to_string()] } else { a.paths.clone() };
    let mut loads = Vec::new();
    for p in &paths {
        let (host, port, path) = split(p, &default_host)?;
        let grid: Vec<(Option<u64>, usize)> = if a.matrix {
            [100, 1000, 10_000].iter().flat_map(|&n| [5, 50, 100].map(|c| (Some(n), c))).collect()
        } else {
            vec![(a.requests, a.concurrency)]
        };
        for (n, c) in grid {
            if c == 0 {
                bail!("-c must be at least 1");
            }
            let bound = match (n, a.seconds) {
                (Some(n), _) => format!("n={n}"),
                (None, Some(t)) => format!("t={t}s"),
                (None, None) => "t=10s".into(),
            };
            loads.push((
                port,
                Load {
                    label: format!("{path} {bound} c={c}{}", if a.keep_alive { " -k" } else { "" }),
                    path: path.clone(),
                    host: host.clone(),
                    method: a.method.clone(),
                    headers: a
                        .headers
                        .iter()
                        .map(|h| crate::bench::target::parse_header(h))
                        .collect::<Result<_, _>>()
                        .map_err(anyhow::Error::msg)?,
                    requests: n,
                    duration: if n.is_some() {
                        None
                    } else {
                        Some(Duration::from_secs_f64(a.seconds.unwrap_or(10.0)))
                    },
                    concurrency: c,
                    keep_alive: a.keep_alive,
                    rate: a.rate,
                },
            ));
        }
    }
    eprintln!("starting Apache and the converted lighttpd in a sandbox ...");
    let pair = verify::launch(&for_run, &cfg, &model, &verify::Options::quiet(), false)?;
    let port = loads.first().map(|(p, _)| *p).unwrap_or(80);
    if loads.iter().any(|(p, _)| *p != port) {
        bail!("--path: every URL must use the same port");
    }
    let mut servers = servers(&pair, port)?;
    eprintln!(
        "  Apache on 127.0.0.1:{}, lighttpd on 127.0.0.1:{} (sandbox {})",
        servers[0].port,
        servers[1].port,
        pair.sandbox.path().display()
    );
    let reference = match &a.reference {
        // The document root of the host the first load names.
        Some(conf) => {
            let host = loads.first().map_or(default_host.as_str(), |(_, l)| l.host.as_str());
            Some(start_reference(conf, &pair, &model, host)?)
        }
        None => None,
    };
    if let Some(r) = &reference {
        eprintln!("  reference {} on 127.0.0.1:{}", a.reference.as_ref().unwrap().display(), r.port);
        // Between the two, so the ratio column stays the conversion's against Apache.
        servers.insert(1, Server { name: "reference".into(), port: r.port, pid: r.pid() });
    }
    let plan = Plan {
        loads: loads.into_iter().map(|(_, l)| l).collect(),
        repeat: settings.repeat,
        warmup: settings.warmup,
        threads: a.threads,
        timeout: Duration::from_secs_f64(a.timeout),
        sample_every: Duration::from_millis(100),
    };
    let c = run_plan(&plan, &servers)?;
    drop(reference);
    drop(pair);
    std::io::stdout().lock().write_all(compare::text(&c).as_bytes())?;
    let files = write(&c, &a.out, "lighten bench --compare", "")?;
    eprintln!(
        "wrote {}",
        files.iter().map(|f| a.out.join(f).display().to_string()).collect::<Vec<_>>().join(", ")
    );
    let failed = c.loads.iter().flat_map(|l| &l.servers).any(|s| s.failed > 0);
    Ok(if failed { 1 } else { 0 })
}

/// Starts the hand-written reference configuration `conf` beside the pair: a wrapper in
/// the sandbox sets var.docroot (the document root of the vhost serving `host`, in the
/// sandbox copy), var.port, var.rundir and var.confdir, then includes `conf`.
fn start_reference(
    conf: &Path,
    pair: &Pair,
    model: &crate::model::Model,
    host: &str,
) -> anyhow::Result<crate::run::lighttpd::RunningLighttpd> {
    let conf = std::path::absolute(conf).with_context(|| conf.display().to_string())?;
    let docroot = model
        .vhosts
        .iter()
        .find(|v| v.server_name.as_deref() == Some(host) || v.aliases.iter().any(|a| a == host))
        .and_then(|v| v.document_root.clone())
        .or_else(|| model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()))
        .context("no document root for the reference")?;
    let docroot = pair.paths.map(&docroot);
    let dir = pair.sandbox.path().join("reference");
    std::fs::create_dir_all(&dir)?;
    let port = crate::run::sandbox::free_port()?;
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\\\""));
    let wrapper = format!(
        "var.docroot = {}\nvar.port = {port}\nvar.rundir = {}\nvar.confdir = {}\ninclude {}\n",
        quote(&docroot),
        quote(&dir.to_string_lossy()),
        quote(&conf.parent().unwrap_or(Path::new("/")).to_string_lossy()),
        quote(&conf.to_string_lossy()),
    );
    let path = dir.join("lighttpd.conf");
    std::fs::write(&path, wrapper)?;
    Ok(crate::run::lighttpd::start(&path, &pair.sandbox, port)?)
}

/// Runs a plan with one progress line per run on standard error.
pub fn run_plan(plan: &Plan, servers: &[Server]) -> anyhow::Result<Comparison> {
    Ok(compare::run(plan, servers, |s| {
        eprintln!(
            "  run {}/{}: {} {} (round {} of {})",
            s.index, s.total, s.server.name, s.load.label, s.repeat, plan.repeat
        );
    })?)
}

/// The two servers of a pair, by the original port the loads use.
pub fn servers(pair: &Pair, port: u16) -> anyhow::Result<Vec<Server>> {
    let aport = pair
        .apache
        .port_for(port)
        .with_context(|| format!("the configuration does not listen on port {port}"))?;
    let (lport, tls) = *pair.lighttpd_ports.get(&port).context("no lighttpd listener for that port")?;
    if tls {
        bail!("port {port} is an https listener: the load generator speaks plain http; use an http URL");
    }
    Ok(vec![
        Server { name: "Apache".into(), port: aport, pid: pair.apache.pid() },
        Server { name: "lighttpd".into(), port: lport, pid: pair.lighttpd.pid() },
    ])
}

/// compare.md, compare.json and the charts in `out`; returns the file names.
pub fn write(c: &Comparison, out: &Path, title: &str, context: &str) -> anyhow::Result<Vec<String>> {
    let md = compare::markdown(c, title, context);
    let json = serde_json::to_string_pretty(c)?;
    crate::output::write_files(out, &[("compare.md".into(), md), ("compare.json".into(), json)])
        .with_context(|| format!("writing {}", out.display()))?;
    let charts =
        compare::charts(c, out, "").with_context(|| format!("writing charts in {}", out.display()))?;
    let mut names = vec!["compare.md".to_string(), "compare.json".to_string()];
    names.extend(charts.iter().map(|p| p.display().to_string()));
    Ok(names)
}

/// A `--path` argument: a path on the default host (port 80), or a full http URL.
fn split(p: &str, default_host: &str) -> anyhow::Result<(String, u16, String)> {
    if let Some(rest) = p.strip_prefix("http://") {
        let (auth, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
        let (host, port) = match auth.rsplit_once(':') {
            Some((h, port)) => (h, port.parse::<u16>().with_context(|| format!("{p}: bad port"))?),
            None => (auth, 80),
        };
        return Ok((host.to_string(), port, path.to_string()));
    }
    if p.starts_with("https://") {
        bail!("{p}: the load generator speaks plain http; use an http URL");
    }
    if !p.starts_with('/') {
        bail!("--path {p}: a path starts with '/'");
    }
    let host = default_host.split(':').next().unwrap_or(default_host).to_string();
    Ok((host, 80, p.to_string()))
}
