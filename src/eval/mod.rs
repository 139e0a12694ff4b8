//! What Apache does with a request: the evaluator.
//!
//! Given the model and a request it follows Apache 2.4's request processing as far as
//! mod_rewrite, mod_alias, mod_dir, access control and the handler decide the answer:
//!
//! 1. the URL-path is decoded and normalised (`%2F` is a 404, dot segments go);
//! 2. translate: server-context rewrite rules, then mod_alias, then the DocumentRoot;
//! 3. TRACE is answered here by the core (TraceEnable), before anything per-directory;
//! 4. the directory walk splits off PATH_INFO and gathers the per-directory
//!    configuration (`<Directory>` and .htaccess per level, regexes, `<Files>`,
//!    `<Location>`);
//! 5. access control;
//! 6. fixups, in Apache's hook order: per-directory rewrite rules, mod_alias's
//!    per-directory redirects, mod_dir's trailing-slash redirect; only then does an
//!    internal redirect the rules asked for start a new round (with `REDIRECT_*`
//!    variables); else DirectoryIndex or FallbackResource;
//! 7. the handler: a file, PHP, a listing, or an error.  A local ErrorDocument is one
//!    more round for the document's URL, answered under the error's status.
//!
//! It reads files only through the sysroot and never starts a server; the differential
//! tests hold it against real Apache.

pub mod access;
mod cond;
pub mod dirconf;
pub mod expand;
pub mod fs;
mod outcome;
pub mod render;
pub mod request;
pub mod rewrite;
pub mod symlink;

pub use expand::literal_prefix;
pub use outcome::{Evaluation, Outcome, Served, Step};
pub use request::Request;

use crate::model::mime::Handler;
use crate::model::rewrite::{CondKind, RewriteRule};
use crate::model::{Model, Scope};
use crate::source::Sysroot;
use dirconf::DirConfig;
use expand::Lookup;
use rewrite::{Action, RewriteEnv, State};
use std::collections::BTreeMap;

/// Apache's limit: "Request exceeded the limit of 10 internal redirects".
const MAX_REDIRECTS: usize = 10;

/// Evaluates `req` arriving on `port` (the configuration's port, 80 or 443 unless said).
pub fn evaluate(model: &Model, fs: &Sysroot, req: &Request, port: u16) -> Evaluation {
    let mut e = Engine::new(model, fs, req, port);
    let outcome = e.run();
    Evaluation { outcome, trace: e.trace, rounds: e.rounds }
}

struct Engine<'m> {
    model: &'m Model,
    fs: &'m Sysroot,
    req: &'m Request,
    /// The method the current round sees: an ErrorDocument round turns POST into GET.
    method: String,
    vhost: Option<usize>,
    port: u16,
    https: bool,
    trace: Vec<Step>,
    rounds: usize,
    // The round in progress, for variable lookups.
    uri: String,
    args: Option<String>,
    filename: String,
    path_info: Option<String>,
    env: BTreeMap<String, String>,
    unknown: Option<String>,
    /// `[T=...]` from a rule.
    forced_type: Option<String>,
    /// ErrorDocuments in force where the last round ended.
    last_dc: Option<BTreeMap<u16, crate::model::dir::ErrorAction>>,
    /// In mod_dir's DirectoryIndex sub-request.
    subreq: bool,
    /// In a DirectoryIndex sub-request that merges the folder's own configuration, the
    /// index file: Apache does not check access there again while the sub-request maps to
    /// it (an Alias or a rewrite that takes it elsewhere merges another configuration).
    skip_access: Option<String>,
    /// The folder the request's last walk ended in and what its regex `<Directory>`
    /// sections were matched against: Apache's walk cache, which an internal redirect and
    /// a sub-request to the same folder reuse (fixtures/regress/setenvif-after-internal-redirect).
    walked: Option<(String, String)>,
    /// The URL an internal redirect leaves, when it is not the round's (a DirectoryIndex
    /// sub-request's rewrite redirects from the index file's URL).
    redirect_url: Option<String>,
    /// The round's file came from a ScriptAlias: its handler is cgi-script.
    script_alias: bool,
}

enum RoundEnd {
    Done(Outcome),
    Internal { uri: String, args: Option<String> },
}

fn done(status: u16, served: Served) -> RoundEnd {
    RoundEnd::Done(Outcome { status, location: None, served, content_type: None, env: BTreeMap::new() })
}

fn redirect(status: u16, location: String) -> RoundEnd {
    RoundEnd::Done(Outcome {
        status,
        location: Some(location),
        served: Served::Redirect,
        content_type: None,
        env: BTreeMap::new(),
    })
}

