//! Fast paths: most patterns in real configurations are a literal, a literal at one end,
//! or "everything" (`^(.*)$`, `.*`).  For those the Lua side need not run the regex
//! machine: a plain `string.find`, a comparison or the whole subject gives the same match
//! and the same captures.  Only shapes whose meaning is certain under Apache's options
//! (DOTALL, DOLLAR_ENDONLY, bytes, ASCII-only case folding) are recognised; the tests
//! below check each against PCRE2.

use super::Options;

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
        }
    }
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
        return literal(mid).filter(|l| !l.is_empty()).map(Fast::ContainsWhole);
    }
    let lit = literal(body)?;
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
        ];
        let subjects: [&[u8]; 16] = [
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
    fn only_certain_shapes_are_recognised() {
        for p in ["^(.*)/$", "a|b", "^[a-z]+$", "\\d", "x*", "^.*(a|b).*$", "\\w$", "caf\u{e9}", "^a\\sb$"] {
            assert_eq!(fast(p, &Options::apache(false)), None, "{p}");
        }
        assert_eq!(
            fast("^.*$", &Options { caseless: false, ..Options::default() }),
            None,
            "needs Apache's options"
        );
    }
}
