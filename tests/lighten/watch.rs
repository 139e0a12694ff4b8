//! `lighten watch` against a running converted site: the edits of `fixtures/watch/`
//! (plugins and admins editing .htaccess while the site runs) made to the watched tree
//! and to the tree a real Apache serves; after each, watch's JSON line must say the change
//! converted, and the lighttpd started from the output (the `run:` line) must answer as
//! Apache does on the edited tree.

use crate::helpers::{Group, lighten, open_copy, servers_present, spawn_group};
use lighten::run::{apache, observe, sandbox};
use lighten::verify;
use serde::Deserialize;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Deserialize)]
struct Edits {
    base: String,
    server_name: String,
    edit: Vec<Edit>,
}

#[derive(Deserialize)]
struct Edit {
    name: String,
    file: String,
    content: Option<String>,
    append: Option<String>,
    #[serde(default)]
    original: bool,
    /// The file is deleted.
    #[serde(default)]
    remove: bool,
    /// Written as editors do: a temporary file beside it, renamed over it.
    #[serde(default)]
    via_rename: bool,
    #[serde(default)]
    also: Vec<Also>,
    /// The changed file a finding of the record must point into.
    finding: Option<String>,
    requests: String,
}

#[derive(Deserialize)]
struct Also {
    path: String,
    text: String,
}

