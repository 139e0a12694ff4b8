//! lighten's settings file: defaults for the flags an admin sets the same way on every
//! run (TOML, read with serde). The first file found is used, whole (files are not
//! merged): `--settings FILE`, `$LIGHTEN_SETTINGS`, `./lighten.toml`,
//! `$XDG_CONFIG_HOME/lighten/lighten.toml` (or `~/.config/lighten/lighten.toml`),
//! `/etc/lighten/lighten.toml`. A flag given on the command line always wins.
//!
//! ```toml
//! target = "lighttpd"                      # the only target today
//! out = "/etc/lighttpd/from-apache"        # convert's --out when not given
//! php_backend = "unix:/run/php/php8.2-fpm.sock"   # where lighttpd sends PHP
//! approximations = "refuse"                # "allow" (default) or "refuse" (= --strict)
//! listen = ["80=0.0.0.0:80", "443=0.0.0.0:443"]
//!
//! [bench]
//! repeat = 5
//! warmup = 2.0
//! ```
//!
//! This module reads, checks and merges: [`Settings::resolve`] lays the command line's
//! values ([`Given`], what each command's flags say) over the file's and the defaults,
//! once, before any command runs, so every command sees one [`Resolved`] value and none
//! merges by hand (ripgrep's low-level and high-level arguments).

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub target: Option<Target>,
    pub out: Option<PathBuf>,
    /// `unix:/path/to.sock` or `host:port`: replaces the PHP backend the Apache
    /// configuration names.
    pub php_backend: Option<String>,
    pub approximations: Option<Policy>,
    pub listen: Option<Vec<String>>,
    pub runtime_dir: Option<PathBuf>,
    #[serde(default)]
    pub bench: Bench,
    /// The file these came from (not in the file).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Lighttpd,
}

/// What to do when something can only be approximated.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Write it, report it, exit 1 (unsupported parts fail closed).
    Allow,
    /// Write nothing (`--strict`).
    Refuse,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    pub repeat: Option<usize>,
    pub warmup: Option<f64>,
}

/// What the command line says of the settings a file can also give (the flags of the
/// command being run; a command without such a flag leaves it unset).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Given {
    pub out: Option<PathBuf>,
    pub listen: Vec<String>,
    pub runtime_dir: Option<PathBuf>,
    pub php_backend: Option<String>,
    /// `--strict`.
    pub strict: bool,
    pub repeat: Option<usize>,
    pub warmup: Option<f64>,
}

/// Every setting, decided once: the flag, else the settings file, else the default.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The output folder; `None` when neither a flag nor the file gives one (commands that
    /// need it say so: [`Resolved::out`]).
    pub out: Option<PathBuf>,
    /// Whether `out` is the command line's (`--out`) rather than the file's.
    pub out_given: bool,
    /// `APACHEPORT=ADDR:PORT` or `ADDR:PORT`, as `--listen` takes them.
    pub listen: Vec<String>,
    pub runtime_dir: Option<PathBuf>,
    pub php_backend: Option<String>,
    /// Refuse to write anything approximated (`--strict`, `approximations = "refuse"`).
    pub strict: bool,
    /// Benchmark rounds per load and server (`bench --compare`), at least 1.
    pub repeat: usize,
    /// Warm-up before each measured round.
    pub warmup: Duration,
}

impl Resolved {
    /// The output folder, or the error that says how to give one.
    pub fn out(&self) -> anyhow::Result<&Path> {
        self.out
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--out is needed (or `out = \"DIR\"` in the settings file)"))
    }
}

impl Settings {
    /// `given` over this file over the defaults.
    pub fn resolve(&self, given: Given) -> Resolved {
        let out_given = given.out.is_some();
        Resolved {
            out: given.out.or_else(|| self.out.clone()),
            out_given,
            listen: if given.listen.is_empty() {
                self.listen.clone().unwrap_or_default()
            } else {
                given.listen
            },
            runtime_dir: given.runtime_dir.or_else(|| self.runtime_dir.clone()),
            php_backend: given.php_backend.or_else(|| self.php_backend.clone()),
            strict: given.strict || self.approximations == Some(Policy::Refuse),
            repeat: given.repeat.or(self.bench.repeat).unwrap_or(3).max(1),
            warmup: Duration::from_secs_f64(given.warmup.or(self.bench.warmup).unwrap_or(1.0).max(0.0)),
        }
    }
}

/// A settings file that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}:{line}:{column}: {message}")]
    Invalid { path: String, line: usize, column: usize, message: String },
}

/// The places looked at, in order, when no file is named.
pub fn candidates() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(p) = std::env::var_os("LIGHTEN_SETTINGS") {
        v.push(PathBuf::from(p));
    }
    v.push(PathBuf::from("lighten.toml"));
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if !x.is_empty() => v.push(PathBuf::from(x).join("lighten/lighten.toml")),
        _ => {
            if let Some(h) = std::env::var_os("HOME") {
                v.push(PathBuf::from(h).join(".config/lighten/lighten.toml"));
            }
        }
    }
    v.push(PathBuf::from("/etc/lighten/lighten.toml"));
    v
}

