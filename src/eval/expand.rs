//! Expanding a RewriteRule substitution or RewriteCond test string, as mod_rewrite's
//! `do_expand()` does: `$N` (the rule's captures), `%N` (the last matched condition's),
//! `%{VAR}` (server variables), `${map:key|default}` (RewriteMap), and `\` escaping the
//! next character.

/// Captures of one regex match (index 0 is the whole match); `None` for groups that did
/// not take part.
#[derive(Clone, Debug, Default)]
pub struct Captures(pub Vec<Option<String>>);

impl Captures {
    pub fn get(&self, n: usize) -> &str {
        self.0.get(n).and_then(|c| c.as_deref()).unwrap_or("")
    }
}

/// What an expansion may look up.
pub trait Lookup {
    fn var(&mut self, name: &str) -> String;
    fn map(&mut self, map: &str, key: &str) -> Option<String>;
}

/// How `[B]` and its companions escape a back-reference.
#[derive(Clone, Debug, Default)]
pub struct BackrefEscape {
    /// `[B]` alone: every candidate; `[B=chars]`: only those characters.
    pub all: bool,
    pub only: Option<String>,
    /// `[BCTLS]`: controls and the space.
    pub ctls: bool,
    /// `[BNE=chars]`: never these.
    pub keep: Option<String>,
    /// `[BNP]`: a space becomes `%20`, not `+`.
    pub no_plus: bool,
}

/// mod_rewrite's `escape_backref()`: a candidate character other than a letter, digit
/// or `_` becomes `%xx` (lower-case hex, as Apache's `c2x()`), a space `+`.
pub fn escape_backref(s: &str, e: &BackrefEscape) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let candidate = (e.all && e.only.is_none())
            || e.only.as_deref().is_some_and(|o| o.as_bytes().contains(&b))
            || (e.ctls && (b <= b' ' || b == 0x7f));
        let kept = e.keep.as_deref().is_some_and(|k| k.as_bytes().contains(&b));
        if !candidate || kept || b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b as char);
        } else if b == b' ' && !e.no_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    // Only ASCII was split; rebuild multi-byte characters.
    if s.is_ascii() { out } else { String::from_utf8_lossy(&latin_bytes(&out)).into_owned() }
}

/// The bytes of a string built one byte per `char` (values under 256).
fn latin_bytes(s: &str) -> Vec<u8> {
    s.chars().map(|c| c as u32 as u8).collect()
}

pub struct Expander<'a> {
    pub rule: &'a Captures,
    pub cond: &'a Captures,
    /// `[B]` and friends: how `$N` and `%N` are escaped.
    pub escape: Option<BackrefEscape>,
}

impl Expander<'_> {
    pub fn expand(&self, input: &str, look: &mut dyn Lookup) -> String {
        self.expand_marking(input, look, &mut Vec::new())
    }

    /// Expands `input`, recording in `marks` the byte ranges of the result that came
    /// from back-references and map lookups (mod_rewrite refuses a `?` there).
    pub fn expand_marking(
        &self,
        input: &str,
        look: &mut dyn Lookup,
        marks: &mut Vec<std::ops::Range<usize>>,
    ) -> String {
        let b = input.as_bytes();
        let mut out = String::with_capacity(input.len());
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'\\' && i + 1 < b.len() {
                // The escaped character, whole (it may take several bytes).
                let len = utf8_len(b[i + 1]);
                out.push_str(&input[i + 1..(i + 1 + len).min(input.len())]);
                i += 1 + len;
                continue;
            }
            if (c == b'$' || c == b'%') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                let n = (b[i + 1] - b'0') as usize;
                let v = if c == b'$' { self.rule.get(n) } else { self.cond.get(n) };
                let from = out.len();
                match &self.escape {
                    Some(e) => out.push_str(&escape_backref(v, e)),
                    None => out.push_str(v),
                }
                marks.push(from..out.len());
                i += 2;
                continue;
            }
            if (c == b'%' || c == b'$')
                && i + 1 < b.len()
                && b[i + 1] == b'{'
                && let Some(end) = find_close(b, i + 2)
            {
                let inner = &input[i + 2..end];
                if c == b'%' {
                    // The name is taken as written: %{HTTP:X-$1} is the header "X-$1"
                    // (measured on 2.4.71).
                    out.push_str(&look.var(inner));
                } else {
                    let from = out.len();
                    out.push_str(&self.map_lookup(inner, look));
                    marks.push(from..out.len());
                }
                i = end + 1;
                continue;
            }
            // Keep multi-byte characters whole.
            let ch_len = utf8_len(c);
            out.push_str(&input[i..(i + ch_len).min(input.len())]);
            i += ch_len;
        }
        out
    }

    fn map_lookup(&self, inner: &str, look: &mut dyn Lookup) -> String {
        let Some((map, rest)) = inner.split_once(':') else {
            return format!("${{{inner}}}");
        };
        let (key, default) = match rest.split_once('|') {
            Some((k, d)) => (k, Some(d)),
            None => (rest, None),
        };
        let key = self.expand(key, look);
        match look.map(map, &key) {
            Some(v) => v,
            None => default.map(|d| self.expand(d, look)).unwrap_or_default(),
        }
    }
}

