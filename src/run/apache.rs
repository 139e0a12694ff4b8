//! Real Apache 2.4 on a loaded configuration, in a sandbox.
//!
//! The configuration is written out again as one file, as Apache read it: includes
//! inlined, decided `<IfModule>`-style sections resolved, `${VAR}` substituted.  On the
//! way, what ties it to its server is moved into the sandbox: listeners become loopback
//! ports, absolute paths point into the sandbox's copy of the sysroot, logs, pid and
//! runtime files go to the sandbox, PHP handlers point at the sandbox's php-cgi, and
//! directives of modules this machine does not have are left out.  Every such change is
//! recorded as an [`Adjustment`].

use super::php::Php;
use super::process::Child;
use super::sandbox::{Sandbox, free_port, tail, wait_for_port};
use crate::config::{ConditionKind, Config, Item, ItemKind};
use crate::model::mime::Handler;
use crate::model::server::split_host_port;
use crate::source::Span;
use crate::syntax::words::quote_always;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where Debian keeps Apache's modules.
pub const MODULE_DIR: &str = "/usr/lib/apache2/modules";

/// A change made to the configuration so it runs in the sandbox.
#[derive(Clone, Debug)]
pub struct Adjustment {
    pub at: Span,
    pub what: String,
}

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct ApacheOptions {
    /// Prepend the echo script to every PHP request (differential tests).
    pub php_echo: bool,
    /// `LogLevel rewrite:traceN` for debugging.
    pub rewrite_trace: Option<u8>,
}

/// One listener of the original configuration and its sandbox port.
#[derive(Clone, Debug)]
pub struct Listener {
    pub original: u16,
    pub port: u16,
    pub tls: bool,
}

pub struct RunningApache {
    pub listeners: Vec<Listener>,
    pub adjustments: Vec<Adjustment>,
    pub config_path: PathBuf,
    pub error_log: PathBuf,
    /// The sandbox's copy of the sysroot, when the configuration has one.
    pub root: Option<PathBuf>,
    pub php: Option<Php>,
    child: Child,
}

impl RunningApache {
    /// The Apache parent process (its children are its workers).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The sandbox port for an original port (80 -> 40123).
    pub fn port_for(&self, original: u16) -> Option<u16> {
        self.listeners.iter().find(|l| l.original == original).map(|l| l.port)
    }

    /// The first plain-HTTP sandbox port.
    pub fn http_port(&self) -> Option<u16> {
        self.listeners.iter().find(|l| !l.tls).map(|l| l.port)
    }

    pub fn stop(&mut self) {
        self.child.stop(Duration::from_secs(5));
    }
}

/// Maps absolute paths of the configuration into the sandbox's copy of the sysroot.
#[derive(Clone, Debug)]
pub struct PathMap {
    pub root: Option<PathBuf>,
}

impl PathMap {
    /// `p` inside the copy when the copy has it; the host's when only the host has it
    /// (`/usr/lib/apache2/modules/...`, `/etc/mime.types`); inside the copy otherwise.
    pub fn map(&self, p: &str) -> String {
        let Some(root) = &self.root else { return p.to_string() };
        if !p.starts_with('/') {
            return p.to_string();
        }
        let inside = root.join(p.trim_start_matches('/'));
        if !inside.exists() && Path::new(p).exists() {
            p.to_string()
        } else {
            inside.to_string_lossy().into_owned()
        }
    }

    /// An Apache path back from a sandbox path (for PHP's SCRIPT_FILENAME and the like).
    pub fn unmap(&self, p: &str) -> String {
        match &self.root {
            Some(root) => {
                let r = root.to_string_lossy();
                match p.strip_prefix(r.as_ref()) {
                    Some("") => "/".to_string(),
                    Some(rest) if rest.starts_with('/') => rest.to_string(),
                    _ => p.to_string(),
                }
            }
            None => p.to_string(),
        }
    }
}

