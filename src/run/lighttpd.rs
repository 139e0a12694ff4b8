//! Real lighttpd 1.4.69 on a configuration file, in a sandbox: check the configuration
//! and the Lua scripts, start the server in the foreground, wait until it answers, stop
//! it with everything it spawned.
//!
//! This module does not write lighttpd configurations (that is `emit`'s job) and does not
//! read them beyond one key: `server.errorlog`, to show its tail when the server fails.
//! Paths in the configuration are the caller's business; relative ones resolve against
//! the sandbox folder, which is lighttpd's working directory.
//!
//! Facts it relies on, from the shared notes `lighttpd-target.md` (section numbers), checked
//! again on Debian 12's lighttpd 1.4.69 when this was written:
//!
//! - `lighttpd -tt` loads and initialises the listed modules, so a missing module, a bad
//!   regex of a listed module or `server.username = "root"` make it exit non-zero (§6).
//! - A directive whose module is not in `server.modules` (or a misspelt key) is ignored
//!   with only `WARNING: unknown config-key: KEY (ignored)` on stderr, and `-tt` still
//!   exits 0 (§0.5, §10.1). [`check_config`] turns that warning into an error, because a
//!   translation that relies on an ignored directive answers differently.
//! - `-tt` does not load Lua scripts: a syntax error shows only at request time, as a 500
//!   (§0.6, §10.13). [`check_lua`] runs `luac5.4 -p`, one file per call, because Debian's
//!   luac 5.4.4 aborts ("double free") when given several (§6).
//! - `lighttpd -D` stays in the foreground. Run as root with no `server.username`, it
//!   keeps running as root, and so do the FastCGI children it spawns;
//!   `server.username = "root"` is refused ("I will not set uid to 0"). So configurations
//!   for the sandbox leave `server.username` unset (§6).
//! - SIGINT starts a graceful shutdown that also stops the FastCGI children lighttpd
//!   spawned; a second SIGINT during it shuts down at once (§6; server.c's signal
//!   handler), and so does SIGTERM, also stopping them. [`RunningLighttpd::stop`] sends
//!   both SIGINTs, then kills the whole process group.
//! - Not in the notes: a php-cgi that lighttpd spawns with `PHP_FCGI_CHILDREN` calls
//!   `setsid()` (php-src cgi_main.c, to kill its workers as a group), some milliseconds
//!   after the fork, so it and its workers leave lighttpd's process group and a signal
//!   to that group does not reach them. `start` and `stop` note lighttpd's children, and
//!   `stop` kills the groups they lead if they outlive lighttpd (one that died or hung
//!   before it could stop them). The spawn happens after the port accepts connections.
//! - Messages lighttpd prints before it opens `server.errorlog` (a port already taken, an
//!   error log that cannot be opened) go to stderr; later ones go to the error log. A
//!   missing `server.document-root` is no error: lighttpd starts and answers 404.

use super::process::Child;
use super::sandbox::Sandbox;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the programs lighten starts here are looked for (their `PATH`).
const SEARCH: &str = "/usr/sbin:/usr/bin:/bin";

/// How long [`start`] waits for the port to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful shutdown may take before lighttpd is told to stop at once.
const GRACE: Duration = Duration::from_secs(2);
/// Lines of stderr and of the error log shown when lighttpd fails.
const TAIL_LINES: usize = 15;

/// The warning lighttpd prints for a key no loaded module claims.
const UNKNOWN_KEY: &str = "WARNING: unknown config-key: ";

/// `lighttpd -tt -f conf`: the configuration parses and every listed module accepts its
/// settings. Keys lighttpd ignores (`WARNING: unknown config-key`) are errors too.
pub fn check_config(conf: &Path) -> Result<(), String> {
    let out = test_config(conf).map_err(|e| format!("lighttpd could not run: {e}"))?;
    let text = [String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)]
        .iter()
        .flat_map(|t| t.lines())
        .map(strip_timestamp)
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if !out.status.success() {
        // lighttpd 1.4.69 stops at its own assertion beyond 4,096 conditionals
        // (config_plugin_values_init): say what it means.
        let hint = if text.contains("sizeof(matches) >= srv->config_context->used") {
            "\nlighttpd takes at most 4,096 conditional blocks ($SERVER, $HTTP) in one configuration, and \
             this one has more: serve the accounts from several lighttpd instances (lighten batch --shard K/N \
             gives each its share)"
        } else {
            ""
        };
        return Err(format!("lighttpd -tt -f {} failed ({}):\n{text}{hint}", conf.display(), out.status));
    }
    let ignored = unknown_keys(&text);
    if !ignored.is_empty() {
        return Err(format!(
            "lighttpd ignores {} in {}: unknown config-key (its module is not in server.modules, \
             or the key is misspelt):\n{text}",
            ignored.join(", "),
            conf.display()
        ));
    }
    Ok(())
}

