//! Splitting a line into words the way Apache's `ap_getword_conf()` does.
//!
//! | input        | words            | why                                              |
//! |--------------|------------------|--------------------------------------------------|
//! | `a b`        | `a`, `b`         | white space separates                            |
//! | `"a b" c`    | `a b`, `c`       | quotes group; double or single                   |
//! | `"a\"b"`     | `a"b`            | inside quotes `\"` and `\\` are escapes          |
//! | `"a\nb"`     | `a\nb`           | any other backslash is kept                      |
//! | `a\\b`       | `a\b`            | outside quotes only `\\` is an escape            |
//! | `a"b c"`     | `a"b`, `c"`      | a quote only opens at the start of a word        |
//! | `"a"b`       | `a`, `b`         | the word ends at the closing quote               |
//! | `"a b`       | `a b` (flagged)  | an unclosed quote runs to the end of the line    |
//!
//! Directives that take their line raw (`RewriteRule`, `Require`, `Header`, ...) split it
//! their own way in [`crate::model`]; this is the generic reading used for the tree.

use nom::bytes::complete::{take_till1, take_while};
use nom::{IResult, Parser};

/// A word before mapping to source spans: byte offsets into the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawWord {
    pub start: usize,
    pub end: usize,
    pub value: String,
    pub quote: Option<char>,
    /// The word opened a quote that the line never closes.
    pub unterminated: bool,
}

/// Apache's `apr_isspace`: the C locale's white space.
pub fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

fn spaces(input: &str) -> IResult<&str, &str> {
    take_while(is_space).parse(input)
}

/// `substring_conf()`: drop the backslash of `\\` and, inside quotes, of `\<quote>`.
fn unescape(body: &str, quote: Option<char>) -> String {
    if !body.contains('\\') {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && (next == '\\' || Some(next) == quote)
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// A quoted word: returns (rest, (body, closed)).
fn quoted(input: &str) -> IResult<&str, (&str, char, bool)> {
    let q = match input.chars().next() {
        Some(c @ ('"' | '\'')) => c,
        _ => {
            return Err(nom::Err::Error(nom::error::Error::new(input, nom::error::ErrorKind::Char)));
        }
    };
    let body = &input[1..];
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i] != q as u8 {
        if bytes[i] == b'\\' && i + 1 < bytes.len() && (bytes[i + 1] == q as u8 || bytes[i + 1] == b'\\') {
            i += 2;
        } else {
            i += 1;
        }
    }
    if i < bytes.len() { Ok((&body[i + 1..], (&body[..i], q, true))) } else { Ok(("", (body, q, false))) }
}

fn bare(input: &str) -> IResult<&str, &str> {
    take_till1(is_space).parse(input)
}

/// All words of `line`, with offsets into it.
pub fn split(line: &str) -> Vec<RawWord> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Ok((after_space, _)) = spaces(rest) {
        rest = after_space;
        if rest.is_empty() {
            break;
        }
        let start = line.len() - rest.len();
        if let Ok((after, (body, q, closed))) = quoted(rest) {
            rest = after;
            out.push(RawWord {
                start,
                end: line.len() - rest.len(),
                value: unescape(body, Some(q)),
                quote: Some(q),
                unterminated: !closed,
            });
        } else if let Ok((after, text)) = bare(rest) {
            rest = after;
            out.push(RawWord {
                start,
                end: start + text.len(),
                value: unescape(text, None),
                quote: None,
                unterminated: false,
            });
        } else {
            break;
        }
    }
    out
}

/// How to write `value` so that [`split`] reads it back as one word.
pub fn quote(value: &str) -> String {
    let bare_ok = !value.is_empty()
        && !value.starts_with(['"', '\''])
        && !value.chars().any(is_space)
        && !value.contains("\\\\")
        && !value.ends_with('\\');
    if bare_ok {
        return value.to_string();
    }
    quote_always(value)
}

/// `value` in double quotes, escaped so that [`split`] reads it back unchanged.
pub fn quote_always(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    let chars: Vec<char> = value.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' if matches!(chars.get(i + 1), None | Some('\\') | Some('"')) => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(line: &str) -> Vec<String> {
        split(line).into_iter().map(|w| w.value).collect()
    }

    #[test]
    fn the_table_in_the_module_doc_holds() {
        assert_eq!(values("a b"), ["a", "b"]);
        assert_eq!(values(r#""a b" c"#), ["a b", "c"]);
        assert_eq!(values(r"'a b' c"), ["a b", "c"]);
        assert_eq!(values(r#""a\"b""#), [r#"a"b"#]);
        assert_eq!(values(r#""a\nb""#), [r"a\nb"]);
        assert_eq!(values(r"a\\b"), [r"a\b"]);
        assert_eq!(values(r#"a"b c""#), [r#"a"b"#, r#"c""#]);
        assert_eq!(values(r#""a"b"#), ["a", "b"]);
        let w = split(r#"x "a b"#);
        assert_eq!(w[1].value, "a b");
        assert!(w[1].unterminated);
    }

    #[test]
    fn offsets_cover_the_written_form() {
        let w = split(r#"  Foo "x y"  z"#);
        assert_eq!((w[0].start, w[0].end), (2, 5));
        assert_eq!((w[1].start, w[1].end), (6, 11));
        assert_eq!((w[2].start, w[2].end), (13, 14));
    }

    #[test]
    fn quote_round_trips() {
        for v in ["plain", "a b", "", r#"a"b"#, r"a\b", r"a\\b", r"end\", "'x", "\"x", r"\.php$"] {
            let written = quote(v);
            assert_eq!(values(&written), [v], "{v:?} written as {written}");
        }
    }
}
