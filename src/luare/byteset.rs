//! `ByteSet`: a set of bytes. Every class, escape, `.` and case-folded literal of a pattern
//! becomes one, so the VM only ever tests "is this byte in set k".
//!
//! The named sets are PCRE2's default character tables, which were generated in the C
//! locale: `\w`, `\d`, `\s` and the POSIX classes only contain ASCII bytes, and case
//! folding only pairs `A-Z` with `a-z`. Apache does not pass its own tables to PCRE2, so
//! these are the tables Apache matches with. The unit tests compare every set here with
//! the real PCRE2 on all 256 bytes.

use std::fmt;

/// A set of byte values, as a 256-bit bitmap.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    pub const EMPTY: ByteSet = ByteSet([0; 4]);
    pub const FULL: ByteSet = ByteSet([u64::MAX; 4]);

    pub fn single(b: u8) -> ByteSet {
        let mut s = ByteSet::EMPTY;
        s.insert(b);
        s
    }

    pub fn range(lo: u8, hi: u8) -> ByteSet {
        let mut s = ByteSet::EMPTY;
        s.insert_range(lo, hi);
        s
    }

    pub fn insert(&mut self, b: u8) {
        self.0[(b >> 6) as usize] |= 1 << (b & 63);
    }

    pub fn insert_range(&mut self, lo: u8, hi: u8) {
        for b in lo..=hi {
            self.insert(b);
        }
    }

    pub fn contains(&self, b: u8) -> bool {
        self.0[(b >> 6) as usize] & (1 << (b & 63)) != 0
    }

    pub fn union(mut self, other: ByteSet) -> ByteSet {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        self
    }

    pub fn minus(mut self, other: ByteSet) -> ByteSet {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a &= !b;
        }
        self
    }

    pub fn negate(mut self) -> ByteSet {
        for a in self.0.iter_mut() {
            *a = !*a;
        }
        self
    }

    pub fn is_full(&self) -> bool {
        self.0 == [u64::MAX; 4]
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }

    /// The only member, when there is exactly one.
    pub fn only(&self) -> Option<u8> {
        if self.len() == 1 { self.iter().next() } else { None }
    }

    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&b| self.contains(b))
    }

    /// Adds the other case of every ASCII letter in the set (PCRE2's `fcc` table).
    pub fn case_fold(self) -> ByteSet {
        let mut out = self;
        for b in self.iter() {
            out.insert(other_case(b));
        }
        out
    }

    /// 64 hex digits; digit k (0-based) holds bytes 4k..4k+3, bit value 1 being byte 4k.
    /// This is the encoding `lighten_re.lua` decodes.
    pub fn to_hex(self) -> String {
        let mut s = String::with_capacity(64);
        for k in 0..64u16 {
            let mut nibble = 0u8;
            for bit in 0..4u16 {
                if self.contains((k * 4 + bit) as u8) {
                    nibble |= 1 << bit;
                }
            }
            s.push(char::from_digit(u32::from(nibble), 16).expect("nibble < 16"));
        }
        s
    }

    /// `\d`: ASCII digits.
    pub fn digit() -> ByteSet {
        ByteSet::range(b'0', b'9')
    }

    /// `\w`: ASCII letters, digits and underscore.
    pub fn word() -> ByteSet {
        ByteSet::range(b'a', b'z')
            .union(ByteSet::range(b'A', b'Z'))
            .union(ByteSet::digit())
            .union(ByteSet::single(b'_'))
    }

    /// `\s`: C-locale `isspace`, which includes VT (since PCRE2 10.0 `\s` matches VT, as Perl).
    pub fn space() -> ByteSet {
        ByteSet::range(0x09, 0x0d).union(ByteSet::single(b' '))
    }

    /// `\h` in 8-bit non-UTF mode: tab, space and NBSP (0xA0).
    pub fn hspace() -> ByteSet {
        ByteSet::single(0x09).union(ByteSet::single(b' ')).union(ByteSet::single(0xa0))
    }

    /// `\v` in 8-bit non-UTF mode: LF, VT, FF, CR and NEL (0x85).
    pub fn vspace() -> ByteSet {
        ByteSet::range(0x0a, 0x0d).union(ByteSet::single(0x85))
    }

    /// A POSIX class by name (`alpha`, `digit`, ...), as PCRE2 builds it from the C-locale
    /// tables. `caseless` turns `lower` and `upper` into `alpha`, as PCRE2 does.
    pub fn posix(name: &str, caseless: bool) -> Option<ByteSet> {
        let lower = ByteSet::range(b'a', b'z');
        let upper = ByteSet::range(b'A', b'Z');
        let alpha = lower.union(upper);
        let print = ByteSet::range(0x20, 0x7e);
        let graph = ByteSet::range(0x21, 0x7e);
        let cntrl = ByteSet::range(0x00, 0x1f).union(ByteSet::single(0x7f));
        let alnum = alpha.union(ByteSet::digit());
        Some(match name {
            "alpha" => alpha,
            "lower" if caseless => alpha,
            "upper" if caseless => alpha,
            "lower" => lower,
            "upper" => upper,
            "alnum" => alnum,
            "ascii" => ByteSet::range(0x00, 0x7f),
            "blank" => ByteSet::single(b' ').union(ByteSet::single(b'\t')),
            "cntrl" => cntrl,
            "digit" => ByteSet::digit(),
            "graph" => graph,
            "print" => print,
            "punct" => graph.minus(alnum),
            "space" => ByteSet::space(),
            "word" => ByteSet::word(),
            "xdigit" => ByteSet::digit().union(ByteSet::range(b'a', b'f')).union(ByteSet::range(b'A', b'F')),
            _ => return None,
        })
    }
}

/// The other case of an ASCII letter; any other byte is returned unchanged.
pub fn other_case(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => b - 32,
        b'A'..=b'Z' => b + 32,
        _ => b,
    }
}

impl fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ByteSet[")?;
        let mut first = true;
        let mut b = 0u16;
        while b < 256 {
            if !self.contains(b as u8) {
                b += 1;
                continue;
            }
            let lo = b;
            while b + 1 < 256 && self.contains((b + 1) as u8) {
                b += 1;
            }
            if !first {
                write!(f, ",")?;
            }
            first = false;
            if lo == b {
                write!(f, "{lo:#04x}")?
            } else {
                write!(f, "{lo:#04x}-{b:#04x}")?
            }
            b += 1;
        }
        write!(f, "]")
    }
}
