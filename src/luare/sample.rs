//! A string a pattern matches: `lighten verify` builds requests from rewrite rules and
//! needs, for each pattern, one subject that matches it.  The walk takes the first
//! alternative, one turn of an open repeat, and a plain byte from each class; the result is
//! checked with PCRE2 and dropped when it does not match (a lookaround can refuse it).

use super::Options;
use super::ast::{GroupKind, Node};

/// A subject `pattern` matches under `opts`, when the simple walk finds one.
pub fn sample(pattern: &str, opts: &Options) -> Option<Vec<u8>> {
    let parsed = super::parser::parse(pattern, opts).ok()?;
    let mut out = Vec::new();
    let mut groups: Vec<Option<(usize, usize)>> = vec![None; parsed.groups + 1];
    walk(&parsed.root, &mut out, &mut groups)?;
    let re =
        pcre2::bytes::RegexBuilder::new().caseless(opts.caseless).dotall(opts.dotall).build(pattern).ok()?;
    re.is_match(&out).ok()?.then_some(out)
}

/// The byte a class contributes: a letter or digit when it has one, else something
/// printable that is not a path separator, else anything.
fn pick(set: &super::byteset::ByteSet) -> Option<u8> {
    let pref = b"abcxyz0123456789ABCXYZ-_.";
    pref.iter()
        .copied()
        .find(|b| set.contains(*b))
        .or_else(|| set.iter().find(|b| b.is_ascii_graphic() && *b != b'/' && *b != b'?' && *b != b'%'))
        .or_else(|| set.iter().next())
}

fn walk(n: &Node, out: &mut Vec<u8>, groups: &mut Vec<Option<(usize, usize)>>) -> Option<()> {
    match n {
        Node::Empty | Node::Assert(_) => {}
        Node::Literal { byte, .. } => out.push(*byte),
        Node::Set(s) => out.push(pick(s)?),
        Node::Group(g) => match g.kind {
            GroupKind::LookAhead { .. } | GroupKind::LookBehind { .. } => {}
            GroupKind::Capture(i) => {
                let start = out.len();
                walk(&g.body, out, groups)?;
                if let Some(slot) = groups.get_mut(i) {
                    *slot = Some((start, out.len()));
                }
            }
            _ => walk(&g.body, out, groups)?,
        },
        Node::Concat(list) => {
            for x in list {
                walk(x, out, groups)?;
            }
        }
        Node::Alt(list) => walk(list.first()?, out, groups)?,
        Node::Repeat(r) => {
            let times = r.min.max(if r.max == Some(0) { 0 } else { 1 }).min(8);
            for _ in 0..times {
                walk(&r.node, out, groups)?;
            }
        }
        Node::Backref { group, .. } => {
            let (s, e) = (*groups.get(*group)?)?;
            let copy = out[s..e].to_vec();
            out.extend(copy);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_match_their_patterns() {
        let o = Options::apache(false);
        for (p, want) in [
            ("^index\\.php$", &b"index.php"[..]),
            ("^wp-admin/(.*)", b"wp-admin/a"),
            ("\\.(css|js)$", b".css"),
            ("^([0-9]+)/([a-z-]+)/?$", b"0/a/"),
        ] {
            assert_eq!(sample(p, &o).as_deref(), Some(want), "{p}");
        }
        // A lookahead that refuses the walk's choice gives nothing rather than a lie.
        assert_eq!(sample("^(?!a)[a-c]$", &o), None);
    }
}
