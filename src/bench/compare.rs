//! `lighten bench --compare`: the same load against several servers in turns
//! (A B A B ...), each warmed up right before its run at the measured concurrency,
//! each run's server process tree sampled for memory and CPU, and the figures
//! reduced to the median and range over the repeats.
//!
//! This module runs loads against servers that are already up (the cli and the demo
//! start them with [`crate::verify::launch`]) and renders the result; it does not
//! start servers and does not print.

use super::chart::{self, Range3};
use super::histogram::Latency;
use super::sampler::{Sampler, ServerStats};
use super::{Report, Settings, Target};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A server under test.
#[derive(Clone, Debug)]
pub struct Server {
    /// What the report calls it ("Apache", "lighttpd").
    pub name: String,
    /// Its loopback HTTP port.
    pub port: u16,
    /// The root of its process tree (sampled with its descendants).
    pub pid: u32,
}

/// One load, run against every server.
#[derive(Clone, Debug)]
pub struct Load {
    /// How the report names it ("/ -n 1000 -c 5").
    pub label: String,
    /// Path and query.
    pub path: String,
    /// The Host header.
    pub host: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub keep_alive: bool,
    pub rate: Option<f64>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub loads: Vec<Load>,
    /// Runs per server and load.
    pub repeat: usize,
    /// Load before each run, at the run's concurrency, not counted.
    pub warmup: Duration,
    pub threads: Option<usize>,
    pub timeout: Duration,
    /// How often the server trees are sampled.
    pub sample_every: Duration,
}

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub requests_per_second: f64,
    pub time_per_request_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub transfer_rate_kb_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub non_2xx: u64,
    pub document_length: Option<u64>,
    pub time_taken_s: f64,
    pub peak_rss_mb: f64,
    pub mean_rss_mb: f64,
    pub peak_cpu_cores: f64,
    pub mean_cpu_cores: f64,
    /// The server's CPU time (user + system, its whole process tree) per completed
    /// request, in microseconds: what a run costs the server, steadier than requests per
    /// second on a machine whose other tenants take turns on the cores. None when the run
    /// used under half a CPU second: the kernel counts in hundredths, too coarse then.
    pub cpu_per_request_us: Option<f64>,
    pub max_processes: usize,
}

/// A figure over the repeats.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.retain(|x| x.is_finite());
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        let median = if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 };
        Spread { median, min: v[0], max: v[v.len() - 1] }
    }
}

/// One server's figures for one load.
#[derive(Clone, Debug, Serialize)]
pub struct ServerResult {
    pub name: String,
    pub server_software: String,
    pub runs: Vec<Run>,
    pub requests_per_second: Spread,
    pub time_per_request_ms: Spread,
    pub p50_ms: Spread,
    pub p90_ms: Spread,
    pub p99_ms: Spread,
    pub transfer_rate_kb_s: Spread,
    /// Failed requests and non-2xx answers over all runs.
    pub failed: u64,
    pub non_2xx: u64,
    /// The highest memory (RSS summed over the process tree) seen in any run.
    pub peak_rss_mb: f64,
    pub mean_rss_mb: Spread,
    /// The highest CPU use over one sampling interval, in cores (the tables' "Max Load").
    pub peak_cpu_cores: f64,
    pub mean_cpu_cores: Spread,
    pub cpu_per_request_us: Spread,
    /// Latency of every request of every run, merged.
    #[serde(skip)]
    pub latency: Latency,
    /// Memory over time during the last run: (seconds, MB).
    #[serde(skip)]
    pub memory: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadResult {
    pub label: String,
    pub path: String,
    pub host: String,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub concurrency: usize,
    pub keep_alive: bool,
    pub servers: Vec<ServerResult>,
    /// Things that make the figures less comparable (errors, different answers).
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub servers: Vec<String>,
    pub repeat: usize,
    pub warmup_s: f64,
    pub loads: Vec<LoadResult>,
}

/// What is about to run, for a progress line.
pub struct Step<'a> {
    pub load: &'a Load,
    pub server: &'a Server,
    pub repeat: usize,
    pub index: usize,
    pub total: usize,
}

