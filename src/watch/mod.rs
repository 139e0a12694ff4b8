//! `lighten watch`: what to watch after a conversion, which filesystem events matter,
//! and the one line logged per change.  The loop itself (notify, reconverting, writing,
//! reloading lighttpd) is `cli::watch`; this module decides and describes.
//!
//! Watched: every Apache file the conversion read (by its folder, so that a file an
//! `Include` wildcard would pick up is seen when it appears) and, recursively, every
//! folder .htaccess files were looked for under (`Model::access_roots`), where only the
//! per-directory file names count (`Model::access_names`; a WP Super Cache page written
//! under wp-content/cache is not a change).

use crate::config::Config;
use crate::model::Model;
use crate::source::FileKind;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a conversion depends on, as paths on this machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watched {
    /// The server configuration files read.
    pub config_files: BTreeSet<PathBuf>,
    /// Their folders, watched one level deep.
    pub config_dirs: BTreeSet<PathBuf>,
    /// Folders watched with everything below them: where .htaccess files are read.
    pub trees: BTreeSet<PathBuf>,
    /// The per-directory file names (`AccessFileName`, `.htaccess` always among them).
    pub names: BTreeSet<String>,
    /// Never a change: the output folder and the runtime folder (logs, pid file).
    pub ignored: Vec<PathBuf>,
}

/// Why an event matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// A server configuration file, or a file appearing beside one.
    ServerConfig,
    /// A per-directory file (written, created, removed, renamed).
    AccessFile,
    /// A folder under a watched tree created, removed or renamed: it may hold or have
    /// held per-directory files.
    Folder,
    /// No event: the whole conversion that follows site-only steps once the folders are
    /// quiet (it brings report.md and report.json up to date, and must find nothing else
    /// to write).
    Confirm,
}

impl Watched {
    /// The set for a loaded configuration and its model.
    pub fn of(cfg: &Config, model: &Model, ignored: Vec<PathBuf>) -> Watched {
        let mut w = Watched { ignored, ..Watched::default() };
        for (_, f) in cfg.sources.files() {
            if f.kind != FileKind::ServerConfig {
                continue;
            }
            let p = absolute(PathBuf::from(&f.display));
            if let Some(d) = p.parent() {
                w.config_dirs.insert(d.to_path_buf());
            }
            w.config_files.insert(p);
        }
        // and where a file added would be read by an Include (an empty IncludeOptional
        // folder, a path that does not exist yet)
        for d in &cfg.include_dirs {
            w.config_dirs.insert(absolute(cfg.sysroot.host_path(d)));
        }
        for r in &model.access_roots {
            let host = absolute(cfg.sysroot.host_path(r));
            if host.is_dir() {
                w.trees.insert(host);
            }
        }
        // A tree inside another is watched by it. Paths order by components, so a folder's
        // descendants follow it: one pass keeps the outermost.
        let mut outer: Option<PathBuf> = None;
        w.trees.retain(|t| {
            if outer.as_ref().is_some_and(|o| t.starts_with(o)) {
                return false;
            }
            outer = Some(t.clone());
            true
        });
        w.names = model.access_names.iter().cloned().collect();
        w.names.insert(".htaccess".into());
        w
    }

    /// Whether an event on `path` can change the conversion; `is_dir_event` when the
    /// event says the path is (or was) a folder, or it is one now.
    pub fn why(&self, path: &Path, is_dir_event: bool) -> Option<Why> {
        if self.ignored.iter().any(|i| path.starts_with(i)) {
            return None;
        }
        if self.config_files.contains(path) {
            return Some(Why::ServerConfig);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // By the path's folders (a server has a tree per account).
        let in_tree = path.ancestors().any(|a| self.trees.contains(a));
        if in_tree && self.names.contains(&name) {
            return Some(Why::AccessFile);
        }
        if let Some(parent) = path.parent()
            && self.config_dirs.contains(parent)
            && !editor_noise(&name)
        {
            // A new file where an Include wildcard may read it, or a folder on the way to a
            // path an Include names (then watched in turn); a file of these folders the
            // conversion did not read changes nothing, and reconverting says so.
            return Some(Why::ServerConfig);
        }
        // A folder, or a symbolic link made (the static lane trusts the links the conversion
        // saw; a new one is a whole step, which takes it into account).
        if in_tree
            && (is_dir_event || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()))
        {
            return Some(Why::Folder);
        }
        None
    }
}

fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() { p } else { std::env::current_dir().unwrap_or_default().join(p) }
}

/// Files editors and package managers leave beside the ones they write (vim's `4913`
/// probe and `~` backups, swap files, dpkg's leftovers): Apache's wildcards would read
/// some of them, but they come and go within one save.
fn editor_noise(name: &str) -> bool {
    name == "4913"
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name.starts_with(".#")
        || name.ends_with(".dpkg-tmp")
        || name.ends_with(".dpkg-new")
}

/// What became of one change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The new output is written and in force.
    Converted,
    /// The conversion gives the same output: nothing to do.
    Unchanged,
    /// The new output was not written (Apache would refuse the configuration, the output
    /// failed its checks, or --strict and something is inexact). The output in force
    /// stays; requests that meet a changed .htaccess answer 503 there (its safety net).
    Refused,
}

