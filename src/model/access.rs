//! Access control: `Require` with its containers, the legacy `Order`/`Allow`/`Deny`/
//! `Satisfy` of mod_access_compat, and Basic authentication settings.
//!
//! Kept as written, per scope; deciding who gets in (merging across sections, legacy and
//! new rules together, `<Limit>` methods) is the evaluator's and translator's job.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/mod_authz_core.html>,
//! <https://httpd.apache.org/docs/2.4/mod/mod_access_compat.html> and
//! <https://httpd.apache.org/docs/2.4/mod/mod_authn_core.html>.

use super::Spanned;
use super::settings::ReadCx;
use crate::config::{Item, ItemKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct AccessConfig {
    /// Top-level `Require` lines and containers, an implicit `<RequireAny>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub require: Vec<Authz>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<Spanned<Order>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<HostRule>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<HostRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub satisfy: Option<Spanned<Satisfy>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_type: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_name: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_user_file: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_group_file: Option<Spanned<String>>,
    /// `AuthBasicProvider`'s providers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_basic_provider: Option<Spanned<Vec<String>>>,
    /// `AuthBasicUseDigestAlgorithm` (`MD5` or `Off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_basic_digest: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_merging: Option<Spanned<String>>,
}

impl AccessConfig {
    /// Where this section names a provider other than `file` alone (`AuthBasicProvider`).
    pub fn other_provider_at(&self) -> Option<Span> {
        self.auth_basic_provider
            .as_ref()
            .filter(|p| p.value.is_empty() || p.value.iter().any(|x| !x.eq_ignore_ascii_case("file")))
            .map(|p| p.span)
    }

    /// Where this section has the password file read as digests
    /// (`AuthBasicUseDigestAlgorithm` other than `Off`).
    pub fn digest_at(&self) -> Option<Span> {
        self.auth_basic_digest.as_ref().filter(|d| !d.value.eq_ignore_ascii_case("off")).map(|d| d.span)
    }

    /// Whether a login here is checked otherwise than against `AuthUserFile` (an htpasswd
    /// file), the one check lighttpd's mod_auth makes for the converted site. Only this
    /// section's own settings; a folder merges them from its sections.
    pub fn checks_other_than_file(&self) -> bool {
        self.other_provider_at().or(self.digest_at()).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.require.is_empty()
            && self.order.is_none()
            && self.allow.is_empty()
            && self.deny.is_empty()
            && self.satisfy.is_none()
            && self.auth_type.is_none()
            && self.auth_name.is_none()
            && self.auth_user_file.is_none()
            && self.auth_group_file.is_none()
            && self.auth_basic_provider.is_none()
            && self.auth_basic_digest.is_none()
            && self.auth_merging.is_none()
    }
}

/// A node of mod_authz_core's tree.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Authz {
    Require {
        /// `Require not ...`
        negated: bool,
        /// The provider: `all`, `ip`, `host`, `valid-user`, `user`, `group`, `env`,
        /// `method`, `expr`, `local`, `forward-dns`, `file-owner`, `file-group`.
        provider: String,
        args: Vec<String>,
        at: Span,
    },
    /// `<RequireAll>`, `<RequireAny>`, `<RequireNone>`.
    Container { combine: Combine, children: Vec<Authz>, at: Span },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Combine {
    All,
    Any,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    DenyAllow,
    AllowDeny,
    MutualFailure,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Satisfy {
    All,
    Any,
}

/// `Allow from ...` / `Deny from ...`: hosts, networks, `all`, or `env=[!]VAR`.
#[derive(Clone, Debug, Serialize)]
pub struct HostRule {
    pub from: Vec<String>,
    pub at: Span,
}

/// Providers mod_authz_* register on Debian 12 (mod_authz_core, _host, _user, _groupfile,
/// _owner, _dbm, _dbd, _ldap), and mod_ssl's (`Require ssl`, `Require ssl-verify-client`).
const PROVIDERS: &[&str] = &[
    "all",
    "env",
    "method",
    "expr",
    "ip",
    "host",
    "forward-dns",
    "local",
    "user",
    "valid-user",
    "group",
    "file-owner",
    "file-group",
    "dbm-group",
    "dbd-group",
    "ldap-user",
    "ldap-group",
    "ldap-dn",
    "ldap-attribute",
    "ldap-filter",
    "ldap-search",
    // mod_ssl's
    "ssl",
    "ssl-verify-client",
];

/// A `Require` line directly in a section or at the top level of a scope (an implicit
/// `<RequireAny>`): `within` is that section's kind.
pub fn read_require(item: &Item, cx: &mut ReadCx) -> Option<Authz> {
    read_require_in(item, cx, Combine::Any)
}

fn read_require_in(item: &Item, cx: &mut ReadCx, within: Combine) -> Option<Authz> {
    let mut args: Vec<String> = item.values().iter().map(|s| s.to_string()).collect();
    let negated = args.first().is_some_and(|a| a.eq_ignore_ascii_case("not"));
    if negated {
        args.remove(0);
    }
    if args.is_empty() {
        cx.diags.push(Diagnostic::new(
            Code::WrongArguments,
            item.span,
            "Require requires at least one argument",
        ));
        return None;
    }
    let provider = args.remove(0).to_ascii_lowercase();
    if !PROVIDERS.contains(&provider.as_str()) {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.args[usize::from(negated)].span,
            format!("unknown authz provider '{provider}'"),
        ));
        return None;
    }
    if provider == "all" {
        // (Apache compares the whole rest of the line: `granted extra` is refused)
        let v = args.first().filter(|_| args.len() == 1).map(|a| a.to_ascii_lowercase());
        if !matches!(v.as_deref(), Some("granted") | Some("denied")) {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.span,
                "Require all must be followed by 'granted' or 'denied'",
            ));
            return None;
        }
        if negated {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.span,
                "negative Require directive has no effect with 'all'",
            ));
            return None;
        }
    }
    // The providers that read their arguments at startup (mod_authz_core's method,
    // mod_authz_host's ip) refuse what they cannot read: at startup, or 500 for an .htaccess.
    for a in &args {
        let why = match provider.as_str() {
            "method" if !crate::eval::APACHE_METHODS.contains(&a.as_str()) && !cx.registered.contains(a) => {
                Some(format!("Invalid Method '{a}'"))
            }
            "ip" => match super::subnet::parse_word(a) {
                Ok(_) => None,
                Err(super::subnet::SubnetError::NotAnAddress) => {
                    Some(format!("ip address '{a}' appears to be invalid"))
                }
                Err(e) => Some(format!("ip address '{a}' appears to be invalid: {}", e.message())),
            },
            _ => None,
        };
        if let Some(why) = why {
            cx.diags.push(Diagnostic::new(Code::BadArgument, item.span, why));
            return None;
        }
    }
    // add_authz_provider(): a negated line never decides in an OR section (<RequireAny>,
    // <RequireNone>, the top level), so Apache refuses it: at startup, or with 500 for
    // an .htaccess.
    if negated && within != Combine::All {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            format!("negative Require directive has no effect in {} directive", within.section()),
        ));
        return None;
    }
    Some(Authz::Require { negated, provider, args, at: item.span })
}

