//! `lower`: the tree to a flat instruction list for the backtracking VM in
//! `templates/lua/lighten_re.lua`, and `Program::to_lua`, which prints it as a Lua table
//! constructor.
//!
//! Repeats of groups are laid out the way PCRE2's compiler lays them out
//! (`pcre2_compile.c`, "If previous was a bracket group"), because the layout decides the
//! backtracking order and so the captures:
//!
//! | quantifier     | layout                                                        |
//! |----------------|---------------------------------------------------------------|
//! | `X?`           | `split end; X; end:`                                          |
//! | `X*`           | `split end; L: mark r; X; loop r L; end:`                     |
//! | `X+`           | `L: mark r; X; loop r L`                                      |
//! | `X{2,}`        | `X; L: mark r; X; loop r L`                                   |
//! | `X{1,3}`       | `X; split end; X; split end; X; end:` (nested, as `X(?:X(?:X)?)?`) |
//! | `X{0}`         | nothing                                                       |
//! | possessive     | the greedy layout inside an atomic group                      |
//!
//! `loop r L` is PCRE2's KETRMAX: when the iteration that just ended matched the empty
//! string (position == register r) it does not iterate again, otherwise it tries another
//! iteration first and the rest of the pattern on backtracking. Lazy quantifiers use the
//! same layouts with the two choices swapped. Single-byte items (`a*`, `[^/]+`, `.{2,5}?`)
//! get one counting instruction instead, which backs off one byte at a time.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ast::{Assertion, GroupKind, Node, RepeatMode};
use super::byteset::ByteSet;

/// More instructions than this and the pattern is refused (PCRE2's own compiled-size
/// limit refuses patterns well before repeats expand this far).
const MAX_INSTRUCTIONS: usize = 100_000;

/// VM opcodes. The numbers are the program format: `lighten_re.lua` declares the same
/// `local OP_* = n` constants (a unit test compares the two lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Match = 1,
    Char = 2,
    Set = 3,
    Str = 4,
    StrFold = 5,
    Split = 6,
    SplitJump = 7,
    Jump = 8,
    Open = 9,
    Close = 10,
    Star = 11,
    Lazy = 12,
    Possessive = 13,
    Start = 14,
    LineStart = 15,
    EndOrFinalNewline = 16,
    End = 17,
    LineEnd = 18,
    WordBoundary = 19,
    NotWordBoundary = 20,
    SearchStart = 21,
    Atomic = 22,
    AtomicEnd = 23,
    Look = 24,
    LookEnd = 25,
    NegLook = 26,
    NegLookEnd = 27,
    Back = 28,
    Mark = 29,
    LoopGreedy = 30,
    LoopLazy = 31,
    Ref = 32,
    RefFold = 33,
}

#[cfg(test)]
impl Op {
    pub const ALL: [Op; 33] = [
        Op::Match,
        Op::Char,
        Op::Set,
        Op::Str,
        Op::StrFold,
        Op::Split,
        Op::SplitJump,
        Op::Jump,
        Op::Open,
        Op::Close,
        Op::Star,
        Op::Lazy,
        Op::Possessive,
        Op::Start,
        Op::LineStart,
        Op::EndOrFinalNewline,
        Op::End,
        Op::LineEnd,
        Op::WordBoundary,
        Op::NotWordBoundary,
        Op::SearchStart,
        Op::Atomic,
        Op::AtomicEnd,
        Op::Look,
        Op::LookEnd,
        Op::NegLook,
        Op::NegLookEnd,
        Op::Back,
        Op::Mark,
        Op::LoopGreedy,
        Op::LoopLazy,
        Op::Ref,
        Op::RefFold,
    ];

    /// The constant's name in the Lua module, without the `OP_` prefix.
    pub fn lua_name(self) -> String {
        let debug = format!("{self:?}");
        let mut out = String::new();
        for (k, c) in debug.chars().enumerate() {
            if c.is_ascii_uppercase() && k > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
        }
        out
    }
}

/// One instruction: an opcode and up to three integer operands. Jump targets are
/// instruction indices here and Lua code indices (`4 * index + 1`) in the printed form.
#[derive(Debug, Clone, Copy)]
struct Inst {
    op: Op,
    a: i64,
    b: i64,
    c: i64,
}

/// Where a match may start, from the pattern's first item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    None,
    /// Every branch starts with `^` (not multiline) or `\A`: only at subject start.
    SubjectStart,
    /// Every branch starts with `\G`: only at the search start.
    SearchStart,
}

pub struct Program {
    code: Vec<Inst>,
    sets: Vec<ByteSet>,
    strs: Vec<Vec<u8>>,
    groups: usize,
    regs: usize,
    anchor: Anchor,
    /// The bytes a match can start with, when the pattern cannot match the empty string.
    first: Option<ByteSet>,
    /// A byte every match contains (the last one found, as PCRE2's "required code
    /// unit"), and whether it is a caseless letter; a subject without it cannot match.
    required: Option<(u8, bool)>,
}