impl<'m> Engine<'m> {
    fn new(model: &'m Model, fs: &'m Sysroot, req: &'m Request, port: u16) -> Engine<'m> {
        Engine {
            model,
            fs,
            req,
            method: req.method.clone(),
            vhost: None,
            port,
            https: req.scheme == "https",
            trace: Vec::new(),
            rounds: 0,
            uri: String::new(),
            args: None,
            filename: String::new(),
            path_info: None,
            env: BTreeMap::new(),
            unknown: None,
            forced_type: None,
            last_dc: None,
            subreq: false,
            skip_access: None,
            walked: None,
            redirect_url: None,
            script_alias: false,
        }
    }

    /// The directory walk meets a name the filesystem refuses (ENAMETOOLONG): Apache 403.
    fn name_too_long(&mut self, filename: &str) -> bool {
        let long = fs::name_too_long(self.fs, filename);
        if long {
            self.note(
                None,
                format!("a name in {filename} is too long for the filesystem (ENAMETOOLONG): 403"),
            );
        }
        long
    }

    /// The directory walk meets a symbolic link Apache does not follow here: 403 (from
    /// map_to_storage, so only the server's ErrorDocuments apply).
    fn refused_link(&mut self, filename: &str) -> bool {
        let (model, vhost) = (self.model, self.vhost);
        let refused =
            symlink::first_refused(self.fs, filename, &mut |dir| dirconf::walk_options(model, vhost, dir));
        if let Some((link, why)) = &refused {
            self.note(None, format!("the symbolic link {link} is not followed ({}): 403", why.describe()));
        }
        refused.is_some()
    }

    fn note(&mut self, at: Option<crate::source::Span>, text: impl Into<String>) {
        self.trace.push(Step { at, depth: 0, text: text.into() });
    }

    fn run(&mut self) -> Outcome {
        self.vhost = self.select_vhost();
        // A Host Apache does not take as a host name is its 400 ("Client sent malformed
        // Host header"), before anything looks at the request.
        if let Some(h) = self.req.host.as_deref().filter(|h| !request::apache_host_ok(h)) {
            self.note(None, format!("the Host {h:?} is malformed: 400"));
            return self.finish(400, Served::Error, None);
        }
        // A fragment is not part of a request-target (RFC 9112): Apache answers 400
        // ("URI must not contain a fragment") before anything else looks at the request.
        if self.req.path.contains('#') || self.req.query.as_deref().is_some_and(|q| q.contains('#')) {
            self.note(None, "the request-target has a fragment ('#'): 400");
            return self.finish(400, Served::Error, None);
        }
        let (uri, args) = match decode_path(&self.req.path) {
            Ok(u) => (u, self.req.query.clone()),
            Err(status) => {
                self.note(None, format!("the URL-path cannot be decoded: {status}"));
                return self.finish(status, Served::Error, None);
            }
        };
        // MergeSlashes Off: Apache's sections and rules would see the `//` this
        // translation merges (translate::site, code merge-slashes-off): refused. Leading
        // ones too: Apache merges those in an origin-form target, not in an absolute-form
        // one (`GET http://host//a`), and lighttpd does not tell the runtime which it got.
        if self.req.path.contains("//") && self.model.keeps_slashes(self.vhost) {
            self.note(None, "MergeSlashes Off and the URL-path has '//': refused (403)");
            return self.finish(403, Served::Error, None);
        }
        self.initial_env();
        let (mut uri, mut args) = (uri, args);
        // Set while serving a local ErrorDocument: the error's status and the document.
        let mut error_round: Option<u16> = None;
        loop {
            self.rounds += 1;
            if self.rounds > MAX_REDIRECTS + 1 {
                self.note(None, "more than 10 internal redirects: 500");
                return self.finish(500, Served::Error, None);
            }
            self.note(
                None,
                format!(
                    "round {}: {}{}",
                    self.rounds,
                    uri,
                    args.as_ref().map(|a| format!("?{a}")).unwrap_or_default()
                ),
            );
            match self.round(&uri, args.clone()) {
                RoundEnd::Done(mut o) => {
                    if let Some(u) = self.unknown.take() {
                        o.served = Served::Unknown { reason: u };
                    }
                    if let Some(status) = error_round {
                        // The document's own answer, under the error's status; an error
                        // while serving it leaves Apache's page ("Additionally, ...").
                        if o.status >= 400 {
                            self.note(None, format!("the ErrorDocument itself failed with {}", o.status));
                            o.served = Served::Error;
                            o.status = status;
                        } else if o.status == 200 {
                            o.status = status;
                        }
                        o.env = self.env.clone();
                        return o;
                    }
                    if o.served == (Served::Error) && o.status >= 400 {
                        match self.error_document(o) {
                            Ok(o) => return o,
                            Err((status, doc)) => {
                                self.note(
                                    None,
                                    format!("ErrorDocument {status}: internal redirect to {doc}"),
                                );
                                let mut env: BTreeMap<String, String> = self
                                    .env
                                    .iter()
                                    .map(|(k, v)| (format!("REDIRECT_{k}"), v.clone()))
                                    .collect();
                                env.insert("REDIRECT_URL".into(), uri.clone());
                                env.insert("REDIRECT_STATUS".into(), status.to_string());
                                if let Some(q) = &args {
                                    env.insert("REDIRECT_QUERY_STRING".into(), q.clone());
                                }
                                self.env = env;
                                if self.method != "GET" && self.method != "HEAD" {
                                    self.method = "GET".into();
                                }
                                let (u, a) = match doc.split_once('?') {
                                    Some((u, a)) => (u.to_string(), Some(a.to_string())),
                                    None => (doc, None),
                                };
                                self.server_env(&u);
                                match decode_path(&u) {
                                    Ok(d) => uri = d,
                                    Err(_) => {
                                        return self.finish(status, Served::Error, None);
                                    }
                                }
                                args = a;
                                error_round = Some(status);
                                continue;
                            }
                        }
                    }
                    o.env = self.env.clone();
                    return o;
                }
                RoundEnd::Internal { uri: u, args: a } => {
                    // [T=] lives in the request's notes, which the new request does not
                    // inherit (a per-directory rule's type is lost with its redirect).
                    self.forced_type = None;
                    // The new request sees the old one's environment as REDIRECT_*.
                    let mut env: BTreeMap<String, String> =
                        self.env.iter().map(|(k, v)| (format!("REDIRECT_{k}"), v.clone())).collect();
                    env.insert(
                        "REDIRECT_URL".into(),
                        self.redirect_url.take().unwrap_or_else(|| uri.clone()),
                    );
                    env.insert("REDIRECT_STATUS".into(), "200".into());
                    if let Some(q) = &args {
                        env.insert("REDIRECT_QUERY_STRING".into(), q.clone());
                    }
                    self.env = env;
                    self.server_env(&u);
                    self.note(
                        None,
                        format!(
                            "internal redirect to {u}{}",
                            a.as_ref().map(|q| format!("?{q}")).unwrap_or_default()
                        ),
                    );
                    match decode_path(&u) {
                        Ok(d) => uri = d,
                        Err(status) => return self.finish(status, Served::Error, None),
                    }
                    args = a;
                }
            }
        }
    }

    fn finish(&mut self, status: u16, served: Served, location: Option<String>) -> Outcome {
        Outcome { status, location, served, content_type: None, env: self.env.clone() }
    }

    /// ErrorDocument for an error status: a remote URL (302), text, or a local page,
    /// which is `Err((status, path))`: the caller serves it in another round.
    fn error_document(&mut self, o: Outcome) -> Result<Outcome, (u16, String)> {
        let doc = self.error_doc_for(o.status);
        match doc {
            Some(crate::model::dir::ErrorAction::Remote(url)) => {
                self.note(None, format!("ErrorDocument {}: redirect to {url}", o.status));
                Ok(Outcome {
                    status: 302,
                    location: Some(url),
                    served: Served::Redirect,
                    content_type: None,
                    env: self.env.clone(),
                })
            }
            Some(crate::model::dir::ErrorAction::Local(path)) => Err((o.status, path)),
            _ => Ok(Outcome { env: self.env.clone(), ..o }),
        }
    }

    fn error_doc_for(&self, status: u16) -> Option<crate::model::dir::ErrorAction> {
        // The per-directory value wins; the vhost's and server's stand behind it.
        let dc = self.last_dc.as_ref()?;
        dc.get(&status).cloned()
    }

    /// The server's and the host's own SetEnvIf rules, before anything else (mod_setenvif's
    /// post_read_request: the URL-path as sent).
    fn initial_env(&mut self) {
        self.env = BTreeMap::new();
        let raw = self.req.path.clone();
        self.server_env(&raw);
    }

    /// mod_setenvif's post_read_request: the server's and the host's own rules on `path`
    /// (as sent, its leading slashes merged: Apache parses `//s/x` as `/s/x`). It runs
    /// again for each internal redirect, on its URL (lighten_plans.merge_leading_slashes).
    fn server_env(&mut self, path: &str) {
        let path = match path.trim_start_matches('/') {
            rest if path.starts_with("//") => format!("/{rest}"),
            _ => path.to_string(),
        };
        for s in self.server_scopes() {
            for rule in &s.settings.env {
                self.apply_setenvif(rule, &path);
            }
        }
    }

    /// One SetEnvIf-family rule (mod_setenvif's match_headers) on the request's variables:
    /// the special names, else the header of that name, else an earlier variable of that
    /// name (the empty string when neither is there); an attribute that is no plain header
    /// name matches header names as a regex (the last header it matches). `uri` is the
    /// URL-path the phase sees: as sent for the server's and the host's own rules (they run
    /// before the URL is decoded), decoded for a folder's. SetEnvIfExpr's expression
    /// decides alone.
    fn apply_setenvif(&mut self, rule: &crate::model::env::EnvRule, uri: &str) {
        let d = rule.directive.to_ascii_lowercase();
        if d == "setenv" || d == "unsetenv" || d == "passenv" {
            return;
        }
        let mut groups: Vec<String> = Vec::new();
        if d == "setenvifexpr" {
            let Some(text) = &rule.test else { return };
            match self.decide_expr(text) {
                Ok(true) => {}
                Ok(false) => return,
                Err(why) => {
                    self.unknown.get_or_insert(format!("SetEnvIfExpr \"{text}\": {why}"));
                    return;
                }
            }
        } else {
            let (Some(attr), Some(test)) = (&rule.attribute, &rule.test) else { return };
            let value = match attr.to_ascii_lowercase().as_str() {
                "request_uri" => uri.to_string(),
                "request_method" => self.req.method.clone(),
                "remote_addr" | "remote_host" => self.req.remote.to_string(),
                "server_addr" => "127.0.0.1".to_string(),
                "request_protocol" => self.req.protocol().to_string(),
                _ if crate::model::env::is_header_regex(attr) => {
                    // as written (unanchored), in any case only for SetEnvIfNoCase
                    let names = pcre2::bytes::RegexBuilder::new().caseless(rule.nocase).build(attr).ok();
                    let mut found = String::new();
                    if let Some(re) = names {
                        if re.is_match(b"Host").unwrap_or(false) {
                            found = self.req.host.clone().unwrap_or_default();
                        }
                        for (k, v) in &self.req.headers {
                            if re.is_match(k.as_bytes()).unwrap_or(false) {
                                found = v.clone();
                            }
                        }
                    }
                    found
                }
                h => match self.req.header(h) {
                    Some(v) => v.to_string(),
                    None => access::env_get(&self.env, h).cloned().unwrap_or_default(),
                },
            };
            let Some(re) =
                pcre2::bytes::RegexBuilder::new().caseless(rule.nocase).dotall(true).build(test).ok()
            else {
                return;
            };
            let Some(caps) = re.captures(value.as_bytes()).ok().flatten() else { return };
            groups = (0..10)
                .map(|n| {
                    caps.get(n)
                        .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
                        .unwrap_or_default()
                })
                .collect();
        }
        for a in &rule.assignments {
            if let Some(name) = a.strip_prefix('!') {
                access::env_set(&mut self.env, name, None);
            } else {
                // `$0`..`$9` in the value are the match's groups.
                let (n, v) = a.split_once('=').unwrap_or((a.as_str(), "1"));
                let mut out = String::new();
                let mut chars = v.chars().peekable();
                while let Some(c) = chars.next() {
                    match (c, chars.peek().and_then(|d| d.to_digit(10))) {
                        ('$', Some(d)) => {
                            chars.next();
                            out.push_str(groups.get(d as usize).map(String::as_str).unwrap_or(""));
                        }
                        _ => out.push(c),
                    }
                }
                access::env_set(&mut self.env, n, Some(&out));
            }
        }
    }

    fn server_scopes(&self) -> Vec<&'m Scope> {
        let mut v = vec![&self.model.server];
        if let Some(i) = self.vhost {
            v.push(&self.model.vhosts[i].scope);
        }
        v
    }

