//! `luare`: compiles Apache's PCRE2 patterns to programs for a small backtracking regex VM
//! written in Lua (`templates/lua/lighten_re.lua`), so generated mod_magnet scripts match
//! exactly what Apache matched.
//!
//! # Why
//!
//! RewriteRule, RewriteCond, `<FilesMatch>` and RedirectMatch patterns are PCRE2 patterns
//! that Apache matches on bytes (it never sets PCRE2_UTF). lighttpd's Lua (5.4, inside
//! mod_magnet) has no regex library, and Lua patterns are a different language. lighttpd's
//! own conditionals do use PCRE2, but only on fixed request fields, and lighttpd compiles
//! them in UTF mode, which changes what `.`, classes and case folding mean on non-ASCII
//! bytes. So a rule that needs `-f` checks, environment variables or captures in Lua needs
//! its own matcher.
//!
//! # How
//!
//! `compile` first hands the pattern to the real PCRE2 (the `pcre2` crate): whatever PCRE2
//! refuses is an error here too, with PCRE2's message. Then `parser` reads it into the
//! tree in `ast` (options such as `(?i)` resolved into the nodes), and `program` lowers the
//! tree to a flat instruction list laid out like PCRE2's compiled code, so backtracking
//! tries the same choices in the same order and reports the same captures.
//!
//! The program is printed as a Lua table constructor:
//!
//! ```text
//! {v=1, ng=<groups>, nr=<registers>, anchor=1|2, fb=<byte> | fs=<set>, rb=<byte>, rbi=1,
//!  code={op,a,b,c, op,a,b,c, ...}, sets={"<64 hex digits>", ...}, strs={"...", ...}}
//! ```
//!
//! | field    | meaning                                                                  |
//! |----------|--------------------------------------------------------------------------|
//! | `v`      | format version, checked against the module's `VERSION`                   |
//! | `ng`     | capturing groups; `nr` registers                                          |
//! | `code`   | four integers per instruction: opcode (`program::Op`), three operands; jump targets are indices into `code` |
//! | `sets`   | 256-bit byte sets in hex, decoded once into lookup tables                 |
//! | `strs`   | literal runs (`Str`; lowercased for `StrFold`)                            |
//! | `anchor` | a match can only start at the subject start (1) or the search start (2)  |
//! | `fb`/`fs`| the byte, or set index, every match starts with: the search skips ahead   |
//! | `rb`     | a byte every match contains (`rbi`: either case): absent, no search at all |
//!
//! Registers `2g+1` and `2g+2` hold group g's start and end (1-based, end exclusive); the
//! others hold group-open positions, loop-iteration starts and the backtrack-stack heights
//! of atomic groups and lookarounds. The VM is one function with an explicit backtrack
//! stack of five-slot entries and a trail of register writes that backtracking undoes, so
//! a step allocates nothing; a greedy single-byte repeat (`[^/]*`) is one stack entry that
//! gives back a byte per retry (skipping ends where a following literal cannot match).
//! Atomic groups and lookarounds cut the stack back to a saved height, as PCRE2 discards
//! the frames of a finished assertion. A call stops after `STEP_LIMIT` backtracking steps
//! (or `STACK_LIMIT` stack slots) and reports that as an error, never as "no match":
//! PCRE2 has a match limit too, and the caller must fail closed. See the Lua file's header
//! for the calling convention.
//!
//! # What is not supported, and why
//!
//! Anything the machine cannot match exactly is refused with an `Unsupported` error, so the
//! translator can fail closed instead of approximating a rule:
//!
//! - Unicode and UTF constructs (`\p`, `\X`, `\N{U+..}`), `\C`, `\K`: Apache never turns on
//!   UTF, and `\K` changes the reported match start, which the VM does not model.
//! - Recursion and subroutines (`(?R)`, `(?1)`, `(?&n)`, `\g<1>`), conditionals
//!   `(?(1)..)`, branch reset `(?|..)`, callouts, backtracking verbs `(*SKIP)` etc., and
//!   duplicate group names (`(?J)`, or Apache's PCRE2_DUPNAMES): rare in configurations,
//!   each would need its own VM machinery.
//! - Syntax whose meaning changed after PCRE2 10.42, the version Apache links on Debian 12,
//!   while the `pcre2` crate bundles a newer one: `x{,3}` and spaces in braces (literals in
//!   10.42), lookbehind branches of variable length, back references in lookbehind, group
//!   names over 32 bytes. (Where 10.45 refuses what 10.42 accepted, such as `\x` without
//!   digits, the pattern is refused: an error either way.)
//! - Where PCRE2's start-of-match optimisations change the result, Apache gets the changed
//!   result, so those patterns are refused: any group repeated `{0}` (a lookahead inside
//!   it still steers the search: `(?:$|(?=b)){0}` never matches "/", in 10.42 and 10.45),
//!   and, for 10.42, a pattern that starts with a lookahead for a literal (`(?=b)a*b` does
//!   not match "b"; 10.43 fixed it).
//! - Quantifiers on anchors and on `[[:<:]]`: refused by PCRE2 or meaningless.
//!
//! # Apache's options
//!
//! Apache 2.4 compiles every pattern with `AP_REG_DEFAULT` = DOTALL | DOLLAR_ENDONLY
//! (changeable with `RegexDefaultOptions`), plus CASELESS for `[NC]`: `.` matches `\n` and
//! `$` only matches at the very end. `compile` gives PCRE2's own defaults; use
//! `compile_with(pattern, &Options::apache(nocase))` for what Apache does.
//!
//! This module does no I/O; the tests run the VM through `lua5.4`.

