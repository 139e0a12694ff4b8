//! The figures of a run, merged from every thread: what ab prints, at microsecond
//! resolution, plus the client's own CPU cost.

use super::Settings;
use super::client::{Failures, Tally};
use super::histogram::{Latency, Stat};
use serde::Serialize;
use std::time::Duration;

/// The percentiles of ab's table, plus the tail.
pub const PERCENTILES: &[f64] = &[50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 100.0];

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub server_software: String,
    pub server_hostname: String,
    pub server_port: u16,
    pub document_path: String,
    /// Body length of the first successful answer.
    pub document_length: Option<u64>,
    pub method: String,
    pub concurrency: usize,
    pub threads: usize,
    pub keep_alive: bool,
    /// The intended rate (constant-rate mode).
    pub rate: Option<f64>,
    pub time_taken_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub failures: Failures,
    pub non_2xx: u64,
    /// Answers by status class: "2xx" -> count.
    pub status_classes: std::collections::BTreeMap<String, u64>,
    pub keep_alive_requests: u64,
    pub total_transferred: u64,
    pub html_transferred: u64,
    pub requests_per_second: f64,
    /// Mean time per request as one client sees it (concurrency x time / requests).
    pub time_per_request_ms: f64,
    /// Mean time per request across all concurrent requests (time / requests).
    pub time_per_request_all_ms: f64,
    pub transfer_rate_kb_s: f64,
    pub connect: Stat,
    pub processing: Stat,
    pub waiting: Stat,
    pub total: Stat,
    /// (percent, ms): ab's table.
    pub percentiles: Vec<(f64, f64)>,
    /// User + system CPU the generator used, and per request.
    pub client_cpu_s: f64,
    pub client_cpu_per_request_us: f64,
    /// The latency histogram (for curves and merging); not serialized.
    #[serde(skip)]
    pub latency: Latency,
}

impl Report {
    pub fn new(
        s: &Settings,
        threads: usize,
        t: &Tally,
        document_length: Option<u64>,
        elapsed: Duration,
        cpu: f64,
    ) -> Report {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let n = t.complete.max(1) as f64;
        let classes = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
        Report {
            server_software: t.server.clone().unwrap_or_default(),
            server_hostname: s
                .target
                .host
                .rsplit_once(':')
                .map_or(s.target.host.as_str(), |h| h.0)
                .to_string(),
            server_port: s.target.port,
            document_path: s.target.path.clone(),
            document_length,
            method: s.target.method.clone(),
            concurrency: s.concurrency,
            threads,
            keep_alive: s.keep_alive,
            rate: s.rate,
            time_taken_s: secs,
            complete: t.complete,
            failed: t.failures.total(),
            failures: t.failures,
            non_2xx: t.non_2xx,
            status_classes: classes
                .iter()
                .zip(t.classes)
                .filter(|(_, n)| *n > 0)
                .map(|(c, n)| (c.to_string(), n))
                .collect(),
            keep_alive_requests: t.keep_alive,
            total_transferred: t.total_bytes,
            html_transferred: t.body_bytes,
            requests_per_second: t.complete as f64 / secs,
            time_per_request_ms: s.concurrency as f64 * secs * 1000.0 / n,
            time_per_request_all_ms: secs * 1000.0 / n,
            transfer_rate_kb_s: t.total_bytes as f64 / 1024.0 / secs,
            connect: t.connect.stat(),
            processing: t.processing.stat(),
            waiting: t.waiting.stat(),
            total: t.total.stat(),
            percentiles: PERCENTILES.iter().map(|&p| (p, t.total.percentile_ms(p))).collect(),
            client_cpu_s: cpu,
            client_cpu_per_request_us: cpu * 1e6 / n,
            latency: t.total.clone(),
        }
    }

    pub fn percentile_ms(&self, p: f64) -> f64 {
        self.latency.percentile_ms(p)
    }
}
