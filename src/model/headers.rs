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
    /// The value as mod_headers reads it (a format string), for the actions that take one
    /// (not `unset`, `echo`, `edit`): text with its backslash escapes and `%%` worked out,
    /// `%{VAR}e` and the other specifiers.  Empty for the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub format: Vec<Piece>,
    /// `early`, `env=[!]VAR` or `expr=...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub at: Span,
}

/// A piece of a mod_headers format string
/// (<https://httpd.apache.org/docs/2.4/mod/mod_headers.html#header>, read as
/// `parse_format_tag` in mod_headers.c does).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "arg")]
pub enum Piece {
    /// Sent as is.
    Text(String),
    /// `%{VAR}e`: the request's environment variable, `(null)` when unset.
    Env(String),
    /// `%D`, `%t`, `%l`, `%i`, `%b` or `%{VAR}s`: the tag and its argument.
    Tag(char, String),
    /// A value written `expr=...`: an ap_expr string expression.
    Expr(String),
}

impl HeaderRule {
    /// The value when it is text only (no specifier): what every response gets.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.format {
            match p {
                Piece::Text(t) => out.push_str(t),
                _ => return None,
            }
        }
        Some(out)
    }
}

/// Reads `value` as mod_headers' format string.  The error is Apache's own message, with
/// which it refuses the directive (the server does not start; a .htaccess answers 500).
pub fn parse_format(value: &str) -> Result<Vec<Piece>, String> {
    if let Some(e) = value.strip_prefix("expr=") {
        return Ok(vec![Piece::Expr(e.to_string())]);
    }
    let mut out: Vec<Piece> = Vec::new();
    let mut text = String::new();
    let mut it = value.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            // A backslash escapes `\\`, `\r`, `\n` and `\t`; before anything else it is
            // kept and the next character read as usual (so `\%` still starts a tag).
            '\\' => match it.peek() {
                Some('\\') => {
                    it.next();
                    text.push('\\');
                }
                Some(&e @ ('r' | 'n' | 't')) => {
                    it.next();
                    text.push(match e {
                        'r' => '\r',
                        'n' => '\n',
                        _ => '\t',
                    });
                }
                _ => text.push('\\'),
            },
            '%' => {
                // `%%`, and `%` at the end, are a `%`.
                if matches!(it.peek(), None | Some('%')) {
                    it.next();
                    text.push('%');
                    continue;
                }
                let mut arg = String::new();
                if it.peek() == Some(&'{') {
                    it.next();
                    // ap_getword: up to the `}`, and past every `}` that follows it.
                    for a in it.by_ref() {
                        if a == '}' {
                            break;
                        }
                        arg.push(a);
                    }
                    while it.peek() == Some(&'}') {
                        it.next();
                    }
                }
                let piece = match it.next() {
                    Some('e') => Piece::Env(arg),
                    Some(t @ ('D' | 't' | 's' | 'l' | 'i' | 'b')) => Piece::Tag(t, arg),
                    Some(t) => return Err(format!("Unrecognized header format %{t}")),
                    None => {
                        return Err(
                            "Unrecognized header format % (a specifier is missing after %{...})".into()
                        );
                    }
                };
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(piece);
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
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
        if lc.starts_with("expr=") && !super::settings::check_expr(cx, item, &c[5..], false) {
            return None;
        }
    }
    let mut format = Vec::new();
    if let (Some(v), false) = (&value, matches!(action.as_str(), "edit" | "edit*")) {
        format = match parse_format(v) {
            Ok(f) => f,
            Err(e) => return bad(cx, format!("{}: {e}", item.name.value)),
        };
        for p in &format {
            if let Piece::Expr(e) = p
                && !super::settings::check_expr(cx, item, e, true)
            {
                return None;
            }
        }
        // mod_http refuses a response header with CR or LF in its value (AH02430) and
        // answers 500 instead; every response this header reaches would be one.
        if format.iter().any(|p| matches!(p, Piece::Text(t) if t.contains(['\r', '\n']))) {
            return bad(
                cx,
                format!(
                    "{}: the value holds a line break (\\n or \\r), with which Apache answers 500 (AH02430) for every response the header reaches",
                    item.name.value
                ),
            );
        }
    }
    Some(HeaderRule { request, table, action, name, value, format, replacement, condition, at: item.span })
}

#[cfg(test)]
mod tests {
    use super::{Piece, parse_format};

    fn text(s: &str) -> Piece {
        Piece::Text(s.to_string())
    }

    #[test]
    fn format_strings_read_as_mod_headers_reads_them() {
        // Measured on Apache 2.4 (Debian 12): `%%` and a final `%` are `%`, `\t` a tab,
        // `\q` kept with its backslash, `%{VAR}}e` past every `}`.
        assert_eq!(parse_format("a%%b, 50%"), Ok(vec![text("a%b, 50%")]));
        assert_eq!(parse_format(r"a\tb\\c\qd"), Ok(vec![text("a\tb\\c\\qd")]));
        assert_eq!(
            parse_format("role=%{SITE_ROLE}}e!"),
            Ok(vec![text("role="), Piece::Env("SITE_ROLE".into()), text("!")])
        );
        assert_eq!(
            parse_format("%D %t"),
            Ok(vec![Piece::Tag('D', String::new()), text(" "), Piece::Tag('t', String::new())])
        );
        assert_eq!(parse_format("expr=%{REQUEST_URI}"), Ok(vec![Piece::Expr("%{REQUEST_URI}".into())]));
        // A backslash does not escape `%`: `\%s` is a backslash and the tag %s.
        assert_eq!(parse_format(r"\%s"), Ok(vec![text("\\"), Piece::Tag('s', String::new())]));
    }

    #[test]
    fn an_unknown_specifier_is_apaches_error() {
        assert_eq!(parse_format("100% sure").unwrap_err(), "Unrecognized header format % ");
        assert_eq!(parse_format("%x").unwrap_err(), "Unrecognized header format %x");
        assert!(parse_format("v=%{SITE_ROLE}").unwrap_err().starts_with("Unrecognized header format %"));
        assert!(parse_format("%{UNCLOSED").is_err());
    }
}
