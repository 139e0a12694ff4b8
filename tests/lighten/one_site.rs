//! One site at a time (issue 15 item 1): `--vhost` on verify, bench --compare and batch,
//! and `verify --from-log` sending each logged request to the site that logged it.

use crate::helpers::{lighten, open_copy, servers_present};

/// The lines Plesk writes (LogFormat plesklog: common plus referer and user agent).
const PLESK_LOG: &str = "\
10.0.0.1 - - [29/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 12 \"-\" \"curl/7.88\"
10.0.0.1 - - [29/Nov/2026:10:00:01 +0000] \"GET /index.php?p=2 HTTP/1.1\" 200 12 \"-\" \"curl/7.88\"
10.0.0.2 - - [29/Nov/2026:10:00:02 +0000] \"GET /no-such-page/ HTTP/1.1\" 200 12 \"-\" \"curl/7.88\"
10.0.0.2 - - [29/Nov/2026:10:00:03 +0000] \"POST /wp-login.php HTTP/1.1\" 302 0 \"-\" \"curl/7.88\"
";

#[test]
fn verify_takes_one_site_and_its_own_access_logs() {
    if !servers_present() {
        return;
    }
    let (_tmp, root) = open_copy("plesk");
    let logs = root.join("var/www/vhosts/system/shop.example/logs");
    std::fs::write(logs.join("access_log"), PLESK_LOG).unwrap();
    // A rotated copy of the https vhost's log (CustomLog .../access_ssl_log).
    std::fs::write(logs.join("access_ssl_log.processed"), PLESK_LOG).unwrap();
    let (sysroot, vhosts) = (root.to_str().unwrap().to_string(), root.join("var/www/vhosts"));
    let vhosts = vhosts.to_str().unwrap();
    for (log, scheme) in [("access_log", "http"), ("access_ssl_log.processed", "https")] {
        let log = logs.join(log);
        let out = lighten(&[
            "verify",
            "--sysroot",
            &sysroot,
            vhosts,
            "--vhost",
            "shop.example",
            "--from-log",
            log.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(out.code, 0, "{log:?}: {}\n{}", out.stderr, out.stdout);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let c = v["comparisons"].as_array().unwrap();
        // The POST is not replayed; every other line went to shop.example, on the scheme
        // of the vhost that wrote the log, and Apache answered it from that vhost.
        let requests: Vec<&str> = c.iter().map(|x| x["request"].as_str().unwrap()).collect();
        assert_eq!(
            requests,
            [
                format!("GET {scheme}://shop.example/"),
                format!("GET {scheme}://shop.example/index.php?p=2"),
                format!("GET {scheme}://shop.example/no-such-page/"),
            ],
            "{log:?}"
        );
        assert!(c.iter().all(|x| x["vhost"].as_str().unwrap().contains("shop.example")), "{c:?}");
    }

    // Derived requests, one site: only its names are asked (no unknown-Host probe of
    // Apache's default host, which the one site's conversion does not hold).
    let out = lighten(&["verify", "--sysroot", &sysroot, vhosts, "--vhost", "www.shop.example", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let c = v["comparisons"].as_array().unwrap();
    assert!(c.len() >= 10, "{} requests", c.len());
    for x in c {
        let r = x["request"].as_str().unwrap();
        assert!(r.contains("shop.example") || !r.contains("://"), "{r}");
        assert!(x["vhost"].as_str().unwrap().contains("shop.example"), "{x}");
    }

    // A name no site has is refused with the sites there are.
    let out = lighten(&["verify", "--sysroot", &sysroot, vhosts, "--vhost", "nope.example"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--vhost nope.example") && out.stderr.contains("shop.example"),
        "{}",
        out.stderr
    );
}

#[test]
fn bench_compare_loads_the_site_named() {
    if !servers_present() {
        return;
    }
    let (tmp, root) = open_copy("plesk");
    let results = tmp.path().join("results");
    let out = lighten(&[
        "bench",
        "--compare",
        root.join("var/www/vhosts").to_str().unwrap(),
        "--sysroot",
        root.to_str().unwrap(),
        "--vhost",
        "blog.example",
        "--path",
        "/",
        "-n",
        "20",
        "--repeat",
        "1",
        "--out",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let md = std::fs::read_to_string(results.join("compare.md")).unwrap();
    assert!(md.contains("blog.example"), "{md}");
    assert!(!md.contains("shop.example"), "{md}");
}

#[test]
fn batch_converts_only_the_accounts_named() {
    let (tmp, root) = open_copy("plesk");
    let out_dir = tmp.path().join("out");
    let (sysroot, vhosts, out_s) = (
        root.to_str().unwrap().to_string(),
        root.join("var/www/vhosts").to_str().unwrap().to_string(),
        out_dir.to_str().unwrap().to_string(),
    );
    let out =
        lighten(&["batch", "--sysroot", &sysroot, &vhosts, "--out", &out_s, "--vhost", "WWW.Blog.Example"]);
    assert_eq!(out.code, 1, "one approximated account: {}\n{}", out.stderr, out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("batch-summary.json")).unwrap()).unwrap();
    let accounts: Vec<&str> =
        summary["accounts"].as_array().unwrap().iter().map(|a| a["domain"].as_str().unwrap()).collect();
    assert_eq!(accounts, ["blog.example"]);
    assert!(out_dir.join("blog.example/lighttpd.conf").is_file());
    assert!(!out_dir.join("shop.example").exists());

    let out = lighten(&["batch", "--sysroot", &sysroot, &vhosts, "--out", &out_s, "--vhost", "nope.example"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--vhost nope.example: no account of that domain (accounts: blog.example, shop.example, static.example)"),
        "{}",
        out.stderr
    );
}

/// A vhost's own access log is written by lighttpd in its Apache format (Plesk's
/// `plesklog`, from the server-wide LogFormat): the same line as Apache's for the same
/// request, but for the time and the bytes sent (headers differ between any two servers).
#[test]
fn a_vhosts_access_log_is_written_in_its_apache_format() {
    if !servers_present() {
        return;
    }
    let (tmp, root) = open_copy("plesk");
    let requests = tmp.path().join("requests.txt");
    std::fs::write(
        &requests,
        "GET http://shop.example/robots.txt?a=1 | User-Agent: lighten-log-test | Referer: http://r.example/\n",
    )
    .unwrap();
    let (sysroot, vhosts) = (root.to_str().unwrap().to_string(), root.join("var/www/vhosts"));
    let out = lighten(&[
        "verify",
        "--sysroot",
        &sysroot,
        vhosts.to_str().unwrap(),
        "--vhost",
        "shop.example",
        "--requests",
        requests.to_str().unwrap(),
        "--keep",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let kept =
        out.stdout.lines().find_map(|l| l.strip_prefix("sandbox kept at ")).expect("--keep says where");
    let kept = std::path::PathBuf::from(kept.trim());
    let read = |p: std::path::PathBuf| {
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    let apache = read(kept.join("logs/access.log"));
    let lighttpd = read(kept.join("lighttpd/run/access-var_www_vhosts_system_shop.example_logs_access_log"));
    // `[time]` and the byte count after the status set aside
    let masked = |line: &str| -> String {
        let (head, rest) = line.split_once(" [").unwrap();
        let (_, rest) = rest.split_once("] ").unwrap();
        let mut w: Vec<&str> = rest.split(' ').collect();
        let status_at = w.iter().position(|x| x.ends_with("HTTP/1.1\"")).unwrap() + 1;
        w[status_at + 1] = "BYTES";
        format!("{head} [TIME] {}", w.join(" "))
    };
    let a = apache.lines().next().expect("Apache logged the request");
    assert_eq!(
        masked(a),
        "127.0.0.1 - - [TIME] \"GET /robots.txt?a=1 HTTP/1.1\" 200 BYTES \"http://r.example/\" \"lighten-log-test\""
    );
    // verify sends each request twice to lighttpd (its decision cache must answer alike)
    let l: Vec<&str> = lighttpd.lines().collect();
    assert_eq!(l.len(), 2, "{lighttpd}");
    for line in l {
        assert_eq!(masked(line), masked(a), "lighttpd's line\n{line}\nApache's\n{a}");
    }
    std::fs::remove_dir_all(&kept).unwrap();
}
