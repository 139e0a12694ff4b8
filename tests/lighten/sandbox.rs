//! The sandbox: real Apache and php-cgi start from a fixture, answer, and leave nothing
//! behind.

use crate::helpers::have;
use lighten::config::{self, LoadOptions};
use lighten::run::{apache, http, process, sandbox::Sandbox};
use lighten::source::Sysroot;
use std::net::SocketAddr;

#[test]
fn apache_serves_a_fixture_and_leaves_nothing_behind() {
    if !have("apache2") {
        // CI installs Apache (scripts/setup.sh); only a developer's machine may lack it.
        assert!(std::env::var_os("CI").is_none(), "apache2 is not installed");
        eprintln!("skipped: apache2 is not installed");
        return;
    }
    let before = system_state();
    let opts = LoadOptions { sysroot: Sysroot::at("fixtures/wordpress"), ..LoadOptions::default() };
    let cfg = config::load(std::path::Path::new("fixtures/wordpress/var/www/html"), &opts).unwrap();
    let sb = Sandbox::new("lighten-test-").unwrap();
    let dir = sb.path().display().to_string();
    {
        let a = apache::start(&cfg, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: None })
            .unwrap_or_else(|e| panic!("{e}"));
        let port = a.http_port().unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let host = vec![("Host".to_string(), "localhost".to_string())];
        let r = http::send(addr, "GET", "/no/such/page?x=1", &host, b"").unwrap();
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["SCRIPT_NAME"], "/index.php");
        assert_eq!(v["QUERY_STRING"], "x=1");
        assert_eq!(v["REQUEST_URI"], "/no/such/page?x=1");
        let r = http::send(addr, "GET", "/.htaccess", &host, b"").unwrap();
        assert_eq!(r.status, 403);
        assert!(!process::processes_mentioning(&dir).is_empty(), "servers run while the handle lives");
    }
    drop(sb);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(process::processes_mentioning(&dir), Vec::<u32>::new(), "a process outlived its sandbox");
    assert!(!std::path::Path::new(&dir).exists(), "the sandbox folder outlived its handle");
    assert_eq!(system_state(), before, "the run changed files of the system's Apache or PHP");
}

/// Every file where a stray Apache or PHP would write (configuration, logs, pid files,
/// sockets), with its size and modification time.
fn system_state() -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    for root in [
        "/etc/apache2",
        "/etc/php",
        "/var/log/apache2",
        "/run/apache2",
        "/run/php",
        "/var/log/php8.2-fpm.log",
    ] {
        for e in walkdir::WalkDir::new(root).into_iter().filter_map(Result::ok) {
            if let Ok(m) = e.metadata() {
                out.push((
                    e.path().display().to_string(),
                    m.len(),
                    m.modified().unwrap_or(std::time::UNIX_EPOCH),
                ));
            }
        }
    }
    out.sort();
    out
}
