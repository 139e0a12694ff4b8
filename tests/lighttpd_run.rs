//! lighttpd in the sandbox: its configuration and Lua checks, a start that serves files
//! and mod_magnet answers, failures that say lighttpd's own words, and nothing left
//! behind.

use lighten::run::lighttpd::{self, RunningLighttpd};
use lighten::run::sandbox::{Sandbox, free_port};
use lighten::run::{http, process};
use std::path::{Path, PathBuf};

/// Whether lighttpd is here; in CI its absence is a failure.
fn have_lighttpd() -> bool {
    if std::process::Command::new("lighttpd").arg("-v").output().is_ok() {
        return true;
    }
    // CI installs lighttpd (scripts/setup.sh); only a developer's machine may lack it.
    assert!(std::env::var_os("CI").is_none(), "lighttpd is not installed");
    eprintln!("skipped: lighttpd is not installed");
    false
}

/// Answers `/lua` itself and lets everything else through to the static file handler.
const LUA: &str = r#"local r = lighty.r
if r.req_attr["uri.path"] == "/lua" then
  r.resp_body.set({"from lua"})
  return 200
end
return 0
"#;

/// A docroot with `hello.txt` and a configuration serving it on `port`; `extra` is
/// appended. Returns the configuration's path.
fn site(sb: &Sandbox, port: u16, extra: &str) -> PathBuf {
    let dir = sb.path();
    let docroot = dir.join("htdocs");
    std::fs::create_dir_all(&docroot).unwrap();
    std::fs::write(docroot.join("hello.txt"), "hello\n").unwrap();
    let lua = dir.join("site.lua");
    std::fs::write(&lua, LUA).unwrap();
    let conf = format!(
        r#"server.modules = ( "mod_magnet" )
server.bind = "127.0.0.1"
server.port = {port}
server.document-root = "{docroot}"
server.errorlog = "{dir}/logs/lighttpd-error.log"
server.pid-file = "{dir}/run/lighttpd.pid"
mimetype.assign = ( ".txt" => "text/plain" )
magnet.attract-physical-path-to = ( "{lua}" )
{extra}"#,
        docroot = docroot.display(),
        dir = dir.display(),
        lua = lua.display(),
    );
    let path = dir.join("lighttpd.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

fn have_php_cgi() -> bool {
    if std::process::Command::new("php-cgi").arg("-v").output().is_ok() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "php-cgi is not installed");
    eprintln!("skipped: php-cgi is not installed");
    false
}

/// [`site`] with `.php` served by a php-cgi that lighttpd spawns, and `hi.php`.
fn php_site(sb: &Sandbox, port: u16) -> PathBuf {
    let fastcgi = format!(
        r#"server.modules += ( "mod_fastcgi" )
fastcgi.server = ( ".php" => ((
  "bin-path" => "/usr/bin/php-cgi",
  "socket" => "{}/run/php.sock",
  "max-procs" => 1,
  "bin-environment" => ( "PHP_FCGI_CHILDREN" => "2" )
)))
"#,
        sb.path().display()
    );
    let conf = site(sb, port, &fastcgi);
    std::fs::write(sb.path().join("htdocs/hi.php"), "<?php echo 'php ' . (1 + 1);").unwrap();
    conf
}

fn get(l: &RunningLighttpd, target: &str) -> http::HttpResponse {
    let host = [("Host".to_string(), "localhost".to_string())];
    http::send(l.addr(), "GET", target, &host, b"")
        .unwrap_or_else(|e| panic!("GET {target}: {e}\n{}", l.log_tail()))
}

fn start_err(conf: &Path, sb: &Sandbox, port: u16) -> String {
    match lighttpd::start(conf, sb, port) {
        Ok(l) => panic!("lighttpd started on 127.0.0.1:{}", l.port),
        Err(e) => e.to_string(),
    }
}

#[test]
fn lighttpd_serves_files_and_lua_and_leaves_nothing_behind() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let dir = sb.path().display().to_string();
    let port = free_port().unwrap();
    let conf = site(&sb, port, "");
    lighttpd::check_config(&conf).unwrap();
    lighttpd::check_lua(&sb.path().join("site.lua")).unwrap();
    {
        let l = lighttpd::start(&conf, &sb, port).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.port, port);
        let r = get(&l, "/hello.txt");
        assert_eq!((r.status, r.body.as_slice()), (200, b"hello\n".as_slice()));
        assert_eq!(r.header("Content-Type"), Some("text/plain"));
        let r = get(&l, "/lua");
        assert_eq!((r.status, String::from_utf8_lossy(&r.body).as_ref()), (200, "from lua"));
        assert_eq!(get(&l, "/missing.txt").status, 404);
        assert!(!process::processes_mentioning(&dir).is_empty(), "lighttpd runs while its handle lives");
    }
    assert_eq!(process::processes_mentioning(&dir), Vec::<u32>::new(), "a process outlived its handle");
    let log = std::fs::read_to_string(sb.path().join("logs/lighttpd-error.log")).unwrap();
    assert!(log.contains("graceful shutdown started"), "SIGINT stops lighttpd gracefully:\n{log}");
}

