//! Will a written conversion start as printed, on this machine, as whoever runs it?
//!
//! `lighten convert` ends here: `lighttpd -tt` on what it wrote, then every file and
//! program the output names (certificates, keys, password files, PHP sockets, document
//! roots, the Lua scripts, the runtime folder) checked against the user lighttpd will be
//! once it has started: Apache's `User` when started as root (lighttpd drops to
//! `server.username` before it opens its logs, spawns PHP or loads a Lua script), else
//! the user who starts it.  Each problem names the Apache `file:line` it comes from and,
//! where installing a Debian package is the fix, the package.
//!
//! Measured on lighttpd 1.4.69 (Debian 12), and what follows from it here:
//!
//! | what is missing | `lighttpd -tt` | at run time | here |
//! |---|---|---|---|
//! | a plugin's `.so` (`mod_deflate`) | exit 0, `dlopen() failed` on stderr | keys of that module ignored | error, with its package |
//! | `ssl.pemfile` | exit 255 | does not start | error |
//! | `auth.backend.htpasswd.userfile` | exit 0 | 401/500 in that area (Apache: 500) | warning |
//! | a FastCGI `socket` without `bin-path` | exit 0 | 503 for PHP | warning |
//! | `server.document-root` | exit 0 | 404 | warning |
//! | `server.username` as a normal user | exit 0 | ignored: runs as the caller | not a problem |
//!
//! This module only reads (and runs `lighttpd -tt`); changing owners is the caller's.

use crate::translate::{Need, NeedKind, conf::module_package};
use std::ffi::CString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// lighttpd will not start, or answers every request wrongly.
    Error,
    /// lighttpd starts; some requests will fail the way they may also fail under Apache.
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub level: Level,
    /// The Apache `file:line` it comes from, or empty.
    pub at: String,
    pub message: String,
    /// What to do about it, when there is one thing to do.
    pub fix: Option<String>,
}

impl Problem {
    fn error(at: &str, message: String, fix: Option<String>) -> Problem {
        Problem { level: Level::Error, at: at.to_string(), message, fix }
    }

    fn warning(at: &str, message: String, fix: Option<String>) -> Problem {
        Problem { level: Level::Warning, at: at.to_string(), message, fix }
    }

    /// `error: file:line: message (fix)`, one line.
    pub fn line(&self) -> String {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        let at = if self.at.is_empty() { String::new() } else { format!("{}: ", self.at) };
        let fix = self.fix.as_ref().map(|f| format!("; {f}")).unwrap_or_default();
        format!("{level}: {at}{}{fix}", self.message)
    }
}

