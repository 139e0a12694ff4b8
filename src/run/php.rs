//! A PHP FastCGI backend for a sandbox: php-fpm when it is installed (as on a production
//! server), else `php-cgi -b`.
//!
//! In echo mode every PHP request answers with the CGI variables it received (a prepended
//! script from templates/echo.php), which is how the differential tests see what Apache or
//! lighttpd handed to PHP.

use super::process::Child;
use super::sandbox::{Sandbox, free_port, tail, wait_for_port};
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub const ECHO_SCRIPT: &str = include_str!("../../templates/echo.php");

/// Which program serves PHP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhpKind {
    /// php-fpm: Apache talks to it with mod_proxy_fcgi's default (FPM) backend type.
    Fpm,
    /// php-cgi -b: needs `ProxyFCGIBackendType GENERIC`.
    Cgi,
}

pub struct Php {
    pub port: u16,
    pub kind: PhpKind,
    _child: Child,
}

impl Php {
    pub fn start(sandbox: &Sandbox, echo: bool) -> io::Result<Php> {
        let port = free_port()?;
        let echo_path = sandbox.path().join("echo.php");
        if echo {
            std::fs::write(&echo_path, ECHO_SCRIPT)?;
        }
        let (mut child, kind, log) = match crate::translate::fpm::installed().map(str::to_string) {
            Some(fpm) => start_fpm(&fpm, sandbox, port, echo.then_some(echo_path.as_path()))?,
            None => start_cgi(sandbox, port, echo.then_some(echo_path.as_path()))?,
        };
        if !wait_for_port(port, Duration::from_secs(10)) {
            let status = child.exited();
            return Err(io::Error::other(format!(
                "PHP did not start on 127.0.0.1:{port} ({status:?}): {}",
                tail(&log, 10)
            )));
        }
        Ok(Php { port, kind, _child: child })
    }
}

fn start_fpm(
    fpm: &str,
    sandbox: &Sandbox,
    port: u16,
    echo: Option<&Path>,
) -> io::Result<(Child, PhpKind, std::path::PathBuf)> {
    let sb = sandbox.path().display().to_string();
    let log = sandbox.path().join("logs/php-fpm.log");
    // SAFETY: geteuid() has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut conf = format!(
        "[global]\npid = {sb}/run/php-fpm.pid\nerror_log = {}\ndaemonize = no\n\n[sandbox]\nlisten = 127.0.0.1:{port}\npm = static\npm.max_children = 4\ncatch_workers_output = yes\nphp_admin_value[sys_temp_dir] = {sb}/tmp\nphp_admin_value[upload_tmp_dir] = {sb}/tmp\n",
        log.display()
    );
    if root {
        conf.push_str("user = www-data\ngroup = www-data\n");
    }
    if let Some(e) = echo {
        conf.push_str(&format!("php_admin_value[auto_prepend_file] = {}\n", e.display()));
    }
    let conf_path = sandbox.path().join("run/php-fpm.conf");
    std::fs::write(&conf_path, conf)?;
    let mut cmd = Command::new(fpm);
    cmd.arg("--nodaemonize").arg("--fpm-config").arg(&conf_path).arg("-n");
    if root {
        cmd.arg("--allow-to-run-as-root");
    }
    cmd.env_clear().env("PATH", "/usr/bin:/bin").env("TMPDIR", sandbox.path().join("tmp"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(sandbox.path().join("logs/php-fpm.stderr"))?));
    Ok((Child::spawn(cmd, "php-fpm")?, PhpKind::Fpm, log))
}

fn start_cgi(
    sandbox: &Sandbox,
    port: u16,
    echo: Option<&Path>,
) -> io::Result<(Child, PhpKind, std::path::PathBuf)> {
    let log = sandbox.path().join("logs/php.log");
    let mut cmd = Command::new("php-cgi");
    cmd.arg("-b").arg(format!("127.0.0.1:{port}"));
    if let Some(e) = echo {
        cmd.arg("-d").arg(format!("auto_prepend_file={}", e.display()));
    }
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("PHP_FCGI_CHILDREN", "4")
        .env("PHP_FCGI_MAX_REQUESTS", "100000")
        .env("TMPDIR", sandbox.path().join("tmp"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log)?));
    Ok((Child::spawn(cmd, "php-cgi")?, PhpKind::Cgi, log))
}
