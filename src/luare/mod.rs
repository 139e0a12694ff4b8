//! `luare`: Apache's PCRE2 patterns for the generated mod_magnet scripts, matched there by
//! the real PCRE2 (`templates/lua/lighten_re.lua` over Debian's lua-rex-pcre2), and the
//! pattern knowledge the translator and `verify` need on the Rust side.
//!
//! # Why PCRE2 in Lua
//!
//! RewriteRule, RewriteCond, `<FilesMatch>` and RedirectMatch patterns are PCRE2 patterns
//! that Apache matches on bytes (it never sets PCRE2_UTF). lighttpd's own conditionals use
//! PCRE2 too, but only on fixed request fields and in UTF mode, which changes what `.`,
//! classes and case folding mean on non-ASCII bytes; a rule that needs `-f` checks,
//! environment variables or captures runs in Lua. Debian 12 ships lrexlib for Lua 5.4
//! linked against libpcre2-8 10.42, the library its Apache links: it loads inside
//! mod_magnet, so the generated scripts match with Apache's own engine and version. (An
//! earlier version compiled patterns to a backtracking machine written in Lua: slower by
//! orders of magnitude on hostile input, which stalled lighttpd's event loop, and unable
//! to run recursion, branch reset or `\K`.)
//!
//! # What this module does
//!
//! - [`compile_with`] checks a pattern with PCRE2 (the `pcre2` crate: what it refuses is an
//!   error with PCRE2's message, and the rule fails closed) and prints the table
//!   `lighten_re.lua` compiles at its first use: `{src = <pattern>, opts = "DOTALL
//!   DOLLAR_ENDONLY [CASELESS]"}`. The crate bundles a newer PCRE2 than Debian's; where
//!   10.42 refuses what the crate accepted (variable-length lookbehind), lighten_re reports
//!   the refusal as an error at run time and the request fails closed, as Apache on 10.42
//!   refuses the pattern at startup.
//! - `fast` recognises shapes that need no engine at all (a literal, a literal at one
//!   end, "everything", `^.*(a|b).*$`): the table then starts with `fast = {...}`, which
//!   lighten_re answers with a string comparison; checked against PCRE2 by its tests.
//! - `sample` finds a subject a pattern matches, for `verify`'s derived requests.
//!   `parser` reads the pattern into the tree in `ast` for those two; `byteset` is a set
//!   of bytes (PCRE2's C-locale tables).
//!
//! Every search is bounded: lighten_re prefixes `(*LIMIT_MATCH=)` and `(*LIMIT_DEPTH=)`, and
//! a search that reaches them is an error, never "no match" (a negated condition would
//! otherwise become true): the request fails closed.
//!
//! # Apache's options
//!
//! Apache 2.4 compiles every pattern with `AP_REG_DEFAULT` = DOTALL | DOLLAR_ENDONLY
//! (changeable with `RegexDefaultOptions`), plus CASELESS for `[NC]`: `.` matches `\n` and
//! `$` only matches at the very end. `compile` gives PCRE2's own defaults; use
//! `compile_with(pattern, &Options::apache(nocase))` for what Apache does.
//!
//! This module does no I/O; the tests run lighten_re through `lua5.4`.

mod ast;
pub mod byteset;
pub use byteset::ByteSet;
pub mod fast;
mod parser;
pub mod sample;

#[cfg(test)]
mod tests;

use std::fmt;

/// PCRE2's compile error ERR43, "two named subpatterns have the same name".
const PCRE2_ERROR_DUPLICATE_NAME: i32 = 143;

/// The Lua module (`lighten_re.lua`); install it where `package.path` finds it.
pub const LUA_MODULE: &str = include_str!("../../templates/lua/lighten_re.lua");

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    /// A Lua table constructor: the pattern, its options, its fast path; deterministic.
    pub program: String,
    /// Number of capturing groups.
    pub groups: usize,
    /// Named groups with their numbers, in pattern order.
    pub names: Vec<(String, usize)>,
}

/// Why a pattern was not compiled: PCRE2 refuses it, or lighten cannot carry it
/// (duplicate group names). `offset` is a byte offset into the pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at offset {})", self.reason, self.offset)
    }
}

impl std::error::Error for Unsupported {}

/// PCRE2 compile options that change what a pattern means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// PCRE2_CASELESS (`[NC]`).
    pub caseless: bool,
    /// PCRE2_DOTALL: `.` matches `\n`.
    pub dotall: bool,
    /// PCRE2_DOLLAR_ENDONLY: `$` matches only at the very end (ignored with multiline).
    pub dollar_endonly: bool,
    /// PCRE2_MULTILINE.
    pub multiline: bool,
    /// PCRE2_EXTENDED.
    pub extended: bool,
}

impl Options {
    /// What Apache 2.4's `ap_regcomp` passes with the default `RegexDefaultOptions`
    /// (DOTALL and DOLLAR_ENDONLY), plus CASELESS for `[NC]`.
    pub fn apache(caseless: bool) -> Options {
        Options { caseless, dotall: true, dollar_endonly: true, ..Options::default() }
    }
}

/// Compiles `pattern` with PCRE2's default options, plus PCRE2_CASELESS when `caseless`.
pub fn compile(pattern: &str, caseless: bool) -> Result<Compiled, Unsupported> {
    compile_with(pattern, &Options { caseless, ..Options::default() })
}

/// Compiles `pattern` with the given options: checked by PCRE2 (what it refuses is an
/// error with its message), printed as the table `lighten_re.lua` hands to PCRE2 at run
/// time, with the fast path for the shapes that need no regex engine.
pub fn compile_with(pattern: &str, options: &Options) -> Result<Compiled, Unsupported> {
    let checked = pcre2::bytes::RegexBuilder::new()
        .caseless(options.caseless)
        .dotall(options.dotall)
        .multi_line(options.multiline)
        .extended(options.extended)
        .build(pattern);
    let re = match checked {
        Ok(re) => re,
        Err(e) => {
            let offset = e.offset().unwrap_or(0);
            let text = e.to_string();
            let prefix = format!("PCRE2: error compiling pattern at offset {offset}: ");
            let message = text.strip_prefix(&prefix).unwrap_or(&text);
            // Apache passes PCRE2_DUPNAMES (which the crate cannot), so there a duplicate
            // name is valid; lighten refuses it (the rule fails closed).
            let reason = if e.code() == PCRE2_ERROR_DUPLICATE_NAME {
                "duplicate group names are not supported".to_string()
            } else {
                format!("PCRE2: {message}")
            };
            return Err(Unsupported { offset, reason });
        }
    };
    let names = re
        .capture_names()
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.as_ref().map(|n| (n.clone(), i)))
        .collect();
    let mut opts = Vec::new();
    for (on, name) in [
        (options.caseless, "CASELESS"),
        (options.dotall, "DOTALL"),
        (options.dollar_endonly, "DOLLAR_ENDONLY"),
        (options.multiline, "MULTILINE"),
        (options.extended, "EXTENDED"),
    ] {
        if on {
            opts.push(name);
        }
    }
    let program = format!(
        "{{src = {}, opts = \"{}\"}}",
        crate::translate::lua::bytes(pattern.as_bytes()),
        opts.join(" ")
    );
    Ok(fast::attach(pattern, options, Compiled { program, groups: re.captures_len() - 1, names }))
}
