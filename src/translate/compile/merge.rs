//! Apache's per-directory merge, at conversion time, for what the compiled tier carries:
//! each module merges its own settings the way lighten's evaluator and lighten.lua do
//! (`apply` there), one scope after another in merge order.

use crate::model::access::{AccessConfig, Authz, Combine, Order, Satisfy};
use crate::model::alias::Redirect;
use crate::model::dir::ErrorDocument;
use crate::model::env::EnvRule;
use crate::model::expires::ExpiresSpec;
use crate::model::headers::HeaderRule;
use crate::model::mime::Handler;
use crate::model::{Scope, ScopeKind};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::eval::dirconf::opt;
use crate::eval::dirconf::option_bit;

pub use crate::eval::dirconf::RewriteDir as Rewrite;

#[derive(Clone, Debug)]
pub struct Merged<'m> {
    pub rewrite: Option<Rewrite<'m>>,
    pub authz: Option<&'m [Authz]>,
    /// Require lists of enclosing sections that must grant too (`AuthMerging And`).
    pub authz_and: Vec<&'m [Authz]>,
    pub legacy: Option<&'m AccessConfig>,
    /// AuthType, AuthName and AuthUserFile, each the last in merge order.
    pub auth_type: Option<&'m str>,
    pub auth_name: Option<&'m str>,
    pub auth_user_file: Option<&'m str>,
    pub options: u8,
    pub index: Option<&'m [String]>,
    pub slash: bool,
    pub set_handler: Option<&'m Handler>,
    pub add_handlers: Vec<(String, &'m Handler)>,
    pub force_type: Option<&'m str>,
    /// Extension to type; `None` for RemoveType.
    pub types: BTreeMap<String, Option<String>>,
    pub encodings: BTreeMap<String, String>,
    pub charsets: BTreeMap<String, String>,
    pub default_charset: Option<&'m str>,
    pub etag_none: bool,
    pub headers: Vec<&'m HeaderRule>,
    /// SetEnvIf and BrowserMatch of the sections and .htaccess files, in merge order.
    pub env: Vec<&'m EnvRule>,
    /// SetEnv (`Some`) and UnsetEnv (`None`), for what PHP receives.
    pub setenv: Vec<(String, Option<String>)>,
    pub expires_active: bool,
    pub expires_default: Option<ExpiresSpec>,
    pub expires_by_type: BTreeMap<String, ExpiresSpec>,
    /// ErrorDocument by status: a later scope's replaces an earlier one's.
    pub error_docs: BTreeMap<u16, &'m ErrorDocument>,
    /// Redirect and RedirectMatch of the sections and .htaccess files: a section's before
    /// those it inherits, as mod_alias merges them.
    pub redirects: Vec<&'m Redirect>,
    /// SSLRequireSSL in a scope of the chain (it cannot be switched off below).
    pub require_ssl: bool,
    /// A folder outside the document root and the alias targets (answers 404).
    pub outside: bool,
}

impl Default for Merged<'_> {
    fn default() -> Self {
        Merged {
            rewrite: None,
            authz: None,
            authz_and: Vec::new(),
            legacy: None,
            auth_type: None,
            auth_name: None,
            auth_user_file: None,
            options: opt::SYM_LINKS,
            index: None,
            slash: true,
            set_handler: None,
            add_handlers: Vec::new(),
            force_type: None,
            types: BTreeMap::new(),
            encodings: BTreeMap::new(),
            charsets: BTreeMap::new(),
            default_charset: None,
            etag_none: false,
            headers: Vec::new(),
            env: Vec::new(),
            setenv: Vec::new(),
            expires_active: false,
            expires_default: None,
            expires_by_type: BTreeMap::new(),
            error_docs: BTreeMap::new(),
            redirects: Vec::new(),
            require_ssl: false,
            outside: false,
        }
    }
}

fn ext(e: &str) -> String {
    e.trim_start_matches('.').to_ascii_lowercase()
}

