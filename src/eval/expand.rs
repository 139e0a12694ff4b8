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

/// `[B]`-style escaping of a backreference (`ap_escape_uri` plus `&`, `+`, ...).
pub fn escape_backref(s: &str, no_plus: bool, only: Option<&str>) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        let escape = match only {
            Some(set) => set.as_bytes().contains(&b),
            None => !(b.is_ascii_alphanumeric() || b"_-.~/".contains(&b)),
        };
        if b == b' ' && !no_plus && only.is_none() {
            out.push('+');
        } else if escape {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

pub struct Expander<'a> {
    pub rule: &'a Captures,
    pub cond: &'a Captures,
    /// `[B]` and friends: how `$N` is escaped.
    pub escape: Option<(bool, Option<String>)>,
}

impl Expander<'_> {
    pub fn expand(&self, input: &str, look: &mut dyn Lookup) -> String {
        let b = input.as_bytes();
        let mut out = String::with_capacity(input.len());
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                let n = (b[i + 1] - b'0') as usize;
                let v = self.rule.get(n);
                match &self.escape {
                    Some((no_plus, only)) => out.push_str(&escape_backref(v, *no_plus, only.as_deref())),
                    None => out.push_str(v),
                }
                i += 2;
                continue;
            }
            if c == b'%' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                out.push_str(self.cond.get((b[i + 1] - b'0') as usize));
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
                    // The variable name is expanded too (%{HTTP:X-$1} is legal).
                    let name = self.expand(inner, look);
                    out.push_str(&look.var(&name));
                } else {
                    out.push_str(&self.map_lookup(inner, look));
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
        let b = Expander { rule: &rule, cond: &cond, escape: Some((false, None)) };
        assert_eq!(b.expand("q=$2", &mut l), "q=b+c");
    }
}
