//! A temporary folder for one run: a copy of the configuration's sysroot, the generated
//! server configuration, logs, sockets and pid files.  Nothing outside it is written.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub struct Sandbox {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl Sandbox {
    /// A new folder under the system's temporary folder, readable by the unprivileged
    /// user Apache switches to.
    pub fn new(prefix: &str) -> io::Result<Sandbox> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let path = dir.path().to_path_buf();
        for sub in ["run", "logs", "tmp"] {
            std::fs::create_dir_all(path.join(sub))?;
        }
        // php-cgi and Apache children (www-data) write temporary files here.
        std::fs::set_permissions(path.join("tmp"), std::fs::Permissions::from_mode(0o1777))?;
        std::fs::set_permissions(path.join("logs"), std::fs::Permissions::from_mode(0o777))?;
        super::process::remove_on_interrupt(&path);
        Ok(Sandbox { dir: Some(dir), path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the folder after the run (for `--keep`); returns its path.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(d) = self.dir.take() {
            let _ = d.keep();
        }
        super::process::forget_folder(&self.path);
        self.path.clone()
    }

    /// A self-signed certificate and its key in `run/` (made once).
    pub fn self_signed_cert(&self) -> (PathBuf, PathBuf) {
        self_signed_cert(&self.path)
    }

    /// Copies a sysroot into `root/` of the sandbox, keeping symbolic links as links, and
    /// makes it readable by everyone (Apache's workers run unprivileged).
    pub fn copy_sysroot(&self, from: &Path) -> io::Result<PathBuf> {
        let to = self.path.join("root");
        copy_tree(from, &to)?;
        Ok(to)
    }
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst)?;
            // Keep the execute bits (RewriteMap prg:, CGI), add read for everyone.
            let mode = std::fs::metadata(&src)?.permissions().mode() | 0o444;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode & 0o7777))?;
        }
    }
    Ok(())
}

/// A free TCP port on loopback (bound and released; a race with other programs is
/// possible but harmless: the server then fails to start and says so). Never the same
/// port twice in one process: the kernel may hand a just-released port out again, and
/// two listeners of one sandbox on one port stop Apache ("Cannot define multiple
/// Listeners on the same IP:port", seen in CI).
///
/// Taken below the kernel's ephemeral range (`ip_local_port_range`), at random: a port
/// the kernel chose for `bind(0)` is one it also gives the client side of outgoing
/// connections, and the tests open thousands to loopback, so a server could find its
/// port taken by a client socket ("can't bind to socket: Address already in use", seen
/// once in a full test run).
pub fn free_port() -> io::Result<u16> {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    // 10,000 ports below it (or from 1,024 when the range starts low).
    let (from, to) = (low.saturating_sub(10_000).max(1024), low.max(1025));
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64)
        ^ ((std::process::id() as u64) << 32);
    for _ in 0..256 {
        // xorshift64: a different order in each process
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = (from + (x % u64::from(to - from)) as u32) as u16;
        if given.contains(&port) || std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        given.push(port);
        return Ok(port);
    }
    Err(io::Error::new(io::ErrorKind::AddrInUse, "no loopback port left that this process has not used"))
}

/// Waits until something accepts connections on `port`, or `timeout` passes.
pub fn wait_for_port(port: u16, timeout: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    false
}

/// The last `lines` lines of a log file, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A self-signed certificate and its key in `dir/run/` (made once): stands in for
/// certificates a copied configuration names but this machine does not have.
pub fn self_signed_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let cert = dir.join("run/sandbox.crt");
    let key = dir.join("run/sandbox.key");
    if !cert.exists() {
        // (a process group of its own, stopped with the servers on Ctrl-C: an interrupt
        // while the key is made leaves nothing running)
        let mut cmd = std::process::Command::new("openssl");
        cmd.args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "30",
            "-subj",
            "/CN=lighten-sandbox",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        if let Ok(mut c) = super::process::Child::spawn(cmd, "openssl") {
            while c.exited().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    (cert, key)
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        super::process::forget_folder(&self.path);
    }
}
