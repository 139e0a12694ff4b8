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

pub mod code;
pub mod compile;
pub mod conf;
pub mod expr;
pub mod fpm;
pub mod lane;
pub mod links;
pub mod logs;
pub mod lua;
pub mod realms;
pub mod report;
pub mod runtime;
pub mod site;

use crate::config::Config;
use crate::model::Model;
use crate::source::{SourceMap, Span, Sysroot};
use std::collections::HashMap;
use std::path::PathBuf;

pub use code::Code;
pub use report::{Entry, Fate, NEEDS_YOU, NOTES, READY, Report, SiteVerdict};

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
    pub map_path: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// The PHP FastCGI backend to use instead of the configuration's (`host:port` or a
    /// socket path): the sandbox's.
    pub php_backend: Option<String>,
    /// A certificate and key for TLS listeners whose configured files do not exist here.
    pub fallback_cert: Option<(String, String)>,
    /// Make the runtime write every step it takes to lighttpd's error log.
    pub trace: bool,
    /// Access logs go where Apache writes them (a conversion for the server itself, no
    /// --sysroot); otherwise into the runtime folder, named after Apache's files.
    pub apache_log_paths: bool,
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
    /// The php-fpm pools written (`php-fpm.conf` runs them), for PHP as the site's user.
    pub pools: Vec<fpm::Pool>,
    /// The folder of php-fpm's pid file, log and sockets, when there are pools (made by
    /// the writer, root's: `fpm::run_dir`).
    pub fpm_run: Option<PathBuf>,
    /// What the runtime files are cut to, module by module (`runtime::Runtime`).
    pub runtime: runtime::Runtime,
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
    LogFolder,
    /// `user:group` a php-fpm pool runs as.
    PoolUser,
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
            NeedKind::LogFolder => "access log folder",
            NeedKind::PoolUser => "php-fpm pool's user",
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
    pub fn unsupported(code: Code, at: Span, reason: String, closed: &str) -> Finding {
        debug_assert_eq!(code.fate(), "unsupported", "{code}");
        Finding { at, fate: Fate::Unsupported { code, reason, closed: closed.to_string() } }
    }

    /// What a directive becomes exactly (where the catalogue alone would say less).
    pub fn exact(at: Span) -> Finding {
        Finding { at, fate: Fate::Exact }
    }

    pub fn approximated(code: Code, at: Span, reason: String) -> Finding {
        debug_assert_eq!(code.fate(), "approximated", "{code}");
        Finding { at, fate: Fate::Approximated { code, reason } }
    }
}

