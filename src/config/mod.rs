//! The configuration as Apache reads it at startup: the input classified (config file,
//! Plesk vhosts root, document root), includes followed, `${VAR}` substituted, conditional
//! sections decided, every directive checked against the catalogue.
//!
//! This is the only stage before `run` that reads files.  It knows nothing of virtual
//! hosts or scopes; [`crate::model`] builds those from the [`Config`].  It also offers
//! [`Config::read_htaccess`] so the model can read per-directory files once it knows
//! which `AllowOverride` applies.

mod condition;
mod context;
mod defines;
mod envvars;
mod include;
mod input;
mod item;
mod loader;
pub use loader::Shared;
mod modules;

pub use context::{Context, HtaccessPerms, Place};
pub use defines::Defines;
pub use input::{InputKind, SERVER_CONFIGS, plesk_domains};
pub use item::{Condition, ConditionKind, Item, ItemKind, visit_flat};
pub use loader::{decode, invalid_utf8};
pub use modules::{LoadedModule, Modules};

use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::source::{FileId, FileKind, SourceMap, Span, Sysroot};
use crate::syntax::{self, words::quote};
use loader::Reader;
use std::path::Path;
use std::sync::Arc;

/// The Apache release lighten reads configurations for unless told otherwise: Debian 12's.
pub const DEFAULT_APACHE_VERSION: &str = "2.4.71";

/// How many directory entries the search for .htaccess files visits at most by default.
pub const DEFAULT_WALK_LIMIT: usize = 200_000;

/// How to read the input; resolved from flags by the command line.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub sysroot: Sysroot,
    /// Overrides the ServerRoot a config file would start with.
    pub server_root: Option<String>,
    /// `-D NAME` / `--define NAME=VALUE`.
    pub defines: Vec<(String, Option<String>)>,
    pub apache_version: String,
    /// For a Plesk root: the server-wide config to read first.
    pub server_config: Option<String>,
    /// For a document root: the host name of the one virtual host.
    pub server_name: String,
    /// How many directory entries the search for .htaccess files may visit.
    pub walk_limit: usize,
    /// For a Plesk root: read only these domains (`None`: every domain).  The server-wide
    /// configuration is read as usual, but the generated `httpd.conf` of every other
    /// domain is skipped wherever it is included from, so one hosting account can be
    /// converted alone, in the context of its server.
    pub plesk_domains: Option<Vec<String>>,
    /// What loads of the same tree may share (`lighten batch` reads the server
    /// configuration once per account): include expansions and file identities, kept for
    /// as long as the caller keeps this.  `None`: every load looks at the disk afresh.
    pub shared: Option<Arc<loader::Shared>>,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            sysroot: Sysroot::host(),
            server_root: None,
            defines: Vec::new(),
            apache_version: DEFAULT_APACHE_VERSION.to_string(),
            server_config: None,
            server_name: "localhost".to_string(),
            walk_limit: DEFAULT_WALK_LIMIT,
            plesk_domains: None,
            shared: None,
        }
    }
}

/// What was given and how it was taken.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Input {
    pub kind: InputKind,
    /// The path as Apache sees it.
    pub path: String,
    /// For a Plesk root, the domains found.
    pub domains: Vec<String>,
}

/// Failures that leave nothing to inspect.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}: no such file or directory")]
    NotFound(String),
    #[error(
        "{path} is neither inside the sysroot {root} nor, as on the server, a path of it ({inside} does not exist)"
    )]
    OutsideSysroot { path: String, root: String, inside: String },
    #[error("{root}: no domain {domain} (no system/{domain}/conf/httpd.conf)")]
    NoSuchDomain { root: String, domain: String },
    #[error("{path}: {why}")]
    NotASite { path: String, why: String },
}

pub struct Config {
    pub input: Input,
    pub sources: SourceMap,
    /// The main configuration, in reading order.
    pub items: Vec<Item>,
    pub modules: Arc<Modules>,
    pub defines: Arc<Defines>,
    pub server_root: String,
    pub apache_version: String,
    pub diagnostics: Diagnostics,
    pub sysroot: Sysroot,
    pub walk_limit: usize,
    /// The folders where a file added or removed would change what an Include reads (as
    /// Apache names them): `lighten watch` watches them beside the files read.
    pub include_dirs: std::collections::BTreeSet<String>,
}

