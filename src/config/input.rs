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

/// Why a folder classified as a document root is not one lighten should convert, if it
/// is not: Apache's own configuration folder (a config file in it), a copy of a server's
/// files (etc/apache2/apache2.conf in it), or a folder with no file at all below it
/// (looked for among the first `budget` entries).
pub fn not_a_site(fs: &Sysroot, dir: &str) -> Option<String> {
    let base = dir.trim_end_matches('/');
    for name in ["apache2.conf", "httpd.conf", "conf/httpd.conf"] {
        let p = format!("{base}/{name}");
        if fs.is_file(&p) {
            return Some(format!(
                "it is Apache's configuration folder, not a site (it holds {name}); pass the file: {}",
                fs.host_path(&p).display()
            ));
        }
    }
    // A copy of a server's files (the folder --sysroot takes): its configuration, or its
    // Plesk vhosts root, is what to convert.
    if ["etc/apache2", "etc/httpd"].iter().any(|d| fs.is_dir(&format!("{base}/{d}"))) {
        let copy = fs.host_path(base).display().to_string();
        let mut what: Vec<String> = ["etc/apache2/apache2.conf", "etc/httpd/conf/httpd.conf"]
            .iter()
            .map(|name| format!("{base}/{name}"))
            .filter(|p| fs.is_file(p))
            .collect();
        let plesk = format!("{base}/var/www/vhosts");
        if !plesk_domains(fs, &plesk).is_empty() {
            what.push(plesk);
        }
        let runs: Vec<String> =
            what.iter().map(|p| format!("--sysroot {copy} {}", fs.host_path(p).display())).collect();
        let pass = if runs.is_empty() {
            "pass its httpd.conf or apache2.conf with --sysroot".to_string()
        } else {
            format!("pass what is in it: {}", runs.join(", or "))
        };
        return Some(format!("it is a copy of a server's files, not a site (it holds etc/); {pass}"));
    }
    let mut budget = 10_000usize;
    let mut stack = vec![base.to_string()];
    while let Some(d) = stack.pop() {
        for name in fs.list_dir(&d).unwrap_or_default() {
            let p = format!("{d}/{name}");
            if fs.is_file(&p) {
                return None;
            }
            budget = budget.saturating_sub(1);
            if budget == 0 {
                return None;
            }
            if fs.is_dir(&p) {
                stack.push(p);
            }
        }
    }
    Some(
        "it holds no file: lighten reads an httpd.conf or apache2.conf, a Plesk vhosts root (the folder \
         holding system/<domain>/conf/httpd.conf), or a document root with the site's files and .htaccess"
            .to_string(),
    )
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
