//! The pattern tree the parser builds and the lowering consumes. It is already resolved:
//! options such as `(?i)` and `(?s)` are folded into the nodes (a caseless letter is a
//! two-byte `Set`, `.` is a `Set`), names are group numbers, `\Q..\E` is literals.
//! It keeps the shape that decides backtracking order (alternatives in order, repeats
//! with their greediness), because that order decides which captures PCRE reports.

use super::byteset::ByteSet;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Empty,
    /// One byte. `caseless` is only ever true for ASCII letters.
    Literal {
        byte: u8,
        caseless: bool,
    },
    /// One byte out of a set.
    Set(ByteSet),
    Assert(Assertion),
    Group(Box<Group>),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Repeat>),
    /// A back reference to a capturing group, by number.
    Backref {
        group: usize,
        caseless: bool,
    },
}

/// Zero-width tests on the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assertion {
    /// `\A`, and `^` without multiline: start of the subject (not of the search).
    Start,
    /// `^` with multiline: start of subject, or after a `\n` that is not the last byte.
    LineStart,
    /// `\Z`, and `$` without multiline or DOLLAR_ENDONLY: end, or before a final `\n`.
    EndOrFinalNewline,
    /// `\z`, and `$` with DOLLAR_ENDONLY: the very end.
    End,
    /// `$` with multiline: end, or before any `\n`.
    LineEnd,
    WordBoundary,
    NotWordBoundary,
    /// `\G`: the position the search started from.
    SearchStart,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    pub body: Node,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    NonCapture,
    Capture(usize),
    Atomic,
    LookAhead { negate: bool },
    LookBehind { negate: bool },
}

impl GroupKind {
    pub fn is_lookaround(self) -> bool {
        matches!(self, GroupKind::LookAhead { .. } | GroupKind::LookBehind { .. })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    pub node: Node,
    pub min: u32,
    /// `None` is unbounded.
    pub max: Option<u32>,
    pub mode: RepeatMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepeatMode {
    Greedy,
    Lazy,
    Possessive,
}

impl Node {
    /// The set of bytes this node matches when it is exactly one byte wide.
    pub fn single_byte(&self) -> Option<ByteSet> {
        match self {
            Node::Literal { byte, caseless } => {
                let s = ByteSet::single(*byte);
                Some(if *caseless { s.case_fold() } else { s })
            }
            Node::Set(s) => Some(*s),
            _ => None,
        }
    }

    /// The length every match of this node has, if it is fixed (PCRE2 10.42's rule for
    /// lookbehind branches: nested alternatives must all have the same length, repeats
    /// must have min == max, back references are never fixed).
    pub fn fixed_len(&self) -> Option<usize> {
        match self {
            Node::Empty | Node::Assert(_) => Some(0),
            Node::Literal { .. } | Node::Set(_) => Some(1),
            Node::Group(g) if g.kind.is_lookaround() => Some(0),
            Node::Group(g) => g.body.fixed_len(),
            Node::Concat(items) => items.iter().try_fold(0usize, |acc, n| Some(acc + n.fixed_len()?)),
            Node::Alt(branches) => {
                let first = branches.first()?.fixed_len()?;
                branches.iter().skip(1).all(|b| b.fixed_len() == Some(first)).then_some(first)
            }
            Node::Repeat(r) => match r.max {
                Some(max) if max == r.min => Some(r.node.fixed_len()? * max as usize),
                _ => None,
            },
            Node::Backref { .. } => None,
        }
    }

    /// The bytes the first consumed byte of a match can be, and whether the node can
    /// match the empty string. Zero-width items are transparent (they can only refuse).
    pub fn first_bytes(&self) -> (ByteSet, bool) {
        match self {
            Node::Empty | Node::Assert(_) => (ByteSet::EMPTY, true),
            Node::Literal { .. } | Node::Set(_) => (self.single_byte().expect("one byte"), false),
            Node::Group(g) if g.kind.is_lookaround() => (ByteSet::EMPTY, true),
            Node::Group(g) => g.body.first_bytes(),
            Node::Concat(items) => {
                let mut set = ByteSet::EMPTY;
                for item in items {
                    let (s, nullable) = item.first_bytes();
                    set = set.union(s);
                    if !nullable {
                        return (set, false);
                    }
                }
                (set, true)
            }
            Node::Alt(branches) => branches.iter().fold((ByteSet::EMPTY, false), |(set, nullable), b| {
                let (s, n) = b.first_bytes();
                (set.union(s), nullable || n)
            }),
            Node::Repeat(r) => {
                if r.max == Some(0) {
                    return (ByteSet::EMPTY, true);
                }
                let (s, nullable) = r.node.first_bytes();
                (s, nullable || r.min == 0)
            }
            Node::Backref { .. } => (ByteSet::FULL, true),
        }
    }

    /// Whether the node can match the empty string (back references count as able to).
    pub fn can_be_empty(&self) -> bool {
        match self {
            Node::Empty | Node::Assert(_) | Node::Backref { .. } => true,
            Node::Literal { .. } | Node::Set(_) => false,
            Node::Group(g) => g.kind.is_lookaround() || g.body.can_be_empty(),
            Node::Concat(items) => items.iter().all(Node::can_be_empty),
            Node::Alt(branches) => branches.iter().any(Node::can_be_empty),
            Node::Repeat(r) => r.min == 0 || r.max == Some(0) || r.node.can_be_empty(),
        }
    }

    /// True when a back reference occurs anywhere below this node.
    pub fn has_backref(&self) -> bool {
        match self {
            Node::Backref { .. } => true,
            Node::Group(g) => g.body.has_backref(),
            Node::Concat(v) | Node::Alt(v) => v.iter().any(Node::has_backref),
            Node::Repeat(r) => r.node.has_backref(),
            _ => false,
        }
    }
}
