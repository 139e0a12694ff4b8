//! Child processes lighten starts (Apache, php-cgi, lighttpd): each runs in its own process
//! group and is registered, so it is stopped when its handle drops, when lighten fails,
//! and on Ctrl-C, by process id, with its whole group.

use std::io;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// Process groups alive right now.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Sandbox folders to remove if lighten is interrupted.
static FOLDERS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

/// `name` as found in the folders of `search` (a `PATH` value), looked up once per
/// name; `name` itself when none has it (the spawn then says it is missing). Started by
/// an absolute path, std spawns with posix_spawn (the child shares the parent's memory
/// until it execs); by a bare name with `PATH` set in its environment, std forks, which
/// copies the page tables of the whole process: about 15 ms a call for `lighten watch`
/// holding a 1,000-account server (~800 MB), which checks each of its 2,000 modules with
/// luac at start (measured with strace: 30 s of its 84 s).
pub fn program(name: &str, search: &str) -> std::path::PathBuf {
    static FOUND: Mutex<Vec<(String, std::path::PathBuf)>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = found.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let p = search
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| std::path::PathBuf::from(name));
    found.push((name.to_string(), p.clone()));
    p
}

/// Removes `dir` when lighten is interrupted (a sandbox not kept).
pub fn remove_on_interrupt(dir: &std::path::Path) {
    stop_all_on_interrupt();
    if let Ok(mut f) = FOLDERS.lock() {
        f.push(dir.to_path_buf());
    }
}

/// `dir` no longer needs removing on interrupt (dropped or kept).
pub fn forget_folder(dir: &std::path::Path) {
    if let Ok(mut f) = FOLDERS.lock() {
        f.retain(|p| p != dir);
    }
}
/// Stops group `pgid` too when lighten is interrupted: one lighten did not start itself
/// (php-cgi backends lighttpd spawned, which leave its group with setsid()).
pub fn watch_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.push(pgid);
    }
}

/// Group `pgid` is gone.
pub fn unwatch_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.retain(|p| *p != pgid);
    }
}

/// `Err(Interrupted)` once lighten is being interrupted: what a loop returns instead of
/// going on with servers that are being stopped.
pub fn not_interrupted() -> io::Result<()> {
    if interrupted() { Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted")) } else { Ok(()) }
}

static CTRLC: Once = Once::new();
/// Set when SIGINT/SIGTERM arrived.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Set while a command that stops by itself on an interrupt runs (a plain benchmark: it
/// reports what it measured); the handler then only raises [`INTERRUPTED`].
static SOFT: AtomicBool = AtomicBool::new(false);

/// Whether lighten is being interrupted: loops stop at once, the handler (or, for a soft
/// command, the command itself) finishes with exit status 130.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The flag [`interrupted`] reads, for loops that take an `&AtomicBool`.
pub fn interrupt_flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// After a command returned while interrupted: a hard interrupt's handler is stopping
/// everything and will exit 130 (this waits for it); a soft one has nothing to wait for.
pub fn wait_for_interrupt_handler() {
    if interrupted() && !SOFT.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_secs(10));
    }
}

/// From now on an interrupt only raises the flag: the caller stops and reports.  A second
/// interrupt stops lighten at once.
pub fn stop_softly_on_interrupt() {
    stop_all_on_interrupt();
    SOFT.store(true, Ordering::SeqCst);
}

/// On SIGINT or SIGTERM: stops every registered process group and waits until each is
/// gone and its leader reaped, removes the sandbox folders, shows the cursor again (a
/// prompt may have hidden it), then exits with 130.
pub fn stop_all_on_interrupt() {
    CTRLC.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            let again = INTERRUPTED.swap(true, Ordering::SeqCst);
            if SOFT.load(Ordering::SeqCst) && !again {
                return;
            }
            stop_everything();
            restore_terminal();
            eprintln!("\nlighten: interrupted");
            std::process::exit(130);
        });
    });
}

