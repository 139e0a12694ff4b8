//! `lighten bench` against a tiny in-process server on a free port, whose answers are
//! scripted per request: the counts the report gives must be the counts the server saw.
//! And `--compare` on a fixture: the report files are written and no server is left.

use crate::helpers::lighten;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const BODY: &[u8] = b"0123456789abcdefghij";

/// How the server answers request number `i` (counted from 0 over all connections).
type Script = fn(u64) -> Answer;

#[derive(Clone, Copy)]
enum Answer {
    Ok,
    NotFound,
    Longer,
    /// Promises more body than it sends, then closes.
    Short,
    /// Not HTTP.
    Garbage,
    /// Answers after 300 ms.
    Stall,
    /// Answers in full without `Connection: close`, then closes its side at once and
    /// reads on, discarding, for a while (lighttpd's lingering close of an idle
    /// keep-alive connection during a graceful restart).
    Linger,
}

struct Server {
    url: String,
    seen: Arc<AtomicU64>,
}

/// Starts the server; it lives until the test process ends (threads blocked in accept).
fn server(script: Script) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/doc", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&seen);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let counter = Arc::clone(&counter);
            std::thread::spawn(move || serve(conn, &counter, script));
        }
    });
    Server { url, seen }
}

fn serve(conn: TcpStream, counter: &AtomicU64, script: Script) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        // One request: lines up to the blank one.
        let mut close = false;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if !first && line.to_ascii_lowercase().starts_with("connection: close") {
                close = true;
            }
            first = false;
        }
        let i = counter.fetch_add(1, Ordering::SeqCst);
        let head = |status: &str, len: usize| {
            format!(
                "HTTP/1.1 {status}\r\nServer: scripted\r\nContent-Length: {len}\r\n{}\r\n",
                if close { "Connection: close\r\n" } else { "" }
            )
        };
        let answer = script(i);
        if let Answer::Stall = answer {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let (bytes, end) = match answer {
            Answer::Ok | Answer::Stall | Answer::Linger => {
                ([head("200 OK", BODY.len()).as_bytes(), BODY].concat(), close)
            }
            Answer::NotFound => ([head("404 Not Found", 9).as_bytes(), b"not found"].concat(), close),
            Answer::Longer => ([head("200 OK", 25).as_bytes(), BODY, b"12345"].concat(), close),
            Answer::Short => ([head("200 OK", 100).as_bytes(), &BODY[..10]].concat(), true),
            Answer::Garbage => (b"HTTZ/9 what\r\n\r\n".to_vec(), true),
        };
        if out.write_all(&bytes).is_err() || end {
            return;
        }
        if let Answer::Linger = answer {
            let _ = out.shutdown(std::net::Shutdown::Write);
            let _ = reader.get_ref().set_read_timeout(Some(std::time::Duration::from_millis(500)));
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut sink);
            return;
        }
    }
}

fn json(args: &[&str]) -> (i32, serde_json::Value, String) {
    let r = lighten(args);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr));
    (r.code, v, r.stderr)
}

#[test]
fn the_server_receives_exactly_the_requests_reported() {
    for keep_alive in [false, true] {
        let s = server(|_| Answer::Ok);
        let mut args = vec!["bench", "-n", "537", "-c", "7", "--json"];
        if keep_alive {
            args.push("-k");
        }
        args.push(&s.url);
        let (code, v, err) = json(&args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(v["complete"], 537, "keep-alive {keep_alive}");
        assert_eq!(v["failed"], 0);
        assert_eq!(s.seen.load(Ordering::SeqCst), 537, "the server's count, keep-alive {keep_alive}");
        assert_eq!(v["document_length"], BODY.len());
        assert_eq!(v["html_transferred"], 537 * BODY.len());
        assert_eq!(v["server_software"], "scripted");
        assert_eq!(v["keep_alive_requests"], if keep_alive { 537 } else { 0 });
    }
    // Time-bounded: the requests still out when time is up are not reported, so the
    // server saw at most one more per connection than the report counts.
    let s = server(|_| Answer::Ok);
    let (code, v, err) = json(&["bench", "-t", "0.5", "-c", "3", "-k", "--json", &s.url]);
    assert_eq!(code, 0, "{err}");
    let (done, seen) = (v["complete"].as_u64().unwrap(), s.seen.load(Ordering::SeqCst));
    assert!(done > 0 && seen >= done && seen <= done + 3, "reported {done}, server saw {seen}");
}

/// A server that closes a kept-alive connection right after an answer (lighttpd on a
/// graceful restart): the next request goes on a new connection, none waits for an
/// answer that cannot come (before, each such close cost a timeout).
#[test]
fn a_connection_closed_with_its_last_answer_is_not_reused() {
    let s = server(|i| if i % 5 == 4 { Answer::Linger } else { Answer::Ok });
    let (code, v, err) = json(&["bench", "-n", "300", "-c", "4", "-k", "-s", "2", "--json", &s.url]);
    assert_eq!(code, 0, "{err}\n{v}");
    assert_eq!(v["complete"], 300);
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["failures"]["timeout"], 0, "{v}");
}

