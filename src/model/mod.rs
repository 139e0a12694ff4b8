//! The semantic model: the main server, its virtual hosts, their scopes in Apache's merge
//! order, and every .htaccess with what Apache makes of it, all still carrying spans.
//!
//! Built from a loaded [`Config`]; reads .htaccess files through it (the only file access
//! here).  It decides nothing about lighttpd and evaluates no request: it records what is
//! written, typed where lighten translates it, with diagnostics for what Apache would
//! refuse.

pub mod access;
pub mod alias;
mod coverage;
pub mod dir;
pub mod env;
pub mod expires;
pub mod headers;
pub mod htaccess;
pub mod mime;
mod reread;
pub mod rewrite;
mod scope;
mod select;
pub use select::Prints;
pub mod server;
pub mod settings;
pub mod subnet;
pub mod vhost;

pub use coverage::Coverage;
pub use htaccess::{Htaccess, HtaccessStatus};
pub use reread::{Reread, reread};
pub use scope::{DirectiveUse, Matcher, Scope, ScopeKind, Spanned};
pub use vhost::{SectionRef, VhostAddr, VirtualHost};

use crate::catalogue::catalogue;
use crate::config::{ConditionKind, Config, HtaccessPerms, Input, Item, ItemKind, LoadedModule};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span, clean_path, join};
use mime::Handler;
use serde::Serialize;
use settings::ReadCx;

#[derive(Debug, Serialize)]
pub struct Model {
    pub input: Input,
    pub apache_version: String,
    pub server_root: String,
    pub modules: Vec<LoadedModule>,
    /// The main server: global settings and the sections outside any virtual host.
    pub server: Scope,
    /// The virtual hosts Apache serves, in configuration order.
    pub vhosts: Vec<VirtualHost>,
    /// `<VirtualHost>` sections inside a false `<IfModule>`, `<IfDefine>`, ... : kept to
    /// be shown and counted, never served (no other stage looks at them).
    pub skipped_vhosts: Vec<VirtualHost>,
    pub htaccess: Vec<Htaccess>,
    pub coverage: Coverage,
    /// Where .htaccess files were looked for (the document roots, alias targets and
    /// `<Directory>` paths with AllowOverride, as Apache names them) and the file names
    /// looked for: what `lighten watch` watches.
    #[serde(skip)]
    pub access_roots: Vec<String>,
    #[serde(skip)]
    pub access_names: Vec<String>,
    /// What the symbolic links met under `access_roots` point at, as paths on this
    /// machine: a per-directory file there is also read under the link's name (what
    /// `lighten watch` needs to know to re-read one file on its own).
    #[serde(skip)]
    pub access_links: Vec<std::path::PathBuf>,
    /// Methods beyond Apache's own that the server configuration's `<Limit>` sections
    /// registered (`<Limit PURGE>`): Apache knows them from then on (a .htaccess may name
    /// them; the default handler answers them 405, not 501).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub registered_methods: Vec<String>,
}

/// A PHP backend found in a server's scopes.
#[derive(Clone, Debug, Serialize)]
pub struct PhpHandler {
    pub handler: Handler,
    /// The scope it is set in (`<Files ~ (\.php$)>`, `.php` for AddHandler).
    pub applies_to: String,
    pub at: Span,
}

