//! Escapes outside classes (`\d`, `\b`, `\1`, `\g{-1}`, `\k<name>`, `\Q`, ...) and the
//! single-byte escapes shared with classes (`\x41`, `\101`, `\cA`, ...), with PCRE2's
//! rule for telling a back reference from an octal escape.

use super::super::Unsupported;
use super::super::ast::{Assertion, Group, GroupKind, Node};
use super::super::byteset::ByteSet;
use super::{Item, Parser};

impl Parser<'_> {
    /// Escapes that stand for one byte, the same in and out of classes. `c` has been
    /// consumed; returns None when `c` is not one of them.
    pub(super) fn char_escape(&mut self, c: u8, start: usize) -> Result<Option<u8>, Unsupported> {
        Ok(Some(match c {
            b'a' => 0x07,
            b'e' => 0x1b,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'0' => self.octal(b'0', start)?,
            b'o' => {
                let digits = self.braced_digits(start, 8)?;
                self.code_point(&digits, 8, start)?
            }
            b'x' => {
                if self.peek() == Some(b'{') {
                    let digits = self.braced_digits(start, 16)?;
                    self.code_point(&digits, 16, start)?
                } else {
                    let n = self.p[self.i..].iter().take(2).take_while(|c| c.is_ascii_hexdigit()).count();
                    if n == 0 {
                        // PCRE2 10.45 refuses this; 10.42 read it as NUL.
                        return Err(self.err_at(start, "\\x without hex digits"));
                    }
                    let digits = self.p[self.i..self.i + n].to_vec();
                    self.i += n;
                    self.code_point(&digits, 16, start)?
                }
            }
            b'c' => {
                let Some(x) = self.peek().filter(|x| (0x20..0x7f).contains(x)) else {
                    return Err(self.err_at(start, "\\c must be followed by a printable ASCII character"));
                };
                self.i += 1;
                x.to_ascii_uppercase() ^ 0x40
            }
            _ if !c.is_ascii_alphanumeric() => c,
            _ => return Ok(None),
        }))
    }

    /// `\0`, or `\1`..`\7` read as octal: the first digit and up to two more.
    pub(super) fn octal(&mut self, first: u8, start: usize) -> Result<u8, Unsupported> {
        let mut v = u32::from(first - b'0');
        for _ in 0..2 {
            match self.peek() {
                Some(d @ b'0'..=b'7') => {
                    v = v * 8 + u32::from(d - b'0');
                    self.i += 1;
                }
                _ => break,
            }
        }
        u8::try_from(v).map_err(|_| self.err_at(start, "octal value is greater than \\377"))
    }

    /// The digits of `\x{...}` or `\o{...}`, with the braces consumed.
    fn braced_digits(&mut self, start: usize, radix: u32) -> Result<Vec<u8>, Unsupported> {
        if self.peek() != Some(b'{') {
            return Err(self.err_at(start, "\\o must be followed by {"));
        }
        self.i += 1;
        let from = self.i;
        while self.peek().is_some_and(|c| (c as char).is_digit(radix)) {
            self.i += 1;
        }
        let digits = self.p[from..self.i].to_vec();
        if digits.is_empty() || self.peek() != Some(b'}') {
            // Includes `\x{ 41 }`: spaces inside braces were added in PCRE2 10.43.
            return Err(self.err_at(start, "malformed or version-dependent braced escape"));
        }
        self.i += 1;
        Ok(digits)
    }

    fn code_point(&self, digits: &[u8], radix: u32, start: usize) -> Result<u8, Unsupported> {
        let text = std::str::from_utf8(digits).expect("ASCII digits");
        match u64::from_str_radix(text, radix) {
            Ok(v) if v <= 0xff => Ok(v as u8),
            _ => Err(self.err_at(start, "character code point above 0xff in non-UTF mode")),
        }
    }

    /// An escape outside a class, at the backslash.
    pub(super) fn escape(&mut self) -> Result<Item, Unsupported> {
        let start = self.i;
        self.i += 1;
        let Some(c) = self.peek() else { return Err(self.err_at(start, "\\ at end of pattern")) };
        self.i += 1;
        let assert = |a| Ok(Item::Fixed(Node::Assert(a)));
        match c {
            b'd' | b'D' | b'w' | b'W' | b's' | b'S' | b'h' | b'H' | b'v' | b'V' => {
                Ok(Item::Atom(Node::Set(escape_set(c).expect("set escape"))))
            }
            b'N' => {
                // `\N{3}` is `\N` repeated; `\N{U+41}` and `\N{name}` are not supported.
                let rest = &self.p[self.i..];
                if rest.first() == Some(&b'{')
                    && !rest[1..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit() || **c == b',')
                        .any(|c| c.is_ascii_digit())
                {
                    return Err(self.err_at(start, "\\N{...} is not supported"));
                }
                Ok(Item::Atom(Node::Set(ByteSet::single(b'\n').negate())))
            }
            b'R' => Ok(Item::Atom(any_newline())),
            b'b' => assert(Assertion::WordBoundary),
            b'B' => assert(Assertion::NotWordBoundary),
            b'A' => assert(Assertion::Start),
            b'Z' => assert(Assertion::EndOrFinalNewline),
            b'z' => assert(Assertion::End),
            b'G' => assert(Assertion::SearchStart),
            b'Q' => {
                self.in_quote = true;
                Ok(Item::Nothing { options: false })
            }
            b'E' => Ok(Item::Nothing { options: false }),
            b'1'..=b'9' => {
                // PCRE2's rule: \1..\9 are references, \8x and \9x too; a longer number
                // is a reference when that many groups have been opened, else octal.
                let from = self.i - 1;
                let len = self.p[from..].iter().take_while(|d| d.is_ascii_digit()).count();
                let number: usize = std::str::from_utf8(&self.p[from..from + len])
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(usize::MAX);
                if number < 10 || c >= b'8' || number <= self.groups {
                    self.i = from + len;
                    if number > 65535 {
                        return Err(self.err_at(start, "group number is too big"));
                    }
                    return Ok(Item::Atom(self.numbered_ref(number, start)));
                }
                let b = self.octal(c, start)?;
                Ok(Item::Atom(self.literal(b)))
            }
            b'g' => self.g_reference(start),
            b'k' => {
                let terminator = match self.peek() {
                    Some(b'<') => b'>',
                    Some(b'\'') => b'\'',
                    Some(b'{') => b'}',
                    _ => return Err(self.err_at(start, "\\k must be followed by a name in <>, '' or {}")),
                };
                self.i += 1;
                let name = self.name(terminator)?;
                Ok(Item::Atom(self.named_ref(name, start)))
            }
            b'K' => Err(self.err_at(start, "\\K is not supported")),
            b'X' | b'p' | b'P' => Err(self.err_at(start, "Unicode properties are not supported")),
            b'C' => Err(self.err_at(start, "\\C is not supported")),
            _ => match self.char_escape(c, start)? {
                Some(b) => Ok(Item::Atom(self.literal(b))),
                None => Err(self.err_at(start, "unrecognized character follows \\")),
            },
        }
    }

    /// `\g` followed by `n`, `-n`, `+n`, `{n}`, `{-n}`, `{+n}` or `{name}`.
    fn g_reference(&mut self, start: usize) -> Result<Item, Unsupported> {
        let braced = match self.peek() {
            Some(b'{') => true,
            Some(b'<' | b'\'') => {
                return Err(self.err_at(start, "subroutine calls (\\g<...>) are not supported"));
            }
            _ => false,
        };
        if braced {
            self.i += 1;
            if self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
                let name = self.name(b'}')?;
                return Ok(Item::Atom(self.named_ref(name, start)));
            }
        }
        let sign = match self.peek() {
            Some(s @ (b'-' | b'+')) => {
                self.i += 1;
                Some(s)
            }
            _ => None,
        };
        let from = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let number: usize = std::str::from_utf8(&self.p[from..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.err_at(start, "malformed or version-dependent \\g reference"))?;
        if braced {
            if self.peek() != Some(b'}') {
                return Err(self.err_at(start, "malformed or version-dependent \\g reference"));
            }
            self.i += 1;
        }
        let group = match sign {
            None => number,
            Some(b'-') if number >= 1 && number <= self.groups => self.groups + 1 - number,
            Some(b'+') if number >= 1 => self.groups + number,
            _ => return Err(self.err_at(start, "reference to non-existent subpattern")),
        };
        Ok(Item::Atom(self.numbered_ref(group, start)))
    }
}

pub(super) fn escape_set(c: u8) -> Option<ByteSet> {
    Some(match c {
        b'd' => ByteSet::digit(),
        b'D' => ByteSet::digit().negate(),
        b'w' => ByteSet::word(),
        b'W' => ByteSet::word().negate(),
        b's' => ByteSet::space(),
        b'S' => ByteSet::space().negate(),
        b'h' => ByteSet::hspace(),
        b'H' => ByteSet::hspace().negate(),
        b'v' => ByteSet::vspace(),
        b'V' => ByteSet::vspace().negate(),
        _ => return None,
    })
}

/// `\R` in 8-bit non-UTF mode: `(?>\r\n|\n|\x0b|\f|\r|\x85)`.
fn any_newline() -> Node {
    let crlf = Node::Concat(vec![
        Node::Literal { byte: b'\r', caseless: false },
        Node::Literal { byte: b'\n', caseless: false },
    ]);
    let single = Node::Set(ByteSet::vspace());
    Node::Group(Box::new(Group { kind: GroupKind::Atomic, body: Node::Alt(vec![crlf, single]) }))
}