/// Every tenth request is answered with each kind of trouble: the report counts each
/// kind exactly, with and without keep-alive.
#[test]
fn failures_non_2xx_and_short_bodies_are_counted() {
    fn script(i: u64) -> Answer {
        match i % 10 {
            1 => Answer::NotFound,
            2 => Answer::Longer,
            3 => Answer::Short,
            4 => Answer::Garbage,
            _ => Answer::Ok,
        }
    }
    for keep_alive in [false, true] {
        let s = server(script);
        // One connection: the order of the answers is the order of the script.
        let mut args = vec!["bench", "-n", "100", "-c", "1", "--json"];
        if keep_alive {
            args.push("-k");
        }
        args.push(&s.url);
        let (code, v, err) = json(&args);
        assert_eq!(code, 1, "failed requests make the exit status 1: {err}");
        assert_eq!(v["complete"], 100);
        assert_eq!(v["non_2xx"], 10);
        let f = &v["failures"];
        assert_eq!(
            (&f["connect"], &f["receive"], &f["length"], &f["exceptions"], &f["timeout"]),
            (&0.into(), &10.into(), &10.into(), &10.into(), &0.into()),
            "keep-alive {keep_alive}: {f}"
        );
        assert_eq!(v["failed"], 30);
        assert_eq!(v["document_length"], BODY.len());
        assert_eq!(s.seen.load(Ordering::SeqCst), 100);
    }
}

