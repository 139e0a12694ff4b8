//! Who gets in: mod_authz_core's `Require` tree and mod_access_compat's
//! `Order`/`Allow`/`Deny`/`Satisfy`, combined as Apache 2.4 combines them.
//!
//! | legacy host check | Require result | Satisfy All | Satisfy Any |
//! |---|---|---|---|
//! | allows | granted | 200 | 200 |
//! | allows | denied / needs a user | 403 / 401 | 200 |
//! | denies | granted | 403 | 200 |
//! | denies | needs a user | 403 | 401 |
//!
//! Users are never authenticated here: a request that needs one gets 401 when an
//! AuthType is set (403 otherwise).

use super::dirconf::DirConfig;
use crate::model::access::{Authz, Combine, Order, Satisfy};
use std::collections::BTreeMap;
use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Granted,
    Denied,
    NeedsUser,
    /// Decides nothing (authz_core's AUTHZ_NEUTRAL): a negated line that does not refuse
    /// (`Require not user bob` without a user, or for alice), a section of only such
    /// lines. Left out by the section around it; refused (403) at the top.
    Neutral,
}

pub struct Client<'a> {
    pub ip: IpAddr,
    pub method: &'a str,
    pub env: &'a BTreeMap<String, String>,
    pub has_credentials: bool,
    /// What each `Require expr` decides for this request (by its text); one missing is
    /// one that cannot be decided, which never lets anybody in, negated or not.
    pub exprs: &'a BTreeMap<String, bool>,
}

/// The texts of the `Require expr` lines in force (for [`Client::exprs`]).
pub fn expr_texts(dc: &DirConfig) -> Vec<String> {
    fn walk(z: &Authz, out: &mut Vec<String>) {
        match z {
            Authz::Container { children, .. } => children.iter().for_each(|c| walk(c, out)),
            Authz::Require { provider, args, .. } if provider == "expr" => out.push(args.join(" ")),
            Authz::Require { .. } => {}
        }
    }
    let mut out = Vec::new();
    for z in dc.authz.iter().copied().chain(dc.authz_and.iter().flatten().copied()) {
        walk(z, &mut out);
    }
    out
}

/// The status access control answers with, or `None` to go on.
pub fn check(dc: &DirConfig, c: &Client) -> (Option<u16>, String) {
    let legacy = dc.legacy.as_ref().map(|l| legacy_allows(l, c));
    let satisfy_any = dc.legacy.as_ref().and_then(|l| l.satisfy).is_some_and(|s| s.value == Satisfy::Any);
    let authz = if dc.authz_set {
        // With AuthMerging And every level in force must grant: as <RequireAll>.
        let levels =
            std::iter::once(eval_any(&dc.authz, c)).chain(dc.authz_and.iter().map(|p| eval_any(p, c)));
        fold(Combine::All, levels)
    } else {
        Decision::Granted
    };
    let needs_user = |why: &str| -> (Option<u16>, String) {
        if dc.auth_type.is_none() {
            (Some(500), format!("{why}: a user is required but no AuthType is set (500: AuthType not set)"))
        } else if dc.auth_name.is_none() {
            (Some(500), format!("{why}: a user is required but no AuthName is set (500: need AuthName)"))
        } else {
            (Some(401), format!("{why}: authentication required (401)"))
        }
    };
    match (legacy, satisfy_any) {
        (Some(true), true) => (None, "host allowed by Allow/Deny (Satisfy Any)".into()),
        (Some(false), false) => (Some(403), "denied by Order/Allow/Deny".into()),
        _ => match authz {
            Decision::Granted => {
                (None, if dc.authz_set { "granted by Require".into() } else { "no access rules".into() })
            }
            Decision::Denied => (Some(403), "denied by Require".into()),
            Decision::Neutral => {
                (Some(403), "Require decides nothing (only negated lines that refuse no one): 403".into())
            }
            Decision::NeedsUser if c.has_credentials => {
                (Some(401), "credentials are not checked by the evaluator".into())
            }
            Decision::NeedsUser => needs_user("Require needs a user"),
        },
    }
}