/// Builds the model; returns it with the diagnostics found on the way.
pub fn build(config: &mut Config) -> (Model, Vec<Diagnostic>) {
    let mut b = Builder {
        diags: Vec::new(),
        htaccess: false,
        registered: Vec::new(),
        vhost_items: Vec::new(),
        expr_modules: expr_modules(config.modules.loaded()),
    };
    let items = std::mem::take(&mut config.items);
    let mut server = Scope::new(ScopeKind::Server, None, Span::new(crate::source::FileId(0), 0, 0), true);
    b.fill(&mut server, items, true, None);
    server.settings.finish();
    let main = server.settings.host().clone();
    let mut vhosts = Vec::new();
    let mut skipped_vhosts = Vec::new();
    for (item, enabled) in std::mem::take(&mut b.vhost_items) {
        let v = b.vhost(item, enabled, &main);
        if enabled { vhosts.push(v) } else { skipped_vhosts.push(v) }
    }
    vhost::mark_defaults(&mut vhosts);
    for v in &mut vhosts {
        v.merge_order = merge_order(&server, &v.scope);
    }
    for v in &vhosts {
        if v.scope.enabled && v.server_name.is_none() {
            b.diags.push(Diagnostic::new(
                Code::NoVirtualHostMatch,
                v.scope.at,
                "neither this virtual host nor the main server has a ServerName: Apache falls back to the machine's host name",
            ));
        }
    }
    let (htaccess, access_roots, access_names, access_links) = b.htaccess(config, &server, &vhosts);
    let mut coverage = Coverage::count(&server, &vhosts, &htaccess);
    for v in &skipped_vhosts {
        coverage.add_scope(&v.scope);
    }
    let model = Model {
        input: config.input.clone(),
        apache_version: config.apache_version.clone(),
        server_root: config.server_root.clone(),
        modules: config.modules.loaded().to_vec(),
        server,
        vhosts,
        skipped_vhosts,
        htaccess,
        coverage,
        access_roots,
        access_names,
        access_links,
        registered_methods: b.registered.clone(),
    };
    (model, b.diags)
}

/// A server with the folders its URLs map to and the per-directory file names it reads.
struct Reach<'a> {
    label: String,
    index: Option<usize>,
    vhost: Option<&'a VirtualHost>,
    roots: Vec<String>,
    names: Vec<String>,
}

struct Builder {
    diags: Vec<Diagnostic>,
    /// Reading a .htaccess file (where `<Limit>` cannot register a new method).
    htaccess: bool,
    /// Methods the server configuration's `<Limit>`/`<LimitExcept>` registered
    /// (ap_method_register): a .htaccess may name them, and Apache knows them.
    registered: Vec<String>,
    /// `<VirtualHost>` sections found at the top level, with their enabled flag.
    vhost_items: Vec<(Item, bool)>,
    /// Whether mod_ssl and mod_http2 are loaded: they add variables to ap_expr.
    expr_modules: (bool, bool),
}

impl Builder {
    /// Adds `items` to `scope`: directives become uses and typed settings, sections become
    /// child scopes; includes and decided conditionals are looked through.  `path` tracks
    /// the position from the root for virtual hosts (only at server level).
    fn fill(&mut self, scope: &mut Scope, items: Vec<Item>, enabled: bool, options: Option<&[String]>) {
        self.fill_at(scope, items, enabled, options, true);
    }

