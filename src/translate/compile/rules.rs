//! A per-directory rule list as one Lua function: each rule and condition a direct test
//! with its Apache text and `file:line` above it, short-circuiting on the first failing
//! condition; what mod_rewrite does in between (captures, [OR], Vary, the query string,
//! the flags) written out for the flags the rule has.  Follows lighten_rewrite.lua's
//! `apply_list` (a port of src/eval/rewrite.rs) step for step.
//!
//! The function is `rules_N(cx, perdir)`; it reads and sets `cx.filename`, `cx.path_info`,
//! `cx.args`, and returns the action (`nil`, `"changed"`, `"noescape"` or `"status"` with
//! `cx.status`), the [R] status and whether [END] stopped the list.

use super::Writer;
use super::comment;
use crate::model::rewrite::{CondFlag, CondKind, RewriteCond, RewriteRule, RuleFlagKind};
use crate::translate::lua;
use std::fmt::Write;

/// Whether this tier compiles the rule; the reason when not.
pub fn check(r: &RewriteRule) -> Result<(), String> {
    check_with(r, false)
}

/// The same for a rule of the server or a virtual host: [P] rules (Plesk's mail
/// autodiscovery block in every vhost), which the translation refuses (403) when they
/// apply, as the interpreter does; [F] and [G]; an [R] redirect that ends the list ([L]
/// or [END]: Plesk's `www.` and HTTPS redirects); and `-` rules that only set variables.
/// A rewrite to another path stays with the interpreter.
pub fn check_server(r: &RewriteRule) -> Result<(), String> {
    use RuleFlagKind::*;
    let ends = r.has(Last) || r.has(End);
    let carried = r.has(Proxy)
        || r.has(Forbidden)
        || r.has(Gone)
        || (r.has(Redirect) && ends)
        || (r.substitution == "-" && !r.has(Redirect) && !r.has(Type));
    if !carried {
        return Err(format!("server-context RewriteRules (RewriteRule {})", r.pattern));
    }
    check_with(r, true)
}

fn check_with(r: &RewriteRule, server: bool) -> Result<(), String> {
    use RuleFlagKind::*;
    let at = |what: String| Err(format!("{what} (RewriteRule {})", r.pattern));
    for f in &r.flags {
        if server && f.kind == Proxy {
            continue;
        }
        match f.kind {
            Last | End | Redirect | Forbidden | Gone | QsAppend | QsDiscard | QsLast | NoEscape | NoCase
            | Env | Type | DiscardPathInfo | UnsafeAllow3F | NoSubreq | UnsafePrefixStat => {}
            _ => return at(format!("the flag [{}]", f.written)),
        }
    }
    for t in std::iter::once(&r.substitution)
        .chain(r.conditions.iter().map(|c| &c.test))
        .chain(r.flags.iter().filter_map(|f| f.value.as_ref()))
    {
        template(t).map_err(|why| format!("{why} (RewriteRule {})", r.pattern))?;
    }
    for c in &r.conditions {
        match c.pattern.kind {
            CondKind::Expr | CondKind::FileLink => return at(format!("RewriteCond {}", c.test)),
            _ => {}
        }
    }
    Ok(())
}

/// Whether the rule list can change nothing for a request that names an existing regular
/// file (no PATH_INFO, a URL-path not ending in `/`): every rule is either dead for such a
/// request (one of its conditions is false for it: `%{REQUEST_FILENAME} !-f`, `-d`, or
/// `%{REQUEST_URI} !^.*[^/]$`) or changes nothing it answers with (a `-` rule without [F],
/// [G], [R], [T], reading no header for Vary, setting only variables a static file does
/// not see).  Then lighten_core.lua serves the file without running the list: WordPress's
/// front controller and WP Super Cache's rules, on every image, stylesheet and cached page.
pub fn noop_for_files(list: &[&RewriteRule]) -> bool {
    list.iter().all(|r| dead_for_files(r) || noop(r))
}

