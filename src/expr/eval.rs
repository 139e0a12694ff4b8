//! Evaluation: httpd's `ap_expr_eval()` over the tree, in three values.
//!
//! Everything request-dependent is asked of the [`Context`]; where it cannot answer, the
//! result is [`Value::Unknown`] with the reason, and the unknown travels as little as
//! the logic allows (`false && ?` is false, `true || ?` is true).
//!
//! Backreferences follow Apache exactly: only a regex *with groups* records captures,
//! and it records them whether it matched (`$0`..`$9` of the match) or not (all empty);
//! a regex without groups leaves the earlier captures alone. When a regex with groups
//! runs on an unknown subject, or when whether it ran at all depends on an unknown
//! (`? && %{X} =~ /(a)/`), the captures become unknown too, so a later `$1` does not
//! quietly read stale text.

use super::ast::{BinaryOp, Cond, List, Part, Regex, UnaryOp, Word};
use super::builtin::{self, c_string};
use super::{Context, Value};
use std::net::IpAddr;

/// The variables of httpd 2.4's core (`var_providers` in util_expr_eval.c). Apache looks
/// names up ignoring case, so `%{http_host}` is `HTTP_HOST`; the context is asked with
/// the spelling here. Names not listed (mod_ssl's `SSL_*`, ...) go to the context as
/// written.
pub const CORE_VARIABLES: &[&str] = &[
    // misc_var_names
    "TIME_YEAR",
    "TIME_MON",
    "TIME_DAY",
    "TIME_HOUR",
    "TIME_MIN",
    "TIME_SEC",
    "TIME_WDAY",
    "TIME",
    "SERVER_SOFTWARE",
    "API_VERSION",
    // req_header_var_names
    "HTTP_USER_AGENT",
    "HTTP_PROXY_CONNECTION",
    "HTTP_REFERER",
    "HTTP_COOKIE",
    "HTTP_FORWARDED",
    "HTTP_HOST",
    "HTTP_ACCEPT",
    // request_var_names
    "REQUEST_METHOD",
    "REQUEST_SCHEME",
    "REQUEST_URI",
    "REQUEST_FILENAME",
    "REMOTE_HOST",
    "REMOTE_IDENT",
    "REMOTE_USER",
    "SERVER_ADMIN",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "SCRIPT_FILENAME",
    "PATH_INFO",
    "QUERY_STRING",
    "IS_SUBREQ",
    "DOCUMENT_ROOT",
    "AUTH_TYPE",
    "THE_REQUEST",
    "CONTENT_TYPE",
    "HANDLER",
    "REQUEST_LOG_ID",
    "SCRIPT_USER",
    "SCRIPT_GROUP",
    "DOCUMENT_URI",
    "LAST_MODIFIED",
    "CONTEXT_PREFIX",
    "CONTEXT_DOCUMENT_ROOT",
    "REQUEST_STATUS",
    "REMOTE_ADDR",
    "REMOTE_PORT",
    // conn_var_names
    "HTTPS",
    "IPV6",
    "CONN_LOG_ID",
    "CONN_REMOTE_ADDR",
    "HTTP2",
];

/// Apache keeps `$0` to `$9` (`AP_MAX_REG_MATCH`).
const MAX_CAPTURES: usize = 10;

/// A value, or the reason it cannot be known.
type Known<T> = Result<T, String>;

#[derive(Debug, Clone, PartialEq)]
enum Captures {
    /// `$0`..`$9` of the last regex with groups; empty before any and after a miss.
    Known(Vec<String>),
    Unknown(String),
}

pub(super) struct Evaluator<'c> {
    cx: &'c mut dyn Context,
    captures: Captures,
}

impl<'c> Evaluator<'c> {
    pub(super) fn new(cx: &'c mut dyn Context) -> Self {
        Evaluator { cx, captures: Captures::Known(Vec::new()) }
    }