impl Combine {
    fn section(self) -> &'static str {
        match self {
            Combine::All => "<RequireAll>",
            Combine::Any => "<RequireAny>",
            Combine::None => "<RequireNone>",
        }
    }
}

/// Reads a `<RequireAll|Any|None>` section at the top level of a scope, and everything
/// inside it.
pub fn read_container(item: &Item, cx: &mut ReadCx) -> Option<Authz> {
    read_container_in(item, cx, Combine::Any)
}

fn read_container_in(item: &Item, cx: &mut ReadCx, within: Combine) -> Option<Authz> {
    let combine = match item.name.value.to_ascii_lowercase().as_str() {
        "requireall" => Combine::All,
        "requireany" => Combine::Any,
        "requirenone" => Combine::None,
        _ => return None,
    };
    let mut children = Vec::new();
    collect(item.children(), cx, &mut children, combine);
    // add_authz_section(): a <RequireNone> is negated, and a negated section never
    // decides in an OR section (the top level, <RequireAny>, <RequireNone>): refused.
    if combine == Combine::None && within != Combine::All && !children.is_empty() {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            format!("<{}> directive has no effect in {} directive", item.name.value, within.section()),
        ));
        return None;
    }
    if children.is_empty() {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            format!("<{}> has no authorization directives inside", item.name.value),
        ));
    }
    // authz_core_check_section() at startup (not for a .htaccess, which then decides
    // nothing: 403): a <RequireAll> whose children are all negative (`Require not`, and a
    // <RequireNone>, whose children De Morgan's rule makes negative) never grants.
    let negative = |c: &Authz| match c {
        Authz::Require { negated, .. } => *negated,
        Authz::Container { combine, .. } => *combine == Combine::None,
    };
    if combine == Combine::All && !cx.htaccess && !children.is_empty() && children.iter().all(negative) {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            "<RequireAll> directive contains only negative authorization directives",
        ));
    }
    Some(Authz::Container { combine, children, at: item.span })
}