/// Lowers a parsed tree with `groups` capturing groups. Fails only when the program
/// would be too large.
pub fn lower(root: &Node, groups: usize) -> Result<Program, String> {
    let mut l = Lower {
        code: Vec::new(),
        sets: Vec::new(),
        set_index: BTreeMap::new(),
        strs: Vec::new(),
        str_index: BTreeMap::new(),
        next_reg: 2 * (groups + 1) + 1,
    };
    l.node(root)?;
    l.emit(Op::Match, 0, 0, 0)?;
    let (first, nullable) = root.first_bytes();
    Ok(Program {
        code: l.code,
        sets: l.sets,
        strs: l.strs,
        groups,
        regs: l.next_reg - 1,
        anchor: anchor(root),
        first: (!nullable && !first.is_full()).then_some(first),
        required: required(root),
    })
}

struct Lower {
    code: Vec<Inst>,
    sets: Vec<ByteSet>,
    set_index: BTreeMap<ByteSet, usize>,
    strs: Vec<Vec<u8>>,
    str_index: BTreeMap<Vec<u8>, usize>,
    next_reg: usize,
}

impl Lower {
    fn emit(&mut self, op: Op, a: i64, b: i64, c: i64) -> Result<usize, String> {
        if self.code.len() >= MAX_INSTRUCTIONS {
            return Err(format!("pattern expands to more than {MAX_INSTRUCTIONS} VM instructions"));
        }
        self.code.push(Inst { op, a, b, c });
        Ok(self.code.len() - 1)
    }

    fn here(&self) -> i64 {
        self.code.len() as i64
    }

    fn reg(&mut self) -> i64 {
        self.next_reg += 1;
        (self.next_reg - 1) as i64
    }

    /// 1-based index of a set in the program's `sets` list.
    fn set(&mut self, s: ByteSet) -> i64 {
        let next = self.sets.len() + 1;
        let k = *self.set_index.entry(s).or_insert(next);
        if k == next {
            self.sets.push(s);
        }
        k as i64
    }

    fn string(&mut self, s: &[u8]) -> i64 {
        let next = self.strs.len() + 1;
        let k = *self.str_index.entry(s.to_vec()).or_insert(next);
        if k == next {
            self.strs.push(s.to_vec());
        }
        k as i64
    }

    fn node(&mut self, n: &Node) -> Result<(), String> {
        match n {
            Node::Empty => {}
            Node::Literal { .. } => self.literals(std::slice::from_ref(n))?,
            Node::Set(s) => self.byte_set(*s)?,
            Node::Assert(a) => {
                let op = match a {
                    Assertion::Start => Op::Start,
                    Assertion::LineStart => Op::LineStart,
                    Assertion::EndOrFinalNewline => Op::EndOrFinalNewline,
                    Assertion::End => Op::End,
                    Assertion::LineEnd => Op::LineEnd,
                    Assertion::WordBoundary => Op::WordBoundary,
                    Assertion::NotWordBoundary => Op::NotWordBoundary,
                    Assertion::SearchStart => Op::SearchStart,
                };
                self.emit(op, 0, 0, 0)?;
            }
            Node::Concat(items) => {
                let mut k = 0;
                while k < items.len() {
                    if let Node::Literal { .. } = items[k] {
                        let run = items[k..].iter().take_while(|n| matches!(n, Node::Literal { .. })).count();
                        self.literals(&items[k..k + run])?;
                        k += run;
                    } else {
                        self.node(&items[k])?;
                        k += 1;
                    }
                }
            }
            Node::Alt(branches) => self.alternation(branches, false)?,
            Node::Group(g) => match g.kind {
                GroupKind::NonCapture => self.node(&g.body)?,
                GroupKind::Capture(group) => {
                    let r = self.reg();
                    self.emit(Op::Open, r, 0, 0)?;
                    self.node(&g.body)?;
                    self.emit(Op::Close, group as i64, r, 0)?;
                }
                GroupKind::Atomic => {
                    let r = self.reg();
                    self.emit(Op::Atomic, r, 0, 0)?;
                    self.node(&g.body)?;
                    self.emit(Op::AtomicEnd, r, 0, 0)?;
                }
                GroupKind::LookAhead { negate } | GroupKind::LookBehind { negate } => {
                    let behind = matches!(g.kind, GroupKind::LookBehind { .. });
                    // Look needs two registers: the stack height and the position.
                    let r = self.reg();
                    self.reg();
                    let start = self.emit(if negate { Op::NegLook } else { Op::Look }, r, 0, 0)?;
                    if behind {
                        let branches = match &g.body {
                            Node::Alt(b) => b.as_slice(),
                            other => std::slice::from_ref(other),
                        };
                        self.alternation(branches, true)?;
                    } else {
                        self.node(&g.body)?;
                    }
                    self.emit(if negate { Op::NegLookEnd } else { Op::LookEnd }, r, 0, 0)?;
                    if negate {
                        self.code[start].b = self.here();
                    }
                }
            },
            Node::Repeat(r) => {
                if let Some(set) = r.node.single_byte() {
                    if r.max == Some(0) {
                        return Ok(());
                    }
                    let op = match r.mode {
                        RepeatMode::Greedy => Op::Star,
                        RepeatMode::Lazy => Op::Lazy,
                        RepeatMode::Possessive => Op::Possessive,
                    };
                    let k = self.set(set);
                    self.emit(op, k, i64::from(r.min), r.max.map_or(-1, i64::from))?;
                } else if r.mode == RepeatMode::Possessive {
                    let reg = self.reg();
                    self.emit(Op::Atomic, reg, 0, 0)?;
                    self.repeat(&r.node, r.min, r.max, false)?;
                    self.emit(Op::AtomicEnd, reg, 0, 0)?;
                } else {
                    self.repeat(&r.node, r.min, r.max, r.mode == RepeatMode::Lazy)?;
                }
            }
            Node::Backref { group, caseless } => {
                self.emit(if *caseless { Op::RefFold } else { Op::Ref }, *group as i64, 0, 0)?;
            }
        }
        Ok(())
    }