/// Merges one scope; `dir` is the directory its rules are relative to ("/var/www/").
pub fn apply<'m>(m: &mut Merged<'m>, s: &'m Scope, dir: &str) {
    let st = &s.settings;
    // mod_rewrite's per-directory merge, as eval::dirconf has it.
    let server_level = matches!(s.kind, ScopeKind::Server | ScopeKind::VirtualHost);
    m.rewrite = crate::eval::dirconf::merge_rewrite(m.rewrite.take(), st.rewrite(), server_level, dir);
    let a = st.access();
    if !a.require.is_empty() {
        // AuthMerging And: what was in force must grant as well (Or is taken as Off).
        let and = a.auth_merging.as_ref().is_some_and(|x| x.value.eq_ignore_ascii_case("and"));
        match m.authz {
            Some(prev) if and => m.authz_and.push(prev),
            _ if !and => m.authz_and.clear(),
            _ => {}
        }
        m.authz = Some(&a.require);
    }
    if a.order.is_some() || !a.allow.is_empty() || !a.deny.is_empty() || a.satisfy.is_some() {
        m.legacy = Some(a);
    }
    if let Some(t) = &a.auth_type {
        m.auth_type = Some(&t.value);
    }
    if let Some(n) = &a.auth_name {
        m.auth_name = Some(&n.value);
    }
    if let Some(f) = &a.auth_user_file {
        m.auth_user_file = Some(&f.value);
    }
    for line in &st.options {
        if line.changes.iter().all(|(sign, _)| *sign == '=') {
            m.options = 0;
        }
        for (sign, name) in &line.changes {
            let bit = option_bit(name);
            if *sign == '-' {
                m.options &= !bit;
            } else {
                m.options |= bit;
            }
        }
    }
    if let Some(i) = &st.directory_index {
        m.index = Some(&i.value);
    }
    if let Some(d) = &st.directory_slash {
        m.slash = d.value;
    }
    let mime = st.mime();
    for h in &mime.handlers {
        if h.extensions.is_empty() {
            m.set_handler = (!h.handler.cancels()).then_some(&h.handler);
        } else {
            for e in &h.extensions {
                m.add_handlers.push((ext(e), &h.handler));
            }
        }
    }
    for r in &mime.remove_handlers {
        for e in &r.value {
            let e = ext(e);
            m.add_handlers.retain(|(x, _)| *x != e);
        }
    }
    if let Some(f) = &mime.force_type {
        m.force_type = Some(&f.value);
    }
    for x in &mime.types {
        for e in &x.extensions {
            m.types.insert(ext(e), Some(x.value.clone()));
        }
    }
    for r in &mime.remove_types {
        for e in &r.value {
            m.types.insert(ext(e), None);
        }
    }
    for x in &mime.encodings {
        for e in &x.extensions {
            m.encodings.insert(ext(e), x.value.clone());
        }
    }
    for x in &mime.charsets {
        for e in &x.extensions {
            m.charsets.insert(ext(e), x.value.clone());
        }
    }
    if let Some(c) = &mime.default_charset {
        m.default_charset = Some(&c.value);
    }
    if let Some(fe) = &mime.file_etag
        && fe.value.iter().any(|v| v.eq_ignore_ascii_case("none"))
    {
        m.etag_none = true;
    }
    m.headers.extend(st.headers.iter().filter(|h| !h.request));
    if !server_level {
        m.env.extend(st.env.iter().filter(|r| is_setenvif(r)));
        m.redirects.splice(0..0, st.redirects.iter());
    }
    for r in &st.env {
        match r.directive.to_ascii_lowercase().as_str() {
            "setenv" => {
                for a in &r.assignments {
                    let (n, v) = a.split_once('=').unwrap_or((a.as_str(), ""));
                    m.setenv.push((n.to_string(), Some(v.to_string())));
                }
            }
            "unsetenv" => m.setenv.extend(r.assignments.iter().map(|n| (n.clone(), None))),
            _ => {}
        }
    }
    let ex = st.expires();
    if let Some(a) = &ex.active {
        m.expires_active = a.value;
    }
    if let Some(d) = &ex.default {
        m.expires_default = Some(d.value);
    }
    for b in &ex.by_type {
        m.expires_by_type.insert(b.mime.clone(), b.spec);
    }
    for e in &st.error_documents {
        m.error_docs.insert(e.status, e);
    }
    if s.directives.iter().any(|d| d.enabled && d.name.eq_ignore_ascii_case("SSLRequireSSL")) {
        m.require_ssl = true;
    }
}

/// SetEnvIf, SetEnvIfNoCase, BrowserMatch, BrowserMatchNoCase (not SetEnvIfExpr).
pub fn is_setenvif(r: &EnvRule) -> bool {
    let d = r.directive.to_ascii_lowercase();
    (d.starts_with("setenvif") && d != "setenvifexpr") || d == "browsermatch" || d == "browsermatchnocase"
}