fn collect(items: &[Item], cx: &mut ReadCx, out: &mut Vec<Authz>, within: Combine) {
    for it in items {
        if !it.enabled {
            continue;
        }
        match &it.kind {
            ItemKind::Include { children, .. } => collect(children, cx, out, within),
            ItemKind::Section { children, condition: Some(c), .. } if c.value.is_some() => {
                collect(children, cx, out, within)
            }
            ItemKind::Section { .. } => {
                if let Some(a) = read_container_in(it, cx, within) {
                    out.push(a);
                }
            }
            ItemKind::Directive if it.is("Require") => {
                if let Some(a) = read_require_in(it, cx, within) {
                    out.push(a);
                }
            }
            ItemKind::Directive => {}
        }
    }
}

pub fn read_order(item: &Item, cx: &mut ReadCx) -> Option<Spanned<Order>> {
    let v = item.arg(0)?.to_ascii_lowercase();
    let order = match v.as_str() {
        "deny,allow" => Order::DenyAllow,
        "allow,deny" => Order::AllowDeny,
        "mutual-failure" => Order::MutualFailure,
        _ => {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.args[0].span,
                "unknown order: use 'allow,deny', 'deny,allow' or 'mutual-failure' (no spaces)",
            ));
            return None;
        }
    };
    Some(Spanned::new(order, item.span))
}

pub fn read_host_rule(item: &Item, cx: &mut ReadCx) -> Option<HostRule> {
    let vals = item.values();
    if !vals.first().is_some_and(|f| f.eq_ignore_ascii_case("from")) || vals.len() < 2 {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            format!("{} must be followed by 'from' and hosts", item.name.value),
        ));
        return None;
    }
    // mod_access_compat's allow_cmd(): `all`, `env=[!]VAR`, an address or network as APR
    // reads it, else a host name; what looks like an address but is none is refused.
    for (w, word) in vals[1..].iter().zip(&item.args[1..]) {
        let lower = w.to_ascii_lowercase();
        if lower == "all" || lower.starts_with("env=") {
            continue;
        }
        let why = match super::subnet::parse_word(w) {
            Ok(_) => None,
            Err(super::subnet::SubnetError::NotAnAddress) if !w.contains('/') => None,
            Err(e) => Some(e.message()),
        };
        if let Some(why) = why {
            cx.diags.push(Diagnostic::new(Code::BadArgument, word.span, format!("{why} ({w})")));
            return None;
        }
    }
    Some(HostRule { from: vals[1..].iter().map(|s| s.to_string()).collect(), at: item.span })
}

pub fn read_satisfy(item: &Item, cx: &mut ReadCx) -> Option<Spanned<Satisfy>> {
    let v = item.arg(0)?.to_ascii_lowercase();
    let s = match v.as_str() {
        "all" => Satisfy::All,
        "any" => Satisfy::Any,
        _ => {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.args[0].span,
                "Satisfy either 'any' or 'all'",
            ));
            return None;
        }
    };
    Some(Spanned::new(s, item.span))
}
