//! Apache to lighttpd: the model in, the files of a lighttpd setup out.
//!
//! The output is a `lighttpd.conf` that does natively what lighttpd does exactly the way
//! Apache does (listeners, virtual host selection, document roots, TLS, the PHP backend,
//! logs, MIME types), and hands every request to `lighten.lua` under mod_magnet, which
//! runs Apache's own decision procedure (rewrite rounds, access control, mod_dir,
//! ErrorDocument, headers) over the site as data (`lighten_site.lua`).  The Lua runtime
//! is a port of [`crate::eval`], held against Apache by the differential tests.
//!
//! Nothing here touches the disk: [`convert`] returns the files and the report; the
//! caller writes them.  Every directive of the source ends up in the report with its
//! fate; what cannot be carried exactly is reported and fails closed (403).

pub mod conf;
pub mod expr;
pub mod lua;
pub mod report;
pub mod site;

use crate::catalogue::Status;
use crate::config::Config;
use crate::model::Model;
use crate::source::{SourceMap, Span, Sysroot};
use std::collections::HashMap;
use std::path::PathBuf;

pub use report::{Entry, Fate, Report};

/// Where the converted site runs.
pub struct Options {
    /// The folder the files will be written to (absolute): lighttpd.conf names the Lua
    /// files by their path there.
    pub out_dir: PathBuf,
    /// `--listen`: replaces the listeners.  `(Some(80), "127.0.0.1", 18080)` takes the place
    /// of Apache's port 80; `(None, ..)` of every port.
    pub listen: Vec<(Option<u16>, String, u16)>,
    /// pid file, logs, sockets, caches.
    pub runtime_dir: PathBuf,
    /// Apache path to the path lighttpd sees (a sandbox copy); identity for a real move.
    pub map_path: Box<dyn Fn(&str) -> String>,
    /// The PHP FastCGI backend to use instead of the configuration's (`host:port` or a
    /// socket path): the sandbox's.
    pub php_backend: Option<String>,
    /// A certificate and key for TLS listeners whose configured files do not exist here.
    pub fallback_cert: Option<(String, String)>,
    /// Make the runtime write every step it takes to lighttpd's error log.
    pub trace: bool,
}

/// What a conversion produces.
pub struct Conversion {
    /// Files relative to the output folder, in a fixed order.
    pub files: Vec<(PathBuf, String)>,
    pub report: Report,
    /// What the written setup relies on at run time (checked after writing).
    pub needs: Vec<Need>,
    /// `server.username` and `server.groupname`, when lighttpd drops to them as root.
    pub user: Option<String>,
    pub group: Option<String>,
    /// Where the user and group come from (`file:line` of Apache's User), when they do.
    pub user_at: String,
}

/// Something outside the output that lighttpd reads or runs, with the Apache `file:line`
/// it comes from (empty when lighten chose it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub kind: NeedKind,
    pub path: String,
    pub at: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NeedKind {
    Certificate,
    Key,
    PasswordFile,
    Socket,
    Program,
    DocumentRoot,
}

impl NeedKind {
    pub fn label(self) -> &'static str {
        match self {
            NeedKind::Certificate => "certificate",
            NeedKind::Key => "private key",
            NeedKind::PasswordFile => "password file",
            NeedKind::Socket => "PHP FastCGI socket",
            NeedKind::Program => "program",
            NeedKind::DocumentRoot => "document root",
        }
    }
}

/// Something found while translating one directive.
#[derive(Clone, Debug)]
pub struct Finding {
    pub at: Span,
    pub fate: Fate,
}

impl Finding {
    pub fn unsupported(at: Span, reason: String, closed: &str) -> Finding {
        Finding { at, fate: Fate::Unsupported { reason, closed: closed.to_string() } }
    }

    pub fn approximated(at: Span, reason: String) -> Finding {
        Finding { at, fate: Fate::Approximated { reason } }
    }
}

/// The data being built for the Lua runtime.
pub struct Site<'a> {
    pub sources: &'a SourceMap,
    pub sysroot: &'a Sysroot,
    pub map_path: &'a dyn Fn(&str) -> String,
    pub regexes: Vec<(String, bool, String)>,
    pub re_index: HashMap<(String, bool), usize>,
    pub exprs: Vec<String>,
    pub findings: Vec<Finding>,
    /// Ids of the modules Apache loads (`cgi_module`): whether a handler is served as a file.
    pub modules: std::collections::BTreeSet<String>,
}

