//! The filesystem as Apache would see it.
//!
//! Configs name absolute paths (`/etc/apache2/sites-enabled/*.conf`,
//! `/var/www/vhosts/example.com/httpdocs`).  With a sysroot, lighten reads them under
//! another folder: a copy of a server's files, or a test fixture.  Every read of a path
//! that came from a config goes through here, so the mapping is applied in one place.
//! Symbolic links inside the sysroot are followed as the host resolves them; an absolute
//! link target therefore points outside the sysroot.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct Sysroot {
    root: Option<PathBuf>,
}

impl Sysroot {
    /// The host filesystem itself.
    pub fn host() -> Sysroot {
        Sysroot { root: None }
    }

    pub fn at(root: impl Into<PathBuf>) -> Sysroot {
        Sysroot { root: Some(root.into()) }
    }

    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The host path for an absolute Apache path.
    pub fn host_path(&self, apache_path: &str) -> PathBuf {
        match &self.root {
            Some(root) => root.join(apache_path.trim_start_matches('/')),
            None => PathBuf::from(apache_path),
        }
    }

    /// The Apache path for a host path, when it lies inside the sysroot.
    pub fn apache_path(&self, host: &Path) -> Option<String> {
        match &self.root {
            None => Some(host.to_string_lossy().into_owned()),
            Some(root) => {
                // (a relative root given, an absolute path asked about: by the working folder)
                let rel = host.strip_prefix(root).ok().or_else(|| {
                    let cwd = std::env::current_dir().ok()?;
                    host.strip_prefix(cwd.join(root)).ok().filter(|_| root.is_relative())
                })?;
                Some(clean_path(&format!("/{}", rel.to_string_lossy())))
            }
        }
    }

    /// The Apache path of a path the user gave (a command's CONFIG, `--server-config`),
    /// by one rule for every command: under a sysroot, a path inside the copy
    /// (`copy/etc/apache2/apache2.conf`), else one that names a file of the copy as on the
    /// server (`/etc/apache2/apache2.conf`) or relative to its root (`etc/apache2`).
    /// `None` when it is none of these.  Without a sysroot, the path made absolute.
    pub fn given(&self, given: &Path) -> Option<String> {
        let Some(root) = &self.root else { return Some(absolute(given)) };
        // Inside the copy (either side may be relative).
        if let Some(p) = self.apache_path(given) {
            return Some(p);
        }
        if let Ok(rel) = Path::new(&absolute(given)).strip_prefix(absolute(root)) {
            return Some(clean_path(&format!("/{}", rel.to_string_lossy())));
        }
        let as_on_server = clean_path(&format!("/{}", given.to_string_lossy().trim_start_matches('/')));
        self.exists(&as_on_server).then_some(as_on_server)
    }

    pub fn read(&self, apache_path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.host_path(apache_path))
    }

    pub fn is_dir(&self, apache_path: &str) -> bool {
        self.host_path(apache_path).is_dir()
    }

    pub fn is_file(&self, apache_path: &str) -> bool {
        self.host_path(apache_path).is_file()
    }

    pub fn exists(&self, apache_path: &str) -> bool {
        self.host_path(apache_path).exists()
    }

    /// Names in a directory, sorted bytewise as Apache sorts them before including.
    pub fn list_dir(&self, apache_path: &str) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(self.host_path(apache_path))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

/// `path` made absolute (against the working folder) and cleaned, lexically.
pub fn absolute(path: &Path) -> String {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    clean_path(&abs.to_string_lossy())
}

/// Joins `rel` onto `base` unless it is absolute.
pub fn join(base: &str, rel: &str) -> String {
    if rel.starts_with('/') {
        clean_path(rel)
    } else {
        clean_path(&format!("{}/{}", base.trim_end_matches('/'), rel))
    }
}

/// Removes `.` segments, resolves `..` lexically and collapses repeated slashes; keeps a
/// trailing slash, which is meaningful in `<Directory>` and `Alias`.
pub fn clean_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let trailing = path.len() > 1 && path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(path.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&parts.join("/"));
    if trailing && !out.ends_with('/') {
        out.push('/');
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_path_is_lexical() {
        assert_eq!(clean_path("/etc//apache2/./mods/../conf.d/"), "/etc/apache2/conf.d/");
        assert_eq!(clean_path("/../x"), "/x");
        assert_eq!(clean_path("a/../../b"), "../b");
        assert_eq!(join("/etc/apache2", "mods-enabled/*.load"), "/etc/apache2/mods-enabled/*.load");
        assert_eq!(join("/etc/apache2", "/abs"), "/abs");
    }

    #[test]
    fn a_given_path_is_taken_in_the_copy_or_as_on_the_server() {
        let s = Sysroot::at("fixtures/plesk");
        let want = Some("/var/www/vhosts".to_string());
        assert_eq!(s.given(Path::new("fixtures/plesk/var/www/vhosts")), want);
        assert_eq!(s.given(Path::new("/var/www/vhosts")), want);
        assert_eq!(s.given(Path::new("var/www/vhosts/")), Some("/var/www/vhosts/".to_string()));
        let abs = std::env::current_dir().unwrap().join("fixtures/plesk/var/www/vhosts");
        assert_eq!(s.given(&abs), want);
        // in neither: refused, not guessed
        assert_eq!(s.given(Path::new("/var/www/nowhere")), None);
        assert_eq!(Sysroot::host().given(Path::new("/x//y/")), Some("/x/y/".to_string()));
    }

    #[test]
    fn sysroot_maps_both_ways() {
        let s = Sysroot::at("fixtures/plesk");
        assert_eq!(s.host_path("/var/www/vhosts"), PathBuf::from("fixtures/plesk/var/www/vhosts"));
        assert_eq!(
            s.apache_path(Path::new("fixtures/plesk/var/www/x/.htaccess")).as_deref(),
            Some("/var/www/x/.htaccess")
        );
        assert_eq!(s.apache_path(Path::new("elsewhere/x")), None);
    }
}
