//! The request-independent pieces of ap_expr, done here rather than asked of the context:
//! the string functions `tolower`, `toupper`, `escape`, `unescape`, `base64`, `unbase64`,
//! the `-T` truth test, integer reading for `-eq` and friends, and `apr_fnmatch()` for
//! `-strmatch`, `-strcmatch` and `-fnmatch`.
//!
//! Apache works on C strings: a decoded NUL ends the result, and bytes that are not
//! UTF-8 come out here as U+FFFD. `md5` and `sha1` are left to the context (no digest
//! crate is a dependency).

/// The string functions computed without the context, by lower-case name.
pub(super) fn pure_function(name: &str, arg: &str) -> Option<String> {
    Some(match name {
        // `ap_str_tolower` is `apr_tolower` per byte: ASCII only.
        "tolower" => arg.to_ascii_lowercase(),
        "toupper" => arg.to_ascii_uppercase(),
        "escape" => escape_uri(arg),
        "unescape" => unescape(arg),
        "base64" => base64_encode(arg.as_bytes()),
        "unbase64" => base64_decode(arg),
        _ => return None,
    })
}

/// `ap_escape_uri()`: every byte but ASCII letters, digits and `$-_.+!*'(),:@&=/~`
/// becomes `%xx`, in lower-case hex as httpd's `c2x()` writes it.
pub fn escape_uri(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"$-_.+!*'(),:@&=/~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// `unescape()` is `ap_unescape_url_keep2f(s, 0)`: `%xx` is decoded except `%2F`, which
/// stays as written; a bad escape or a decoded NUL makes the result empty.
pub(super) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c))) {
            (Some(hi), Some(lo)) => {
                let decoded = hi * 16 + lo;
                if decoded == 0 {
                    return String::new();
                }
                if decoded == b'/' {
                    out.extend_from_slice(&b[i..i + 3]);
                } else {
                    out.push(decoded);
                }
                i += 3;
            }
            _ => return String::new(),
        }
    }
    c_string(out)
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `apr_base64_encode()`: the standard alphabet with `=` padding.
pub(super) fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `apr_base64_decode()`: decodes the leading run of alphabet characters and ignores the
/// rest (padding included); a lone trailing character yields nothing.
pub(super) fn base64_decode(text: &str) -> String {
    let values: Vec<u32> =
        text.bytes().map_while(|c| BASE64.iter().position(|&a| a == c)).map(|v| v as u32).collect();
    let mut out = Vec::with_capacity(values.len() / 4 * 3 + 2);
    for chunk in values.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, v)| n | v << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    c_string(out)
}

/// Bytes as Apache would hand them on: up to the first NUL, as a C string ends.
pub(super) fn c_string(mut bytes: Vec<u8>) -> String {
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// `-T`: false for the empty string, `0`, and `off`, `no`, `false` in any case.
pub(super) fn truthy(s: &str) -> bool {
    !(s.is_empty() || s == "0" || ["off", "no", "false"].iter().any(|f| s.eq_ignore_ascii_case(f)))
}

/// `apr_atoi64()`, that is `strtoll(s, NULL, 10)`: leading white space, a sign, digits;
/// whatever follows is ignored, no digits read as 0, overflow saturates.
pub(super) fn atoi64(s: &str) -> i64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for d in digits.bytes().take_while(u8::is_ascii_digit) {
        let d = i64::from(d - b'0');
        n = match n.checked_mul(10).and_then(|n| if negative { n.checked_sub(d) } else { n.checked_add(d) }) {
            Some(n) => n,
            None => return if negative { i64::MIN } else { i64::MAX },
        };
    }
    n
}

/// `apr_fnmatch(pattern, string, flags)`: `*`, `?`, `[...]` (with `!` or `^` to negate,
/// ranges, `]` first taken literally) and backslash escapes. With `pathname` no wildcard
/// matches `/`; with `casefold` ASCII case is ignored.
pub fn fnmatch(pattern: &str, string: &str, pathname: bool, casefold: bool) -> bool {
    let fold = |c: u8| if casefold { c.to_ascii_lowercase() } else { c };
    let p = pattern.as_bytes();
    let s = string.as_bytes();
    let (mut pi, mut si) = (0, 0);
    // Where the last `*` was, and how much of the string it has taken: only the last star
    // ever needs to take more, and with `pathname` it can never take a `/`.
    let mut star: Option<(usize, usize)> = None;
    loop {
        let step = match p.get(pi) {
            None => (si == s.len()).then_some((0, 0)),
            Some(b'*') => {
                while p.get(pi) == Some(&b'*') {
                    pi += 1;
                }
                star = Some((pi, si));
                continue;
            }
            Some(b'?') => s.get(si).filter(|&&c| !(pathname && c == b'/')).map(|_| (1, 1)),
            Some(b'[') => match bracket(p, pi, fold) {
                Some((set, len)) => {
                    s.get(si).filter(|&&c| !(pathname && c == b'/') && set.matches(fold(c))).map(|_| (len, 1))
                }
                // An unclosed `[` is an ordinary character.
                None => (s.get(si) == Some(&b'[')).then_some((1, 1)),
            },
            Some(&c) => {
                let (lit, len) = match (c, p.get(pi + 1)) {
                    (b'\\', Some(&e)) => (e, 2),
                    _ => (c, 1),
                };
                s.get(si).filter(|&&sc| fold(sc) == fold(lit)).map(|_| (len, 1))
            }
        };
        match step {
            Some((0, 0)) => return true,
            Some((dp, ds)) => {
                pi += dp;
                si += ds;
            }
            None => match star {
                Some((sp, taken)) if s.get(taken).is_some_and(|&c| !(pathname && c == b'/')) => {
                    star = Some((sp, taken + 1));
                    pi = sp;
                    si = taken + 1;
                }
                _ => return false,
            },
        }
    }
}