/// The data being built for the Lua runtime.
pub struct Site<'a> {
    pub sources: &'a SourceMap,
    pub sysroot: &'a Sysroot,
    pub map_path: &'a (dyn Fn(&str) -> String + Sync),
    pub regexes: Vec<(String, bool, String)>,
    pub re_index: HashMap<(String, bool), usize>,
    pub exprs: Vec<String>,
    pub findings: Vec<Finding>,
    /// Ids of the modules Apache loads (`cgi_module`): whether a handler is served as a file.
    pub modules: std::collections::BTreeSet<String>,
    /// Per host (as `conf::hosts` numbers them): whether it has a response-start hook.
    pub response_hooks: Vec<bool>,
    /// Per host (as `response_hooks`): its static lane (`lane`), for lighttpd.conf.
    pub lanes: Vec<Option<lane::Lane>>,
    /// Per host: its compiled module's name, or why lighten.lua interprets it.
    pub tiers: Vec<Result<String, String>>,
    /// Per host: what it does with symbolic links (`links`).
    pub links: Vec<links::HostLinks>,
    /// Per host: the first host (1-based) whose interpreter data is the same but for the
    /// provenance of its lines.
    pub same_data: Vec<usize>,
    /// The php-fpm pools of hosts whose PHP Apache ran as their own user (`fpm`).
    pub pools: fpm::Pools,
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
        response_hooks: Vec::new(),
        lanes: Vec::new(),
        same_data: Vec::new(),
        tiers: Vec::new(),
        links: Vec::new(),
        pools: fpm::Pools::default(),
    };
    {
        // lighttpd drops to Apache's User only when started as root, and php-fpm can give
        // its sockets to that user only then: a conversion made as a normal user is run as
        // that user, whose own sockets they are.
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let (user, group) = if root { conf::run_as(model) } else { (None, None) };
        let run_as = (user.map(|u| u.value.as_str()), group.map(|g| g.value.as_str()));
        site.pools = fpm::plan(model, cfg, opts, run_as, &mut site.findings);
    }
    site.links = links::inventory(model, &cfg.sysroot, opts.map_path.as_ref(), &mut site.findings);
    let data = site.module(model, opts.trace);
    let mime = mime_module(model, cfg, opts.map_path.as_ref());
    // The compiled tier, host by host, when the whole conversion is exact (what is not
    // exact fails closed through the interpreter's data).
    let hosts = conf::hosts(model);
    let shared = compile::Shared {
        php_exts: conf::php_extensions(model),
        deflate: conf::deflate_types(model, &mut Vec::new()),
        mime: mime_types(model, cfg, opts.map_path.as_ref()),
    };
    // Each host on its own: what the translation refuses per request (ScriptAlias, [P],
    // RewriteMap, Require group, Header edit, an expression or regex it cannot carry,
    // SSLVerifyClient) fails closed through marks in the interpreter's data, and the
    // compiler refuses every one of those constructs in the host's scopes
    // (`compile::host` says which); what is unsupported and left out (UserDir, <Proxy>,
    // FcgidInitialEnv, ...) is left out by both tiers alike. Approximations (IndexIgnore,
    // FileETag MTime) are carried the same way by both.
    let names = compile::module_names(model);
    let compile_one = |h: &Option<usize>| {
        if opts.trace {
            Err("--trace asks for the interpreter's trace".into())
        } else {
            compile::host(model, &site, *h, &shared)
        }
    };
    let mut compiled: Vec<Result<compile::Compiled, String>> = in_parallel(&hosts, compile_one);
    // Hosts whose compiled modules decide the same (the same text but for the comments
    // naming each host's Apache lines, as an http and an https vhost of one site) share
    // one file.
    let decisions = |body: &str| -> String {
        body.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n")
    };
    // (by the text, once per host: a server of 1,000 accounts has 2,000 hosts)
    let mut modules: Vec<Option<String>> = vec![None; hosts.len()];
    let mut first_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for i in 0..compiled.len() {
        if let Ok(c) = &compiled[i] {
            let j = *first_of.entry(decisions(&c.body)).or_insert(i);
            modules[i] = Some(if j == i { names[i].clone() } else { modules[j].clone().unwrap_or_default() });
        }
    }
    site.tiers = modules
        .iter()
        .zip(&compiled)
        .map(|(m, c)| match (m, c) {
            (Some(m), _) => Ok(m.clone()),
            (None, Err(why)) => Err(why.clone()),
            (None, Ok(_)) => Err(String::new()),
        })
        .collect();
    site.response_hooks = compiled.iter().map(|c| c.as_ref().map_or(true, |c| c.response)).collect();
    site.lanes = compiled.iter().map(|c| c.as_ref().ok().and_then(|c| c.lane.clone())).collect();
    let mut written = conf::write(model, cfg, opts, &mut site);
    if compiled.iter().any(Result::is_ok)
        && written.findings.iter().any(|f| matches!(f.fate, Fate::Unsupported { .. }))
    {
        compiled.iter_mut().for_each(|c| *c = Err("something is unsupported (see report.md)".into()));
        modules = vec![None; hosts.len()];
        site.tiers = compiled.iter().map(|c| Err(c.as_ref().err().cloned().unwrap_or_default())).collect();
        site.response_hooks = vec![true; hosts.len()];
        site.lanes = vec![None; hosts.len()];
        site.findings.retain(|f| !written.findings.iter().any(|w| w.at == f.at));
        written = conf::write(model, cfg, opts, &mut site);
    }
    debug_assert_eq!(conf::repeated_conditional(&written.text), None, "lighttpd.conf repeats a conditional");
    let hosts_module = conf::hosts_module(model, cfg, &site, &written.blocks);
    let written_blocks = std::mem::take(&mut written.blocks);
    let guards = std::mem::take(&mut written.guards);
    let site_response_hooks = site.response_hooks.clone();
    let lighttpd_conf = written.text;
    let site_pools = std::mem::take(&mut site.pools);
    let mut findings = site.findings;
    findings.extend(written.findings);
    let report = report::build(model, &cfg.sources, &findings);

    let lua_dir = PathBuf::from("lua");
    let interpreted = compiled.iter().any(Result::is_err);
    let mut files = vec![(PathBuf::from("lighttpd.conf"), lighttpd_conf)];
    if interpreted {
        files
            .push((lua_dir.join("lighten.lua"), include_str!("../../templates/lua/lighten.lua").to_string()));
        files.push((
            lua_dir.join("lighten_rewrite.lua"),
            include_str!("../../templates/lua/lighten_rewrite.lua").to_string(),
        ));
        files.push((lua_dir.join("lighten_site.lua"), data.render()));
    } else {
        drop(data);
    }
    // The fixed runtime cut to the parts the compiled modules name (translate::runtime);
    // the interpreter reads every part of lighten_plans.lua, and PCRE2.
    let mut rt = runtime::Runtime { interpreted, ..Default::default() };
    for (i, c) in compiled.iter().enumerate() {
        if let (Ok(c), Some(module)) = (c, &modules[i]) {
            rt.modules
                .entry(lua_dir.join(format!("{module}.lua")))
                .or_insert_with(|| runtime::Needs::of(&c.body));
        }
    }
    if compiled.iter().any(Result::is_ok) {
        files.push((lua_dir.join("lighten_core.lua"), runtime::cut(CORE, &rt.core())));
    }
    if rt.re() {
        files.push((lua_dir.join("lighten_re.lua"), RE.to_string()));
    }
    files.push((lua_dir.join("lighten_plans.lua"), runtime::cut(PLANS, &rt.plans())));
    if conf::uses_basic_auth(model) {
        files.push((lua_dir.join(conf::REALM_FILE), conf::realm_script(opts)));
    }
    files.push((lua_dir.join("lighten_mime.lua"), mime));
    for (name, text) in guards {
        files.push((lua_dir.join(name), text));
    }
    files.push((lua_dir.join("lighten_htaccess.lua"), htaccess_module(model, cfg, opts.map_path.as_ref())));
    // Each compiled module once, with the hosts that use it named at its top.
    for (i, c) in compiled.iter().enumerate() {
        let (Ok(c), Some(module)) = (c, &modules[i]) else { continue };
        if module != &names[i] {
            continue;
        }
        let users: Vec<&str> = (0..hosts.len())
            .filter(|&j| modules[j].as_ref() == Some(module))
            .map(|j| compiled[j].as_ref().map(|c| c.what.as_str()).unwrap_or(""))
            .collect();
        let head = format!(
            "-- Generated by lighten: {}, compiled for lighttpd's mod_magnet.\n",
            conf::comment(&users.join("; "))
        );
        files.push((lua_dir.join(format!("{module}.lua")), head + &c.body));
    }
    // The stage scripts the host blocks share, and each host's own where its block needs
    // them (a document root and port that do not tell it from another host).
    let own = |n: usize| written_blocks.iter().any(|b| b.n == n && !b.shared);
    if written_blocks.iter().any(|b| b.shared) {
        files.push((lua_dir.join("lighten_hosts.lua"), hosts_module));
        files.push((lua_dir.join("physical.lua"), conf::stage_script(opts, "physical")));
        if written_blocks
            .iter()
            .any(|b| b.shared && site_response_hooks.get(b.n - 1).copied().unwrap_or(true))
        {
            files.push((lua_dir.join("response.lua"), conf::stage_script(opts, "response")));
        }
    }
    for (i, c) in compiled.into_iter().enumerate() {
        if !own(i + 1) {
            continue;
        }
        match (c, &modules[i]) {
            (Ok(c), Some(module)) => {
                files.push((
                    lua_dir.join(format!("vhost{}.lua", i + 1)),
                    conf::compiled_entry_script(opts, i + 1, module),
                ));
                if c.response {
                    files.push((
                        lua_dir.join(format!("response{}.lua", i + 1)),
                        conf::compiled_response_script(opts, i + 1, module),
                    ));
                }
            }
            _ => {
                files.push((lua_dir.join(format!("vhost{}.lua", i + 1)), conf::entry_script(opts, i + 1)));
                files.push((
                    lua_dir.join(format!("response{}.lua", i + 1)),
                    conf::response_script(opts, i + 1),
                ));
            }
        }
    }
    if !site_pools.pools.is_empty() {
        files.push((PathBuf::from(fpm::MASTER), fpm::master(opts, &site_pools.pools)));
        for p in &site_pools.pools {
            files.push((PathBuf::from(fpm::DIR).join(format!("{}.conf", p.name)), p.text.clone()));
        }
    }
    // Last of the Lua files: what tells the running hook scripts to reload the rest.
    let id = output_id(&files, &opts.out_dir);
    files.push((lua_dir.join(conf::OUTPUT_FILE), conf::output_file(&id)));
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
        fpm_run: (!site_pools.pools.is_empty()).then(|| fpm::run_dir(opts)),
        pools: site_pools.pools,
        runtime: rt,
    }
}