    /// Adds `items` to `scope`, consuming them: directives become uses and typed
    /// settings, sections become child scopes; includes and decided conditionals are
    /// looked through.  At the top level (`top`), `<VirtualHost>` sections are set aside
    /// for [`Builder::vhost`].
    fn fill_at(
        &mut self,
        scope: &mut Scope,
        items: Vec<Item>,
        enabled: bool,
        options: Option<&[String]>,
        top: bool,
    ) {
        for mut item in items {
            let on = enabled && item.enabled;
            match std::mem::replace(&mut item.kind, ItemKind::Directive) {
                ItemKind::Include { children, .. } => {
                    use_of(scope, item, on, false);
                    self.fill_at(scope, children, on, options, top);
                }
                ItemKind::Section { children, condition, close } => {
                    let lower = item.name.value.to_ascii_lowercase();
                    if let Some(c) = condition.as_ref().filter(|c| c.kind != ConditionKind::Expression) {
                        let inner = on && c.value == Some(true);
                        use_of(scope, item, on, true);
                        self.fill_at(scope, children, inner, options, top);
                    } else if lower == "virtualhost" {
                        if top {
                            use_of(scope, item.clone(), on, true);
                            item.kind = ItemKind::Section { children, condition, close };
                            self.vhost_items.push((item, on));
                        } else {
                            use_of(scope, item, on, true);
                        }
                    } else if matches!(lower.as_str(), "requireall" | "requireany" | "requirenone") {
                        item.kind = ItemKind::Section { children, condition, close };
                        if on {
                            let mut cx = ReadCx {
                                diags: &mut self.diags,
                                expr_modules: self.expr_modules,
                                options_allowed: options,
                                registered: &self.registered,
                                htaccess: self.htaccess,
                            };
                            if let Some(a) = access::read_container(&item, &mut cx) {
                                scope.settings.access_mut().require.push(a);
                            }
                        }
                        let children = match std::mem::replace(&mut item.kind, ItemKind::Directive) {
                            ItemKind::Section { children, .. } => children,
                            _ => Vec::new(),
                        };
                        use_of(scope, item, on, true);
                        record_nested(scope, children, on);
                    } else if let Some(kind) = ScopeKind::of_section(&item.name.value) {
                        // core.c: an <Else> or <ElseIf> continues the last <If> or <ElseIf>
                        // of the same scope, else Apache does not start (a .htaccess: 500).
                        if on && matches!(kind, ScopeKind::Else | ScopeKind::ElseIf) {
                            let last = scope.children.iter().rev().find(|c| {
                                c.enabled
                                    && matches!(c.kind, ScopeKind::If | ScopeKind::ElseIf | ScopeKind::Else)
                            });
                            if !last.is_some_and(|c| matches!(c.kind, ScopeKind::If | ScopeKind::ElseIf)) {
                                self.diags.push(Diagnostic::new(
                                    Code::NotAllowedHere,
                                    item.span,
                                    format!(
                                        "<{}> section without previous <If> or <ElseIf> section in same scope",
                                        item.name.value
                                    ),
                                ));
                            }
                        }
                        let matcher = self.matcher(kind, &item, on);
                        let mut child = Scope::new(kind, matcher, item.span, on);
                        use_of(scope, item, on, true);
                        self.fill_at(&mut child, children, on, options, false);
                        child.settings.finish();
                        self.dangling(&child);
                        scope.children.push(child);
                    } else {
                        // An unknown section: its contents still count, in this scope.
                        use_of(scope, item, on, true);
                        self.fill_at(scope, children, on, options, false);
                    }
                }
                ItemKind::Directive => {
                    if on {
                        let mut cx = ReadCx {
                            diags: &mut self.diags,
                            expr_modules: self.expr_modules,
                            options_allowed: options,
                            registered: &self.registered,
                            htaccess: self.htaccess,
                        };
                        settings::read(&item, &mut scope.settings, &mut cx);
                    }
                    use_of(scope, item, on, false);
                }
            }
        }
    }

    fn dangling(&mut self, scope: &Scope) {
        for c in &scope.settings.rewrite().dangling {
            self.diags.push(
                Diagnostic::new(
                    Code::DanglingCondition,
                    c.at,
                    "this RewriteCond has no RewriteRule after it in the same scope; Apache ignores it",
                )
                .with_help("add the rule it belongs to, or remove the condition"),
            );
        }
    }

    fn matcher(&mut self, kind: ScopeKind, item: &Item, on: bool) -> Option<Matcher> {
        let args = item.values();
        let m = match kind {
            // Apache reads the expression as one configuration word (quotes removed).
            ScopeKind::If | ScopeKind::ElseIf => {
                Matcher::Expr(args.first().map(|a| a.to_string()).unwrap_or_default())
            }
            ScopeKind::Else => Matcher::Otherwise,
            // Method names as written: Apache's are case-sensitive (`get` is a method of its
            // own, which the server configuration registers and a .htaccess may not).
            ScopeKind::Limit | ScopeKind::LimitExcept => {
                if on {
                    for (m, w) in args.iter().zip(&item.args) {
                        let why = if kind == ScopeKind::Limit && *m == "TRACE" {
                            Some("TRACE cannot be controlled by <Limit>, see TraceEnable".to_string())
                        } else if crate::eval::APACHE_METHODS.contains(m)
                            || self.registered.iter().any(|r| r == m)
                        {
                            None
                        } else if self.htaccess {
                            Some(format!(
                                "Could not register method '{m}' for <{} from .htaccess configuration",
                                item.name.value
                            ))
                        } else {
                            self.registered.push(m.to_string());
                            None
                        };
                        if let Some(why) = why {
                            self.diags.push(Diagnostic::new(Code::BadArgument, w.span, why));
                        }
                    }
                }
                Matcher::Methods(args.iter().map(|m| m.to_string()).collect())
            }
            ScopeKind::DirectoryMatch
            | ScopeKind::FilesMatch
            | ScopeKind::LocationMatch
            | ScopeKind::ProxyMatch => Matcher::Regex(args.first()?.to_string()),
            _ if args.first() == Some(&"~") => Matcher::Regex(args.get(1)?.to_string()),
            ScopeKind::Directory => Matcher::Path(clean_path(args.first()?)),
            _ => Matcher::Path(args.first()?.to_string()),
        };
        if let (Matcher::Expr(e), true) = (&m, on)
            && let Err(err) = crate::expr::check(e, false, self.expr_modules.0, self.expr_modules.1)
        {
            let at = item.args.first().map(|w| w.span).unwrap_or(item.span);
            self.diags.push(Diagnostic::new(
                Code::BadExpr,
                at,
                format!("<{}>: {} (at byte {} of the expression)", item.name.value, err.message, err.offset),
            ));
        }
        if let (Matcher::Regex(re), true) = (&m, on)
            && let Err(e) = rewrite::check_regex(re, false)
        {
            self.diags.push(Diagnostic::new(
                Code::BadRegex,
                item.span,
                format!("<{}> has a bad regular expression: {e}", item.name.value),
            ));
        }
        Some(m)
    }

