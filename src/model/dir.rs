//! How a directory answers: `Options`, `DirectoryIndex`, `DirectorySlash`,
//! `FallbackResource` and `ErrorDocument`.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/core.html#options>,
//! <https://httpd.apache.org/docs/2.4/mod/mod_dir.html> and
//! <https://httpd.apache.org/docs/2.4/mod/core.html#errordocument>.

use super::Spanned;
use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

/// The options `Options` knows.
pub const OPTION_NAMES: &[&str] = &[
    "None",
    "All",
    "Indexes",
    "Includes",
    "IncludesNOEXEC",
    "FollowSymLinks",
    "SymLinksIfOwnerMatch",
    "ExecCGI",
    "MultiViews",
];

/// One `Options` line: either a replacement list or `+`/`-` changes.
#[derive(Clone, Debug, Serialize)]
pub struct OptionsLine {
    /// `(sign, name)` with sign `'+'`, `'-'` or `'='` for a bare (replacing) name.
    pub changes: Vec<(char, String)>,
    pub at: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct ErrorDocument {
    pub status: u16,
    pub action: ErrorAction,
    pub at: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum ErrorAction {
    /// A local URL path, served by an internal redirect with the status kept.
    Local(String),
    /// A full URL: Apache answers 302 to it.
    Remote(String),
    /// A literal message body.
    Text(String),
    /// `default`: Apache's built-in page.
    Default,
}

pub fn read_options(item: &Item, cx: &mut ReadCx) -> Option<OptionsLine> {
    let mut changes = Vec::new();
    let mut seen_signed = false;
    for w in &item.args {
        let (sign, name) = match w.value.chars().next() {
            Some(c @ ('+' | '-')) => (c, &w.value[1..]),
            _ => ('=', w.value.as_str()),
        };
        // `Options All -Indexes` is fine; a bare option after a signed one is not.
        if sign == '=' && seen_signed {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.span,
                "Either all Options must start with + or -, or no Option may.",
            ));
            return None;
        }
        seen_signed |= sign != '=';
        let Some(canonical) = OPTION_NAMES.iter().find(|n| n.eq_ignore_ascii_case(name)) else {
            cx.diags.push(Diagnostic::new(Code::BadArgument, w.span, format!("Illegal option {name}")));
            return None;
        };
        if let Some(allowed) = cx.options_allowed
            && !allowed.iter().any(|a| a.eq_ignore_ascii_case(canonical))
            && *canonical != "None"
        {
            cx.diags.push(
                    Diagnostic::new(
                        Code::HtaccessNotAllowed,
                        w.span,
                        format!("Option {canonical} not allowed here: AllowOverride Options= does not list it, so Apache answers 500 for this directory"),
                    )
                    .with_help("add it to the Options= list of AllowOverride"),
                );
            return None;
        }
        changes.push((sign, canonical.to_string()));
    }
    Some(OptionsLine { changes, at: item.span })
}

pub fn read_error_document(item: &Item, cx: &mut ReadCx) -> Option<ErrorDocument> {
    let (Some(code), Some(doc)) = (item.arg(0), item.arg(1)) else { return None };
    let status: u16 = match code.parse() {
        Ok(s) if (400..600).contains(&s) => s,
        _ => {
            cx.diags.push(Diagnostic::new(
                Code::BadArgument,
                item.args[0].span,
                format!("unsupported HTTP response code {code}"),
            ));
            return None;
        }
    };
    // core.c's set_error_document(): a space means text, a leading slash a local path, a
    // URL a redirect, anything else text; `default` restores Apache's own page.
    let action = if doc.eq_ignore_ascii_case("default") {
        ErrorAction::Default
    } else if doc.contains(' ') {
        ErrorAction::Text(doc.to_string())
    } else if doc.starts_with('/') {
        ErrorAction::Local(doc.to_string())
    } else if is_url(doc) {
        ErrorAction::Remote(doc.to_string())
    } else {
        ErrorAction::Text(doc.to_string())
    };
    Some(ErrorDocument { status, action, at: item.span })
}

/// `ap_is_url()`: a scheme of letters, digits, `+`, `-`, `.` followed by `:`.
fn is_url(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

pub fn read_flag(item: &Item) -> Option<Spanned<bool>> {
    item.arg(0).map(|v| Spanned::new(v.eq_ignore_ascii_case("on"), item.span))
}