/// A finding of the new conversion in a changed file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub at: String,
    pub directive: String,
    pub fate: String,
}

/// How the running lighttpd was told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Reload {
    /// Only Lua modules and hook scripts changed: the lighttpd with this pid reads them at
    /// its next request (mod_magnet reloads a changed hook script; the hook reloads the
    /// modules), with no restart.
    Reloaded { pid: u32 },
    /// A graceful restart (SIGUSR1) of the lighttpd with this pid, finished.
    Restarted { pid: u32 },
    /// Signalled, but its error log did not say it started again in time.
    Signalled { pid: u32 },
    /// No lighttpd runs from this output: the next start reads it.
    NotRunning,
    /// Nothing was written.
    None,
}

/// The line logged for one change.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// When the first event of the change was seen (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// The files and folders that changed, as on this machine.
    pub changed: Vec<String>,
    pub why: Vec<Why>,
    pub outcome: Outcome,
    /// Why it was refused, or a note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The directives by fate in the new conversion.
    pub counts: BTreeMap<String, usize>,
    /// Approximated, unsupported and failed directives in the changed files.
    pub findings: Vec<Finding>,
    pub reload: Reload,
    /// Requests derived for the changed files that the new output answered, in a
    /// sandbox, before it was written (a fail-open among them refuses the change).
    pub checked: usize,
    /// From the first event to the new output in force (written and, when lighttpd was
    /// running, restarted), in milliseconds; for a refusal, to the refusal.
    pub enforce_ms: u64,
    /// Of that, reading and converting.
    pub convert_ms: u64,
    /// The sites converted alone (one name each), when the step converted only the sites
    /// the change concerns; empty when it converted the whole configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
    /// The output's files written, relative to its folder.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
}

/// The reports, which site-only steps leave to the whole conversion after them.
pub const REPORTS: [&str; 2] = ["report.md", "report.json"];

impl Record {
    /// The record of a change seen at `wall` (refused until the step says otherwise).
    pub fn new(changed: &[PathBuf], why: Vec<Why>, wall: std::time::SystemTime) -> Record {
        Record {
            time: rfc3339(wall),
            changed: changed.iter().map(|p| p.display().to_string()).collect(),
            why,
            outcome: Outcome::Refused,
            reason: None,
            counts: BTreeMap::new(),
            findings: Vec::new(),
            reload: Reload::None,
            checked: 0,
            enforce_ms: 0,
            convert_ms: 0,
            sites: Vec::new(),
            written: Vec::new(),
        }
    }

    /// Marks the record of the whole conversion after site-only steps: anything it wrote
    /// beside the reports is what those steps missed, and is said.
    pub fn confirm(&mut self) {
        let missed: Vec<&String> = self.written.iter().filter(|w| !REPORTS.contains(&w.as_str())).collect();
        if self.outcome == Outcome::Converted && !missed.is_empty() {
            let missed: Vec<&str> = missed.iter().map(|s| s.as_str()).collect();
            self.reason = Some(format!(
                "the site-only steps before it left {} different from the whole conversion; the whole conversion is written",
                missed.join(", ")
            ));
        }
    }

    /// One line of text.
    pub fn text(&self) -> String {
        let what = if self.why.contains(&Why::Confirm) {
            "whole conversion after the site-only steps".to_string()
        } else if self.changed.is_empty() {
            "start".to_string()
        } else {
            self.changed.join(", ")
        };
        let mut s = format!("{} {what}: ", self.time);
        if !self.sites.is_empty() {
            s.push_str(&format!("site {} alone, ", self.sites.join(", ")));
        }
        match self.outcome {
            Outcome::Converted => {
                let counts: Vec<String> = self.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
                s.push_str(&format!("converted ({})", counts.join(", ")));
                if self.checked > 0 {
                    s.push_str(&format!(", {} answers checked against Apache's", self.checked));
                }
                match &self.reload {
                    Reload::Reloaded { pid } => {
                        s.push_str(&format!(", lighttpd {pid} reads its new Lua at the next request"))
                    }
                    Reload::Restarted { pid } => {
                        s.push_str(&format!(", lighttpd {pid} restarted gracefully"))
                    }
                    Reload::Signalled { pid } => s.push_str(&format!(
                        ", lighttpd {pid} signalled (its restart was not seen in its log)"
                    )),
                    Reload::NotRunning => {
                        s.push_str(", no lighttpd running from it (the next start reads it)")
                    }
                    Reload::None => {}
                }
                s.push_str(&format!(", in force after {} ms", self.enforce_ms));
                if let Some(r) = &self.reason {
                    s.push_str(&format!("; {r}"));
                }
            }
            Outcome::Unchanged => s.push_str("the conversion is the same, nothing to do"),
            Outcome::Refused => {
                s.push_str("refused, the output in force stays");
                if let Some(r) = &self.reason {
                    s.push_str(&format!(": {r}"));
                }
                if self.why.contains(&Why::AccessFile) {
                    s.push_str("; requests that meet the changed .htaccess answer 503 until it converts");
                }
            }
        }
        for f in &self.findings {
            s.push_str(&format!("\n  {} {}: {}", f.at, f.directive, f.fate));
        }
        s
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a record serializes")
    }
}