    fn vhost(&mut self, item: Item, enabled: bool, main: &server::HostSettings) -> VirtualHost {
        let addresses: Vec<VhostAddr> =
            item.args.iter().map(|w| VhostAddr::parse(&w.value, w.span)).collect();
        let mut scope = Scope::new(ScopeKind::VirtualHost, None, item.span, enabled);
        let children = match item.kind {
            ItemKind::Section { children, .. } => children,
            _ => Vec::new(),
        };
        self.fill_at(&mut scope, children, enabled, None, false);
        scope.settings.finish();
        self.dangling(&scope);
        let h = &scope.settings.host();
        let pick = |own: &Option<Spanned<String>>, inherited: &Option<Spanned<String>>| {
            own.as_ref().or(inherited.as_ref()).map(|s| s.value.clone())
        };
        let server_name = pick(&h.server_name, &main.server_name).map(|n| strip_scheme_port(&n));
        let document_root = pick(&h.document_root, &main.document_root);
        let use_canonical_name =
            pick(&h.use_canonical_name, &main.use_canonical_name).unwrap_or_else(|| "Off".into());
        let aliases = h.server_aliases.iter().map(|a| a.value.clone()).collect();
        let tls = h.tls.enabled();
        VirtualHost {
            addresses,
            server_name,
            aliases,
            document_root,
            use_canonical_name,
            default_for: Vec::new(),
            tls,
            merge_order: Vec::new(),
            scope,
        }
    }

    /// The .htaccess files, with the folders they were looked for under and the names.
    fn htaccess(
        &mut self,
        config: &mut Config,
        server: &Scope,
        vhosts: &[VirtualHost],
    ) -> (Vec<Htaccess>, Vec<String>, Vec<String>, Vec<std::path::PathBuf>) {
        let servers = reaches(server, vhosts);
        let mut roots: Vec<String> = servers.iter().flat_map(|s| s.roots.clone()).collect();
        for (scope, path) in htaccess::directory_sections(server, None) {
            if scope.settings.allow_override.as_ref().is_some_and(|a| !a.classes.is_empty())
                && !path.contains(['*', '?', '['])
                && path != "/"
            {
                roots.push(path);
            }
        }
        let spans = root_spans(server, vhosts);
        let mut reported = std::collections::HashSet::new();
        for r in servers.iter().flat_map(|s| s.roots.iter()) {
            if reported.insert(r.as_str()) && !config.sysroot.is_dir(r) {
                let at = spans.get(r.as_str()).copied();
                self.diags.push(Diagnostic::new(
                    Code::MissingPath,
                    at,
                    format!("{r} does not exist here: no .htaccess is looked for below it"),
                ));
            }
        }
        let mut names: Vec<String> = servers.iter().flat_map(|s| s.names.clone()).collect();
        names.push(".htaccess".into());
        names.sort();
        names.dedup();
        let found = htaccess::discover(&config.sysroot, &roots, &names, config.walk_limit);
        if found.truncated {
            self.diags.push(
                Diagnostic::new(
                    Code::WalkLimit,
                    None,
                    format!(
                        "stopped looking for .htaccess files after {} directory entries",
                        config.walk_limit
                    ),
                )
                .with_help("raise --walk-limit; .htaccess files not found are not part of this report"),
            );
        }
        let jobs = jobs_for(server, &servers, found.files);
        let mut watched = roots.clone();
        watched.sort();
        watched.dedup();
        (self.read_all(config, jobs), watched, names, found.link_targets)
    }

