//! The site as data for the Lua runtime (`lighten_site.lua`): every scope the runtime
//! merges, in the shapes `templates/lua/lighten.lua` reads, with regexes compiled for
//! `lighten_re` and `ap_expr` conditions as Lua functions.  Paths are the ones lighttpd
//! will see (after the caller's path mapping).

use super::lua::Value;
use super::{Code, Finding, Site};
use crate::model::access::{AccessConfig, Authz, Combine, Order, Satisfy};
use crate::model::alias::AliasKind;
use crate::model::dir::ErrorAction;
use crate::model::headers::Piece;
use crate::model::mime::Handler;
use crate::model::rewrite::{CondFlag, RewriteConfig, RewriteRule, RuleFlagKind};
use crate::model::{Matcher, Model, Scope, ScopeKind};
use crate::source::Span;

/// The interpreter's data (lighten_site.lua), rendered only when a host needs it: a
/// server whose hosts all compile does without it (on 1,000 accounts it is ~70 MB).
pub struct Module {
    head: String,
    site: Value,
}

impl Module {
    pub fn render(self) -> String {
        let mut out = self.head;
        out.push_str("\nreturn ");
        out.push_str(&self.site.render(0));
        out.push('\n');
        out
    }
}

impl Site<'_> {
    /// `R[n]` for a pattern, compiled once per (pattern, caseless); `false` (and a finding)
    /// when it cannot be compiled exactly.
    pub fn regex_ref(&mut self, pattern: &str, caseless: bool) -> Result<String, String> {
        let key = (pattern.to_string(), caseless);
        if let Some(i) = self.re_index.get(&key) {
            return Ok(format!("R[{i}]"));
        }
        let opts = crate::luare::Options::apache(caseless);
        match crate::luare::compile_with(pattern, &opts) {
            Ok(c) => {
                self.regexes.push((pattern.to_string(), caseless, c.program));
                let i = self.regexes.len();
                self.re_index.insert(key, i);
                Ok(format!("R[{i}]"))
            }
            Err(u) => Err(format!("the regex {pattern:?} cannot be matched: {}", u.reason)),
        }
    }

    /// A regex operand: `R[n]`, or `false` with a finding at `at`.
    fn regex(&mut self, pattern: &str, caseless: bool, at: Span) -> Value {
        match self.regex_ref(pattern, caseless) {
            Ok(r) => Value::Raw(r),
            Err(why) => {
                self.findings.push(Finding::unsupported(
                    Code::CannotEvaluate,
                    at,
                    why,
                    "requests that reach it answer 403",
                ));
                Value::Bool(false)
            }
        }
    }

    /// An `ap_expr` as `E[n]`, or `false` with a finding.
    fn expr(&mut self, text: &str, at: Span) -> Value {
        let compiled = crate::expr::parse(text)
            .map_err(|e| format!("the expression does not parse: {}", e.message))
            .and_then(|e| super::expr::function(self, &e));
        match compiled {
            Ok(f) => {
                self.exprs.push(f);
                Value::Raw(format!("E[{}]", self.exprs.len()))
            }
            Err(why) => {
                self.findings.push(Finding::unsupported(
                    Code::CannotEvaluate,
                    at,
                    format!("the expression {text:?}: {why}"),
                    "requests that reach it answer 403",
                ));
                Value::Bool(false)
            }
        }
    }

    fn path(&self, p: &str) -> String {
        (self.map_path)(p)
    }

    pub fn scope(&mut self, s: &Scope) -> Value {
        let mut t = Value::table();
        t.set("kind", kebab(s.kind));
        t.set("at", self.at(s.at));
        match (&s.kind, &s.matcher) {
            (ScopeKind::Directory, Some(Matcher::Path(p))) => {
                t.set("path", self.path(p).trim_end_matches('/').to_string());
            }
            (_, Some(Matcher::Regex(r))) => {
                let nocase = false;
                let v = self.regex(r, nocase, s.at);
                t.set("re", v);
            }
            (ScopeKind::Files, Some(Matcher::Path(p))) => {
                if p.contains(['*', '?', '[']) {
                    let re = glob_to_regex(p, false);
                    let v = self.regex(&re, false, s.at);
                    t.set("re", v);
                } else {
                    t.set("name", p.as_str());
                }
            }
            (ScopeKind::Location, Some(Matcher::Path(p))) => {
                if p.contains(['*', '?', '[']) {
                    let re = glob_to_regex(p, true);
                    let v = self.regex(&re, false, s.at);
                    t.set("re", v);
                } else {
                    t.set("path", p.as_str());
                }
            }
            (_, Some(Matcher::Methods(ms))) => {
                t.set("methods", ms.clone());
            }
            (_, Some(Matcher::Expr(e))) => {
                let v = self.expr(e, s.at);
                t.set("expr", v);
            }
            _ => {}
        }
        let settings = self.settings(s);
        t.set("settings", settings);
        let mut children = Value::table();
        for c in s.children.iter().filter(|c| c.enabled) {
            if matches!(
                c.kind,
                ScopeKind::Directory
                    | ScopeKind::DirectoryMatch
                    | ScopeKind::Files
                    | ScopeKind::FilesMatch
                    | ScopeKind::Location
                    | ScopeKind::LocationMatch
                    | ScopeKind::If
                    | ScopeKind::ElseIf
                    | ScopeKind::Else
                    | ScopeKind::Limit
                    | ScopeKind::LimitExcept
            ) {
                if c.kind == ScopeKind::Directory && matches!(c.matcher, Some(Matcher::Path(_))) {
                    // Listed per vhost in merge order (dir_sections), not walked here.
                    continue;
                }
                let v = self.scope(c);
                children.push(v);
            }
        }
        // `settings` must exist even when empty: the runtime reads fields of it.
        if let Value::Table(f) = &mut t
            && !f.iter().any(|(k, _)| k.as_deref() == Some("settings"))
        {
            f.push((Some("settings".into()), Value::Raw("{}".into())));
        }
        t.set("children", children);
        t
    }

    fn settings(&mut self, s: &Scope) -> Value {
        let st = &s.settings;
        let mut t = Value::table();
        let rw = st.rewrite();
        if !rw.is_empty() {
            let v = self.rewrite(rw);
            t.set("rewrite", v);
        }
        let a = st.access();
        let mut v = self.access(a);
        // mod_ssl's access rules: SSLRequireSSL refuses plain HTTP; a client certificate
        // lighttpd cannot ask for per directory fails closed.
        for d in s.directives.iter().filter(|d| d.enabled) {
            if d.name.eq_ignore_ascii_case("SSLRequireSSL") {
                v.set("require_ssl", true);
            }
            if let Some(why) = super::report::access_not_carried(&d.name, &d.args) {
                v.set("refuse", &*d.name);
                self.findings.push(Finding::unsupported(
                    Code::AccessNotCarried,
                    d.at,
                    why.into(),
                    "the requests it governs answer 403",
                ));
            }
            if d.name.eq_ignore_ascii_case("MergeSlashes") {
                self.findings.push(if d.args.trim().eq_ignore_ascii_case("off") {
                    Finding::approximated(
                        Code::MergeSlashesOff,
                        d.at,
                        "Apache's sections and rules see '//' in the URL-path; the translation merges them, so a request with '//' in its path answers 403".into(),
                    )
                } else {
                    // lighten's decoding merges slashes as Apache's default does.
                    Finding::exact(d.at)
                });
            }
            if d.name.eq_ignore_ascii_case("SSLVerifyClient") && !d.args.trim().eq_ignore_ascii_case("none") {
                v.set("refuse", "SSLVerifyClient");
                self.findings.push(Finding::unsupported(
                    Code::ClientCertificate,
                    d.at,
                    "client certificates per directory are not translated".into(),
                    "requests under it answer 403",
                ));
            }
        }
        t.set("access", v);
        let mut aliases = Value::table();
        for al in &st.aliases {
            let mut x = Value::table();
            match al.kind {
                AliasKind::Alias | AliasKind::ScriptAlias => {
                    x.set("from", al.from.clone());
                }
                AliasKind::AliasMatch | AliasKind::ScriptAliasMatch => {
                    x.set("regex", true);
                    let re = self.regex(al.from.as_deref().unwrap_or(""), false, al.at);
                    x.set("re", re);
                }
            }
            x.set("to", self.path(&al.to));
            // Without mod_cgi or mod_cgid nothing claims the handler ScriptAlias sets, and
            // Apache's default handler sends the files as they are (measured): an Alias.
            let cgi_loaded = self.modules.contains("cgi_module") || self.modules.contains("cgid_module");
            if matches!(al.kind, AliasKind::ScriptAlias | AliasKind::ScriptAliasMatch) && cgi_loaded {
                self.findings.push(Finding::unsupported(
                    Code::ScriptAlias,
                    al.at,
                    "ScriptAlias runs CGI programs, which the translation does not carry".into(),
                    "the aliased files are not sent (their source would be): requests for them answer 403",
                ));
                x.set("cgi", true);
            }
            aliases.push(x);
        }
        t.set("aliases", aliases);
        let mut redirects = Value::table();
        for r in &st.redirects {
            let mut x = Value::table();
            x.set("status", r.status);
            if r.regex {
                x.set("regex", true);
                let re = self.regex(r.from.as_deref().unwrap_or(""), false, r.at);
                x.set("re", re);
            } else {
                x.set("from", r.from.clone());
            }
            x.set("to", r.to.clone());
            redirects.push(x);
        }
        t.set("redirects", redirects);
        if let Some(i) = &st.directory_index {
            t.set("directory_index", i.value.clone());
        }
        if let Some(d) = &st.directory_slash {
            t.set("directory_slash", Value::Bool(d.value));
        }
        if let Some(f) = &st.fallback_resource {
            t.set("fallback", f.value.as_str());
        }
        let mut options = Value::table();
        for line in &st.options {
            let mut l = Value::table();
            for (sign, name) in &line.changes {
                l.push(Value::from(vec![sign.to_string(), name.clone()]));
            }
            options.push(l);
        }
        t.set("options", options);
        let mut eds = Value::table();
        for e in &st.error_documents {
            let mut x = Value::table();
            x.set("status", e.status);
            let (kind, value) = match &e.action {
                ErrorAction::Local(p) => ("local", Some(p.clone())),
                ErrorAction::Remote(u) => ("remote", Some(u.clone())),
                ErrorAction::Text(t) => ("text", Some(t.clone())),
                ErrorAction::Default => ("default", None),
            };
            x.set("kind", kind).set("value", value);
            eds.push(x);
        }
        t.set("error_documents", eds);
        let m = st.mime();
        let mut mime = Value::table();
        let mut handlers = Value::table();
        for h in &m.handlers {
            let mut x = Value::table();
            x.set("handler", handler(&h.handler, &|m| self.modules.contains(m)));
            let exts: Vec<String> =
                h.extensions.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()).collect();
            x.set("exts", Value::Raw(Value::from(exts).render(0)));
            handlers.push(x);
        }
        mime.set("handlers", handlers);
        let rm: Vec<String> = m
            .remove_handlers
            .iter()
            .flat_map(|r| r.value.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()))
            .collect();
        mime.set("remove_handlers", rm);
        mime.set("force_type", m.force_type.as_ref().map(|f| f.value.clone()));
        let ext_maps = |list: &[crate::model::mime::ExtMapping]| {
            let mut v = Value::table();
            for x in list {
                let mut e = Value::table();
                e.set("value", x.value.as_str());
                let exts: Vec<String> =
                    x.extensions.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()).collect();
                e.set("exts", exts);
                v.push(e);
            }
            v
        };
        mime.set("types", ext_maps(&m.types));
        mime.set("encodings", ext_maps(&m.encodings));
        mime.set("charsets", ext_maps(&m.charsets));
        let rt: Vec<String> = m
            .remove_types
            .iter()
            .flat_map(|r| r.value.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()))
            .collect();
        mime.set("remove_types", rt);
        mime.set("default_charset", m.default_charset.as_ref().map(|c| c.value.clone()));
        if let Some(fe) = &m.file_etag {
            let none = fe.value.iter().any(|v| v.eq_ignore_ascii_case("none"));
            mime.set("file_etag", if none { Some("none") } else { None });
        }
        t.set("mime", mime);
        // mod_env: SetEnv / UnsetEnv, for what the backend receives.
        let mut setenv = Value::table();
        for r in &st.env {
            match r.directive.to_ascii_lowercase().as_str() {
                "setenv" => {
                    for a in &r.assignments {
                        let (n, v) = a.split_once('=').unwrap_or((a.as_str(), ""));
                        setenv.push(Value::from(vec![n.to_string(), v.to_string()]));
                    }
                }
                "unsetenv" => {
                    for n in &r.assignments {
                        setenv.push(Value::from(vec![n.clone()]));
                    }
                }
                _ => {}
            }
        }
        t.set("setenv", setenv);
        let mut env = Value::table();
        for r in &st.env {
            let d = r.directive.to_ascii_lowercase();
            if !d.starts_with("setenvif") && d != "browsermatch" && d != "browsermatchnocase" {
                continue;
            }
            if d == "setenvifexpr" {
                let Some(test) = &r.test else { continue };
                let mut x = Value::table();
                let e = self.expr(test, r.at);
                x.set("expr", e);
                x.set("assignments", r.assignments.clone());
                env.push(x);
                continue;
            }
            let (Some(attr), Some(test)) = (&r.attribute, &r.test) else { continue };
            let mut x = Value::table();
            x.set("attribute", attr.as_str());
            // An attribute that is no plain header name (nor a special one) matches header
            // names as a regex (mod_setenvif's is_header_regex), as written (unanchored),
            // in any case only for SetEnvIfNoCase.
            if crate::model::env::is_header_regex(attr) {
                let re = self.regex(attr, r.nocase, r.at);
                x.set("name_re", re);
            }
            let re = self.regex(test, r.nocase, r.at);
            x.set("re", re);
            x.set("assignments", r.assignments.clone());
            env.push(x);
        }
        t.set("env", env);
        let mut headers = Value::table();
        for h in st.headers.iter().filter(|h| !h.request) {
            let mut x = Value::table();
            x.set("name", h.name.as_str()).set("action", h.action.as_str());
            if let Some(v) = h.literal() {
                x.set("value", v);
            } else if h.format.iter().all(|p| matches!(p, Piece::Text(_) | Piece::Env(_))) {
                // `%{VAR}e` reads the variables the request set on its way (SetEnv, SetEnvIf,
                // RewriteRule [E=], mod_auth's); those Apache's PHP handler adds for the
                // script (HTTP_HOST, REQUEST_URI, ...) are not among them here.
                let mut f = Value::table();
                for p in &h.format {
                    match p {
                        Piece::Text(t) => f.push(t.as_str()),
                        Piece::Env(v) => {
                            let mut e = Value::table();
                            e.set("env", v.as_str());
                            f.push(e)
                        }
                        _ => unreachable!("only text and %{{VAR}}e here"),
                    };
                }
                x.set("format", f);
                if h.format.iter().any(|p| matches!(p, Piece::Env(_))) {
                    self.findings.push(Finding::approximated(Code::HeaderEnvVariable,
                        h.at,
                        "Header value with %{VAR}e: the variable is read from what SetEnv, SetEnvIf, RewriteRule [E=] and authentication set; the CGI variables Apache's handler adds for PHP (HTTP_HOST, REQUEST_URI, ...) read as (null)".to_string(),
                    ));
                }
            } else {
                self.findings.push(Finding::unsupported(
                    Code::HeaderFormat,
                    h.at,
                    "Header value with %t, %D, %l, %i, %b, %{VAR}s or expr= is not translated".to_string(),
                    "the header is left out",
                ));
                continue;
            }
            x.set("always", h.table == "always");
            if let Some(c) = &h.condition {
                if let Some(e) = c.strip_prefix("expr=") {
                    let v = self.expr(e, h.at);
                    x.set("condition", v);
                } else if let Some(var) = c.strip_prefix("env=") {
                    let (neg, var) = match var.strip_prefix('!') {
                        Some(v) => (true, v),
                        None => (false, var),
                    };
                    let f = format!(
                        "function(cx) return {}(cx.env[{}] ~= nil) end",
                        if neg { "not " } else { "" },
                        super::lua::string(var)
                    );
                    self.exprs.push(f);
                    x.set("condition", Value::Raw(format!("E[{}]", self.exprs.len())));
                }
            }
            if matches!(h.action.as_str(), "edit" | "edit*" | "echo" | "note") {
                self.findings.push(Finding::unsupported(
                    Code::HeaderAction,
                    h.at,
                    format!("Header {} is not translated", h.action),
                    "the header is left as the response has it",
                ));
                continue;
            }
            headers.push(x);
        }
        t.set("headers", headers);
        let ex = st.expires();
        if !ex.is_empty() {
            let mut x = Value::table();
            if let Some(a) = &ex.active {
                x.set("active", Value::Bool(a.value));
            }
            if let Some(d) = &ex.default {
                x.set("default", spec(&d.value));
            }
            let mut bt = Value::table();
            for b in &ex.by_type {
                let mut e = Value::table();
                e.set("type", b.mime.as_str()).set("value", spec(&b.spec));
                bt.push(e);
            }
            x.set("by_type", bt);
            t.set("expires", x);
        }
        t
    }

    fn rewrite(&mut self, rw: &RewriteConfig) -> Value {
        let mut t = Value::table();
        if let Some(e) = &rw.engine {
            t.set("engine", Value::Bool(e.value));
        }
        t.set("base", rw.base.as_ref().map(|b| b.value.clone()));
        let opts: Vec<String> = rw.options.iter().map(|o| o.value.to_ascii_lowercase()).collect();
        t.set("options", opts);
        let rules: Vec<&RewriteRule> = rw.rules.iter().collect();
        let v = self.rules(&rules);
        t.set("rules", v);
        t
    }

    pub fn rules(&mut self, rules: &[&RewriteRule]) -> Value {
        let mut list = Value::table();
        for r in rules {
            let mut x = Value::table();
            x.set("at", self.at(r.at));
            x.set("pattern", r.pattern.as_str());
            let re = self.regex(&r.pattern, r.has(RuleFlagKind::NoCase), r.at);
            x.set("re", re);
            x.set("negated", r.negated);
            x.set("subst", r.substitution.as_str());
            x.set("literal_prefix", crate::eval::literal_prefix(&r.substitution));
            let mut flags = Value::table();
            for f in &r.flags {
                let mut fl = Value::table();
                fl.set("k", kebab(f.kind));
                fl.set("v", f.value.clone());
                flags.push(fl);
                if f.kind == RuleFlagKind::Proxy {
                    self.findings.push(Finding::unsupported(Code::RewriteProxy,
                        r.at,
                        "[P] proxies to a URL computed per request; lighttpd's mod_proxy takes fixed backends".into(),
                        "requests the rule proxies answer 403",
                    ));
                }
                if f.kind == RuleFlagKind::Cookie {
                    self.findings.push(Finding::approximated(
                        Code::RewriteCookie,
                        r.at,
                        "[CO] cookies are not set by the translation".into(),
                    ));
                }
            }
            x.set("flags", flags);
            let mut conds = Value::table();
            for c in &r.conditions {
                let mut y = Value::table();
                y.set("at", self.at(c.at));
                y.set("test", c.test.as_str());
                y.set("kind", kebab(c.pattern.kind));
                y.set("operand", c.pattern.operand.as_str());
                y.set("negated", c.pattern.negated);
                y.set("nocase", c.flags.contains(&CondFlag::NoCase));
                y.set("ornext", c.flags.contains(&CondFlag::OrNext));
                y.set("novary", c.flags.contains(&CondFlag::NoVary));
                if host_case_matters(c) {
                    self.findings.push(Finding::approximated(
                        Code::HostCase,
                        c.at,
                        "lighttpd lower-cases the Host header before anything reads it: this test sees \
                         `EXAMPLE.TEST` as `example.test`, so a client that sends upper-case letters gets \
                         what Apache answers for the lower-case name"
                            .into(),
                    ));
                }
                match c.pattern.kind {
                    crate::model::rewrite::CondKind::Regex => {
                        let re = self.regex(&c.pattern.operand, c.nocase(), c.at);
                        y.set("re", re);
                    }
                    crate::model::rewrite::CondKind::Expr => {
                        let e = self.expr(&c.pattern.operand, c.at);
                        y.set("expr", e);
                    }
                    crate::model::rewrite::CondKind::FileLink => {
                        self.findings.push(Finding::approximated(
                            Code::FileLinkTest,
                            c.at,
                            "-l: lighttpd's stat follows links, so the symbolic links are the ones \
                             found under the document roots at conversion time"
                                .into(),
                        ));
                    }
                    _ => {}
                }
                conds.push(y);
            }
            x.set("conds", conds);
            list.push(x);
        }
        list
    }

    fn access(&mut self, a: &AccessConfig) -> Value {
        let mut t = Value::table();
        if !a.require.is_empty() {
            let mut list = Value::table();
            for z in &a.require {
                let v = self.authz(z);
                list.push(v);
            }
            t.set("require", list);
        }
        if a.order.is_some() || !a.allow.is_empty() || !a.deny.is_empty() || a.satisfy.is_some() {
            let mut l = Value::table();
            l.set(
                "order",
                a.order.as_ref().map(|o| match o.value {
                    Order::DenyAllow => "deny,allow",
                    Order::AllowDeny => "allow,deny",
                    Order::MutualFailure => "mutual-failure",
                }),
            );
            // (where they are written: of a section's Order or Satisfy and its <Limit>'s, the
            // later decides)
            l.set("order_at", a.order.as_ref().map(|o| Value::Raw(o.span.start.to_string())));
            l.set("satisfy_at", a.satisfy.as_ref().map(|o| Value::Raw(o.span.start.to_string())));
            // Addresses and networks as APR reads them (lighten.lua's ip_matches takes the
            // canonical form); a host name needs DNS, so it never lets anybody in: an
            // Allow by name matches nobody, a Deny by name everybody (stricter, reported).
            let mut rules = |rs: &[crate::model::access::HostRule], deny: bool| {
                let mut v = Value::table();
                for r in rs {
                    let mut words = Vec::new();
                    for w in &r.from {
                        let lower = w.to_ascii_lowercase();
                        if lower == "all" || lower.starts_with("env=") {
                            words.push(w.clone());
                        } else if let Some(c) = canonical_ip(w) {
                            words.push(c);
                        } else {
                            self.findings.push(Finding::approximated(
                                Code::RequireDns,
                                r.at,
                                format!(
                                    "{} from {w}: a host name needs DNS; {} (stricter)",
                                    if deny { "Deny" } else { "Allow" },
                                    if deny {
                                        "taken as matching every client"
                                    } else {
                                        "it matches no client here"
                                    }
                                ),
                            ));
                            if deny {
                                words.push("all".into());
                            }
                        }
                    }
                    v.push(words);
                }
                v
            };
            let (allow, deny) = (rules(&a.allow, false), rules(&a.deny, true));
            l.set("allow", allow).set("deny", deny);
            l.set(
                "satisfy",
                a.satisfy.as_ref().map(|s| match s.value {
                    Satisfy::All => "all",
                    Satisfy::Any => "any",
                }),
            );
            if let Value::Table(f) = &mut l
                && f.is_empty()
            {
                f.push((Some("order".into()), Value::Str("deny,allow".into())));
            }
            t.set("legacy", l);
        }
        if a.auth_merging.as_ref().is_some_and(|m| m.value.eq_ignore_ascii_case("and")) {
            t.set("merging_and", true);
        }
        t.set("auth_type", a.auth_type.as_ref().map(|x| x.value.clone()));
        t.set("auth_name", a.auth_name.as_ref().map(|x| x.value.clone()));
        // The password file as lighttpd.conf names it: lighten.lua accepts a user only when
        // lighttpd checked it against this file (LIGHTEN_AUTH_FILE).
        t.set("auth_user_file", a.auth_user_file.as_ref().map(|x| (self.map_path)(&x.value)));
        // Who checks a login (mod_auth_basic merges each from the innermost section that
        // sets it): lighten.lua honours lighttpd's user only for the `file` provider and
        // without AuthBasicUseDigestAlgorithm, the htpasswd check lighttpd made.
        if a.auth_basic_provider.is_some() {
            t.set("auth_provider", if a.other_provider_at().is_some() { "other" } else { "file" });
        }
        if let Some(d) = &a.auth_basic_digest {
            t.set("auth_digest", d.value.to_ascii_lowercase());
        }
        if let Some(at) = a.other_provider_at().or(a.digest_at()) {
            self.findings.push(Finding::unsupported(
                Code::AuthProvider,
                at,
                "logins here are checked by another provider than an htpasswd file (AuthBasicProvider), or as \
                 digests (AuthBasicUseDigestAlgorithm); lighttpd checks only htpasswd files"
                    .into(),
                "no login is accepted there: 401",
            ));
        }
        t
    }

    fn authz(&mut self, z: &Authz) -> Value {
        let mut t = Value::table();
        match z {
            Authz::Container { combine, children, .. } => {
                t.set(
                    "combine",
                    match combine {
                        Combine::All => "all",
                        Combine::Any => "any",
                        Combine::None => "none",
                    },
                );
                let mut c = Value::table();
                for ch in children {
                    let v = self.authz(ch);
                    c.push(v);
                }
                t.set("children", if c.is_empty() { Value::Raw("{}".into()) } else { c });
            }
            Authz::Require { negated, provider, args, at } => {
                t.set("provider", provider.to_ascii_lowercase());
                let args: Vec<String> = if provider.eq_ignore_ascii_case("ip") {
                    args.iter().map(|w| canonical_ip(w).unwrap_or_else(|| w.clone())).collect()
                } else {
                    args.clone()
                };
                t.set("args", Value::Raw(Value::from(args.clone()).render(0)));
                t.set("negated", *negated);
                match provider.to_ascii_lowercase().as_str() {
                    "expr" => {
                        let v = self.expr(&args.join(" "), *at);
                        t.set("expr", v);
                    }
                    "host" | "forward-dns" => self.findings.push(Finding::approximated(
                        Code::RequireDns,
                        *at,
                        format!(
                            "Require {provider} needs DNS; it never grants here, and `Require not {provider}` refuses (stricter)"
                        ),
                    )),
                    "ssl-verify-client" => self.findings.push(Finding::unsupported(
                        Code::ClientCertificate,
                        *at,
                        "Require ssl-verify-client: client certificates are not translated".into(),
                        "it never grants: 403",
                    )),
                    "group" | "file-owner" | "file-group" => self.findings.push(Finding::unsupported(
                        Code::RequireProvider,
                        *at,
                        format!("Require {provider} is not translated"),
                        "no user satisfies it: 401/403",
                    )),
                    _ => {}
                }
            }
        }
        t
    }

    /// The whole site module.
    pub fn module(&mut self, model: &Model, trace: bool) -> Module {
        let server = self.scope(&model.server);
        let mut vhosts = Value::table();
        let hosts = super::conf::hosts(model);
        // Hosts whose data is the same but for where it was written (an IPv4 and an IPv6
        // vhost of one site) decide the same: lighten_hosts.lua may run either as the first.
        // (the first host of each text, by the text: a server of 1,000 accounts has 2,000)
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        self.same_data.clear();
        for (n, h) in hosts.iter().enumerate() {
            let v = self.vhost(model, *h);
            let key: String = v
                .render(0)
                .lines()
                .filter(|l| !l.trim_start().starts_with("at = "))
                .collect::<Vec<_>>()
                .join("\n");
            let first = *seen.entry(key).or_insert(n);
            self.same_data.push(first + 1);
            vhosts.push(v);
        }
        let mut out = String::new();
        out.push_str("-- Generated by lighten: the Apache configuration as data for lighten.lua.\n");
        out.push_str("-- Regenerate with `lighten convert`; do not edit.\n\n");
        out.push_str("local X = require(\"lighten\").X\n\n");
        out.push_str(
            "-- regular expressions, matched by PCRE2 with Apache's options (lighten_re)\nlocal R = {}\n",
        );
        for (i, (_, _, prog)) in self.regexes.iter().enumerate() {
            out.push_str(&format!("R[{}] = {}\n", i + 1, prog));
        }
        out.push_str("\n-- ap_expr conditions\nlocal E = {}\n");
        for (i, f) in self.exprs.iter().enumerate() {
            out.push_str(&format!("E[{}] = {}\n", i + 1, f));
        }
        let mut site = Value::table();
        let mut modules = Value::table();
        for m in &model.modules {
            if m.id == "autoindex_module" {
                modules.set("autoindex", true);
            }
        }
        site.set("trace", trace);
        // Where the configuration's folders are in the copy lighttpd serves (--sysroot, the
        // verify sandbox): a <DirectoryMatch> regex is matched against the path as Apache
        // has it, not the copy's.
        let mut places: Vec<(String, String)> = Vec::new();
        let mut add = |orig: &str| {
            let o = orig.trim_end_matches('/').to_string();
            let m = (self.map_path)(orig).trim_end_matches('/').to_string();
            if m != o && !places.iter().any(|(pm, _)| *pm == m) {
                places.push((m, o));
            }
        };
        fn dirs<'s>(s: &'s Scope, out: &mut Vec<&'s str>) {
            if let (ScopeKind::Directory, Some(Matcher::Path(p))) = (&s.kind, &s.matcher) {
                out.push(p);
            }
            for c in &s.children {
                dirs(c, out);
            }
            for a in &s.settings.aliases {
                out.push(&a.to);
            }
        }
        let mut found = Vec::new();
        dirs(&model.server, &mut found);
        for v in &model.vhosts {
            dirs(&v.scope, &mut found);
            if let Some(d) = &v.document_root {
                found.push(d);
            }
        }
        if let Some(d) = &model.server.settings.host().document_root {
            found.push(&d.value);
        }
        for h in &model.htaccess {
            found.push(&h.dir);
        }
        for p in found.into_iter().filter(|p| p.starts_with('/') && !p.contains(['*', '?', '[', '$'])) {
            add(p);
        }
        places.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.cmp(b)));
        if !places.is_empty() {
            let mut list = Value::table();
            for (m, o) in places {
                let mut pair = Value::table();
                pair.push(m.as_str());
                pair.push(o.as_str());
                list.push(pair);
            }
            site.set("unmap", list);
        }
        let deflate: Vec<String> = super::conf::deflate_types(model, &mut Vec::new());
        let mut d = Value::table();
        for t in deflate {
            d.set(&t, true);
        }
        site.set("deflate", if d.is_empty() { Value::Raw("{}".into()) } else { d });
        // The extensions lighttpd's fastcgi.server hands to PHP (lighttpd.conf): a script
        // whose name ends otherwise would be sent as a file, source and all.
        let mut exts = Value::table();
        for e in super::conf::php_extensions(model) {
            exts.set(&e, true);
        }
        site.set("php_exts", exts);
        let links = self.symlinks(model);
        site.set("symlinks", if links.is_empty() { Value::Raw("{}".into()) } else { links });
        site.set("modules", if modules.is_empty() { Value::Raw("{}".into()) } else { modules });
        site.set("mime", Value::Raw("require(\"lighten_mime\")".into()));
        site.set("server", server);
        site.set("vhosts", vhosts);
        Module { head: out, site }
    }

    fn vhost(&mut self, model: &Model, i: Option<usize>) -> Value {
        let mut t = Value::table();
        let (scope, name, docroot, canonical) = match i {
            Some(i) => {
                let v = &model.vhosts[i];
                (
                    &v.scope,
                    v.server_name.clone(),
                    v.document_root.clone(),
                    v.use_canonical_name.eq_ignore_ascii_case("on"),
                )
            }
            None => {
                let h = model.server.settings.host();
                (
                    &model.server,
                    h.server_name.as_ref().map(|s| s.value.clone()),
                    h.document_root.as_ref().map(|d| d.value.clone()),
                    h.use_canonical_name.as_ref().is_some_and(|u| u.value.eq_ignore_ascii_case("on")),
                )
            }
        };
        t.set("name", name);
        t.set("server_admin", crate::eval::server_admin(model, i));
        t.set("docroot", docroot.map(|d| self.path(&d)));
        t.set("canonical", canonical);
        // IndexIgnore (conf::index_ignore): a listing showing such a name is refused
        if let Some(ignore) = super::conf::index_ignore_list(model, i) {
            t.set("index_ignore", ignore);
        }
        if model.keeps_slashes(i) {
            t.set("keep_slashes", true);
        }
        // The main server's own scope is `server`; as a host it adds nothing on top.
        let s = if i.is_some() {
            self.scope(scope)
        } else {
            Value::Raw("{ kind = \"virtual-host\", settings = {} }".into())
        };
        t.set("scope", s);
        // Server-context rules in force (inheritance resolved here).
        let rules = crate::eval::server_rules(model, i);
        let r = self.rules(&rules);
        t.set("server_rules", if r.is_empty() { Value::Raw("{}".into()) } else { r });
        // <Directory> sections by depth, main server before vhost.
        let sections =
            crate::model::htaccess::directory_sections(&model.server, i.map(|i| &model.vhosts[i].scope));
        let mut ds = Value::table();
        for (sec, path) in sections {
            let mapped = self.path(&path);
            let p = mapped.trim_end_matches('/').to_string();
            let depth = if p.is_empty() { 1 } else { p.matches('/').count() + 1 };
            let mut x = Value::table();
            x.set("path", p.clone()).set("depth", depth as i64);
            if p.contains(['*', '?', '[']) {
                let re = glob_to_regex(&p, true);
                let v = self.regex(
                    &format!("^{}$", re.trim_start_matches('^').trim_end_matches('$')),
                    false,
                    sec.at,
                );
                x.set("glob", v).set("segments", p.split('/').count() as i64);
            }
            let sv = self.scope(sec);
            x.set("scope", sv);
            ds.push(x);
        }
        t.set("dir_sections", if ds.is_empty() { Value::Raw("{}".into()) } else { ds });
        let mut hs = Value::table();
        for h in model.htaccess.iter().filter(|h| h.host_ids.contains(&i)) {
            let mut x = Value::table();
            match h.status {
                crate::model::HtaccessStatus::Applied => {
                    if let Some(s) = &h.scope {
                        let v = self.scope(s);
                        x.set("scope", v);
                    }
                }
                crate::model::HtaccessStatus::Broken => {
                    x.set("broken", true);
                }
                _ => continue,
            }
            let dir = self.path(if h.dir.is_empty() { "/" } else { &h.dir });
            let dir = dir.trim_end_matches('/').to_string();
            hs.set(&dir, x);
        }
        t.set("htaccess", if hs.is_empty() { Value::Raw("{}".into()) } else { hs });
        // ErrorDocuments of the server and vhost.
        let mut eds = Value::table();
        let mut scopes = vec![&model.server];
        if let Some(i) = i {
            scopes.push(&model.vhosts[i].scope);
        }
        let mut by_status = std::collections::BTreeMap::new();
        for s in scopes {
            for e in &s.settings.error_documents {
                by_status.insert(e.status, e);
            }
        }
        for (status, e) in by_status {
            let mut x = Value::table();
            let (kind, value) = match &e.action {
                ErrorAction::Local(p) => ("local", Some(p.clone())),
                ErrorAction::Remote(u) => ("remote", Some(u.clone())),
                ErrorAction::Text(t) => ("text", Some(t.clone())),
                ErrorAction::Default => ("default", None),
            };
            x.set("status", status).set("kind", kind).set("value", value);
            eds.set(&format!("_{status}"), x);
        }
        t.set("error_docs", Value::Raw(error_docs_table(&eds)));
        let maps = self.maps(model, i);
        t.set("maps", maps);
        // Symbolic links Apache refuses (false) or, with lighttpd's follow-symlink off, the
        // targets of those it follows (translate::links).
        if let Some(l) = self.links.get(i.unwrap_or(model.vhosts.len())) {
            t.set("links", l.lua());
        }
        t
    }

    /// Symbolic links under the document roots (for `-l`), as lighttpd will see their
    /// paths; the walk stops after 100,000 entries.
    fn symlinks(&mut self, model: &Model) -> Value {
        let mut roots: Vec<String> = model.vhosts.iter().filter_map(|v| v.document_root.clone()).collect();
        if let Some(d) = &model.server.settings.host().document_root {
            roots.push(d.value.clone());
        }
        roots.sort();
        roots.dedup();
        let mut t = Value::table();
        let mut seen = 0usize;
        for root in roots {
            let host_root = self.sysroot.host_path(&root);
            for e in walkdir::WalkDir::new(&host_root).follow_links(false).sort_by_file_name() {
                let Ok(e) = e else { continue };
                seen += 1;
                if seen > 100_000 {
                    break;
                }
                if e.path_is_symlink() {
                    let rel = e.path().strip_prefix(&host_root).unwrap_or(e.path());
                    let apache = format!("{}/{}", root.trim_end_matches('/'), rel.to_string_lossy());
                    t.set(&self.path(&apache), true);
                }
            }
        }
        t
    }

    fn maps(&mut self, model: &Model, i: Option<usize>) -> Value {
        let mut t = Value::table();
        {
            for m in crate::eval::rewrite_maps(model, i) {
                let mut x = Value::table();
                x.set("kind", m.kind.as_str()).set("source", m.source.as_str());
                match m.kind.as_str() {
                    "int" => {}
                    "txt" => {
                        let text = self.read(&m.source);
                        let mut entries = Value::table();
                        let mut seen = std::collections::BTreeSet::new();
                        for line in text.lines() {
                            let line = line.trim();
                            if line.is_empty() || line.starts_with('#') {
                                continue;
                            }
                            let mut parts = line.split_whitespace();
                            if let (Some(k), Some(v)) = (parts.next(), parts.next())
                                && seen.insert(k.to_string())
                            {
                                entries.set(k, v);
                            }
                        }
                        x.set("entries", if entries.is_empty() { Value::Raw("{}".into()) } else { entries });
                    }
                    other => {
                        self.findings.push(Finding::unsupported(
                            Code::RewriteMapType,
                            m.at,
                            format!("RewriteMap {other}: is not translated"),
                            "rules that consult the map answer 403",
                        ));
                    }
                }
                t.set(&m.name, x);
            }
        }
        if t.is_empty() { Value::Raw("{}".into()) } else { t }
    }
}