/// lighten_htaccess.lua: the safety net for .htaccess files written after the conversion
/// (lighten_plans.lua `htaccess_changed`). Which folders Apache reads such files in (the
/// AllowOverride of every `<Directory>` path, each document root and `/`; a folder takes
/// the value of the deepest listed one above it; any host reading there counts, and a
/// wildcard `<Directory>` that sets AllowOverride makes every folder count), and each file
/// the conversion read as it was then: inode, size and modification time. A request whose
/// walk meets a file that changed, went or appeared answers 503 until the next conversion.
fn htaccess_module(model: &Model, cfg: &Config, map_path: &dyn Fn(&str) -> String) -> String {
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;
    let mut reads: BTreeMap<String, bool> = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut any_glob = false;
    let hosts = conf::hosts(model);
    for h in &hosts {
        let vscope = h.map(|i| &model.vhosts[i].scope);
        for n in crate::model::access_names(&model.server, vscope) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let sections = crate::model::htaccess::directory_sections(&model.server, vscope);
        let mut paths: Vec<String> = vec!["/".to_string()];
        for (sec, path) in &sections {
            if path.contains(['*', '?', '[']) {
                any_glob |=
                    sec.settings.allow_override.is_some() || sec.settings.allow_override_list.is_some();
                continue;
            }
            paths.push(path.trim_end_matches('/').to_string());
        }
        let docroot = match *h {
            Some(i) => model.vhosts[i].document_root.clone(),
            None => model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()),
        };
        paths.extend(docroot.map(|d| d.trim_end_matches('/').to_string()));
        for p in paths {
            let p = if p.is_empty() { "/".to_string() } else { p };
            let r = crate::model::htaccess::perms_for(&p, &sections).reads_files() || any_glob;
            let key = map_path(&p);
            let key = if key.len() > 1 { key.trim_end_matches('/').to_string() } else { key };
            *reads.entry(key).or_insert(false) |= r;
        }
    }
    if any_glob {
        reads.values_mut().for_each(|v| *v = true);
    }
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for h in &model.htaccess {
        // As lighttpd will find it: the mapped path (the sandbox's copy for verify),
        // else this machine's copy of the configuration.
        let mapped = map_path(&h.path);
        if let Ok(m) =
            std::fs::metadata(&mapped).or_else(|_| std::fs::metadata(cfg.sysroot.host_path(&h.path)))
        {
            files.insert(mapped, format!("{} {} {}", m.ino(), m.size(), m.mtime()));
        }
    }
    let mut out = String::from(
        "-- Generated by lighten: the .htaccess files this conversion read, as they were, for the\n\
         -- safety net in lighten_plans.lua: a request whose directory walk meets one that has\n\
         -- changed, gone or appeared since (inode, size, modification time) answers 503 until\n\
         -- `lighten convert` is run again. Regenerated by every conversion; do not edit.\n\
         return {\n",
    );
    out.push_str(&format!(
        "  names = {{ {} }},\n",
        names.iter().map(|n| lua::string(n)).collect::<Vec<_>>().join(", ")
    ));
    out.push_str("  -- whether Apache reads them in a folder: the deepest folder listed above it decides\n  reads = {\n");
    for (k, v) in &reads {
        out.push_str(&format!("    [{}] = {v},\n", lua::string(k)));
    }
    out.push_str("  },\n  -- inode, size, modification time\n  files = {\n");
    for (k, v) in &files {
        out.push_str(&format!("    [{}] = \"{v}\",\n", lua::string(k)));
    }
    out.push_str("  },\n}\n");
    out
}

