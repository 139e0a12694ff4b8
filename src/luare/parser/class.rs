//! Character classes: `[...]`, POSIX `[:name:]` inside them, escapes inside them, and
//! PCRE2's rules for `-` and `]` (`class_range_state` in `pcre2_compile.c`). A class
//! becomes one `ByteSet`, case-folded when caseless, then negated for `[^...]`.

use super::super::Unsupported;
use super::super::ast::{Assertion, Group, GroupKind, Node};
use super::super::byteset::ByteSet;
use super::escape::escape_set;
use super::{Item, Parser};

/// One element of a class, as PCRE2's class parser sees it.
enum ClassItem {
    Byte(u8),
    Set(ByteSet),
    /// `\Q`: the following bytes are literal up to `\E`.
    QuoteStart,
    /// `\E` alone.
    Nothing,
}

/// PCRE2's `class_range_state`.
#[derive(Clone, Copy, PartialEq)]
enum RangeState {
    No,
    Ok(u8),
    Started(u8),
    ForbidNo,
    ForbidStarted,
}

impl Parser<'_> {
    pub(super) fn class_or_word_boundary(&mut self) -> Result<Item, Unsupported> {
        // PCRE2 turns these two POSIX-regex spellings into `\b(?=\w)` and `\b(?<=\w)`.
        for (text, ahead) in [(&b"[[:<:]]"[..], true), (&b"[[:>:]]"[..], false)] {
            if self.at(text) {
                self.i += text.len();
                let word = Node::Group(Box::new(Group {
                    kind: if ahead {
                        GroupKind::LookAhead { negate: false }
                    } else {
                        GroupKind::LookBehind { negate: false }
                    },
                    body: Node::Set(ByteSet::word()),
                }));
                return Ok(Item::Fixed(Node::Concat(vec![Node::Assert(Assertion::WordBoundary), word])));
            }
        }
        Ok(Item::Atom(Node::Set(self.class()?)))
    }

    fn class(&mut self) -> Result<ByteSet, Unsupported> {
        let start = self.i;
        self.i += 1; // [
        if matches!(self.peek(), Some(b':' | b'.' | b'=')) && posix_end(self.p, self.i).is_some() {
            return Err(self.err_at(start, "POSIX named classes are supported only within a class"));
        }
        let mut negate = false;
        loop {
            if self.at(b"\\E") {
                self.i += 2;
            } else if self.at(b"\\Q\\E") {
                self.i += 4;
            } else if self.flags.extended_more && matches!(self.peek(), Some(b' ' | b'\t')) {
                self.i += 1;
            } else if !negate && self.peek() == Some(b'^') {
                self.i += 1;
                negate = true;
            } else {
                break;
            }
        }
        let mut set = ByteSet::EMPTY;
        let mut state = RangeState::No;
        let mut quoted = false;
        if self.peek() == Some(b']') {
            self.i += 1;
            class_byte(&mut set, &mut state, b']').map_err(|r| self.err(r))?;
        }
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err_at(start, "missing terminating ] for character class"));
            };
            if quoted {
                if self.at(b"\\E") {
                    self.i += 2;
                    quoted = false;
                } else {
                    self.i += 1;
                    class_byte(&mut set, &mut state, c).map_err(|r| self.err(r))?;
                }
                continue;
            }
            if self.flags.extended_more && (c == b' ' || c == b'\t') {
                self.i += 1;
                continue;
            }
            if c == b']' {
                self.i += 1;
                break;
            }
            if c == b'['
                && self.p.len() - (self.i + 1) >= 3
                && matches!(self.peek_at(1), Some(b':' | b'.' | b'='))
                && let Some(end) = posix_end(self.p, self.i + 1)
            {
                let s = self.posix(end)?;
                class_set(&mut set, &mut state, s).map_err(|r| self.err(r))?;
                continue;
            }
            if c == b'\\' {
                match self.class_escape()? {
                    ClassItem::Byte(b) => class_byte(&mut set, &mut state, b).map_err(|r| self.err(r))?,
                    ClassItem::Set(s) => class_set(&mut set, &mut state, s).map_err(|r| self.err(r))?,
                    ClassItem::QuoteStart => quoted = true,
                    ClassItem::Nothing => {}
                }
                continue;
            }
            self.i += 1;
            match (c, state) {
                (b'-', RangeState::Ok(lo)) => state = RangeState::Started(lo),
                (b'-', RangeState::ForbidNo) => {
                    set.insert(b'-');
                    state = RangeState::ForbidStarted;
                }
                _ => class_byte(&mut set, &mut state, c).map_err(|r| self.err(r))?,
            }
        }
        if let RangeState::Started(_) = state {
            set.insert(b'-');
        }
        if self.flags.caseless {
            set = set.case_fold();
        }
        Ok(if negate { set.negate() } else { set })
    }

    /// `[:name:]` at the current `[`, whose closing `:` is at `end`.
    fn posix(&mut self, end: usize) -> Result<ByteSet, Unsupported> {
        let start = self.i;
        if self.p[start + 1] != b':' {
            return Err(self.err_at(start, "POSIX collating elements are not supported"));
        }
        let mut name_start = start + 2;
        let negate = self.p.get(name_start) == Some(&b'^');
        if negate {
            name_start += 1;
        }
        let name = std::str::from_utf8(&self.p[name_start..end]).unwrap_or("");
        let Some(set) = ByteSet::posix(name, self.flags.caseless) else {
            return Err(self.err_at(start, "unknown POSIX class name"));
        };
        self.i = end + 2;
        Ok(if negate { set.negate() } else { set })
    }

    /// An escape inside a class, at the backslash.
    fn class_escape(&mut self) -> Result<ClassItem, Unsupported> {
        let start = self.i;
        self.i += 1;
        let Some(c) = self.peek() else { return Err(self.err_at(start, "\\ at end of pattern")) };
        self.i += 1;
        Ok(match c {
            b'b' => ClassItem::Byte(0x08),
            b'd' | b'D' | b'w' | b'W' | b's' | b'S' | b'h' | b'H' | b'v' | b'V' => {
                ClassItem::Set(escape_set(c).expect("set escape"))
            }
            b'Q' => ClassItem::QuoteStart,
            b'E' => ClassItem::Nothing,
            b'1'..=b'7' => ClassItem::Byte(self.octal(c, start)?),
            // Never a back reference in a class; PCRE2 reads the digit itself.
            b'8' | b'9' => ClassItem::Byte(c),
            _ => match self.char_escape(c, start)? {
                Some(b) => ClassItem::Byte(b),
                None if c.is_ascii_alphanumeric() => {
                    return Err(self.err_at(start, "escape sequence not supported in a class"));
                }
                None => ClassItem::Byte(c),
            },
        })
    }
}