/// Error documents keyed by status: `{ [404] = {...} }`.
fn error_docs_table(eds: &Value) -> String {
    let Value::Table(fields) = eds else { return "{}".into() };
    if fields.is_empty() {
        return "{}".into();
    }
    let parts: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("[{}] = {}", k.as_deref().unwrap_or("_0").trim_start_matches('_'), v.render(4)))
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

fn spec(s: &crate::model::expires::ExpiresSpec) -> Value {
    let mut t = Value::table();
    t.set(
        "base",
        match s.base {
            crate::model::expires::ExpiresBase::Access => "access",
            crate::model::expires::ExpiresBase::Modification => "modification",
        },
    );
    t.set("seconds", s.seconds as i64);
    t
}

fn handler(h: &Handler, loaded: &dyn Fn(&str) -> bool) -> Value {
    let mut t = Value::table();
    if h.cancels() {
        // SetHandler None: the forced handler in force is cancelled (Handler::cancels)
        t.set("none", true);
        return t;
    }
    if h.served_by_default(loaded) {
        // No loaded module claims it: Apache's default handler serves the file.
        t.set("default", true);
        return t;
    }
    match h {
        Handler::FastCgi { .. } | Handler::ModPhp { .. } | Handler::Fcgid => {
            t.set("backend", true);
        }
        Handler::Default { .. } => {
            t.set("default", true);
        }
        Handler::Other { name } => {
            t.set("other", name.as_str());
        }
    }
    t
}