/// Apache's TypesConfig for the Lua side: a module that reads the same file when lighttpd
/// loads it, as Apache reads it at startup (extension to type, lower case, a later line
/// winning), rather than a copy of its 1,500 lines in the output.
fn mime_module(model: &Model, cfg: &Config, map_path: &dyn Fn(&str) -> String) -> String {
    let (path, read) = types_config(model, cfg, map_path);
    mime_text(&path, &read)
}

/// Apache's TypesConfig: the path it names, and the file lighttpd reads for it (the
/// configuration's copy where it has one, else the file of this machine, the one the
/// sandboxed Apache reads too).
fn types_config(model: &Model, cfg: &Config, map_path: &dyn Fn(&str) -> String) -> (String, String) {
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
    // The configuration's copy where it has one (as lighttpd will see it), else the file
    // of this machine (the one the sandboxed Apache reads too).
    let read = if cfg.sysroot.read(&path).is_ok() { map_path(&path) } else { path.clone() };
    (path, read)
}

/// The types of Apache's TypesConfig as this conversion reads them (extension, lower
/// case, to type; a later line winning), for the static lane's `mimetype.assign`; empty
/// when the file cannot be read (the lane then serves nothing).
fn mime_types(
    model: &Model,
    cfg: &Config,
    map_path: &dyn Fn(&str) -> String,
) -> std::collections::BTreeMap<String, String> {
    let (path, read) = types_config(model, cfg, map_path);
    let bytes = cfg.sysroot.read(&path).ok().or_else(|| std::fs::read(&read).ok()).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut types = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(t) = words.next().filter(|t| !t.starts_with('#')) else { continue };
        for e in words {
            types.insert(e.to_ascii_lowercase(), t.to_string());
        }
    }
    types
}

