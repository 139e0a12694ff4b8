//! Where an Apache configuration usually is: Debian/Ubuntu's apache2.conf, RHEL's
//! httpd.conf, a Plesk vhosts root; looked for through the sysroot.  Reads directory
//! listings only.

use crate::config;
use crate::source::Sysroot;
use std::path::PathBuf;

/// A configuration found on this server (or under --sysroot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The path to hand to `config::load` (under the sysroot).
    pub path: PathBuf,
    /// What it is, for the admin: `Debian/Ubuntu: /etc/apache2/apache2.conf`.
    pub label: String,
}

/// The Plesk vhosts root, as Plesk lays it out on every distribution.
const PLESK_ROOT: &str = "/var/www/vhosts";

/// The configurations found, in the order offered: Debian's, RHEL's, Plesk's.
pub fn configs(fs: &Sysroot) -> Vec<Found> {
    let mut out = Vec::new();
    for (apache, family) in config::SERVER_CONFIGS.iter().zip(["Debian/Ubuntu", "RHEL/CentOS/Fedora"]) {
        if fs.is_file(apache) {
            out.push(Found { path: fs.host_path(apache), label: format!("{family}: {apache}") });
        }
    }
    let domains = config::plesk_domains(fs, PLESK_ROOT);
    if !domains.is_empty() {
        let shown: Vec<&str> = domains.iter().take(3).map(String::as_str).collect();
        let more =
            if domains.len() > 3 { format!(", ... ({} in all)", domains.len()) } else { String::new() };
        out.push(Found {
            path: fs.host_path(PLESK_ROOT),
            label: format!("Plesk vhosts root: {PLESK_ROOT} ({}{more})", shown.join(", ")),
        });
    }
    out
}

/// The systemd service that runs Apache for `config` (a path under `fs`): `httpd` on the
/// RHEL family, `apache2` elsewhere.
pub fn apache_service(fs: &Sysroot, config: &std::path::Path) -> &'static str {
    let abs = std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf());
    let apache = fs.apache_path(&abs).unwrap_or_default();
    let rhel = apache.starts_with("/etc/httpd/")
        || (fs.is_file("/etc/httpd/conf/httpd.conf") && !fs.is_file("/etc/apache2/apache2.conf"));
    if rhel { "httpd" } else { "apache2" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_layout_under_the_sysroot() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Sysroot::at(dir.path());
        assert!(configs(&fs).is_empty());
        std::fs::create_dir_all(dir.path().join("etc/httpd/conf")).unwrap();
        std::fs::write(dir.path().join("etc/httpd/conf/httpd.conf"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("var/www/vhosts/system/a.example/conf")).unwrap();
        std::fs::write(dir.path().join("var/www/vhosts/system/a.example/conf/httpd.conf"), "").unwrap();
        let found = configs(&fs);
        let labels: Vec<&str> = found.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "RHEL/CentOS/Fedora: /etc/httpd/conf/httpd.conf",
                "Plesk vhosts root: /var/www/vhosts (a.example)"
            ]
        );
        assert_eq!(found[1].path, dir.path().join("var/www/vhosts"));
        assert_eq!(apache_service(&fs, &found[1].path), "httpd");
        std::fs::create_dir_all(dir.path().join("etc/apache2")).unwrap();
        std::fs::write(dir.path().join("etc/apache2/apache2.conf"), "").unwrap();
        assert_eq!(configs(&fs)[0].label, "Debian/Ubuntu: /etc/apache2/apache2.conf");
        assert_eq!(apache_service(&fs, &found[1].path), "apache2");
        assert_eq!(apache_service(&fs, &found[0].path), "httpd");
    }
}
