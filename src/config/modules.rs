//! Which modules are loaded at a point of the configuration.
//!
//! `<IfModule>` accepts a module identifier (`rewrite_module`) or its source file name
//! (`mod_rewrite.c`); both are recorded for every module.  Modules compiled into Debian's
//! apache2 (`apache2 -l`) are always present.

use std::collections::BTreeSet;

/// `apache2 -l` on Debian 12: (source file, identifier).
const BUILT_IN: &[(&str, &str)] = &[
    ("core.c", "core_module"),
    ("mod_so.c", "so_module"),
    ("mod_watchdog.c", "watchdog_module"),
    ("http_core.c", "http_module"),
    ("mod_log_config.c", "log_config_module"),
    ("mod_logio.c", "logio_module"),
    ("mod_version.c", "version_module"),
    ("mod_unixd.c", "unixd_module"),
];

/// The MPMs; their directives are listed under `event.c` in the catalogue.
const MPMS: &[&str] = &["event.c", "prefork.c", "worker.c", "mpm_itk.c"];

#[derive(Clone, Debug)]
pub struct Modules {
    names: BTreeSet<String>,
    /// Source file names of loaded modules, in load order (for reports).
    loaded: Vec<LoadedModule>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LoadedModule {
    pub id: String,
    pub file: String,
    pub path: String,
}

impl Default for Modules {
    fn default() -> Modules {
        let mut names = BTreeSet::new();
        for (file, id) in BUILT_IN {
            names.insert(file.to_string());
            names.insert(id.to_string());
        }
        Modules { names, loaded: Vec::new() }
    }
}

impl Modules {
    /// Records `LoadModule id path`; returns the module's source file name.
    pub fn load(&mut self, id: &str, path: &str) -> String {
        let file = source_file_name(id, path);
        self.names.insert(id.to_string());
        self.names.insert(file.clone());
        if let Some(n) = id.strip_prefix("php").and_then(|r| r.strip_suffix("_module")) {
            // mod_php has been mod_php5.c, mod_php7.c and mod_php.c; configs test all three.
            self.names.insert(format!("mod_php{n}.c"));
            self.names.insert("mod_php.c".to_string());
        }
        self.loaded.push(LoadedModule { id: id.to_string(), file: file.clone(), path: path.to_string() });
        file
    }

    /// `<IfModule name>`: Apache compares names exactly.
    pub fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Whether the module a catalogue entry names is present.
    pub fn provides(&self, module_file: &str) -> bool {
        if module_file == "event.c" {
            return MPMS.iter().any(|m| self.names.contains(*m));
        }
        self.names.contains(module_file)
    }

    pub fn loaded(&self) -> &[LoadedModule] {
        &self.loaded
    }

    /// Whether `id` (`log_config_module`) is compiled into Apache: `LoadModule` of it is an
    /// error there ("module log_config_module is built-in and can't be loaded").
    pub fn is_built_in_id(id: &str) -> bool {
        BUILT_IN.iter().any(|(_, i)| *i == id)
    }

    pub fn is_built_in(file: &str) -> bool {
        BUILT_IN.iter().any(|(f, _)| *f == file)
    }
}

/// The source file name Apache registers for a module: `mod_rewrite.so` is `mod_rewrite.c`,
/// Debian's `mod_mpm_event.so` is `event.c`, and other shared objects fall back to the
/// identifier (`fcgid_module` is `mod_fcgid.c`).
fn source_file_name(id: &str, path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = base.strip_suffix(".so").unwrap_or(base);
    if let Some(mpm) = stem.strip_prefix("mod_mpm_") {
        return format!("{mpm}.c");
    }
    if stem.starts_with("mod_") {
        return format!("{stem}.c");
    }
    let name = id.strip_suffix("_module").unwrap_or(id);
    if let Some(n) = name.strip_prefix("php") {
        return if n.is_empty() { "mod_php.c".into() } else { format!("mod_php{n}.c") };
    }
    format!("mod_{name}.c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_debian_packaging() {
        assert_eq!(
            source_file_name("rewrite_module", "/usr/lib/apache2/modules/mod_rewrite.so"),
            "mod_rewrite.c"
        );
        assert_eq!(source_file_name("mpm_event_module", "modules/mod_mpm_event.so"), "event.c");
        assert_eq!(source_file_name("php_module", "/usr/lib/apache2/modules/libphp8.2.so"), "mod_php.c");
        assert_eq!(source_file_name("php7_module", "libphp7.4.so"), "mod_php7.c");
    }

    #[test]
    fn built_ins_and_loaded_modules_answer_ifmodule() {
        let mut m = Modules::default();
        assert!(m.has("mod_version.c") && m.has("version_module"));
        assert!(!m.has("mod_rewrite.c"));
        m.load("rewrite_module", "/x/mod_rewrite.so");
        assert!(m.has("mod_rewrite.c") && m.has("rewrite_module"));
        assert!(!m.provides("event.c"));
        m.load("mpm_prefork_module", "/x/mod_mpm_prefork.so");
        assert!(m.provides("event.c"));
    }
}
