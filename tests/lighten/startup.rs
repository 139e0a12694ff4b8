//! The converted site starts with the command `lighten convert` prints, as root and as a
//! normal user; what Apache would refuse at startup is refused; what the output needs
//! but this machine lacks is named with its Apache `file:line`; disabled sections never
//! become hosts.  Regression fixtures: `fixtures/regress/`.

use crate::helpers::{Group, Output, fixtures, have, lighten, open_copy, set_mode, spawn_group};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether lighttpd runs here; in CI its absence fails the test.
fn lighttpd_here() -> bool {
    let here = have("lighttpd");
    assert!(here || std::env::var_os("CI").is_none(), "lighttpd must be installed");
    here
}

fn is_root() -> bool {
    // SAFETY: geteuid only reads the process credentials.
    unsafe { libc::geteuid() == 0 }
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `cmd` run as the unprivileged `nobody` when lighten's tests run as root (setpriv,
/// util-linux), else as the user running the tests.
fn as_normal_user(program: &str) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", program]);
        c
    } else {
        Command::new(program)
    }
}

fn output(mut c: Command) -> Output {
    let o = c.stdin(Stdio::null()).output().expect("runs");
    Output {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        code: o.status.code().unwrap_or(-1),
    }
}

/// The command after `run: ` in convert's output.
fn run_line(r: &Output) -> String {
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix("run: "))
        .unwrap_or_else(|| panic!("no run: line\n{}", r.transcript()))
        .to_string()
}

/// The command after `keep it in step with .htaccess edits: ` in convert's output.
fn watch_line(r: &Output) -> String {
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix("keep it in step with .htaccess edits: "))
        .unwrap_or_else(|| panic!("no watch line\n{}", r.transcript()))
        .to_string()
}

/// Starts the printed watch command (through `prefix`), then proves it keeps the running
/// lighttpd in step: a `Require all denied` .htaccess written into the folder of `path`
/// is enforced, its removal too; SIGTERM stops it with status 0.
fn watch_keeps_in_step(line: &str, prefix: Option<&[&str]>, port: u16, folder: &Path, path: &str) {
    use std::io::BufRead;
    // The shell execs it (the line needs no quoting), so the status seen is watch's own.
    assert!(!line.contains(['\'', '"']), "{line}");
    let mut w = start(&format!("exec {line}"), prefix);
    let stderr = w.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let wait_for = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while let Ok(l) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            seen.push(l.clone());
            if l.contains(what) {
                return l;
            }
        }
        panic!("watch never said {what:?}; it said:\n{}", seen.join("\n"));
    };
    // watch turns the static lane on (a graceful restart of the lighttpd it finds), then
    // makes its first step
    wait_for("the static lane is on");
    wait_for(" start: ");
    let file = folder.join(".htaccess");
    std::fs::write(&file, "Require all denied\n").unwrap();
    let l = wait_for("converted");
    // The folder leaves the static lane: lighttpd.conf's lane changes, and the running
    // lighttpd restarts gracefully for it.
    assert!(l.contains(&file.display().to_string()) && l.contains("restarted gracefully"), "{l}");
    assert_eq!(get(port, "example.test", path).0, 403);
    std::fs::remove_file(&file).unwrap();
    wait_for("converted");
    assert_eq!(get(port, "example.test", path).0, 200);
    // SAFETY: kill(2) on the process group this test made.
    unsafe {
        libc::kill(-(w.0.id() as i32), libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = w.0.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "watch did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    wait_for("the static lane is off");
    wait_for("stopped");
    assert_eq!(status.code(), Some(0), "watch stops cleanly on SIGTERM");
}

/// Runs `line` as the shell would, as printed, through `prefix` (setpriv) when given.
fn start(line: &str, prefix: Option<&[&str]>) -> Group {
    let mut c = match prefix {
        Some(p) => {
            let mut c = Command::new(p[0]);
            c.args(&p[1..]).args(["sh", "-c", line]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", line]);
            c
        }
    };
    spawn_group(c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()))
}

/// `GET path` with `host` until the server answers (10 s at most): status and body.
fn get(port: u16, host: &str, path: &str) -> (u16, Vec<u8>) {
    let (status, _, body) = get_full(port, host, path);
    (status, body)
}

/// The same with the response's head (status line and headers) as text.
fn get_full(port: u16, host: &str, path: &str) -> (u16, String, Vec<u8>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            let text = String::from_utf8_lossy(&buf);
            if let Some(status) = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()) {
                let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
                let head = String::from_utf8_lossy(&buf[..end.unwrap_or(buf.len())]).into_owned();
                let body = end.map(|i| buf[i + 4..].to_vec());
                return (status, head, body.unwrap_or_default());
            }
        }
        assert!(Instant::now() < deadline, "nothing answers on 127.0.0.1:{port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many seconds the Expires of a response `head` is after its Date (both of one day).
fn expires_ahead(head: &str) -> i64 {
    let second_of = |name: &str| -> i64 {
        let line = head.lines().find(|l| l.to_ascii_lowercase().starts_with(&format!("{name}:")));
        let line = line.unwrap_or_else(|| panic!("no {name} in\n{head}"));
        // "Date: Wed, 02 Dec 2026 18:44:04 GMT": the time of day is the fifth word after the name
        let hms = line.split_whitespace().nth(5).unwrap_or_else(|| panic!("{line}"));
        hms.split(':').map(|n| n.parse::<i64>().unwrap()).fold(0, |a, n| a * 60 + n)
    };
    (second_of("expires") - second_of("date")).rem_euclid(86_400)
}

/// The user of every lighttpd process whose command line names `needle`.
fn users_of(needle: &str) -> Vec<String> {
    lighten::run::process::processes_mentioning(needle)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "lighttpd")
        })
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let uid: u32 = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some(match uid {
                0 => "root".to_string(),
                33 => "www-data".to_string(),
                65534 => "nobody".to_string(),
                n => n.to_string(),
            })
        })
        .collect()
}

