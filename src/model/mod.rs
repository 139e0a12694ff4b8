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
pub mod rewrite;
mod scope;
pub mod server;
pub mod settings;
pub mod vhost;

pub use coverage::Coverage;
pub use htaccess::{Htaccess, HtaccessStatus};
pub use scope::{DirectiveUse, Matcher, Scope, ScopeKind, Spanned};
pub use vhost::{SectionRef, VhostAddr, VirtualHost};

use crate::catalogue::catalogue;
use crate::config::{ConditionKind, Config, HtaccessPerms, Input, Item, ItemKind, LoadedModule};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{Span, clean_path, join};
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
    pub vhosts: Vec<VirtualHost>,
    pub htaccess: Vec<Htaccess>,
    pub coverage: Coverage,
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
    let mut b = Builder { diags: Vec::new(), vhost_items: Vec::new() };
    let items = std::mem::take(&mut config.items);
    let mut server = Scope::new(ScopeKind::Server, None, Span::new(crate::source::FileId(0), 0, 0), true);
    b.fill(&mut server, &items, true, None);
    server.settings.rewrite.finish();
    let main = server.settings.host.clone();
    let mut vhosts = Vec::new();
    for (item, enabled) in std::mem::take(&mut b.vhost_items) {
        vhosts.push(b.vhost(&items_ref(&items, item), enabled, &main));
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
    config.items = items;
    let htaccess = b.htaccess(config, &server, &vhosts);
    let mut coverage = Coverage::default();
    coverage.add_scope(&server);
    for v in &vhosts {
        coverage.add_scope(&v.scope);
    }
    for h in &htaccess {
        if let Some(s) = &h.scope {
            coverage.add_scope(s);
        }
    }
    let model = Model {
        input: config.input.clone(),
        apache_version: config.apache_version.clone(),
        server_root: config.server_root.clone(),
        modules: config.modules.loaded().to_vec(),
        server,
        vhosts,
        htaccess,
        coverage,
    };
    (model, b.diags)
}

/// Finds a vhost item again by its position (the builder records paths, not references,
/// so the item tree can move back into the config afterwards).
fn items_ref(items: &[Item], path: Vec<usize>) -> Item {
    let mut cur: &[Item] = items;
    let mut found: Option<&Item> = None;
    for i in path {
        let it = &cur[i];
        found = Some(it);
        cur = it.children();
    }
    found.expect("recorded path").clone()
}

/// A server with the folders its URLs map to and the per-directory file names it reads.
struct Reach<'a> {
    label: String,
    vhost: Option<&'a VirtualHost>,
    roots: Vec<String>,
    names: Vec<String>,
}

struct Builder {
    diags: Vec<Diagnostic>,
    /// Paths (child indices from the root) of `<VirtualHost>` items, with their enabled flag.
    vhost_items: Vec<(Vec<usize>, bool)>,
}

impl Builder {
    /// Adds `items` to `scope`: directives become uses and typed settings, sections become
    /// child scopes; includes and decided conditionals are looked through.  `path` tracks
    /// the position from the root for virtual hosts (only at server level).
    fn fill(&mut self, scope: &mut Scope, items: &[Item], enabled: bool, options: Option<&[String]>) {
        self.fill_at(scope, items, enabled, options, &mut Some(Vec::new()));
    }

