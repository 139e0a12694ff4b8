//! Fast paths: most patterns in real configurations are a literal, a literal at one end,
//! or "everything" (`^(.*)$`, `.*`).  For those the Lua side need not run the regex
//! machine: a plain `string.find`, a comparison or the whole subject gives the same match
//! and the same captures.  Only shapes whose meaning is certain under Apache's options
//! (DOTALL, DOLLAR_ENDONLY, bytes, ASCII-only case folding) are recognised; the tests
//! below check each against PCRE2.

use super::Options;
use super::ast::{Assertion, GroupKind, Node, RepeatMode};
use super::byteset::ByteSet;

/// What `lighten_re.lua` does instead of running the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fast {
    /// The whole subject matches; every group (there are `groups`) captures all of it.
    Whole { groups: usize },
    /// The subject equals the literal.
    Equal(Vec<u8>),
    /// The subject starts with the literal (the match is the literal).
    Prefix(Vec<u8>),
    /// The subject ends with the literal.
    Suffix(Vec<u8>),
    /// The literal occurs anywhere (the match is its first occurrence).
    Contains(Vec<u8>),
    /// The literal occurs anywhere and the match is the whole subject (`^.*L.*$`).
    ContainsWhole(Vec<u8>),
    /// The subject is empty.
    Empty,
    /// At least one byte (`.` with DOTALL); the match is the first byte.
    NonEmpty,
    /// The last byte is in the set (`^.*[^/]$`); the match is the whole subject.
    LastIn(ByteSet),
    /// At least `min` bytes of the set start the subject (`^[a-z0-9]+`); the match is
    /// the whole run of them.
    FirstRun { set: ByteSet, min: u32 },
    /// One of the literals occurs (`^.*(a|bc).*$`); the match is the whole subject and
    /// the group, when there is one (`groups` is 0 or 1), is the alternative PCRE
    /// reports: the greedy `.*` makes it the one starting last, the first listed among
    /// those starting there. `ci`: the literals are lower case, compare caselessly.
    AnyWhole { alts: Vec<Vec<u8>>, groups: usize, ci: bool },
}

impl Fast {
    /// The Lua table `lighten_re.lua` reads (`fast = {kind, lit, ng, ci}`).
    pub fn lua(&self, caseless: bool) -> String {
        let lit = |b: &[u8], kind: u8| {
            let l = if caseless { b.to_ascii_lowercase() } else { b.to_vec() };
            format!(
                "{{{kind},{}{}}}",
                crate::translate::lua::bytes(&l),
                if caseless { ",ci=true" } else { "" }
            )
        };
        match self {
            Fast::Whole { groups } => format!("{{1,\"\",ng={groups}}}"),
            Fast::Equal(b) => lit(b, 2),
            Fast::Prefix(b) => lit(b, 3),
            Fast::Suffix(b) => lit(b, 4),
            Fast::Contains(b) => lit(b, 5),
            Fast::ContainsWhole(b) => lit(b, 8),
            Fast::Empty => "{6,\"\"}".into(),
            Fast::NonEmpty => "{7,\"\"}".into(),
            // Sets come folded from the parser: no case flag.
            Fast::LastIn(set) => format!("{{9,\"\",set=\"{}\"}}", set.to_hex()),
            Fast::FirstRun { set, min } => format!("{{10,\"\",set=\"{}\",min={min}}}", set.to_hex()),
            Fast::AnyWhole { alts, groups, ci } => {
                let list: Vec<String> = alts.iter().map(|a| crate::translate::lua::bytes(a)).collect();
                format!(
                    "{{11,\"\",alts={{{}}},ng={groups}{}}}",
                    list.join(","),
                    if *ci { ",ci=true" } else { "" }
                )
            }
        }
    }
}