fn legacy_allows(l: &super::dirconf::Legacy, c: &Client) -> bool {
    let matches = |rules: &[&crate::model::access::HostRule]| {
        rules.iter().any(|r| r.from.iter().any(|h| host_matches(h, c)))
    };
    // A host name needs DNS: taken to match in a Deny line and not in an Allow line (the
    // stricter answer, as the conversion gives it).
    let named = |rules: &[&crate::model::access::HostRule]| {
        rules.iter().flat_map(|r| &r.from).any(|h| names_a_host(h))
    };
    let (allow, deny) = (matches(&l.allow), matches(&l.deny) || named(&l.deny));
    match l.order.map(|o| o.value).unwrap_or(Order::DenyAllow) {
        Order::DenyAllow => !deny || allow,
        Order::AllowDeny | Order::MutualFailure => allow && !deny,
    }
}

/// `Allow from` / `Deny from` arguments: `all`, `env=[!]VAR`, an address or network as
/// APR reads it (`model::subnet`); host names never match here (no DNS: the engine says
/// such a request is decided by DNS, `names_host`).
fn host_matches(h: &str, c: &Client) -> bool {
    let lower = h.to_ascii_lowercase();
    if lower == "all" {
        return true;
    }
    if let Some(var) = h.get(4..).filter(|_| lower.starts_with("env=")) {
        return match var.strip_prefix('!') {
            Some(v) => env_get(c.env, v).is_none(),
            None => env_get(c.env, var).is_some(),
        };
    }
    ip_matches(h, c.ip)
}

/// Whether `l`'s Allow or Deny lines name a host (double-reverse DNS in Apache).
pub fn names_host(l: &super::dirconf::Legacy) -> bool {
    l.allow.iter().chain(&l.deny).flat_map(|r| &r.from).any(|h| names_a_host(h))
}

fn names_a_host(h: &str) -> bool {
    let lower = h.to_ascii_lowercase();
    lower != "all"
        && !lower.starts_with("env=")
        && crate::model::subnet::parse_word(h) == Err(crate::model::subnet::SubnetError::NotAnAddress)
}

/// An environment variable as Apache's tables find it: the name in any case.
pub fn env_get<'e>(env: &'e BTreeMap<String, String>, name: &str) -> Option<&'e String> {
    env.get(name).or_else(|| env.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

/// Sets (or with None, unsets) an environment variable as Apache's tables do: the name in
/// any case is the same variable.
pub fn env_set(env: &mut BTreeMap<String, String>, name: &str, value: Option<&str>) {
    env.retain(|k, _| !k.eq_ignore_ascii_case(name));
    if let Some(v) = value {
        env.insert(name.to_string(), v.to_string());
    }
}

/// The method as Apache numbers it: HEAD is GET (`M_GET`).
pub fn method_number(m: &str) -> &str {
    if m == "HEAD" { "GET" } else { m }
}

/// An address or network as APR reads it (`model::subnet`): a partial IPv4 (`10.1`), a
/// CIDR or dotted-mask network.
pub fn ip_matches(spec: &str, ip: IpAddr) -> bool {
    crate::model::subnet::parse_word(spec).is_ok_and(|s| s.contains(ip))
}

fn eval_any(list: &[&Authz], c: &Client) -> Decision {
    combine(Combine::Any, list.iter().copied(), c)
}

fn combine<'a>(how: Combine, items: impl Iterator<Item = &'a Authz>, c: &Client) -> Decision {
    let results: Vec<Decision> = items.map(|a| eval(a, c)).collect();
    match how {
        // <RequireNone>: the children as <RequireAny>, negated.
        Combine::None => negate(fold(Combine::Any, results.into_iter())),
        _ => fold(how, results.into_iter()),
    }
}