/// Starts Apache on `config` in `sandbox`.
pub fn start(config: &Config, sandbox: &Sandbox, opts: &ApacheOptions) -> io::Result<RunningApache> {
    let root = match config.sysroot.root() {
        Some(r) => Some(sandbox.copy_sysroot(r)?),
        None => None,
    };
    let paths = PathMap { root: root.clone() };
    if let Some(r) = &root {
        point_htaccess_into_copy(r, &paths)?;
    }
    let needs_php = uses_php(&config.items);
    let php = if needs_php { Some(Php::start(sandbox, opts.php_echo)?) } else { None };
    let mut w = Writer::new(config, sandbox, paths, php.as_ref().map(|p| p.port), opts)?;
    w.php_generic = php.as_ref().is_some_and(|p| p.kind == super::php::PhpKind::Cgi);
    let text = w.write(&config.items);
    let config_path = sandbox.path().join("apache2.conf");
    std::fs::write(&config_path, &text)?;
    let error_log = sandbox.path().join("logs/error.log");
    let mut cmd = Command::new("apache2");
    cmd.arg("-f").arg(&config_path).arg("-DFOREGROUND");
    cmd.env_clear().env("PATH", "/usr/sbin:/usr/bin:/bin").env("LANG", "C");
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    cmd.stderr(Stdio::from(std::fs::File::create(sandbox.path().join("logs/stderr.log"))?));
    let mut child = Child::spawn(cmd, "apache2")?;
    let mut waited = false;
    for l in &w.listeners {
        if !waited {
            // Apache opens its sockets before modules finish starting (mod_ssl may still
            // refuse its keys): give it a moment to exit if it is going to.
            std::thread::sleep(Duration::from_millis(150));
            waited = true;
        }
        if !wait_for_port(l.port, Duration::from_secs(15)) || child.exited().is_some() {
            let status = child.exited();
            child.stop(Duration::from_secs(1));
            return Err(io::Error::other(format!(
                "Apache did not start ({}): {}\n{}",
                status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| format!("nothing listens on port {}", l.port)),
                tail(&sandbox.path().join("logs/stderr.log"), 10),
                tail(&error_log, 15)
            )));
        }
    }
    Ok(RunningApache {
        listeners: w.listeners.clone(),
        adjustments: std::mem::take(&mut w.adjustments),
        config_path,
        error_log,
        root,
        php,
        child,
    })
}

/// Whether any enabled handler hands requests to PHP.
fn uses_php(items: &[Item]) -> bool {
    let mut found = false;
    crate::config::visit_flat(items, &mut |it| {
        if found || !it.enabled {
            return;
        }
        if (it.is("SetHandler") || it.is("AddHandler"))
            && let Some(h) = it.arg(0)
        {
            found |= Handler::parse(h).is_backend();
        }
        if it.is_section() {
            found |= uses_php(it.children());
        }
    });
    found
}

/// Directives the writer drops because the sandbox sets them itself.
const REPLACED: &[&str] = &[
    "listen",
    "pidfile",
    "defaultruntimedir",
    "mutex",
    "scoreboardfile",
    "loadmodule",
    "loadfile",
    "serverroot",
    "user",
    "group",
    "errorlog",
    "loglevel",
    "coredumpdirectory",
    "suexecusergroup",
];

/// Argument positions that name files or folders, per directive.
/// .htaccess files of the copy name password files by their absolute paths: those are
/// pointed into the copy as the server configuration's are.
fn point_htaccess_into_copy(root: &Path, paths: &PathMap) -> io::Result<()> {
    for e in walkdir::WalkDir::new(root).follow_links(false).into_iter().filter_map(Result::ok) {
        if !e.file_type().is_file() || e.file_name() != ".htaccess" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else { continue };
        let mut changed = false;
        let out: Vec<String> = text
            .lines()
            .map(|line| {
                let trimmed = line.trim_start();
                let mut words = trimmed.splitn(2, char::is_whitespace);
                let name = words.next().unwrap_or("").to_ascii_lowercase();
                let rest = words.next().unwrap_or("").trim();
                if matches!(name.as_str(), "authuserfile" | "authgroupfile")
                    && rest.trim_matches('"').starts_with('/')
                {
                    changed = true;
                    let indent = &line[..line.len() - trimmed.len()];
                    format!(
                        "{indent}{} {}",
                        &trimmed[..name.len()],
                        quote_always(&paths.map(rest.trim_matches('"')))
                    )
                } else {
                    line.to_string()
                }
            })
            .collect();
        if changed {
            std::fs::write(e.path(), out.join("\n") + "\n")?;
        }
    }
    Ok(())
}

