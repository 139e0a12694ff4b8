//! Apache httpd 2.4's expression language, `ap_expr`: parsing, printing and evaluating.
//!
//! `<If "...">`, `<ElseIf>`, `Require expr`, `RewriteCond expr`, `SetEnvIfExpr` and
//! `Header ... "expr=..."` take a boolean expression: [`parse()`] gives an [`Expr`]. A few
//! directives take a string expression, literal text with `%{VAR}`, `%{func:arg}` and
//! `$N` in it: [`parse_string`] gives a [`StringExpr`]. The rules follow httpd 2.4's
//! `server/util_expr_scan.l`, `util_expr_parse.y` and `util_expr_eval.c`, and the manual
//! page <https://httpd.apache.org/docs/2.4/expr.html>; the facts were carried over, not
//! the code.
//!
//! Parsing fails with an [`ExprError`] holding a byte offset into the text, so callers
//! can point at `file:line:col`. It never panics, whatever the input (a proptest holds
//! it). An [`Expr`] prints back canonically: operators in their main spelling, strings
//! single-quoted; parsing the print gives the same print again.
//!
//! Evaluation asks a [`Context`] for whatever depends on the request or the machine, and
//! is three-valued: where the context cannot answer, the result is
//! [`Value::Unknown`] with a reason, and the unknown spreads only as far as logic forces:
//!
//! | a     | b   | `a && b` | `a \|\| b` |
//! |-------|-----|----------|------------|
//! | false | ?   | false    | ?          |
//! | true  | ?   | ?        | true       |
//! | ?     | ?   | ?        | ?          |
//!
//! and `!?` is `?` (the same holds with the operands swapped).
//!
//! # Supported (httpd 2.4)
//!
//! - `true`, `false`, `!`/`not`, `&&`/`and`, `||`/`or`, parentheses; `&&` binds tighter
//!   than `||`, `!` tighter than both.
//! - String comparisons `==` (`=`), `!=`, `<`, `<=`, `>`, `>=`; integer ones `-eq` ...
//!   `-ge` (and `eq` ... `ge`); `-in` with `{'a', 'b'}` or a list function
//!   ([`Context::list_func`]); `=~` and `!~` with `/re/`, `m#re#` and flag `i`, compiled
//!   by PCRE, setting `$0`..`$9` as Apache does (only a regex with groups sets them, and a
//!   miss empties them).
//! - Unary `-n -z -T -R` and the file tests `-d -e -f -s -L -h -x -F -U -A`
//!   ([`Context::file_test`]); binary `-ipmatch -strmatch -strcmatch -fnmatch`.
//! - Words: digits, `'...'` and `"..."` with `%{VAR}`, `%{func:arg}`, `$N` and backslash
//!   escapes inside, `%{VAR}`, `%{func:arg}`, `func(word)`, `$N`, joined with `.`.
//! - `tolower`, `toupper`, `escape`, `unescape`, `base64`, `unbase64` are computed here;
//!   every other function (`req`, `http`, `resp`, `reqenv`, `env`, `osenv`, `note`, `md5`,
//!   `sha1`, `file`, `filesize`, module functions) goes to [`Context::func`].
//!
//! # Not supported, and why
//!
//! - The trunk (2.5) additions: `split`, `join`, `sub`, `%{:expr:}`, regex flags other
//!   than `i`. Apache 2.4 rejects them too, and so do we (as syntax errors).
//! - Apache refuses unknown variable and function names while reading the configuration;
//!   here they parse, and the context answers (an unknown variable reads as empty, an
//!   unknown function is [`Value::Unknown`]): modules register more names (mod_ssl's
//!   `SSL_*`, `PeerExtList`) than a table here could know. Unknown *operators* are
//!   refused, as Apache refuses them. Variable names are matched to the core ones
//!   ignoring case, as Apache's lookup does ([`CORE_VARIABLES`]).
//! - Not modelled: restricted contexts (`AP_EXPR_FLAG_RESTRICTED`, where the file tests
//!   and `file()` are refused), `SSLRequire`'s comparison rules, the `Vary` header Apache
//!   adds when a request header is read, and the evaluator's recursion limit of 20
//!   levels. Parsing refuses nesting deeper than 100 levels, so no input exhausts the stack.
//! - Strings are Rust strings: bytes that are not UTF-8 (`'\377'`, `unbase64`) become
//!   U+FFFD, and a NUL ends a string as it ends a C string in Apache.

mod ast;
mod builtin;
pub use builtin::fnmatch;
mod eval;
mod parse;
mod subnet;

#[cfg(test)]
mod tests;

pub use ast::{BinaryOp, CompareOp, Cond, List, Part, Regex, UnaryOp, Word};
pub use builtin::escape_uri;
pub use eval::CORE_VARIABLES;
pub use subnet::Subnet;

use std::fmt;

/// A boolean expression, as `<If>` takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    root: Cond,
}

/// A string expression: text with `%{VAR}`, `%{func:arg}` and `$N` in it. Quotes are
/// plain text here; backslash escapes apply.
#[derive(Debug, Clone, PartialEq)]
pub struct StringExpr {
    parts: Vec<Part>,
}

/// Why an expression does not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    /// Byte offset into the expression text.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

/// What an expression evaluates to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    True,
    False,
    /// The context could not answer something the result depends on; the reason says what
    /// (`function 'file' not supported`).
    Unknown(String),
}

impl std::ops::Not for Value {
    type Output = Value;

    fn not(self) -> Value {
        match self {
            Value::True => Value::False,
            Value::False => Value::True,
            unknown => unknown,
        }
    }
}