    /// The vhost Apache picks: among those listening on the port (IP-specific ones first),
    /// the first whose ServerName or ServerAlias matches the Host, else the first listed.
    fn select_vhost(&mut self) -> Option<usize> {
        let host = self.host_name();
        let on_port: Vec<usize> = self
            .model
            .vhosts
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                v.scope.enabled && v.addresses.iter().any(|a| a.port.is_none_or(|p| p == self.port))
            })
            .map(|(i, _)| i)
            .collect();
        let specific: Vec<usize> = on_port
            .iter()
            .copied()
            .filter(|&i| {
                self.model.vhosts[i].addresses.iter().any(|a| {
                    a.port.is_none_or(|p| p == self.port) && !crate::model::vhost::is_wildcard_host(&a.host)
                })
            })
            .collect();
        let group = if specific.is_empty() { on_port } else { specific };
        let found = group.iter().copied().find(|&i| {
            let v = &self.model.vhosts[i];
            v.server_name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(&host))
                || v.aliases.iter().any(|a| crate::model::vhost::name_matches(a, &host))
        });
        let pick = found.or(group.first().copied());
        match pick {
            Some(i) => {
                let v = &self.model.vhosts[i];
                self.note(
                    Some(v.scope.at),
                    format!(
                        "virtual host {} ({})",
                        v.server_name.as_deref().unwrap_or("(no name)"),
                        if found.is_some() { "name matches" } else { "default for the address" }
                    ),
                );
            }
            None => self.note(None, "main server (no virtual host on this port)"),
        }
        pick
    }

    /// Apache's r->hostname: the Host without its port and one trailing dot, lowercased
    /// (empty when absent).
    fn host_name(&self) -> String {
        match &self.req.host {
            Some(h) => {
                let mut name =
                    crate::model::server::split_host_port(h).0.unwrap_or_default().to_ascii_lowercase();
                if name.ends_with('.') {
                    name.pop();
                }
                name
            }
            None => String::new(),
        }
    }

    fn server_name(&self) -> String {
        let canonical = self
            .vhost
            .map(|i| self.model.vhosts[i].use_canonical_name.eq_ignore_ascii_case("on"))
            .unwrap_or(false);
        let configured = match self.vhost {
            Some(i) => self.model.vhosts[i].server_name.clone(),
            None => self.model.server.settings.host().server_name.as_ref().map(|s| s.value.clone()),
        };
        let host = self.host_name();
        if canonical || host.is_empty() { configured.unwrap_or_else(|| "localhost".into()) } else { host }
    }

    /// The port self-referential URLs carry: the Host's, else the default for the scheme.
    fn server_port(&self) -> u16 {
        let from_host = self
            .req
            .host
            .as_deref()
            .and_then(|h| crate::model::server::split_host_port(h).1.and_then(|p| p.parse().ok()));
        from_host.unwrap_or(if self.https { 443 } else { 80 })
    }

    fn self_url_prefix(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        let port = self.server_port();
        let default = if self.https { 443 } else { 80 };
        if port == default {
            format!("{scheme}://{}", self.server_name())
        } else {
            format!("{scheme}://{}:{port}", self.server_name())
        }
    }

    /// mod_rewrite refuses a rewritten query with a space or control character
    /// (AH10410/AH10411), except in a redirect it escapes itself.
    fn unsafe_query(&mut self, target: &str, args: &Option<String>, action: Action) -> Option<RoundEnd> {
        let bad = args.as_deref().is_some_and(|a| a.bytes().any(|b| b <= b' ' || b == 0x7f));
        let escaped_redirect = !target.starts_with("proxy:")
            && rewrite::is_absolute_uri(target)
            && action != Action::ChangedNoEscape;
        if bad && !escaped_redirect {
            self.note(None, "the rewritten query string contains control characters or spaces: 403");
            return Some(done(403, Served::Error));
        }
        None
    }

    /// `TraceEnable` for the selected host: the vhost's, else the main server's, else on.
    fn trace_enable(&self) -> (&'m str, Option<crate::source::Span>) {
        let main = self.model.server.settings.host().trace_enable.as_ref();
        let v = self.vhost.and_then(|i| self.model.vhosts[i].scope.settings.host().trace_enable.as_ref());
        match v.or(main) {
            Some(t) => (t.value.as_str(), Some(t.span)),
            None => ("on", None),
        }
    }

    fn docroot(&self) -> String {
        match self.vhost {
            Some(i) => self.model.vhosts[i].document_root.clone(),
            None => self.model.server.settings.host().document_root.as_ref().map(|d| d.value.clone()),
        }
        .unwrap_or_else(|| "/var/www/html".into())
        .trim_end_matches('/')
        .to_string()
    }
}