impl Site<'_> {
    pub fn at(&self, span: Span) -> String {
        self.sources.line_ref(span)
    }

    /// A file of the configuration (a RewriteMap): the sysroot's copy, else empty.
    pub fn read(&self, path: &str) -> String {
        self.sysroot.read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }
}

/// Converts a loaded and modelled configuration.
pub fn convert(model: &Model, cfg: &Config, opts: &Options) -> Conversion {
    let mut site = Site {
        sources: &cfg.sources,
        sysroot: &cfg.sysroot,
        map_path: opts.map_path.as_ref(),
        regexes: Vec::new(),
        re_index: HashMap::new(),
        exprs: Vec::new(),
        findings: Vec::new(),
        modules: model.modules.iter().map(|m| m.id.clone()).collect(),
    };
    let data = site.module(model, opts.trace);
    let mime = mime_module(model, cfg);
    let written = conf::write(model, cfg, opts, &mut site);
    debug_assert_eq!(conf::repeated_conditional(&written.text), None, "lighttpd.conf repeats a conditional");
    let lighttpd_conf = written.text;
    let mut findings = site.findings;
    findings.extend(written.findings);
    let report = report::build(model, &cfg.sources, &findings);

    let lua_dir = PathBuf::from("lua");
    let mut files = vec![
        (PathBuf::from("lighttpd.conf"), lighttpd_conf),
        (lua_dir.join("lighten.lua"), include_str!("../../templates/lua/lighten.lua").to_string()),
        (lua_dir.join("lighten_re.lua"), include_str!("../../templates/lua/lighten_re.lua").to_string()),
        (
            lua_dir.join("lighten_rewrite.lua"),
            include_str!("../../templates/lua/lighten_rewrite.lua").to_string(),
        ),
        (lua_dir.join("lighten_site.lua"), data),
        (lua_dir.join("lighten_mime.lua"), mime),
    ];
    for (i, _) in conf::hosts(model).iter().enumerate() {
        files.push((lua_dir.join(format!("vhost{}.lua", i + 1)), conf::entry_script(opts, i + 1)));
        files.push((lua_dir.join(format!("response{}.lua", i + 1)), conf::response_script(opts, i + 1)));
    }
    files.push((PathBuf::from("report.md"), report.to_markdown()));
    files.push((PathBuf::from("report.json"), report.to_json()));
    let (user, group) = conf::run_as(model);
    Conversion {
        files,
        report,
        needs: written.needs,
        user: user.map(|u| u.value.clone()),
        group: group.map(|g| g.value.clone()),
        user_at: user.map(|u| cfg.sources.line_ref(u.span)).unwrap_or_default(),
    }
}

/// Apache's TypesConfig as a Lua table from extension to type.
fn mime_module(model: &Model, cfg: &Config) -> String {
    let path = model
        .server
        .directives
        .iter()
        .rev()
        .find(|d| d.enabled && d.name.eq_ignore_ascii_case("TypesConfig"))
        .map(|d| d.args.trim().trim_matches('"').to_string())
        .unwrap_or_else(|| "/etc/mime.types".to_string());
    let path = if path.starts_with('/') {
        path
    } else {
        format!("{}/{path}", cfg.server_root.trim_end_matches('/'))
    };
    // The configuration's copy, else this machine's (as the sandboxed Apache would read).
    let text = cfg
        .sysroot
        .read(&path)
        .or_else(|_| std::fs::read(&path))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut map = std::collections::BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_whitespace();
        let Some(t) = parts.next() else { continue };
        for ext in parts {
            // Apache's mod_mime: a later line wins for the same extension.
            map.insert(ext.to_ascii_lowercase(), t.to_string());
        }
    }
    let mut out = format!("-- Generated by lighten from {path} (Apache's TypesConfig).\nreturn {{\n");
    for (e, t) in map {
        out.push_str(&format!("  [{}] = {},\n", lua::string(&e), lua::string(&t)));
    }
    out.push_str("}\n");
    out
}

/// The catalogue status a directive gets when nothing specific was found.
pub fn default_fate(status: Option<Status>, note: &str) -> Fate {
    match status {
        Some(Status::Translated) => Fate::Exact,
        Some(Status::Approximated) => Fate::Approximated { reason: note.to_string() },
        Some(Status::Ignored) => Fate::Ignored { reason: note.to_string() },
        Some(Status::Unsupported) => Fate::Unsupported {
            reason: if note.is_empty() { "not translated".into() } else { note.to_string() },
            closed: "left out".into(),
        },
        None => Fate::Unsupported { reason: "unknown directive".into(), closed: "left out".into() },
    }
}