/// Adds one byte (a literal or a single-byte escape) to a class being built.
fn class_byte(set: &mut ByteSet, state: &mut RangeState, b: u8) -> Result<(), &'static str> {
    match *state {
        RangeState::Started(lo) => {
            if b < lo {
                return Err("range out of order in character class");
            }
            set.insert_range(lo, b);
            *state = RangeState::No;
        }
        RangeState::ForbidStarted => return Err("invalid range in character class"),
        _ => {
            set.insert(b);
            *state = RangeState::Ok(b);
        }
    }
    Ok(())
}

/// Adds a multi-byte item (`\d`, `[:alpha:]`) to a class being built; it may not be a
/// range end, and a `-` after it is a literal that may not start a range.
fn class_set(set: &mut ByteSet, state: &mut RangeState, s: ByteSet) -> Result<(), &'static str> {
    if matches!(*state, RangeState::Started(_) | RangeState::ForbidStarted) {
        return Err("invalid range in character class");
    }
    *set = set.union(s);
    *state = RangeState::ForbidNo;
    Ok(())
}

/// PCRE2's `check_posix_syntax`: `at` is the `:`, `.` or `=` after a `[`. Returns the
/// index of the closing terminator (which is followed by `]`).
fn posix_end(p: &[u8], at: usize) -> Option<usize> {
    let terminator = p[at];
    let mut k = at + 1;
    while p.len().saturating_sub(k) >= 2 {
        if p[k] == b'\\' && (p[k + 1] == b']' || p[k + 1] == b'\\') {
            k += 1;
        } else if (p[k] == b'[' && p[k + 1] == terminator) || p[k] == b']' {
            return None;
        } else if p[k] == terminator && p[k + 1] == b']' {
            return Some(k);
        }
        k += 1;
    }
    None
}