fn path_args(name: &str, argc: usize) -> &'static [usize] {
    match name {
        "documentroot"
        | "authuserfile"
        | "authgroupfile"
        | "authdbmuserfile"
        | "authdbmgroupfile"
        | "typesconfig"
        | "sslcertificatefile"
        | "sslcertificatekeyfile"
        | "sslcertificatechainfile"
        | "sslcacertificatefile"
        | "ssl"
        | "mimemagicfile"
        | "cachefile"
        | "mmapfile"
        | "scriptsock" => &[0],
        "alias" | "scriptalias" | "aliasmatch" | "scriptaliasmatch" => {
            if argc >= 2 {
                &[1]
            } else {
                &[0]
            }
        }
        _ => &[],
    }
}

struct Writer<'a> {
    config: &'a Config,
    sandbox: PathBuf,
    paths: PathMap,
    php: Option<u16>,
    opts: ApacheOptions,
    /// Original port -> listener.
    ports: BTreeMap<u16, Listener>,
    listeners: Vec<Listener>,
    adjustments: Vec<Adjustment>,
    available: Vec<String>,
    cert: Option<(String, String)>,
    /// php-cgi needs the GENERIC FastCGI backend type; php-fpm the default.
    php_generic: bool,
    out: String,
}

impl<'a> Writer<'a> {
    fn new(
        config: &'a Config,
        sandbox: &Sandbox,
        paths: PathMap,
        php: Option<u16>,
        opts: &ApacheOptions,
    ) -> io::Result<Writer<'a>> {
        let mut w = Writer {
            config,
            sandbox: sandbox.path().to_path_buf(),
            paths,
            php,
            opts: opts.clone(),
            ports: BTreeMap::new(),
            listeners: Vec::new(),
            adjustments: Vec::new(),
            available: available_modules(),
            cert: None,
            php_generic: false,
            out: String::new(),
        };
        w.plan_ports()?;
        Ok(w)
    }

    /// One sandbox port per original port, TLS where the original serves TLS.
    fn plan_ports(&mut self) -> io::Result<()> {
        let mut wanted: BTreeMap<u16, bool> = BTreeMap::new();
        collect_ports(&self.config.items, &mut wanted, false);
        if wanted.is_empty() {
            wanted.insert(80, false);
        }
        for (orig, tls) in wanted {
            let l = Listener { original: orig, port: free_port()?, tls };
            self.ports.insert(orig, l.clone());
            self.listeners.push(l);
        }
        Ok(())
    }

    fn adjust(&mut self, at: Span, what: impl Into<String>) {
        self.adjustments.push(Adjustment { at, what: what.into() });
    }

    fn write(&mut self, items: &[Item]) -> String {
        let sb = self.sandbox.display().to_string();
        let root = {
            let r = self.paths.map(&self.config.server_root);
            if Path::new(&r).is_dir() { r } else { sb.clone() }
        };
        let mut head = String::new();
        head.push_str("# written by lighten for a sandbox run; the original configuration is\n");
        head.push_str(&format!("# {}\n", self.config.input.path));
        head.push_str(&format!("ServerRoot {}\n", quote_always(&root)));
        head.push_str(&format!(
            "DefaultRuntimeDir {sb}/run\nPidFile {sb}/run/apache2.pid\nMutex file:{sb}/run default\n"
        ));
        head.push_str(&format!("ErrorLog {sb}/logs/error.log\n"));
        match self.opts.rewrite_trace {
            Some(n) => head.push_str(&format!("LogLevel warn rewrite:trace{n}\n")),
            None => head.push_str("LogLevel warn\n"),
        }
        // Apache refuses to serve as root; its workers become the Debian web user.
        // SAFETY: geteuid() has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            head.push_str("User www-data\nGroup www-data\n");
        }
        let mut loaded: Vec<String> = Vec::new();
        for m in self.config.modules.loaded() {
            let file =
                Path::new(&m.path).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            if self.available.contains(&file) {
                head.push_str(&format!("LoadModule {} {MODULE_DIR}/{file}\n", m.id));
                loaded.push(m.id.clone());
            } else {
                self.adjustments.push(Adjustment {
                    at: Span::new(crate::source::FileId(0), 0, 0),
                    what: format!(
                        "{} ({}) is not installed here: left out with its directives",
                        m.id, m.path
                    ),
                });
            }
        }
        if !loaded.iter().any(|m| m.starts_with("mpm_")) {
            head.push_str(&format!("LoadModule mpm_event_module {MODULE_DIR}/mod_mpm_event.so\n"));
        }
        for (id, file) in [("proxy_module", "mod_proxy.so"), ("proxy_fcgi_module", "mod_proxy_fcgi.so")] {
            if self.php.is_some() && !loaded.iter().any(|m| m == id) {
                head.push_str(&format!("LoadModule {id} {MODULE_DIR}/{file}\n"));
            }
        }
        if self.listeners.iter().any(|l| l.tls) && !loaded.iter().any(|m| m == "ssl_module") {
            head.push_str(&format!("LoadModule ssl_module {MODULE_DIR}/mod_ssl.so\n"));
            head.push_str(&format!("LoadModule socache_shmcb_module {MODULE_DIR}/mod_socache_shmcb.so\n"));
        }
        for l in self.listeners.clone() {
            head.push_str(&format!("Listen 127.0.0.1:{}{}\n", l.port, if l.tls { " https" } else { "" }));
        }
        if self.php.is_some() && self.php_generic {
            // php-cgi wants a plain SCRIPT_FILENAME (php-fpm takes the default).
            head.push_str("ProxyFCGIBackendType GENERIC\n");
        }
        self.items(items, 0);
        head.push('\n');
        head.push_str(&self.out);
        head
    }

    fn items(&mut self, items: &[Item], depth: usize) {
        for it in items {
            if !it.enabled {
                continue;
            }
            match &it.kind {
                ItemKind::Include { children, .. } => self.items(children, depth),
                ItemKind::Section { children, condition, .. } => {
                    if let Some(c) = condition.as_ref().filter(|c| c.kind != ConditionKind::Expression) {
                        if c.value == Some(true) {
                            self.items(children, depth);
                        }
                        continue;
                    }
                    let args = self.section_args(it);
                    let pad = "    ".repeat(depth);
                    self.out.push_str(&format!(
                        "{pad}<{}{}{}>\n",
                        it.name.value,
                        if args.is_empty() { "" } else { " " },
                        args
                    ));
                    self.items(children, depth + 1);
                    self.out.push_str(&format!("{pad}</{}>\n", it.name.value));
                }
                ItemKind::Directive => self.directive(it, depth),
            }
        }
    }

    fn section_args(&mut self, it: &Item) -> String {
        let name = it.name.value.to_ascii_lowercase();
        match name.as_str() {
            "virtualhost" => {
                let mut addrs: Vec<String> = Vec::new();
                for w in &it.args {
                    let (host, port) = split_host_port(&w.value);
                    let port = port.and_then(|p| p.parse::<u16>().ok());
                    // (0.0.0.0 and :: are wildcards to Apache as `*` is; other addresses
                    // stand on the sandbox's one address)
                    let host = match host.as_deref() {
                        Some("*") | Some("_default_") => host.clone().unwrap_or_default(),
                        Some("0.0.0.0") | Some("::") | Some("[::]") => "*".to_string(),
                        _ => "127.0.0.1".to_string(),
                    };
                    let a = match port.and_then(|p| self.ports.get(&p)) {
                        Some(l) => format!("{host}:{}", l.port),
                        None => host,
                    };
                    if !addrs.contains(&a) {
                        addrs.push(a);
                    }
                }
                self.adjust(it.span, format!("<VirtualHost {}> listens on {}", it.raw.text, addrs.join(" ")));
                addrs.join(" ")
            }
            "directory" if it.arg(0) != Some("~") => match it.arg(0) {
                Some(p) => quote_always(&self.paths.map(p)),
                None => String::new(),
            },
            "directorymatch" | "directory" => {
                // A regex on the filesystem path: anchored absolute patterns get the
                // sandbox prefix, escaped.
                let (tilde, re) = if name == "directory" {
                    ("~ ", it.arg(1).unwrap_or(""))
                } else {
                    ("", it.arg(0).unwrap_or(""))
                };
                match (re.strip_prefix("^/"), &self.paths.root) {
                    (Some(rest), Some(root)) => {
                        format!(
                            "{tilde}{}",
                            quote_always(&format!("^{}/{rest}", escape_regex(&root.to_string_lossy())))
                        )
                    }
                    _ => format!("{tilde}{}", quote_always(re)),
                }
            }
            _ => it.raw.text.clone(),
        }
    }

    fn directive(&mut self, it: &Item, depth: usize) {
        let name = it.name.value.to_ascii_lowercase();
        let pad = "    ".repeat(depth);
        if REPLACED.contains(&name.as_str()) {
            if !matches!(name.as_str(), "loadmodule" | "user" | "group" | "serverroot") {
                self.adjust(
                    it.span,
                    format!("{} {} replaced by the sandbox's own", it.name.value, it.raw.text),
                );
            }
            return;
        }
        if let Some(info) = crate::catalogue::catalogue().get(&it.name.value) {
            let present = info.modules().any(|m| self.module_available(m));
            if !present {
                self.adjust(
                    it.span,
                    format!("{} left out: {} is not installed here", it.name.value, info.module),
                );
                return;
            }
        }
        let line = match name.as_str() {
            "customlog" | "transferlog" => {
                let mut args: Vec<String> = it.args.iter().map(|w| quote_always(&w.value)).collect();
                if !args.is_empty() {
                    args[0] = quote_always(&format!("{}/logs/access.log", self.sandbox.display()));
                }
                format!("{} {}", it.name.value, args.join(" "))
            }
            "sethandler" | "addhandler" => {
                let h = it.arg(0).unwrap_or("");
                match (Handler::parse(h).is_backend(), self.php) {
                    (true, Some(port)) => {
                        let mut args: Vec<String> = it.args.iter().map(|w| quote_always(&w.value)).collect();
                        args[0] = quote_always(&format!("proxy:fcgi://127.0.0.1:{port}"));
                        self.adjust(it.span, format!("PHP handler {h} runs on the sandbox's php-cgi"));
                        format!("{} {}", it.name.value, args.join(" "))
                    }
                    _ => format!("{} {}", it.name.value, it.raw.text),
                }
            }
            "rewritemap" => {
                let mut args: Vec<String> = it.args.iter().map(|w| quote_always(&w.value)).collect();
                if let Some((kind, src)) = it.arg(1).and_then(|s| s.split_once(':'))
                    && (matches!(kind, "txt" | "rnd" | "dbm" | "prg") || kind.starts_with("dbm="))
                {
                    args[1] = quote_always(&format!("{kind}:{}", self.paths.map(src)));
                }
                format!("{} {}", it.name.value, args.join(" "))
            }
            "rewriterule" => self.rewrite_rule(it),
            "sslcertificatefile" | "sslcertificatekeyfile" => {
                let p = it.arg(0).map(|p| self.paths.map(p)).unwrap_or_default();
                if Path::new(&p).exists() {
                    format!("{} {}", it.name.value, quote_always(&p))
                } else {
                    let (cert, key) = self.sandbox_cert();
                    let use_path = if name == "sslcertificatefile" { cert } else { key };
                    self.adjust(
                        it.span,
                        format!(
                            "{} {} does not exist here: a self-signed one stands in",
                            it.name.value, it.raw.text
                        ),
                    );
                    format!("{} {}", it.name.value, quote_always(&use_path))
                }
            }
            _ => {
                let positions = path_args(&name, it.args.len());
                if positions.is_empty() {
                    format!("{} {}", it.name.value, it.raw.text)
                } else {
                    let args: Vec<String> = it
                        .args
                        .iter()
                        .enumerate()
                        .map(|(i, w)| {
                            if positions.contains(&i) {
                                quote_always(&self.paths.map(&w.value))
                            } else {
                                quote_always(&w.value)
                            }
                        })
                        .collect();
                    format!("{} {}", it.name.value, args.join(" "))
                }
            }
        };
        self.out.push_str(&pad);
        self.out.push_str(line.trim_end());
        self.out.push('\n');
    }

    /// A substitution that names a file of the copied tree by its literal start (a
    /// prefix-stat'ed path such as `/var/www/site/index.php`) is pointed into the copy;
    /// URL-paths and what variables produce are left alone.
    fn rewrite_rule(&mut self, it: &Item) -> String {
        let mut args: Vec<String> = it.args.iter().map(|w| quote_always(&w.value)).collect();
        if let (Some(sub), Some(root)) = (it.arg(1), &self.paths.root) {
            let literal = crate::eval::literal_prefix(sub);
            let first = literal.split('/').nth(1).unwrap_or("");
            if literal.starts_with('/')
                && !first.is_empty()
                && literal.len() > first.len() + 1
                && root.join(first).exists()
            {
                let mapped = format!("{}{}", root.to_string_lossy(), literal);
                self.adjust(it.span, format!("RewriteRule target {literal} points into the copy"));
                args[1] = quote_always(&format!("{mapped}{}", &sub[literal.len()..]));
            }
        }
        format!("{} {}", it.name.value, args.join(" "))
    }

    fn module_available(&self, module_file: &str) -> bool {
        if crate::config::Modules::is_built_in(module_file)
            || module_file == "event.c"
            || module_file == "prefork.c"
            || module_file == "worker.c"
        {
            return true;
        }
        let so = match module_file {
            "event.c" => "mod_mpm_event.so".to_string(),
            f => format!("{}.so", f.trim_end_matches(".c")),
        };
        self.available.contains(&so) && self.config.modules.provides(module_file)
    }

    /// A self-signed certificate for TLS vhosts whose certificate is not in the sysroot.
    fn sandbox_cert(&mut self) -> (String, String) {
        if let Some(c) = &self.cert {
            return c.clone();
        }
        let (cert, key) = super::sandbox::self_signed_cert(&self.sandbox);
        // Plesk names only SSLCertificateFile (key included): the stand-in carries both.
        let both = self.sandbox.join("run/sandbox.pem");
        let joined =
            [std::fs::read(&cert).unwrap_or_default(), std::fs::read(&key).unwrap_or_default()].concat();
        let _ = std::fs::write(&both, joined);
        let c = (both.display().to_string(), key.display().to_string());
        self.cert = Some(c.clone());
        c
    }
}