impl<'m> Engine<'m> {
    /// One pass of request processing for `uri` (decoded) and `args`.
    fn round(&mut self, uri: &str, args: Option<String>) -> RoundEnd {
        self.uri = uri.to_string();
        self.args = args;
        self.path_info = None;
        self.filename = uri.to_string();
        self.last_dc = Some(self.server_error_docs());

        // --- translate: server-context rewrite, mod_alias, DocumentRoot
        let oargs = self.args.clone();
        let mut filename: Option<String> = None;
        let rules = self.server_rules();
        if !rules.is_empty() {
            let mut st = State::new(uri.to_string(), None, self.args.clone());
            let mut trace = std::mem::take(&mut self.trace);
            let (action, flags) = rewrite::apply_list(&rules, None, &mut st, self, &mut trace);
            self.trace = trace;
            match action {
                Action::Status => return done(st.status, Served::Error),
                Action::None => {}
                Action::Changed | Action::ChangedNoEscape => {
                    self.args = st.args.clone();
                    let f = st.filename.clone();
                    if let Some(end) = self.unsafe_query(&f, &st.args, action) {
                        return end;
                    }
                    if let Some(url) = f.strip_prefix("proxy:") {
                        if !self.model.modules.iter().any(|m| m.id == "proxy_module") {
                            self.note(None, "[P] without mod_proxy: mod_rewrite refuses the request (403)");
                            return done(403, Served::Error);
                        }
                        return done(200, Served::Proxy { url: url.to_string() });
                    }
                    if rewrite::is_absolute_uri(&f) {
                        // An unchanged query is copied, a new one escaped unless [NE].
                        let loc = with_query(
                            &escape_location(&f, action == Action::ChangedNoEscape),
                            &self.args,
                            action == Action::ChangedNoEscape || (oargs.is_some() && self.args == oargs),
                        );
                        return redirect(
                            flags.redirect.filter(|c| (300..400).contains(c)).unwrap_or(302),
                            loc,
                        );
                    }
                    if flags.passthrough {
                        self.uri = f;
                    } else {
                        if !f.starts_with('/') {
                            return done(400, Served::Error);
                        }
                        // prefix_stat(): a result whose first segment exists on disk is a
                        // path, else a URL-path under the DocumentRoot.  Since 2.4.60 the
                        // segment must come from the substitution's literal text (or the
                        // rule says [UnsafePrefixStat]); a result under the DocumentRoot
                        // is reduced to a URL-path and lands on the same file.
                        let root = self.docroot();
                        let first = f.split('/').nth(1).unwrap_or("");
                        let statpath = format!("/{first}");
                        let under_root = f.strip_prefix(&root).is_some_and(|r| r.starts_with('/'));
                        let is_fs = under_root
                            || (!first.is_empty()
                                && fs::stat(self.fs, &statpath).kind != fs::Kind::Missing
                                && (st.unsafe_prefix_stat || st.literal_prefix.starts_with(&statpath)));
                        let path = if is_fs { f.clone() } else { format!("{root}{f}") };
                        self.note(None, format!("server-context result {f} maps to {path}"));
                        filename = Some(path);
                        if let Some(t) = st.forced_type.clone() {
                            self.forced_type = Some(t);
                        }
                    }
                }
            }
        }
        self.script_alias = false;
        if filename.is_none() {
            match self.alias_translate() {
                Some(Translated::Redirect(status, loc)) => {
                    return if (300..400).contains(&status) {
                        redirect(status, loc)
                    } else {
                        done(status, Served::Error)
                    };
                }
                Some(Translated::File(f)) => filename = Some(f),
                None => {}
            }
        }
        let filename = filename.unwrap_or_else(|| format!("{}{}", self.docroot(), self.uri));

        // --- TRACE: http_core answers it in map_to_storage, before the directory walk,
        // so neither .htaccess nor access control sees it.
        if self.method == "TRACE" {
            return match self.trace_enable() {
                ("off", at) => {
                    self.note(at, "TraceEnable off: 405");
                    done(405, Served::Error)
                }
                (_, at) => {
                    self.note(at, "TraceEnable on: the core echoes the request");
                    done(200, Served::Trace)
                }
            };
        }

        // --- map to storage: directory walk and per-directory configuration
        if self.name_too_long(&filename) {
            return done(403, Served::Error);
        }
        let (fname, path_info, kind) = fs::walk(self.fs, &filename);
        self.filename = fname.clone();
        self.path_info = path_info.clone();
        if self.refused_link(&fname) {
            return done(403, Served::Error);
        }
        let mut trace = std::mem::take(&mut self.trace);
        let dc = self.dir_config(&fname, kind == fs::Kind::Dir, &self.uri.clone(), &mut trace);
        self.remember_walk(&fname, kind == fs::Kind::Dir);
        self.trace = trace;
        self.last_dc = Some(self.merged_error_docs(&dc));
        if let Some(end) = self.folder_checks(&dc) {
            return end;
        }

        // --- fixups: per-directory rewrite.  An internal redirect it asks for happens
        // after the other fixups, which still see the original request: mod_alias's
        // per-directory redirects and mod_dir's trailing-slash redirect win over it.
        let mut pending: Option<(String, Option<String>)> = None;
        // mod_rewrite declines a folder's rules for the folder itself asked for without
        // its trailing slash ("called before really entering the directory"), leaving it
        // to mod_dir, unless RewriteOptions AllowNoSlash.
        let mut rules = dc.rewrite.clone().filter(|r| r.engine && !r.rules.is_empty());
        if let Some(rw) = rules.take_if(|rw| {
            !rw.allow_no_slash && rw.directory.ends_with('/') && fname == rw.directory.trim_end_matches('/')
        }) {
            let text = format!(
                "mod_rewrite: the rules of {} are not run for the folder itself without its slash",
                rw.directory
            );
            self.note(None, text);
        }
        if let Some(rw) = rules {
            if dc.options & (dirconf::opt::SYM_LINKS | dirconf::opt::SYM_OWNER) == 0 {
                self.note(
                    None,
                    "per-directory rewrite needs Options FollowSymLinks or SymLinksIfOwnerMatch: 403",
                );
                return done(403, Served::Error);
            }
            let mut st = State::new(fname.clone(), path_info.clone(), self.args.clone());
            let ofilename = st.filename.clone();
            let mut trace = std::mem::take(&mut self.trace);
            let (action, flags) =
                rewrite::apply_list(&rw.rules, Some(&rw.directory), &mut st, self, &mut trace);
            self.trace = trace;
            if let Some(t) = st.forced_type.clone() {
                self.forced_type = Some(t);
            }
            match action {
                Action::Status => return done(st.status, Served::Error),
                Action::None => {}
                Action::Changed | Action::ChangedNoEscape => {
                    let mut f = st.filename.clone();
                    if let Some(end) = self.unsafe_query(&f, &st.args, action) {
                        return end;
                    }
                    if let Some(url) = f.strip_prefix("proxy:") {
                        if !self.model.modules.iter().any(|m| m.id == "proxy_module") {
                            self.note(None, "[P] without mod_proxy: mod_rewrite refuses the request (403)");
                            return done(403, Served::Error);
                        }
                        return done(200, Served::Proxy { url: url.to_string() });
                    }
                    if rewrite::is_absolute_uri(&f) {
                        if let Some(base) = rw.base {
                            f = replace_base_in_url(&f, &rw.directory, base);
                        }
                        let loc = with_query(
                            &escape_location(&f, action == Action::ChangedNoEscape),
                            &st.args,
                            action == Action::ChangedNoEscape
                                || (self.args.is_some() && st.args == self.args),
                        );
                        return redirect(
                            flags.redirect.filter(|c| (300..400).contains(c)).unwrap_or(302),
                            loc,
                        );
                    }
                    if !f.starts_with('/') {
                        return done(400, Served::Error);
                    }
                    if f == ofilename {
                        // Apache skips the internal redirect, but a changed query stays.
                        self.args = st.args.clone();
                        self.note(None, "the rewritten URL equals the initial one: no internal redirect");
                    } else {
                        // Back from a filesystem path to a URL: RewriteBase replaces the
                        // directory prefix, else the DocumentRoot is stripped.
                        let url = match rw.base {
                            Some(base) if f.starts_with(&rw.directory) => {
                                format!(
                                    "{}{}",
                                    base.trim_end_matches('/').to_string() + "/",
                                    &f[rw.directory.len()..]
                                )
                            }
                            Some(_) => f.clone(),
                            None => {
                                let root = self.docroot();
                                match f.strip_prefix(&root) {
                                    Some(rest) if rest.starts_with('/') || rest.is_empty() => {
                                        rest.to_string()
                                    }
                                    _ => f.clone(),
                                }
                            }
                        };
                        if flags.end {
                            self.note(None, "[END]: no further rewrite rounds");
                            return self.serve_after_end(&url, st.args.clone());
                        }
                        let target = match &st.args {
                            Some(a) => format!("{url}?{a}"),
                            None => url,
                        };
                        let (u, a) = match target.split_once('?') {
                            Some((u, a)) => (u.to_string(), Some(a.to_string())),
                            None => (target, None),
                        };
                        pending = Some((reencode(&u), a));
                    }
                }
            }
        }

        // --- per-directory Redirect (mod_alias fixup)
        for r in dc.redirects.clone() {
            if let Some((status, loc)) = self.try_redirect(r) {
                return if (300..400).contains(&status) {
                    redirect(status, loc)
                } else {
                    done(status, Served::Error)
                };
            }
        }

        // --- mod_dir: the trailing-slash redirect comes before it steps aside for a
        // pending rewrite (mod_dir.c fixup_dir).
        if kind == fs::Kind::Dir && path_info.is_none() && !self.uri.ends_with('/') && dc.directory_slash {
            let loc = with_query(
                &format!("{}{}/", self.self_url_prefix(), escape_path(&self.uri)),
                &self.args,
                true,
            );
            self.note(None, "mod_dir: directory without trailing slash");
            return redirect(301, loc);
        }
        if let Some((uri, args)) = pending {
            return RoundEnd::Internal { uri, args };
        }
        if kind == fs::Kind::Dir && !self.subreq {
            let names: Vec<String> =
                dc.index.map(|i| i.to_vec()).unwrap_or_else(|| vec!["index.html".into()]);
            if !names.iter().any(|n| n.eq_ignore_ascii_case("disabled"))
                && let Some(end) = self.directory_index(&names, &fname)
            {
                return end;
            }
        } else if kind == fs::Kind::Missing
            && let Some(fb) = dc.fallback
            && !fb.eq_ignore_ascii_case("disabled")
        {
            self.note(None, format!("FallbackResource {fb}"));
            return RoundEnd::Internal { uri: fb.to_string(), args: self.args.clone() };
        }
        self.handle(&dc, &fname, path_info, kind)
    }

