//! mod_rewrite rule sets: rules with their conditions and flags, RewriteBase, RewriteOptions
//! and RewriteMap declarations, read as mod_rewrite reads them.
//!
//! mod_rewrite splits its lines itself (`parseargline()`): an argument may be quoted with
//! `"` or `'` and then runs to the same quote with no escapes; unquoted, a backslash before
//! white space keeps the space in the argument (the backslash stays too, which the regex
//! reads as a literal space).  Flags are `[A,B=c]`, names case-insensitive, long forms
//! accepted (`[last,redirect=301]`).  Patterns are compiled with PCRE2 so a pattern Apache
//! would refuse is an error here too.  Follows
//! <https://httpd.apache.org/docs/2.4/mod/mod_rewrite.html>.

use super::Spanned;
use super::settings::ReadCx;
use crate::config::Item;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{MappedText, Span};
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct RewriteConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Spanned<bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<RewriteMap>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RewriteRule>,
    /// Conditions after the last rule: mod_rewrite attaches them to nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dangling: Vec<RewriteCond>,
    /// Conditions read so far that wait for their rule.
    #[serde(skip)]
    pending: Vec<RewriteCond>,
}

impl RewriteConfig {
    pub fn is_empty(&self) -> bool {
        self.engine.is_none()
            && self.base.is_none()
            && self.options.is_empty()
            && self.maps.is_empty()
            && self.rules.is_empty()
            && self.dangling.is_empty()
    }

    /// Whether rules here run: `RewriteEngine On` was given.
    pub fn is_on(&self) -> bool {
        self.engine.as_ref().is_some_and(|e| e.value)
    }

