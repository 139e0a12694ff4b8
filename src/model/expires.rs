//! mod_expires: `ExpiresActive`, `ExpiresByType`, `ExpiresDefault`, with both syntaxes
//! (`access plus 1 month` and `A2592000`) read into seconds.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/mod_expires.html>: a month is 30 days and a
//! year 365.

use super::Spanned;
use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct ExpiresConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<Spanned<bool>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_type: Vec<ExpiresByType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Spanned<ExpiresSpec>>,
}

impl ExpiresConfig {
    pub fn is_empty(&self) -> bool {
        self.active.is_none() && self.by_type.is_empty() && self.default.is_none()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ExpiresByType {
    pub mime: String,
    pub spec: ExpiresSpec,
    pub at: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ExpiresSpec {
    /// `access` (A) or `modification` (M).
    pub base: ExpiresBase,
    pub seconds: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpiresBase {
    Access,
    Modification,
}

/// Reads `A3600`, `M60` or `access plus 1 month 2 days` (also `now`, `modification`).
pub fn parse_spec(s: &str) -> Result<ExpiresSpec, String> {
    let t = s.trim();
    if let Some(first) = t.chars().next()
        && (first == 'A' || first == 'M')
        && t.len() > 1
        && t[1..].chars().all(|c| c.is_ascii_digit())
    {
        let base = if first == 'A' { ExpiresBase::Access } else { ExpiresBase::Modification };
        return Ok(ExpiresSpec {
            base,
            seconds: t[1..].parse().map_err(|_| "number too large".to_string())?,
        });
    }
    let words: Vec<String> = t.split_whitespace().map(|w| w.to_ascii_lowercase()).collect();
    let mut it = words.iter().peekable();
    let base = match it.next().map(String::as_str) {
        Some("access") | Some("now") => ExpiresBase::Access,
        Some("modification") => ExpiresBase::Modification,
        _ => return Err(format!("bad expires code, unrecognised <base> '{t}'")),
    };
    if it.peek().map(|w| w.as_str()) == Some("plus") {
        it.next();
    }
    let mut seconds = 0u64;
    while let Some(num) = it.next() {
        let n: u64 =
            num.parse().map_err(|_| format!("bad expires code, numeric value expected <num> '{num}'"))?;
        let unit = it.next().ok_or_else(|| "bad expires code, missing <type>".to_string())?;
        let mult = match unit.trim_end_matches('s') {
            "year" => 365 * 86400,
            "month" => 30 * 86400,
            "week" => 7 * 86400,
            "day" => 86400,
            "hour" => 3600,
            "minute" => 60,
            "second" => 1,
            _ => return Err(format!("bad expires code, unrecognised <type> '{unit}'")),
        };
        seconds += n * mult;
    }
    Ok(ExpiresSpec { base, seconds })
}

pub fn read_spec(item: &Item, arg: usize, cx: &mut ReadCx) -> Option<ExpiresSpec> {
    let s = item.arg(arg)?;
    match parse_spec(s) {
        Ok(spec) => Some(spec),
        Err(e) => {
            cx.diags.push(Diagnostic::new(Code::BadArgument, item.args[arg].span, e));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_syntaxes() {
        assert_eq!(parse_spec("A3").unwrap(), ExpiresSpec { base: ExpiresBase::Access, seconds: 3 });
        assert_eq!(
            parse_spec("access plus 1 month 2 days").unwrap(),
            ExpiresSpec { base: ExpiresBase::Access, seconds: 32 * 86400 }
        );
        assert_eq!(parse_spec("modification plus 1 hour").unwrap().base, ExpiresBase::Modification);
        assert!(parse_spec("access plus 3 fortnights").is_err());
    }
}