#[test]
fn the_printed_run_command_serves_the_site_as_root_and_as_a_normal_user() {
    if !lighttpd_here() {
        return;
    }
    let (dir, root) = open_copy("wordpress");
    let site = root.join("var/www/html").to_string_lossy().into_owned();
    let sysroot = root.to_string_lossy().into_owned();
    let css = std::fs::read(root.join("var/www/html/wp-content/themes/twentytwentyfour/style.css")).unwrap();
    let path = "/wp-content/themes/twentytwentyfour/style.css";

    // Whoever runs the tests (root in CI): Apache's User is www-data, so lighttpd drops to
    // it, and its logs go to a folder convert gave it.
    let out = dir.path().join("as-caller");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let r = lighten(&[
        "convert",
        "--sysroot",
        &sysroot,
        "--server-name",
        "example.test",
        &site,
        "--out",
        &out.to_string_lossy(),
        "--listen",
        &listen,
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let line = run_line(&r);
    assert_eq!(line, format!("lighttpd -D -f {}/lighttpd.conf", out.display()));
    let server = start(&line, None);
    assert_eq!(get(port, "example.test", path), (200, css.clone()));
    assert_eq!(get(port, "example.test", "/.htaccess").0, 403);
    let themes = root.join("var/www/html/wp-content/themes/twentytwentyfour");
    watch_keeps_in_step(&watch_line(&r), None, port, &themes, path);
    if is_root() {
        let users = users_of(&out.to_string_lossy());
        assert!(!users.is_empty() && users.iter().all(|u| u == "www-data"), "lighttpd runs as {users:?}");
    }
    drop(server);
    let log = std::fs::read_to_string(out.join("run/error.log")).expect("lighttpd wrote its error log");
    assert!(log.contains("server started"), "{log}");

    // A normal user: lighten itself runs as that user and writes into a folder it owns.
    let user_dir = dir.path().join("as-user");
    std::fs::create_dir(&user_dir).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&user_dir, Some(65534), Some(65534)).unwrap();
    }
    let out = user_dir.join("site");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let bin = dir.path().join("lighten").to_string_lossy().into_owned();
    let mut c = as_normal_user(&bin);
    c.args(["convert", "--sysroot", &sysroot, "--server-name", "example.test", &site, "--out"])
        .arg(&out)
        .args(["--listen", &listen]);
    let r = output(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let line = run_line(&r);
    let prefix: Option<&[&str]> = if is_root() {
        Some(&["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"])
    } else {
        None
    };
    let server = start(&line, prefix);
    assert_eq!(get(port, "example.test", path), (200, css));
    watch_keeps_in_step(&watch_line(&r), prefix, port, &themes, path);
    if is_root() {
        let users = users_of(&out.to_string_lossy());
        assert!(!users.is_empty() && users.iter().all(|u| u == "nobody"), "lighttpd runs as {users:?}");
    }
    drop(server);

    // Apache's own port 80 cannot be bound by a normal user: said, and no run: line.
    let mut c = as_normal_user(&bin);
    c.args(["convert", "--sysroot", &sysroot, "--server-name", "example.test", &site, "--out"])
        .arg(user_dir.join("port-80"));
    let r = output(c);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("0.0.0.0:80, which only root may bind"), "{}", r.stderr);
    assert!(r.stderr.contains("--listen 127.0.0.1:8080"), "{}", r.stderr);
    assert!(!r.stdout.contains("run: "), "{}", r.stdout);
}

#[test]
fn a_rule_apache_refuses_at_startup_stops_convert_verify_and_wizard() {
    let root = "fixtures/regress/bad-rewrite-regex";
    let conf = format!("{root}/etc/apache2/apache2.conf");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_string_lossy().into_owned();
    let r = lighten(&["convert", "--sysroot", root, &conf, "--out", &o]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("error[bad-regex]"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("{conf}:15:13")), "{}", r.stderr);
    assert!(r.stderr.contains("nothing was converted"), "{}", r.stderr);
    assert!(!out.exists(), "convert wrote {}", out.display());
    // verify stops before it starts a server; the wizard before its first question more.
    let r = lighten(&["verify", "--sysroot", root, &conf]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains(&format!("{conf}:15:13")), "{}", r.stderr);
    let r = lighten(&[
        "wizard",
        "--sysroot",
        root,
        "--config",
        &conf,
        "--yes",
        "--out",
        &o,
        "--no-verify",
        "--no-bench",
    ]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains(&format!("{conf}:15:13")), "{}", r.stderr);
    assert!(!out.exists(), "the wizard wrote {}", out.display());
}