fn settings(load: &Load, port: u16, threads: Option<usize>, timeout: Duration) -> std::io::Result<Settings> {
    let mut headers = vec![("Host".to_string(), load.host.clone())];
    headers.extend(load.headers.iter().cloned());
    let url = format!("http://127.0.0.1:{port}{}", load.path);
    let target = Target::new(&url, &load.method, &headers, load.keep_alive).map_err(std::io::Error::other)?;
    Ok(Settings {
        target,
        requests: load.requests,
        duration: load.duration.or(if load.requests.is_none() {
            Some(Duration::from_secs(10))
        } else {
            None
        }),
        concurrency: load.concurrency,
        keep_alive: load.keep_alive,
        rate: load.rate,
        threads: threads.unwrap_or_else(|| super::default_threads(load.concurrency)),
        timeout,
    })
}

/// Runs every load against every server, in turns; `step` is told before each run.
pub fn run(plan: &Plan, servers: &[Server], mut step: impl FnMut(&Step)) -> std::io::Result<Comparison> {
    let total = plan.loads.len() * plan.repeat * servers.len();
    let mut index = 0;
    let mut loads = Vec::new();
    for load in &plan.loads {
        // Per server: its runs, merged latency, last run's memory, Server header.
        type Acc = (Vec<Run>, Latency, Vec<(f64, f64)>, String);
        let mut per: Vec<Acc> =
            servers.iter().map(|_| (Vec::new(), Latency::new(), Vec::new(), String::new())).collect();
        for k in 0..plan.repeat {
            for (si, server) in servers.iter().enumerate() {
                index += 1;
                step(&Step { load, server, repeat: k + 1, index, total });
                let s = settings(load, server.port, plan.threads, plan.timeout)?;
                if !plan.warmup.is_zero() {
                    let warm =
                        Settings { requests: None, duration: Some(plan.warmup), rate: None, ..s.clone() };
                    super::run(&warm, None, |_, _| {})?;
                }
                let sampler = Sampler::start(vec![server.pid], plan.sample_every);
                let report = super::run(&s, None, |_, _| {})?;
                let stats = sampler.stop();
                let slot = &mut per[si];
                slot.1.merge(&report.latency);
                slot.2 = stats.samples.iter().map(|x| (x.t, mb(x.rss_bytes))).collect();
                if slot.3.is_empty() {
                    slot.3.clone_from(&report.server_software);
                }
                slot.0.push(figures(&report, &stats));
            }
        }
        let results: Vec<ServerResult> = servers
            .iter()
            .zip(per)
            .map(|(server, (runs, latency, memory, software))| {
                summarize(&server.name, software, runs, latency, memory)
            })
            .collect();
        let warnings = warnings(&results);
        loads.push(LoadResult {
            label: load.label.clone(),
            path: load.path.clone(),
            host: load.host.clone(),
            requests: load.requests,
            duration_s: load.duration.map(|d| d.as_secs_f64()),
            concurrency: load.concurrency,
            keep_alive: load.keep_alive,
            servers: results,
            warnings,
        });
    }
    Ok(Comparison {
        servers: servers.iter().map(|s| s.name.clone()).collect(),
        repeat: plan.repeat,
        warmup_s: plan.warmup.as_secs_f64(),
        loads,
    })
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn figures(r: &Report, s: &ServerStats) -> Run {
    Run {
        requests_per_second: r.requests_per_second,
        time_per_request_ms: r.time_per_request_ms,
        p50_ms: r.percentile_ms(50.0),
        p90_ms: r.percentile_ms(90.0),
        p99_ms: r.percentile_ms(99.0),
        max_ms: r.percentile_ms(100.0),
        transfer_rate_kb_s: r.transfer_rate_kb_s,
        complete: r.complete,
        failed: r.failed,
        non_2xx: r.non_2xx,
        document_length: r.document_length,
        time_taken_s: r.time_taken_s,
        peak_rss_mb: mb(s.peak_rss_bytes),
        mean_rss_mb: mb(s.mean_rss_bytes),
        peak_cpu_cores: s.peak_cpu_cores,
        mean_cpu_cores: s.mean_cpu_cores,
        cpu_per_request_us: (r.complete > 0 && s.cpu_seconds >= 0.5)
            .then(|| s.cpu_seconds * 1e6 / r.complete as f64),
        max_processes: s.max_processes,
    }
}

fn summarize(
    name: &str,
    software: String,
    runs: Vec<Run>,
    latency: Latency,
    memory: Vec<(f64, f64)>,
) -> ServerResult {
    let of = |f: fn(&Run) -> f64| Spread::of(runs.iter().map(f).collect());
    ServerResult {
        name: name.to_string(),
        server_software: software,
        requests_per_second: of(|r| r.requests_per_second),
        time_per_request_ms: of(|r| r.time_per_request_ms),
        p50_ms: of(|r| r.p50_ms),
        p90_ms: of(|r| r.p90_ms),
        p99_ms: of(|r| r.p99_ms),
        transfer_rate_kb_s: of(|r| r.transfer_rate_kb_s),
        failed: runs.iter().map(|r| r.failed).sum(),
        non_2xx: runs.iter().map(|r| r.non_2xx).sum(),
        peak_rss_mb: runs.iter().map(|r| r.peak_rss_mb).fold(0.0, f64::max),
        mean_rss_mb: of(|r| r.mean_rss_mb),
        peak_cpu_cores: runs.iter().map(|r| r.peak_cpu_cores).fold(0.0, f64::max),
        mean_cpu_cores: of(|r| r.mean_cpu_cores),
        cpu_per_request_us: of(|r| r.cpu_per_request_us.unwrap_or(f64::NAN)),
        runs,
        latency,
        memory,
    }
}

/// A benchmark of error pages, or of two different answers, compares nothing.
fn warnings(results: &[ServerResult]) -> Vec<String> {
    let mut w = Vec::new();
    for r in results {
        if r.failed > 0 {
            w.push(format!("{}: {} failed requests", r.name, r.failed));
        }
        if r.non_2xx > 0 {
            w.push(format!("{}: {} answers were not 2xx", r.name, r.non_2xx));
        }
    }
    let lengths: Vec<Option<u64>> =
        results.iter().map(|r| r.runs.first().and_then(|x| x.document_length)).collect();
    if lengths.windows(2).any(|p| p[0] != p[1]) {
        let list: Vec<String> = results
            .iter()
            .zip(&lengths)
            .map(|(r, l)| format!("{} {}", r.name, l.map_or("-".into(), |l| format!("{l} bytes"))))
            .collect();
        w.push(format!("the servers answered with different documents: {}", list.join(", ")));
    }
    w
}

fn fmt_spread(s: &Spread, decimals: usize, repeats: usize) -> String {
    if repeats <= 1 {
        return sep(s.median, decimals);
    }
    format!("{} ({}..{})", sep(s.median, decimals), sep(s.min, decimals), sep(s.max, decimals))
}

/// A number with thousands separators.
fn sep(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(a, b)| (a, b));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

fn ratio(b: f64, a: f64) -> String {
    if a > 0.0 && b.is_finite() { format!("x{:.2}", b / a) } else { "-".into() }
}

/// Rows of one load: (label, value per server, ratio of the last server to the first).
fn rows(l: &LoadResult, repeats: usize) -> Vec<(String, Vec<String>, String)> {
    let s = &l.servers;
    let first = |f: &dyn Fn(&ServerResult) -> f64| s.first().map(f).unwrap_or(0.0);
    let last = |f: &dyn Fn(&ServerResult) -> f64| s.last().map(f).unwrap_or(0.0);
    let row = |label: &str, f: &dyn Fn(&ServerResult) -> String, r: &dyn Fn(&ServerResult) -> f64| {
        (
            label.to_string(),
            s.iter().map(f).collect(),
            if s.len() > 1 { ratio(last(r), first(r)) } else { String::new() },
        )
    };
    vec![
        row("Requests per second", &|x| fmt_spread(&x.requests_per_second, 2, repeats), &|x| {
            x.requests_per_second.median
        }),
        row("Time per request (ms)", &|x| fmt_spread(&x.time_per_request_ms, 3, repeats), &|x| {
            x.time_per_request_ms.median
        }),
        row("50% within (ms)", &|x| sep(x.p50_ms.median, 3), &|x| x.p50_ms.median),
        row("90% within (ms)", &|x| sep(x.p90_ms.median, 3), &|x| x.p90_ms.median),
        row("99% within (ms)", &|x| sep(x.p99_ms.median, 3), &|x| x.p99_ms.median),
        row("Transfer rate (KB/s)", &|x| sep(x.transfer_rate_kb_s.median, 0), &|x| {
            x.transfer_rate_kb_s.median
        }),
        row("Failed / non-2xx", &|x| format!("{} / {}", x.failed, x.non_2xx), &|_| f64::NAN),
        row("Max memory (MB)", &|x| sep(x.peak_rss_mb, 1), &|x| x.peak_rss_mb),
        row("Mean memory (MB)", &|x| sep(x.mean_rss_mb.median, 1), &|x| x.mean_rss_mb.median),
        row("Max load (CPU cores)", &|x| sep(x.peak_cpu_cores, 2), &|x| x.peak_cpu_cores),
        row("Mean load (CPU cores)", &|x| sep(x.mean_cpu_cores.median, 2), &|x| x.mean_cpu_cores.median),
        row(
            "CPU per request (us)",
            &|x| {
                // Spread::of leaves out the runs too short to tell: all of them, a zero.
                if x.cpu_per_request_us.max > 0.0 {
                    fmt_spread(&x.cpu_per_request_us, 1, repeats)
                } else {
                    "-".into()
                }
            },
            &|x| if x.cpu_per_request_us.max > 0.0 { x.cpu_per_request_us.median } else { f64::NAN },
        ),
    ]
}

fn load_title(l: &LoadResult) -> String {
    let bound = match (l.requests, l.duration_s) {
        (Some(n), _) => format!("-n {n}"),
        (None, Some(t)) => format!("-t {t}"),
        _ => String::new(),
    };
    format!(
        "{} (Host: {}), {bound} -c {}{}",
        l.path,
        l.host,
        l.concurrency,
        if l.keep_alive { " -k" } else { "" }
    )
}

/// The terminal table.
pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    for l in &c.loads {
        let _ = writeln!(o, "{}", load_title(l));
        let rows = rows(l, c.repeat);
        let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(22);
        let widths: Vec<usize> = (0..l.servers.len())
            .map(|i| {
                rows.iter().map(|r| r.1[i].len()).chain([l.servers[i].name.len()]).max().unwrap_or(0) + 2
            })
            .collect();
        let mut head = format!("  {:<w0$}", "");
        for (s, w) in l.servers.iter().zip(&widths) {
            let _ = write!(head, "{:>w$}", s.name, w = *w);
        }
        if l.servers.len() > 1 {
            let _ = write!(head, "  {}/{}", l.servers.last().unwrap().name, l.servers[0].name);
        }
        let _ = writeln!(o, "{}", head.trim_end());
        for (label, vals, r) in rows {
            let mut line = format!("  {label:<w0$}");
            for (v, w) in vals.iter().zip(&widths) {
                let _ = write!(line, "{v:>w$}", w = *w);
            }
            let _ = write!(line, "  {r}");
            let _ = writeln!(o, "{}", line.trim_end());
        }
        let software: Vec<String> = l
            .servers
            .iter()
            .map(|s| {
                format!(
                    "{} = {}",
                    s.name,
                    if s.server_software.is_empty() { "?" } else { &s.server_software }
                )
            })
            .collect();
        let _ = writeln!(o, "  ({})", software.join(", "));
        for w in &l.warnings {
            let _ = writeln!(o, "  warning: {w}");
        }
        let _ = writeln!(o);
    }
    if c.repeat > 1 {
        let _ = writeln!(
            o,
            "Figures: median (min..max) of {} runs per server, alternated; memory is the RSS summed over each server's process tree.",
            c.repeat
        );
    }
    o
}