struct ByteSet {
    negated: bool,
    ranges: Vec<(u8, u8)>,
}

impl ByteSet {
    fn matches(&self, c: u8) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

/// Reads the bracket expression at `start`: the set (already case-folded) and its length
/// in the pattern, or `None` when it is never closed.
fn bracket(p: &[u8], start: usize, fold: impl Fn(u8) -> u8) -> Option<(ByteSet, usize)> {
    let mut i = start + 1;
    let negated = matches!(p.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let mut c = *p.get(i)?;
        if c == b']' && !first {
            return Some((ByteSet { negated, ranges }, i + 1 - start));
        }
        first = false;
        if c == b'\\' {
            i += 1;
            c = *p.get(i)?;
        }
        i += 1;
        let mut hi = c;
        if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&n| n != b']') {
            i += 1;
            hi = *p.get(i)?;
            if hi == b'\\' {
                i += 1;
                hi = *p.get(i)?;
            }
            i += 1;
        }
        let (lo, hi) = (fold(c), fold(hi));
        ranges.push((lo.min(hi), lo.max(hi)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_keeps_uri_characters() {
        assert_eq!(escape_uri("/a b/ä?x=1&y"), "/a%20b/%c3%a4%3fx=1&y");
    }

    #[test]
    fn unescape_keeps_encoded_slash_and_refuses_bad_escapes() {
        assert_eq!(unescape("a%20b%2Fc%2f"), "a b%2Fc%2f");
        assert_eq!(unescape("100%"), "");
        assert_eq!(unescape("a%zz"), "");
        assert_eq!(unescape("a%00b"), "");
    }

    #[test]
    fn base64_both_ways() {
        for (plain, coded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg==")]
        {
            assert_eq!(base64_encode(plain.as_bytes()), coded);
            assert_eq!(base64_decode(coded), plain);
        }
        assert_eq!(base64_decode("Zm9v!garbage"), "foo");
        assert_eq!(base64_decode("Zm9vY"), "foo");
    }

    #[test]
    fn truthy_follows_op_t() {
        for f in ["", "0", "off", "OFF", "no", "No", "false", "FALSE"] {
            assert!(!truthy(f), "{f:?}");
        }
        for t in ["1", "00", "on", "yes", "true", "offx", "x"] {
            assert!(truthy(t), "{t:?}");
        }
    }

    #[test]
    fn atoi64_is_strtoll() {
        assert_eq!(atoi64("42"), 42);
        assert_eq!(atoi64("  -7abc"), -7);
        assert_eq!(atoi64("+3"), 3);
        assert_eq!(atoi64("abc"), 0);
        assert_eq!(atoi64(""), 0);
        assert_eq!(atoi64("99999999999999999999"), i64::MAX);
        assert_eq!(atoi64("-99999999999999999999"), i64::MIN);
    }

    #[test]
    fn fnmatch_cases() {
        let cases = [
            ("*.php", "index.php", false, false, true),
            ("*.php", "a/index.php", false, false, true),
            ("*.php", "a/index.php", true, false, false),
            ("*/*.php", "a/index.php", true, false, true),
            ("?", "/", true, false, false),
            ("?", "/", false, false, true),
            ("a[bc]d", "acd", false, false, true),
            ("a[!bc]d", "acd", false, false, false),
            ("a[^bc]d", "aed", false, false, true),
            ("[a-c]x", "bx", false, false, true),
            ("[]]", "]", false, false, true),
            ("a\\*", "a*", false, false, true),
            ("a\\*", "ab", false, false, false),
            ("[ab", "[ab", false, false, true),
            ("*.JPG", "photo.jpg", false, true, true),
            ("*.JPG", "photo.jpg", false, false, false),
            ("a*b*c", "axxbyyc", false, false, true),
            ("a*b*c", "axxbyy", false, false, false),
            ("", "", false, false, true),
            ("*", "", false, false, true),
        ];
        for (p, s, pathname, casefold, want) in cases {
            assert_eq!(fnmatch(p, s, pathname, casefold), want, "{p:?} vs {s:?} pathname={pathname}");
        }
    }
}
