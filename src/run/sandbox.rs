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
        self.path.clone()
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
/// possible but harmless: the server then fails to start and says so).
pub fn free_port() -> io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
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