/// `Require all granted|denied` and containers of them, decided without a request:
/// `Some(true)` granted, `Some(false)` denied, `None` when it depends on the request.
pub fn static_authz(z: &Authz) -> Option<bool> {
    match z {
        Authz::Require { negated, provider, args, .. } => {
            if !provider.eq_ignore_ascii_case("all") {
                return None;
            }
            let granted = args.first().is_some_and(|a| a.eq_ignore_ascii_case("granted"));
            Some(granted != *negated)
        }
        // A <RequireNone> that grants nothing decides nothing (authz_core's neutral), which
        // is neither a grant nor a refusal: not decided here (the interpreter's access).
        Authz::Container { combine: Combine::None, .. } => None,
        Authz::Container { combine, children, .. } => {
            let results: Vec<bool> = children.iter().map(static_authz).collect::<Option<_>>()?;
            Some(match combine {
                Combine::Any => results.iter().any(|r| *r),
                _ => results.iter().all(|r| *r),
            })
        }
    }
}

/// What access control decides for a merged configuration: nothing to check, a status
/// whatever the request, or a login (`Require valid-user`, `Require user ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Open,
    Denied(u16),
    /// The users that pass (`None`: any valid user); a login counts only when lighttpd's
    /// mod_auth checked it against `file`, the folder's AuthUserFile.  Without a user
    /// (or with another), 401 with `realm`; `None` when AuthType or AuthName is missing
    /// (Apache answers 500 then).
    Login {
        users: Option<BTreeSet<String>>,
        file: Option<String>,
        realm: Option<String>,
    },
}

/// What one Require list (an implicit `<RequireAny>`) grants: everybody, nobody, or the
/// users it names (`None`: any valid user).  Only lists of `Require all`, `valid-user`,
/// `user` and containers decided without a request (as check_scope lets in).
fn list_grants(list: &[Authz]) -> Option<Option<Option<BTreeSet<String>>>> {
    if list.iter().any(|z| static_authz(z) == Some(true)) {
        return Some(None);
    }
    let mut any = false;
    let mut users = BTreeSet::new();
    for z in list {
        if let Authz::Require { negated: false, provider, args, .. } = z {
            match provider.to_ascii_lowercase().as_str() {
                "valid-user" => any = true,
                "user" => users.extend(args.iter().cloned()),
                _ => {}
            }
        }
    }
    if any {
        Some(Some(None))
    } else if users.is_empty() {
        None
    } else {
        Some(Some(Some(users)))
    }
}

impl Merged<'_> {
    /// What access control answers (as lighten.lua's `access` decides it), for
    /// configurations whose rules need no request but, at most, the user.
    pub fn access(&self) -> Access {
        let legacy = self.legacy.map(|l| {
            // `from all` only (checked before compiling).
            let allow = !l.allow.is_empty();
            let deny = !l.deny.is_empty();
            let any = l.satisfy.as_ref().is_some_and(|s| s.value == Satisfy::Any);
            let allows = match l.order.as_ref().map(|o| o.value) {
                None | Some(Order::DenyAllow) => !deny || allow,
                _ => allow && !deny,
            };
            (allows, any)
        });
        match legacy {
            Some((true, true)) => return Access::Open,
            Some((false, false)) => return Access::Denied(403),
            _ => {}
        }
        let Some(list) = self.authz else { return Access::Open };
        // AuthMerging And: every list in force must grant; the users are those all let in.
        let mut users: Option<Option<BTreeSet<String>>> = None;
        for l in self.authz_and.iter().copied().chain(std::iter::once(list)) {
            match list_grants(l) {
                None => return Access::Denied(403),
                Some(None) => {}
                Some(Some(these)) => {
                    users = Some(match (users.take().flatten(), these) {
                        (None, t) => t,
                        (Some(u), None) => Some(u),
                        (Some(u), Some(t)) => Some(u.intersection(&t).cloned().collect()),
                    });
                }
            }
        }
        match users {
            None => Access::Open,
            Some(users) => Access::Login {
                users,
                file: self.auth_user_file.map(str::to_string),
                realm: self.auth_type.and(self.auth_name).map(str::to_string),
            },
        }
    }
}
