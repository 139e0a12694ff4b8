//! Reading a configuration the way Apache does at startup.
//!
//! Apache processes the main file line by line: `Define`, `LoadModule` and `ServerRoot`
//! take effect where they stand, `<IfModule>` and friends are decided on the spot, and
//! `Include` reads other files in place.  The [`Reader`] does the same, in one pass, and
//! checks every enabled directive against the catalogue (known, module loaded, allowed in
//! this context, right number of arguments).  It is the only part of `config` that
//! touches the filesystem, always through the [`Sysroot`].

use super::condition;
use super::context::{Context, Place};
use super::defines::Defines;
use super::envvars;
use super::include::{self, IncludeProblem};
use super::item::{Item, ItemKind};
use super::modules::Modules;
use crate::catalogue::{Arity, Where, catalogue};
use crate::diagnostic::{Code, Diagnostic, Diagnostics, Severity};
use crate::source::{FileId, FileKind, MappedText, SourceMap, Span, Sysroot, join};
use crate::syntax::{self, Node, Word};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Apache nests includes at most this deep ("Exceeded maximum include depth of 128").
const MAX_INCLUDE_DEPTH: usize = 128;

pub struct Reader<'a> {
    pub fs: &'a Sysroot,
    pub sources: SourceMap,
    /// Shared with every .htaccess reader; copied only when a directive changes them.
    pub defines: Arc<Defines>,
    pub modules: Arc<Modules>,
    pub server_root: String,
    pub version: String,
    pub diags: Diagnostics,
    /// Files being read, outermost first, for cycle detection.
    stack: Vec<(PathBuf, FileId)>,
    /// Every server config file read, by canonical path.
    pub seen: Vec<(PathBuf, FileId)>,
    /// Files an Include passes over, by device and inode (a symbolic link to one is the
    /// same file): the other domains when one domain of a Plesk root is read.
    skipped: HashSet<(u64, u64)>,
    /// Shared with the other loads of the same tree, when the caller asks for that.
    pub shared: Option<Arc<Shared>>,
    /// The folders where a file added or removed changes what an Include reads
    /// (`include::Expansion::dirs`).
    pub include_dirs: std::collections::BTreeSet<String>,
}

/// What the loads of one tree share ([`super::LoadOptions::shared`]): `lighten batch`
/// reads the server configuration once per account, and where it includes every
/// domain (`system/*/conf/httpd.conf`), each read would otherwise list the folder and
/// stat every match again, a thousand domains a thousand times over.  Kept only while
/// the caller keeps it (one batch run), on the same terms as Apache's own start: the
/// tree does not change while it is read.
#[derive(Debug, Default)]
pub struct Shared {
    expansions: Mutex<HashMap<(String, bool), Expansion>>,
    keys: Mutex<HashMap<PathBuf, Option<(u64, u64)>>>,
    /// The domains of a Plesk root, by its path.
    domains: Mutex<HashMap<String, Vec<String>>>,
}

impl Shared {
    /// [`super::plesk_domains`], listed once.
    pub fn plesk_domains(&self, fs: &Sysroot, root: &str) -> Vec<String> {
        memo(&self.domains, root.to_string(), || super::plesk_domains(fs, root))
    }
}

/// The value kept for `key`, else `make()`'s, kept.
fn memo<K: std::hash::Hash + Eq, V: Clone>(
    map: &Mutex<HashMap<K, V>>,
    key: K,
    make: impl FnOnce() -> V,
) -> V {
    if let Some(v) = map.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return v;
    }
    let v = make();
    if let Ok(mut m) = map.lock() {
        m.insert(key, v.clone());
    }
    v
}

type Expansion = include::Expansion;