    /// Reads and models the per-directory files on every core, then registers them in job
    /// order so file ids, diagnostics and output stay deterministic.
    fn read_all(&mut self, config: &mut Config, jobs: Vec<Job>) -> Vec<Htaccess> {
        let base = config.sources.len() as u32;
        let cfg: &Config = config;
        let registered = &self.registered;
        let results =
            crate::par::map(&jobs, |k, job| model_file(cfg, job, FileId(base + k as u32), registered));
        let mut out = Vec::with_capacity(jobs.len());
        for (job, done) in jobs.into_iter().zip(results) {
            if let Some((display, text)) = done.file {
                let id =
                    config.sources.add(display, job.path.clone(), crate::source::FileKind::Htaccess, text);
                debug_assert_eq!(id.0, base + out.len() as u32);
            }
            self.diags.extend(done.diags);
            out.push(done.htaccess);
        }
        out
    }
}

/// Each server (main, then vhosts) with the URL roots it maps and the per-directory file
/// names it reads.
fn reaches<'a>(server: &'a Scope, vhosts: &'a [VirtualHost]) -> Vec<Reach<'a>> {
    let main_aliases = alias_targets(server);
    let mut servers: Vec<Reach> = Vec::new();
    if let Some(root) = &server.settings.host().document_root {
        let mut roots = vec![root.value.clone()];
        roots.extend(main_aliases.clone());
        servers.push(Reach {
            label: "server".into(),
            index: None,
            vhost: None,
            roots,
            names: access_names(server, None),
        });
    }
    for (i, v) in vhosts.iter().enumerate() {
        if !v.scope.enabled {
            continue;
        }
        let mut roots: Vec<String> = v.document_root.iter().cloned().collect();
        roots.extend(main_aliases.clone());
        roots.extend(alias_targets(&v.scope));
        servers.push(Reach {
            label: v.label(i),
            index: Some(i),
            vhost: Some(v),
            roots,
            names: access_names(server, Some(&v.scope)),
        });
    }
    servers
}

/// The files found, each with the servers that reach it grouped by the permissions they
/// give it (one job per group; a file no server reaches is one job without servers).
fn jobs_for(server: &Scope, servers: &[Reach], files: Vec<String>) -> Vec<Job> {
    // Which servers map URLs into a folder: looked up by the folder and its ancestors.
    let mut by_root: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, reach) in servers.iter().enumerate() {
        for r in &reach.roots {
            by_root.entry(r.trim_end_matches('/')).or_default().push(i);
        }
    }
    let mut sections_of: Vec<Option<Vec<(&Scope, String)>>> = vec![None; servers.len()];
    let mut jobs: Vec<Job> = Vec::new();
    for path in files {
        let dir = path.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
        let file_name = path.rsplit('/').next().unwrap_or("").to_string();
        let mut reaching: Vec<usize> =
            htaccess::ancestors(&dir).filter_map(|a| by_root.get(a)).flatten().copied().collect();
        reaching.sort_unstable();
        reaching.dedup();
        // Group the servers that reach this file by the permissions they give it.
        let mut groups: Vec<Job> = Vec::new();
        for i in reaching {
            let Reach { label, index, vhost: v, names: accnames, .. } = &servers[i];
            if !accnames.contains(&file_name) {
                continue;
            }
            let sections = sections_of[i]
                .get_or_insert_with(|| htaccess::directory_sections(server, v.map(|v| &v.scope)));
            let perms = htaccess::perms_for(&dir, sections);
            match groups.iter_mut().find(|g| g.perms.as_ref().is_some_and(|p| p.same_rights(&perms))) {
                Some(g) => {
                    g.hosts.push(label.clone());
                    g.ids.push(*index);
                }
                None => groups.push(Job {
                    path: path.clone(),
                    dir: dir.clone(),
                    perms: Some(perms),
                    hosts: vec![label.clone()],
                    ids: vec![*index],
                }),
            }
        }
        if groups.is_empty() {
            groups.push(Job { path: path.clone(), dir, perms: None, hosts: Vec::new(), ids: Vec::new() });
        }
        jobs.extend(groups);
    }
    jobs
}