/// A kebab-case name as serde writes the enum (`file-exists`, `virtual-host`).
fn kebab<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v).ok().and_then(|j| j.as_str().map(str::to_string)).unwrap_or_default()
}

/// fnmatch-style wildcards (`*`, `?`, `[...]`) as an anchored regex; `slash` says whether
/// `*` stops at `/` (paths) or not.
pub fn glob_to_regex(glob: &str, slash: bool) -> String {
    let mut out = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(if slash { "[^/]*" } else { ".*" }),
            '?' => out.push_str(if slash { "[^/]" } else { "." }),
            '[' => {
                // apr_fnmatch with APR_FNM_PATHNAME: a class never matches `/` either
                if slash {
                    out.push_str("(?!/)");
                }
                out.push('[');
                if chars.peek() == Some(&'!') {
                    chars.next();
                    out.push('^');
                }
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    if d == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(d);
                    }
                }
                out.push(']');
            }
            // apr_fnmatch: a backslash takes the next character literally.
            '\\' if chars.peek().is_some() => {
                let d = chars.next().unwrap_or('\\');
                if d.is_ascii_alphanumeric() || d == '/' || d == '_' || d == '-' {
                    out.push(d);
                } else {
                    out.push('\\');
                    out.push(d);
                }
            }
            c if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' => out.push(c),
            c => {
                out.push('\\');
                out.push(c);
            }
        }
    }
    out.push('$');
    out
}

/// Whether a condition compares the Host header as sent, case-sensitively, with a pattern
/// that has letters: lighttpd hands the Lua the Host in lower case only.
fn host_case_matters(c: &crate::model::rewrite::RewriteCond) -> bool {
    use crate::model::rewrite::CondKind::*;
    let test = c.test.to_ascii_lowercase();
    (test.contains("%{http_host}") || test.contains("%{http:host}"))
        && !c.nocase()
        && matches!(c.pattern.kind, Regex | StrLt | StrLe | StrEq | StrGt | StrGe)
        && c.pattern.operand.bytes().any(|b| b.is_ascii_alphabetic())
}

/// An address or network of Allow/Deny/Require ip as APR reads it (`model::subnet`), in the
/// form lighten.lua's `ip_matches` takes; None for a host name.
fn canonical_ip(word: &str) -> Option<String> {
    crate::model::subnet::parse_word(word).ok().map(|s| s.lua_form())
}