/// Loads whatever `path` is (a host path; under a sysroot it must lie inside it).
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Config, LoadError> {
    let fs = &opts.sysroot;
    let apache_path = apache_path_of(path, fs)?;
    let kind =
        input::classify(fs, &apache_path).ok_or_else(|| LoadError::NotFound(path.display().to_string()))?;
    if kind == InputKind::DocumentRoot
        && let Some(why) = input::not_a_site(fs, &apache_path)
    {
        return Err(LoadError::NotASite { path: path.display().to_string(), why });
    }
    let parent = parent_dir(&apache_path);
    let server_root = opts.server_root.clone().unwrap_or_else(|| match kind {
        InputKind::ConfigFile => parent.clone(),
        _ => "/etc/apache2".to_string(),
    });
    let mut reader = Reader::new(fs, server_root, opts.apache_version.clone());
    reader.shared = opts.shared.clone();
    let mut items = Vec::new();
    let mut domains = Vec::new();
    match kind {
        InputKind::ConfigFile => {
            reader.read_envvars(&parent);
            apply_defines(&mut reader, opts);
            if let Some((_, its)) = reader.read_config(&apache_path, None) {
                items = its;
            }
        }
        InputKind::PleskRoot => {
            let all = match &opts.shared {
                Some(shared) => shared.plesk_domains(fs, &apache_path),
                None => plesk_domains(fs, &apache_path),
            };
            domains = match &opts.plesk_domains {
                None => all.clone(),
                Some(only) => {
                    let only: std::collections::BTreeSet<&str> = only.iter().map(String::as_str).collect();
                    if let Some(d) =
                        only.iter().find(|d| all.binary_search_by(|a| a.as_str().cmp(d)).is_err())
                    {
                        return Err(LoadError::NoSuchDomain { root: apache_path, domain: d.to_string() });
                    }
                    all.iter().filter(|d| only.contains(d.as_str())).cloned().collect()
                }
            };
            items = load_plesk(&mut reader, opts, &apache_path, &all, &domains);
        }
        InputKind::DocumentRoot => {
            apply_defines(&mut reader, opts);
            let text = include_str!("../../templates/defaults/docroot.conf")
                .replace("{{DOCROOT}}", &quote(&apache_path))
                .replace("{{SERVER_NAME}}", &quote(&opts.server_name));
            let (id, doc) = reader.add_builtin("lighten:docroot-defaults", text);
            reader.diags.push(
                Diagnostic::new(
                    Code::AssumedDefaults,
                    Span::new(id, 0, 0),
                    format!("{apache_path} is a document root: it is served as one virtual host with Debian's defaults and AllowOverride All"),
                )
                .with_help("give the server's apache2.conf instead to use its real settings"),
            );
            items = reader.expand(doc.nodes, &Context::server(), true);
        }
    }
    Ok(Config {
        input: Input { kind, path: apache_path, domains },
        modules: reader.modules,
        defines: reader.defines,
        server_root: reader.server_root,
        apache_version: reader.version,
        diagnostics: reader.diags,
        sources: reader.sources,
        items,
        sysroot: fs.clone(),
        walk_limit: opts.walk_limit,
        include_dirs: reader.include_dirs,
    })
}

/// What `path` is, without reading any configuration: its kind, its Apache path and, for a
/// Plesk root, every domain in it (whatever [`LoadOptions::plesk_domains`] selects).
pub fn classify(path: &Path, opts: &LoadOptions) -> Result<Input, LoadError> {
    let fs = &opts.sysroot;
    let apache_path = apache_path_of(path, fs)?;
    let kind =
        input::classify(fs, &apache_path).ok_or_else(|| LoadError::NotFound(path.display().to_string()))?;
    if kind == InputKind::DocumentRoot
        && let Some(why) = input::not_a_site(fs, &apache_path)
    {
        return Err(LoadError::NotASite { path: path.display().to_string(), why });
    }
    let domains = if kind == InputKind::PleskRoot { plesk_domains(fs, &apache_path) } else { Vec::new() };
    Ok(Input { kind, path: apache_path, domains })
}

/// The path as Apache names it ([`Sysroot::given`]).
fn apache_path_of(path: &Path, fs: &Sysroot) -> Result<String, LoadError> {
    fs.given(path).ok_or_else(|| LoadError::OutsideSysroot {
        path: path.display().to_string(),
        root: fs.root().map(|r| r.display().to_string()).unwrap_or_default(),
        inside: fs.host_path(&path.to_string_lossy()).display().to_string(),
    })
}

/// Reads `text` as a main configuration file named `display` (tests and fuzzing: no
/// file is read for the main text; includes still go through the sysroot).
pub fn load_source(display: &str, text: &str, opts: &LoadOptions) -> Config {
    let fs = &opts.sysroot;
    let mut reader = Reader::new(
        fs,
        opts.server_root.clone().unwrap_or_else(|| "/etc/apache2".into()),
        opts.apache_version.clone(),
    );
    apply_defines(&mut reader, opts);
    let id = reader.add_file(
        display.to_string(),
        display.to_string(),
        FileKind::ServerConfig,
        text.as_bytes().to_vec(),
    );
    let (doc, diags) = syntax::parse(id, &reader.sources.file(id).text);
    reader.diags.extend(diags);
    let items = reader.expand(doc.nodes, &Context::server(), true);
    Config {
        input: Input { kind: InputKind::ConfigFile, path: display.to_string(), domains: Vec::new() },
        modules: reader.modules,
        defines: reader.defines,
        server_root: reader.server_root,
        apache_version: reader.version,
        diagnostics: reader.diags,
        sources: reader.sources,
        items,
        sysroot: fs.clone(),
        walk_limit: opts.walk_limit,
        include_dirs: reader.include_dirs,
    }
}