    /// Whether a DirectoryIndex name's sub-request merges the folder's own configuration:
    /// the same sections (directories, .htaccess files, `<Files>`, `<Location>`, `<If>`
    /// branches) apply to the index file as to the folder.  Apache's walks then hand the
    /// sub-request the main request's merged configuration, and its access check is
    /// skipped (ap_process_request_internal: `r->main->per_dir_config ==
    /// r->per_dir_config`); otherwise it runs again, as GET.
    fn same_config_as_folder(&mut self, folder: &str, dir_uri: &str, file: &str, cand_uri: &str) -> bool {
        // (regex <Directory> sections left out: Apache's directory walk for the same folder
        // is its cache's, matched against the folder's filename, not the index file's)
        fn applied(trace: &[Step]) -> Vec<Option<crate::source::Span>> {
            trace
                .iter()
                .filter(|s| s.text.starts_with("applies ") || s.text.ends_with(" applies"))
                .filter(|s| {
                    !s.text.starts_with("applies <DirectoryMatch")
                        && !s.text.starts_with("applies <Directory ~")
                })
                .map(|s| s.at)
                .collect()
        }
        // (an <If> on the way may read the URI, the file or the method, which differ in
        // the sub-request: not taken as the same)
        fn met_if(trace: &[Step]) -> bool {
            trace.iter().any(|s| s.text.starts_with("<If") || s.text.starts_with("<Else"))
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let folder_dc = self.dir_config(folder, true, dir_uri, &mut a);
        let file_dc = self.dir_config(file, false, cand_uri, &mut b);
        folder_dc.unknown.is_none()
            && file_dc.unknown.is_none()
            && !met_if(&a)
            && !met_if(&b)
            && applied(&a) == applied(&b)
    }

    /// mod_dir's DirectoryIndex (fixup_dir): each name is looked up as a sub-request, a
    /// whole round up to the handler (server and per-directory rules without their [NS]
    /// and [R] ones, access control).  The first that comes out 200 on a regular file is
    /// the answer; a rewrite there is the main request's internal redirect.  A redirect
    /// is passed on, as a 401 is when there is one name; any other error is remembered
    /// and answered if no name serves: never a listing instead of a refused index file.
    fn directory_index(&mut self, names: &[String], fname: &str) -> Option<RoundEnd> {
        let mut error_notfound = None;
        let args = self.args.clone();
        let dir_uri = self.uri.clone();
        for name in names {
            let (cand_uri, cand_file) = if name.starts_with('/') {
                (name.clone(), format!("{}{}", self.docroot(), name))
            } else {
                (format!("{dir_uri}{name}"), format!("{}/{}", fname.trim_end_matches('/'), name))
            };
            // (the sub-request's URL has its dot segments removed, as
            // ap_process_request_internal does: `DirectoryIndex ../x/index.html` reaches /x/)
            let (cand_uri, above) = remove_dot_segments(&cand_uri);
            if above {
                // (a name that climbs above the root: the sub-request answers 400)
                self.note(None, format!("DirectoryIndex: {name} climbs above the root: 400; remembered"));
                error_notfound = Some(400);
                continue;
            }
            let saved = (
                self.uri.clone(),
                self.filename.clone(),
                self.path_info.clone(),
                self.env.clone(),
                self.unknown.clone(),
                self.forced_type.clone(),
                self.last_dc.clone(),
            );
            // (ap_sub_req_lookup_uri: the sub-request is a GET, whatever the request's
            // method; the main request's handler then runs with its own)
            let method = std::mem::replace(&mut self.method, "GET".into());
            // Apache skips access control in a sub-request whose merged configuration is the
            // main request's (which has passed it with its own method).
            // (a plain name in the folder itself)
            self.skip_access = (!name.contains('/')
                && self.same_config_as_folder(fname, &dir_uri, &cand_file, &cand_uri))
            .then(|| cand_file.clone());
            self.subreq = true;
            let end = self.round(&cand_uri, args.clone());
            self.subreq = false;
            self.skip_access = None;
            self.method = method;
            let regular = fs::stat(self.fs, &cand_file).kind == fs::Kind::File;
            match end {
                RoundEnd::Done(o)
                    if o.status == 200 && matches!(o.served, Served::File { .. } | Served::Php { .. }) =>
                {
                    self.note(None, format!("DirectoryIndex: {cand_uri}"));
                    if matches!(o.served, Served::File { .. })
                        && let Some(refused) = self.default_handler_refuses(fs::Kind::File)
                    {
                        return Some(refused);
                    }
                    return Some(RoundEnd::Done(o));
                }
                RoundEnd::Internal { uri, args } if regular => {
                    self.note(None, format!("DirectoryIndex: {cand_uri}, rewritten in its sub-request"));
                    self.redirect_url = Some(cand_uri);
                    return Some(RoundEnd::Internal { uri, args });
                }
                RoundEnd::Done(o)
                    if (300..400).contains(&o.status) || (o.status == 401 && names.len() == 1) =>
                {
                    self.note(
                        None,
                        format!("DirectoryIndex: the sub-request for {cand_uri} answers {}", o.status),
                    );
                    return Some(RoundEnd::Done(o));
                }
                RoundEnd::Done(o) if o.status != 200 && o.status != 404 => {
                    self.note(
                        None,
                        format!(
                            "DirectoryIndex: the sub-request for {cand_uri} answers {}; remembered",
                            o.status
                        ),
                    );
                    error_notfound = Some(o.status);
                }
                _ => {}
            }
            (
                self.uri,
                self.filename,
                self.path_info,
                self.env,
                self.unknown,
                self.forced_type,
                self.last_dc,
            ) = saved;
            self.args = args.clone();
        }
        error_notfound.map(|s| done(s, Served::Error))
    }

    /// After `[END]` the rewritten URL is served without another rewrite round.
    fn serve_after_end(&mut self, url: &str, args: Option<String>) -> RoundEnd {
        self.uri = url.to_string();
        self.args = args;
        let filename = format!("{}{}", self.docroot(), url);
        if self.name_too_long(&filename) {
            return done(403, Served::Error);
        }
        let (fname, path_info, kind) = fs::walk(self.fs, &filename);
        self.filename = fname.clone();
        self.path_info = path_info.clone();
        if self.refused_link(&fname) {
            return done(403, Served::Error);
        }
        let mut trace = std::mem::take(&mut self.trace);
        let dc = self.dir_config(&fname, kind == fs::Kind::Dir, url, &mut trace);
        self.remember_walk(&fname, kind == fs::Kind::Dir);
        self.trace = trace;
        // The internal redirect is a request of its own: access control runs on where it
        // leads (only the rewrite rules are skipped).
        self.last_dc = Some(self.merged_error_docs(&dc));
        if let Some(end) = self.folder_checks(&dc) {
            return end;
        }
        self.handle(&dc, &fname, path_info, kind)
    }

    /// What a folder's configuration decides before the fixups: a broken .htaccess (500),
    /// what the evaluator cannot decide, SetEnvIf, then access control.
    fn folder_checks(&mut self, dc: &DirConfig<'m>) -> Option<RoundEnd> {
        if let Some(h) = dc.broken {
            self.note(h.scope.as_ref().map(|s| s.at), format!("{} makes Apache answer 500", h.path));
            return Some(done(500, Served::Error));
        }
        if let Some(u) = &dc.unknown {
            self.unknown = Some(u.clone());
        }
        // Per-directory SetEnvIf runs in the header_parser phase, which Apache runs for the
        // main request only: a sub-request keeps the main request's variables.
        if !self.subreq {
            for rule in self.perdir_setenvif(dc) {
                let uri = self.uri.clone();
                self.apply_setenvif(rule, &uri);
            }
        }
        if self.skip_access.as_ref().is_some_and(|f| *f == self.filename) {
            self.note(None, "access: the DirectoryIndex sub-request merges the folder's own configuration (not checked again)");
            return None;
        }
        let mut exprs = BTreeMap::new();
        for text in access::expr_texts(dc) {
            match self.decide_expr(&text) {
                Ok(v) => {
                    exprs.insert(text, v);
                }
                Err(why) => {
                    self.unknown.get_or_insert(format!("Require expr \"{text}\": {why}"));
                }
            }
        }
        let client = access::Client {
            ip: self.req.remote,
            method: &self.method,
            env: &self.env,
            has_credentials: self.req.header("Authorization").is_some(),
            exprs: &exprs,
        };
        // What narrows access and is not modelled here (RemoteIPHeader, AllowMethods, ...).
        if let Some(name) = dc.not_carried {
            self.unknown.get_or_insert_with(|| format!("{name}: not modelled"));
        }
        // Allow/Deny by host name: Apache asks DNS (double-reverse), which this does not.
        if dc.legacy.as_ref().is_some_and(access::names_host) {
            self.unknown.get_or_insert_with(|| "Allow or Deny by host name: decided by DNS".into());
        }
        let (denied, why) = access::check(dc, &client);
        let at = access::deciding_span(dc, &why);
        self.note(at, format!("access: {why}"));
        denied.map(|status| done(status, Served::Error))
    }

    /// The per-directory configuration for a walked path; `<If>` conditions are decided
    /// against the request in progress.
    fn dir_config(
        &mut self,
        filename: &str,
        is_dir: bool,
        uri: &str,
        trace: &mut Vec<Step>,
    ) -> DirConfig<'m> {
        let method = self.method.clone();
        let folder = dirconf::walk_folder(filename, is_dir);
        let subject = match &self.walked {
            Some((f, subject)) if *f == folder => subject.clone(),
            _ => filename.to_string(),
        };
        let t = dirconf::Target { filename, regex_subject: &subject, is_dir, uri, method: &method };
        let (model, vhost) = (self.model, self.vhost);
        dirconf::build(model, vhost, &t, trace, &mut |e| self.decide_expr(e))
    }

    /// The walk of a request's round (not a sub-request's, whose cache is a copy): what
    /// the next round's walk of the same folder reuses.
    fn remember_walk(&mut self, filename: &str, is_dir: bool) {
        if self.subreq {
            return;
        }
        let folder = dirconf::walk_folder(filename, is_dir);
        if self.walked.as_ref().is_none_or(|(f, _)| *f != folder) {
            self.walked = Some((folder, filename.to_string()));
        }
    }