/// Stopping lighttpd also stops the php-cgi processes mod_fastcgi spawned for it. They
/// name no sandbox path and php-cgi makes a session of its own for its workers, so they
/// are found as lighttpd's child and its process group.
#[test]
fn fastcgi_children_stop_with_lighttpd() {
    if !have_lighttpd() || !have_php_cgi() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let conf = php_site(&sb, port);
    let php_group = {
        let l = lighttpd::start(&conf, &sb, port).unwrap_or_else(|e| panic!("{e}"));
        let r = get(&l, "/hi.php");
        assert_eq!((r.status, String::from_utf8_lossy(&r.body).as_ref()), (200, "php 2"));
        php_group(&l)
    };
    assert_eq!(lighttpd::live_members(php_group), Vec::<u32>::new(), "a FastCGI child outlived lighttpd");
}

/// A lighttpd that dies without stopping its backends leaves them to init; dropping its
/// handle still stops them.
#[test]
fn fastcgi_children_of_a_killed_lighttpd_are_stopped_too() {
    if !have_lighttpd() || !have_php_cgi() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let conf = php_site(&sb, port);
    let l = lighttpd::start(&conf, &sb, port).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get(&l, "/hi.php").status, 200);
    let php_group = php_group(&l);
    // SAFETY: kill(2) on the process id of a child this test started.
    unsafe {
        libc::kill(l.pid() as i32, libc::SIGKILL);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(lighttpd::live_members(php_group).len(), 3, "SIGKILL leaves the backends running");
    drop(l);
    assert_eq!(lighttpd::live_members(php_group), Vec::<u32>::new(), "a FastCGI child outlived its handle");
}

/// The process group php-cgi made for itself and its workers, once they all run.
fn php_group(l: &RunningLighttpd) -> i32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let php = children(l.pid());
        if let [(pid, pgid)] = php[..]
            && pid as i32 == pgid
            && lighttpd::live_members(pgid).len() == 3
        {
            return pgid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "php-cgi should lead a group of its own with PHP_FCGI_CHILDREN=2 workers: {php:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Children of `parent` with their process groups (fields 4 and 5 of /proc/PID/stat).
fn children(parent: u32) -> Vec<(u32, i32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name in parentheses may hold spaces: count fields after its end.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let f: Vec<&str> = rest.split(' ').collect();
        if f.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent)
            && let Some(pgid) = f.get(2).and_then(|g| g.parse::<i32>().ok())
        {
            out.push((pid, pgid));
        }
    }
    out
}