/// `lighttpd -tt -f conf` with a clean environment, its output captured.
pub(crate) fn test_config(conf: &Path) -> io::Result<std::process::Output> {
    Command::new(super::process::program("lighttpd", SEARCH))
        .arg("-tt")
        .arg("-f")
        .arg(conf)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
}

/// Keys named by `WARNING: unknown config-key: KEY (ignored)` lines, in order.
fn unknown_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once(UNKNOWN_KEY))
        .map(|(_, rest)| rest.trim().trim_end_matches("(ignored)").trim().to_string())
        .collect()
}

/// lighttpd's log lines start with `YYYY-MM-DD HH:MM:SS: `; without it, messages are the
/// same from run to run.
pub(crate) fn strip_timestamp(line: &str) -> &str {
    let b = line.as_bytes();
    let stamped = b.len() > 21
        && b[..19].iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b' ',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
        && &b[19..21] == b": ";
    if stamped { &line[21..] } else { line }
}

/// `luac5.4 -p file`: the Lua script parses. One file per call (Debian's luac aborts
/// when given several).
pub fn check_lua(file: &Path) -> Result<(), String> {
    let out = Command::new(super::process::program("luac5.4", SEARCH))
        .arg("-p")
        .arg("--")
        .arg(file)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("luac5.4 could not run: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let msg = [String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)]
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    Err(format!("luac5.4 -p {} failed ({}): {msg}", file.display(), out.status))
}

/// A lighttpd started by [`start`]; stopped with its FastCGI children when dropped.
pub struct RunningLighttpd {
    pub port: u16,
    pub config_path: PathBuf,
    /// The configuration's `server.errorlog`, when it names a file.
    pub error_log: Option<PathBuf>,
    /// lighttpd's stdout and stderr: what it says before its error log is open.
    pub stderr_log: PathBuf,
    child: Child,
    /// lighttpd's children seen so far: FastCGI backends (see [`children`]).
    backends: Vec<u32>,
    stopped: bool,
}

impl RunningLighttpd {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// lighttpd's process id, which is also its process group's. A FastCGI backend
    /// that leads a group of its own (php-cgi with workers) is not in it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Graceful shutdown (SIGINT: lighttpd stops its FastCGI children), then at once
    /// (a second SIGINT), then SIGTERM and SIGKILL to whatever is left of the group,
    /// then SIGKILL to backend groups that outlive lighttpd. Waits for all of them.
    pub fn stop(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        // Seen now and at start: a lighttpd that died leaves its backends to init.
        let mut backends = std::mem::take(&mut self.backends);
        backends.extend(children(self.child.id()));
        backends.sort();
        backends.dedup();
        for wait in [GRACE, Duration::from_secs(1)] {
            if self.child.exited().is_some() {
                break;
            }
            signal(self.child.id(), libc::SIGINT);
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline && self.child.exited().is_none() {
                std::thread::sleep(WAKE);
                // Wakes its event loop, which may otherwise sleep a second before it
                // sees its last connection gone (as in [`graceful_restart`]).
                signal(self.child.id(), libc::SIGCHLD);
            }
        }
        self.child.stop(Duration::from_millis(500));
        // lighttpd has told its backends to stop; this waits for them, and kills those
        // of a lighttpd that was killed before it could. A group whose id is a child's
        // pid was made by that child (setsid), unless the pid was reused since, which
        // these few milliseconds make unlikely.
        for pgid in backends.into_iter().map(|p| p as i32) {
            if !group_gone(pgid, Duration::from_millis(500)) {
                // SAFETY: kill(2) with a negative pid signals a process group; no memory.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
                group_gone(pgid, Duration::from_millis(500));
            }
            super::process::unwatch_group(pgid);
        }
    }

    /// The tail of stderr and of the error log, for messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.stderr_log, self.error_log.as_deref())
    }
}

impl Drop for RunningLighttpd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on one process id touches no memory.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// Process ids of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    all_pids().filter(|p| proc_stat(*p).is_some_and(|s| s.ppid == pid)).collect()
}

/// Waits until group `pgid` has no live member, or `timeout` passes.
fn group_gone(pgid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if live_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Processes of group `pgid` that have not exited (zombies do not count).
pub fn live_members(pgid: i32) -> Vec<u32> {
    all_pids().filter(|p| proc_stat(*p).is_some_and(|s| s.pgrp as i32 == pgid && s.state != 'Z')).collect()
}

fn all_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
}

/// The fields of /proc/PID/stat used here.
struct ProcStat {
    state: char,
    ppid: u32,
    pgrp: u32,
}

fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let (_, rest) = text.rsplit_once(") ")?;
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(ProcStat { state, ppid, pgrp })
}

/// Checks `conf` with [`check_config`], starts `lighttpd -D -f conf` in its own process
/// group with the sandbox as working directory, and waits until 127.0.0.1:`port` accepts
/// connections. `port` must be the configuration's `server.port`. Errors carry lighttpd's
/// own words: its `-tt` output, or the tail of its stderr and error log.
pub fn start(conf: &Path, sandbox: &Sandbox, port: u16) -> io::Result<RunningLighttpd> {
    start_with(conf, sandbox, port, false)
}

/// [`start`] for a caller that only sends requests and treats any failure to answer as
/// a failure (`lighten watch`'s check): returned as soon as the port accepts, without the
/// pause that lets a failure after binding show.
pub fn start_quick(conf: &Path, sandbox: &Sandbox, port: u16) -> io::Result<RunningLighttpd> {
    start_with(conf, sandbox, port, true)
}

fn start_with(conf: &Path, sandbox: &Sandbox, port: u16, quick: bool) -> io::Result<RunningLighttpd> {
    check_config(conf).map_err(io::Error::other)?;
    let text = std::fs::read_to_string(conf)?;
    let error_log = error_log_path(&text).map(|p| sandbox.path().join(p));
    // Another program on the port would answer the readiness check; knowing it beforehand
    // means waiting for lighttpd to fail instead, with its own message.
    let taken = TcpListener::bind(("127.0.0.1", port)).is_err();
    let stderr_log = sandbox.path().join(format!("logs/lighttpd-{port}.stderr"));
    let out = std::fs::File::create(&stderr_log)?;
    let mut cmd = Command::new(super::process::program("lighttpd", SEARCH));
    cmd.arg("-D").arg("-f").arg(conf);
    cmd.current_dir(sandbox.path());
    cmd.env_clear().env("PATH", "/usr/sbin:/usr/bin:/bin").env("LANG", "C");
    cmd.stdin(Stdio::null()).stdout(Stdio::from(out.try_clone()?)).stderr(Stdio::from(out));
    let child = Child::spawn(cmd, "lighttpd")?;
    let mut running = RunningLighttpd {
        port,
        config_path: conf.to_path_buf(),
        error_log,
        stderr_log,
        child,
        backends: Vec::new(),
        stopped: false,
    };
    let why = wait_ready(&mut running, taken, quick);
    match why {
        None => {
            // mod_fastcgi has spawned its `bin-path` backends by now (just after the
            // port opened, before the settling pause in `wait_ready`).
            running.backends = children(running.child.id());
            for b in &running.backends {
                super::process::watch_group(*b as i32);
            }
            Ok(running)
        }
        Some(why) => {
            running.stop();
            Err(io::Error::other(format!(
                "lighttpd did not start on 127.0.0.1:{port} ({why}):\n{}",
                running.log_tail()
            )))
        }
    }
}

/// `None` once the server accepts connections; otherwise why it does not.
fn wait_ready(l: &mut RunningLighttpd, port_taken: bool, quick: bool) -> Option<String> {
    let deadline = Instant::now() + START_TIMEOUT;
    let addr = l.addr();
    loop {
        if let Some(status) = l.child.exited() {
            return Some(format!("it exited with {status}"));
        }
        if Instant::now() >= deadline {
            return Some(if port_taken {
                "another program listens on the port".to_string()
            } else {
                format!("nothing listens after {} s", START_TIMEOUT.as_secs())
            });
        }
        if !port_taken && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            // lighttpd binds before it opens its error log and drops privileges: give a
            // failure there a moment to show.
            if !quick {
                std::thread::sleep(Duration::from_millis(100));
            }
            return l.child.exited().map(|s| format!("it exited with {s}"));
        }
        std::thread::sleep(Duration::from_millis(if quick { 2 } else { 25 }));
    }
}

/// The last `server.errorlog = "..."` of the configuration text, when it names a file
/// (not a `|pipe`, not syslog).
fn error_log_path(conf: &str) -> Option<String> {
    let mut found = None;
    for line in conf.lines() {
        let Some(rest) = line.trim_start().strip_prefix("server.errorlog") else { continue };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix(":=").or_else(|| rest.strip_prefix('=')) else { continue };
        let Some(rest) = rest.trim_start().strip_prefix('"') else { continue };
        let Some(end) = rest.find('"') else { continue };
        let value = &rest[..end];
        found = (!value.is_empty() && !value.starts_with('|')).then(|| value.to_string());
    }
    found
}