/// The findings of `report` that point into `changed` (paths as on this machine).
pub fn findings_in(report: &crate::translate::report::Report, changed: &[PathBuf]) -> Vec<Finding> {
    // A changed file names its own lines (`path:`); a changed folder those of the files below.
    let prefixes: Vec<String> = changed
        .iter()
        .map(|p| if p.is_dir() { format!("{}/", p.display()) } else { format!("{}:", p.display()) })
        .collect();
    let mut out: Vec<Finding> = report
        .entries
        .iter()
        .filter(|e| !matches!(e.fate.label(), "exact" | "ignored" | "noted"))
        .filter(|e| prefixes.iter().any(|p| e.at.starts_with(p.as_str())))
        .map(|e| Finding {
            at: e.at.clone(),
            directive: format!("{} {}", e.directive, e.args).trim().to_string(),
            fate: e.fate.label().to_string(),
        })
        .collect();
    out.dedup();
    out
}

/// The errors in changed .htaccess files (a syntax error, a directive not allowed there):
/// Apache answers 500 for the folders they govern, and so does the conversion.
pub fn htaccess_errors(cfg: &Config, changed: &[PathBuf]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in cfg.diagnostics.iter() {
        let Some(span) = d.span else { continue };
        let f = cfg.sources.file(span.file);
        if d.severity != crate::diagnostic::Severity::Error || f.kind != FileKind::Htaccess {
            continue;
        }
        let path = absolute(PathBuf::from(&f.display));
        if changed.iter().any(|c| path.starts_with(c)) {
            out.push(Finding {
                at: cfg.sources.locate(span),
                directive: d.message.clone(),
                fate: "error: Apache answers 500 there, and so does the conversion".into(),
            });
        }
    }
    out
}

/// A UTC time as RFC 3339 with milliseconds (no time zone library for one format).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_is_utc_civil_time() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_796_184_000_123);
        assert_eq!(rfc3339(t), "2026-12-02T04:00:00.123Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = std::time::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    fn watched() -> Watched {
        Watched {
            config_files: [PathBuf::from("/etc/apache2/apache2.conf")].into(),
            config_dirs: [PathBuf::from("/etc/apache2"), PathBuf::from("/etc/apache2/sites-enabled")].into(),
            trees: [PathBuf::from("/var/www/html")].into(),
            names: [".htaccess".to_string()].into(),
            ignored: vec![PathBuf::from("/var/www/html/out")],
        }
    }

    #[test]
    fn only_what_can_change_the_conversion_counts() {
        let w = watched();
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(w.why(&p("/etc/apache2/apache2.conf"), false), Some(Why::ServerConfig));
        assert_eq!(w.why(&p("/etc/apache2/sites-enabled/new.conf"), false), Some(Why::ServerConfig));
        assert_eq!(w.why(&p("/etc/apache2/sites-enabled/.new.conf.swp"), false), None);
        assert_eq!(w.why(&p("/var/www/html/.htaccess"), false), Some(Why::AccessFile));
        assert_eq!(w.why(&p("/var/www/html/a/b/.htaccess"), false), Some(Why::AccessFile));
        assert_eq!(w.why(&p("/var/www/html/wp-content/cache/index.html"), false), None);
        assert_eq!(w.why(&p("/var/www/html/wp-content/new"), true), Some(Why::Folder));
        assert_eq!(w.why(&p("/var/www/html/out/.htaccess"), false), None);
        assert_eq!(w.why(&p("/srv/other/.htaccess"), false), None);
    }

    #[test]
    fn a_file_added_where_an_include_would_read_it_counts() {
        // (review 11: a file written into an empty IncludeOptional folder was never read)
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("etc/apache2/extra.d")).unwrap();
        std::fs::write(
            t.path().join("etc/apache2/apache2.conf"),
            "IncludeOptional /etc/apache2/extra.d/*.conf\nIncludeOptional /etc/apache2/later/x.conf\n",
        )
        .unwrap();
        let opts = crate::config::LoadOptions {
            sysroot: crate::source::Sysroot::at(t.path()),
            ..crate::config::LoadOptions::default()
        };
        let mut cfg = crate::config::load(&t.path().join("etc/apache2/apache2.conf"), &opts).unwrap();
        let (model, _) = crate::model::build(&mut cfg);
        let w = Watched::of(&cfg, &model, Vec::new());
        let root = std::fs::canonicalize(t.path()).unwrap();
        let at = |rel: &str| root.join(rel);
        assert_eq!(w.why(&at("etc/apache2/extra.d/deny.conf"), false), Some(Why::ServerConfig), "{w:?}");
        // a path that does not exist yet: a folder made on the way to it
        assert_eq!(w.why(&at("etc/apache2/later"), true), Some(Why::ServerConfig), "{w:?}");
    }
}