    pub(super) fn cond(&mut self, c: &Cond) -> Value {
        match c {
            Cond::True => Value::True,
            Cond::False => Value::False,
            Cond::Not(inner) => !self.cond(inner),
            Cond::And(items) => self.junction(items, Value::False),
            Cond::Or(items) => self.junction(items, Value::True),
            Cond::Compare(l, op, r) => match (self.word(l), self.word(r)) {
                (Ok(l), Ok(r)) => {
                    let ordering = if op.is_integer() {
                        builtin::atoi64(&l).cmp(&builtin::atoi64(&r))
                    } else {
                        l.as_bytes().cmp(r.as_bytes())
                    };
                    Value::from(op.holds(ordering))
                }
                (Err(e), _) | (_, Err(e)) => Value::Unknown(e),
            },
            Cond::In(w, list) => self.is_in(w, list),
            Cond::Match { word, regex, negated } => self.matches(word, regex, *negated),
            Cond::Unary(op, w) => self.unary(op, w),
            Cond::Binary(l, op, r) => self.binary(l, op, r),
        }
    }

    /// `&&` (`decisive` is false) or `||` (`decisive` is true), left to right, stopping
    /// at the first decisive item as Apache does.
    fn junction(&mut self, items: &[Cond], decisive: Value) -> Value {
        let mut unknown: Option<String> = None;
        for item in items {
            let before = unknown.is_some().then(|| self.captures.clone());
            let value = self.cond(item);
            // After an unknown, Apache may or may not have reached this item.
            if let (Some(reason), Some(before)) = (&unknown, before)
                && self.captures != before
            {
                self.captures = Captures::Unknown(reason.clone());
            }
            match value {
                v if v == decisive => return decisive,
                Value::Unknown(reason) => {
                    unknown.get_or_insert(reason);
                }
                _ => {}
            }
        }
        match unknown {
            Some(reason) => Value::Unknown(reason),
            None => !decisive,
        }
    }

    fn is_in(&mut self, w: &Word, list: &List) -> Value {
        let needle = match self.word(w) {
            Ok(n) => n,
            Err(e) => return Value::Unknown(e),
        };
        match list {
            List::Words(words) => {
                let mut unknown = None;
                for w in words {
                    match self.word(w) {
                        Ok(v) if v == needle => return Value::True,
                        Ok(_) => {}
                        Err(e) => {
                            unknown.get_or_insert(e);
                        }
                    }
                }
                unknown.map_or(Value::False, Value::Unknown)
            }
            List::Call { name, arg } => {
                let arg = match self.word(arg) {
                    Ok(a) => a,
                    Err(e) => return Value::Unknown(e),
                };
                let name = name.to_ascii_lowercase();
                match self.cx.list_func(&name, &arg) {
                    Some(items) => Value::from(items.contains(&needle)),
                    None => Value::Unknown(format!("list function '{name}' not supported")),
                }
            }
        }
    }

    fn matches(&mut self, word: &Word, regex: &Regex, negated: bool) -> Value {
        let subject = match self.word(word) {
            Ok(s) => s,
            Err(e) => {
                if regex.has_groups() {
                    self.captures = Captures::Unknown(e.clone());
                }
                return Value::Unknown(e);
            }
        };
        let bytes = subject.as_bytes();
        // A PCRE error (a match limit) is a miss for Apache's `ap_regexec()` too.
        let matched = if regex.has_groups() {
            let found = regex.compiled().captures(bytes).ok().flatten();
            let captures = match &found {
                Some(caps) => (0..MAX_CAPTURES)
                    .map(|i| {
                        let span = caps.get(i).and_then(|m| bytes.get(m.start()..m.end()));
                        span.map(|s| c_string(s.to_vec())).unwrap_or_default()
                    })
                    .collect(),
                None => Vec::new(),
            };
            self.captures = Captures::Known(captures);
            found.is_some()
        } else {
            regex.compiled().is_match(bytes).unwrap_or(false)
        };
        Value::from(matched != negated)
    }