    fn fill_at(
        &mut self,
        scope: &mut Scope,
        items: &[Item],
        enabled: bool,
        options: Option<&[String]>,
        path: &mut Option<Vec<usize>>,
    ) {
        for (i, item) in items.iter().enumerate() {
            let on = enabled && item.enabled;
            match &item.kind {
                ItemKind::Include { children, .. } => {
                    use_of(scope, item, on, false);
                    if let Some(p) = path.as_mut() {
                        p.push(i);
                    }
                    self.fill_at(scope, children, on, options, path);
                    if let Some(p) = path.as_mut() {
                        p.pop();
                    }
                }
                ItemKind::Section { children, condition, .. } => {
                    let lower = item.name.value.to_ascii_lowercase();
                    use_of(scope, item, on, true);
                    if let Some(c) = condition.as_ref().filter(|c| c.kind != ConditionKind::Expression) {
                        let inner = on && c.value == Some(true);
                        if let Some(p) = path.as_mut() {
                            p.push(i);
                        }
                        self.fill_at(scope, children, inner, options, path);
                        if let Some(p) = path.as_mut() {
                            p.pop();
                        }
                    } else if lower == "virtualhost" {
                        if let Some(p) = path.as_ref() {
                            let mut full = p.clone();
                            full.push(i);
                            self.vhost_items.push((full, on));
                        }
                    } else if matches!(lower.as_str(), "requireall" | "requireany" | "requirenone") {
                        record_nested(scope, children, on);
                        if on {
                            let mut cx = ReadCx { diags: &mut self.diags, options_allowed: options };
                            if let Some(a) = access::read_container(item, &mut cx) {
                                scope.settings.access.require.push(a);
                            }
                        }
                    } else if let Some(kind) = ScopeKind::of_section(&item.name.value) {
                        let matcher = self.matcher(kind, item, on);
                        let mut child = Scope::new(kind, matcher, item.span, on);
                        self.fill_at(&mut child, children, on, options, &mut None);
                        child.settings.rewrite.finish();
                        self.dangling(&child);
                        scope.children.push(child);
                    } else {
                        // An unknown section: its contents still count, in this scope.
                        self.fill_at(scope, children, on, options, &mut None);
                    }
                }
                ItemKind::Directive => {
                    use_of(scope, item, on, false);
                    if on {
                        let mut cx = ReadCx { diags: &mut self.diags, options_allowed: options };
                        settings::read(item, &mut scope.settings, &mut cx);
                    }
                }
            }
        }
    }