/// The literal text a substitution starts with, up to its first expansion.
pub fn literal_prefix(input: &str) -> &str {
    let b = input.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            return &input[..i];
        }
        if (b[i] == b'$' || b[i] == b'%')
            && i + 1 < b.len()
            && (b[i + 1].is_ascii_digit() || b[i + 1] == b'{')
        {
            return &input[..i];
        }
        i += 1;
    }
    input
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// The `}` closing a `{` opened before `from`, allowing nesting.
fn find_close(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 1;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A lookup backed by plain maps, for tests.
#[cfg(test)]
pub struct MapLookup(pub std::collections::BTreeMap<String, String>);

#[cfg(test)]
impl Lookup for MapLookup {
    fn var(&mut self, name: &str) -> String {
        self.0.get(name).cloned().unwrap_or_default()
    }
    fn map(&mut self, _map: &str, _key: &str) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_backrefs_variables_and_escapes() {
        let rule = Captures(vec![Some("a/b".into()), Some("a".into()), Some("b c".into())]);
        let cond = Captures(vec![Some("x".into()), Some("42".into())]);
        let e = Expander { rule: &rule, cond: &cond, escape: None };
        let mut l = MapLookup([("SERVER_NAME".to_string(), "example.test".to_string())].into());
        assert_eq!(e.expand("/c/%{SERVER_NAME}/$1/%1-\\$2", &mut l), "/c/example.test/a/42-$2");
        assert_eq!(e.expand("${nomap:$1|fallback}", &mut l), "fallback");
        // A backslash before a multi-byte character keeps the character whole.
        assert_eq!(e.expand("/bs-\\\u{e9}-$1", &mut l), "/bs-\u{e9}-a");
        let b = Expander {
            rule: &rule,
            cond: &cond,
            escape: Some(BackrefEscape { all: true, ..Default::default() }),
        };
        assert_eq!(b.expand("q=$2", &mut l), "q=b+c");
        assert_eq!(b.expand("q=$0", &mut l), "q=a%2fb");
    }

    /// The escaping flags combine as in Apache's own tests (httpd-tests rewrite.t).
    #[test]
    fn backref_escaping_matches_apache() {
        let v = "foo/bar/ baz/\r";
        let esc = |all: bool, only: Option<&str>, ctls: bool, keep: Option<&str>| {
            let e = BackrefEscape {
                all,
                only: only.map(str::to_string),
                ctls,
                keep: keep.map(str::to_string),
                no_plus: false,
            };
            escape_backref(v, &e)
        };
        assert_eq!(esc(true, None, false, None), "foo%2fbar%2f+baz%2f%0d");
        assert_eq!(esc(true, Some("/"), false, None), "foo%2fbar%2f baz%2f\r");
        assert_eq!(esc(false, None, true, None), "foo/bar/+baz/%0d");
        assert_eq!(esc(false, None, true, Some(" ?")), "foo/bar/ baz/%0d");
        assert_eq!(esc(true, Some("/"), true, None), "foo%2fbar%2f+baz%2f%0d");
        assert_eq!(esc(true, None, false, Some("/")), "foo/bar/+baz/%0d");
    }
}