/// Who lighttpd is once it runs: uid, gid and supplementary groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Identity {
    /// The user running lighten.
    pub fn current() -> Identity {
        // SAFETY: these calls read the process credentials; getgroups writes at most
        // `n` entries into a buffer of that size.
        let (uid, gid, groups) = unsafe {
            let n = libc::getgroups(0, std::ptr::null_mut()).max(0);
            let mut g = vec![0 as libc::gid_t; n as usize];
            let n = libc::getgroups(n, g.as_mut_ptr()).max(0);
            g.truncate(n as usize);
            (libc::geteuid(), libc::getegid(), g)
        };
        // SAFETY: getpwuid returns static storage or null; the name is copied at once.
        let name = unsafe {
            let pw = libc::getpwuid(uid);
            if pw.is_null() {
                format!("uid {uid}")
            } else {
                std::ffi::CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned()
            }
        };
        Identity { name, uid, gid, groups }
    }

    /// A user of this machine by name, with the groups `initgroups()` would give it and
    /// `group` (by name) as its primary group when given.
    pub fn user(name: &str, group: Option<&str>) -> Result<Identity, String> {
        let c = CString::new(name).map_err(|_| format!("{name:?} is not a user name"))?;
        // SAFETY: getpwnam returns a pointer into static storage or null; the fields are
        // copied before any other call that could overwrite it.
        let (uid, mut gid) = unsafe {
            let pw = libc::getpwnam(c.as_ptr());
            if pw.is_null() {
                return Err(format!("there is no user {name} on this machine"));
            }
            ((*pw).pw_uid, (*pw).pw_gid)
        };
        if let Some(g) = group {
            let cg = CString::new(g).map_err(|_| format!("{g:?} is not a group name"))?;
            // SAFETY: as above, for getgrnam.
            gid = unsafe {
                let gr = libc::getgrnam(cg.as_ptr());
                if gr.is_null() {
                    return Err(format!("there is no group {g} on this machine"));
                }
                (*gr).gr_gid
            };
        }
        let mut groups = vec![0 as libc::gid_t; 256];
        let mut n = groups.len() as libc::c_int;
        // SAFETY: getgrouplist writes at most `n` entries and sets `n` to the count.
        let r = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        groups.truncate(if r < 0 { 0 } else { n.max(0) as usize });
        Ok(Identity { name: name.to_string(), uid, gid, groups })
    }

    fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether this identity may read (`r`), write (`w`) or search/execute (`x`) `path`,
    /// following the mode bits of the path and of every folder above it.
    pub fn may(&self, path: &Path, want: &str) -> Result<(), String> {
        let path = std::path::absolute(path).map_err(|e| e.to_string())?;
        // lighten may see less than the server's user (or more): a folder it cannot
        // enter is told by the mode bits below, a missing path here.
        let meta = match std::fs::metadata(&path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
            Err(e) => return Err(format!("{}: {}", path.display(), reason(&e))),
        };
        let mut dirs: Vec<PathBuf> = path.ancestors().skip(1).map(Path::to_path_buf).collect();
        dirs.reverse();
        for d in &dirs {
            let m = std::fs::metadata(d).map_err(|e| format!("{}: {}", d.display(), reason(&e)))?;
            if !self.allows(&m, 1) {
                return Err(format!("{} cannot enter {}", self.name, d.display()));
            }
        }
        let Some(meta) = meta else {
            return Err(format!("{}: permission denied", path.display()));
        };
        for (c, bit, word) in [('r', 4, "read"), ('w', 2, "write"), ('x', 1, "enter or run")] {
            if want.contains(c) && !self.allows(&meta, bit) {
                return Err(format!("{} cannot {word} {}", self.name, path.display()));
            }
        }
        Ok(())
    }

    fn allows(&self, m: &std::fs::Metadata, bit: u32) -> bool {
        let mode = m.permissions().mode();
        if self.is_root() {
            // Root reads and writes anything; it executes what anyone may execute.
            return bit != 1 || m.is_dir() || mode & 0o111 != 0;
        }
        if m.uid() == self.uid {
            mode & (bit << 6) != 0
        } else if m.gid() == self.gid || self.groups.contains(&m.gid()) {
            mode & (bit << 3) != 0
        } else {
            mode & bit != 0
        }
    }
}

fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// What a conversion needs from [`check`].
pub struct Setup<'a> {
    pub conf: &'a Path,
    /// The generated files (Lua scripts among them), absolute.
    pub files: Vec<PathBuf>,
    pub runtime_dir: &'a Path,
    pub needs: &'a [Need],
    pub user: Option<&'a str>,
    pub group: Option<&'a str>,
    pub user_at: &'a str,
}

/// Who lighttpd will run as when the current user starts it, or why it cannot be known.
pub fn server_identity(user: Option<&str>, group: Option<&str>) -> Result<Identity, String> {
    let me = Identity::current();
    match user {
        Some(u) if me.is_root() => Identity::user(u, group),
        _ => Ok(me),
    }
}

/// Every problem found, errors first.
pub fn check(s: &Setup) -> Vec<Problem> {
    let mut out = Vec::new();
    let me = Identity::current();
    let server = match server_identity(s.user, s.group) {
        Ok(i) => i,
        Err(e) => {
            out.push(Problem::error(
                s.user_at,
                format!("server.username: {e}"),
                Some("create the user, or change server.username in lighttpd.conf".into()),
            ));
            me.clone()
        }
    };
    if me.is_root() && s.user.is_none() {
        out.push(Problem::warning(
            "",
            "Apache's configuration names no User: started as root, lighttpd keeps running as root".into(),
            Some("set server.username in lighttpd.conf".into()),
        ));
    }
    if !me.is_root() {
        // Linux lets anyone bind from net.ipv4.ip_unprivileged_port_start up (1024 unless
        // an admin or a container changed it).
        let first_free = std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
            .ok()
            .and_then(|v| v.trim().parse::<u16>().ok())
            .unwrap_or(1024);
        for (addr, port) in ports(s.conf) {
            if port < first_free {
                out.push(Problem::error(
                    "",
                    format!("lighttpd listens on {addr}:{port}, which only root may bind"),
                    Some(
                        "run lighten convert again with --listen 127.0.0.1:8080 (or start lighttpd as root)"
                            .into(),
                    ),
                ));
            }
        }
    }
    if let Err(e) = server.may(s.runtime_dir, "rwx") {
        out.push(Problem::error(
            "",
            format!("runtime folder (logs, pid file, PHP sockets): {e}"),
            Some(format!("chown {} {}", owner_spec(s.user, s.group), s.runtime_dir.display())),
        ));
    }
    if let Err(e) = me.may(s.conf, "r") {
        out.push(Problem::error("", e, None));
    }
    for f in &s.files {
        // mod_magnet loads each script on the first request, after lighttpd dropped to
        // server.username.
        if let Err(e) = server.may(f, "r") {
            out.push(Problem::error("", format!("{e} (lighttpd reads it while serving)"), None));
            break;
        }
    }
    for n in s.needs {
        if let Some(p) = need_problem(n, &me, &server) {
            out.push(p);
        }
    }
    out.extend(lighttpd_tt(s.conf));
    out.sort_by_key(|p| p.level != Level::Error);
    out
}