    fn dangling(&mut self, scope: &Scope) {
        for c in &scope.settings.rewrite.dangling {
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
            ScopeKind::If | ScopeKind::ElseIf => Matcher::Expr(item.raw.text.clone()),
            ScopeKind::Else => Matcher::Otherwise,
            ScopeKind::Limit | ScopeKind::LimitExcept => {
                Matcher::Methods(args.iter().map(|m| m.to_ascii_uppercase()).collect())
            }
            ScopeKind::DirectoryMatch
            | ScopeKind::FilesMatch
            | ScopeKind::LocationMatch
            | ScopeKind::ProxyMatch => Matcher::Regex(args.first()?.to_string()),
            _ if args.first() == Some(&"~") => Matcher::Regex(args.get(1)?.to_string()),
            ScopeKind::Directory => Matcher::Path(clean_path(args.first()?)),
            _ => Matcher::Path(args.first()?.to_string()),
        };
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

    fn vhost(&mut self, item: &Item, enabled: bool, main: &server::HostSettings) -> VirtualHost {
        let addresses: Vec<VhostAddr> =
            item.args.iter().map(|w| VhostAddr::parse(&w.value, w.span)).collect();
        let mut scope = Scope::new(ScopeKind::VirtualHost, None, item.span, enabled);
        self.fill_at(&mut scope, item.children(), enabled, None, &mut None);
        scope.settings.rewrite.finish();
        self.dangling(&scope);
        let h = &scope.settings.host;
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

    fn htaccess(&mut self, config: &mut Config, server: &Scope, vhosts: &[VirtualHost]) -> Vec<Htaccess> {
        // Each server (main, then vhosts) with the URL roots it maps.
        let main_aliases = alias_targets(server);
        let mut servers: Vec<Reach> = Vec::new();
        let main_names = access_names(server, None);
        if let Some(root) = &server.settings.host.document_root {
            let mut roots = vec![root.value.clone()];
            roots.extend(main_aliases.clone());
            servers.push(Reach { label: "server".into(), vhost: None, roots, names: main_names.clone() });
        }
        for (i, v) in vhosts.iter().enumerate() {
            if !v.scope.enabled {
                continue;
            }
            let mut roots: Vec<String> = v.document_root.iter().cloned().collect();
            roots.extend(main_aliases.clone());
            roots.extend(alias_targets(&v.scope));
            let label = format!("vhost {} {}", i + 1, v.server_name.as_deref().unwrap_or("(no name)"));
            servers.push(Reach { label, vhost: Some(v), roots, names: access_names(server, Some(&v.scope)) });
        }
        let mut roots: Vec<String> = servers.iter().flat_map(|s| s.roots.clone()).collect();
        for (scope, path) in htaccess::directory_sections(server, None) {
            if scope.settings.allow_override.as_ref().is_some_and(|a| !a.classes.is_empty())
                && !path.contains(['*', '?', '['])
                && path != "/"
            {
                roots.push(path);
            }
        }
        let mut reported: Vec<&String> = Vec::new();
        for r in servers.iter().flat_map(|s| s.roots.iter()) {
            if !config.sysroot.is_dir(r) && !reported.contains(&r) {
                reported.push(r);
                let at = root_span(server, vhosts, r);
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
        let (files, truncated) = htaccess::discover(&config.sysroot, &roots, &names, config.walk_limit);
        if truncated {
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
        let mut out = Vec::new();
        for path in files {
            let dir = path.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
            let file_name = path.rsplit('/').next().unwrap_or("").to_string();
            // Group the servers that reach this file by the permissions they give it.
            let mut groups: Vec<(HtaccessPerms, Vec<String>)> = Vec::new();
            for Reach { label, vhost: v, roots, names: accnames } in &servers {
                let reaches = roots.iter().any(|r| {
                    let r = r.trim_end_matches('/');
                    dir == r || dir.starts_with(&format!("{r}/"))
                });
                if !reaches || !accnames.contains(&file_name) {
                    continue;
                }
                let sections = htaccess::directory_sections(server, v.map(|v| &v.scope));
                let perms = htaccess::perms_for(&dir, &sections);
                match groups.iter_mut().find(|(p, _)| p.same_rights(&perms)) {
                    Some(g) => g.1.push(label.clone()),
                    None => groups.push((perms, vec![label.clone()])),
                }
            }
            if groups.is_empty() {
                out.push(Htaccess {
                    path: path.clone(),
                    dir: dir.clone(),
                    hosts: Vec::new(),
                    status: HtaccessStatus::Unreachable,
                    allow_override: String::new(),
                    file: None,
                    scope: None,
                });
                continue;
            }
            for (perms, hosts) in groups {
                out.push(self.read_htaccess(config, &path, &dir, perms, hosts));
            }
        }
        out
    }

    fn read_htaccess(
        &mut self,
        config: &mut Config,
        path: &str,
        dir: &str,
        perms: HtaccessPerms,
        hosts: Vec<String>,
    ) -> Htaccess {
        let described = perms.describe();
        let mut h = Htaccess {
            path: path.to_string(),
            dir: dir.to_string(),
            hosts,
            status: HtaccessStatus::Ignored,
            allow_override: described.clone(),
            file: None,
            scope: None,
        };
        if !perms.reads_files() {
            let bytes = config.sysroot.read(path).unwrap_or_default();
            let display = config.sysroot.host_path(path).to_string_lossy().into_owned();
            let id = config.sources.add(
                display,
                path.to_string(),
                crate::source::FileKind::Htaccess,
                String::from_utf8_lossy(&bytes).into_owned(),
            );
            h.file = Some(id);
            let mut d = Diagnostic::new(
                Code::HtaccessIgnored,
                Span::new(id, 0, 0),
                format!("Apache never reads this file: {described} is in force for {dir}"),
            );
            if let Some(at) = htaccess::decided_by(&perms) {
                d = d.with_label(at, "AllowOverride set here");
            }
            self.diags.push(d.with_help(
                "if the rules in it matter, allow them with AllowOverride in a <Directory> for this path",
            ));
            return h;
        }
        let Some((id, items, diags)) = config.read_htaccess(path, &perms) else {
            self.diags.push(Diagnostic::new(Code::UnreadableFile, None, format!("{path} could not be read")));
            return h;
        };
        h.file = Some(id);
        let broken_before =
            diags.iter().any(|d| d.severity == crate::diagnostic::Severity::Error && !d.code.is_lint());
        self.diags.extend(diags);
        let mark = self.diags.len();
        let mut scope =
            Scope::new(ScopeKind::Htaccess, Some(Matcher::Path(dir.to_string())), Span::new(id, 0, 0), true);
        self.fill_at(&mut scope, &items, true, perms.options.as_deref(), &mut None);
        scope.settings.rewrite.finish();
        self.dangling(&scope);
        let broken_now = self.diags[mark..]
            .iter()
            .any(|d| d.severity == crate::diagnostic::Severity::Error && !d.code.is_lint());
        h.status = if broken_before || broken_now { HtaccessStatus::Broken } else { HtaccessStatus::Applied };
        h.scope = Some(scope);
        h
    }
}

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

/// Where a document root or alias target was written, for diagnostics about it.
fn root_span(server: &Scope, vhosts: &[VirtualHost], root: &str) -> Option<Span> {
    let mut found = None;
    for s in std::iter::once(server).chain(vhosts.iter().map(|v| &v.scope)) {
        if let Some(d) = &s.settings.host.document_root
            && d.value == root
            && found.is_none()
        {
            found = Some(d.span);
        }
        for a in &s.settings.aliases {
            if found.is_none() && alias_targets_of(a) == root {
                found = Some(a.at);
            }
        }
    }
    found
}

/// Records the directives inside a `<Require*>` container as uses of the enclosing scope.
fn record_nested(scope: &mut Scope, items: &[Item], enabled: bool) {
    for it in items {
        let on = enabled && it.enabled;
        use_of(scope, it, on, it.is_section());
        record_nested(scope, it.children(), on);
    }
}

fn use_of(scope: &mut Scope, item: &Item, enabled: bool, section: bool) {
    let cat = catalogue();
    let (name, info) = if section {
        (format!("<{}", item.name.value), cat.section(&item.name.value))
    } else {
        (item.name.value.clone(), cat.get(&item.name.value))
    };
    scope.directives.push(DirectiveUse {
        name: info.map(|i| i.name.clone()).unwrap_or(name),
        args: item.raw.text.clone(),
        at: item.span,
        enabled,
        status: info.map(|i| i.status),
    });
}

/// Directory targets of Alias/ScriptAlias in a scope (AliasMatch: the literal part).
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
fn access_names(server: &Scope, vhost: Option<&Scope>) -> Vec<String> {
    vhost
        .and_then(|v| v.settings.host.access_file_names.as_ref())
        .or(server.settings.host.access_file_names.as_ref())
        .map(|n| n.value.clone())
        .unwrap_or_else(|| vec![".htaccess".to_string()])
}

/// `ServerName https://example.com:443` names `example.com`.
fn strip_scheme_port(name: &str) -> String {
    let n = name.split_once("://").map(|(_, r)| r).unwrap_or(name);
    crate::model::server::split_host_port(n).0.unwrap_or_else(|| n.to_string())
}

impl Model {
    /// PHP handlers in effect for a virtual host (its scopes and the main server's).
    pub fn php_handlers(&self, vhost: &VirtualHost) -> Vec<PhpHandler> {
        let mut out = Vec::new();
        for top in [&self.server, &vhost.scope] {
            top.walk(&mut |s| {
                if !s.enabled {
                    return;
                }
                for h in &s.settings.mime.handlers {
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
        Some(Matcher::Expr(e)) => format!(" {e}"),
        Some(Matcher::Otherwise) => String::new(),
    };
    format!("<{}{m}>", s.kind.section_name())
}
