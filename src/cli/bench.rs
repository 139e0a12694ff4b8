//! `lighten bench`: flags resolved into [`bench::Settings`], a progress bar on a
//! terminal, the report as ab prints it (or JSON, CSV); `--compare` hands over to
//! [`bench::compare`].

use super::args::BenchArgs;
use crate::bench::{self, Settings, Target, printer};
use anyhow::{Context, bail};
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

pub fn run(a: BenchArgs, resolved: &crate::settings::Resolved, color: bool) -> anyhow::Result<i32> {
    if a.compare.is_some() {
        return super::compare::run(a, resolved, color);
    }
    let url = a.url.clone().context("a URL to load is needed")?;
    let s = settings(&a, &url)?;
    // Ctrl-C stops the run, which then reports what it measured and exits 130.
    crate::run::process::stop_softly_on_interrupt();
    let stop = crate::run::process::interrupt_flag();
    let show = std::io::stderr().is_terminal() && !a.json;
    if show {
        eprintln!("Benchmarking {} (be patient)", s.target.host);
    }
    let bar = progress_bar(show, &s);
    let r = bench::run(&s, Some(stop), |done, elapsed| tick(&bar, &s, done, elapsed))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &a.csv {
        crate::output::write_file(path, &printer::csv(&r))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{}", printer::json(&r))?;
    } else {
        out.write_all(printer::text(&r).as_bytes())?;
    }
    Ok(if stop.load(Ordering::SeqCst) {
        130
    } else if r.failed > 0 {
        1
    } else {
        0
    })
}

/// The flags of one load, checked.
pub fn settings(a: &BenchArgs, url: &str) -> anyhow::Result<Settings> {
    let headers = a
        .headers
        .iter()
        .map(|h| bench::target::parse_header(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let target = Target::new(url, &a.method, &headers, a.keep_alive).map_err(anyhow::Error::msg)?;
    if a.concurrency == 0 {
        bail!("-c must be at least 1");
    }
    if a.requests == Some(0) {
        bail!("-n must be at least 1");
    }
    if let Some(n) = a.requests
        && (n as usize) < a.concurrency
    {
        bail!("-c {} is more than -n {n}: there would be idle connections", a.concurrency);
    }
    let duration = match a.seconds {
        Some(t) if !(t > 0.0 && t.is_finite()) => bail!("-t must be a positive number of seconds"),
        Some(t) => Some(Duration::from_secs_f64(t)),
        None if a.requests.is_none() => Some(Duration::from_secs(10)),
        None => None,
    };
    if let Some(r) = a.rate
        && !(r > 0.0 && r.is_finite())
    {
        bail!("--rate must be a positive number of requests per second");
    }
    if !(a.timeout > 0.0 && a.timeout.is_finite()) {
        bail!("-s must be a positive number of seconds");
    }
    Ok(Settings {
        target,
        requests: a.requests,
        duration,
        concurrency: a.concurrency,
        keep_alive: a.keep_alive,
        rate: a.rate,
        threads: a.threads.unwrap_or_else(|| bench::default_threads(a.concurrency)).max(1),
        timeout: Duration::from_secs_f64(a.timeout),
    })
}

pub fn progress_bar(show: bool, s: &Settings) -> Option<indicatif::ProgressBar> {
    match (s.requests, s.duration) {
        (Some(n), _) => super::progress::bar(show, n, "{bar:40} {pos}/{len} requests, {msg}"),
        (None, Some(d)) => super::progress::bar(show, d.as_millis() as u64, "{bar:40} {msg}"),
        (None, None) => super::progress::bar(show, 0, "{msg}"),
    }
}

pub fn tick(bar: &Option<indicatif::ProgressBar>, s: &Settings, done: u64, elapsed: Duration) {
    let Some(b) = bar else { return };
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-3);
    match s.requests {
        Some(_) => b.set_position(done),
        None => b.set_position(elapsed.as_millis() as u64),
    }
    b.set_message(format!("{done} done, {rate:.0} req/s, {:.1} s", elapsed.as_secs_f64()));
}