#[test]
fn an_unreadable_vhost_file_is_an_error_not_a_missing_vhost() {
    let (dir, root) = open_copy("regress/disabled-ssl-vhost");
    let vhost = root.join("var/www/vhosts/system/other.test/conf/httpd.conf");
    set_mode(&vhost, 0o000);
    let conf = root.join("etc/apache2/apache2.conf");
    let out = dir.path().join("out");
    // Root reads any file, so the unreadable file is tried as a normal user.
    let mut c = as_normal_user(&dir.path().join("lighten").to_string_lossy());
    c.args(["--color", "never", "convert", "--sysroot"]).arg(&root).arg(&conf).arg("--out").arg(&out);
    let r = output(c);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("other.test/conf/httpd.conf"), "{}", r.stderr);
    assert!(!out.exists(), "convert wrote {}", out.display());
}

#[test]
fn vhosts_inside_a_false_ifmodule_never_become_hosts() {
    let root = "fixtures/regress/disabled-ssl-vhost";
    let conf = format!("{root}/etc/apache2/apache2.conf");
    let r = lighten(&["inspect", "--summary", "--sysroot", root, &conf]);
    let vhosts: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("vhost ")).collect();
    assert_eq!(vhosts.len(), 2, "{}", r.stdout);
    assert!(vhosts.iter().all(|l| l.contains("*:80") && !l.contains("localhost")), "{}", r.stdout);
    assert_eq!(
        r.stdout.matches("skipped <VirtualHost *:443>: inside a false conditional").count(),
        2,
        "{}",
        r.stdout
    );

    // Both ports (no --listen): the conversion starts.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let r = lighten(&["convert", "--sysroot", root, &conf, "--out", &out.to_string_lossy()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = std::fs::read_to_string(out.join("lighttpd.conf")).unwrap();
    assert_eq!(lighten::translate::conf::repeated_conditional(&text), None, "{text}");
    assert!(!text.contains("localhost"), "a skipped vhost was converted:\n{text}");
    assert_eq!(text.matches("example\\.test").count(), 2, "one block per port:\n{text}");
    if have("lighttpd") {
        lighten::run::lighttpd::check_config(&out.join("lighttpd.conf")).unwrap();
    }
}

#[test]
fn the_repeated_conditional_check_finds_repeats() {
    use lighten::translate::conf::repeated_conditional;
    let conf = "$SERVER[\"socket\"] == \":80\" {\n  $HTTP[\"host\"] =~ \"a\" {\n  }\n  else $HTTP[\"host\"] =~ \"a\" {\n  }\n}\n";
    assert_eq!(repeated_conditional(conf).as_deref(), Some("4: $HTTP[\"host\"] =~ \"a\""));
    let ok = "$SERVER[\"socket\"] == \":80\" {\n  $HTTP[\"host\"] =~ \"a\" {\n  }\n}\n$SERVER[\"socket\"] == \":443\" {\n  $HTTP[\"host\"] =~ \"a\" {\n  }\n}\n";
    assert_eq!(repeated_conditional(ok), None);
}