fn dead_for_files(r: &RewriteRule) -> bool {
    let mut i = 0;
    while i < r.conditions.len() {
        let mut chain = vec![&r.conditions[i]];
        while chain.last().is_some_and(|c| c.ornext()) && i + chain.len() < r.conditions.len() {
            chain.push(&r.conditions[i + chain.len()]);
        }
        if chain.iter().all(|c| false_for_files(c)) {
            return true;
        }
        i += chain.len();
    }
    false
}

fn false_for_files(c: &RewriteCond) -> bool {
    let p = &c.pattern;
    match c.test.as_str() {
        "%{REQUEST_FILENAME}" | "%{SCRIPT_FILENAME}" => {
            (matches!(p.kind, CondKind::FileExists | CondKind::LookupFile) && p.negated)
                || (p.kind == CondKind::FileDir && !p.negated)
        }
        "%{REQUEST_URI}" if p.kind == CondKind::Regex && p.negated => {
            match crate::luare::fast::fast(&p.operand, &crate::luare::Options::apache(c.nocase())) {
                Some(crate::luare::fast::Fast::LastIn(set)) => {
                    (0..=255u8).all(|b| b == b'/' || set.contains(b))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn noop(r: &RewriteRule) -> bool {
    use RuleFlagKind::*;
    r.substitution == "-"
        && r.flags.iter().all(|f| match f.kind {
            Last | End | NoCase | NoSubreq => true,
            Env => f.value.as_deref().is_some_and(|v| {
                let name = v.trim_start_matches('!').split(':').next().unwrap_or("");
                !name.is_empty() && !name.contains(['$', '%']) && !name.eq_ignore_ascii_case("no-gzip")
            }),
            _ => false,
        })
        && r.conditions.iter().all(|c| vary_headers(c).is_empty())
}

/// A piece of an expansion.
enum Piece {
    Lit(Vec<u8>),
    /// `$N`
    Rule(u8),
    /// `%N`
    Cond(u8),
    /// `%{NAME}`
    Var(String),
}

/// do_expand()'s reading of a template (lighten_rewrite.lua's parse_template).
fn parse(s: &str) -> Result<Vec<Piece>, String> {
    let b = s.as_bytes();
    let mut out: Vec<Piece> = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match (c, next) {
            (b'\\', Some(n)) => {
                lit.push(n);
                i += 2;
            }
            (b'$' | b'%', Some(n)) if n.is_ascii_digit() => {
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(if c == b'$' { Piece::Rule(n - b'0') } else { Piece::Cond(n - b'0') });
                i += 2;
            }
            (b'$' | b'%', Some(b'{')) => match close(b, i + 2) {
                Some(end) => {
                    if c == b'$' {
                        return Err("a RewriteMap lookup".into());
                    }
                    let name = &s[i + 2..end];
                    if name.contains(['$', '%', '\\']) {
                        return Err(format!("the variable %{{{name}}}"));
                    }
                    if !lit.is_empty() {
                        out.push(Piece::Lit(std::mem::take(&mut lit)));
                    }
                    out.push(Piece::Var(name.to_string()));
                    i = end + 1;
                }
                None => {
                    lit.push(c);
                    i += 1;
                }
            },
            _ => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// The `}` closing a `{` opened before `from`, allowing nesting.
fn close(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 1;
    for (k, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// How a request header is read: by a condition whose rule adds it to Vary through
/// `cx.pv` (`Record`), by one of a rule without [OR] whose headers go to Vary together when
/// it applies (`Direct`), or without Vary (a substitution, a flag, [NV], Host).
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    Record,
    Direct,
    Plain,
}

/// The request header a `%{NAME}` reads, if it reads one.
fn header_of(name: &str) -> Option<&str> {
    Some(match name {
        "HTTP_HOST" => "Host",
        "HTTP_USER_AGENT" => "User-Agent",
        "HTTP_REFERER" => "Referer",
        "HTTP_COOKIE" => "Cookie",
        "HTTP_FORWARDED" => "Forwarded",
        "HTTP_PROXY_CONNECTION" => "Proxy-Connection",
        "HTTP_ACCEPT" => "Accept",
        _ => return name.strip_prefix("HTTP:"),
    })
}

/// The headers a condition reads that go to Vary when its rule applies: in reading order,
/// never Host, none with [NV].
fn vary_headers(c: &RewriteCond) -> Vec<String> {
    if c.flags.contains(&CondFlag::NoVary) {
        return Vec::new();
    }
    parse(&c.test)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| match p {
            Piece::Var(name) => {
                header_of(name).filter(|h| !h.eq_ignore_ascii_case("host")).map(str::to_string)
            }
            _ => None,
        })
        .collect()
}

/// A variable's value as a Lua expression.
fn var(name: &str, reads: Reads) -> String {
    if let Some(h) = header_of(name) {
        let reads = if h.eq_ignore_ascii_case("host") { Reads::Plain } else { reads };
        return match reads {
            Reads::Record => format!("header(cx, {})", lua::string(h)),
            Reads::Direct => format!("(H[{}] or \"\")", lua::string(h)),
            Reads::Plain => format!("header_nv(cx, {})", lua::string(h)),
        };
    }
    match name {
        "REQUEST_URI" => "cx.uri".into(),
        "REQUEST_FILENAME" | "SCRIPT_FILENAME" => "cx.filename".into(),
        "QUERY_STRING" => "(cx.args or \"\")".into(),
        "REQUEST_METHOD" => "cx.method".into(),
        "HTTPS" => "(cx.https and \"on\" or \"off\")".into(),
        "SERVER_NAME" => "core.server_name(cx)".into(),
        "DOCUMENT_ROOT" | "CONTEXT_DOCUMENT_ROOT" => "DOCROOT".into(),
        _ => match name.strip_prefix("ENV:") {
            // (Apache's environment table finds a name in any case)
            Some(n) => format!("(cx.env and core.env_get(cx.env, {}) or \"\")", lua::string(n)),
            None => format!("var(cx, {})", lua::string(name)),
        },
    }
}

/// `$N` as a Lua expression: from the rule's captures, or, when the pattern matches the
/// whole subject with every group capturing all of it (`^(.*)$`, `whole` groups), the
/// subject itself.
fn rule_group(n: u8, whole: Option<usize>) -> String {
    match whole {
        Some(groups) if (n as usize) <= groups => "subject".into(),
        Some(_) => "\"\"".into(),
        None => format!("(rc[{n}] or \"\")"),
    }
}

/// A template as a Lua expression (a concatenation), with whether it uses `$N` / `%N`.
fn template(s: &str) -> Result<(String, bool, bool), String> {
    template_with(s, Reads::Plain, None)
}

fn template_with(s: &str, reads: Reads, whole: Option<usize>) -> Result<(String, bool, bool), String> {
    let pieces = parse(s)?;
    let (mut rc, mut cc) = (false, false);
    let parts: Vec<String> = pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(b) => lua::bytes(b),
            Piece::Rule(n) => {
                rc = true;
                rule_group(*n, whole)
            }
            Piece::Cond(n) => {
                cc = true;
                format!("(cc[{n}] or \"\")")
            }
            Piece::Var(name) => var(name, reads),
        })
        .collect();
    let e = if parts.is_empty() { "\"\"".to_string() } else { parts.join(" .. ") };
    Ok((e, rc, cc))
}

fn uses(s: &str, sigil: u8) -> bool {
    s.as_bytes().windows(2).any(|w| w[0] == sigil && w[1].is_ascii_digit())
}

/// The status a `[R]` flag asks for (lighten_rewrite.lua's redirect_code).
fn redirect_code(r: &RewriteRule) -> Option<u16> {
    let f = r.flag(RuleFlagKind::Redirect)?;
    let Some(v) = &f.value else { return Some(302) };
    Some(match v.to_ascii_lowercase().as_str() {
        "permanent" => 301,
        "temp" => 302,
        "seeother" => 303,
        _ => v.strip_prefix('+').unwrap_or(v).parse::<u16>().ok().filter(|_| !v.is_empty()).unwrap_or(302),
    })
}

/// The Apache text of a rule or condition for the comment above it.
fn rule_text(r: &RewriteRule) -> String {
    let flags: Vec<&str> = r.flags.iter().map(|f| f.written.as_str()).collect();
    let flags = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(",")) };
    comment(&format!(
        "RewriteRule {}{} {}{flags}",
        if r.negated { "!" } else { "" },
        r.pattern,
        r.substitution
    ))
}

fn cond_text(c: &RewriteCond) -> String {
    let op = crate::eval::rewrite::cond_op(c.pattern.kind);
    let mut flags = Vec::new();
    if c.nocase() {
        flags.push("NC");
    }
    if c.ornext() {
        flags.push("OR");
    }
    if c.flags.contains(&CondFlag::NoVary) {
        flags.push("NV");
    }
    let flags = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(",")) };
    comment(&format!(
        "RewriteCond {} {}{op}{}{flags}",
        c.test,
        if c.pattern.negated { "!" } else { "" },
        c.pattern.operand
    ))
}

/// The statements that set `ok` to the condition's result (and `cc` to its captures
/// when a later expansion needs them).
fn condition(
    w: &mut Writer,
    c: &RewriteCond,
    need_cc: bool,
    whole: Option<usize>,
    reads: Reads,
    ind: &str,
) -> Result<String, String> {
    let reads = if c.flags.contains(&CondFlag::NoVary) { Reads::Plain } else { reads };
    let (input, _, _) = template_with(&c.test, reads, whole)?;
    let neg = c.pattern.negated;
    let nocase = c.nocase();
    let op = &c.pattern.operand;
    let mut out = String::new();
    let not = if neg { "not " } else { "" };
    // Read the input once when the test names it more than once.
    let _ = writeln!(out, "{ind}s = {input}");
    match c.pattern.kind {
        CondKind::Regex => {
            let fast = if need_cc && !neg { None } else { w.test(op, nocase, "s") };
            match fast {
                Some(t) => match t.strip_suffix(" ~= nil").filter(|e| neg && one_call(e)) {
                    // (`not (find(s, "x") ~= nil)` reads better as `find(s, "x") == nil`)
                    Some(e) => {
                        let _ = writeln!(out, "{ind}ok = {e} == nil");
                    }
                    None => {
                        let _ = writeln!(out, "{ind}ok = {not}({t})");
                    }
                },
                None => {
                    let r = w.regex(op, nocase)?;
                    let _ = writeln!(out, "{ind}m = exec({r}, s)");
                    let _ = writeln!(out, "{ind}if m == false then return core.fail(cx) end");
                    if neg {
                        let _ = writeln!(out, "{ind}ok = not m");
                    } else if need_cc {
                        let _ = writeln!(out, "{ind}ok = m ~= nil");
                        let _ = writeln!(out, "{ind}if ok then cc = m end");
                    } else {
                        let _ = writeln!(out, "{ind}ok = m ~= nil");
                    }
                }
            }
        }
        CondKind::StrEq => {
            let t = if nocase {
                format!("lower(s) == {}", lua::string(&op.to_ascii_lowercase()))
            } else {
                format!("s == {}", lua::string(op))
            };
            let _ = writeln!(out, "{ind}ok = {not}({t})");
        }
        CondKind::StrLt | CondKind::StrLe | CondKind::StrGt | CondKind::StrGe => {
            let cmp = if nocase {
                format!("core.bytecmp(lower(s), {})", lua::string(&op.to_ascii_lowercase()))
            } else {
                format!("core.lexcmp(s, {})", lua::string(op))
            };
            let rel = match c.pattern.kind {
                CondKind::StrLt => "< 0",
                CondKind::StrLe => "<= 0",
                CondKind::StrGt => "> 0",
                _ => ">= 0",
            };
            let _ = writeln!(out, "{ind}ok = {not}({cmp} {rel})");
        }
        CondKind::IntLt | CondKind::IntLe | CondKind::IntEq | CondKind::IntGt | CondKind::IntGe => {
            let rel = match c.pattern.kind {
                CondKind::IntLt => "<",
                CondKind::IntLe => "<=",
                CondKind::IntEq => "==",
                CondKind::IntGt => ">",
                _ => ">=",
            };
            let _ = writeln!(out, "{ind}ok = {not}(core.atoi(s) {rel} core.atoi({}))", lua::string(op));
        }
        CondKind::FileExists
        | CondKind::FileSize
        | CondKind::FileDir
        | CondKind::FileExecutable
        | CondKind::LookupUrl
        | CondKind::LookupFile => {
            let k = match c.pattern.kind {
                CondKind::FileExists => "f",
                CondKind::FileSize => "s",
                CondKind::FileDir => "d",
                CondKind::FileExecutable => "x",
                CondKind::LookupUrl => "U",
                _ => "F",
            };
            let _ = writeln!(out, "{ind}ok = {not}test_file(cx, \"{k}\", s)");
        }
        CondKind::FileLink | CondKind::Expr => return Err(format!("RewriteCond {}", c.test)),
    }
    Ok(out)
}

/// Whether Lua expression `e` is one call (`find(s, "x")`) or one parenthesised
/// expression, strings aside: what `== nil` can follow without parentheses.
fn one_call(e: &str) -> bool {
    let b = e.as_bytes();
    let Some(open) = e.find('(') else { return false };
    if !(open == 0 || e[..open].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')) {
        return false;
    }
    let (mut depth, mut i) = (0usize, open);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i == b.len() - 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The conditions of `list` worth deciding once: written the same (test, pattern, flags)
/// in more than one rule, reading no back-reference (`$N`, `%N`), in rules without [OR]
/// and without `%N`; at most 64 (Lua's limit on locals is 200).
fn shared_conditions(list: &[&RewriteRule]) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for r in list {
        let templates = std::iter::once(&r.substitution)
            .chain(r.conditions.iter().map(|c| &c.test))
            .chain(r.flags.iter().filter_map(|f| f.value.as_ref()));
        if templates.clone().any(|t| uses(t, b'%')) || r.conditions.iter().any(|c| c.ornext()) {
            continue;
        }
        for c in &r.conditions {
            if uses(&c.test, b'$') {
                continue;
            }
            let key = cond_text(c);
            match seen.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => seen.push((key, 1)),
            }
        }
    }
    seen.into_iter().filter(|(_, n)| *n > 1).map(|(k, _)| k).take(64).collect()
}