fn mime_text(path: &str, read: &str) -> String {
    format!(
        "-- Generated by lighten: Apache's TypesConfig ({path}), read from {file} when lighttpd\n\
         -- loads this, as Apache reads it at startup (unreadable: the site answers 500).  One\n\
         -- string, \"\\next type\" for each extension of each line in the file's order, built in\n\
         -- pieces; an extension's last entry wins, as a later line does.  Lookups are remembered.\n\
         local find, sub, lower, concat = string.find, string.sub, string.lower, table.concat\n\
         local chunks, buf, n = {{}}, {{}}, 0\n\
         for line in io.lines({file}) do\n\
         \x20 local t, rest = line:match(\"^%s*([^#%s]%S*)%s+(.*)$\")\n\
         \x20 if t then\n\
         \x20   for ext in rest:gmatch(\"%S+\") do\n\
         \x20     n = n + 1\n\
         \x20     buf[n] = \"\\n\" .. lower(ext) .. \" \" .. t\n\
         \x20     if n == 128 then chunks[#chunks + 1], n = concat(buf, \"\", 1, n), 0 end\n\
         \x20   end\n\
         \x20 end\n\
         end\n\
         chunks[#chunks + 1] = concat(buf, \"\", 1, n)\n\
         local index = concat(chunks) .. \"\\n\"\n\
         chunks, buf = nil, nil\n\
         local seen, m = {{}}, 0\n\
         return setmetatable({{}}, {{ __index = function(_, ext)\n\
         \x20 local v = seen[ext]\n\
         \x20 if v == nil then\n\
         \x20   v = false\n\
         \x20   local key = \"\\n\" .. ext .. \" \"\n\
         \x20   local i = not find(ext, \"%s\") and find(index, key, 1, true)\n\
         \x20   if i then\n\
         \x20     local later = find(index, key, i + 1, true)\n\
         \x20     while later do i, later = later, find(index, key, later + 1, true) end\n\
         \x20     v = sub(index, i + #ext + 2, find(index, \"\\n\", i + 1, true) - 1)\n\
         \x20   end\n\
         \x20   if m >= 256 then seen, m = {{}}, 0 end\n\
         \x20   seen[ext], m = v, m + 1\n\
         \x20 end\n\
         \x20 return v or nil\n\
         end }})\n",
        file = lua::string(read),
    )
}

/// The compiled tier's runtime, and what both tiers share: templates with optional parts
/// ([`runtime`]).
pub const CORE: &str = include_str!("../../templates/lua/lighten_core.lua");
pub const PLANS: &str = include_str!("../../templates/lua/lighten_plans.lua");
/// PCRE2 for Apache's patterns, shipped when a module or the interpreter needs it.
pub const RE: &str = include_str!("../../templates/lua/lighten_re.lua");

/// The fixed runtime of the interpreter and the compiled tier (templates/lua/): what only
/// a new lighten changes (lighten_core.lua and lighten_plans.lua also with the parts the
/// conversion's hosts use).
pub const RUNTIME: [&str; 5] =
    ["lighten.lua", "lighten_rewrite.lua", "lighten_core.lua", "lighten_re.lua", "lighten_plans.lua"];