    /// What the default handler (core.c's default_handler) and mod_autoindex answer by
    /// method for what the walk found, measured on 2.4.71, or None to go on: autoindex
    /// lists a folder for GET (and HEAD) only, and the default handler serves GET and POST
    /// alike but never a folder (404, "attempt to serve directory"); it answers OPTIONS
    /// itself, refuses a method Apache does not know (501) and any other (405) whatever
    /// the path names.
    fn default_handler_refuses(&mut self, kind: fs::Kind) -> Option<RoundEnd> {
        let method = self.method.clone();
        if method == "OPTIONS" {
            self.note(None, "the default handler answers OPTIONS with the methods it takes");
            return Some(done(200, Served::Options));
        }
        if !matches!(method.as_str(), "GET" | "HEAD" | "POST") {
            if !APACHE_METHODS.contains(&method.as_str()) && !self.model.registered_methods.contains(&method)
            {
                self.note(None, format!("the default handler does not know the method {method}: 501"));
                return Some(done(501, Served::Error));
            }
            self.note(None, format!("the default handler does not take {method}: 405"));
            return Some(done(405, Served::Error));
        }
        if method == "POST" && kind == fs::Kind::Dir {
            self.note(None, "POST to a folder: the default handler does not serve one (404)");
            return Some(done(404, Served::Error));
        }
        None
    }

    /// The handler's answer for a mapped file.
    fn handle(&mut self, dc: &DirConfig, fname: &str, path_info: Option<String>, kind: fs::Kind) -> RoundEnd {
        // ScriptAlias sets the handler when the URL is mapped; SetHandler still wins.
        let cgi = (self.script_alias && dc.set_handler.is_none())
            .then(|| Handler::Other { name: "cgi-script".into() });
        let handler = match &cgi {
            Some(h) => Some(h),
            None => self.handler_for(dc, fname),
        };
        let loaded = |m: &str| self.model.modules.iter().any(|x| x.id == m);
        if cgi.as_ref().is_some_and(|h| !h.served_by_default(&loaded)) && kind == fs::Kind::Dir {
            self.note(None, "a ScriptAlias folder: mod_cgi refuses to run a directory (403)");
            return done(403, Served::Error);
        }
        if let Some(h) = handler.filter(|h| h.is_backend()) {
            if kind != fs::Kind::File {
                self.note(None, format!("PHP handler for {fname}, which does not exist: PHP answers 404"));
                return done(404, Served::Error);
            }
            let script_name = match &path_info {
                Some(pi) if self.uri.ends_with(pi.as_str()) => {
                    self.uri[..self.uri.len() - pi.len()].to_string()
                }
                _ => self.uri.clone(),
            };
            self.note(None, format!("handed to PHP ({}): {fname}", handler_name(h)));
            return done(
                200,
                Served::Php {
                    script: fname.to_string(),
                    script_name,
                    path_info,
                    query_string: self.args.clone().unwrap_or_default(),
                    request_uri: self.req.target(),
                },
            );
        }
        if let Some(h @ Handler::Other { name }) = handler {
            let loaded = |m: &str| self.model.modules.iter().any(|x| x.id == m);
            if h.served_by_default(&loaded) {
                self.note(
                    None,
                    format!("no loaded module claims the handler {name}: the default handler serves"),
                );
            } else if kind == fs::Kind::File {
                self.unknown.get_or_insert(format!("handler {name} is not evaluated"));
            }
        }
        if let Some(refused) = self.default_handler_refuses(kind) {
            return refused;
        }
        match kind {
            fs::Kind::File => {
                if path_info.is_some() {
                    self.note(None, "a static file with PATH_INFO: 404 (AcceptPathInfo Default)");
                    return done(404, Served::Error);
                }
                self.note(None, format!("serves the file {fname}"));
                let mut o = done(200, Served::File { path: fname.to_string() });
                if let (RoundEnd::Done(out), Some(t)) =
                    (&mut o, self.forced_type.clone().or(dc.force_type.map(str::to_string)))
                {
                    out.content_type = Some(t);
                }
                o
            }
            fs::Kind::Dir => {
                let autoindex = self.model.modules.iter().any(|m| m.id == "autoindex_module");
                if !autoindex {
                    self.note(None, "a directory without index and no mod_autoindex: 404");
                    done(404, Served::Error)
                } else if dc.options & dirconf::opt::INDEXES != 0 {
                    done(200, Served::Listing { dir: fname.to_string() })
                } else {
                    self.note(None, "a directory without index, Options without Indexes: 403");
                    done(403, Served::Error)
                }
            }
            _ => {
                self.note(None, format!("{fname} does not exist: 404"));
                done(404, Served::Error)
            }
        }
    }

    /// SetHandler, else AddHandler by the file's extensions (the last one found wins).
    fn handler_for<'d>(&self, dc: &'d DirConfig, fname: &str) -> Option<&'d Handler> {
        if let Some(h) = dc.set_handler {
            return Some(h);
        }
        let base = fname.rsplit('/').next().unwrap_or("");
        let mut found = None;
        for ext in base.split('.').skip(1) {
            let ext = ext.to_ascii_lowercase();
            if let Some((_, h)) = dc.add_handlers.iter().rev().find(|(e, _)| *e == ext) {
                found = Some(*h);
            }
        }
        found
    }

    /// The rules of server context: the vhost's (and the main server's with
    /// `RewriteOptions Inherit`), when its RewriteEngine is on.
    fn server_rules(&self) -> Vec<&'m RewriteRule> {
        server_rules(self.model, self.vhost)
    }

    fn server_error_docs(&self) -> BTreeMap<u16, crate::model::dir::ErrorAction> {
        let mut m = BTreeMap::new();
        for s in self.server_scopes() {
            for e in &s.settings.error_documents {
                m.insert(e.status, e.action.clone());
            }
        }
        m
    }

    fn merged_error_docs(&self, dc: &DirConfig) -> BTreeMap<u16, crate::model::dir::ErrorAction> {
        let mut m = self.server_error_docs();
        for (k, v) in &dc.error_docs {
            m.insert(*k, (*v).clone());
        }
        m
    }

    /// SetEnvIf in `<Directory>`, `<Location>` and .htaccess run in the header parser,
    /// after the directory walk (the server's ran when the request was read).
    fn perdir_setenvif(&self, dc: &DirConfig<'m>) -> Vec<&'m crate::model::env::EnvRule> {
        dc.env.clone()
    }

    /// mod_alias in translate: server redirects first, then aliases; the vhost's before
    /// the main server's.
    fn alias_translate(&mut self) -> Option<Translated> {
        let scopes: Vec<&Scope> = self.server_scopes().into_iter().rev().collect();
        for s in &scopes {
            for r in &s.settings.redirects {
                if let Some((status, loc)) = self.try_redirect(r) {
                    self.note(Some(r.at), format!("mod_alias redirect {status} to {loc}"));
                    return Some(Translated::Redirect(status, loc));
                }
            }
        }
        for s in &scopes {
            for a in &s.settings.aliases {
                if let Some(mut f) = try_alias(a, &self.uri) {
                    use crate::model::alias::AliasKind;
                    // (`Alias /ht /srv/ht/` makes /srv/ht//in for /ht/in: Apache's directory
                    // walk merges the slashes, apr_filepath_merge)
                    while f.contains("//") {
                        f = f.replace("//", "/");
                    }
                    self.script_alias =
                        matches!(a.kind, AliasKind::ScriptAlias | AliasKind::ScriptAliasMatch);
                    self.note(Some(a.at), format!("mod_alias maps {} to {f}", self.uri));
                    return Some(Translated::File(f));
                }
            }
        }
        None
    }

    fn try_redirect(&self, r: &crate::model::alias::Redirect) -> Option<(u16, String)> {
        let uri = &self.uri;
        let target = if r.regex {
            let re = pcre2::bytes::RegexBuilder::new().dotall(true).build(r.from.as_deref()?).ok()?;
            let caps = re.captures(uri.as_bytes()).ok()??;
            let mut out = String::new();
            let to = r.to.clone().unwrap_or_default();
            let b = to.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                    let n = (b[i + 1] - b'0') as usize;
                    if let Some(m) = caps.get(n) {
                        out.push_str(&String::from_utf8_lossy(m.as_bytes()));
                    }
                    i += 2;
                } else {
                    out.push(b[i] as char);
                    i += 1;
                }
            }
            regex_redirect_escape(&out)
        } else {
            let from = r.from.as_deref().unwrap_or("/");
            let n = alias_matches(uri, from)?;
            match &r.to {
                Some(to) => format!("{to}{}", escape_path(&uri[n..])),
                None => String::new(),
            }
        };
        if !(300..400).contains(&r.status) {
            return Some((r.status, String::new()));
        }
        let mut loc =
            if target.starts_with('/') { format!("{}{}", self.self_url_prefix(), target) } else { target };
        if let Some(a) = &self.args
            && !loc.contains('?')
        {
            loc = format!("{loc}?{a}");
        }
        Some((r.status, loc))
    }
}