/// `compiled` with its fast path attached when `pattern` has one: the program table then
/// starts with `fast = {...}`, which `lighten_re.lua` runs instead of PCRE2 (the pattern
/// stays, for searches that start later in the subject).
pub fn attach(pattern: &str, opts: &Options, mut compiled: super::Compiled) -> super::Compiled {
    if let Some(f) = fast(pattern, opts)
        && compiled.program.starts_with('{')
    {
        compiled.program = format!("{{fast = {}, {}", f.lua(opts.caseless), &compiled.program[1..]);
    }
    compiled
}

/// The fast path for `pattern`, when there is one under `opts`.
pub fn fast(pattern: &str, opts: &Options) -> Option<Fast> {
    // Only Apache's options: `.` takes every byte, `$` is the very end.
    if !opts.dotall || !opts.dollar_endonly || opts.multiline || opts.extended {
        return None;
    }
    let p = pattern.as_bytes();
    match pattern {
        "^(.*)$" | "^(.*)" | "(.*)$" | "(.*)" => return Some(Fast::Whole { groups: 1 }),
        "^.*$" | "^.*" | ".*$" | ".*" => return Some(Fast::Whole { groups: 0 }),
        "^$" => return Some(Fast::Empty),
        "." => return Some(Fast::NonEmpty),
        _ => {}
    }
    let (anchored_start, rest) = match p.first() {
        Some(b'^') => (true, &p[1..]),
        _ => (false, p),
    };
    let (anchored_end, body) = match rest.last() {
        Some(b'$') if !rest.ends_with(b"\\$") => (true, &rest[..rest.len() - 1]),
        _ => (false, rest),
    };
    if anchored_start
        && anchored_end
        && let Some(mid) = body.strip_prefix(b".*").and_then(|b| b.strip_suffix(b".*"))
    {
        return match literal(mid) {
            Some(l) if !l.is_empty() => Some(Fast::ContainsWhole(l)),
            Some(_) => None,
            None => shaped(pattern, opts),
        };
    }
    let Some(lit) = literal(body) else { return shaped(pattern, opts) };
    if lit.is_empty() {
        return None;
    }
    Some(match (anchored_start, anchored_end) {
        (true, true) => Fast::Equal(lit),
        (true, false) => Fast::Prefix(lit),
        (false, true) => Fast::Suffix(lit),
        (false, false) => Fast::Contains(lit),
    })
}

/// Shapes recognised on the parsed tree (where `(?i)`, classes and escapes are resolved).
fn shaped(pattern: &str, opts: &Options) -> Option<Fast> {
    let parsed = super::parser::parse(pattern, opts).ok()?;
    let Node::Concat(items) = &parsed.root else { return None };
    let any = |n: &Node| match n {
        Node::Repeat(r) => {
            r.min == 0
                && r.max.is_none()
                && r.mode == RepeatMode::Greedy
                && r.node.single_byte().is_some_and(|s| s.is_full())
        }
        _ => false,
    };
    match items.as_slice() {
        [Node::Assert(Assertion::Start), dots, last, Node::Assert(Assertion::End)] if any(dots) => {
            if let Some(set) = last.single_byte() {
                return Some(Fast::LastIn(set));
            }
            None
        }
        [Node::Assert(Assertion::Start), Node::Repeat(r)]
            if r.min <= 1 && r.max.is_none() && r.mode != RepeatMode::Lazy && parsed.groups == 0 =>
        {
            r.node.single_byte().map(|set| Fast::FirstRun { set, min: r.min })
        }
        [Node::Assert(Assertion::Start), d1, Node::Group(g), d2, Node::Assert(Assertion::End)]
            if any(d1) && any(d2) =>
        {
            let groups = match g.kind {
                GroupKind::Capture(1) if parsed.groups == 1 => 1,
                GroupKind::NonCapture if parsed.groups == 0 => 0,
                _ => return None,
            };
            let mut ci = None;
            let mut out = alternatives(&g.body, &mut ci)?;
            if out.iter().any(Vec::is_empty) {
                return None;
            }
            let ci = ci.unwrap_or(false);
            if ci {
                for l in &mut out {
                    l.make_ascii_lowercase();
                }
            }
            Some(Fast::AnyWhole { alts: out, groups, ci })
        }
        _ => None,
    }
}