#[test]
fn every_regression_fixture_converts_to_a_setup_lighttpd_accepts() {
    for f in fixtures("fixtures/regress") {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut args = f.inspect_args();
        args[0] = "convert".into();
        args.extend(["--out".into(), out.to_string_lossy().into_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = lighten(&args);
        if f.manifest.apache_refuses {
            assert_eq!(r.code, 2, "{}: {}", f.name, r.transcript());
            assert!(!out.exists(), "{}: written", f.name);
            // and Apache, the oracle, does refuse it: `apache2 -t` on the file as it is,
            // its ServerRoot and logs in a temporary folder (the sandbox rewrites modules)
            if have("apache2") {
                let conf = std::fs::read_to_string(f.dir.join(&f.manifest.config)).unwrap();
                let t = dir.path().display().to_string();
                let mut text = format!("ErrorLog {t}/error.log\nPidFile {t}/pid\nDefaultRuntimeDir {t}\n");
                for line in conf.lines() {
                    if line.trim_start().to_ascii_lowercase().starts_with("serverroot") {
                        text.push_str(&format!("ServerRoot {t}\n"));
                    } else {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
                let file = dir.path().join("apache2.conf");
                std::fs::write(&file, text).unwrap();
                let t = Command::new("apache2").arg("-t").arg("-f").arg(&file).output().unwrap();
                assert!(
                    !t.status.success(),
                    "{}: apache2 -t accepts it, yet apache_refuses says Apache does not start: {}",
                    f.name,
                    String::from_utf8_lossy(&t.stderr)
                );
            }
            continue;
        }
        assert!(r.code == 0 || r.code == 1, "{}: {}", f.name, r.transcript());
        let text = std::fs::read_to_string(out.join("lighttpd.conf")).unwrap();
        assert_eq!(lighten::translate::conf::repeated_conditional(&text), None, "{}", f.name);
        if have("lighttpd") {
            lighten::run::lighttpd::check_config(&out.join("lighttpd.conf"))
                .unwrap_or_else(|e| panic!("{}: {e}", f.name));
        }
    }
}

#[test]
fn what_the_output_needs_and_this_machine_lacks_is_named_with_its_apache_line() {
    if !lighttpd_here() {
        return;
    }
    let (dir, root) = open_copy("plesk");
    let sysroot = root.to_string_lossy().into_owned();
    let input = root.join("var/www/vhosts").to_string_lossy().into_owned();
    let convert =
        |out: &Path| lighten(&["convert", "--sysroot", &sysroot, &input, "--out", &out.to_string_lossy()]);
    // As the fixture is: the PHP-FPM socket of shop.example is not there (a warning with
    // the SetHandler line); everything else is.
    let r = convert(&dir.path().join("complete"));
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stderr.contains("plesk.conf.d/vhosts/shop.example.conf:201: PHP FastCGI socket"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("run: "), "{}", r.stdout);

    // Without the certificates and a password file.
    std::fs::remove_file(root.join("opt/psa/var/certificates/scfDfLt9Xk2Qm7Vp4Nw8")).unwrap();
    std::fs::remove_file(root.join("var/www/vhosts/static.example/.htpasswd")).unwrap();
    let out = dir.path().join("incomplete");
    let r = convert(&out);
    assert_eq!(r.code, 2, "{}", r.transcript());
    let cert = root.join("opt/psa/var/certificates/scfDfLt9Xk2Qm7Vp4Nw8");
    assert!(
        r.stderr.contains(&format!(
            "error: {sysroot}/etc/apache2/plesk.conf.d/server.conf:84: certificate: {}: does not exist",
            cert.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("static.example/.htpasswd: does not exist"), "{}", r.stderr);
    assert!(r.stderr.contains("will not start as it is"), "{}", r.stderr);
    assert!(!r.stdout.contains("run: "), "no run: line for a setup that does not start\n{}", r.stdout);
    assert!(out.join("lighttpd.conf").is_file(), "the output is still written, to be fixed");
}

#[test]
fn batch_of_a_server_with_skipped_https_vhosts_serves_with_the_printed_command() {
    if !lighttpd_here() {
        return;
    }
    let root = "fixtures/regress/disabled-ssl-vhost";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let r = lighten(&[
        "batch",
        "--sysroot",
        root,
        &format!("{root}/var/www/vhosts"),
        "--server-config",
        "/etc/apache2/apache2.conf",
        "--out",
        &out.to_string_lossy(),
        "--listen",
        &listen,
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = std::fs::read_to_string(out.join("combined/lighttpd.conf")).unwrap();
    assert_eq!(lighten::translate::conf::repeated_conditional(&text), None, "{text}");
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("run them all: "))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_else(|| panic!("{}", r.stdout))
        .to_string();
    let _server = start(&line, None);
    for host in ["example.test", "www.other.test"] {
        let (status, body) = get(port, host, "/");
        let name = host.trim_start_matches("www.");
        assert_eq!(
            (status, String::from_utf8_lossy(&body).trim()),
            (200, format!("<h1>{name}</h1>").as_str())
        );
    }
}

/// A listing never shows a name Apache's mod_autoindex leaves out (a file <FilesMatch>
/// denies): such a listing is refused; others are lighttpd's own.
#[test]
fn a_listing_never_shows_what_apache_hides() {
    if !lighttpd_here() {
        return;
    }
    let root = "fixtures/regress/listing-shows-denied";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let r = lighten(&[
        "convert",
        "--sysroot",
        root,
        &format!("{root}/etc/apache2/apache2.conf"),
        "--out",
        &out.to_string_lossy(),
        "--listen",
        &listen,
    ]);
    assert!(r.code == 0 || r.code == 1, "{}", r.transcript());
    let _server = start(&run_line(&r), None);
    let (status, body) = get(port, "example.test", "/files/");
    assert!(status == 403 && !String::from_utf8_lossy(&body).contains("backup.sql"), "{status}");
    let (status, body) = get(port, "example.test", "/open/");
    let body = String::from_utf8_lossy(&body);
    assert!(status == 200 && body.contains("a.txt") && body.contains("b.txt"), "{status}: {body}");
    assert_eq!(get(port, "example.test", "/files/backup.sql").0, 403);
    // names an IndexIgnore hides (the server's *.bak, h/.htaccess's secret-*)
    for (folder, hidden) in [("/ignored/", "config.php.bak"), ("/h/", "secret-notes.txt")] {
        let (status, body) = get(port, "example.test", folder);
        assert!(status == 403 && !String::from_utf8_lossy(&body).contains(hidden), "{folder}: {status}");
    }
}

/// Giving the runtime folder to the server's user never follows a symbolic link: a link
/// another user left as `run/error.log` keeps its target root's.
#[test]
fn the_runtime_folder_is_given_away_without_following_links() {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let target = dir.path().join("precious");
    std::fs::write(&target, "root's").unwrap();
    std::fs::create_dir_all(out.join("run")).unwrap();
    std::os::unix::fs::symlink(&target, out.join("run/error.log")).unwrap();
    let r = lighten(&[
        "convert",
        "--sysroot",
        "fixtures/wordpress",
        "--server-name",
        "example.test",
        "fixtures/wordpress/var/www/html",
        "--out",
        &out.to_string_lossy(),
        "--listen",
        "127.0.0.1:8080",
    ]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(std::fs::metadata(&target).unwrap().uid(), 0, "the link's target was given away");
    assert_eq!(std::fs::metadata(out.join("run")).unwrap().uid(), 33, "run/ belongs to www-data");
}

/// The converted site keeps its decisions (lighten_core.lua's decision cache) with what
/// they read on disk: a cached page that goes away, or a file that appears, is answered
/// as a fresh evaluation would, however often the same request came before.  lighttpd's
/// own stat cache (stat-cache-engine "simple") trusts an entry for the second it was made
/// in, hence the pauses after each change.
#[test]
fn a_kept_decision_follows_the_files_on_disk() {
    kept_decisions_follow_the_disk(false);
}

/// The same for lighten.lua's decision cache: an ErrorDocument keeps the host on the
/// interpreted tier.
#[test]
fn a_kept_decision_follows_the_files_on_disk_interpreted() {
    kept_decisions_follow_the_disk(true);
}

/// A copy of the WP Super Cache fixture to convert and serve on a port of its own; with
/// `interpreted`, a conditional Header keeps the host on lighten.lua's tier.
struct WpscCopy {
    /// Removed on drop, with the copy and the output.
    _dir: tempfile::TempDir,
    root: PathBuf,
    site: PathBuf,
    out: PathBuf,
    port: u16,
    interpreted: bool,
}

impl WpscCopy {
    fn new(interpreted: bool) -> WpscCopy {
        let (dir, root) = open_copy("wp-super-cache");
        let site = root.join("var/www/html");
        if interpreted {
            let ht = site.join(".htaccess");
            let text = std::fs::read_to_string(&ht).unwrap();
            let header = "Header set X-Tier \"interpreted\" \"expr=-n %{REQUEST_URI}\"";
            std::fs::write(&ht, format!("{header}\n{text}")).unwrap();
        }
        let out = dir.path().join("out");
        WpscCopy { _dir: dir, root, site, out, port: free_port(), interpreted }
    }

    /// `lighten convert` of the copy into `out`, listening on `port`, with `extra`
    /// arguments; it must succeed, on the tier asked for.
    fn convert(&self, extra: &[&str]) -> Output {
        let (root, site, out) =
            (self.root.to_string_lossy(), self.site.to_string_lossy(), self.out.to_string_lossy());
        let listen = format!("127.0.0.1:{}", self.port);
        let mut args =
            vec!["convert", "--sysroot", &root, "--server-name", "example.test", &site, "--out", &out];
        args.extend(["--listen", &listen]);
        args.extend(extra);
        let r = lighten(&args);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let conf = std::fs::read_to_string(self.out.join("lighttpd.conf")).unwrap();
        assert_eq!(conf.contains("interpreted by lighten.lua"), self.interpreted, "{conf}");
        r
    }
}

fn kept_decisions_follow_the_disk(interpreted: bool) {
    let settle = || std::thread::sleep(Duration::from_millis(1100));
    if !lighttpd_here() {
        return;
    }
    let w = WpscCopy::new(interpreted);
    let (site, port) = (&w.site, w.port);
    // Nothing listens there: what PHP would answer is always 503.
    let r = w.convert(&["--php-backend", &format!("127.0.0.1:{}", free_port())]);
    let _server = start(&run_line(&r), None);
    let page = site.join("wp-content/cache/supercache/example.test/index.html");
    let cached = std::fs::read(&page).unwrap();
    // WP Super Cache's page, as often as it is asked for, with an Expires three seconds
    // after the request (ExpiresByType text/html A3), however long it has been kept.
    for pause in [0, 0, 3100] {
        std::thread::sleep(Duration::from_millis(pause));
        let (status, head, body) = get_full(port, "example.test", "/");
        assert_eq!((status, body), (200, cached.clone()));
        let ahead = expires_ahead(&head);
        // (2 or 4: the second turned between the Lua's clock and lighttpd's Date, which
        // lighttpd takes from its event loop's clock; an Expires kept from the first
        // answer would be at most 1 s after the last one's Date)
        assert!((2..=4).contains(&ahead), "Expires {ahead} s after Date:\n{head}");
    }
    // The page goes: WordPress's index.php answers (503 here: no PHP backend listens).
    std::fs::remove_file(&page).unwrap();
    settle();
    for _ in 0..2 {
        assert_eq!(get(port, "example.test", "/").0, 503);
    }
    // It comes back with new text: that text.
    std::fs::write(&page, "fresh page\n").unwrap();
    set_mode(&page, 0o644);
    settle();
    assert_eq!(get(port, "example.test", "/"), (200, b"fresh page\n".to_vec()));
    // A name WordPress routes to index.php until the file exists.
    assert_eq!(get(port, "example.test", "/late.txt").0, 503);
    let late = site.join("late.txt");
    std::fs::write(&late, "late\n").unwrap();
    set_mode(&late, 0o644);
    settle();
    assert_eq!(get(port, "example.test", "/late.txt"), (200, b"late\n".to_vec()));
    std::fs::remove_file(&late).unwrap();
    settle();
    assert_eq!(get(port, "example.test", "/late.txt").0, 503);
}

/// What lighten_core.lua sends whole at the physical-path stage (a static file with the
/// headers of its folder, WP Super Cache's page) is marked so that lighttpd skips the
/// response-start hook for it; every other answer still gets the hook. The hook scripts
/// are swapped for one that labels the responses it sees.
#[test]
fn a_file_sent_whole_skips_the_response_hook_and_nothing_else_does() {
    if !lighttpd_here() {
        return;
    }
    let w = WpscCopy::new(false);
    let (out, port) = (&w.out, w.port);
    let r = w.convert(&["--php-backend", &format!("127.0.0.1:{}", free_port())]);
    let conf = std::fs::read_to_string(out.join("lighttpd.conf")).unwrap();
    // (one conditional at the end for every host: lighttpd takes at most 4,096 in all)
    assert_eq!(conf.matches("$HTTP[\"scheme\"] == \"lighten-sent\"").count(), 1, "{conf}");
    let mut hooks = 0;
    for e in std::fs::read_dir(out.join("lua")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("response") {
            std::fs::write(&p, "lighty.r.resp_header[\"X-Hook\"] = \"ran\"\nreturn 0\n").unwrap();
            hooks += 1;
        }
    }
    assert!(hooks > 0, "no response-start scripts in {}", out.display());
    let _server = start(&run_line(&r), None);
    for path in ["/wp-content/uploads/2024/beach.jpg", "/wp-content/themes/twentytwentyfour/style.css", "/"] {
        let (status, head, _) = get_full(port, "example.test", path);
        assert_eq!(status, 200, "{path}: {head}");
        assert!(!head.contains("X-Hook"), "{path} went through the response hook: {head}");
    }
    // WP Super Cache's page carries its folder's headers, set before it was sent.
    let (_, head, _) = get_full(port, "example.test", "/");
    assert!(head.contains("Cache-Control: max-age=3, must-revalidate"), "{head}");
    // PHP (503: no backend listens) and a denial.
    for (path, want) in [("/index.php", 503), ("/.htaccess", 403)] {
        let (status, head, _) = get_full(port, "example.test", path);
        assert_eq!(status, want, "{path}: {head}");
        assert!(head.contains("X-Hook: ran"), "{path} skipped the response hook: {head}");
    }
}

/// The safety net for .htaccess files written after the conversion (a security plugin
/// adds a deny rule, a new folder gets its own): the converted site refuses (503) every
/// request whose walk meets one, naming the file in the error log, until it is converted
/// again; the rest of the site keeps serving. Both tiers.
#[test]
fn an_htaccess_written_after_the_conversion_fails_closed() {
    htaccess_written_later(false);
}

#[test]
fn an_htaccess_written_after_the_conversion_fails_closed_interpreted() {
    htaccess_written_later(true);
}

fn htaccess_written_later(interpreted: bool) {
    let settle = || std::thread::sleep(Duration::from_millis(1100));
    if !lighttpd_here() {
        return;
    }
    let w = WpscCopy::new(interpreted);
    let (site, out, port) = (&w.site, &w.out, w.port);
    let ht = site.join(".htaccess");
    // A folder the site refuses, converted as it is; a link to it is made later.
    let secret = site.join("secret");
    std::fs::create_dir(&secret).unwrap();
    set_mode(&secret, 0o755);
    for (name, text) in [(".htaccess", "Require all denied\n"), ("file.txt", "secret\n")] {
        std::fs::write(secret.join(name), text).unwrap();
        set_mode(&secret.join(name), 0o644);
    }
    let r = w.convert(&[]);
    let image = "/wp-content/uploads/2024/beach.jpg";
    let css = "/wp-content/themes/twentytwentyfour/style.css";
    {
        let _server = start(&run_line(&r), None);
        assert_eq!(get(port, "example.test", image).0, 200);
        assert_eq!(get(port, "example.test", css).0, 200);
        // A new .htaccess in the uploads folder: what is below it is refused, the rest served.
        let uploads = site.join("wp-content/uploads/.htaccess");
        std::fs::write(&uploads, "Require all denied\n").unwrap();
        set_mode(&uploads, 0o644);
        settle();
        assert_eq!(get(port, "example.test", image).0, 503);
        assert_eq!(get(port, "example.test", "/wp-content/uploads/2024/").0, 503);
        assert_eq!(get(port, "example.test", css).0, 200);
        // A symbolic link made after the conversion to the refused folder: Apache follows
        // it and reads the folder's .htaccess under the link's name (403); the converted
        // site meets an .htaccess it did not convert there and refuses (503), never 200.
        assert_eq!(get(port, "example.test", "/secret/file.txt").0, 403);
        std::os::unix::fs::symlink("secret", site.join("open")).unwrap();
        settle();
        assert_eq!(get(port, "example.test", "/open/file.txt").0, 503);
        assert_eq!(get(port, "example.test", "/open/").0, 503);
        // The WordPress .htaccess edited in place: the whole site is refused.
        let text = std::fs::read_to_string(&ht).unwrap();
        std::fs::write(&ht, format!("{text}\n<Files \"style.css\">\nRequire all denied\n</Files>\n"))
            .unwrap();
        settle();
        assert_eq!(get(port, "example.test", css).0, 503);
        assert_eq!(get(port, "example.test", "/").0, 503);
        assert_eq!(get(port, "example.test", "/%77p-content/themes/twentytwentyfour/style.css").0, 503);
        let log = std::fs::read_to_string(out.join("run/error.log")).unwrap();
        for f in [&uploads, &ht] {
            let line = format!("{} has changed since the conversion", f.display());
            assert!(log.contains(&line), "no line naming {}: {log}", f.display());
        }
    }
    // Converted again, Apache's answers come back: the new deny rules are in force.
    let r = w.convert(&[]);
    let _server = start(&run_line(&r), None);
    assert_eq!(get(port, "example.test", image).0, 403);
    assert_eq!(get(port, "example.test", css).0, 403);
    assert_eq!(get(port, "example.test", "/open/file.txt").0, 403);
}

/// `lighten verify --attack` sends the attacker variants of every request Apache refuses
/// and says how many there were and how many the converted site served (none).
#[test]
fn verify_attack_sends_the_variants_of_refused_requests() {
    if !lighttpd_here() {
        return;
    }
    let (_dir, root) = open_copy("wp-super-cache");
    let site = root.join("var/www/html");
    let r = lighten(&[
        "verify",
        "--sysroot",
        &root.to_string_lossy(),
        "--server-name",
        "example.test",
        &site.to_string_lossy(),
        "--attack",
        "--json",
    ]);
    // 0: the variants count only when they fail open (3), and the rest agrees.
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let all = v["comparisons"].as_array().unwrap();
    let attacks: Vec<&serde_json::Value> = all.iter().filter(|c| c.get("attack").is_some()).collect();
    assert!(attacks.len() >= 100, "only {} variants of {} requests", attacks.len(), all.len());
    // Variants of the refused .htaccess request, written as an attacker would.
    for what in [
        "a letter percent-encoded",
        "/./ before the name",
        "the Host upper-cased",
        "PATH_INFO after the name",
    ] {
        assert!(attacks.iter().any(|c| c["attack"] == what), "no variant: {what}");
    }
    assert!(all.iter().all(|c| c["fail_open"] == false), "a fail-open: {}", r.stdout);
}

#[test]
fn input_that_is_no_apache_setup_is_refused_with_what_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    let out = dir.path().join("out");
    let (e, o) = (empty.to_string_lossy().into_owned(), out.to_string_lossy().into_owned());
    let r = lighten(&["convert", &e, "--out", &o]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("it holds no file") && r.stderr.contains("apache2.conf"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written");
    // Apache's own folder given where a file or a site is expected: the file to pass.
    let root = "fixtures/debian-stock";
    for cmd in ["inspect", "convert"] {
        let mut args = vec![cmd, "--sysroot", root, "fixtures/debian-stock/etc/apache2"];
        if cmd == "convert" {
            args.extend(["--out", &o]);
        }
        let r = lighten(&args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(
            r.stderr.contains("Apache's configuration folder")
                && r.stderr.contains("pass the file: fixtures/debian-stock/etc/apache2/apache2.conf"),
            "{}",
            r.stderr
        );
    }
    assert!(!out.exists(), "nothing is written");
    // A copy of a server's files given as if it were a site: the commands to run instead,
    // and they run as printed.
    let r = lighten(&["convert", "fixtures/plesk", "--out", &o]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("a copy of a server's files"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written");
    let (_, suggested) = r.stderr.trim().split_once("pass what is in it: ").expect("a command to run");
    assert!(
        suggested.starts_with("--sysroot ") && suggested.ends_with("fixtures/plesk/var/www/vhosts"),
        "{suggested}"
    );
    let mut args: Vec<&str> = vec!["inspect"];
    args.extend(suggested.split(' '));
    let r = lighten(&args);
    assert!(r.code <= 1, "the suggested command runs: {}", r.transcript());
    assert!(r.stdout.contains("shop.example"), "{}", r.stdout);
}

/// `lighten convert` of the fixture copy at `root` (its etc/apache2/apache2.conf) into
/// `dir`/out with `--listen listen`: the output and that folder.
fn convert_listening(dir: &Path, root: &Path, listen: &str) -> (Output, PathBuf) {
    let out = dir.join("out");
    let conf = root.join("etc/apache2/apache2.conf");
    let args =
        ["convert", "--sysroot", &*root.to_string_lossy(), &*conf.to_string_lossy(), "--listen", listen];
    let r = lighten(&[&args[..], &["--out", &*out.to_string_lossy()]].concat());
    (r, out)
}

/// The status of `GET path` with `host` on `ip:port`, once something answers there.
fn status_on(ip: &str, port: u16, host: &str, path: &str) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect((ip, port)) {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            if let Some(status) =
                String::from_utf8_lossy(&buf).split_whitespace().nth(1).and_then(|c| c.parse().ok())
            {
                return status;
            }
        }
        assert!(Instant::now() < deadline, "nothing answers on {ip}:{port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Apache chooses a vhost by the connection's address first, then by name among that
/// address's vhosts (fixtures/regress/ip-vhost-beside-wildcard: a refusing
/// `<VirtualHost 127.0.0.1:80>` beside granting `*:80` ones). Both servers listen on every
/// address of a port here, and are asked on 127.0.0.1 (the IP-based vhost's address) and
/// 127.0.0.2 (an address only the `*:80` vhosts serve) with each Host: the converted
/// lighttpd answers as Apache, or refuses where Apache's choice is another vhost's.
#[test]
fn an_ip_based_vhost_answers_by_address_as_apache_does() {
    if !crate::helpers::servers_present() {
        return;
    }
    let (dir, root) = open_copy("regress/ip-vhost-beside-wildcard");
    let (pa, pl) = (free_port(), free_port());
    // Apache on its own configuration, the port and paths moved into the copy.
    let run = dir.path().join("apache-run");
    std::fs::create_dir_all(&run).unwrap();
    set_mode(&run, 0o777);
    let r = root.display();
    let conf = std::fs::read_to_string(root.join("etc/apache2/apache2.conf"))
        .unwrap()
        .replace("ServerRoot \"/etc/apache2\"", &format!("ServerRoot \"{}\"", run.display()))
        .replace("Listen 80", &format!("Listen 0.0.0.0:{pa}"))
        .replace(":80>", &format!(":{pa}>"))
        .replace("/etc/mime.types", &format!("{r}/etc/mime.types"))
        .replace("/var/www", &format!("{r}/var/www"));
    let rd = run.display();
    let user = if is_root() { "User www-data\nGroup www-data\n" } else { "" };
    let conf = format!(
        "{conf}\nPidFile {rd}/apache.pid\nErrorLog {rd}/error.log\nDefaultRuntimeDir {rd}\nMutex file:{rd} default\n{user}"
    );
    std::fs::write(run.join("apache2.conf"), conf).unwrap();
    let _apache = spawn_group(
        Command::new("apache2")
            .args(["-f", &format!("{rd}/apache2.conf"), "-DFOREGROUND"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    // The conversion, listening on every address of its port.
    let (r, out) = convert_listening(dir.path(), &root, &format!("80=0.0.0.0:{pl}"));
    // exit 1: written, with the approximation the report names
    assert_eq!(r.code, 1, "{}", r.transcript());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("vhost-address"), "{report}");
    let _lighttpd = start(&run_line(&r), None);
    let mut seen = std::collections::BTreeSet::new();
    for ip in ["127.0.0.1", "127.0.0.2"] {
        for host in ["a.test", "b.test", "c.test", "www.c.test", "unknown.test"] {
            let (a, l) = (status_on(ip, pa, host, "/page.txt"), status_on(ip, pl, host, "/page.txt"));
            assert!(a == l || (a / 100 != 2 && l == 403), "{ip} Host {host}: Apache {a}, lighttpd {l}");
            assert!(l / 100 != 2 || a / 100 == 2, "{ip} Host {host}: Apache {a}, lighttpd {l} (fail-open)");
            seen.insert((ip, a));
        }
    }
    // Both addresses were asked where Apache refuses (127.0.0.1) and where it serves.
    assert!(seen.contains(&("127.0.0.1", 403)) && seen.contains(&("127.0.0.2", 200)), "{seen:?}");
}

/// Apache's `Listen [::]:80` takes IPv4 connections too (Linux's net.ipv6.bindv6only=0);
/// the converted lighttpd serves the same hosts on the IPv4 wildcard beside its
/// IPv6-only socket (review 7: IPv4 clients were refused a connection).
#[test]
fn an_ipv6_wildcard_listener_serves_ipv4_clients_too() {
    if !lighttpd_here() {
        return;
    }
    let (dir, root) = open_copy("regress/ip-vhost-beside-wildcard");
    let port = free_port();
    let (r, _) = convert_listening(dir.path(), &root, &format!("80=[::]:{port}"));
    assert!(r.code == 0 || r.code == 1, "{}", r.transcript());
    let _lighttpd = start(&run_line(&r), None);
    // (on 127.0.0.2 and ::1, where Apache picks among the *:80 vhosts; on 127.0.0.1 it
    // picks the refusing a.test, and so does the guard)
    for ip in ["127.0.0.2", "::1"] {
        assert_eq!(status_on(ip, port, "b.test", "/page.txt"), 200, "on {ip}");
    }
    assert_eq!(status_on("127.0.0.1", port, "b.test", "/page.txt"), 403);
}