    fn unary(&mut self, op: &UnaryOp, w: &Word) -> Value {
        match op {
            UnaryOp::NotEmpty => self.test(w, |s| !s.is_empty()),
            UnaryOp::Empty => self.test(w, str::is_empty),
            UnaryOp::Truthy => self.test(w, builtin::truthy),
            UnaryOp::Remote(subnet) => {
                // The client address, as Apache's `r->useragent_addr`; the argument is the
                // constant subnet, already read.
                let addr = self.cx.var("REMOTE_ADDR");
                match addr.parse::<IpAddr>() {
                    Ok(ip) => Value::from(subnet.contains(ip)),
                    Err(_) => {
                        Value::Unknown(format!("-R needs the client address, and REMOTE_ADDR is '{addr}'"))
                    }
                }
            }
            UnaryOp::File(letter) => match self.word(w) {
                Ok(path) => match self.cx.file_test(*letter, &path) {
                    Some(b) => Value::from(b),
                    None => Value::Unknown(format!("file test '-{letter}' not supported")),
                },
                Err(e) => Value::Unknown(e),
            },
        }
    }

    fn test(&mut self, w: &Word, f: impl Fn(&str) -> bool) -> Value {
        match self.word(w) {
            Ok(s) => Value::from(f(&s)),
            Err(e) => Value::Unknown(e),
        }
    }

    fn binary(&mut self, l: &Word, op: &BinaryOp, r: &Word) -> Value {
        let (left, right) = match (self.word(l), self.word(r)) {
            (Ok(l), Ok(r)) => (l, r),
            (Err(e), _) | (_, Err(e)) => return Value::Unknown(e),
        };
        match op {
            BinaryOp::IpMatch(subnet) => match left.parse::<IpAddr>() {
                Ok(ip) => Value::from(subnet.contains(ip)),
                Err(_) if left.is_empty() => Value::False,
                Err(_) => Value::Unknown(format!(
                    "-ipmatch: '{left}' is not an IP address (Apache would look the name up in DNS)"
                )),
            },
            BinaryOp::StrMatch => Value::from(builtin::fnmatch(&right, &left, false, false)),
            BinaryOp::StrCMatch => Value::from(builtin::fnmatch(&right, &left, false, true)),
            BinaryOp::FnMatch => Value::from(builtin::fnmatch(&right, &left, true, false)),
        }
    }

    pub(super) fn word(&mut self, w: &Word) -> Known<String> {
        match w {
            Word::Digits(d) => Ok(d.clone()),
            Word::Str(parts) => self.parts(parts),
            Word::Var(name) => Ok(self.var(name)),
            Word::VarFunc { name, arg } => self.call(name, arg),
            Word::Call { name, arg } => {
                let arg = self.word(arg)?;
                self.call(name, &arg)
            }
            Word::Backref(n) => self.backref(*n),
            Word::Concat(words) => {
                let mut out = String::new();
                for w in words {
                    out.push_str(&self.word(w)?);
                }
                Ok(out)
            }
        }
    }

    pub(super) fn parts(&mut self, parts: &[Part]) -> Known<String> {
        let mut out = String::new();
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Var(name) => out.push_str(&self.var(name)),
                Part::Func { name, arg } => out.push_str(&self.call(name, arg)?),
                Part::Backref(n) => out.push_str(&self.backref(*n)?),
            }
        }
        Ok(out)
    }

    fn var(&mut self, name: &str) -> String {
        let canonical = CORE_VARIABLES.iter().find(|v| v.eq_ignore_ascii_case(name)).copied().unwrap_or(name);
        self.cx.var(canonical)
    }

    /// Function names are not case-sensitive; the context gets them in lower case.
    fn call(&mut self, name: &str, arg: &str) -> Known<String> {
        let name = name.to_ascii_lowercase();
        if let Some(value) = builtin::pure_function(&name, arg) {
            return Ok(value);
        }
        self.cx.func(&name, arg).ok_or_else(|| format!("function '{name}' not supported"))
    }

    fn backref(&self, n: u8) -> Known<String> {
        match &self.captures {
            Captures::Known(caps) => Ok(caps.get(usize::from(n)).cloned().unwrap_or_default()),
            Captures::Unknown(reason) => Err(reason.clone()),
        }
    }
}
