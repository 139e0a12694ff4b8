//! Child processes lighten starts (Apache, php-cgi, lighttpd): each runs in its own process
//! group and is registered, so it is stopped when its handle drops, when lighten fails,
//! and on Ctrl-C, by process id, with its whole group.

use std::io;
use std::process::{Command, ExitStatus};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// Process groups alive right now.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Sandbox folders to remove if lighten is interrupted.
static FOLDERS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

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
static CTRLC: Once = Once::new();
/// Set when SIGINT/SIGTERM arrived: the handler is stopping everything and will exit 130.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether lighten is being interrupted (its servers are going away on purpose).
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Stops every registered process group, then exits with 130, on SIGINT or SIGTERM.
pub fn stop_all_on_interrupt() {
    CTRLC.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            let groups: Vec<i32> = GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
            for g in &groups {
                signal_group(*g, libc::SIGTERM);
            }
            std::thread::sleep(Duration::from_millis(500));
            for g in &groups {
                signal_group(*g, libc::SIGKILL);
            }
            let folders: Vec<std::path::PathBuf> = FOLDERS.lock().map(|f| f.clone()).unwrap_or_default();
            for f in folders {
                let _ = std::fs::remove_dir_all(f);
            }
            std::process::exit(130);
        });
    });
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
        let inner = cmd.spawn()?;
        let pgid = inner.id() as i32;
        if let Ok(mut g) = GROUPS.lock() {
            g.push(pgid);
        }
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