#[test]
fn luac_rejects_a_broken_script_with_its_message() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let bad = sb.path().join("bad.lua");
    std::fs::write(&bad, "if lighty.r.req_attr[\"uri.path\"] == \"/\" then\n  return 200\n").unwrap();
    let e = lighttpd::check_lua(&bad).unwrap_err();
    assert!(e.contains("bad.lua:3") && e.contains("'end' expected"), "{e}");
    let e = lighttpd::check_lua(&sb.path().join("none.lua")).unwrap_err();
    assert!(e.contains("cannot open"), "{e}");
}

/// lighttpd ignores `url.rewrite-once` without mod_rewrite, and `-tt` exits 0 (notes §0.5).
#[test]
fn a_directive_of_an_unlisted_module_fails_the_check() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let conf = site(&sb, port, "url.rewrite-once = ( \"^/old$\" => \"/hello.txt\" )\n");
    let e = lighttpd::check_config(&conf).unwrap_err();
    assert!(e.contains("lighttpd ignores url.rewrite-once"), "{e}");
    assert!(e.contains("WARNING: unknown config-key: url.rewrite-once (ignored)"), "{e}");
    let e = start_err(&conf, &sb, port);
    assert!(e.contains("url.rewrite-once"), "{e}");
    // Listed, the same key is fine.
    let conf = site(
        &sb,
        port,
        "server.modules += ( \"mod_rewrite\" )\nurl.rewrite-once = ( \"^/old$\" => \"/hello.txt\" )\n",
    );
    lighttpd::check_config(&conf).unwrap();
}

#[test]
fn a_missing_module_fails_the_check_with_lighttpds_message() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let conf = site(&sb, free_port().unwrap(), "server.modules += ( \"mod_no_such_thing\" )\n");
    let e = lighttpd::check_config(&conf).unwrap_err();
    assert!(e.contains("mod_no_such_thing.so") && e.contains("loading plugins finally failed"), "{e}");
}

#[test]
fn a_taken_port_fails_the_start_with_lighttpds_message() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let dir = sb.path().display().to_string();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port();
    let conf = site(&sb, port, "");
    let e = start_err(&conf, &sb, port);
    assert!(e.contains("can't bind to socket") && e.contains("Address already in use"), "{e}");
    assert_eq!(process::processes_mentioning(&dir), Vec::<u32>::new(), "a failed start left a process");
}

#[test]
fn an_error_log_that_cannot_be_opened_fails_the_start_with_lighttpds_message() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let missing = sb.path().join("no/such/folder/error.log");
    let conf = site(&sb, port, &format!("server.errorlog := \"{}\"\n", missing.display()));
    // `-tt` does not open the error log: only the start finds out.
    lighttpd::check_config(&conf).unwrap();
    let e = start_err(&conf, &sb, port);
    assert!(e.contains("opening errorlog") && e.contains("No such file or directory"), "{e}");
}

/// lighttpd 1.4.69 does not check `server.document-root` at start: it runs and answers
/// 404, so a wrong docroot shows in the answers, not in `start`.
#[test]
fn a_missing_docroot_is_not_an_error_for_lighttpd() {
    if !have_lighttpd() {
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let missing = sb.path().join("no-such-docroot");
    let conf = site(&sb, port, &format!("server.document-root := \"{}\"\n", missing.display()));
    lighttpd::check_config(&conf).unwrap();
    let l = lighttpd::start(&conf, &sb, port).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get(&l, "/hello.txt").status, 404);
    assert_eq!(get(&l, "/lua").status, 200, "mod_magnet still runs at the physical stage");
}

/// As root lighttpd stays root when `server.username` is unset, and refuses "root" itself
/// (notes §6): the refusal is caught by the check, before anything starts.
#[test]
fn server_username_root_is_refused() {
    if !have_lighttpd() {
        return;
    }
    // SAFETY: geteuid() has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can be refused root");
        return;
    }
    let sb = Sandbox::new("lighten-lighttpd-").unwrap();
    let port = free_port().unwrap();
    let conf = site(&sb, port, "server.username = \"root\"\n");
    let e = start_err(&conf, &sb, port);
    assert!(e.contains("I will not set uid to 0"), "{e}");
}