/// One .htaccess file as reached with one set of permissions.
struct Job {
    path: String,
    dir: String,
    /// `None` when no server maps a URL to the file.
    perms: Option<HtaccessPerms>,
    hosts: Vec<String>,
    ids: Vec<Option<usize>>,
}

/// What a worker made of a job: the model entry, its diagnostics, and the file to register
/// (display name and text) under the id it was given.
struct Done {
    htaccess: Htaccess,
    diags: Vec<Diagnostic>,
    file: Option<(String, String)>,
}

/// Whether mod_ssl and mod_http2 are among `loaded`: each adds variables to ap_expr.
fn expr_modules(loaded: &[crate::config::LoadedModule]) -> (bool, bool) {
    let has = |id: &str| loaded.iter().any(|m| m.id == id);
    (has("ssl_module"), has("http2_module"))
}

/// Reads, expands and models one .htaccess as file `id`.
fn model_file(config: &Config, job: &Job, id: FileId, registered: &[String]) -> Done {
    let mut b = Builder {
        diags: Vec::new(),
        htaccess: true,
        registered: registered.to_vec(),
        vhost_items: Vec::new(),
        expr_modules: expr_modules(config.modules.loaded()),
    };
    let mut h = Htaccess {
        path: job.path.clone(),
        dir: job.dir.clone(),
        hosts: job.hosts.clone(),
        host_ids: job.ids.clone(),
        status: HtaccessStatus::Unreachable,
        allow_override: String::new(),
        file: None,
        scope: None,
    };
    let display = config.sysroot.host_path(&job.path).to_string_lossy().into_owned();
    let Some(perms) = &job.perms else {
        return Done { htaccess: h, diags: Vec::new(), file: Some((display, String::new())) };
    };
    h.allow_override = perms.describe();
    h.file = Some(id);
    let bytes = match config.sysroot.read(&job.path) {
        Ok(b) => b,
        Err(e) => {
            h.status = HtaccessStatus::Ignored;
            b.diags.push(Diagnostic::new(
                Code::UnreadableFile,
                Span::new(id, 0, 0),
                format!("{} could not be read: {e}", job.path),
            ));
            return Done { htaccess: h, diags: b.diags, file: Some((display, String::new())) };
        }
    };
    let (text, bad) = crate::config::decode(bytes);
    if let Some(at) = bad {
        b.diags.push(crate::config::invalid_utf8(id, at));
    }
    if !perms.reads_files() {
        h.status = HtaccessStatus::Ignored;
        let mut d = Diagnostic::new(
            Code::HtaccessIgnored,
            Span::new(id, 0, 0),
            format!("Apache never reads this file: {} is in force for {}", h.allow_override, job.dir),
        );
        if let Some(at) = htaccess::decided_by(perms) {
            d = d.with_label(at, "AllowOverride set here");
        }
        b.diags.push(d.with_help(
            "if the rules in it matter, allow them with AllowOverride in a <Directory> for this path",
        ));
        return Done { htaccess: h, diags: b.diags, file: Some((display, text)) };
    }
    let (items, diags) = config.expand_htaccess(id, &text, perms);
    b.diags.extend(diags);
    let mut scope =
        Scope::new(ScopeKind::Htaccess, Some(Matcher::Path(job.dir.clone())), Span::new(id, 0, 0), true);
    b.fill_at(&mut scope, items, true, perms.options.as_deref(), false);
    scope.settings.finish();
    b.dangling(&scope);
    let broken =
        b.diags.iter().any(|d| d.severity == crate::diagnostic::Severity::Error && !d.code.is_lint());
    h.status = if broken { HtaccessStatus::Broken } else { HtaccessStatus::Applied };
    h.scope = Some(scope);
    Done { htaccess: h, diags: b.diags, file: Some((display, text)) }
}