fn stop_everything() {
    let groups: Vec<i32> = GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for g in &groups {
        signal_group(*g, libc::SIGTERM);
    }
    let gone = |deadline: Instant| {
        while Instant::now() < deadline {
            reap(&groups);
            if groups.iter().all(|g| super::lighttpd::live_members(*g).is_empty()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if !gone(Instant::now() + Duration::from_millis(500)) {
        for g in &groups {
            signal_group(*g, libc::SIGKILL);
        }
        gone(Instant::now() + Duration::from_secs(3));
    }
    reap(&groups);
    let folders: Vec<std::path::PathBuf> = FOLDERS.lock().map(|f| f.clone()).unwrap_or_default();
    // Removal fails while something still writes there (the main thread setting up the next
    // server, a backend's last log line), and such a write can make the folder again: until
    // it stays gone for a moment.
    for f in folders {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let _ = std::fs::remove_dir_all(&f);
            if !f.exists() {
                std::thread::sleep(Duration::from_millis(30));
                if !f.exists() {
                    break;
                }
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Collects the exit status of every group leader that is lighten's child and has
/// exited (the other members are reaped by their own parents or by init).
fn reap(groups: &[i32]) {
    for &g in groups {
        let mut status = 0;
        // SAFETY: waitpid on one pid with WNOHANG writes only `status`.
        unsafe {
            libc::waitpid(g, &mut status, libc::WNOHANG);
        }
    }
}

/// Shows the cursor again on a terminal (dialoguer hides it while a prompt is open).
pub fn restore_terminal() {
    use std::io::{IsTerminal, Write};
    if std::io::stderr().is_terminal() {
        let _ = std::io::stderr().write_all(b"\x1b[?25h");
    } else if std::io::stdout().is_terminal() {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?25h");
        let _ = out.flush();
    }
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group; it touches no memory.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// A started process, leader of its own process group.
pub struct Child {
    inner: std::process::Child,
    pub name: String,
    pgid: i32,
    stopped: bool,
}

impl Child {
    pub fn spawn(mut cmd: Command, name: &str) -> io::Result<Child> {
        use std::os::unix::process::CommandExt;
        stop_all_on_interrupt();
        cmd.process_group(0);
        // Spawned and registered under the lock: the interrupt handler raises its flag
        // before it reads the groups, so a process is either seen by it or never started.
        let mut groups = GROUPS.lock().map_err(|_| io::Error::other("process table poisoned"))?;
        not_interrupted()?;
        // (an error that names the program: "No such file or directory" alone says nothing)
        let inner = cmd.spawn().map_err(|e| {
            let program = cmd.get_program().to_string_lossy().into_owned();
            let fix =
                if e.kind() == io::ErrorKind::NotFound { " (scripts/setup.sh installs it)" } else { "" };
            io::Error::new(e.kind(), format!("{program}: {e}{fix}"))
        })?;
        let pgid = inner.id() as i32;
        groups.push(pgid);
        drop(groups);
        Ok(Child { inner, name: name.to_string(), pgid, stopped: false })
    }

    pub fn id(&self) -> u32 {
        self.inner.id()
    }

    /// `Some(status)` when the process has already exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.inner.try_wait().ok().flatten()
    }

    /// SIGTERM to the group, then SIGKILL after `grace`; waits for the leader.
    pub fn stop(&mut self, grace: Duration) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever is left of the group (workers that outlive the leader) goes too.
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.inner.wait();
        if let Ok(mut g) = GROUPS.lock() {
            g.retain(|p| *p != self.pgid);
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// Process ids whose command line mentions `needle` (a sandbox folder): used to prove
/// that nothing is left behind.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(pid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_is_not_installed_is_named_in_the_error() {
        // (by a variable: the tidy test holds every literal program name to scripts/setup.sh)
        let missing = "lighten-no-such-program";
        let e = Child::spawn(Command::new(missing), "test").err().expect("no such program");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().starts_with("lighten-no-such-program: "), "{e}");
        assert!(e.to_string().ends_with("(scripts/setup.sh installs it)"), "{e}");
    }
}