/// The function for a rule list: per directory, or of the server and virtual host
/// (`server`: the rules check_server lets in).
pub fn function(w: &mut Writer, name: &str, list: &[&RewriteRule], server: bool) -> Result<String, String> {
    let mut out = String::new();
    let first = list.first().map(|r| w.at(r.at)).unwrap_or_default();
    if server {
        let _ = writeln!(
            out,
            "-- The rewrite rules of the virtual host and the server, from {first}: one test after\n-- another, as mod_rewrite runs them on the URL-path when the request is read."
        );
    } else {
        let _ = writeln!(
            out,
            "-- The rewrite rules in force from {first}: one test after another, as mod_rewrite"
        );
        out.push_str("-- runs them on the path relative to the folder (`perdir`).\n");
    }
    let _ = writeln!(out, "function {name}(cx, perdir)");
    out.push_str("  local action, code\n");
    if server {
        out.push_str("  local subject = cx.uri\n");
    } else {
        out.push_str("  local subject = core.subject(cx, perdir)\n");
    }
    // (the locals the tests below use, declared once they are written)
    let locals_at = out.len();
    let memo = shared_conditions(list);
    if !memo.is_empty() {
        out.push_str(
            "  -- Conditions written more than once: each is decided once, and again only after a\n",
        );
        out.push_str("  -- rule applied (it may have changed what they read).\n");
        let names: Vec<String> = (1..=memo.len()).map(|i| format!("c{i}")).collect();
        let _ = writeln!(out, "  local {}", names.join(", "));
    }
    for (k, r) in list.iter().enumerate() {
        let next = format!("rule_{}", k + 2);
        let _ = writeln!(out, "\n  -- {} ({})", rule_text(r), w.at(r.at));
        out.push_str("  do\n");
        if r.has(RuleFlagKind::NoSubreq) || r.has(RuleFlagKind::Redirect) {
            // mod_rewrite skips [NS] and [R] rules in mod_dir's DirectoryIndex sub-request.
            let _ = writeln!(out, "    if cx.subreq then goto {next} end");
        }
        let templates: Vec<&String> = std::iter::once(&r.substitution)
            .chain(r.conditions.iter().map(|c| &c.test))
            .chain(r.flags.iter().filter_map(|f| f.value.as_ref()))
            .collect();
        let need_rc = templates.iter().any(|t| uses(t, b'$'));
        let cond_groups = templates.iter().any(|t| uses(t, b'%'));
        // The pattern.
        let nocase = r.has(RuleFlagKind::NoCase);
        let whole = match crate::luare::fast::fast(&r.pattern, &crate::luare::Options::apache(nocase)) {
            Some(crate::luare::fast::Fast::Whole { groups }) if !r.negated => Some(groups),
            _ => None,
        };
        let need_rc = need_rc && whole.is_none();
        let fast = if need_rc && !r.negated { None } else { w.test(&r.pattern, nocase, "subject") };
        match &fast {
            Some(t) if t == "true" && !r.negated => {}
            Some(t) => {
                let _ =
                    writeln!(out, "    if {}({t}) then goto {next} end", if r.negated { "" } else { "not " });
            }
            None => {
                let re = w.regex(&r.pattern, nocase)?;
                let _ = writeln!(out, "    m = exec({re}, subject)");
                out.push_str("    if m == false then return core.fail(cx) end\n");
                if r.negated {
                    let _ = writeln!(out, "    if m then goto {next} end");
                } else {
                    let _ = writeln!(out, "    if not m then goto {next} end");
                }
                if need_rc {
                    out.push_str(if r.negated { "    rc = core.EMPTY\n" } else { "    rc = m\n" });
                }
            }
        }
        if need_rc && fast.is_some() {
            out.push_str("    rc = core.EMPTY\n");
        }
        if cond_groups {
            out.push_str("    cc = core.EMPTY\n");
        }
        // The headers the conditions read go to Vary when the rule applies. Without [OR]
        // every condition has run by then: they are looked up directly and added together;
        // with [OR], as each is read (cx.pv).
        let mut vary: Vec<String> = Vec::new();
        for c in &r.conditions {
            for h in vary_headers(c) {
                if !vary.iter().any(|v| v.eq_ignore_ascii_case(&h)) {
                    vary.push(h);
                }
            }
        }
        let reads = match (vary.is_empty(), r.conditions.iter().any(|c| c.ornext())) {
            (true, _) => Reads::Plain,
            (false, false) => Reads::Direct,
            (false, true) => Reads::Record,
        };
        if reads == Reads::Record {
            out.push_str("    cx.pv = nil\n");
        }
        // The conditions, [OR] chains as one test.
        let mut i = 0;
        while i < r.conditions.len() {
            let mut chain = vec![&r.conditions[i]];
            while chain.last().is_some_and(|c| c.ornext()) && i + chain.len() < r.conditions.len() {
                chain.push(&r.conditions[i + chain.len()]);
            }
            // (a condition written more than once is decided once, in c<n>)
            let mut test = "ok".to_string();
            for (j, c) in chain.iter().enumerate() {
                let _ = writeln!(out, "    -- {} ({})", cond_text(c), w.at(c.at));
                let shared = (!cond_groups && reads != Reads::Record && chain.len() == 1)
                    .then(|| memo.iter().position(|m| *m == cond_text(c)))
                    .flatten();
                if let Some(n) = shared {
                    let n = n + 1;
                    let _ = writeln!(out, "    if c{n} == nil then");
                    let code = condition(w, c, cond_groups, whole, reads, "      ")?;
                    // (the test's value straight into c<n> when it is the last line)
                    match code.strip_suffix('\n').and_then(|c| c.rsplit_once("\n      ok = ")) {
                        Some((head, value)) if !value.contains('\n') => {
                            let _ = writeln!(out, "{head}\n      c{n} = {value}\n    end");
                        }
                        _ => {
                            out.push_str(&code);
                            let _ = writeln!(out, "      c{n} = ok\n    end");
                        }
                    }
                    test = format!("c{n}");
                } else if j == 0 {
                    out.push_str(&condition(w, c, cond_groups, whole, reads, "    ")?);
                } else {
                    out.push_str("    if not ok then\n");
                    out.push_str(&condition(w, c, cond_groups, whole, reads, "      ")?);
                    out.push_str("    end\n");
                }
            }
            let _ = writeln!(out, "    if not {test} then goto {next} end");
            i += chain.len();
        }
        match reads {
            Reads::Direct => {
                let list: Vec<String> = vary.iter().map(|n| lua::string(n)).collect();
                let v = w.constant(&format!("{{ {} }}", list.join(", ")), "");
                let _ = writeln!(out, "    core.vary_list(cx, {v})");
            }
            Reads::Record => out.push_str("    core.add_vary(cx)\n"),
            Reads::Plain => {}
        }
        // [E=VAR:VAL] and [T=type], expanded whether or not there is a substitution; [E=]
        // after it (a %{ENV:VAR} in the substitution sees the value before).
        let mut env_lines = String::new();
        for f in &r.flags {
            match f.kind {
                RuleFlagKind::Env => {
                    let (e, _, _) = template_with(f.value.as_deref().unwrap_or(""), Reads::Plain, whole)?;
                    let _ = writeln!(env_lines, "    core.env_flag(cx, {e})");
                }
                RuleFlagKind::Type => {
                    if let Some(v) = &f.value {
                        let (e, _, _) = template_with(v, Reads::Plain, whole)?;
                        let _ = writeln!(out, "    core.type_flag(cx, {e})");
                    }
                }
                _ => {}
            }
        }
        let code = redirect_code(r);
        if server && r.has(RuleFlagKind::Proxy) {
            out.push_str("    -- [P]: a proxy, which this translation does not set up: refused\n");
            out.push_str("    do return core.proxy_refused(cx) end\n  end\n");
            let _ = writeln!(out, "  ::{next}::");
            continue;
        }
        let status = if r.has(RuleFlagKind::Forbidden) {
            Some(403)
        } else if r.has(RuleFlagKind::Gone) {
            Some(410)
        } else {
            code.filter(|c| !(300..400).contains(c))
        };
        if r.substitution == "-" || status.is_some() {
            out.push_str(&env_lines);
        }
        if let Some(s) = status {
            let _ = writeln!(out, "    cx.status = {s}\n    do return \"status\" end");
            out.push_str("  end\n");
            let _ = writeln!(out, "  ::{next}::");
            continue;
        }
        if r.substitution != "-" {
            let pieces = parse(&r.substitution)?;
            let backrefs = pieces.iter().any(|p| matches!(p, Piece::Rule(_) | Piece::Cond(_)));
            let (e, _, _) = template_with(&r.substitution, Reads::Plain, whole)?;
            let mut how = String::new();
            if r.has(RuleFlagKind::QsAppend) {
                how.push('A');
            }
            if r.has(RuleFlagKind::QsDiscard) {
                how.push('D');
            }
            if r.has(RuleFlagKind::QsLast) {
                how.push('L');
            }
            // A URL-path (the substitution starts with `/`), no [R], no [QSD]: without a
            // `?` in the result, splitout_queryargs() and the filename checks change
            // nothing, so only a result with one takes the general path.
            let path_only = matches!(pieces.first(), Some(Piece::Lit(b)) if b.first() == Some(&b'/'))
                && !r.has(RuleFlagKind::Redirect)
                && !how.contains('D');
            let _ = writeln!(out, "    local new = {e}");
            out.push_str(&env_lines);
            // (a URL-path written out whole, without `?`: nothing to split)
            let literal =
                path_only && pieces.iter().all(|p| matches!(p, Piece::Lit(b) if !b.contains(&b'?')));
            let ind = if literal {
                ""
            } else if path_only {
                out.push_str("    if find(new, \"?\", 1, true) then\n");
                "      "
            } else {
                "    "
            };
            if !literal && backrefs && !r.has(RuleFlagKind::UnsafeAllow3F) {
                // The pieces again, for the ranges an encoded `?` could come from.
                let kinds: String = pieces
                    .iter()
                    .map(|p| if matches!(p, Piece::Rule(_) | Piece::Cond(_)) { 'B' } else { 'L' })
                    .collect();
                let parts: Vec<String> = pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Lit(b) => lua::bytes(b),
                        Piece::Rule(n) => rule_group(*n, whole),
                        Piece::Cond(n) => format!("(cc[{n}] or \"\")"),
                        Piece::Var(v) => var(v, Reads::Plain),
                    })
                    .collect();
                // THE_REQUEST holds an encoded `?` (in its target, or a method token).
                let _ = writeln!(
                    out,
                    "{ind}local unsafe = (find(cx.target, \"%%3[fF]\") or find(cx.orig_method, \"%%3[fF]\")) and core.marks(\"{kinds}\", {})",
                    parts.join(", ")
                );
            } else if !literal {
                let _ = writeln!(out, "{ind}local unsafe = nil");
            }
            if !literal {
                let _ = writeln!(out, "{ind}new = core.split_query(cx, new, \"{how}\", unsafe)");
                let _ = write!(
                    out,
                    "{ind}if not new then\n{ind}  cx.status = 403\n{ind}  do return \"status\" end\n{ind}end\n"
                );
            }
            if path_only && !literal {
                out.push_str("    end\n");
            }
            if r.has(RuleFlagKind::DiscardPathInfo) {
                out.push_str("    cx.path_info = nil\n");
            }
            if path_only {
                out.push_str("    cx.filename = new\n");
            } else {
                let _ = writeln!(
                    out,
                    "    core.substituted(cx, new, perdir, {})",
                    if r.has(RuleFlagKind::Redirect) { "true" } else { "false" }
                );
            }
            let _ = writeln!(
                out,
                "    action = \"{}\"",
                if r.has(RuleFlagKind::NoEscape) { "noescape" } else { "changed" }
            );
        }
        if let Some(c) = code {
            let _ = writeln!(out, "    code = {c}");
        }
        if r.has(RuleFlagKind::End) {
            out.push_str("    do return action, code, core.END end\n");
        } else if r.has(RuleFlagKind::Last) {
            out.push_str("    do return action, code, false end\n");
        } else if r.substitution != "-" {
            out.push_str(if server {
                "    subject = cx.filename\n"
            } else {
                "    subject = core.subject(cx, perdir)\n"
            });
        }
        if !memo.is_empty() && !r.has(RuleFlagKind::End) && !r.has(RuleFlagKind::Last) {
            let names: Vec<String> = (1..=memo.len()).map(|i| format!("c{i}")).collect();
            let nils: Vec<&str> = names.iter().map(|_| "nil").collect();
            let _ = writeln!(out, "    {} = {}", names.join(", "), nils.join(", "));
        }
        out.push_str("  end\n");
        let _ = writeln!(out, "  ::{next}::");
    }
    out.push_str("  return action, code, false\nend\n");
    let used = crate::translate::runtime::words(&out[locals_at..]);
    let locals: Vec<&str> = ["rc", "cc", "m", "s", "ok"].into_iter().filter(|l| used.contains(l)).collect();
    let mut decl = String::new();
    if used.contains("H") {
        decl.push_str("  local H = cx.headers\n");
    }
    if !locals.is_empty() {
        let _ = writeln!(decl, "  local {}", locals.join(", "));
    }
    out.insert_str(locals_at, &decl);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_one_call_takes_a_comparison_unparenthesised() {
        for e in [
            "find(s, \"//\", 1, true)",
            "(find(s, \"a\") or find(s, \")\"))",
            "core.f(s)",
            "find(s, \"\\\")\")",
        ] {
            assert!(super::one_call(e), "{e}");
        }
        for e in ["find(s, \"a\") or find(s, \"b\")", "a + f(s)", "f(s)(t)", "x", "(a) and (b)"] {
            assert!(!super::one_call(e), "{e}");
        }
    }
}