fn apply_defines(reader: &mut Reader, opts: &LoadOptions) {
    for (n, v) in &opts.defines {
        Arc::make_mut(&mut reader.defines).define(n, v.as_deref());
    }
}

fn parent_dir(p: &str) -> String {
    match p.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((dir, _)) => dir.to_string(),
    }
}

/// The server-wide configuration a Plesk root is read inside: `--server-config`, else the
/// first of [`SERVER_CONFIGS`] under the sysroot.  `None`: lighten's stand-in
/// (`templates/defaults/plesk.conf`) is assumed, with an `assumed-defaults` note.
pub fn plesk_server_config(opts: &LoadOptions) -> Option<String> {
    opts.server_config
        .clone()
        .or_else(|| SERVER_CONFIGS.iter().find(|p| opts.sysroot.is_file(p)).map(|p| p.to_string()))
}

/// A Plesk server: the server-wide config (given, found, or lighten's stand-in), then any
/// of `domains` whose generated httpd.conf that config did not reach.  The httpd.conf of
/// the domains of `all` not in `domains` is not read, wherever it is included from.
fn load_plesk(
    reader: &mut Reader,
    opts: &LoadOptions,
    root: &str,
    all: &[String],
    domains: &[String],
) -> Vec<crate::config::Item> {
    let fs = reader.fs;
    if domains.len() < all.len() {
        let wanted: std::collections::BTreeSet<&String> = domains.iter().collect();
        for d in all.iter().filter(|d| !wanted.contains(d)) {
            reader.skip(&format!("{}/system/{d}/conf/httpd.conf", root.trim_end_matches('/')));
        }
    }
    let found = plesk_server_config(opts);
    apply_defines(reader, opts);
    let mut items = Vec::new();
    match found {
        Some(main) => {
            reader.server_root = opts.server_root.clone().unwrap_or_else(|| parent_dir(&main));
            let dir = parent_dir(&main);
            reader.read_envvars(&dir);
            if let Some((_, its)) = reader.read_config(&main, None) {
                items = its;
            }
        }
        None => {
            let (id, doc) = reader.add_builtin(
                "lighten:plesk-defaults",
                include_str!("../../templates/defaults/plesk.conf").to_string(),
            );
            reader.diags.push(
                Diagnostic::new(
                    Code::AssumedDefaults,
                    Span::new(id, 0, 0),
                    "no server configuration under the sysroot (/etc/apache2/apache2.conf, /etc/httpd/conf/httpd.conf): Plesk's usual server settings stand in for it",
                )
                .with_help("pass --server-config with the server's apache2.conf or httpd.conf"),
            );
            items = reader.expand(doc.nodes, &Context::server(), true);
        }
    }
    // Domains the server config did not include are added, as Plesk's own include chain
    // would have read them.
    // (sets: a server has thousands of these files)
    let seen: std::collections::HashSet<std::path::PathBuf> =
        reader.seen.iter().map(|(p, _)| p.clone()).collect();
    let mut missing = Vec::new();
    for d in domains {
        let conf = format!("{}/system/{d}/conf/httpd.conf", root.trim_end_matches('/'));
        let canonical = std::fs::canonicalize(fs.host_path(&conf)).unwrap_or_default();
        if !seen.contains(&canonical) {
            missing.push(conf);
        }
    }
    if !missing.is_empty() {
        let text: String = missing.iter().map(|c| format!("Include {}\n", quote(c))).collect();
        let text = format!("# domains under {root} not reached from the server configuration\n{text}");
        let (id, doc) = reader.add_builtin("lighten:plesk-domains", text);
        reader.diags.push(Diagnostic::new(
            Code::AssumedDefaults,
            Span::new(id, 0, 0),
            format!("{} domain configuration(s) were not included by the server configuration and are read after it", missing.len()),
        ));
        items.extend(reader.expand(doc.nodes, &Context::server(), true));
    }
    // Custom files the generated httpd.conf does not include are not in effect in Apache
    // either (Plesk adds the Include when it regenerates); say so.
    let seen: std::collections::HashSet<std::path::PathBuf> =
        reader.seen.iter().map(|(p, _)| p.clone()).collect();
    for d in domains {
        for custom in ["vhost.conf", "vhost_ssl.conf"] {
            let path = format!("{}/system/{d}/conf/{custom}", root.trim_end_matches('/'));
            if !fs.is_file(&path) {
                continue;
            }
            let canonical = std::fs::canonicalize(fs.host_path(&path)).unwrap_or_default();
            if !seen.contains(&canonical) {
                let bytes = fs.read(&path).unwrap_or_default();
                let id = reader.add_file(
                    fs.host_path(&path).to_string_lossy().into_owned(),
                    path.clone(),
                    FileKind::ServerConfig,
                    bytes,
                );
                reader.diags.push(
                    Diagnostic::new(
                        Code::NotIncluded,
                        Span::new(id, 0, 0),
                        format!("{path} exists but no configuration includes it, so Apache does not use it"),
                    )
                    .with_help(format!("for {d}, Plesk includes it after regenerating the domain's httpd.conf; until then lighten ignores it too")),
                );
            }
        }
    }
    items
}

