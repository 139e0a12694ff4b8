//! mod_alias: URL-to-path mappings (`Alias`, `ScriptAlias` and their `Match` forms) and
//! redirects (`Redirect`, `RedirectMatch`, `RedirectPermanent`, `RedirectTemp`).
//! Follows <https://httpd.apache.org/docs/2.4/mod/mod_alias.html>.

use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AliasKind {
    Alias,
    AliasMatch,
    ScriptAlias,
    ScriptAliasMatch,
}

#[derive(Clone, Debug, Serialize)]
pub struct Alias {
    pub kind: AliasKind,
    /// URL prefix or regex; `None` for the one-argument form inside `<Location>`.
    pub from: Option<String>,
    pub to: String,
    pub at: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct Redirect {
    /// True for `RedirectMatch` (a regex), false for prefix forms.
    pub regex: bool,
    /// 301, 302, 303, 410 or another 3xx/4xx code.
    pub status: u16,
    /// URL prefix or regex; `None` for the short form inside `<Location>`.
    pub from: Option<String>,
    /// Target; absent for non-3xx statuses such as `gone`.
    pub to: Option<String>,
    pub at: Span,
}

pub fn read_alias(item: &Item, kind: AliasKind, cx: &mut ReadCx) -> Option<Alias> {
    let v = item.values();
    let (from, to) = match v.as_slice() {
        [to] => (None, to.to_string()),
        [from, to] => (Some(from.to_string()), to.to_string()),
        _ => return None,
    };
    if matches!(kind, AliasKind::AliasMatch | AliasKind::ScriptAliasMatch)
        && let Some(re) = &from
        && let Err(e) = super::rewrite::check_regex(re, false)
    {
        cx.diags.push(Diagnostic::new(
            Code::BadRegex,
            item.args[0].span,
            format!("{}: bad regex: {e}", item.name.value),
        ));
        return None;
    }
    Some(Alias { kind, from, to, at: item.span })
}

fn status_word(word: &str) -> Option<u16> {
    match word.to_ascii_lowercase().as_str() {
        "permanent" => Some(301),
        "temp" => Some(302),
        "seeother" => Some(303),
        "gone" => Some(410),
        w if w.len() == 3 && w.chars().all(|c| c.is_ascii_digit()) => w.parse().ok(),
        _ => None,
    }
}

pub fn read_redirect(item: &Item, cx: &mut ReadCx) -> Option<Redirect> {
    let name = item.name.value.to_ascii_lowercase();
    let mut v: Vec<String> = item.values().iter().map(|s| s.to_string()).collect();
    let regex = name == "redirectmatch";
    let mut status = match name.as_str() {
        "redirectpermanent" => 301,
        _ => 302,
    };
    let mut status_given = false;
    if (name == "redirect" || regex)
        && v.len() >= 2
        && let Some(code) = status_word(&v[0])
    {
        status = code;
        v.remove(0);
        status_given = true;
    }
    let is_redirect = (300..400).contains(&status);
    // mod_alias: after a status, one word is the URL-path, and a redirect then has no
    // target (`Redirect 301 /a`: "URL to redirect to is missing", Apache does not start)
    if status_given && is_redirect && v.len() == 1 {
        cx.diags.push(Diagnostic::new(
            Code::WrongArguments,
            item.span,
            format!("{}: URL to redirect to is missing", item.name.value),
        ));
        return None;
    }
    let (from, to) = match (v.len(), is_redirect) {
        (2, true) => (Some(v[0].clone()), Some(v[1].clone())),
        (1, true) => (None, Some(v[0].clone())),
        (1, false) => (Some(v[0].clone()), None),
        (0, false) => (None, None),
        _ => {
            cx.diags.push(Diagnostic::new(
                Code::WrongArguments,
                item.span,
                if is_redirect {
                    format!("{}: a {status} redirect needs a URL path and a target", item.name.value)
                } else {
                    format!("{}: a {status} answer takes the URL path only", item.name.value)
                },
            ));
            return None;
        }
    };
    if let Some(t) = &to
        && !regex
        && !t.contains("://")
        && !t.starts_with('/')
    {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.span,
            format!("{}: URL to redirect to is not a full URL or an absolute path", item.name.value),
        ));
        return None;
    }
    if regex
        && let Some(re) = &from
        && let Err(e) = super::rewrite::check_regex(re, false)
    {
        cx.diags.push(Diagnostic::new(Code::BadRegex, item.span, format!("RedirectMatch: bad regex: {e}")));
        return None;
    }
    Some(Redirect { regex, status, from, to, at: item.span })
}