#[test]
fn the_report_has_abs_layout() {
    let s = server(|_| Answer::Ok);
    let r = lighten(&["bench", "-n", "50", "-c", "2", &s.url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let labels = [
        "Server Software:        scripted",
        "Document Path:          /doc",
        "Document Length:        20 bytes",
        "Concurrency Level:      2",
        "Time taken for tests:",
        "Complete requests:      50",
        "Failed requests:        0",
        "Total transferred:",
        "HTML transferred:       1000 bytes",
        "Requests per second:",
        "Time per request:",
        "(mean, across all concurrent requests)",
        "Transfer rate:",
        "Connection Times (ms)",
        "Processing:",
        "Waiting:",
        "Total:",
        "Percentage of the requests served within a certain time (ms)",
        "  50%",
        "  99%",
        " 100%",
        "(longest request)",
    ];
    let mut at = 0;
    for l in labels {
        let i =
            r.stdout[at..].find(l).unwrap_or_else(|| panic!("{l:?} missing or out of order:\n{}", r.stdout));
        at += i + l.len();
    }
    // Microseconds: the percentile column has three decimals.
    let p50 = r.stdout.lines().find(|l| l.trim_start().starts_with("50%")).unwrap();
    assert!(p50.trim_end().rsplit('.').next().unwrap().len() == 3, "{p50}");
    let csv_file = tempfile::NamedTempFile::new().unwrap();
    let csv = csv_file.path().to_string_lossy().into_owned();
    let r = lighten(&["bench", "-n", "20", "--csv", &csv, &s.url]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("Percentage served,Time in ms\n0,"), "{text}");
    assert_eq!(text.lines().count(), 102);
}

#[test]
fn constant_rate_sends_the_requests_asked_for() {
    let s = server(|_| Answer::Ok);
    let (code, v, err) = json(&["bench", "-n", "30", "-c", "3", "--rate", "300", "--json", &s.url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["complete"], 30);
    assert_eq!(v["rate"], 300.0);
    assert_eq!(s.seen.load(Ordering::SeqCst), 30);
}

/// Coordinated omission: one answer stalls 300 ms. At a constant rate the requests
/// that were due during the stall are charged for it, so the median is far above a
/// loopback round trip; the closed loop sees one slow request and a fast median. The
/// margins are wide (50 ms against about 150 ms and well under 1 ms).
#[test]
fn constant_rate_latency_counts_from_the_intended_send_time() {
    fn script(i: u64) -> Answer {
        if i == 5 { Answer::Stall } else { Answer::Ok }
    }
    let s = server(script);
    let (_, v, err) = json(&["bench", "-n", "40", "-c", "1", "-k", "--rate", "100", "--json", &s.url]);
    assert_eq!(v["complete"], 40, "{err}");
    let p50 = v["percentiles"][0][1].as_f64().unwrap();
    assert!(p50 >= 50.0, "at a constant rate the stall delays the requests due during it: p50 {p50} ms");
    let s = server(script);
    let (_, v, err) = json(&["bench", "-n", "40", "-c", "1", "-k", "--json", &s.url]);
    assert_eq!(v["complete"], 40, "{err}");
    let (p50, max) = (v["percentiles"][0][1].as_f64().unwrap(), v["total"]["max_ms"].as_f64().unwrap());
    assert!(p50 < 50.0 && max >= 300.0, "closed loop: p50 {p50} ms, max {max} ms");
}

#[test]
fn bad_input_is_a_clear_error() {
    for (args, want) in [
        (vec!["bench", "https://127.0.0.1/"], "https is not supported"),
        (vec!["bench", "ftp://x/"], "not an http:// URL"),
        (vec!["bench", "-n", "2", "-c", "5", "http://127.0.0.1:9/"], "-c 5 is more than -n 2"),
        (vec!["bench", "-H", "nocolon", "http://127.0.0.1:9/"], "has no ':'"),
    ] {
        let r = lighten(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
    // Nothing listens: every request fails to connect, and the run still ends.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (code, v, _) = json(&["bench", "-n", "5", "--json", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, 1);
    assert_eq!((&v["complete"], &v["failures"]["connect"]), (&5.into(), &5.into()));
}

/// `--compare` on a small fixture: both servers run, the report files are written, and
/// neither server nor the sandbox outlives the command.
#[test]
fn compare_writes_the_report_and_leaves_nothing_behind() {
    if !crate::helpers::servers_present() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_string_lossy().into_owned();
    let r = lighten(&[
        "bench",
        "--sysroot",
        "fixtures/wordpress",
        "--server-name",
        "example.test",
        "--compare",
        "fixtures/wordpress/var/www/html",
        "--path",
        "/robots.txt",
        "-n",
        "200",
        "-c",
        "4",
        "--repeat",
        "2",
        "--warmup",
        "0.2",
        "--out",
        &dir,
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let sandbox = r
        .stderr
        .split("(sandbox ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no sandbox named: {}", r.stderr))
        .to_string();
    assert!(r.stdout.contains("Requests per second") && r.stdout.contains("lighttpd/Apache"), "{}", r.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("compare.json")).unwrap()).unwrap();
    assert_eq!(v["servers"], serde_json::json!(["Apache", "lighttpd"]));
    for s in v["loads"][0]["servers"].as_array().unwrap() {
        let runs = s["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{s}");
        assert!(runs.iter().all(|r| r["complete"] == 200 && r["failed"] == 0), "{s}");
        assert!(s["peak_rss_mb"].as_f64().unwrap() > 0.0, "the server tree was sampled: {s}");
    }
    let md = std::fs::read_to_string(out.path().join("compare.md")).unwrap();
    assert!(md.contains("| Requests per second |") && md.contains("| Max memory (MB) |"), "{md}");
    for f in ["rps.svg", "latency-1-robots-txt-n-200-c-4.svg", "memory-1-robots-txt-n-200-c-4.svg"] {
        let svg = std::fs::read_to_string(out.path().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.starts_with("<svg") && svg.contains("lighttpd"), "{f}");
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = lighten::run::process::processes_mentioning(&sandbox);
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(!std::path::Path::new(&sandbox).exists(), "the sandbox {sandbox} was left behind");
}

/// Ctrl-C stops a run, which still prints what it measured, and exits 130.
#[test]
fn an_interrupted_benchmark_reports_what_it_measured_and_exits_130() {
    let s = server(|_| Answer::Ok);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_lighten"))
        .args(["bench", "-t", "60", "-c", "2", &s.url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once it has sent some requests.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s.seen.load(Ordering::SeqCst) < 100 {
        assert!(std::time::Instant::now() < deadline, "the benchmark sends nothing");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    // SAFETY: kill(2) sends a signal to a process id; no memory is touched.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the run did not stop at once");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let complete: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Complete requests:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no report:\n{stdout}"));
    assert!(complete >= 100 && complete <= s.seen.load(Ordering::SeqCst), "{stdout}");
}

/// `lighten ... | head`: a closed pipe ends lighten quietly, never with a panic.
#[test]
fn a_closed_stdout_is_no_panic() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lighten"))
        .args(["directives"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before lighten has written anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.code() == Some(0),
        "{:?}: {stderr}",
        out.status
    );
}

/// `--reference`: the hand-written WP Super Cache translation runs in the same turns, and
/// answers the cached homepage with the same document as Apache and the conversion.
#[test]
fn compare_runs_the_hand_written_reference_beside_the_pair() {
    if !crate::helpers::servers_present() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_string_lossy().into_owned();
    let r = lighten(&[
        "bench",
        "--sysroot",
        "fixtures/wp-super-cache",
        "--server-name",
        "example.test",
        "--compare",
        "fixtures/wp-super-cache/var/www/html",
        "--reference",
        "bench/reference/wp-super-cache/lighttpd.conf",
        "--path",
        "/",
        "-H",
        "Accept-Encoding: gzip",
        "-n",
        "200",
        "-c",
        "4",
        "-k",
        "--repeat",
        "1",
        "--warmup",
        "0.2",
        "--out",
        &dir,
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("warning"), "{}", r.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("compare.json")).unwrap()).unwrap();
    assert_eq!(v["servers"], serde_json::json!(["Apache", "reference", "lighttpd"]));
    let servers = v["loads"][0]["servers"].as_array().unwrap();
    for s in servers {
        let run = &s["runs"][0];
        assert!(run["complete"] == 200 && run["failed"] == 0 && run["non_2xx"] == 0, "{s}");
    }
    let lengths: Vec<&serde_json::Value> = servers.iter().map(|s| &s["runs"][0]["document_length"]).collect();
    assert!(
        lengths[0].as_u64().unwrap() > 0 && lengths.iter().all(|l| *l == lengths[0]),
        "documents differ: {lengths:?}"
    );
}