/// The Markdown report; `context` (published figures, notes) goes under the title.
pub fn markdown(c: &Comparison, title: &str, context: &str) -> String {
    let mut o = format!("# {title}\n\n");
    if !context.is_empty() {
        let _ = writeln!(o, "{context}\n");
    }
    let _ = writeln!(
        o,
        "Each load ran {} time(s) per server, servers alternated, each run after {:.1} s of warm-up at the same \
         concurrency. Figures are the median (min..max) over the runs; memory is the RSS summed over the server's \
         whole process tree and CPU is in cores (1.00 = one core busy), sampled during the runs. Client and servers \
         share this machine's cores, so latency percentiles include scheduling.\n",
        c.repeat, c.warmup_s
    );
    for l in &c.loads {
        let _ = writeln!(o, "## {}\n", load_title(l));
        let mut head = String::from("| |");
        let mut rule = String::from("|---|");
        for s in &l.servers {
            let _ = write!(head, " {} |", s.name);
            rule.push_str("---:|");
        }
        if l.servers.len() > 1 {
            let _ = write!(head, " {}/{} |", l.servers.last().unwrap().name, l.servers[0].name);
            rule.push_str("---:|");
        }
        let _ = writeln!(o, "{head}\n{rule}");
        for (label, vals, r) in rows(l, c.repeat) {
            let _ = write!(o, "| {label} |");
            for v in vals {
                let _ = write!(o, " {v} |");
            }
            if l.servers.len() > 1 {
                let _ = write!(o, " {r} |");
            }
            let _ = writeln!(o);
        }
        let software: Vec<String> =
            l.servers.iter().map(|s| format!("{}: `{}`", s.name, s.server_software)).collect();
        let _ = writeln!(o, "\n{}\n", software.join(", "));
        for w in &l.warnings {
            let _ = writeln!(o, "- warning: {w}");
        }
        if !l.warnings.is_empty() {
            let _ = writeln!(o);
        }
    }
    o
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(60).collect()
}