/// Whether a pattern matches, when that is a question of how the subject ends: any bytes
/// (at least `min` of them), then one of `ends`, then the end (`.+\.ph(ar|p|tml)$`, the
/// `<FilesMatch>` of Debian's PHP packages; `\.(gif|jpe?g)$` is not one, its `?` aside).
/// Only for a yes or no: the captures are not worked out. `ci`: the literals are lower
/// case, compare caselessly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ends {
    pub min: usize,
    pub ends: Vec<Vec<u8>>,
    pub ci: bool,
}

/// The [`Ends`] shape of `pattern` under `opts`, if it has it.
pub fn ends(pattern: &str, opts: &Options) -> Option<Ends> {
    if !opts.dotall || !opts.dollar_endonly || opts.multiline || opts.extended {
        return None;
    }
    let parsed = super::parser::parse(pattern, opts).ok()?;
    let Node::Concat(items) = &parsed.root else { return None };
    let (Node::Assert(Assertion::End), body) = items.split_last()? else { return None };
    // What comes first: `^.*`, `^.+`, `.*` or `.+` (any byte, repeated without bound,
    // giving bytes back: a possessive `.*+` never leaves any for the rest), or nothing
    // before the literal part of an unanchored pattern.
    let (min, rest) = match body {
        [Node::Assert(Assertion::Start), Node::Repeat(r), rest @ ..] | [Node::Repeat(r), rest @ ..]
            if r.max.is_none()
                && r.min <= 1
                && r.mode != RepeatMode::Possessive
                && r.node.single_byte().is_some_and(|s| s.is_full()) =>
        {
            (r.min as usize, rest)
        }
        [Node::Assert(_), ..] => return None,
        rest => (0, rest),
    };
    // Then literal bytes, with at most one group of literal alternatives among them.
    let mut ends: Vec<Vec<u8>> = vec![Vec::new()];
    let mut ci: Option<bool> = None;
    let mut grouped = false;
    for n in rest {
        let tails = match n {
            Node::Literal { .. } => alternatives(n, &mut ci)?,
            Node::Group(g) if !grouped && matches!(g.kind, GroupKind::Capture(_) | GroupKind::NonCapture) => {
                grouped = true;
                alternatives(&g.body, &mut ci)?
            }
            _ => return None,
        };
        ends = ends
            .iter()
            .flat_map(|e| tails.iter().map(move |t| [e.as_slice(), t.as_slice()].concat()))
            .collect();
    }
    if ends.iter().any(Vec::is_empty) {
        return None;
    }
    let ci = ci.unwrap_or(false);
    if ci {
        ends.iter_mut().for_each(|e| e.make_ascii_lowercase());
    }
    Some(Ends { min, ends, ci })
}