    /// Alternatives in order; with `behind`, each branch first steps back by its (fixed)
    /// length, as PCRE2's OP_REVERSE does.
    fn alternation(&mut self, branches: &[Node], behind: bool) -> Result<(), String> {
        let mut to_end = Vec::new();
        for (k, b) in branches.iter().enumerate() {
            let last = k + 1 == branches.len();
            let split = if last { None } else { Some(self.emit(Op::Split, 0, 0, 0)?) };
            if behind {
                let len = b.fixed_len().ok_or("lookbehind branch without a fixed length")?;
                if len > 0 {
                    self.emit(Op::Back, len as i64, 0, 0)?;
                }
            }
            self.node(b)?;
            if let Some(split) = split {
                to_end.push(self.emit(Op::Jump, 0, 0, 0)?);
                self.code[split].a = self.here();
            }
        }
        let end = self.here();
        for j in to_end {
            self.code[j].a = end;
        }
        Ok(())
    }

    fn repeat(&mut self, n: &Node, min: u32, max: Option<u32>, lazy: bool) -> Result<(), String> {
        if max == Some(0) {
            return Ok(());
        }
        let optional = if lazy { Op::SplitJump } else { Op::Split };
        let looping = if lazy { Op::LoopLazy } else { Op::LoopGreedy };
        for _ in 1..min {
            self.node(n)?;
        }
        match max {
            None => {
                let skip = if min == 0 { Some(self.emit(optional, 0, 0, 0)?) } else { None };
                let body = self.here();
                let r = self.reg();
                self.emit(Op::Mark, r, 0, 0)?;
                self.node(n)?;
                self.emit(looping, r, body, 0)?;
                if let Some(skip) = skip {
                    self.code[skip].a = self.here();
                }
            }
            Some(max) => {
                if min > 0 {
                    self.node(n)?;
                }
                let mut skips = Vec::new();
                for _ in min..max {
                    skips.push(self.emit(optional, 0, 0, 0)?);
                    self.node(n)?;
                }
                let end = self.here();
                for s in skips {
                    self.code[s].a = end;
                }
            }
        }
        Ok(())
    }

    fn byte_set(&mut self, s: ByteSet) -> Result<(), String> {
        if let Some(b) = s.only() {
            self.emit(Op::Char, i64::from(b), 0, 0)?;
        } else {
            let k = self.set(s);
            self.emit(Op::Set, k, 0, 0)?;
        }
        Ok(())
    }

    /// A run of literals: exact bytes become `Str` (or `Char`), runs with caseless
    /// letters become `StrFold` over the lowercased text. A run never mixes an exact
    /// letter with a caseless one.
    fn literals(&mut self, run: &[Node]) -> Result<(), String> {
        let mut k = 0;
        while k < run.len() {
            let fold = run[k..]
                .iter()
                .map(|n| match n {
                    Node::Literal { byte, caseless } => (*byte, *caseless),
                    _ => unreachable!("literal run"),
                })
                .find(|(b, _)| b.is_ascii_alphabetic())
                .is_some_and(|(_, c)| c);
            let mut text = Vec::new();
            while k < run.len() {
                let Node::Literal { byte, caseless } = run[k] else { unreachable!("literal run") };
                if byte.is_ascii_alphabetic() && caseless != fold {
                    break;
                }
                text.push(if fold { byte.to_ascii_lowercase() } else { byte });
                k += 1;
            }
            match (text.len(), fold) {
                (1, false) => self.byte_set(ByteSet::single(text[0]))?,
                (1, true) => self.byte_set(ByteSet::single(text[0]).case_fold())?,
                (len, fold) => {
                    let s = self.string(&text);
                    self.emit(if fold { Op::StrFold } else { Op::Str }, s, len as i64, 0)?;
                }
            }
        }
        Ok(())
    }
}