enum Translated {
    Redirect(u16, String),
    File(String),
}

/// mod_alias's `alias_matches()`: `from` is a prefix of `uri` ending at a segment
/// boundary (runs of slashes count as one); returns the length of `uri` matched.
fn alias_matches(uri: &str, from: &str) -> Option<usize> {
    let u = uri.as_bytes();
    let a = from.as_bytes();
    let (mut i, mut j) = (0, 0);
    while j < a.len() {
        if a[j] == b'/' {
            if i >= u.len() || u[i] != b'/' {
                return None;
            }
            while j < a.len() && a[j] == b'/' {
                j += 1;
            }
            while i < u.len() && u[i] == b'/' {
                i += 1;
            }
        } else {
            if i >= u.len() || u[i] != a[j] {
                return None;
            }
            i += 1;
            j += 1;
        }
    }
    if a.last() != Some(&b'/') && i < u.len() && u[i] != b'/' {
        return None;
    }
    Some(i)
}

fn try_alias(a: &crate::model::alias::Alias, uri: &str) -> Option<String> {
    use crate::model::alias::AliasKind;
    let from = a.from.as_deref()?;
    match a.kind {
        AliasKind::Alias | AliasKind::ScriptAlias => {
            let n = alias_matches(uri, from)?;
            Some(format!("{}{}", a.to, &uri[n..]))
        }
        AliasKind::AliasMatch | AliasKind::ScriptAliasMatch => {
            let re = pcre2::bytes::RegexBuilder::new().dotall(true).build(from).ok()?;
            let caps = re.captures(uri.as_bytes()).ok()??;
            let mut out = String::new();
            let b = a.to.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                    if let Some(m) = caps.get((b[i + 1] - b'0') as usize) {
                        out.push_str(&String::from_utf8_lossy(m.as_bytes()));
                    }
                    i += 2;
                } else {
                    out.push(b[i] as char);
                    i += 1;
                }
            }
            Some(out)
        }
    }
}

/// The methods Apache 2.4 knows (`ap_method_number_of`, the WebDAV and DeltaV ones
/// included); any other is `M_INVALID`, which the default handler answers with 501.
pub const APACHE_METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "PUT",
    "POST",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "VERSION-CONTROL",
    "CHECKOUT",
    "UNCHECKOUT",
    "CHECKIN",
    "UPDATE",
    "LABEL",
    "REPORT",
    "MKWORKSPACE",
    "MKACTIVITY",
    "BASELINE-CONTROL",
    "MERGE",
];

fn handler_name(h: &Handler) -> String {
    match h {
        Handler::FastCgi { written, .. } => written.clone(),
        Handler::ModPhp { written } => written.clone(),
        Handler::Fcgid => "fcgid-script".into(),
        Handler::Default { written } => written.clone(),
        Handler::Other { name } => name.clone(),
    }
}

/// `ap_unescape_url()` then dot-segment removal and slash merging.
pub fn decode_path(raw: &str) -> Result<String, u16> {
    let b = raw.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c))) {
                (Some(h), Some(l)) => {
                    let v = (h * 16 + l) as u8;
                    if v == b'/' || v == 0 {
                        return Err(404);
                    }
                    out.push(v);
                    i += 3;
                }
                _ => return Err(400),
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let s = String::from_utf8_lossy(&out).into_owned();
    if !s.starts_with('/') {
        return Err(400);
    }
    // ap_getparents() and MergeSlashes.
    match remove_dot_segments(&s) {
        (_, true) => Err(400),
        (p, false) => Ok(p),
    }
}

/// ap_getparents() on a URL-path without decoding it: `.` segments and empty ones dropped,
/// `..` taking the one before it back, a trailing `/`, `/.` or `/..` kept as `/`; true when
/// a `..` went above the root (kept at the root). (lighten_plans.remove_dot_segments)
fn remove_dot_segments(p: &str) -> (String, bool) {
    let trailing = p.ends_with('/') || p.ends_with("/.") || p.ends_with("/..");
    let mut parts: Vec<&str> = Vec::new();
    let mut above = false;
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => above |= parts.pop().is_none(),
            x => parts.push(x),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if trailing && out != "/" {
        out.push('/');
    }
    (out, above)
}

/// `ap_escape_uri()` (shared with ap_expr's `escape()`).
fn escape_path(p: &str) -> String {
    crate::expr::escape_uri(p)
}