/// The literals `body` stands for: one, or one per alternative of an alternation of
/// literals; ASCII only, and every letter compared the same way (`ci`, across calls).
fn alternatives(body: &Node, ci: &mut Option<bool>) -> Option<Vec<Vec<u8>>> {
    let alts: Vec<&Node> = match body {
        Node::Alt(v) => v.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for a in alts {
        let bytes: Vec<&Node> = match a {
            Node::Concat(v) => v.iter().collect(),
            Node::Literal { .. } => vec![a],
            _ => return None,
        };
        let mut lit = Vec::new();
        for b in bytes {
            let Node::Literal { byte, caseless } = b else { return None };
            if !byte.is_ascii() {
                return None;
            }
            // Every letter compared the same way, or no fast path.
            if byte.is_ascii_alphabetic() && *ci.get_or_insert(*caseless) != *caseless {
                return None;
            }
            lit.push(*byte);
        }
        out.push(lit);
    }
    Some(out)
}

/// A run of literal bytes: no metacharacter, and backslash only before punctuation
/// (which PCRE2 takes literally).
fn literal(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\\' => {
                let n = *b.get(i + 1)?;
                if n.is_ascii_alphanumeric() || !n.is_ascii() || n.is_ascii_whitespace() {
                    return None;
                }
                out.push(n);
                i += 2;
            }
            b'.' | b'^' | b'$' | b'*' | b'+' | b'?' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'|' => {
                return None;
            }
            // Bytes outside ASCII fold differently in caseless mode: keep to the machine.
            c if !c.is_ascii() => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PCRE2 says: the whole match's bounds and the groups, or None.
    type Pcre2Match = Option<(usize, usize, Vec<Option<Vec<u8>>>)>;

    fn pcre2(pattern: &str, caseless: bool, s: &[u8]) -> Pcre2Match {
        // DOLLAR_ENDONLY, which the crate cannot set: a final `$` is `\z` then.
        let pattern = match pattern.strip_suffix('$') {
            Some(p) if !p.ends_with('\\') => format!("{p}\\z"),
            _ => pattern.to_string(),
        };
        let re = pcre2::bytes::RegexBuilder::new().caseless(caseless).dotall(true).build(&pattern).unwrap();
        let c = re.captures(s).unwrap()?;
        let m = c.get(0).unwrap();
        let groups = (1..c.len()).map(|i| c.get(i).map(|g| g.as_bytes().to_vec())).collect();
        Some((m.start(), m.end(), groups))
    }

    /// The fast path run in Rust exactly as lighten_re.lua runs it.
    fn run(f: &Fast, caseless: bool, s: &[u8]) -> Pcre2Match {
        let x = if caseless { s.to_ascii_lowercase() } else { s.to_vec() };
        let low = |l: &Vec<u8>| if caseless { l.to_ascii_lowercase() } else { l.clone() };
        match f {
            Fast::Whole { groups } => Some((0, s.len(), vec![Some(s.to_vec()); *groups])),
            Fast::Equal(l) => (x == low(l)).then(|| (0, s.len(), vec![])),
            Fast::Prefix(l) => x.starts_with(&low(l)).then(|| (0, l.len(), vec![])),
            Fast::Suffix(l) => x.ends_with(&low(l)).then(|| (s.len() - l.len(), s.len(), vec![])),
            Fast::Contains(l) => {
                let l = low(l);
                x.windows(l.len()).position(|w| w == &l[..]).map(|i| (i, i + l.len(), vec![]))
            }
            Fast::ContainsWhole(l) => {
                let l = low(l);
                x.windows(l.len()).any(|w| w == &l[..]).then(|| (0, s.len(), vec![]))
            }
            Fast::Empty => s.is_empty().then(|| (0, 0, vec![])),
            Fast::NonEmpty => (!s.is_empty()).then(|| (0, 1, vec![])),
            Fast::LastIn(set) => s.last().filter(|b| set.contains(**b)).map(|_| (0, s.len(), vec![])),
            Fast::FirstRun { set, min } => {
                let run = s.iter().take_while(|b| set.contains(**b)).count();
                (run >= *min as usize).then(|| (0, run, vec![]))
            }
            Fast::AnyWhole { alts, groups, ci } => {
                let x = if *ci { s.to_ascii_lowercase() } else { s.to_vec() };
                let mut best: Option<(usize, usize)> = None;
                for (k, l) in alts.iter().enumerate() {
                    let last = x.windows(l.len()).rposition(|w| w == &l[..]);
                    if let Some(i) = last
                        && best.is_none_or(|(b, _)| i > b)
                    {
                        best = Some((i, k));
                    }
                }
                let (i, k) = best?;
                let g = if *groups == 1 { vec![Some(s[i..i + alts[k].len()].to_vec())] } else { vec![] };
                Some((0, s.len(), g))
            }
        }
    }

    #[test]
    fn fast_paths_mean_what_pcre2_means() {
        let patterns = [
            "^(.*)$",
            "^(.*)",
            "(.*)$",
            "(.*)",
            "^.*$",
            ".*",
            "^$",
            ".",
            "POST",
            "gzip",
            "on",
            "^index\\.php$",
            "^wp-admin",
            "\\.gz$",
            "\\.html\\.gz$",
            "^.*//.*$",
            "^/foo\\-bar$",
            "a\\/b",
            "^x$",
            "^.*[^/]$",
            "^.*/$",
            "^.*[a-c]$",
            "^[a-z0-9\\\"]+",
            "^[^/]*",
            "^x+",
            "^.*(comment_author_|wordpress_logged_in|wp-postpass_).*$",
            "^.*(a|ab|b).*$",
            "^.*(?:Mobile|Android).*$",
            "^.*(b|a).*$",
            "^.*(aa|a).*$",
        ];
        let subjects: [&[u8]; 24] = [
            b"",
            b"a",
            b"\n",
            b"POST",
            b"post",
            b"xPOSTy",
            b"gzip, deflate",
            b"GZIP",
            b"index.php",
            b"INDEX.PHP",
            b"index.php\n",
            b"/a//b",
            b"wp-admin/x",
            b"f.html.gz",
            b"a/b\n",
            b"\xe9on\n",
            b"/",
            b"/blog/",
            b"x/",
            b"wordpress_logged_in_1=x; comment_author_2=y",
            b"ab ba aab",
            b"Mozilla (ANDROID) mobile",
            b"\"Nokia\" 1",
            b"xxxy",
        ];
        let mut checked = 0;
        for p in patterns {
            for caseless in [false, true] {
                let f = fast(p, &Options::apache(caseless)).unwrap_or_else(|| panic!("{p}: no fast path"));
                for s in subjects {
                    assert_eq!(run(&f, caseless, s), pcre2(p, caseless, s), "{p} [nc={caseless}] on {s:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 500);
    }

    #[test]
    fn ends_mean_what_pcre2_means() {
        let patterns = [
            ".+\\.ph(ar|p|tml)$",
            "^.+\\.ph(ar|p|tml)$",
            ".*\\.(?:gif|JPG)$",
            "\\.(php|inc)$",
            "^.*\\.bak$",
            "x(a|b)y$",
            ".+ht$",
            ".*?\\.txt$",
        ];
        let subjects: [&[u8]; 16] = [
            b"",
            b".php",
            b"a.php",
            b"A.PHP",
            b"a.phar",
            b"x.phtml",
            b"a.php\n",
            b"\n.php",
            b"a.php.txt",
            b"c.gif",
            b"c.jpg",
            b"x.INC",
            b".bak",
            b"xay",
            b"xby",
            b"ht",
        ];
        let mut checked = 0;
        for p in patterns {
            for caseless in [false, true] {
                let e = ends(p, &Options::apache(caseless)).unwrap_or_else(|| panic!("{p}: no ends shape"));
                for s in subjects {
                    let x = if e.ci { s.to_ascii_lowercase() } else { s.to_vec() };
                    let ours = e.ends.iter().any(|l| x.len() >= l.len() + e.min && x.ends_with(l));
                    assert_eq!(ours, pcre2(p, caseless, s).is_some(), "{p} [nc={caseless}] on {s:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 200);
        for p in [
            ".++\\.txt$",
            "^.*+\\.txt$",
            ".{1,}+x$",
            "\\.(gif|jpe?g)$",
            "^x(a|b)$",
            "(a|b)(c|d)$",
            "\\.php",
            ".{2}x$",
            "(a|)$",
            "(?=a)b$",
        ] {
            assert_eq!(ends(p, &Options::apache(false)), None, "{p}");
        }
    }

    #[test]
    fn only_certain_shapes_are_recognised() {
        for p in [
            "^(.*)/$",
            "a|b",
            "^[a-z]+$",
            "\\d",
            "x*",
            "^.*(a|)$",
            "^.*(a|b)(c).*$",
            "\\w$",
            "caf\u{e9}",
            "^a\\sb$",
            "^[a-z]+?",
        ] {
            assert_eq!(fast(p, &Options::apache(false)), None, "{p}");
        }
        assert_eq!(
            fast("^.*$", &Options { caseless: false, ..Options::default() }),
            None,
            "needs Apache's options"
        );
    }
}