/// A byte (or caseless ASCII letter) that every match of `n` contains.
fn required(n: &Node) -> Option<(u8, bool)> {
    match n {
        Node::Literal { byte, caseless } => {
            Some(if *caseless { (byte.to_ascii_lowercase(), true) } else { (*byte, false) })
        }
        Node::Set(s) => match s.only() {
            Some(b) => Some((b, false)),
            None => {
                let lower = s.iter().next().filter(|b| b.is_ascii_alphabetic())?.to_ascii_lowercase();
                (*s == ByteSet::single(lower).case_fold()).then_some((lower, true))
            }
        },
        Node::Group(g) if g.kind.is_lookaround() => None,
        Node::Group(g) => required(&g.body),
        Node::Concat(items) => items.iter().rev().find_map(required),
        Node::Alt(branches) => {
            let first = required(branches.first()?)?;
            branches.iter().skip(1).all(|b| required(b) == Some(first)).then_some(first)
        }
        Node::Repeat(r) if r.min >= 1 => required(&r.node),
        _ => None,
    }
}

/// Whether every match must start at the subject start (or the search start): the first
/// item that is not a zero-width lookaround is `^`/`\A` (or `\G`) in every branch.
fn anchor(n: &Node) -> Anchor {
    match n {
        Node::Assert(Assertion::Start) => Anchor::SubjectStart,
        Node::Assert(Assertion::SearchStart) => Anchor::SearchStart,
        Node::Group(g) if !g.kind.is_lookaround() => anchor(&g.body),
        Node::Concat(items) => {
            for item in items {
                match item {
                    Node::Empty => continue,
                    Node::Group(g) if g.kind.is_lookaround() => continue,
                    other => return anchor(other),
                }
            }
            Anchor::None
        }
        Node::Alt(branches) => {
            let first = branches.first().map_or(Anchor::None, anchor);
            if branches.iter().all(|b| anchor(b) == first) { first } else { Anchor::None }
        }
        Node::Repeat(r) if r.min >= 1 => anchor(&r.node),
        _ => Anchor::None,
    }
}

impl Program {
    /// The program as a Lua table constructor (see the module doc of `luare` for the
    /// fields). Deterministic: the same pattern and options give the same text.
    pub fn to_lua(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, "{{v=1,ng={},nr={}", self.groups, self.regs);
        match self.anchor {
            Anchor::None => {}
            Anchor::SubjectStart => s.push_str(",anchor=1"),
            Anchor::SearchStart => s.push_str(",anchor=2"),
        }
        let mut sets = self.sets.clone();
        if let Some(first) = self.first {
            match first.only() {
                Some(b) => {
                    let _ = write!(s, ",fb={b}");
                }
                None => {
                    sets.push(first);
                    let _ = write!(s, ",fs={}", sets.len());
                }
            }
        }
        match self.required {
            Some((b, true)) => {
                let _ = write!(s, ",rb={b},rbi=1");
            }
            Some((b, false)) => {
                let _ = write!(s, ",rb={b}");
            }
            None => {}
        }
        s.push_str(",code={");
        for (k, i) in self.code.iter().enumerate() {
            let target = |t: i64| 4 * t + 1;
            let (a, b) = match i.op {
                Op::Split | Op::SplitJump | Op::Jump => (target(i.a), i.b),
                Op::NegLook => (i.a, target(i.b)),
                Op::LoopGreedy | Op::LoopLazy => (i.a, target(i.b)),
                _ => (i.a, i.b),
            };
            if k > 0 {
                s.push(',');
            }
            let _ = write!(s, "{},{},{},{}", i.op as u8, a, b, i.c);
        }
        s.push_str("},sets={");
        for (k, set) in sets.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            let _ = write!(s, "\"{}\"", set.to_hex());
        }
        s.push_str("},strs={");
        for (k, text) in self.strs.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            s.push_str(&lua_string(text));
        }
        s.push_str("}}");
        s
    }
}

/// A Lua string literal for any bytes: printable ASCII as is, everything else as a
/// three-digit decimal escape (so a following digit cannot extend it).
pub fn lua_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\{b:03}");
        }
    }
    s.push('"');
    s
}