impl Builder {}

/// The top-level sections of the main server and a vhost in Apache's merge order
/// (<https://httpd.apache.org/docs/2.4/sections.html#merging>): non-regex `<Directory>`
/// shortest path first (main server first among equals), then directory regexes, files,
/// locations and `<If>`, each group main server first, then in configuration order.
pub fn merge_order(server: &Scope, vhost: &Scope) -> Vec<SectionRef> {
    let regex_dir = |s: &Scope| {
        s.kind == ScopeKind::DirectoryMatch
            || (s.kind == ScopeKind::Directory && matches!(s.matcher, Some(Matcher::Regex(_))))
    };
    let mut out = Vec::new();
    for (s, _) in htaccess::directory_sections(server, Some(vhost)) {
        let inherited = server.children.iter().any(|c| std::ptr::eq(c, s));
        out.push(SectionRef { group: 1, section: describe_scope(s), inherited, at: s.at });
    }
    for group in 2..=5u8 {
        for (inherited, top) in [(true, server), (false, vhost)] {
            for c in top.children.iter().filter(|c| c.enabled) {
                let g = if regex_dir(c) { 2 } else { c.kind.merge_group().unwrap_or(0) };
                if g == group {
                    out.push(SectionRef { group, section: describe_scope(c), inherited, at: c.at });
                }
            }
        }
    }
    out
}

/// Where each document root and alias target was first written, for diagnostics.
fn root_spans<'a>(server: &'a Scope, vhosts: &'a [VirtualHost]) -> std::collections::HashMap<String, Span> {
    let mut out = std::collections::HashMap::new();
    for s in std::iter::once(server).chain(vhosts.iter().map(|v| &v.scope)) {
        if let Some(d) = &s.settings.host().document_root {
            out.entry(d.value.clone()).or_insert(d.span);
        }
        for a in &s.settings.aliases {
            out.entry(alias_targets_of(a)).or_insert(a.at);
        }
    }
    out
}

/// Records the directives inside a `<Require*>` container as uses of the enclosing scope.
fn record_nested(scope: &mut Scope, items: Vec<Item>, enabled: bool) {
    for mut it in items {
        let on = enabled && it.enabled;
        let section = it.is_section();
        let children = match std::mem::replace(&mut it.kind, ItemKind::Directive) {
            ItemKind::Section { children, .. } | ItemKind::Include { children, .. } => children,
            ItemKind::Directive => Vec::new(),
        };
        use_of(scope, it, on, section);
        record_nested(scope, children, on);
    }
}

/// Records a directive or section as written; its strings move into the use.
fn use_of(scope: &mut Scope, item: Item, enabled: bool, section: bool) {
    let cat = catalogue();
    let info = if section { cat.section(&item.name.value) } else { cat.get(&item.name.value) };
    let name: std::borrow::Cow<'static, str> = match info {
        Some(i) => std::borrow::Cow::Borrowed(i.name.as_str()),
        None if section => format!("<{}", item.name.value).into(),
        None => item.name.value.into(),
    };
    scope.directives.push(DirectiveUse {
        name,
        args: item.raw.text,
        at: item.span,
        enabled,
        status: info.map(|i| i.status),
    });
}

/// Directory targets of Alias/ScriptAlias in a scope (AliasMatch: the literal part).
/// The folders a server maps URLs into: its DocumentRoot (Apache's compiled-in default
/// when none is set) and the Alias targets of the main server and of the vhost.
pub fn url_roots(model: &Model, vhost: Option<usize>) -> Vec<String> {
    let root = match vhost {
        Some(i) => model.vhosts[i].document_root.clone(),
        None => model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()),
    };
    let mut roots = vec![root.unwrap_or_else(|| "/var/www/html".into())];
    roots.extend(alias_targets(&model.server));
    if let Some(i) = vhost {
        roots.extend(alias_targets(&model.vhosts[i].scope));
    }
    roots
}

fn alias_targets(scope: &Scope) -> Vec<String> {
    scope.settings.aliases.iter().map(alias_targets_of).collect()
}