/// authz_core's apply_authz_sections() over a section's children (measured on 2.4 in
/// fixtures/regress/negated-require-is-neutral): a neutral child is left out; in an AND a
/// refusal decides, and 'a user is needed' replaces a grant; in an OR a grant decides, and
/// 'a user is needed' replaces a refusal; a section of only neutral children is neutral.
fn fold(how: Combine, results: impl Iterator<Item = Decision>) -> Decision {
    let mut acc = Decision::Neutral;
    for r in results {
        if r == Decision::Neutral {
            continue;
        }
        if how == Combine::All {
            if r == Decision::Denied {
                return Decision::Denied;
            }
            if (r == Decision::NeedsUser && acc != Decision::Denied) || acc == Decision::Neutral {
                acc = r;
            }
        } else {
            if r == Decision::Granted {
                return Decision::Granted;
            }
            if (r == Decision::NeedsUser && acc == Decision::Denied) || acc == Decision::Neutral {
                acc = r;
            }
        }
    }
    acc
}

/// A negated line or `<RequireNone>`: a grant refuses; a refusal, or a user still needed,
/// decides nothing ("we can not grant access simply because authorization was not
/// rejected").
fn negate(d: Decision) -> Decision {
    match d {
        Decision::Granted => Decision::Denied,
        Decision::Denied | Decision::NeedsUser | Decision::Neutral => Decision::Neutral,
    }
}

fn eval(a: &Authz, c: &Client) -> Decision {
    match a {
        Authz::Container { combine: how, children, .. } => combine(*how, children.iter(), c),
        Authz::Require { negated, provider, args, .. } => {
            if provider == "expr" {
                return match c.exprs.get(&args.join(" ")) {
                    Some(v) => {
                        if *v != *negated {
                            Decision::Granted
                        } else {
                            Decision::Denied
                        }
                    }
                    // (undecided: no grant, and a negation does not make it one)
                    None => Decision::Denied,
                };
            }
            let d = match provider.as_str() {
                "all" => {
                    if args.first().is_some_and(|a| a.eq_ignore_ascii_case("granted")) {
                        Decision::Granted
                    } else {
                        Decision::Denied
                    }
                }
                "ip" => yes(args.iter().any(|s| ip_matches(s, c.ip))),
                "local" => yes(c.ip.is_loopback()),
                "env" => yes(args.iter().any(|v| env_get(c.env, v).is_some())),
                "method" => yes(args.iter().any(|m| method_number(m) == method_number(c.method))),
                "valid-user" | "user" | "group" | "file-owner" | "file-group" => Decision::NeedsUser,
                // Host names need DNS (host, forward-dns), and other providers are not
                // known here: undecided, which never grants, negated or not (`Require
                // not host` in a <RequireAll> refuses, where Apache refuses the hosts it
                // names and lets the others in: stricter).
                _ => return Decision::Denied,
            };
            if *negated { negate(d) } else { d }
        }
    }
}

fn yes(b: bool) -> Decision {
    if b { Decision::Granted } else { Decision::Denied }
}

/// The directive behind a decision of [`check`], for reports: the first Require line, or
/// the Order/Deny lines for the legacy check.
pub fn deciding_span(dc: &DirConfig, why: &str) -> Option<crate::source::Span> {
    if why.contains("Order/Allow/Deny") {
        let l = dc.legacy.as_ref()?;
        return l.deny.first().map(|d| d.at).or(l.order.map(|o| o.span)).or(l.allow.first().map(|a| a.at));
    }
    if !dc.authz_set {
        return None;
    }
    dc.authz.first().map(|a| match a {
        Authz::Require { at, .. } | Authz::Container { at, .. } => *at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_forms() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        assert!(ip_matches("10.1", ip));
        assert!(ip_matches("10.0.0.0/8", ip));
        assert!(ip_matches("10.1.0.0/255.255.0.0", ip));
        assert!(!ip_matches("10.2", ip));
        assert!(ip_matches("10.1.2.3", ip));
    }
}