mod ast;
mod byteset;
pub mod fast;
mod parser;
mod program;
pub mod sample;

#[cfg(test)]
mod tests;

use std::fmt;

/// PCRE2's compile error ERR43, "two named subpatterns have the same name".
const PCRE2_ERROR_DUPLICATE_NAME: i32 = 143;

/// The Lua VM module (`lighten_re.lua`); install it where `package.path` finds it.
pub const LUA_MODULE: &str = include_str!("../../templates/lua/lighten_re.lua");

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    /// A Lua expression (a table constructor) describing the program; deterministic text.
    pub program: String,
    /// Number of capturing groups.
    pub groups: usize,
    /// Named groups with their numbers, in pattern order.
    pub names: Vec<(String, usize)>,
}

/// Why a pattern was not compiled: PCRE2 refuses it, or it uses something this module
/// does not implement exactly. `offset` is a byte offset into the pattern.
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

/// Compiles `pattern` with the given options.
pub fn compile_with(pattern: &str, options: &Options) -> Result<Compiled, Unsupported> {
    let checked = pcre2::bytes::RegexBuilder::new()
        .caseless(options.caseless)
        .dotall(options.dotall)
        .multi_line(options.multiline)
        .extended(options.extended)
        .build(pattern);
    let pcre_groups = match checked {
        Ok(re) => re.captures_len() - 1,
        Err(e) => {
            let offset = e.offset().unwrap_or(0);
            let text = e.to_string();
            let prefix = format!("PCRE2: error compiling pattern at offset {offset}: ");
            let message = text.strip_prefix(&prefix).unwrap_or(&text);
            // Apache passes PCRE2_DUPNAMES (which the crate cannot), so there a duplicate
            // name is valid; either way the machine refuses it (the rule fails closed).
            let reason = if e.code() == PCRE2_ERROR_DUPLICATE_NAME {
                "duplicate group names are not supported".to_string()
            } else {
                format!("PCRE2: {message}")
            };
            return Err(Unsupported { offset, reason });
        }
    };
    let parsed = parser::parse(pattern, options)?;
    if parsed.groups != pcre_groups {
        return Err(Unsupported {
            offset: 0,
            reason: format!("internal: {} groups counted, PCRE2 counts {pcre_groups}", parsed.groups),
        });
    }
    let program =
        program::lower(&parsed.root, parsed.groups).map_err(|reason| Unsupported { offset: 0, reason })?;
    Ok(Compiled { program: program.to_lua(), groups: parsed.groups, names: parsed.names })
}