impl Value {
    /// `Some` when the value is known.
    pub fn known(&self) -> Option<bool> {
        match self {
            Value::True => Some(true),
            Value::False => Some(false),
            Value::Unknown(_) => None,
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        if b { Value::True } else { Value::False }
    }
}

/// What the evaluator needs from the request and the machine.
pub trait Context {
    /// A variable as `%{NAME}`: `REQUEST_URI`, `HTTP_HOST`, `QUERY_STRING`,
    /// `REQUEST_FILENAME`, `HTTPS`, `REMOTE_ADDR`, ... Core names come in the spelling of
    /// [`CORE_VARIABLES`], others as written. Unknown names read as the empty string.
    fn var(&mut self, name: &str) -> String;

    /// A one-argument function, `name(arg)` or `%{name:arg}`, name in lower case: `req`,
    /// `http`, `req_novary`, `resp`, `reqenv`, `env`, `osenv`, `note`, `md5`, `sha1`,
    /// `file`, `filesize`, or a module's. `None` when not supported: the expression is
    /// then [`Value::Unknown`]. The pure string functions never come here.
    fn func(&mut self, name: &str, arg: &str) -> Option<String>;

    /// A unary test on a path or URL: `-d -e -f -s -L -h -x` (file system) or `-F -U -A`
    /// (subrequests). `None` when not supported.
    fn file_test(&mut self, op: char, path: &str) -> Option<bool>;

    /// A list-valued function for `-in` (mod_ssl's `PeerExtList`); httpd's core has none.
    fn list_func(&mut self, name: &str, arg: &str) -> Option<Vec<String>> {
        let _ = (name, arg);
        None
    }
}

/// Parses a boolean expression (the text of `<If "...">`, without the quotes).
pub fn parse(src: &str) -> Result<Expr, ExprError> {
    parse::condition(src).map(|root| Expr { root })
}

/// The string functions of httpd 2.4's core (`string_func_providers` in
/// util_expr_eval.c; Apache looks them up ignoring case). `apache2 -t` takes each and
/// refuses `filemod` and `foo`.
const CORE_FUNCTIONS: &[&str] = &[
    "osenv",
    "env",
    "resp",
    "req",
    "http",
    "note",
    "reqenv",
    "req_novary",
    "tolower",
    "toupper",
    "escape",
    "unescape",
    "file",
    "filesize",
    "base64",
    "unbase64",
    "sha1",
    "md5",
    "ldap",
];

/// The first name in condition `src` (or, with `string`, string expression `src`) that
/// Apache would not start with, as its message ("Variable 'NAME' does not exist",
/// "Function 'name' does not exist") and the byte offset: a variable none of the core's,
/// mod_ssl's `SSL_*` (when `ssl`: mod_ssl is loaded) or mod_http2's (when `http2`) has, or
/// a function neither the core nor mod_ssl (`PeerExtList`) has. `None` also when `src`
/// does not parse (that is `parse`'s error to tell).
pub fn unknown_name(src: &str, string: bool, ssl: bool, http2: bool) -> Option<(String, usize)> {
    first_unknown(names_of(src, string).ok()?, ssl, http2)
}

/// What Apache says of expression `src` (a condition, or with `string` a string
/// expression) while reading the configuration: that it does not parse, or the first name
/// it does not have (`unknown_name`). One parse.
pub fn check(src: &str, string: bool, ssl: bool, http2: bool) -> Result<(), ExprError> {
    match first_unknown(names_of(src, string)?, ssl, http2) {
        Some((message, offset)) => Err(ExprError { offset, message }),
        None => Ok(()),
    }
}

fn names_of(src: &str, string: bool) -> Result<parse::Names, ExprError> {
    Ok(if string { parse::string_with_variables(src)?.1 } else { parse::condition_with_variables(src)?.1 })
}

fn first_unknown(names: parse::Names, ssl: bool, http2: bool) -> Option<(String, usize)> {
    let variable = names.variables.into_iter().find(|(name, _)| {
        let up = name.to_ascii_uppercase();
        !(eval::CORE_VARIABLES.contains(&up.as_str())
            || (ssl && up.starts_with("SSL_"))
            || (http2 && (up == "H2PUSH" || up == "H2_PUSH" || up.starts_with("H2_"))))
    });
    let function = names.functions.into_iter().find(|(name, _, list)| {
        let lower = name.to_ascii_lowercase();
        !if *list { ssl && lower == "peerextlist" } else { CORE_FUNCTIONS.contains(&lower.as_str()) }
    });
    match (variable, function) {
        (Some((v, a)), Some((_, b, _))) if a < b => Some((format!("Variable '{v}' does not exist"), a)),
        (_, Some((f, b, _))) => Some((format!("Function '{f}' does not exist"), b)),
        (Some((v, a)), None) => Some((format!("Variable '{v}' does not exist"), a)),
        (None, None) => None,
    }
}

/// Parses a string expression.
pub fn parse_string(src: &str) -> Result<StringExpr, ExprError> {
    parse::string(src).map(|parts| StringExpr { parts })
}

impl Expr {
    pub fn root(&self) -> &Cond {
        &self.root
    }

    /// Evaluates for one request; backreferences start empty.
    pub fn eval(&self, cx: &mut dyn Context) -> Value {
        eval::Evaluator::new(cx).cond(&self.root)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}

impl StringExpr {
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The text for one request, or why it cannot be known.
    pub fn eval(&self, cx: &mut dyn Context) -> Result<String, String> {
        eval::Evaluator::new(cx).parts(&self.parts)
    }
}

impl fmt::Display for StringExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ast::write_parts(f, &self.parts, None)
    }
}
