//! `lighten bench`: a load generator with ab's flags and report, and `--compare`,
//! which runs the same load against Apache and the converted lighttpd side by side.
//!
//! Layout follows the parts of a load generator: [`target`] (the request bytes),
//! [`client`] (the per-thread event loop), [`response`] (the lean HTTP/1.1 reader),
//! [`histogram`] (latencies), [`report`] (the merged figures), [`printer`] (ab's text,
//! CSV, JSON), [`sampler`] (server memory and CPU from /proc), [`chart`] (SVG),
//! [`compare`] (the side-by-side run). This module does not print; the cli does.

pub mod chart;
pub mod client;
pub mod compare;
pub mod histogram;
pub mod printer;
pub mod report;
pub mod response;
pub mod sampler;
pub mod target;

use client::{Budget, Plan, Shared, Tally};
pub use report::Report;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use target::Target;

/// A benchmark run, resolved from the flags.
#[derive(Clone, Debug)]
pub struct Settings {
    pub target: Target,
    /// Count-bounded: this many requests in all.
    pub requests: Option<u64>,
    /// Time-bounded: stop sending after this long (the default when neither is set).
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub keep_alive: bool,
    /// Requests per second in all (constant-rate mode).
    pub rate: Option<f64>,
    pub threads: usize,
    pub timeout: Duration,
}

/// Threads a run uses when not told: on a small machine the server shares the cores
/// with the client, and one event loop already keeps 20 connections busy; on a
/// larger one, half the cores.
pub fn default_threads(concurrency: usize) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    (if cores <= 2 { 1 } else { cores / 2 }).clamp(1, concurrency.max(1))
}

/// Runs the load; `progress` is called about ten times a second with the requests
/// completed so far (and once at the end). `stop` ends the run early (Ctrl-C): the
/// report then covers what was done.
pub fn run(
    s: &Settings,
    stop: Option<&std::sync::atomic::AtomicBool>,
    mut progress: impl FnMut(u64, Duration),
) -> std::io::Result<Report> {
    let threads = s.threads.clamp(1, s.concurrency.max(1));
    let shared = Arc::new(Shared::new(threads));
    let cpu0 = cpu_time();
    let start = Instant::now();
    let deadline = s.duration.map(|d| start + d);
    let tallies: Vec<std::io::Result<Tally>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..threads {
            // Connections, requests and rate shared out as evenly as they go.
            let share = |n: u64| n / threads as u64 + u64::from((t as u64) < n % threads as u64);
            let connections = share(s.concurrency as u64) as usize;
            let budget = match (s.requests, deadline) {
                (Some(n), _) => Budget::Requests(share(n)),
                (None, Some(d)) => Budget::Until(d),
                (None, None) => Budget::Until(start + Duration::from_secs(10)),
            };
            let rate = s.rate.map(|r| r * connections as f64 / s.concurrency as f64);
            let shared = Arc::clone(&shared);
            let target = &s.target;
            let (keep_alive, timeout) = (s.keep_alive, s.timeout);
            handles.push(scope.spawn(move || {
                let plan = Plan { target, connections, budget, rate, keep_alive, timeout, start };
                client::run(&plan, &shared, t)
            }));
        }
        for round in 1u64.. {
            std::thread::sleep(Duration::from_millis(20));
            if stop.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
                shared.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            if handles.iter().all(|h| h.is_finished()) {
                break;
            }
            if round % 5 == 0 {
                progress(shared.completed(), start.elapsed());
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("a thread panicked"))))
            .collect()
    });
    let mut tally = Tally::default();
    for t in tallies {
        tally.merge(&t?);
    }
    // The threads' own end, not when this thread noticed it.
    let elapsed = tally.ended.map_or_else(|| start.elapsed(), |e| e - start);
    let cpu = cpu_time() - cpu0;
    progress(tally.complete, elapsed);
    let doc_len = shared.doc_len.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Report::new(s, threads, &tally, (doc_len != u64::MAX).then_some(doc_len), elapsed, cpu))
}

/// CPU time (user + system) this process has used, in seconds.
fn cpu_time() -> f64 {
    // SAFETY: getrusage writes into the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}