impl Config {
    /// Reads and expands a per-directory file with the permissions in force for its
    /// directory.  `None` if it cannot be read (the model reports that).
    /// Reads and expands a per-directory file's text (already registered as `id`) with
    /// the permissions in force for its directory.  Takes `&self` only, so many files can
    /// be expanded at once.
    pub fn expand_htaccess(
        &self,
        id: FileId,
        text: &str,
        perms: &HtaccessPerms,
    ) -> (Vec<Item>, Vec<Diagnostic>) {
        let mut reader = Reader::new(&self.sysroot, self.server_root.clone(), self.apache_version.clone());
        reader.modules = Arc::clone(&self.modules);
        reader.defines = Arc::clone(&self.defines);
        let (doc, diags) = syntax::parse(id, text);
        reader.diags.extend(diags);
        let items = reader.expand(doc.nodes, &Context::htaccess(perms.clone()), true);
        (items, reader.diags.into_vec())
    }

    /// The parsed syntax of a file, for printing and round trips.
    pub fn syntax_of(&self, id: FileId) -> syntax::Document {
        syntax::parse(id, &self.sources.file(id).text).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_configs(cfg: &Config) -> Vec<String> {
        cfg.sources
            .files()
            .filter(|(_, f)| f.kind == FileKind::ServerConfig)
            .map(|(_, f)| f.apache_path.clone())
            .collect()
    }

    /// The Plesk fixture reaches every domain's httpd.conf through Plesk's include chain
    /// (`plesk.conf.d/vhosts/*.conf`, symbolic links); one domain read alone keeps the
    /// server-wide files and passes over the others' wherever they are included from.
    #[test]
    fn one_domain_of_a_plesk_root() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plesk");
        let root = fixture.join("var/www/vhosts");
        let mut opts = LoadOptions { sysroot: Sysroot::at(&fixture), ..LoadOptions::default() };
        let all = load(&root, &opts).unwrap();
        assert_eq!(all.input.domains, ["blog.example", "shop.example", "static.example"]);

        opts.plesk_domains = Some(vec!["shop.example".to_string()]);
        let one = load(&root, &opts).unwrap();
        assert_eq!(one.input.domains, ["shop.example"]);
        assert_eq!(classify(&root, &opts).unwrap().domains, all.input.domains, "classify lists every domain");
        let files = server_configs(&one);
        assert!(files.contains(&"/etc/apache2/plesk.conf.d/server.conf".to_string()), "{files:?}");
        for f in [
            "/etc/apache2/plesk.conf.d/vhosts/shop.example.conf",
            "/var/www/vhosts/system/shop.example/conf/vhost.conf",
            "/var/www/vhosts/system/shop.example/conf/vhost_ssl.conf",
        ] {
            assert!(files.contains(&f.to_string()), "{f} not read: {files:?}");
        }
        assert!(
            !files.iter().any(|f| f.contains("blog.example") || f.contains("static.example")),
            "{files:?}"
        );
        // Nothing new to report: the same diagnostics as the whole server's, minus the
        // other domains' own.
        let codes = |c: &Config| c.diagnostics.iter().map(|d| d.code.name()).collect::<Vec<_>>();
        assert!(codes(&one).iter().all(|c| codes(&all).contains(c)), "{:?}", codes(&one));
        assert_eq!(plesk_server_config(&opts), None, "the fixture has no apache2.conf: defaults assumed");
        assert!(one.diagnostics.iter().any(|d| d.code == Code::AssumedDefaults));

        opts.plesk_domains = Some(vec!["nope.example".to_string()]);
        let e = load(&root, &opts).err().expect("an unknown domain is an error");
        assert!(matches!(e, LoadError::NoSuchDomain { .. }), "{e}");
    }
}