fn owner_spec(user: Option<&str>, group: Option<&str>) -> String {
    match (user, group) {
        (Some(u), Some(g)) => format!("{u}:{g}"),
        (Some(u), None) => u.to_string(),
        _ => "USER".into(),
    }
}

fn need_problem(n: &Need, me: &Identity, server: &Identity) -> Option<Problem> {
    let path = Path::new(&n.path);
    let what = n.kind.label();
    match n.kind {
        // Read at startup, before lighttpd drops privileges.
        NeedKind::Certificate | NeedKind::Key => me.may(path, "r").err().map(|e| {
            let fix = if n.path.contains("ssl-cert-snakeoil") && e.ends_with("does not exist") {
                "apt-get install ssl-cert (Debian's self-signed certificate)"
            } else {
                "copy it here, or point lighttpd.conf at it"
            };
            Problem::error(&n.at, format!("{what}: {e}"), Some(fix.to_string()))
        }),
        NeedKind::PasswordFile => server.may(path, "r").err().map(|e| {
            Problem::warning(
                &n.at,
                format!("{what}: {e}: logins to this area fail (Apache answers 500 too)"),
                None,
            )
        }),
        NeedKind::Socket => {
            let kind = std::fs::metadata(path).ok().map(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_socket()
            });
            let problem = match kind {
                None => Some(format!("{what} {} does not exist", n.path)),
                Some(false) => Some(format!("{what} {} is not a socket", n.path)),
                Some(true) => server.may(path, "w").err(),
            };
            problem.map(|e| {
                Problem::warning(
                    &n.at,
                    format!("{e}: PHP requests answer 503 until the PHP-FPM pool listens there"),
                    Some("start the pool (php-fpm), or convert with --php-backend".into()),
                )
            })
        }
        NeedKind::Program => server.may(path, "x").err().map(|e| {
            let fix = if n.path == "/usr/bin/php-cgi" {
                Some("apt-get install php-cgi".to_string())
            } else if n.path.starts_with("/usr/sbin/php-fpm") {
                Some("apt-get install php-fpm".to_string())
            } else {
                None
            };
            Problem::error(&n.at, format!("{what}: {e}"), fix)
        }),
        // php-fpm starts the pool's workers as this user (as root; as anyone else, as them)
        NeedKind::PoolUser => {
            if !me.is_root() {
                // (php-fpm started by a normal user runs every pool as that user)
                return None;
            }
            let (user, group) = n.path.split_once(':').unwrap_or((&n.path, ""));
            Identity::user(user, Some(group).filter(|g| !g.is_empty())).err().map(|e| {
                Problem::warning(
                    &n.at,
                    format!("{what} {}: {e}: php-fpm does not start, and PHP requests answer 503", n.path),
                    Some("run the conversion on the server whose accounts these are".into()),
                )
            })
        }
        // Opened at startup, before lighttpd drops privileges.
        NeedKind::LogFolder => {
            me.may(path, "wx").err().map(|e| Problem::error(&n.at, format!("{what}: {e}"), None))
        }
        NeedKind::DocumentRoot => {
            let problem = match std::fs::metadata(path) {
                Ok(m) if !m.is_dir() => Some(format!("{} is not a folder", n.path)),
                Ok(_) => server.may(path, "x").err(),
                Err(e) => Some(format!("{}: {}", n.path, reason(&e))),
            };
            problem
                .map(|e| Problem::warning(&n.at, format!("{what}: {e}: its requests answer 403/404"), None))
        }
    }
}