fn alias_targets_of(a: &alias::Alias) -> String {
    let t = a.to.as_str();
    let literal = t.split('$').next().unwrap_or(t);
    let literal = if literal.len() < t.len() {
        literal.rsplit_once('/').map(|(d, _)| d).unwrap_or(literal)
    } else {
        literal
    };
    join("/", literal)
}

/// `AccessFileName` in force: the vhost's, else the main server's, else `.htaccess`.
pub fn access_names(server: &Scope, vhost: Option<&Scope>) -> Vec<String> {
    vhost
        .and_then(|v| v.settings.host().access_file_names.as_ref())
        .or(server.settings.host().access_file_names.as_ref())
        .map(|n| n.value.clone())
        .unwrap_or_else(|| vec![".htaccess".to_string()])
}

/// `ServerName https://example.com:443` names `example.com`.
fn strip_scheme_port(name: &str) -> String {
    let n = name.split_once("://").map(|(_, r)| r).unwrap_or(name);
    crate::model::server::split_host_port(n).0.unwrap_or_else(|| n.to_string())
}

impl Model {
    /// Whether `MergeSlashes Off` is in force for host `vhost` (its own, else the main
    /// server's): Apache then keeps `//` in the URL-path its sections and rules match.
    pub fn keeps_slashes(&self, vhost: Option<usize>) -> bool {
        let main = self.server.settings.host();
        let own = vhost.and_then(|i| self.vhosts[i].scope.settings.host().merge_slashes.as_ref());
        own.or(main.merge_slashes.as_ref()).is_some_and(|m| m.value.eq_ignore_ascii_case("off"))
    }

    /// PHP handlers in effect for a virtual host (its scopes and the main server's).
    pub fn php_handlers(&self, vhost: &VirtualHost) -> Vec<PhpHandler> {
        let mut out = Vec::new();
        for top in [&self.server, &vhost.scope] {
            top.walk(&mut |s| {
                if !s.enabled {
                    return;
                }
                for h in &s.settings.mime().handlers {
                    let php_scope = matches!(&s.matcher, Some(Matcher::Regex(r)) if r.contains("php"))
                        || matches!(&s.matcher, Some(Matcher::Path(p)) if p.ends_with(".php"));
                    let php_ext = h.extensions.iter().any(|e| e.trim_start_matches('.').starts_with("php"));
                    let is_php = matches!(h.handler, Handler::ModPhp { .. })
                        || (h.handler.is_backend() && (php_scope || php_ext));
                    if is_php {
                        let applies_to =
                            if h.extensions.is_empty() { describe_scope(s) } else { h.extensions.join(" ") };
                        out.push(PhpHandler { handler: h.handler.clone(), applies_to, at: h.at });
                    }
                }
            });
        }
        out
    }
}

/// `<Files ~ "\.php$">` and the like, for one-line summaries.
pub fn describe_scope(s: &Scope) -> String {
    let m = match &s.matcher {
        None => String::new(),
        Some(Matcher::Path(p)) => format!(" {}", crate::syntax::words::quote(p)),
        Some(Matcher::Regex(r)) if s.kind.section_name().ends_with("Match") => {
            format!(" {}", crate::syntax::words::quote(r))
        }
        Some(Matcher::Regex(r)) => format!(" ~ {}", crate::syntax::words::quote(r)),
        Some(Matcher::Methods(m)) => format!(" {}", m.join(" ")),
        Some(Matcher::Expr(e)) => format!(" {}", crate::syntax::words::quote(e)),
        Some(Matcher::Otherwise) => String::new(),
    };
    format!("<{}{m}>", s.kind.section_name())
}
#[cfg(test)]
mod size_probe {
    #[test]
    fn print_sizes() {
        eprintln!(
            "Scope {} Settings {} Host {} Rewrite {} Access {} Mime {} DirectiveUse {} Item {}",
            std::mem::size_of::<super::Scope>(),
            std::mem::size_of::<super::settings::Settings>(),
            std::mem::size_of::<super::server::HostSettings>(),
            std::mem::size_of::<super::rewrite::RewriteConfig>(),
            std::mem::size_of::<super::access::AccessConfig>(),
            std::mem::size_of::<super::mime::MimeConfig>(),
            std::mem::size_of::<super::DirectiveUse>(),
            std::mem::size_of::<crate::config::Item>()
        );
    }
}
