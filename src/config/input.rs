//! What the path on the command line is: a server config file, a Plesk vhosts root, or a
//! bare document root.

use crate::source::Sysroot;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// httpd.conf / apache2.conf and what it includes.
    ConfigFile,
    /// `/var/www/vhosts` with `system/<domain>/conf/httpd.conf` per domain.
    PleskRoot,
    /// A folder of files and .htaccess, served as one virtual host.
    DocumentRoot,
}

/// Decides the kind of an existing Apache path.
pub fn classify(fs: &Sysroot, apache_path: &str) -> Option<InputKind> {
    if fs.is_file(apache_path) {
        return Some(InputKind::ConfigFile);
    }
    if !fs.is_dir(apache_path) {
        return None;
    }
    // One domain is enough to tell (a server of thousands is listed once, by the loader).
    let system = format!("{}/system", apache_path.trim_end_matches('/'));
    let names = fs.list_dir(&system).unwrap_or_default();
    if names.iter().any(|d| fs.is_file(&format!("{system}/{d}/conf/httpd.conf"))) {
        Some(InputKind::PleskRoot)
    } else {
        Some(InputKind::DocumentRoot)
    }
}

/// Domains under a Plesk vhosts root that have a generated `conf/httpd.conf`, sorted.
pub fn plesk_domains(fs: &Sysroot, root: &str) -> Vec<String> {
    let system = format!("{}/system", root.trim_end_matches('/'));
    fs.list_dir(&system)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| fs.is_file(&format!("{system}/{d}/conf/httpd.conf")))
        .collect()
}

/// Where distributions keep the server-wide configuration, in the order lighten looks.
pub const SERVER_CONFIGS: &[&str] = &["/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf"];