fn log_tail(stderr_log: &Path, error_log: Option<&Path>) -> String {
    let mut parts = Vec::new();
    for path in std::iter::once(stderr_log).chain(error_log) {
        let text = super::sandbox::tail(path, TAIL_LINES);
        let text: Vec<&str> = text.lines().map(strip_timestamp).collect();
        if !text.is_empty() {
            parts.push(format!("{}:\n{}", path.display(), text.join("\n")));
        }
    }
    if parts.is_empty() {
        "(lighttpd wrote nothing to stderr or its error log)".to_string()
    } else {
        parts.join("\n")
    }
}

/// The lighttpd running from `conf` whose pid file is `pid_file`: its pid, when the file
/// names a live lighttpd process started with that configuration (a stale pid file, or
/// one naming another program, is not a running server).
pub fn running_from(conf: &Path, pid_file: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file).ok()?.trim().parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let is_lighttpd = args.first().is_some_and(|a| a.ends_with(b"lighttpd"));
    let conf = conf.as_os_str().as_encoded_bytes();
    let with_conf = args.windows(2).any(|w| w[0] == b"-f" && w[1] == conf)
        || args.iter().any(|a| a.strip_prefix(b"-f") == Some(conf));
    (is_lighttpd && with_conf).then_some(pid)
}

/// How often [`graceful_restart`] and [`RunningLighttpd::stop`] wake lighttpd's event loop
/// while it drains.
const WAKE: Duration = Duration::from_millis(10);

/// Whether a graceful restart asked of `pid` was seen through: its error log says
/// "server started" after `from` bytes.
pub enum Restart {
    Done,
    NotSeen,
}

/// A graceful restart of the lighttpd `pid` (SIGUSR1: it stops accepting, lets the
/// requests in progress finish, reads its configuration again and goes on with the same
/// listening sockets, so no connection is refused; measured in ARCHITECTURE.md), waited
/// for through its error log `errorlog` for up to `timeout`.
///
/// While it waits, lighttpd is woken every [`WAKE`] with a SIGCHLD. lighttpd 1.4.69 checks
/// whether its last connection has gone only at the top of its event loop, which then
/// sleeps in `epoll_wait` for up to a second when no socket has anything to say: the
/// restart often waited that second with nothing left to do (server.c,
/// `server_main_loop`; strace showed `epoll_wait(.., 1000) = 0` between the last close
/// and the new configuration read). A signal with a handler ends that wait (epoll_wait
/// is never restarted), and SIGCHLD is the harmless one: its handler only reaps exited
/// children, which lighttpd does anyway, and where no handler is installed (a re-exec
/// under `server.graceful-restart-bg`) its default is to be ignored.
pub fn graceful_restart(pid: u32, errorlog: &Path, timeout: Duration) -> io::Result<Restart> {
    let from = std::fs::metadata(errorlog).map(|m| m.len()).unwrap_or(0);
    // SAFETY: kill() with a pid and a signal number touches no memory of ours.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let deadline = Instant::now() + timeout;
    let mut woken = Instant::now();
    while Instant::now() < deadline {
        if woken.elapsed() >= WAKE {
            // SAFETY: as above. A failure (lighttpd gone) shows as no "server started".
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGCHLD) };
            woken = Instant::now();
        }
        if let Ok(bytes) = std::fs::read(errorlog)
            && bytes.len() as u64 != from
        {
            // A log rotated meanwhile is read from its start.
            let start = if (bytes.len() as u64) < from { 0 } else { from as usize };
            let new = String::from_utf8_lossy(&bytes[start..]);
            if new.contains("server started") {
                return Ok(Restart::Done);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(Restart::NotSeen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_last_error_log_setting() {
        let conf = "server.errorlog = \"/a/error.log\"\n# server.errorlog = \"/b\"\n  server.errorlog := \"logs/e.log\"\n";
        assert_eq!(error_log_path(conf).as_deref(), Some("logs/e.log"));
        assert_eq!(error_log_path("server.errorlog = \"|/usr/bin/cat\"\n"), None);
        assert_eq!(error_log_path("server.errorlog-use-syslog = \"enable\"\n"), None);
    }

    #[test]
    fn names_ignored_keys_and_strips_timestamps() {
        let line = "2026-11-30 00:38:28: (configfile.c.1289) WARNING: unknown config-key: url.rewrite-once (ignored)";
        let stripped = strip_timestamp(line);
        assert_eq!(stripped, "(configfile.c.1289) WARNING: unknown config-key: url.rewrite-once (ignored)");
        assert_eq!(unknown_keys(stripped), vec!["url.rewrite-once".to_string()]);
        assert_eq!(strip_timestamp("luac5.4: x.lua:1: near <eof>"), "luac5.4: x.lua:1: near <eof>");
    }
}