impl<'a> Reader<'a> {
    pub fn new(fs: &'a Sysroot, server_root: String, version: String) -> Reader<'a> {
        Reader {
            fs,
            sources: SourceMap::new(),
            defines: Arc::default(),
            modules: Arc::default(),
            server_root,
            version,
            diags: Diagnostics::new(),
            stack: Vec::new(),
            seen: Vec::new(),
            skipped: HashSet::new(),
            shared: None,
            include_dirs: Default::default(),
        }
    }

    /// Reads Debian's envvars next to the main config, if there is one.
    pub fn read_envvars(&mut self, config_dir: &str) {
        let path = format!("{}/envvars", config_dir.trim_end_matches('/'));
        let Ok(bytes) = self.fs.read(&path) else { return };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let vars = envvars::parse(&text, config_dir);
        if vars.is_empty() {
            return;
        }
        let names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
        let display = self.fs.host_path(&path).to_string_lossy().into_owned();
        let id = self.sources.add(display, path.clone(), FileKind::Builtin, text);
        self.diags.push(Diagnostic::new(
            Code::EnvVars,
            Span::new(id, 0, 0),
            format!("read {} variables as apache2ctl would: {}", vars.len(), names.join(", ")),
        ));
        for (n, v) in &vars {
            Arc::make_mut(&mut self.defines).define(n, Some(v));
        }
    }

    /// Makes every Include pass over this file (it is not read, and not reported).
    pub fn skip(&mut self, apache_path: &str) {
        if let Some(k) = file_key(self.fs, self.shared.as_deref(), apache_path) {
            self.skipped.insert(k);
        }
    }

    /// Adds lighten-made text (defaults standing in for a missing server config).
    pub fn add_builtin(&mut self, name: &str, text: String) -> (FileId, syntax::Document) {
        let id = self.sources.add(format!("<{name}>"), format!("<{name}>"), FileKind::Builtin, text);
        let (doc, diags) = syntax::parse(id, &self.sources.file(id).text);
        self.diags.extend(diags);
        (id, doc)
    }

    /// Reads one file of the server configuration and expands it.  `from` is the Include
    /// that asked for it.  Returns `None` when it cannot be read or would loop.
    pub fn read_config(&mut self, apache_path: &str, from: Option<Span>) -> Option<(FileId, Vec<Item>)> {
        self.read_file(apache_path, from, &Context::server(), None)
    }

    /// Reads (or takes the prefetched parse of) one configuration file and expands it in
    /// `ctx`: an included file is read in the context of its Include (a vhost, ...).
    fn read_file(
        &mut self,
        apache_path: &str,
        from: Option<Span>,
        ctx: &Context,
        prefetched: Option<Prefetched>,
    ) -> Option<(FileId, Vec<Item>)> {
        let canonical = match &prefetched {
            Some(p) => p.canonical.clone(),
            None => canonical_of(self.fs, apache_path),
        };
        if let Some(pos) = self.stack.iter().position(|(p, _)| *p == canonical) {
            let mut d = Diagnostic::new(
                Code::IncludeCycle,
                from,
                format!("{apache_path} includes itself through this Include"),
            )
            .with_help("remove one of the Include directives in the cycle");
            for (_, file) in &self.stack[pos..] {
                d = d.with_label(
                    Span::new(*file, 0, 0),
                    format!("{} is being read", self.sources.file(*file).display),
                );
            }
            self.diags.push(d);
            return None;
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.diags.push(Diagnostic::new(
                Code::IncludeCycle,
                from,
                format!("exceeded maximum include depth of {MAX_INCLUDE_DEPTH}"),
            ));
            return None;
        }
        let (id, doc) = match prefetched {
            Some(Prefetched { parsed: Ok((id, doc, diags)), .. }) => {
                self.diags.extend(diags);
                (id, doc)
            }
            Some(Prefetched { parsed: Err(e), .. }) => {
                self.diags.push(Diagnostic::new(
                    Code::UnreadableFile,
                    from,
                    format!("could not open configuration file {apache_path}: {e}"),
                ));
                return None;
            }
            None => {
                let host = self.fs.host_path(apache_path);
                let bytes = match std::fs::read(&host) {
                    Ok(b) => b,
                    Err(e) => {
                        self.diags.push(Diagnostic::new(
                            Code::UnreadableFile,
                            from,
                            format!("could not open configuration file {apache_path}: {e}"),
                        ));
                        return None;
                    }
                };
                let display = host.to_string_lossy().into_owned();
                let id = self.add_file(display, apache_path.to_string(), FileKind::ServerConfig, bytes);
                let (doc, diags) = syntax::parse(id, &self.sources.file(id).text);
                self.diags.extend(diags);
                (id, doc)
            }
        };
        self.stack.push((canonical.clone(), id));
        self.seen.push((canonical, id));
        let items = self.expand(doc.nodes, ctx, true);
        self.stack.pop();
        Some((id, items))
    }

    /// Reads and parses many included files at once, registering them under consecutive
    /// ids in Apache's order; expansion stays sequential, as Apache's reading is.
    fn prefetch(&mut self, files: &[String]) -> Vec<Prefetched> {
        let base = self.sources.reserve(files.len());
        let fs = self.fs;
        let loaded = crate::par::map(files, |k, path| {
            let id = FileId(base.0 + k as u32);
            let canonical = canonical_of(fs, path);
            let host = fs.host_path(path);
            let read = std::fs::read(&host).map(|bytes| {
                let (text, bad) = decode(bytes);
                let (doc, mut diags) = syntax::parse(id, &text);
                if let Some(at) = bad {
                    diags.insert(0, invalid_utf8(id, at));
                }
                (host.to_string_lossy().into_owned(), text, doc, diags)
            });
            (canonical, read)
        });
        let mut out = Vec::with_capacity(files.len());
        for (k, (canonical, read)) in loaded.into_iter().enumerate() {
            let id = FileId(base.0 + k as u32);
            let parsed = match read {
                Ok((display, text, doc, diags)) => {
                    self.sources.fill(id, display, files[k].clone(), FileKind::ServerConfig, text);
                    Ok((id, doc, diags))
                }
                Err(e) => Err(e),
            };
            out.push(Prefetched { canonical, parsed });
        }
        out
    }

    /// Registers a file's bytes, replacing invalid UTF-8 with a warning.
    pub fn add_file(
        &mut self,
        display: String,
        apache_path: String,
        kind: FileKind,
        bytes: Vec<u8>,
    ) -> FileId {
        let (text, bad) = decode(bytes);
        let id = self.sources.add(display, apache_path, kind, text);
        if let Some(at) = bad {
            self.diags.push(invalid_utf8(id, at));
        }
        id
    }

    /// Expands syntax nodes in `ctx`.  `enabled` is false inside a false conditional; such
    /// items are kept but neither applied nor checked.
    pub fn expand(&mut self, nodes: Vec<Node>, ctx: &Context, enabled: bool) -> Vec<Item> {
        let mut out = Vec::with_capacity(nodes.len());
        for node in nodes {
            match node {
                Node::Comment(_) => {}
                Node::Directive(d) => {
                    let (raw, args) = self.resolve(d.raw, d.args, enabled);
                    let mut item =
                        Item { name: d.name, args, raw, span: d.span, enabled, kind: ItemKind::Directive };
                    if enabled {
                        self.check_as(&item, ctx, false);
                        if ctx.place != Place::Htaccess {
                            self.apply(&mut item, ctx);
                        }
                    }
                    out.push(item);
                }
                Node::Section(s) => {
                    let (raw, args) = self.resolve(s.raw, s.args, enabled);
                    let mut item =
                        Item { name: s.name, args, raw, span: s.span, enabled, kind: ItemKind::Directive };
                    let cond = if enabled { condition::evaluate(self, &item) } else { None };
                    if enabled {
                        self.check_as(&item, ctx, true);
                    }
                    let inner_enabled = enabled && cond.as_ref().is_none_or(|c| c.value != Some(false));
                    let inner_ctx = ctx.enter(&item.name.value);
                    let children = self.expand(s.children, &inner_ctx, inner_enabled);
                    item.kind = ItemKind::Section { children, close: s.close, condition: cond };
                    out.push(item);
                }
            }
        }
        out
    }

    /// `${VAR}` substitution in an enabled line; the words are split again only when the
    /// text changed.
    fn resolve(&mut self, raw: MappedText, args: Vec<Word>, enabled: bool) -> (MappedText, Vec<Word>) {
        if !enabled || !raw.text.contains("${") {
            return (raw, args);
        }
        let (text, missing) = self.defines.resolve(&raw);
        let args = Word::split(&text);
        // `${map:key}` is RewriteMap syntax, which Apache leaves alone without a warning.
        // One diagnostic per name and line, however often the line repeats it.
        let mut seen: Vec<(String, crate::source::Span, usize)> = Vec::new();
        for (name, span) in missing.into_iter().filter(|(n, _)| !n.contains(':')) {
            match seen.iter_mut().find(|(n, _, _)| *n == name) {
                Some(entry) => entry.2 += 1,
                None => seen.push((name, span, 1)),
            }
        }
        for (name, span, count) in seen {
            let times = if count > 1 { format!(" ({count} references on this line)") } else { String::new() };
            self.diags.push(
                Diagnostic::new(
                    Code::UndefinedVariable,
                    span,
                    format!("config variable ${{{name}}} is not defined{times}"),
                )
                .with_help(format!("define it with `Define {name} value` or pass --define {name}=value")),
            );
        }
        (text, args)
    }

    /// Directives that change how the rest of the configuration is read.
    fn apply(&mut self, item: &mut Item, ctx: &Context) {
        let name = item.name.value.to_ascii_lowercase();
        match name.as_str() {
            "define" => {
                if let Some(n) = item.arg(0) {
                    let n = n.to_string();
                    Arc::make_mut(&mut self.defines).define(&n, item.arg(1));
                }
            }
            "undefine" => {
                if let Some(n) = item.arg(0) {
                    let n = n.to_string();
                    Arc::make_mut(&mut self.defines).undefine(&n);
                }
            }
            "loadmodule" => {
                if let Some(id) = item.arg(0).filter(|id| super::modules::Modules::is_built_in_id(id)) {
                    self.diags.push(
                        Diagnostic::new(
                            Code::BadArgument,
                            item.args[0].span,
                            format!("module {id} is built-in and can't be loaded"),
                        )
                        .with_help("Apache refuses to start: remove the LoadModule line (the module is always there)"),
                    );
                } else if let (Some(id), Some(path)) = (item.arg(0), item.arg(1)) {
                    let path = join(&self.server_root, path);
                    Arc::make_mut(&mut self.modules).load(id, &path);
                }
            }
            "serverroot" => {
                if let Some(root) = item.arg(0) {
                    if root.starts_with('/') {
                        self.server_root = root.trim_end_matches('/').to_string();
                        if self.server_root.is_empty() {
                            self.server_root.push('/');
                        }
                    } else {
                        self.diags.push(Diagnostic::new(
                            Code::BadArgument,
                            item.args[0].span,
                            "ServerRoot must be a valid directory",
                        ));
                    }
                }
            }
            "include" | "includeoptional" => self.include(item, ctx, name == "includeoptional"),
            _ => {}
        }
    }

    fn include(&mut self, item: &mut Item, ctx: &Context, optional: bool) {
        let Some(arg) = item.args.first() else { return };
        let path = join(&self.server_root, &arg.value);
        let include::Expansion { mut files, problems, dirs } = match self.shared.as_deref() {
            None => include::expand(self.fs, &path, optional),
            Some(shared) => memo(&shared.expansions, (path.clone(), optional), || {
                include::expand(self.fs, &path, optional)
            }),
        };
        self.include_dirs.extend(dirs);
        if !self.skipped.is_empty() {
            let shared = self.shared.as_deref();
            files.retain(|f| file_key(self.fs, shared, f).is_none_or(|k| !self.skipped.contains(&k)));
        }
        for p in problems {
            let d = match p {
                IncludeProblem::NotFound(f) => Diagnostic::new(
                    Code::IncludeNotFound,
                    arg.span,
                    format!("could not open configuration file {f}: no such file or directory"),
                )
                .with_help("fix the path, or use IncludeOptional if the file may be absent"),
                IncludeProblem::NoMatch { pattern, dir } => Diagnostic::new(
                    Code::IncludeNoMatch,
                    arg.span,
                    format!("no matches for the wildcard '{pattern}' in '{dir}'"),
                )
                .with_help("Apache refuses to start; use IncludeOptional if nothing may match"),
            };
            self.diags.push(d);
        }
        let mut ids = Vec::new();
        let mut children = Vec::new();
        // Many files at once (`system/*/conf/httpd.conf` on a hosting server): parse them
        // in parallel first.
        let mut prefetched: Vec<Option<Prefetched>> = if files.len() >= 8 {
            self.prefetch(&files).into_iter().map(Some).collect()
        } else {
            files.iter().map(|_| None).collect()
        };
        for (k, f) in files.iter().enumerate() {
            let Some((id, items)) = self.read_file(f, Some(item.span), ctx, prefetched[k].take()) else {
                continue;
            };
            ids.push(id);
            children.extend(items);
        }
        item.kind = ItemKind::Include { files: ids, children };
    }

    /// Checks an enabled directive or section against the catalogue.
    fn check_as(&mut self, item: &Item, ctx: &Context, is_section: bool) {
        let cat = catalogue();
        let shown = if is_section { format!("<{}", item.name.value) } else { item.name.value.clone() };
        let info = if is_section { cat.section(&item.name.value) } else { cat.get(&item.name.value) };
        let htaccess = ctx.place == Place::Htaccess;
        let Some(info) = info else {
            self.unknown(item, &shown, ctx);
            return;
        };
        if !info.modules().any(|m| self.modules.provides(m)) {
            let d = Diagnostic::new(
                Code::ModuleNotLoaded,
                item.name.span,
                format!(
                    "invalid command '{shown}': it belongs to {}, which is not loaded{}",
                    info.module,
                    if htaccess { " (Apache answers 500 for this directory)" } else { "" }
                ),
            )
            .with_help(format!("load {} or wrap the directive in <IfModule {}>", info.module, info.module));
            self.diags.push(d);
            return;
        }
        if htaccess {
            self.check_htaccess(item, &shown, info.htaccess, ctx);
        } else if let Some(loc) = ctx.location.filter(|_| {
            info.name.eq_ignore_ascii_case("<Files") || info.name.eq_ignore_ascii_case("<FilesMatch")
        }) {
            self.diags.push(Diagnostic::new(
                Code::NotAllowedHere,
                item.name.span,
                format!("{}> cannot occur within {loc}> section", info.name),
            ));
            return;
        } else if let Some(problem) = placement_problem(info.place, ctx, &info.name) {
            self.diags.push(
                Diagnostic::new(Code::NotAllowedHere, item.name.span, format!("{shown} {problem}"))
                    .with_help(format!("see {}", info.doc_url())),
            );
            return;
        }
        let n = item.args.len();
        match info.args.accepts(n) {
            Some(false) => self.diags.push(
                Diagnostic::new(
                    Code::WrongArguments,
                    item.span,
                    format!("{} {} but has {n}", info.name, info.args.describe()),
                )
                .with_help(format!("see {}", info.doc_url())),
            ),
            Some(true) if info.args == Arity::Flag => {
                let v = item.args[0].value.to_ascii_lowercase();
                if v != "on" && v != "off" {
                    self.diags.push(Diagnostic::new(
                        Code::BadArgument,
                        item.args[0].span,
                        format!("{} must be On or Off", info.name),
                    ));
                }
            }
            _ => {}
        }
    }

    fn unknown(&mut self, item: &Item, shown: &str, ctx: &Context) {
        if let Some(perms) = &ctx.htaccess
            && perms.nonfatal_unknown
        {
            self.diags.push(Diagnostic::new(
                Code::HtaccessNonfatal,
                item.name.span,
                format!("unknown directive '{shown}' is skipped because of AllowOverride Nonfatal=Unknown"),
            ));
            return;
        }
        let third_party: Vec<&str> = self
            .modules
            .loaded()
            .iter()
            .filter(|m| !catalogue().knows_module(&m.file))
            .map(|m| m.file.as_str())
            .collect();
        let mut d = Diagnostic::new(
            Code::UnknownDirective,
            item.name.span,
            format!(
                "invalid command '{shown}', perhaps misspelled or defined by a module not included in the server configuration{}",
                if ctx.place == Place::Htaccess { " (Apache answers 500 for this directory)" } else { "" }
            ),
        );
        if third_party.is_empty() {
            d = d.with_help(
                "check the spelling; lighten's catalogue has every directive of Debian's Apache modules",
            );
        } else {
            d = d.with_severity(Severity::Warning).with_help(format!(
                "it may belong to {}, which lighten's catalogue does not describe",
                third_party.join(", ")
            ));
        }
        self.diags.push(d);
    }

    fn check_htaccess(
        &mut self,
        item: &Item,
        shown: &str,
        classes: Option<crate::catalogue::Overrides>,
        ctx: &Context,
    ) {
        let Some(perms) = &ctx.htaccess else { return };
        let listed = perms.list.iter().any(|n| n.eq_ignore_ascii_case(&item.name.value));
        let allowed = listed
            || match classes {
                None => false,
                Some(c) if c == crate::catalogue::Overrides::ALL => !perms.overrides.is_empty(),
                Some(c) => c.intersects(perms.overrides),
            };
        if allowed {
            return;
        }
        let why = match classes {
            None => "is never allowed in .htaccess".to_string(),
            Some(c) => format!("needs AllowOverride {c}, but {} is in force", perms.describe()),
        };
        if perms.nonfatal_override {
            self.diags.push(
                Diagnostic::new(
                    Code::HtaccessNonfatal,
                    item.name.span,
                    format!("{shown} {why}; Apache skips it because of AllowOverride Nonfatal=Override"),
                )
                .with_label(perms.span, "AllowOverride set here"),
            );
            return;
        }
        let mut d = Diagnostic::new(
            Code::HtaccessNotAllowed,
            item.name.span,
            format!("{shown} not allowed here: it {why}, so Apache answers 500 for this directory"),
        )
        .with_help("allow its class in the <Directory> AllowOverride, or remove it from .htaccess");
        if perms.span.end > perms.span.start {
            d = d.with_label(perms.span, "AllowOverride set here");
        }
        self.diags.push(d);
    }
}

/// A file read and parsed ahead of its expansion.
struct Prefetched {
    canonical: PathBuf,
    parsed: std::io::Result<(FileId, syntax::Document, Vec<Diagnostic>)>,
}

/// A file's identity through symbolic links: one `stat`, cheaper than a canonical path
/// (an Include of `vhosts/*.conf` on a server of a thousand domains is checked a thousand
/// times per domain when each is read alone), and none when the loads share it.
fn file_key(fs: &Sysroot, shared: Option<&Shared>, apache_path: &str) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let host = fs.host_path(apache_path);
    let stat = |host: &Path| std::fs::metadata(host).ok().map(|m| (m.dev(), m.ino()));
    match shared {
        None => stat(&host),
        Some(shared) => memo(&shared.keys, host.clone(), || stat(&host)),
    }
}

