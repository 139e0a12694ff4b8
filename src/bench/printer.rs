//! A run's report as ab prints it (same lines, same order, times in milliseconds
//! with microsecond resolution), as ab's `-e` CSV, and as JSON.

use super::report::Report;
use std::fmt::Write;

/// ab's layout. Lines ab prints only when they are non-zero stay that way.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "Server Software:        {}", r.server_software);
    let _ = writeln!(w, "Server Hostname:        {}", r.server_hostname);
    let _ = writeln!(w, "Server Port:            {}", r.server_port);
    let _ = writeln!(w);
    let _ = writeln!(w, "Document Path:          {}", r.document_path);
    match r.document_length {
        Some(l) => {
            let _ = writeln!(w, "Document Length:        {l} bytes");
        }
        None => {
            let _ = writeln!(w, "Document Length:        (no successful answer)");
        }
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "Concurrency Level:      {}", r.concurrency);
    if let Some(rate) = r.rate {
        let _ =
            writeln!(w, "Intended rate:          {rate:.2} [#/sec] (latency from the intended send time)");
    }
    let _ = writeln!(w, "Time taken for tests:   {:.3} seconds", r.time_taken_s);
    let _ = writeln!(w, "Complete requests:      {}", r.complete);
    let _ = writeln!(w, "Failed requests:        {}", r.failed);
    if r.failed > 0 {
        let f = &r.failures;
        let _ = writeln!(
            w,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {}, Timeout: {})",
            f.connect, f.receive, f.length, f.exceptions, f.timeout
        );
    }
    if r.non_2xx > 0 {
        let _ = writeln!(w, "Non-2xx responses:      {}", r.non_2xx);
    }
    if r.keep_alive {
        let _ = writeln!(w, "Keep-Alive requests:    {}", r.keep_alive_requests);
    }
    let _ = writeln!(w, "Total transferred:      {} bytes", r.total_transferred);
    let _ = writeln!(w, "HTML transferred:       {} bytes", r.html_transferred);
    let _ = writeln!(w, "Requests per second:    {:.2} [#/sec] (mean)", r.requests_per_second);
    let _ = writeln!(w, "Time per request:       {:.3} [ms] (mean)", r.time_per_request_ms);
    let _ = writeln!(
        w,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        r.time_per_request_all_ms
    );
    let _ = writeln!(w, "Transfer rate:          {:.2} [Kbytes/sec] received", r.transfer_rate_kb_s);
    let _ = writeln!(w);
    let _ = writeln!(w, "Connection Times (ms)");
    let _ = writeln!(w, "              min      mean[+/-sd]   median      max");
    for (name, s) in [
        ("Connect:", &r.connect),
        ("Processing:", &r.processing),
        ("Waiting:", &r.waiting),
        ("Total:", &r.total),
    ] {
        let _ = writeln!(
            w,
            "{name:<11}{:>8.3} {:>8.3} {:>6.3} {:>8.3} {:>8.3}",
            s.min_ms, s.mean_ms, s.sd_ms, s.median_ms, s.max_ms
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "Percentage of the requests served within a certain time (ms)");
    for &(p, ms) in &r.percentiles {
        let label = if p.fract() == 0.0 { format!("{p:.0}%") } else { format!("{p}%") };
        let tail = if p >= 100.0 { " (longest request)" } else { "" };
        let _ = writeln!(w, " {label:>5} {ms:>9.3}{tail}");
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Client CPU:             {:.3} seconds, {:.2} [us] per request ({} thread{})",
        r.client_cpu_s,
        r.client_cpu_per_request_us,
        r.threads,
        if r.threads == 1 { "" } else { "s" }
    );
    o
}

/// ab's `-e` file: for each percent 0..=100, the time in ms within which that share
/// of the requests was served (here with microseconds).
pub fn csv(r: &Report) -> String {
    let mut o = String::from("Percentage served,Time in ms\n");
    for p in 0..=100 {
        let _ = writeln!(o, "{p},{:.3}", r.percentile_ms(p as f64));
    }
    o
}

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}