/// Ports used by enabled Listen directives and vhost addresses; TLS when a vhost on the
/// port switches SSLEngine on, or Listen says https, or the port is 443.
fn collect_ports(items: &[Item], out: &mut BTreeMap<u16, bool>, _in_vhost: bool) {
    crate::config::visit_flat(items, &mut |it| {
        if !it.enabled {
            return;
        }
        if it.is("Listen") {
            if let Some(spec) = it.arg(0)
                && let Some(p) = split_host_port(spec).1.and_then(|p| p.parse::<u16>().ok())
            {
                let tls = it.arg(1).is_some_and(|p| p.eq_ignore_ascii_case("https")) || p == 443;
                *out.entry(p).or_default() |= tls;
            }
        } else if it.is("VirtualHost") {
            let tls = vhost_has_tls(it.children());
            for w in &it.args {
                if let Some(p) = split_host_port(&w.value).1.and_then(|p| p.parse::<u16>().ok()) {
                    *out.entry(p).or_default() |= tls;
                }
            }
        }
    });
}

fn vhost_has_tls(items: &[Item]) -> bool {
    let mut tls = false;
    crate::config::visit_flat(items, &mut |it| {
        if it.enabled && it.is("SSLEngine") && it.arg(0).is_some_and(|v| v.eq_ignore_ascii_case("on")) {
            tls = true;
        }
    });
    tls
}

fn available_modules() -> Vec<String> {
    std::fs::read_dir(MODULE_DIR)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
