//! Environment variables: mod_env (`SetEnv`, `UnsetEnv`, `PassEnv`) and mod_setenvif
//! (`SetEnvIf`, `SetEnvIfNoCase`, `BrowserMatch`, `BrowserMatchNoCase`, `SetEnvIfExpr`).
//! Follows <https://httpd.apache.org/docs/2.4/mod/mod_setenvif.html>.

use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct EnvRule {
    /// The directive as named in the catalogue.
    pub directive: String,
    /// For `SetEnvIf*`: the request attribute tested (`Request_URI`, a header, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    /// For conditional forms: the regex or expression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    pub nocase: bool,
    /// `VAR`, `VAR=value`, `!VAR` assignments (or the names for `UnsetEnv`/`PassEnv`).
    pub assignments: Vec<String>,
    pub at: Span,
}

pub fn read(item: &Item, cx: &mut ReadCx) -> Option<EnvRule> {
    let name = item.name.value.to_ascii_lowercase();
    let v: Vec<String> = item.values().iter().map(|s| s.to_string()).collect();
    let rule = |attribute: Option<String>, test: Option<String>, nocase: bool, assignments: Vec<String>| {
        EnvRule { directive: item.name.value.clone(), attribute, test, nocase, assignments, at: item.span }
    };
    match name.as_str() {
        "setenv" => {
            let var = v.first()?.clone();
            let value = v.get(1).cloned().unwrap_or_default();
            Some(rule(None, None, false, vec![format!("{var}={value}")]))
        }
        "unsetenv" | "passenv" => Some(rule(None, None, false, v)),
        "setenvif" | "setenvifnocase" => {
            if v.len() < 3 {
                cx.diags.push(Diagnostic::new(
                    Code::WrongArguments,
                    item.span,
                    format!("{} requires an attribute, a regex and at least one variable", item.name.value),
                ));
                return None;
            }
            let nocase = name == "setenvifnocase";
            if let Err(e) = super::rewrite::check_regex(&v[1], nocase) {
                cx.diags.push(Diagnostic::new(
                    Code::BadRegex,
                    item.args[1].span,
                    format!("{}: bad regex: {e}", item.name.value),
                ));
                return None;
            }
            Some(rule(Some(v[0].clone()), Some(v[1].clone()), nocase, v[2..].to_vec()))
        }
        "browsermatch" | "browsermatchnocase" => {
            if v.len() < 2 {
                cx.diags.push(Diagnostic::new(
                    Code::WrongArguments,
                    item.span,
                    format!("{} requires a regex and a variable", item.name.value),
                ));
                return None;
            }
            let nocase = name == "browsermatchnocase";
            if let Err(e) = super::rewrite::check_regex(&v[0], nocase) {
                cx.diags.push(Diagnostic::new(
                    Code::BadRegex,
                    item.args[0].span,
                    format!("{}: bad regex: {e}", item.name.value),
                ));
                return None;
            }
            Some(rule(Some("User-Agent".into()), Some(v[0].clone()), nocase, v[1..].to_vec()))
        }
        "setenvifexpr" => {
            let (expr, rest) = v.split_first()?;
            if !super::settings::check_expr(cx, item, expr, false) {
                return None;
            }
            Some(rule(None, Some(expr.clone()), false, rest.to_vec()))
        }
        _ => None,
    }
}

/// The names SetEnvIf tests as something other than a header (mod_setenvif's special
/// names), in lower case.
pub const SPECIAL_ATTRIBUTES: &[&str] =
    &["remote_host", "remote_addr", "server_addr", "request_method", "request_protocol", "request_uri"];

/// Whether SetEnvIf reads `attr` as a regex over request header names: anything but a
/// special name with a character other than letters, digits, `-` and `_`
/// (mod_setenvif's is_header_regex).
pub fn is_header_regex(attr: &str) -> bool {
    !SPECIAL_ATTRIBUTES.contains(&attr.to_ascii_lowercase().as_str())
        && !attr.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