/// `lighttpd -tt`: a failure is an error; a plugin that did not load names its package; a
/// key no loaded module claims is an error (the translation relies on every key it wrote).
fn lighttpd_tt(conf: &Path) -> Vec<Problem> {
    let mut out = Vec::new();
    let r = match super::lighttpd::test_config(conf) {
        Ok(r) => r,
        Err(e) => {
            out.push(Problem::error(
                "",
                format!("lighttpd could not run: {e}"),
                Some("apt-get install lighttpd lighttpd-modules-lua".into()),
            ));
            return out;
        }
    };
    let text = String::from_utf8_lossy(&r.stderr).into_owned() + &String::from_utf8_lossy(&r.stdout);
    let mut explained = false;
    for line in text.lines().map(super::lighttpd::strip_timestamp).filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.split("dlopen() failed for: ").nth(1) {
            let file = rest.split_whitespace().next().unwrap_or("");
            let module =
                Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let fix = module_package(&module).map(|p| format!("apt-get install {p}"));
            out.push(Problem::error("", format!("lighttpd module {module} is not installed"), fix));
            explained = true;
        } else if let Some(key) = line.split("WARNING: unknown config-key: ").nth(1) {
            out.push(Problem::error(
                "",
                format!(
                    "lighttpd ignores {}: its module is not loaded",
                    key.trim_end_matches("(ignored)").trim()
                ),
                None,
            ));
            explained = true;
        } else if !r.status.success()
            && !line.contains("Going down")
            && !line.contains("loading plugins finally failed")
        {
            out.push(Problem::error("", format!("lighttpd -tt: {line}"), None));
            explained = true;
        } else if r.status.success() && !line.contains("Going down") {
            out.push(Problem::warning("", format!("lighttpd -tt: {line}"), None));
        }
    }
    if !r.status.success() && !explained {
        out.push(Problem::error(
            "",
            format!("lighttpd -tt -f {} failed ({})", conf.display(), r.status),
            None,
        ));
    }
    out
}

/// The addresses a generated lighttpd.conf listens on: `server.bind`/`server.port` and
/// each `$SERVER["socket"] == "ADDR:PORT"`.
pub fn ports(conf: &Path) -> Vec<(String, u16)> {
    let text = std::fs::read_to_string(conf).unwrap_or_default();
    let mut out = Vec::new();
    let mut bind = "0.0.0.0".to_string();
    let value = |l: &str| l.split_once('=').map(|(_, v)| v.trim().trim_matches('"').to_string());
    for l in text.lines().map(str::trim) {
        if l.starts_with("server.bind") {
            bind = value(l).unwrap_or(bind);
        } else if l.starts_with("server.port") {
            if let Some(p) = value(l).and_then(|v| v.parse().ok()) {
                out.push((bind.clone(), p));
            }
        } else if let Some(rest) = l.strip_prefix("$SERVER[\"socket\"] == \"") {
            let sock = rest.split('"').next().unwrap_or("");
            if let Some((a, p)) = sock.rsplit_once(':')
                && let Ok(p) = p.parse()
            {
                out.push((a.trim_matches(['[', ']']).to_string(), p));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_bits_decide_for_a_normal_user() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let me = Identity::current();
        let owner = Identity { name: "owner".into(), uid: me.uid.max(1), gid: 4242, groups: vec![] };
        let other = Identity { name: "other".into(), uid: 4243, gid: 4243, groups: vec![] };
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let meta = std::fs::metadata(&f).unwrap();
        let same_owner = Identity { uid: meta.uid(), ..owner };
        if meta.uid() != 0 {
            assert!(same_owner.may(&f, "r").is_ok());
        }
        assert!(other.may(&f, "r").is_err());
        let in_group = Identity { name: "grp".into(), uid: 4244, gid: 1, groups: vec![meta.gid()] };
        assert!(in_group.may(&f, "r").is_ok());
        assert!(in_group.may(&f, "w").is_err());
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(other.may(&f, "r").is_ok());
        // A folder above that the user cannot enter hides the file.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(other.may(&f, "r").unwrap_err().contains("cannot enter"));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(other.may(&dir.path().join("missing"), "r").unwrap_err().contains("does not exist"));
    }

    #[test]
    fn listeners_are_read_from_the_generated_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("lighttpd.conf");
        std::fs::write(
            &c,
            "server.bind = \"0.0.0.0\"\nserver.port = 80\n$SERVER[\"socket\"] == \"0.0.0.0:80\" {\n}\n$SERVER[\"socket\"] == \"[::1]:8443\" {\n}\n",
        )
        .unwrap();
        assert_eq!(ports(&c), vec![("0.0.0.0".to_string(), 80), ("::1".to_string(), 8443)]);
    }
}