/// The settings: from `explicit` (which must exist), else the first candidate that
/// exists, else the defaults.
pub fn load(explicit: Option<&Path>) -> Result<Settings, SettingsError> {
    if let Some(p) = explicit {
        return read(p);
    }
    for p in candidates() {
        if p.is_file() {
            return read(&p);
        }
    }
    Ok(Settings::default())
}

pub fn read(path: &Path) -> Result<Settings, SettingsError> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|error| SettingsError::Read { path: shown.clone(), error })?;
    let mut s = parse(&text, &shown)?;
    s.source = Some(path.to_path_buf());
    Ok(s)
}

/// Parses settings text; errors name `path`, line and column.
pub fn parse(text: &str, path: &str) -> Result<Settings, SettingsError> {
    let s: Settings = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |r| r.start);
        let (line, column) = line_col(text, at);
        SettingsError::Invalid { path: path.to_string(), line, column, message: e.message().to_string() }
    })?;
    for l in s.listen.iter().flatten() {
        if !l.contains(':') {
            let at = text.find(l.as_str()).unwrap_or(0);
            let (line, column) = line_col(text, at);
            return Err(SettingsError::Invalid {
                path: path.to_string(),
                line,
                column,
                message: format!("listen '{l}': expected ADDR:PORT or APACHEPORT=ADDR:PORT"),
            });
        }
    }
    Ok(s)
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..text.floor_char_boundary(at)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_and_errors_point_at_the_place() {
        let s = parse(
            "target = \"lighttpd\"\nout = \"/srv/out\"\napproximations = \"refuse\"\n\
             listen = [\"80=0.0.0.0:8080\"]\n[bench]\nrepeat = 5\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(s.out.as_deref(), Some(Path::new("/srv/out")));
        assert_eq!(s.approximations, Some(Policy::Refuse));
        assert_eq!(s.bench.repeat, Some(5));
        assert_eq!(parse("", "t.toml").unwrap(), Settings::default());
        let e = parse("out = \"/x\"\noutt = 1\n", "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:2:1: unknown field `outt`"), "{e}");
        let e = parse("approximations = \"maybe\"\n", "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:1:18: unknown variant `maybe`"), "{e}");
        let e = parse("target = \"nginx\"\n", "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:1:10:"), "{e}");
        let e = parse("listen = [\"8080\"]\n", "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:1:12: listen '8080'"), "{e}");
        let e = parse("out = \"unterminated\n", "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:1:"), "{e}");
    }

    #[test]
    fn a_flag_wins_over_the_file_and_the_file_over_the_default() {
        let mut file = parse(
            "out = \"/srv/out\"\nphp_backend = \"unix:/run/php.sock\"\napproximations = \"refuse\"\n\
             listen = [\"80=0.0.0.0:8080\"]\nruntime_dir = \"/run/l\"\n[bench]\nrepeat = 5\nwarmup = 0.5\n",
            "t.toml",
        )
        .unwrap();
        file.source = Some(PathBuf::from("/etc/lighten/lighten.toml"));
        // nothing on the command line: every value is the file's
        let r = file.resolve(Given::default());
        assert_eq!(r.out.as_deref(), Some(Path::new("/srv/out")));
        assert!(!r.out_given, "the file's, not the command line's");
        assert_eq!(r.listen, ["80=0.0.0.0:8080"]);
        assert_eq!(r.runtime_dir.as_deref(), Some(Path::new("/run/l")));
        assert_eq!(r.php_backend.as_deref(), Some("unix:/run/php.sock"));
        assert!(r.strict, "approximations = \"refuse\" is --strict");
        assert_eq!((r.repeat, r.warmup), (5, Duration::from_millis(500)));
        // every flag given: every value is the flag's
        let given = Given {
            out: Some("/tmp/o".into()),
            listen: vec!["127.0.0.1:9".into()],
            runtime_dir: Some("/tmp/r".into()),
            php_backend: Some("127.0.0.1:9000".into()),
            strict: false,
            repeat: Some(1),
            warmup: Some(0.0),
        };
        let r = file.resolve(given);
        assert_eq!((r.out.as_deref(), r.out_given), (Some(Path::new("/tmp/o")), true));
        assert_eq!(r.listen, ["127.0.0.1:9"]);
        assert_eq!(r.runtime_dir.as_deref(), Some(Path::new("/tmp/r")));
        assert_eq!(r.php_backend.as_deref(), Some("127.0.0.1:9000"));
        assert!(r.strict, "a file's refusal stays: --strict has no opposite flag");
        assert_eq!((r.repeat, r.warmup), (1, Duration::ZERO));
        // neither: the defaults, and the missing --out said so
        let r = Settings::default().resolve(Given::default());
        assert_eq!((r.out.clone(), r.out_given, r.strict), (None, false, false));
        assert_eq!((r.repeat, r.warmup), (3, Duration::from_secs(1)));
        assert!(r.listen.is_empty() && r.php_backend.is_none() && r.runtime_dir.is_none());
        assert!(r.out().unwrap_err().to_string().starts_with("--out is needed"));
        // out of range values are brought into range
        let r =
            Settings::default().resolve(Given { repeat: Some(0), warmup: Some(-2.0), ..Given::default() });
        assert_eq!((r.repeat, r.warmup), (1, Duration::ZERO));
    }
}
