//! mod_headers: `Header` and `RequestHeader`.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/mod_headers.html>.

use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct HeaderRule {
    /// `RequestHeader` rather than `Header`.
    pub request: bool,
    /// `onsuccess` (the default) or `always`.
    pub table: String,
    /// `set`, `append`, `add`, `merge`, `setifempty`, `unset`, `echo`, `edit`, `edit*`, `note`.
    pub action: String,
    pub name: String,
    /// The value (or the regex for `edit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The replacement for `edit` / `edit*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// `early`, `env=[!]VAR` or `expr=...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub at: Span,
}

const ACTIONS: &[&str] =
    &["set", "append", "add", "merge", "setifempty", "unset", "echo", "edit", "edit*", "note"];

pub fn read(item: &Item, request: bool, cx: &mut ReadCx) -> Option<HeaderRule> {
    let mut v: Vec<String> = item.values().iter().map(|s| s.to_string()).collect();
    let mut table = "onsuccess".to_string();
    if !request
        && v.first().is_some_and(|f| f.eq_ignore_ascii_case("always") || f.eq_ignore_ascii_case("onsuccess"))
    {
        table = v.remove(0).to_ascii_lowercase();
    }
    let bad = |cx: &mut ReadCx, msg: String| {
        cx.diags.push(Diagnostic::new(Code::BadArgument, item.span, msg));
        None
    };
    if v.is_empty() {
        return bad(cx, format!("{} requires at least an action and a header name", item.name.value));
    }
    let action = v.remove(0).to_ascii_lowercase();
    if !ACTIONS.contains(&action.as_str()) || (request && matches!(action.as_str(), "echo" | "note")) {
        return bad(
            cx,
            format!("first argument of {} must be one of {}", item.name.value, ACTIONS.join(", ")),
        );
    }
    if v.is_empty() {
        return bad(cx, format!("{} {action} requires a header name", item.name.value));
    }
    // mod_headers takes `Vary:` as `Vary` (WP Rocket writes names with the colon); measured
    // on 2.4.71: `Header append Vary: Accept-Encoding` sends `Vary: Accept-Encoding`.
    let mut name = v.remove(0);
    if name.len() > 1 && name.ends_with(':') {
        name.pop();
    }
    let takes_value = !matches!(action.as_str(), "unset" | "echo");
    let value = if takes_value && !v.is_empty() { Some(v.remove(0)) } else { None };
    if takes_value && value.is_none() {
        return bad(cx, format!("{} {action} requires a value", item.name.value));
    }
    let replacement = if action.starts_with("edit") && !v.is_empty() { Some(v.remove(0)) } else { None };
    if action.starts_with("edit") && replacement.is_none() {
        return bad(cx, format!("{} {action} requires a regex and a replacement", item.name.value));
    }
    let condition = if v.is_empty() { None } else { Some(v.remove(0)) };
    if !v.is_empty() {
        return bad(cx, format!("{}: too many arguments", item.name.value));
    }
    if let Some(c) = &condition {
        let lc = c.to_ascii_lowercase();
        if !(lc == "early" || lc.starts_with("env=") || lc.starts_with("expr=")) {
            return bad(cx, format!("{}: unknown condition '{c}' (early, env= or expr=)", item.name.value));
        }
    }
    Some(HeaderRule { request, table, action, name, value, replacement, condition, at: item.span })
}