/// The charts: requests/s of every load, and per load the latency curves and the
/// memory over time. Returns the files written (relative to `dir`).
pub fn charts(c: &Comparison, dir: &Path, prefix: &str) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let groups: Vec<(String, Vec<Range3>)> = c
        .loads
        .iter()
        .map(|l| {
            let r = l
                .servers
                .iter()
                .map(|s| Range3 {
                    median: s.requests_per_second.median,
                    min: s.requests_per_second.min,
                    max: s.requests_per_second.max,
                })
                .collect();
            (l.label.clone(), r)
        })
        .collect();
    let name = PathBuf::from(format!("{prefix}rps.svg"));
    chart::rps_bars(&dir.join(&name), "Requests per second (median, range over runs)", &c.servers, &groups)?;
    files.push(name);
    for (i, l) in c.loads.iter().enumerate() {
        let tag = format!("{}-{}", i + 1, slug(&l.label));
        let curves: Vec<(String, Vec<(f64, f64)>)> =
            l.servers.iter().map(|s| (s.name.clone(), s.latency.curve())).collect();
        let name = PathBuf::from(format!("{prefix}latency-{tag}.svg"));
        chart::latency_curves(&dir.join(&name), &format!("Latency by percentile: {}", l.label), &curves)?;
        files.push(name);
        let series: Vec<(String, Vec<(f64, f64)>)> =
            l.servers.iter().map(|s| (s.name.clone(), s.memory.clone())).collect();
        let name = PathBuf::from(format!("{prefix}memory-{tag}.svg"));
        chart::memory_over_time(
            &dir.join(&name),
            &format!("Server memory during the last run: {}", l.label),
            &series,
        )?;
        files.push(name);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_and_numbers() {
        let s = Spread::of(vec![3.0, 1.0, 2.0, f64::NAN]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(vec![1.0, 2.0, 4.0, 10.0]).median, 3.0);
        assert_eq!(sep(1234567.891, 2), "1,234,567.89");
        assert_eq!(sep(999.0, 0), "999");
        assert_eq!(ratio(2.0, 4.0), "x0.50");
        assert_eq!(slug("/wp-content/uploads/a.jpg -n 100 -c 5"), "wp-content-uploads-a-jpg-n-100-c-5");
    }
}