/// A copy of fixtures/wordpress, the output folder, a free port, and the arguments that
/// convert (and watch) it for example.test on that port.
fn wordpress_conversion() -> (tempfile::TempDir, PathBuf, PathBuf, u16, Vec<String>) {
    let (tmp, site) = open_copy("wordpress");
    let out = tmp.path().join("out");
    let port = sandbox::free_port().unwrap();
    let args = [
        "--sysroot".to_string(),
        site.display().to_string(),
        "--server-name".into(),
        "example.test".into(),
        format!("{}/var/www/html", site.display()),
        "--out".into(),
        out.display().to_string(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
    ];
    (tmp, site, out, port, args.to_vec())
}

/// The running converted site's answer to `METHOD PATH` with `Host: example.test` (the
/// site of [`wordpress_conversion`]).
fn ask(port: u16, method: &str, path: &str) -> lighten::run::http::HttpResponse {
    let req = lighten::eval::request::parse_file(&format!("{method} {path}\n")).unwrap().remove(0);
    let sent = verify::Sent::new(&req, "example.test", vec![("Host".into(), "example.test".into())]);
    verify::send(port, false, &sent).unwrap()
}

/// `lighten convert ARGS`, then lighttpd started with the printed run: line, listening on
/// `port`: the converted site as an admin starts it.
fn serve_converted(args: &[&str], port: u16) -> (crate::helpers::Output, Group) {
    let conv = lighten(&[&["convert"], args].concat());
    assert!(conv.code <= 1, "{}", conv.transcript());
    let run = conv.stdout.lines().find_map(|l| l.strip_prefix("run: ")).expect("a run: line").to_string();
    let words: Vec<&str> = run.split_whitespace().collect();
    let lighttpd = spawn_group(Command::new(words[0]).args(&words[1..]).stdout(Stdio::null()));
    assert!(sandbox::wait_for_port(port, Duration::from_secs(10)), "lighttpd listens");
    (conv, lighttpd)
}

/// `lighten watch ARGS EXTRA --json`, its JSON lines read on a thread.
fn watching(args: &[&str], extra: &[&str]) -> (Group, mpsc::Receiver<serde_json::Value>) {
    let mut watch = Command::new(env!("CARGO_BIN_EXE_lighten"));
    watch.arg("watch").args(args).args(extra).arg("--json").stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = spawn_group(&mut watch);
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Writes the edit into the watched tree and into Apache's copy, where absolute paths of
/// password files point into the copy (as the sandbox does for the files it copied).
fn apply(edit: &Edit, base: &Path, site: &Path, apache_copy: &apache::PathMap) {
    let root = apache_copy.root.clone().unwrap();
    for (tree, map) in [(site, None), (root.as_path(), Some(apache_copy))] {
        for a in &edit.also {
            let p = tree.join(&a.path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &a.text).unwrap();
        }
        let target = tree.join(&edit.file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        if edit.remove {
            std::fs::remove_file(&target).unwrap();
            continue;
        }
        let text = if let Some(c) = &edit.content {
            std::fs::read_to_string(Path::new("fixtures/watch/files").join(c)).unwrap()
        } else if let Some(text) = &edit.append {
            std::fs::read_to_string(&target).unwrap_or_default() + text
        } else if edit.original {
            std::fs::read_to_string(base.join(&edit.file)).unwrap()
        } else {
            panic!("{}: the edit writes nothing", edit.name);
        };
        let text = match map {
            None => text,
            Some(m) => text
                .lines()
                .map(|l| match l.strip_prefix("AuthUserFile ") {
                    Some(p) => format!("AuthUserFile \"{}\"", m.map(p.trim_matches('"'))),
                    None => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        if edit.via_rename {
            let tmp = target.with_file_name(".htaccess.swp-lighten-test");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, &target).unwrap();
        } else {
            std::fs::write(&target, text).unwrap();
        }
    }
}

/// The next record of watch's JSON lines naming `file` among what changed.
fn record_for(rx: &mpsc::Receiver<serde_json::Value>, file: &Path, name: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = file.display().to_string();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let r = rx.recv_timeout(left).unwrap_or_else(|_| panic!("{name}: watch logged nothing for {want}"));
        let named =
            r["changed"].as_array().is_some_and(|c| c.iter().any(|p| p.as_str() == Some(want.as_str())));
        // (not the whole conversion confirming site-only steps, which names their files)
        if named && r["why"] != serde_json::json!(["confirm"]) {
            return r;
        }
    }
}

#[test]
fn watch_keeps_a_running_site_in_step_with_htaccess_edits() {
    if !servers_present() {
        return;
    }
    let edits: Edits =
        toml::from_str(&std::fs::read_to_string("fixtures/watch/edits.toml").unwrap()).unwrap();
    let base = Path::new("fixtures").join(&edits.base);
    let (tmp, site) = open_copy(&edits.base);
    let docroot = site.join("var/www/html");
    let load = lighten::config::LoadOptions {
        sysroot: lighten::source::Sysroot::at(&site),
        server_name: edits.server_name.clone(),
        ..lighten::config::LoadOptions::default()
    };

    // Apache on its own copy of the tree, with PHP in echo mode; lighttpd gets the same PHP.
    let cfg = lighten::config::load(&docroot, &load).unwrap();
    let sb = sandbox::Sandbox::new("lighten-watch-test-").unwrap();
    let a = apache::start(&cfg, &sb, &apache::ApacheOptions { php_echo: true, rewrite_trace: None }).unwrap();
    let apache_root = a.root.clone().expect("Apache serves a copy");
    let aport = a.http_port().unwrap();
    let php = format!("127.0.0.1:{}", a.php.as_ref().expect("a PHP backend").port);

    let out = tmp.path().join("out");
    let lport = sandbox::free_port().unwrap();
    let listen = format!("127.0.0.1:{lport}");
    let (site_s, docroot_s, out_s) =
        (site.display().to_string(), docroot.display().to_string(), out.display().to_string());
    let args = [
        "--sysroot",
        &site_s,
        &docroot_s,
        "--server-name",
        &edits.server_name,
        "--out",
        &out_s,
        "--listen",
        &listen,
        "--php-backend",
        &php,
    ];
    let (_conv, _lighttpd) = serve_converted(&args, lport);
    let (child, rx) = watching(&args, &[]);
    let start = rx.recv_timeout(Duration::from_secs(20)).expect("watch starts");
    assert_eq!(start["outcome"], "unchanged", "convert just wrote the output: {start}");

    let paths_a = apache::PathMap { root: Some(apache_root.clone()) };
    let paths_l = apache::PathMap { root: Some(site.clone()) };
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut reloads = std::collections::BTreeSet::new();
    for edit in &edits.edit {
        apply(edit, &base, &site, &paths_a);
        let r = record_for(&rx, &site.join(&edit.file), &edit.name);
        assert_eq!(r["outcome"], "converted", "{}: {r}", edit.name);
        // The running lighttpd got it: new Lua at its next request, or (lighttpd.conf
        // changed: a new auth block) a graceful restart.
        let kind = r["reload"]["kind"].as_str().unwrap_or_default().to_string();
        assert!(kind == "reloaded" || kind == "restarted", "{}: {r}", edit.name);
        // An .htaccess edit converts the site alone, its host blocks in lighttpd.conf
        // included (a static lane, a password area: then lighttpd restarts).
        let alone = r["sites"] == serde_json::json!([edits.server_name]);
        let conf = r["written"].as_array().unwrap().iter().any(|w| w == "lighttpd.conf");
        assert_eq!(conf, kind == "restarted", "{}: {r}", edit.name);
        assert!(alone, "{}: {r}", edit.name);
        reloads.insert(kind);
        // The new output answered the requests derived for the change before it was written
        // (every edit here reaches a rule or a folder those requests meet).
        assert!(r["checked"].as_u64().unwrap() > 0, "{}: {r}", edit.name);
        if let Some(f) = &edit.finding {
            let at = site.join(f).display().to_string();
            let found =
                r["findings"].as_array().unwrap().iter().any(|x| x["at"].as_str().unwrap().starts_with(&at));
            assert!(found, "{}: a finding in {at}: {r}", edit.name);
        }
        // The evaluator on the edited tree says which file a body should be.
        let mut cfg = lighten::config::load(&docroot, &load).unwrap();
        let (model, _) = lighten::model::build(&mut cfg);
        for req in lighten::eval::request::parse_file(&edit.requests).unwrap() {
            let headers: Vec<(String, String)> =
                std::iter::once(("Host".to_string(), edits.server_name.clone()))
                    .chain(req.headers.iter().cloned())
                    .collect();
            let sent = verify::Sent::new(&req, &edits.server_name, headers);
            let mut r = req.clone();
            r.host = req.host_header(&edits.server_name);
            let ev = lighten::eval::evaluate(&model, &cfg.sysroot, &r, 80);
            let ra = verify::send(aport, false, &sent).unwrap();
            let rl = verify::send(lport, false, &sent).unwrap();
            let head = req.method == "HEAD";
            let sa = observe::observe(&ra, &paths_a, &cfg.sysroot, Some(&ev.outcome), head);
            let sl = observe::observe(&rl, &paths_l, &cfg.sysroot, Some(&ev.outcome), head);
            let d = verify::compare(&ra, &rl, &sa.served, &sl.served, &[], head);
            compared += 1;
            if !d.is_empty() {
                failures.push(format!(
                    "{}: {}: Apache {} lighttpd {}: {d:?}",
                    edit.name,
                    req.to_line(),
                    ra.status,
                    rl.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {compared} answers differ:\n{}", failures.len(), failures.join("\n"));
    assert!(compared >= 30, "{compared} requests compared");
    // Both ways of putting a change in force were met (Basic auth adds mod_auth blocks to
    // lighttpd.conf; the other edits change only Lua).
    assert_eq!(reloads.into_iter().collect::<Vec<_>>(), ["reloaded", "restarted"]);
    // Once the folders are quiet, the whole conversion after the site-only steps writes
    // the reports and finds nothing else they left different.
    let confirm = loop {
        let r =
            rx.recv_timeout(Duration::from_secs(30)).expect("the whole conversion after the site-only steps");
        if r["why"] == serde_json::json!(["confirm"]) {
            break r;
        }
        eprintln!("record before the confirming conversion: {r}");
    };
    assert!(confirm["reason"].is_null(), "{confirm}");
    let written: Vec<&str> =
        confirm["written"].as_array().map_or(Vec::new(), |w| w.iter().filter_map(|x| x.as_str()).collect());
    assert!(written.iter().all(|w| w.starts_with("report.")), "{confirm}");
    drop(child);
    drop(a);
}

/// The words of a unit's `KEY=` line (the paths lighten writes need no systemd quoting).
fn unit_line(text: &str, key: &str) -> Vec<String> {
    let line = text
        .lines()
        .filter_map(|l| l.strip_prefix(key))
        .rfind(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("no {key} in\n{text}"));
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn convert_writes_service_units_systemd_accepts_and_their_commands_run() {
    if !servers_present() {
        return;
    }
    let (tmp, site) = open_copy("wordpress");
    let out = tmp.path().join("out");
    let port = sandbox::free_port().unwrap();
    let (site_s, out_s, listen) =
        (site.display().to_string(), out.display().to_string(), format!("127.0.0.1:{port}"));
    let docroot = format!("{site_s}/var/www/html");
    let r = lighten(&[
        "convert",
        "--sysroot",
        &site_s,
        "--server-name",
        "example.test",
        &docroot,
        "--out",
        &out_s,
        "--listen",
        &listen,
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let install = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("as services (root): "))
        .unwrap_or_else(|| panic!("no service line\n{}", r.transcript()));
    assert_eq!(
        install,
        format!(
            "cp -r {out_s}/systemd/. /etc/systemd/system/ && systemctl daemon-reload && systemctl enable --now lighten-watch.service"
        )
    );
    // The install, into a stand-in for /etc/systemd/system (nothing here touches /etc, and
    // no systemd runs as PID 1 to reload): the copy as printed, the enable offline.
    let etc = tmp.path().join("root/etc/systemd/system");
    std::fs::create_dir_all(&etc).unwrap();
    let cp =
        install.split(" && ").next().unwrap().replace("/etc/systemd/system/", &format!("{}/", etc.display()));
    assert!(Command::new("sh").args(["-c", &cp]).status().unwrap().success(), "{cp}");
    let enable = Command::new("systemctl")
        .arg(format!("--root={}", tmp.path().join("root").display()))
        .args(["enable", "lighten-watch.service"])
        .output()
        .unwrap();
    assert!(enable.status.success(), "{}", String::from_utf8_lossy(&enable.stderr));
    assert!(etc.join("multi-user.target.wants/lighten-watch.service").symlink_metadata().is_ok());
    // systemd reads both, with the packaged lighttpd.service under the drop-in.
    let v = Command::new("systemd-analyze")
        .args(["verify", "lighttpd.service", "lighten-watch.service"])
        .env("SYSTEMD_UNIT_PATH", format!("{}:/lib/systemd/system", etc.display()))
        .output()
        .expect("systemd-analyze runs (scripts/setup.sh installs systemd)");
    assert!(
        v.status.success(),
        "{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );

    // What the units run, runs: lighttpd's check and start from the drop-in, then the
    // watch service's command, which finds the output current.
    let drop_in = std::fs::read_to_string(etc.join("lighttpd.service.d/lighten.conf")).unwrap();
    // (each ExecStartPre in turn: the first removes a static-lane switch a killed watch left)
    std::fs::write(out.join(".watching.conf"), lighten::translate::lane::WATCHING_TEXT).unwrap();
    let pres: Vec<Vec<String>> = drop_in
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStartPre="))
        .filter(|v| !v.is_empty())
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(pres.len(), 2, "{drop_in}");
    for pre in &pres {
        assert!(Command::new(&pre[0]).args(&pre[1..]).status().unwrap().success(), "{pre:?}");
    }
    assert!(!out.join(".watching.conf").exists(), "lighttpd starts with the lane off");
    let exec = unit_line(&drop_in, "ExecStart=");
    let _lighttpd = spawn_group(Command::new(&exec[0]).args(&exec[1..]).stdout(Stdio::null()));
    assert!(sandbox::wait_for_port(port, Duration::from_secs(10)), "lighttpd listens");
    let unit = std::fs::read_to_string(etc.join("lighten-watch.service")).unwrap();
    let watch = unit_line(&unit, "ExecStart=");
    let cwd = unit_line(&unit, "WorkingDirectory=");
    let mut once = Command::new(&watch[0]);
    once.args(&watch[1..]).arg("--once").current_dir(&cwd[0]);
    let o = once.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("start: the conversion is the same, nothing to do"), "{err}");
}

#[test]
fn a_change_watch_refuses_leaves_the_safety_net_answering_503() {
    if !servers_present() {
        return;
    }
    let (_tmp, site, _out, port, owned) = wordpress_conversion();
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (r, _lighttpd) = serve_converted(&args, port);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let (_watch, rx) = watching(&args, &["--strict"]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap()["outcome"], "unchanged");
    let css = "/wp-content/themes/twentytwentyfour/style.css";
    let get = |path: &str| ask(port, "GET", path).status;
    assert_eq!(get(css), 200);
    // A directive the translation does not carry exactly (Header edit): --strict refuses
    // the change, the output in force stays, and its safety net refuses what meets it.
    let file = site.join("var/www/html/wp-content/themes/.htaccess");
    std::fs::write(&file, "Header edit X-Powered-By PHP Lighttpd\n").unwrap();
    let rec = record_for(&rx, &file, "Header edit under --strict");
    assert_eq!(rec["outcome"], "refused", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("--strict"), "{rec}");
    assert_eq!(rec["reload"]["kind"], "none", "{rec}");
    // The safety net looks at each folder once a second at most.
    let deadline = Instant::now() + Duration::from_millis(2500);
    let mut seen = Vec::new();
    loop {
        let st = get(css);
        seen.push(st);
        if st == 503 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the changed .htaccess is met: 503, never the old answer: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get("/robots.txt"), 200, "the rest of the site keeps serving");
    // Removed again: converted, and served as before.
    std::fs::remove_file(&file).unwrap();
    let rec = record_for(&rx, &file, "the .htaccess removed");
    assert!(matches!(rec["outcome"].as_str(), Some("converted" | "unchanged")), "{rec}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(css) != 200 {
        assert!(Instant::now() < deadline, "served again after the removal");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_printed_watch_line_runs_as_printed_for_relative_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out").display().to_string();
    let r = lighten(&[
        "convert",
        "--sysroot",
        "fixtures/wordpress",
        "--server-name",
        "example.test",
        "fixtures/wordpress/var/www/html",
        "--out",
        &out,
        "--listen",
        "127.0.0.1:18080",
    ]);
    assert!(r.code <= 1, "{}", r.transcript());
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("keep it in step with .htaccess edits: "))
        .unwrap_or_else(|| panic!("no watch line\n{}", r.transcript()));
    let here = std::env::current_dir().unwrap().display().to_string();
    assert!(line.starts_with(&format!("cd {here} && ")), "{line}");
    // Run as printed, from elsewhere: the conversion it makes is the one convert wrote.
    let o = Command::new("sh").args(["-c", &format!("{line} --once")]).current_dir("/").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("start: the conversion is the same, nothing to do"), "{err}");
}

#[test]
fn an_edit_of_one_accounts_apache_file_converts_that_account_alone() {
    if !servers_present() {
        return;
    }
    // A Plesk server: each account's vhost.conf is included inside its own <VirtualHost>.
    let (tmp, site) = open_copy("plesk");
    std::fs::create_dir_all(site.join("var/www/vhosts/shop.example/httpdocs/members")).unwrap();
    std::fs::write(site.join("var/www/vhosts/shop.example/httpdocs/members/a.html"), "members\n").unwrap();
    let out = tmp.path().join("out");
    let port = sandbox::free_port().unwrap();
    let php = format!("127.0.0.1:{}", sandbox::free_port().unwrap());
    let (site_s, out_s, listen) =
        (site.display().to_string(), out.display().to_string(), format!("127.0.0.1:{port}"));
    let vhosts = format!("{site_s}/var/www/vhosts");
    let args = ["--sysroot", &site_s, &vhosts, "--out", &out_s, "--listen", &listen, "--php-backend", &php];
    let (_conv, _lighttpd) = serve_converted(&args, port);
    let (_watch, rx) = watching(&args, &[]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).expect("watch starts")["outcome"], "unchanged");
    let load = lighten::config::LoadOptions {
        sysroot: lighten::source::Sysroot::at(&site),
        ..lighten::config::LoadOptions::default()
    };
    // The running lighttpd and the evaluator on the tree as it is now (Apache's answer, as
    // the differential tests hold the evaluator to real Apache for this fixture).
    let answers = |lines: &str| -> Vec<(String, u16, u16)> {
        let mut cfg = lighten::config::load(Path::new(&vhosts), &load).unwrap();
        let (model, _) = lighten::model::build(&mut cfg);
        lighten::eval::request::parse_file(lines)
            .unwrap()
            .into_iter()
            .map(|req| {
                let host = req.host.clone().unwrap();
                let sent = verify::Sent::new(&req, &host, vec![("Host".into(), host.clone())]);
                let mut r = req.clone();
                r.host = req.host_header(&host);
                let ev = lighten::eval::evaluate(&model, &cfg.sysroot, &r, 80);
                // (no PHP runs here: what PHP would answer, lighttpd answers 503)
                let apache = match ev.outcome.served {
                    lighten::eval::Served::Php { .. } => 503,
                    _ => ev.outcome.status,
                };
                (req.to_line(), apache, verify::send(port, false, &sent).unwrap().status)
            })
            .collect()
    };
    let same = |lines: &str, what: &str| {
        // (the running lighttpd reads new Lua at its next request; a restart takes longer)
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let got = answers(lines);
            if got.iter().all(|(_, a, l)| a == l) {
                return got;
            }
            assert!(Instant::now() < deadline, "{what}: (request, Apache, lighttpd) {got:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let requests = "GET http://shop.example/private-x/a.html\nGET http://shop.example/moved\n\
                    GET http://shop.example/old-shop\nGET http://static.example/index.html\n\
                    GET http://shop.example/members/a.html\n";
    let before = same(requests, "before any edit");
    assert_eq!((before[2].1, before[3].1, before[4].1), (301, 200, 200), "{before:?}");

    let conf = site.join("var/www/vhosts/system/shop.example/conf/vhost.conf");
    let edits = [
        ("a <Location> deny", "\n<Location /private-x>\n  Require all denied\n</Location>\n"),
        ("a Redirect", "\nRedirect 301 /moved /shop\n"),
    ];
    for (what, text) in edits {
        let now = std::fs::read_to_string(&conf).unwrap();
        std::fs::write(&conf, now + text).unwrap();
        let r = record_for(&rx, &conf, what);
        assert_eq!(r["why"], serde_json::json!(["server-config"]), "{what}: {r}");
        assert_eq!(r["outcome"], "converted", "{what}: {r}");
        // That account alone: its own modules and the output's identity, no restart.
        assert_eq!(r["sites"], serde_json::json!(["shop.example"]), "{what}: {r}");
        let written: Vec<&str> =
            r["written"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert!(
            written.iter().all(|w| w.starts_with("lua/shop_example") || *w == "lua/lighten_output.lua"),
            "{what}: {r}"
        );
        assert_eq!(r["reload"]["kind"], "reloaded", "{what}: {r}");
        assert!(r["checked"].as_u64().unwrap() > 0, "{what}: the new answers were checked: {r}");
        same(requests, what);
    }
    // Basic auth in an .htaccess of the account: a password area in its host block of
    // lighttpd.conf (among the server's other hosts, and the port's default, which is
    // another account's), spliced into the whole file, then a graceful restart.
    let members = site.join("var/www/vhosts/shop.example/httpdocs/members");
    std::fs::write(site.join("var/www/vhosts/system/shop.example/members.htpasswd"), "m:$apr1$x$y\n")
        .unwrap();
    let htaccess = members.join(".htaccess");
    std::fs::write(
        &htaccess,
        "AuthType Basic\nAuthName \"Members\"\n\
         AuthUserFile /var/www/vhosts/system/shop.example/members.htpasswd\nRequire valid-user\n",
    )
    .unwrap();
    let r = record_for(&rx, &htaccess, "Basic auth");
    assert_eq!(r["sites"], serde_json::json!(["shop.example"]), "{r}");
    assert!(r["written"].as_array().unwrap().iter().any(|w| w == "lighttpd.conf"), "{r}");
    assert_eq!(r["reload"]["kind"], "restarted", "{r}");
    let after = same(requests, "after the edits");
    assert_eq!((after[0].1, after[1].1, after[3].1, after[4].1), (403, 301, 200, 401), "{after:?}");
    // The whole conversion once the tree is quiet finds nothing else to write.
    let confirm = loop {
        let r = rx.recv_timeout(Duration::from_secs(30)).expect("the confirming whole conversion");
        if r["why"] == serde_json::json!(["confirm"]) {
            break r;
        }
    };
    let written: Vec<&str> =
        confirm["written"].as_array().map_or(Vec::new(), |w| w.iter().filter_map(|x| x.as_str()).collect());
    assert!(confirm["reason"].is_null() && written.iter().all(|w| w.starts_with("report.")), "{confirm}");
    // A new ServerAlias changes how lighttpd.conf picks the host, around the account's
    // blocks: a whole step, and the new name is the account's at once.
    let alias = "GET http://alias.shop.example/moved\n";
    same(alias, "before the alias");
    let now = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, now + "\nServerAlias alias.shop.example\n").unwrap();
    let r = record_for(&rx, &conf, "a ServerAlias");
    assert!(r["sites"].is_null(), "{r}");
    assert!(r["written"].as_array().unwrap().iter().any(|w| w == "lighttpd.conf"), "{r}");
    assert_eq!(same(alias, "after the alias")[0].1, 301);
    // A file of the main server's configuration concerns every site: a whole step.
    let server = site.join("etc/apache2/plesk.conf.d/server.conf");
    let now = std::fs::read_to_string(&server).unwrap();
    std::fs::write(&server, format!("# an admin's note\n{now}")).unwrap();
    let r = record_for(&rx, &server, "the server's own file");
    assert!(r["sites"].is_null(), "{r}");
    assert!(matches!(r["outcome"].as_str(), Some("converted" | "unchanged")), "{r}");
    same(requests, "after the server's file changed");
}

/// The static lane trusts the symbolic links the conversion saw. A link made while watch
/// runs, from a folder in the lane to one whose .htaccess denies (Apache reads that
/// .htaccess through the link), is a step of its own: once it is in force, the file
/// behind the link answers as Apache's does (403), not as the lane served it.
#[test]
fn a_symbolic_link_made_while_watched_is_taken_in() {
    if !servers_present() {
        return;
    }
    let (_tmp, site, out, port, owned) = wordpress_conversion();
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (r, _lighttpd) = serve_converted(&args, port);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let html = site.join("var/www/html");
    // a denied folder with an image, before watch starts
    std::fs::create_dir_all(html.join("private")).unwrap();
    std::fs::write(html.join("private/.htaccess"), "Require all denied\n").unwrap();
    std::fs::write(html.join("private/a.png"), b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let (_watch, rx) = watching(&args, &[]);
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(first["outcome"], "converted", "{first}");
    let get = |path: &str| ask(port, "GET", path).status;
    assert_eq!(get("/private/a.png"), 403);
    assert!(std::fs::read_to_string(out.join(".watching.conf")).unwrap().contains("lighten_lane := \"\""));
    let link = html.join("wp-content/themes/lnk");
    std::os::unix::fs::symlink("../../private", &link).unwrap();
    let rec = record_for(&rx, &link, "a symbolic link made in the lane");
    assert_eq!(rec["outcome"], "converted", "{rec}");
    assert_eq!(rec["reload"]["kind"], "restarted", "the lane changes: {rec}");
    assert_eq!(get("/wp-content/themes/lnk/a.png"), 403);
}

/// The static lane as lighttpd runs it: every hook script of the output is replaced by one
/// that answers 599, so what answers otherwise never entered Lua. Without
/// `.watching.conf` the stylesheet is the Lua's (599); with it, lighttpd serves it alone
/// with Apache's type, while what the lane does not take (a missing file, a HEAD, PHP, an
/// encoded slash) still goes through the Lua; removing the file turns the lane off again.
#[test]
fn the_static_lane_serves_alone_only_while_watched() {
    if !servers_present() {
        return;
    }
    let (_tmp, site, out, port, owned) = wordpress_conversion();
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (r, _lighttpd) = serve_converted(&args, port);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let conf = std::fs::read_to_string(out.join("lighttpd.conf")).unwrap();
    assert!(conf.contains("# The static lane of vhost example.test"), "{conf}");
    for e in std::fs::read_dir(out.join("lua")).unwrap() {
        let p = e.unwrap().path();
        if conf.contains(&format!("magnet.attract-physical-path-to = ( \"{}\" )", p.display())) {
            std::fs::write(&p, "return 599\n").unwrap();
        }
    }
    let css = "/wp-content/themes/twentytwentyfour/style.css";
    let restart = || {
        let pid =
            lighten::run::lighttpd::running_from(&out.join("lighttpd.conf"), &out.join("run/lighttpd.pid"))
                .expect("lighttpd runs from the output");
        let done = lighten::run::lighttpd::graceful_restart(
            pid,
            &out.join("run/error.log"),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(matches!(done, lighten::run::lighttpd::Restart::Done));
    };
    assert_eq!(ask(port, "GET", css).status, 599, "off: the Lua decides");
    std::fs::write(out.join(".watching.conf"), lighten::translate::lane::WATCHING_TEXT).unwrap();
    restart();
    let a = ask(port, "GET", css);
    assert_eq!(a.status, 200, "on: lighttpd alone");
    assert_eq!(a.header("content-type"), Some("text/css"), "{:?}", a.headers);
    let file = std::fs::read(site.join("var/www/html").join(&css[1..])).unwrap();
    assert_eq!(a.body.len(), file.len());
    for (method, path) in [
        ("GET", "/wp-content/themes/twentytwentyfour/missing.css"),
        ("HEAD", css),
        ("GET", "/index.php"),
        ("GET", "/wp-content/themes%2Ftwentytwentyfour/style.css"),
        ("GET", "/wp-content/themes/twentytwentyfour/style.css/x.css"),
    ] {
        assert_eq!(ask(port, method, path).status, 599, "{method} {path}: the Lua's");
    }
    std::fs::remove_file(out.join(".watching.conf")).unwrap();
    restart();
    assert_eq!(ask(port, "GET", css).status, 599, "off again");
}