    /// Called when the scope ends: conditions without a rule are kept as dangling.
    pub fn finish(&mut self) {
        self.dangling.append(&mut self.pending);
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RewriteRule {
    pub pattern: String,
    /// `!pattern`: the rule applies when the pattern does not match.
    pub negated: bool,
    pub substitution: String,
    pub flags: Vec<RuleFlag>,
    pub conditions: Vec<RewriteCond>,
    pub at: Span,
}

impl RewriteRule {
    pub fn has(&self, kind: RuleFlagKind) -> bool {
        self.flags.iter().any(|f| f.kind == kind)
    }

    pub fn flag(&self, kind: RuleFlagKind) -> Option<&RuleFlag> {
        self.flags.iter().find(|f| f.kind == kind)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RewriteCond {
    pub test: String,
    pub pattern: CondPattern,
    pub flags: Vec<CondFlag>,
    pub at: Span,
}

impl RewriteCond {
    pub fn nocase(&self) -> bool {
        self.flags.contains(&CondFlag::NoCase)
    }

    pub fn ornext(&self) -> bool {
        self.flags.contains(&CondFlag::OrNext)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CondPattern {
    /// `!` in front: the condition holds when the test fails.
    pub negated: bool,
    pub kind: CondKind,
    /// The operand after the operator (the regex, the string, the number).
    pub operand: String,
}

/// `RewriteCond` tests, named after mod_rewrite's `CONDPAT_*` types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CondKind {
    Regex,
    /// `-f`
    FileExists,
    /// `-s`
    FileSize,
    /// `-l`, `-L`, `-h`
    FileLink,
    /// `-d`
    FileDir,
    /// `-x`
    FileExecutable,
    /// `-U`
    LookupUrl,
    /// `-F`
    LookupFile,
    StrLt,
    StrLe,
    StrEq,
    StrGt,
    StrGe,
    IntLt,
    IntLe,
    IntEq,
    IntGt,
    IntGe,
    /// `RewriteCond expr "..."`
    Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CondFlag {
    NoCase,
    OrNext,
    NoVary,
}

/// `RewriteRule` flags (mod_rewrite's `cmd_rewriterule_setflag()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleFlagKind {
    Escape,
    EscapeCtls,
    EscapeNoPlus,
    EscapeNoEscape,
    Chain,
    Cookie,
    DiscardPathInfo,
    Env,
    End,
    Forbidden,
    Gone,
    Handler,
    Last,
    Next,
    NoCase,
    NoEscape,
    NoSubreq,
    Proxy,
    PassThrough,
    QsAppend,
    QsDiscard,
    QsLast,
    Redirect,
    Skip,
    Type,
    UnsafeAllow3F,
    UnsafePrefixStat,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleFlag {
    pub kind: RuleFlagKind,
    /// As written, for reports (`R=301`, `last`).
    pub written: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RewriteMap {
    pub name: String,
    /// `txt`, `rnd`, `dbm`, `int`, `prg`, `dbd`, `fastdbd`.
    pub kind: String,
    pub source: String,
    pub at: Span,
}

/// mod_rewrite's `parseargline()`: up to three arguments with their offsets in `text`.
pub fn split_args(text: &str) -> Vec<(usize, usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < 3 {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let quote = if b[i] == b'"' || b[i] == b'\'' { Some(b[i]) } else { None };
        let open = i;
        if quote.is_some() {
            i += 1;
        }
        let start = i;
        while i < b.len() {
            let c = b[i];
            if (c.is_ascii_whitespace() && quote.is_none()) || Some(c) == quote {
                break;
            }
            if c == b'\\' && i + 1 < b.len() && b[i + 1].is_ascii_whitespace() {
                i += 2;
                continue;
            }
            i += 1;
        }
        let value = text[start..i].to_string();
        let end = if quote.is_some() && i < b.len() { i + 1 } else { i };
        out.push((open, end, value));
        i = end;
    }
    out
}

/// Compiles a pattern with PCRE2 the way Apache does (extended POSIX flags map to PCRE
/// defaults; `[NC]` is caseless).
pub fn check_regex(pattern: &str, nocase: bool) -> Result<(), String> {
    // Hosting servers repeat the same few patterns in every account's .htaccess; compiling
    // each once keeps a thousand-domain server fast (bench/parse-plesk.sh).
    thread_local! {
        static SEEN: std::cell::RefCell<std::collections::HashMap<(String, bool), Result<(), String>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    if let Some(r) = SEEN.with(|m| m.borrow().get(&(pattern.to_string(), nocase)).cloned()) {
        return r;
    }
    let r = pcre2::bytes::RegexBuilder::new()
        .caseless(nocase)
        .build(pattern)
        .map(|_| ())
        .map_err(|e| e.to_string());
    SEEN.with(|m| m.borrow_mut().insert((pattern.to_string(), nocase), r.clone()));
    r
}

fn parse_flags(text: &str, span: Span, what: &str, cx: &mut ReadCx) -> Option<Vec<String>> {
    let t = text.trim();
    if !(t.starts_with('[') && t.ends_with(']') && t.len() >= 2) {
        cx.diags.push(
            Diagnostic::new(Code::RewriteBadFlag, span, format!("{what}: bad flag delimiters"))
                .with_help("flags are written in brackets: [L,R=301]"),
        );
        return None;
    }
    Some(t[1..t.len() - 1].split(',').map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect())
}

fn rule_flag(written: &str) -> Option<RuleFlag> {
    let (key, value) = match written.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (written, None),
    };
    use RuleFlagKind::*;
    let k = key.to_ascii_lowercase();
    let kind = match k.as_str() {
        "b" => Escape,
        "bctls" => EscapeCtls,
        "bnp" | "backrefnoplus" => EscapeNoPlus,
        "bne" => EscapeNoEscape,
        "c" | "chain" => Chain,
        "co" | "cookie" => Cookie,
        "dpi" | "discardpath" | "discardpathinfo" => DiscardPathInfo,
        "e" | "env" => Env,
        "end" => End,
        "f" | "forbidden" => Forbidden,
        "g" | "gone" => Gone,
        "h" | "handler" => Handler,
        "l" | "last" => Last,
        "n" | "next" => Next,
        "nc" | "nocase" => NoCase,
        "ne" | "noescape" => NoEscape,
        "ns" | "nosubreq" => NoSubreq,
        "p" | "proxy" => Proxy,
        "pt" | "passthrough" => PassThrough,
        "qsa" | "qsappend" => QsAppend,
        "qsd" | "qsdiscard" => QsDiscard,
        "qsl" | "qslast" => QsLast,
        "r" | "redirect" => Redirect,
        "s" | "skip" => Skip,
        "t" | "type" => Type,
        "unsafeallow3f" => UnsafeAllow3F,
        "unsafeprefixstat" => UnsafePrefixStat,
        _ => return None,
    };
    // These take a value; mod_rewrite refuses them bare.
    if matches!(kind, Cookie | Env | Handler | Skip | Type | EscapeNoEscape) && value.is_none() {
        return None;
    }
    Some(RuleFlag { kind, written: written.to_string(), value })
}

fn cond_pattern(raw: &str, test: &str) -> CondPattern {
    let (negated, p) = match raw.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, raw),
    };
    let mut negated = negated;
    if test.eq_ignore_ascii_case("expr") {
        return CondPattern { negated, kind: CondKind::Expr, operand: p.to_string() };
    }
    let b = p.as_bytes();
    let (kind, operand) = if b.len() >= 2 && b[0] == b'-' {
        if b.len() == 2 {
            let k = match b[1] {
                b'f' => Some(CondKind::FileExists),
                b's' => Some(CondKind::FileSize),
                b'd' => Some(CondKind::FileDir),
                b'x' => Some(CondKind::FileExecutable),
                b'h' | b'L' | b'l' => Some(CondKind::FileLink),
                b'U' => Some(CondKind::LookupUrl),
                b'F' => Some(CondKind::LookupFile),
                _ => None,
            };
            match k {
                Some(k) => (k, String::new()),
                None => (CondKind::Regex, p.to_string()),
            }
        } else if b.len() > 3 && p.is_char_boundary(3) {
            let k = match &p[1..3] {
                "lt" => Some(CondKind::IntLt),
                "le" => Some(CondKind::IntLe),
                "gt" => Some(CondKind::IntGt),
                "ge" => Some(CondKind::IntGe),
                "eq" => Some(CondKind::IntEq),
                "ne" => {
                    // `-ne` is `!-eq`.
                    negated = !negated;
                    Some(CondKind::IntEq)
                }
                _ => None,
            };
            match k {
                Some(k) => (k, p[3..].to_string()),
                None => (CondKind::Regex, p.to_string()),
            }
        } else {
            (CondKind::Regex, p.to_string())
        }
    } else if b.len() >= 2 {
        match b[0] {
            b'>' if b[1] == b'=' => (CondKind::StrGe, p[2..].to_string()),
            b'>' => (CondKind::StrGt, p[1..].to_string()),
            b'<' if b[1] == b'=' => (CondKind::StrLe, p[2..].to_string()),
            b'<' => (CondKind::StrLt, p[1..].to_string()),
            // `=""` stands for the empty string.
            b'=' if &p[1..] == "\"\"" => (CondKind::StrEq, String::new()),
            b'=' => (CondKind::StrEq, p[1..].to_string()),
            _ => (CondKind::Regex, p.to_string()),
        }
    } else {
        (CondKind::Regex, p.to_string())
    };
    CondPattern { negated, kind, operand }
}

fn args_of(item: &Item) -> Vec<(Span, String)> {
    let t: &MappedText = &item.raw;
    split_args(&t.text).into_iter().map(|(s, e, v)| (t.span(s, e), v)).collect()
}

pub fn read_cond(item: &Item, rw: &mut RewriteConfig, cx: &mut ReadCx) {
    let args = args_of(item);
    if args.len() < 2 {
        cx.diags.push(Diagnostic::new(
            Code::WrongArguments,
            item.span,
            format!("RewriteCond: bad argument line '{}'", item.raw.text),
        ));
        return;
    }
    let mut flags = Vec::new();
    if let Some((span, text)) = args.get(2) {
        let Some(list) = parse_flags(text, *span, "RewriteCond", cx) else { return };
        for f in list {
            let flag = match f.to_ascii_lowercase().as_str() {
                "nc" | "nocase" => CondFlag::NoCase,
                "or" | "ornext" => CondFlag::OrNext,
                "nv" | "novary" => CondFlag::NoVary,
                _ => {
                    cx.diags.push(Diagnostic::new(
                        Code::RewriteBadFlag,
                        *span,
                        format!("RewriteCond: unknown flag '{f}'"),
                    ));
                    return;
                }
            };
            flags.push(flag);
        }
    }
    let pattern = cond_pattern(&args[1].1, &args[0].1);
    if pattern.kind == CondKind::Regex
        && let Err(e) = check_regex(&pattern.operand, flags.contains(&CondFlag::NoCase))
    {
        cx.diags.push(Diagnostic::new(
            Code::BadRegex,
            args[1].0,
            format!("RewriteCond: cannot compile regular expression '{}': {e}", pattern.operand),
        ));
        return;
    }
    if pattern.kind == CondKind::Expr
        && let Err(e) = crate::expr::check(&pattern.operand, false, cx.expr_modules.0, cx.expr_modules.1)
    {
        cx.diags.push(Diagnostic::new(
            Code::BadExpr,
            args[1].0,
            format!("RewriteCond expr: {} (at byte {} of '{}')", e.message, e.offset, pattern.operand),
        ));
        return;
    }
    rw.pending.push(RewriteCond { test: args[0].1.clone(), pattern, flags, at: item.span });
}

pub fn read_rule(item: &Item, rw: &mut RewriteConfig, cx: &mut ReadCx) {
    let args = args_of(item);
    if args.len() < 2 {
        cx.diags.push(Diagnostic::new(
            Code::WrongArguments,
            item.span,
            format!("RewriteRule: bad argument line '{}'", item.raw.text),
        ));
        return;
    }
    let mut flags = Vec::new();
    if let Some((span, text)) = args.get(2) {
        let Some(list) = parse_flags(text, *span, "RewriteRule", cx) else { return };
        for f in list {
            match rule_flag(&f) {
                Some(flag) => flags.push(flag),
                None => {
                    cx.diags.push(
                        Diagnostic::new(
                            Code::RewriteBadFlag,
                            *span,
                            format!("RewriteRule: unknown flag '{f}'"),
                        )
                        .with_help("see https://httpd.apache.org/docs/2.4/rewrite/flags.html"),
                    );
                    return;
                }
            }
        }
    }
    let (negated, pattern) = match args[0].1.strip_prefix('!') {
        Some(p) => (true, p.to_string()),
        None => (false, args[0].1.clone()),
    };
    let nocase = flags.iter().any(|f| f.kind == RuleFlagKind::NoCase);
    if let Err(e) = check_regex(&pattern, nocase) {
        cx.diags.push(Diagnostic::new(
            Code::BadRegex,
            args[0].0,
            format!("RewriteRule: cannot compile regular expression '{pattern}': {e}"),
        ));
        rw.pending.clear();
        return;
    }
    rw.rules.push(RewriteRule {
        pattern,
        negated,
        substitution: args[1].1.clone(),
        flags,
        conditions: std::mem::take(&mut rw.pending),
        at: item.span,
    });
}

pub fn read_map(item: &Item, rw: &mut RewriteConfig, cx: &mut ReadCx) {
    let (Some(name), Some(spec)) = (item.arg(0), item.arg(1)) else { return };
    let (kind, source) = match spec.split_once(':') {
        Some((k, s)) => (k.to_ascii_lowercase(), s.to_string()),
        None => (String::new(), spec.to_string()),
    };
    if !matches!(kind.as_str(), "txt" | "rnd" | "int" | "dbm" | "prg" | "dbd" | "fastdbd") {
        cx.diags.push(Diagnostic::new(
            Code::BadArgument,
            item.args[1].span,
            format!("RewriteMap: bad map type '{kind}'"),
        ));
        return;
    }
    if !matches!(kind.as_str(), "txt" | "rnd" | "int") {
        cx.diags.push(
            Diagnostic::new(
                Code::RewriteMapUnsupported,
                item.args[1].span,
                format!("RewriteMap {name}: {kind}: maps cannot be evaluated or carried over"),
            )
            .with_help(
                "rules that use this map fail closed when translated; convert the map to txt: if you can",
            ),
        );
    }
    rw.maps.push(RewriteMap { name: name.to_string(), kind, source, at: item.span });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parseargline_quirks() {
        let v: Vec<String> = split_args(r#"^a\ b "x y" [L]"#).into_iter().map(|a| a.2).collect();
        assert_eq!(v, [r"^a\ b", "x y", "[L]"]);
        // No escapes inside quotes: the argument ends at the next quote.
        let v: Vec<String> = split_args(r#""a\"b" c"#).into_iter().map(|a| a.2).collect();
        assert_eq!(v, [r"a\", "b\"", "c"]);
    }

    #[test]
    fn condition_patterns() {
        let p = cond_pattern("!-f", "%{REQUEST_FILENAME}");
        assert_eq!((p.negated, p.kind), (true, CondKind::FileExists));
        let p = cond_pattern("-ne5", "%{X}");
        assert_eq!((p.negated, p.kind, p.operand.as_str()), (true, CondKind::IntEq, "5"));
        let p = cond_pattern("=\"\"", "%{QUERY_STRING}");
        assert_eq!((p.kind, p.operand.as_str()), (CondKind::StrEq, ""));
        let p = cond_pattern("<=b", "%{X}");
        assert_eq!((p.kind, p.operand.as_str()), (CondKind::StrLe, "b"));
        let p = cond_pattern("-lt", "%{X}");
        assert_eq!(p.kind, CondKind::Regex, "-lt without operand is a regex");
        // A multi-byte character right after the dash must not split a character.
        let p = cond_pattern("-\u{e9}x", "%{X}");
        assert_eq!(p.kind, CondKind::Regex);
        let p = cond_pattern("^x$", "expr");
        assert_eq!(p.kind, CondKind::Expr);
    }

    #[test]
    fn long_flag_names() {
        assert_eq!(rule_flag("forbidden").unwrap().kind, RuleFlagKind::Forbidden);
        assert_eq!(rule_flag("R=301").unwrap().value.as_deref(), Some("301"));
        assert!(rule_flag("E").is_none(), "E needs a value");
        assert!(rule_flag("bogus").is_none());
    }
}

/// How one section's rewrite rules join those it inherits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleOrder {
    /// Its own rules only.
    Own,
    /// Its own, then those inherited (`Inherit`, or `InheritDown` above it).
    OwnThenInherited,
    /// Those inherited, then its own (`InheritBefore`, or `InheritDownBefore` above it).
    InheritedThenOwn,
}

/// mod_rewrite's per-directory merge (`config_perdir_merge`) of a section that has its own
/// RewriteOptions `own` (lower case, empty when it sets none) over the options in force
/// above it, `inherited`: the options then in force (its own when it sets any, else the
/// inherited ones), how the rules join, and whether RewriteBase is inherited (`MergeBase`;
/// without it a section's base is its own or none).
pub fn perdir_merge(own: &[String], inherited: &[String]) -> (Vec<String>, RuleOrder, bool) {
    let options: Vec<String> = if own.is_empty() { inherited.to_vec() } else { own.to_vec() };
    let has = |list: &[String], o: &str| list.iter().any(|x| x == o);
    let ignore = has(&options, "ignoreinherit");
    let order = if has(&options, "inherit") || (has(inherited, "inheritdown") && !ignore) {
        RuleOrder::OwnThenInherited
    } else if has(&options, "inheritbefore") || (has(inherited, "inheritdownbefore") && !ignore) {
        RuleOrder::InheritedThenOwn
    } else {
        RuleOrder::Own
    };
    let merge_base = has(&options, "mergebase");
    (options, order, merge_base)
}