/// Whether `rel` (a path in the output) is one of the fixed runtime's files.
pub fn is_runtime(rel: &std::path::Path) -> bool {
    rel.parent() == Some(std::path::Path::new("lua"))
        && rel.file_name().and_then(|n| n.to_str()).is_some_and(|n| RUNTIME.contains(&n))
}

/// The identity of an output's Lua (lua/lighten_output.lua): a digest of each Lua file's
/// digest ([`lua_digest`]) in the output's order. `lighten watch` keeps the digests and
/// recomputes the identity when it replaces some modules, without reading the others.
pub fn output_id(files: &[(PathBuf, String)], out_dir: &std::path::Path) -> String {
    output_id_of(
        files
            .iter()
            .filter(|(rel, _)| rel.extension().is_some_and(|e| e == "lua"))
            .map(|(rel, text)| lua_digest(rel, text, out_dir)),
    )
}

/// One Lua file's digest: its name and its text, the output folder's path left out (an
/// output moved or checked in a sandbox is the same output).
pub fn lua_digest(rel: &std::path::Path, text: &str, out_dir: &std::path::Path) -> u64 {
    use crate::batch::shard::{FNV1A64_OFFSET, fnv1a64_from};
    let out = out_dir.to_string_lossy();
    let mut h = fnv1a64_from(FNV1A64_OFFSET, rel.to_string_lossy().as_bytes());
    for (i, part) in text.split(out.as_ref()).enumerate() {
        h = fnv1a64_from(h, if i == 0 { b"\0" } else { b"\0OUT" });
        h = fnv1a64_from(h, part.as_bytes());
    }
    h
}

/// The identity from the Lua files' digests, in the output's order.
pub fn output_id_of(digests: impl IntoIterator<Item = u64>) -> String {
    use crate::batch::shard::{FNV1A64_OFFSET, fnv1a64_from};
    let h = digests.into_iter().fold(FNV1A64_OFFSET, |h, d| fnv1a64_from(h, &d.to_le_bytes()));
    format!("{h:016x}")
}

/// `f` over `items` on the machine's cores, in order; a few items stay on this thread.
/// (`lighten batch`'s combined conversion compiles every account's hosts: 2,000 on a
/// server of 1,000 accounts, each on its own.)
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    const ALONE: usize = 32;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len() / ALONE);
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> =
            items.chunks(chunk).map(|part| scope.spawn(|| part.iter().map(&f).collect::<Vec<R>>())).collect();
        parts.into_iter().flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    /// lighten_mime.lua, run by lua5.4 on a TypesConfig with comments, upper case and an
    /// extension given twice, gives each extension the type of the last line naming it, as
    /// Apache's mod_mime does (and `mime_types` does for the lane).
    #[test]
    fn the_mime_module_takes_the_last_line_naming_an_extension() {
        let dir = tempfile::tempdir().unwrap();
        let types = dir.path().join("mime.types");
        let mut text = String::from("# comment: text/x-no no\n\ttext/plain\ttxt TEXT\naudio/AMR amr\n");
        // (more than one piece of 128 entries)
        for i in 0..300 {
            text.push_str(&format!("application/x-e{i} e{i} f{i}\n"));
        }
        text.push_str("audio/amr AMR\n  #indented comment xyz\nimage/png png\nonly-a-type\n");
        std::fs::write(&types, &text).unwrap();
        let module = dir.path().join("lighten_mime.lua");
        let path = types.to_string_lossy().into_owned();
        std::fs::write(&module, super::mime_text(&path, &path)).unwrap();
        let asks = ["txt", "text", "amr", "e0", "f299", "e150", "png", "no", "xyz", "only-a-type", "", "a b"];
        let script = format!(
            "local m = dofile({}) for _, e in ipairs({{{}}}) do print(e .. '=' .. tostring(m[e])) end",
            super::lua::string(&module.to_string_lossy()),
            asks.iter().map(|a| super::lua::string(a)).collect::<Vec<_>>().join(", ")
        );
        let Some(got) = super::lua::run_lua5_4(&script) else { return };
        assert_eq!(
            got,
            [
                "txt=text/plain",
                "text=text/plain",
                "amr=audio/amr",
                "e0=application/x-e0",
                "f299=application/x-e299",
                "e150=application/x-e150",
                "png=image/png",
                "no=nil",
                "xyz=nil",
                "only-a-type=nil",
                "=nil",
                "a b=nil"
            ]
        );
    }
}