fn canonical_of(fs: &Sysroot, apache_path: &str) -> PathBuf {
    let host = fs.host_path(apache_path);
    std::fs::canonicalize(&host).unwrap_or(host)
}

/// Bytes to text; invalid UTF-8 becomes U+FFFD and its first offset is returned.
pub fn decode(bytes: Vec<u8>) -> (String, Option<usize>) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            (String::from_utf8_lossy(e.as_bytes()).into_owned(), Some(at))
        }
    }
}

pub fn invalid_utf8(id: FileId, at: usize) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidUtf8,
        Span::new(id, at, at + 1),
        "this file is not valid UTF-8; invalid bytes are read as U+FFFD",
    )
    .with_help("Apache compares bytes; re-save the file as UTF-8 if it holds paths or patterns")
}

/// Apache's answer when a directive stands somewhere its `command_rec` forbids.
fn placement_problem(place: Where, ctx: &Context, name: &str) -> Option<&'static str> {
    let global = place == Where::Global || name.eq_ignore_ascii_case("<VirtualHost");
    match ctx.place {
        Place::Server => match place {
            Where::Directory => {
                Some("not allowed here: only inside <Directory>, <Files>, <Location> or <If>")
            }
            _ => None,
        },
        Place::VirtualHost => {
            if global {
                Some("cannot occur within <VirtualHost> section")
            } else if place == Where::Directory {
                Some("not allowed here: only inside <Directory>, <Files>, <Location> or <If>")
            } else {
                None
            }
        }
        Place::Directory => match place {
            Where::Server | Where::Global => {
                Some("not allowed here: not inside <Directory>, <Files>, <Location> or <If>")
            }
            _ => None,
        },
        Place::Htaccess => None,
    }
}
