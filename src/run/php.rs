//! A PHP FastCGI backend for a sandbox: `php-cgi -b 127.0.0.1:PORT`.
//!
//! In echo mode every PHP request answers with the CGI variables it received (a prepended
//! script from templates/echo.php), which is how the differential tests see what Apache or
//! lighttpd handed to PHP.

use super::process::Child;
use super::sandbox::{Sandbox, free_port, wait_for_port};
use std::io;
use std::process::{Command, Stdio};
use std::time::Duration;

pub const ECHO_SCRIPT: &str = include_str!("../../templates/echo.php");

pub struct Php {
    pub port: u16,
    _child: Child,
}

impl Php {
    pub fn start(sandbox: &Sandbox, echo: bool) -> io::Result<Php> {
        let port = free_port()?;
        let mut cmd = Command::new("php-cgi");
        cmd.arg("-b").arg(format!("127.0.0.1:{port}"));
        // php-cgi keeps its default cgi.fix_pathinfo=1: behind mod_proxy_fcgi's GENERIC
        // backend type it receives SCRIPT_FILENAME with PATH_INFO appended and splits it,
        // which gives PHP the variables php-fpm would see in production.
        if echo {
            let script = sandbox.path().join("echo.php");
            std::fs::write(&script, ECHO_SCRIPT)?;
            cmd.arg("-d").arg(format!("auto_prepend_file={}", script.display()));
        }
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("PHP_FCGI_CHILDREN", "4")
            .env("PHP_FCGI_MAX_REQUESTS", "100000")
            .env("TMPDIR", sandbox.path().join("tmp"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(sandbox.path().join("logs/php.log"))?));
        let mut child = Child::spawn(cmd, "php-cgi")?;
        if !wait_for_port(port, Duration::from_secs(10)) {
            let status = child.exited();
            return Err(io::Error::other(format!(
                "php-cgi did not start on 127.0.0.1:{port} ({status:?}): {}",
                super::sandbox::tail(&sandbox.path().join("logs/php.log"), 10)
            )));
        }
        Ok(Php { port, _child: child })
    }
}
