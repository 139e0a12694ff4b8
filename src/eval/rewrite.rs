//! Applying a mod_rewrite rule list, as `apply_rewrite_list()` and `apply_rewrite_rule()`
//! do: the pattern is matched before the conditions (so `$1` works in a RewriteCond),
//! conditions combine with `[OR]`, and the flags steer what happens next.
//!
//! The caller says where the list runs: server context (the subject is the URL-path) or
//! per-directory (the subject is the mapped filename plus PATH_INFO with the directory
//! prefix stripped, and a relative result gets the prefix back).

use super::expand::{BackrefEscape, Captures, Expander, Lookup};
use super::outcome::Step;
use crate::model::rewrite::{CondKind, RewriteCond, RewriteRule, RuleFlagKind};

/// The state a rule list reads and changes.
pub struct State {
    /// `r->filename`: for server context the URL-path, per-directory the mapped path.
    pub filename: String,
    pub path_info: Option<String>,
    pub args: Option<String>,
    /// `[T=...]`.
    pub forced_type: Option<String>,
    /// `[H=...]`.
    pub forced_handler: Option<String>,
    pub status: u16,
    /// The literal start of the last substitution applied, before any expansion.
    pub literal_prefix: String,
    /// That rule had `[UnsafePrefixStat]`.
    pub unsafe_prefix_stat: bool,
}