/// mod_alias on a RedirectMatch target after `$N` substitution (try_alias_list): the URL
/// without its query and fragment is escaped (ap_escape_uri), the query and fragment are
/// put back as they are.
fn regex_redirect_escape(url: &str) -> String {
    let (rest, fragment) = match url.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (url, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let mut out = escape_path(path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// A decoded path handed to a new round: what is not plain stays encoded so that the
/// next decode gives it back.
/// The URL of an internal redirect.  A `%` stays as it is: Apache decodes the new URL
/// again (`GET /%25` rewritten to `index.php/$1` is its 400, `%2500` its 404), and so must
/// the next round here, or `%252e%252e` would never become the `..` Apache refuses.
fn reencode(p: &str) -> String {
    let mut out = String::new();
    for ch in p.chars() {
        if ch == ' ' {
            out.push_str("%20");
        } else if ch == '?' {
            out.push_str("%3f");
        } else {
            out.push(ch);
        }
    }
    out
}

/// `escape_absolute_uri()`: the path part of a redirect target is escaped unless [NE].
fn escape_location(url: &str, noescape: bool) -> String {
    if noescape {
        return url.to_string();
    }
    match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            let (host, path) = match rest.find('/') {
                Some(j) => (&rest[..j], &rest[j..]),
                None => (rest, ""),
            };
            format!("{}{host}{}", &url[..i + 3], escape_path(path))
        }
        None => escape_path(url),
    }
}

fn with_query(loc: &str, args: &Option<String>, raw: bool) -> String {
    match args {
        Some(a) if !a.is_empty() => {
            if raw {
                format!("{loc}?{a}")
            } else {
                format!("{loc}?{}", escape_query(a))
            }
        }
        _ => loc.to_string(),
    }
}

/// A redirect's query is escaped like its path (so an encoded `%` doubles, which is
/// why rules say [NE]).
fn escape_query(q: &str) -> String {
    escape_path(q)
}

/// For a per-directory redirect to a URL of this server, RewriteBase replaces the
/// directory prefix in its path.
fn replace_base_in_url(url: &str, directory: &str, base: &str) -> String {
    let Some(i) = url.find("://") else { return url.to_string() };
    let rest = &url[i + 3..];
    let Some(j) = rest.find('/') else { return url.to_string() };
    let path = &rest[j..];
    match path.strip_prefix(directory) {
        Some(tail) => format!("{}{}{}/{tail}", &url[..i + 3], &rest[..j], base.trim_end_matches('/')),
        None => url.to_string(),
    }
}

impl Lookup for Engine<'_> {
    fn var(&mut self, name: &str) -> String {
        if let Some(h) = name.strip_prefix("HTTP:") {
            return self.req.header(h).unwrap_or("").to_string();
        }
        if let Some(v) = name.strip_prefix("ENV:") {
            return access::env_get(&self.env, v).cloned().unwrap_or_default();
        }
        if name.starts_with("SSL:") {
            return String::new();
        }
        match name {
            "HTTP_HOST" => self.req.host.clone().unwrap_or_default(),
            "HTTP_USER_AGENT" => self.req.header("User-Agent").unwrap_or("").into(),
            "HTTP_REFERER" => self.req.header("Referer").unwrap_or("").into(),
            "HTTP_COOKIE" => self.req.header("Cookie").unwrap_or("").into(),
            "HTTP_FORWARDED" => self.req.header("Forwarded").unwrap_or("").into(),
            "HTTP_PROXY_CONNECTION" => self.req.header("Proxy-Connection").unwrap_or("").into(),
            "HTTP_ACCEPT" => self.req.header("Accept").unwrap_or("").into(),
            "REQUEST_METHOD" => self.method.clone(),
            "REQUEST_SCHEME" => {
                if self.https {
                    "https".into()
                } else {
                    "http".into()
                }
            }
            "REQUEST_URI" => self.uri.clone(),
            "REQUEST_FILENAME" | "SCRIPT_FILENAME" => self.filename.clone(),
            "QUERY_STRING" => self.args.clone().unwrap_or_default(),
            "THE_REQUEST" => {
                format!("{} {} {}", self.req.method, self.req.target_as_sent(), self.req.protocol())
            }
            "HTTPS" => {
                if self.https {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            "SERVER_NAME" => self.server_name(),
            "SERVER_PORT" => self.server_port().to_string(),
            "SERVER_ADDR" => "127.0.0.1".into(),
            "SERVER_PROTOCOL" => self.req.protocol().into(),
            "SERVER_SOFTWARE" => "Apache".into(),
            "DOCUMENT_ROOT" | "CONTEXT_DOCUMENT_ROOT" => self.docroot(),
            "CONTEXT_PREFIX" => String::new(),
            "REMOTE_ADDR" => self.req.remote.to_string(),
            "REMOTE_HOST" => self.req.remote.to_string(),
            "PATH_INFO" => self.path_info.clone().unwrap_or_default(),
            "IS_SUBREQ" => "false".into(),
            "API_VERSION" => "20120211:139".into(),
            "REMOTE_USER" | "REMOTE_IDENT" | "AUTH_TYPE" => String::new(),
            n if n.starts_with("TIME") => {
                self.unknown.get_or_insert(format!("%{{{n}}} depends on the clock"));
                String::new()
            }
            "CONN_REMOTE_ADDR" => self.req.remote.to_string(),
            "SERVER_ADMIN" => server_admin(self.model, self.vhost),
            // (ap_expr's: the document's URL-path, and whether the client is on IPv6)
            "DOCUMENT_URI" => self.uri.clone(),
            "IPV6" => if self.req.remote.is_ipv6() { "on" } else { "off" }.into(),
            "REMOTE_PORT" => {
                self.unknown.get_or_insert("%{REMOTE_PORT}: the client's port is the sandbox's".into());
                String::new()
            }
            // Any other name is empty to mod_rewrite: only %{ENV:name} reads the variables.
            _ => String::new(),
        }
    }

    fn map(&mut self, map: &str, key: &str) -> Option<String> {
        let decl = rewrite_maps(self.model, self.vhost).into_iter().find(|m| m.name == map)?.clone();
        match decl.kind.as_str() {
            "int" => Some(match decl.source.as_str() {
                "toupper" => key.to_uppercase(),
                "tolower" => key.to_lowercase(),
                "escape" => escape_path(key),
                "unescape" => decode_path(&format!("/{key}"))
                    .map(|p| p[1..].to_string())
                    .unwrap_or_else(|_| key.to_string()),
                _ => return None,
            }),
            "txt" | "rnd" => {
                let text = String::from_utf8_lossy(&self.fs.read(&decl.source).ok()?).into_owned();
                for line in text.lines() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let mut parts = line.split_whitespace();
                    if parts.next() == Some(key) {
                        let v = parts.next()?.to_string();
                        if decl.kind == "rnd" && v.contains('|') {
                            self.unknown.get_or_insert(format!("RewriteMap {map} picks at random"));
                        }
                        return Some(v);
                    }
                }
                None
            }
            _ => {
                self.unknown.get_or_insert(format!("RewriteMap {map} ({}:) is not evaluated", decl.kind));
                None
            }
        }
    }
}

impl RewriteEnv for Engine<'_> {
    fn subrequest(&self) -> bool {
        self.subreq
    }

    fn expr_cond(&mut self, text: &str) -> bool {
        match self.decide_expr(text) {
            Ok(v) => v,
            Err(why) => {
                self.unknown.get_or_insert(format!("RewriteCond expr \"{text}\": {why}"));
                false
            }
        }
    }

    fn test_file(&mut self, kind: CondKind, path: &str) -> bool {
        let st = fs::stat(self.fs, path);
        match kind {
            CondKind::FileExists | CondKind::LookupFile => st.kind == fs::Kind::File,
            CondKind::FileSize => st.kind == fs::Kind::File && st.size > 0,
            CondKind::FileDir => st.kind == fs::Kind::Dir,
            CondKind::FileLink => st.link,
            CondKind::FileExecutable => st.kind != fs::Kind::Missing && st.executable,
            CondKind::LookupUrl => {
                fs::stat(self.fs, &format!("{}{}", self.docroot(), path)).kind != fs::Kind::Missing
            }
            _ => false,
        }
    }

    fn is_self(&mut self, url: &str) -> Option<String> {
        let (scheme, rest) = url.split_once("://")?;
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = crate::model::server::split_host_port(hostport);
        let port: u16 = port
            .and_then(|p| p.parse().ok())
            .unwrap_or(if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 });
        let same = host.as_deref().is_some_and(|h| h.eq_ignore_ascii_case(&self.server_name()))
            && port == self.server_port();
        same.then(|| path.to_string())
    }

    fn self_url(&mut self) -> String {
        self.self_url_prefix()
    }

    fn set_env(&mut self, name: &str, value: Option<&str>) {
        match value {
            Some(v) => access::env_set(&mut self.env, name, Some(v)),
            None => access::env_set(&mut self.env, name, None),
        }
    }
}

/// Whether a `<DirectoryMatch>`/`<FilesMatch>`-style regex matches, as the evaluator
/// decides it (for the translator's handler analysis).
pub fn dirconf_regex_matches(re: &str, subject: &str) -> bool {
    dirconf::regex_search(re, subject)
}

/// How a vhost inherits the main server's rewrite configuration
/// (`config_server_merge()`): its own RewriteOptions, else the main server's, plus the
/// main server's `InheritDown*`, which a vhost's `IgnoreInherit` refuses.
#[derive(Clone, Copy, Debug, Default)]
struct Inherit {
    /// The main server's rules come after the vhost's, and its maps are visible.
    after: bool,
    /// The main server's rules come before the vhost's, and its maps are visible.
    before: bool,
}

fn inherit(model: &Model, i: usize) -> Inherit {
    let main = model.server.settings.rewrite();
    let v = model.vhosts[i].scope.settings.rewrite();
    let lower = |c: &crate::model::rewrite::RewriteConfig| -> Vec<String> {
        c.options.iter().map(|o| o.value.to_ascii_lowercase()).collect()
    };
    let (own, base) = (lower(v), lower(main));
    let opts = if own.is_empty() { base.clone() } else { own };
    let has = |o: &[String], name: &str| o.iter().any(|x| x == name);
    let ignore = has(&opts, "ignoreinherit");
    let before = has(&opts, "inheritbefore") || (has(&base, "inheritdownbefore") && !ignore);
    let after = !before && (has(&opts, "inherit") || (has(&base, "inheritdown") && !ignore));
    Inherit { after, before }
}

/// The RewriteMaps a vhost's rules can use: its own, and the main server's only when
/// RewriteOptions inherits them; the vhost's win on a name.
pub fn rewrite_maps(model: &Model, vhost: Option<usize>) -> Vec<&crate::model::rewrite::RewriteMap> {
    let main = model.server.settings.rewrite();
    let Some(i) = vhost else { return main.maps.iter().collect() };
    let v = model.vhosts[i].scope.settings.rewrite();
    let mut maps: Vec<&crate::model::rewrite::RewriteMap> = v.maps.iter().collect();
    let inh = inherit(model, i);
    if inh.after || inh.before {
        maps.extend(main.maps.iter().filter(|m| !v.maps.iter().any(|x| x.name == m.name)));
    }
    maps
}

/// The server-context rule list of a vhost (or of the main server), inheritance resolved
/// as `config_server_merge()` does: the engine state and the options come from the main
/// server unless the vhost sets them.
/// `%{SERVER_ADMIN}`: the host's ServerAdmin, else the main server's, else Apache's
/// compiled-in "[no address given]".
pub fn server_admin(model: &Model, vhost: Option<usize>) -> String {
    let last = |s: &Scope| {
        s.directives
            .iter()
            .rev()
            .find(|d| d.enabled && d.name.eq_ignore_ascii_case("ServerAdmin"))
            .map(|d| d.args.trim().trim_matches('"').to_string())
    };
    vhost
        .and_then(|i| last(&model.vhosts[i].scope))
        .or_else(|| last(&model.server))
        .unwrap_or_else(|| "[no address given]".into())
}

pub fn server_rules(model: &Model, vhost: Option<usize>) -> Vec<&RewriteRule> {
    let main = model.server.settings.rewrite();
    let Some(i) = vhost else {
        return if main.is_on() { main.rules.iter().collect() } else { Vec::new() };
    };
    let v = model.vhosts[i].scope.settings.rewrite();
    if !v.engine.as_ref().or(main.engine.as_ref()).is_some_and(|e| e.value) {
        return Vec::new();
    }
    let inh = inherit(model, i);
    let mut rules: Vec<&RewriteRule> = Vec::new();
    if inh.before {
        rules.extend(main.rules.iter());
    }
    rules.extend(v.rules.iter());
    if inh.after {
        rules.extend(main.rules.iter());
    }
    rules
}