impl State {
    /// The state before the first rule: status 200, nothing forced.
    pub fn new(filename: String, path_info: Option<String>, args: Option<String>) -> State {
        State {
            filename,
            path_info,
            args,
            forced_type: None,
            forced_handler: None,
            status: 200,
            literal_prefix: String::new(),
            unsafe_prefix_stat: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// No rule changed anything.
    None,
    /// Something was rewritten (`filename` and `args` hold the result).
    Changed,
    /// Like Changed, but `[NE]`: no escaping of the redirect target.
    ChangedNoEscape,
    /// A rule set a final status (`[F]`, `[G]`, `[R=4xx]`).
    Status,
}

/// What else the list decided.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub passthrough: bool,
    pub end: bool,
    pub proxy: bool,
    pub redirect: Option<u16>,
}

/// Runs `rules`.  `perdir` is the directory prefix (`/var/www/html/`) for per-directory
/// lists.  `look` answers variables; `file` answers file tests.
pub fn apply_list(
    rules: &[&RewriteRule],
    perdir: Option<&str>,
    state: &mut State,
    look: &mut dyn RewriteEnv,
    trace: &mut Vec<Step>,
) -> (Action, Flags) {
    let mut changed = Action::None;
    let mut flags = Flags::default();
    let mut rounds = 0;
    'restart: loop {
        let mut i = 0;
        while i < rules.len() {
            let rule = rules[i];
            if look.subrequest() && (rule.has(RuleFlagKind::NoSubreq) || rule.has(RuleFlagKind::Redirect)) {
                i += 1;
                continue;
            }
            match apply_rule(rule, perdir, state, look, trace) {
                RuleResult::NoMatch => {
                    // A failed rule skips the rules chained to it.
                    while i < rules.len() && rules[i].has(RuleFlagKind::Chain) {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                RuleResult::Status => return (Action::Status, flags),
                RuleResult::Matched { substituted } => {
                    if substituted {
                        changed = if rule.has(RuleFlagKind::NoEscape) {
                            Action::ChangedNoEscape
                        } else {
                            Action::Changed
                        };
                    }
                    if let Some(code) = redirect_code(rule) {
                        flags.redirect = Some(code);
                    }
                    if rule.has(RuleFlagKind::PassThrough) {
                        flags.passthrough = true;
                        break 'restart;
                    }
                    if rule.has(RuleFlagKind::End) {
                        flags.end = true;
                        break 'restart;
                    }
                    if rule.has(RuleFlagKind::Proxy) {
                        flags.proxy = true;
                        break 'restart;
                    }
                    if rule.has(RuleFlagKind::Last) {
                        break 'restart;
                    }
                    if rule.has(RuleFlagKind::Next) {
                        rounds += 1;
                        if rounds >= 32000 {
                            state.status = 500;
                            return (Action::Status, flags);
                        }
                        continue 'restart;
                    }
                    if let Some(skip) = rule
                        .flag(RuleFlagKind::Skip)
                        .and_then(|f| f.value.as_deref())
                        .and_then(|v| v.parse::<usize>().ok())
                    {
                        i += skip;
                    }
                    i += 1;
                }
            }
        }
        break;
    }
    (changed, flags)
}

fn redirect_code(rule: &RewriteRule) -> Option<u16> {
    let f = rule.flag(RuleFlagKind::Redirect)?;
    Some(match f.value.as_deref() {
        None => 302,
        Some(v) if v.eq_ignore_ascii_case("permanent") => 301,
        Some(v) if v.eq_ignore_ascii_case("temp") => 302,
        Some(v) if v.eq_ignore_ascii_case("seeother") => 303,
        Some(v) => v.parse().unwrap_or(302),
    })
}

/// Everything a rule needs from the request besides the state.
pub trait RewriteEnv: Lookup {
    /// File tests on an expanded test string (`-f`, `-d`, ...).
    fn test_file(&mut self, kind: CondKind, path: &str) -> bool;
    /// Apache's `ap_is_url` style check for a substitution that is a full URL.
    fn is_self(&mut self, url: &str) -> Option<String>;
    /// The URL prefix this server answers as (`http://example.test`), for `[R]`.
    fn self_url(&mut self) -> String;
    /// `[E=VAR:VAL]` (`value` None for `[E=!VAR]`), visible at once as `%{ENV:VAR}`.
    fn set_env(&mut self, name: &str, value: Option<&str>);
    /// `RewriteCond expr "..."`: an `ap_expr`; one that cannot be decided is false and
    /// makes the outcome unknown.
    fn expr_cond(&mut self, text: &str) -> bool;
    /// Whether this is a sub-request (mod_dir's DirectoryIndex lookup): mod_rewrite skips
    /// the rules with [NS] or [R] there.
    fn subrequest(&self) -> bool {
        false
    }
}

enum RuleResult {
    NoMatch,
    Matched { substituted: bool },
    Status,
}

/// A compiled pattern; compile errors mean no match (the model reported them already).
fn regex_match(pattern: &str, nocase: bool, subject: &str) -> Option<Captures> {
    let re = compiled(pattern, nocase)?;
    let caps = re.captures(subject.as_bytes()).ok()??;
    let mut out = Vec::with_capacity(caps.len());
    for i in 0..caps.len() {
        out.push(caps.get(i).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned()));
    }
    Some(Captures(out))
}

type RegexCache = std::collections::HashMap<(String, bool), Option<std::rc::Rc<pcre2::bytes::Regex>>>;

fn compiled(pattern: &str, nocase: bool) -> Option<std::rc::Rc<pcre2::bytes::Regex>> {
    thread_local! {
        static CACHE: std::cell::RefCell<RegexCache> = std::cell::RefCell::new(RegexCache::new());
    }
    CACHE.with(|c| {
        c.borrow_mut()
            .entry((pattern.to_string(), nocase))
            .or_insert_with(|| {
                pcre2::bytes::RegexBuilder::new()
                    .caseless(nocase)
                    .dotall(true)
                    .build(pattern)
                    .ok()
                    .map(std::rc::Rc::new)
            })
            .clone()
    })
}

fn apply_rule(
    rule: &RewriteRule,
    perdir: Option<&str>,
    state: &mut State,
    look: &mut dyn RewriteEnv,
    trace: &mut Vec<Step>,
) -> RuleResult {
    let mut subject = state.filename.clone();
    if let Some(dir) = perdir {
        if let Some(pi) = state.path_info.as_deref().filter(|p| !p.is_empty()) {
            subject.push_str(pi);
        }
        if let Some(rest) = subject.strip_prefix(dir) {
            subject = rest.to_string();
        }
    }
    let nocase = rule.has(RuleFlagKind::NoCase);
    let m = regex_match(&rule.pattern, nocase, &subject);
    let matched = m.is_some() != rule.negated;
    trace.push(Step {
        at: Some(rule.at),
        depth: 0,
        text: format!(
            "RewriteRule {}{} against '{subject}': {}",
            if rule.negated { "!" } else { "" },
            rule.pattern,
            if matched { "matches" } else { "no match" }
        ),
    });
    if !matched {
        return RuleResult::NoMatch;
    }
    let rule_caps = if rule.negated { Captures::default() } else { m.unwrap_or_default() };
    let mut cond_caps = Captures::default();
    let mut i = 0;
    let conds = &rule.conditions;
    while i < conds.len() {
        let c = &conds[i];
        let ok = apply_cond(c, &rule_caps, &mut cond_caps, look, trace);
        if c.ornext() {
            if ok {
                // The rest of the [OR] chain is skipped.
                while i < conds.len() && conds[i].ornext() {
                    i += 1;
                }
            }
        } else if !ok {
            trace.push(Step {
                at: Some(rule.at),
                depth: 1,
                text: "conditions fail: rule not applied".into(),
            });
            return RuleResult::NoMatch;
        }
        i += 1;
    }
    let escape =
        (rule.has(RuleFlagKind::Escape) || rule.has(RuleFlagKind::EscapeCtls)).then(|| BackrefEscape {
            all: rule.has(RuleFlagKind::Escape),
            only: rule.flag(RuleFlagKind::Escape).and_then(|f| f.value.clone()),
            ctls: rule.has(RuleFlagKind::EscapeCtls),
            keep: rule.flag(RuleFlagKind::EscapeNoEscape).and_then(|f| f.value.clone()),
            no_plus: rule.has(RuleFlagKind::EscapeNoPlus),
        });
    let ex = Expander { rule: &rule_caps, cond: &cond_caps, escape };
    // [E=VAR:VAL] is expanded whether or not there is a substitution, after it (a
    // %{ENV:VAR} in the same rule's substitution sees the value before), and without
    // [B]'s escaping (do_expand_env(); measured on 2.4.71).
    let plain = Expander { rule: &rule_caps, cond: &cond_caps, escape: None };
    let set_env = |look: &mut dyn RewriteEnv| {
        for f in rule.flags.iter().filter(|f| f.kind == RuleFlagKind::Env) {
            let v = plain.expand(f.value.as_deref().unwrap_or(""), look);
            if let Some(name) = v.strip_prefix('!') {
                look.set_env(name, None);
            } else {
                let (name, value) = v.split_once(':').unwrap_or((v.as_str(), ""));
                look.set_env(name, Some(value));
            }
        }
    };
    if let Some(t) = rule.flag(RuleFlagKind::Type).and_then(|f| f.value.as_deref()) {
        state.forced_type = Some(content_type_lower(&ex.expand(t, look)));
    }
    if let Some(h) = rule.flag(RuleFlagKind::Handler).and_then(|f| f.value.as_deref()) {
        state.forced_handler = Some(ex.expand(h, look));
    }
    let status = if rule.has(RuleFlagKind::Forbidden) {
        Some(403)
    } else if rule.has(RuleFlagKind::Gone) {
        Some(410)
    } else {
        redirect_code(rule).filter(|c| !(300..400).contains(c))
    };
    if rule.substitution == "-" || status.is_some() {
        set_env(look);
        if let Some(s) = status {
            state.status = s;
            trace.push(Step { at: Some(rule.at), depth: 1, text: format!("answers {s}") });
            return RuleResult::Status;
        }
        trace.push(Step { at: Some(rule.at), depth: 1, text: "no substitution ('-')".into() });
        return RuleResult::Matched { substituted: false };
    }
    let mut marks = Vec::new();
    let mut new = ex.expand_marking(&rule.substitution, look, &mut marks);
    set_env(look);
    trace.push(Step { at: Some(rule.at), depth: 1, text: format!("rewrite '{subject}' -> '{new}'") });
    if perdir.is_some() && rule.has(RuleFlagKind::DiscardPathInfo) {
        state.path_info = None;
    }
    // Since 2.4.60 a `?` that a back-reference brought in (from an encoded `%3f` in
    // the request) does not start a query unless [UnsafeAllow3F].
    let unsafe_3f = !rule.has(RuleFlagKind::UnsafeAllow3F)
        && look.var("THE_REQUEST").to_ascii_lowercase().contains("%3f");
    if let Err(()) = split_query(&mut new, state, rule, if unsafe_3f { &marks } else { &[] }) {
        state.status = 403;
        trace.push(Step {
            at: Some(rule.at),
            depth: 1,
            text: "a '?' from a back-reference would start the query (no UnsafeAllow3F): 403".into(),
        });
        return RuleResult::Status;
    }
    state.literal_prefix = super::expand::literal_prefix(&rule.substitution).to_string();
    state.unsafe_prefix_stat = rule.has(RuleFlagKind::UnsafePrefixStat);
    if let Some(dir) = perdir
        && !new.starts_with('/')
        && !is_absolute_uri(&new)
    {
        new = format!("{dir}{new}");
    }
    if rule.has(RuleFlagKind::Proxy) {
        state.filename = format!("proxy:{new}");
        return RuleResult::Matched { substituted: true };
    }
    if rule.has(RuleFlagKind::Redirect) {
        if !is_absolute_uri(&new) {
            let base = look.self_url();
            new = format!("{base}{}", if new.starts_with('/') { new.clone() } else { format!("/{new}") });
        }
        state.filename = new;
        return RuleResult::Matched { substituted: true };
    }
    // A full URL naming this server is reduced to its path.
    if is_absolute_uri(&new)
        && let Some(path) = look.is_self(&new)
    {
        new = path;
    }
    state.filename = new;
    RuleResult::Matched { substituted: true }
}

/// `splitout_queryargs()`: `?` in the result replaces (or with [QSA] prepends to) the
/// query; [QSD] drops it; [QSL] splits at the last `?`.  `Err` when the splitting `?`
/// lies in one of the `unsafe_marks` ranges.
fn split_query(
    new: &mut String,
    state: &mut State,
    rule: &RewriteRule,
    unsafe_marks: &[std::ops::Range<usize>],
) -> Result<(), ()> {
    if is_absolute_uri(new) && !new.contains('?') && !matches!(scheme_of(new), Some("http" | "https" | "ftp"))
    {
        state.args = None;
        return Ok(());
    }
    if rule.has(RuleFlagKind::QsDiscard) {
        state.args = None;
    }
    let skip = scheme_len(new);
    let pos = if rule.has(RuleFlagKind::QsLast) { new[skip..].rfind('?') } else { new[skip..].find('?') };
    if let Some(p) = pos {
        if unsafe_marks.iter().any(|m| m.contains(&(skip + p))) {
            return Err(());
        }
        let q = new[skip + p + 1..].to_string();
        new.truncate(skip + p);
        if rule.has(RuleFlagKind::QsAppend) {
            // An empty new query leaves the old one as it is.
            if !q.is_empty() {
                state.args = Some(match &state.args {
                    Some(old) => format!("{q}&{old}"),
                    None => q,
                });
            }
        } else {
            state.args = Some(q);
        }
        if let Some(a) = &mut state.args
            && a.ends_with('&')
        {
            a.pop();
        }
        if state.args.as_deref() == Some("") {
            state.args = None;
        }
    }
    Ok(())
}

fn scheme_of(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    (rest.starts_with("//")
        && !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
    .then_some(scheme)
}

fn scheme_len(s: &str) -> usize {
    scheme_of(s).map_or(0, |sc| sc.len() + 3)
}

/// mod_rewrite's `is_absolute_uri()`: a scheme it knows followed by `://` (or `mailto:`...).
pub fn is_absolute_uri(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    [
        "http://",
        "https://",
        "ftp://",
        "ajp://",
        "fcgi://",
        "scgi://",
        "ws://",
        "wss://",
        "h2://",
        "h2c://",
        "uwsgi://",
        "mailto:",
        "nntp://",
        "news:",
        "ldap://",
        "gopher://",
        "balancer://",
        "unix:",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
}

fn apply_cond(
    c: &RewriteCond,
    rule_caps: &Captures,
    cond_caps: &mut Captures,
    look: &mut dyn RewriteEnv,
    trace: &mut Vec<Step>,
) -> bool {
    let ex = Expander { rule: rule_caps, cond: cond_caps, escape: None };
    let input = ex.expand(&c.test, look);
    let operand = &c.pattern.operand;
    let nocase = c.nocase();
    let rc = match c.pattern.kind {
        CondKind::Regex => match regex_match(operand, nocase, &input) {
            Some(caps) => {
                if !c.pattern.negated {
                    *cond_caps = caps;
                }
                true
            }
            None => false,
        },
        CondKind::StrEq => {
            if nocase {
                input.eq_ignore_ascii_case(operand)
            } else {
                input == *operand
            }
        }
        CondKind::StrGt | CondKind::StrGe | CondKind::StrLt | CondKind::StrLe => {
            let cmp =
                if nocase { cmp_nocase(&input, operand) } else { compare_lexicography(&input, operand) };
            match c.pattern.kind {
                CondKind::StrGt => cmp > 0,
                CondKind::StrGe => cmp >= 0,
                CondKind::StrLt => cmp < 0,
                _ => cmp <= 0,
            }
        }
        CondKind::IntEq | CondKind::IntLt | CondKind::IntLe | CondKind::IntGt | CondKind::IntGe => {
            let (a, b) = (atoi(&input), atoi(operand));
            match c.pattern.kind {
                CondKind::IntEq => a == b,
                CondKind::IntLt => a < b,
                CondKind::IntLe => a <= b,
                CondKind::IntGt => a > b,
                _ => a >= b,
            }
        }
        kind @ (CondKind::FileExists
        | CondKind::FileSize
        | CondKind::FileLink
        | CondKind::FileDir
        | CondKind::FileExecutable
        | CondKind::LookupUrl
        | CondKind::LookupFile) => look.test_file(kind, &input),
        CondKind::Expr => look.expr_cond(operand),
    };
    let result = rc != c.pattern.negated;
    trace.push(Step {
        at: Some(c.at),
        depth: 1,
        text: format!(
            "RewriteCond '{input}' {}{}{}: {}{}",
            if c.pattern.negated { "!" } else { "" },
            cond_op(c.pattern.kind),
            operand,
            if result { "true" } else { "false" },
            if c.ornext() { " [OR]" } else { "" }
        ),
    });
    result
}

/// The operator as a RewriteCond writes it (`-f`, `=`, `-lt`, ...); empty for a regex.
pub fn cond_op(k: CondKind) -> &'static str {
    match k {
        CondKind::Regex => "",
        CondKind::FileExists => "-f",
        CondKind::FileSize => "-s",
        CondKind::FileLink => "-l",
        CondKind::FileDir => "-d",
        CondKind::FileExecutable => "-x",
        CondKind::LookupUrl => "-U",
        CondKind::LookupFile => "-F",
        CondKind::StrLt => "<",
        CondKind::StrLe => "<=",
        CondKind::StrEq => "=",
        CondKind::StrGt => ">",
        CondKind::StrGe => ">=",
        CondKind::IntLt => "-lt",
        CondKind::IntLe => "-le",
        CondKind::IntEq => "-eq",
        CondKind::IntGt => "-gt",
        CondKind::IntGe => "-ge",
        CondKind::Expr => "expr ",
    }
}

/// `compare_lexicography()`: the longer string is greater; equal lengths compare bytes.
pub fn compare_lexicography(a: &str, b: &str) -> i32 {
    if a.len() != b.len() {
        return if a.len() > b.len() { 1 } else { -1 };
    }
    match a.as_bytes().cmp(b.as_bytes()) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

fn cmp_nocase(a: &str, b: &str) -> i32 {
    match a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase()) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

use crate::model::server::atoi;

/// A content type as Apache stores it (ap_content_type_tolower): the type and subtype
/// in lower case, parameters as written (`[T=Text/X-Custom]` answers `text/x-custom`).
pub fn content_type_lower(t: &str) -> String {
    match t.find(';') {
        Some(i) => t[..i].to_ascii_lowercase() + &t[i..],
        None => t.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_compare_looks_at_length_first() {
        assert_eq!(compare_lexicography("/rt/lex/a", "/rt/m"), 1);
        assert_eq!(compare_lexicography("b", "a"), 1);
        assert_eq!(compare_lexicography("a", "a"), 0);
        assert_eq!(atoi(" 42abc"), 42);
        assert_eq!(atoi("-7"), -7);
    }
}
