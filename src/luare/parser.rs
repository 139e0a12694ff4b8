//! `parse`: PCRE2 pattern text to the resolved tree in `ast`, following PCRE2's parser
//! (`parse_regex`, `check_escape`) for non-UTF 8-bit patterns.
//!
//! It only ever sees patterns the real PCRE2 has already accepted (see `compile`), so its
//! own errors are there to be safe, not to be exact. Its job is to never give an accepted
//! pattern a different meaning: every construct it does not implement exactly, and every
//! piece of syntax whose meaning changed between PCRE2 10.42 (what Apache on Debian 12
//! links) and the newer PCRE2 the `pcre2` crate bundles, is an `Unsupported` error.

use super::ast::{Assertion, Group, GroupKind, Node, Repeat, RepeatMode};
use super::byteset::ByteSet;
use super::{Options, Unsupported};

mod class;
mod escape;

/// PCRE2 10.42's `MAX_NAME_SIZE`; newer versions allow 128.
const MAX_NAME_LEN: usize = 32;
/// PCRE2's `MAX_REPEAT_COUNT`.
const MAX_REPEAT: u32 = 65535;
/// Placeholder group numbers for named references resolved after the whole pattern is
/// read (a name may be defined after it is used).
const NAMED_REF_BASE: usize = usize::MAX / 2;

pub struct Parsed {
    pub root: Node,
    pub groups: usize,
}

pub fn parse(pattern: &str, options: &Options) -> Result<Parsed, Unsupported> {
    let mut p = Parser {
        p: pattern.as_bytes(),
        i: 0,
        flags: Flags {
            caseless: options.caseless,
            multiline: options.multiline,
            dotall: options.dotall,
            extended: options.extended,
            extended_more: false,
            no_auto_capture: false,
            ungreedy: false,
        },
        dollar_endonly: options.dollar_endonly,
        groups: 0,
        names: Vec::new(),
        named_refs: Vec::new(),
        numbered_refs: Vec::new(),
        in_quote: false,
    };
    let mut root = p.alternation()?;
    if p.i < p.p.len() {
        return Err(p.err_at(p.i, "unmatched closing parenthesis"));
    }
    if starts_with_lookahead(&root) {
        // PCRE2 10.42 takes a "first code unit" from such a lookahead and then looks for
        // the "required code unit" only after it, so `(?=b)a*b` does not match "b" there
        // (10.43 fixed it). Apache runs 10.42 on Debian 12.
        return Err(p.err_at(0, "a pattern that starts with a lookahead for a literal is not supported"));
    }
    for &(group, offset) in &p.numbered_refs {
        if group == 0 || group > p.groups {
            return Err(p.err_at(offset, "reference to non-existent subpattern"));
        }
    }
    let mut resolved = Vec::with_capacity(p.named_refs.len());
    for (name, offset) in &p.named_refs {
        match p.names.iter().find(|(n, _)| n == name) {
            Some(&(_, group)) => resolved.push(group),
            None => return Err(p.err_at(*offset, "reference to non-existent subpattern")),
        }
    }
    resolve_named(&mut root, &resolved);
    Ok(Parsed { root, groups: p.groups })
}

fn resolve_named(node: &mut Node, resolved: &[usize]) {
    match node {
        Node::Backref { group, .. } if *group >= NAMED_REF_BASE => *group = resolved[*group - NAMED_REF_BASE],
        Node::Group(g) => resolve_named(&mut g.body, resolved),
        Node::Concat(v) | Node::Alt(v) => v.iter_mut().for_each(|n| resolve_named(n, resolved)),
        Node::Repeat(r) => resolve_named(&mut r.node, resolved),
        _ => {}
    }
}

/// The options in force at a point of the pattern. `(?i)` changes them to the end of the
/// enclosing group, across later alternatives too (PCRE2: `(a(?i)b|c)` matches `C`).
#[derive(Clone, Copy)]
struct Flags {
    caseless: bool,
    multiline: bool,
    dotall: bool,
    extended: bool,
    extended_more: bool,
    no_auto_capture: bool,
    ungreedy: bool,
}

struct Parser<'a> {
    p: &'a [u8],
    i: usize,
    flags: Flags,
    dollar_endonly: bool,
    /// Capturing groups opened so far (PCRE2's `bracount`).
    groups: usize,
    names: Vec<(String, usize)>,
    named_refs: Vec<(String, usize)>,
    numbered_refs: Vec<(usize, usize)>,
    /// Inside `\Q...\E` outside a class.
    in_quote: bool,
}

/// What one step of reading a branch produced.
enum Item {
    /// A node a quantifier may follow.
    Atom(Node),
    /// A node no quantifier may follow (anchors, `\b`).
    Fixed(Node),
    /// Nothing that takes part in matching: `(?#...)`, `\E`, `\Q`, an option setting.
    /// `options` is true for an option setting, which also ends quantifiability.
    Nothing { options: bool },
}

impl Parser<'_> {
    fn err_at(&self, offset: usize, reason: &str) -> Unsupported {
        Unsupported { offset, reason: reason.to_string() }
    }

    fn err(&self, reason: &str) -> Unsupported {
        self.err_at(self.i, reason)
    }

    fn peek(&self) -> Option<u8> {
        self.p.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.p.get(self.i + k).copied()
    }

    fn at(&self, s: &[u8]) -> bool {
        self.p[self.i..].starts_with(s)
    }

    fn literal(&self, byte: u8) -> Node {
        Node::Literal { byte, caseless: self.flags.caseless && byte.is_ascii_alphabetic() }
    }

    fn alternation(&mut self) -> Result<Node, Unsupported> {
        let mut branches = vec![self.branch()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            branches.push(self.branch()?);
        }
        Ok(if branches.len() == 1 { branches.pop().expect("one branch") } else { Node::Alt(branches) })
    }

    /// Whitespace and `#` comments in extended mode.
    fn skip_extended(&mut self) {
        if !self.flags.extended {
            return;
        }
        while let Some(c) = self.peek() {
            // PCRE2 with Unicode support skips C-locale space and NEL (0x85), even in
            // non-UTF mode.
            if matches!(c, 0x09..=0x0d | b' ' | 0x85) {
                self.i += 1;
            } else if c == b'#' {
                // A comment runs to the newline (LF, PCRE2's default newline).
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == b'\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
    }

    fn branch(&mut self) -> Result<Node, Unsupported> {
        let mut items: Vec<Node> = Vec::new();
        // Whether the last item may take a quantifier. Comments, `\E` and extended space
        // in between do not matter: `a(?#c)*` is `a*` (PCRE2 10.42 and later alike).
        let mut quantifiable = false;
        loop {
            if self.in_quote {
                if self.at(b"\\E") {
                    self.i += 2;
                    self.in_quote = false;
                    continue;
                }
                let Some(c) = self.peek() else { break };
                self.i += 1;
                items.push(self.literal(c));
                quantifiable = true;
                continue;
            }
            self.skip_extended();
            let Some(c) = self.peek() else { break };
            if c == b'|' || c == b')' {
                break;
            }
            let start = self.i;
            if let Some((min, max)) = self.quantifier()? {
                if !quantifiable {
                    return Err(self.err_at(start, "quantifier does not follow a repeatable item"));
                }
                let node = items.pop().expect("a quantifiable item");
                let node = self.repeat(node, min, max, start)?;
                items.push(node);
                quantifiable = false;
                continue;
            }
            match self.item()? {
                Item::Atom(node) => {
                    items.push(node);
                    quantifiable = true;
                }
                Item::Fixed(node) => {
                    items.push(node);
                    quantifiable = false;
                }
                Item::Nothing { options } => quantifiable &= !options,
            }
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().expect("one item"),
            _ => Node::Concat(items),
        })
    }

    /// The position after anything that does not take part in matching at `from`:
    /// extended space and comments, `(?#...)`, `\E`, `\Q\E`.
    fn after_transparent(&self, mut from: usize) -> usize {
        loop {
            let rest = &self.p[from..];
            if rest.starts_with(b"\\E") {
                from += 2;
            } else if rest.starts_with(b"\\Q\\E") {
                from += 4;
            } else if rest.starts_with(b"(?#") {
                match rest.iter().position(|&c| c == b')') {
                    Some(k) => from += k + 1,
                    None => return from,
                }
            } else if self.flags.extended && matches!(rest.first(), Some(0x09..=0x0d | b' ' | 0x85)) {
                from += 1;
            } else if self.flags.extended && rest.first() == Some(&b'#') {
                match rest.iter().position(|&c| c == b'\n') {
                    Some(k) => from += k + 1,
                    None => from = self.p.len(),
                }
            } else {
                return from;
            }
        }
    }

    /// Reads a quantifier at the current position, if there is one: `*`, `+`, `?` or a
    /// `{n}`, `{n,}`, `{n,m}` in PCRE2 10.42's syntax. The lazy/possessive suffix is read
    /// by `repeat`.
    fn quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, Unsupported> {
        let q = match self.peek() {
            Some(b'*') => (0, None),
            Some(b'+') => (1, None),
            Some(b'?') => (0, Some(1)),
            Some(b'{') => return self.braced_quantifier(),
            _ => return Ok(None),
        };
        self.i += 1;
        Ok(Some(q))
    }

    fn braced_quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, Unsupported> {
        let start = self.i;
        let rest = &self.p[self.i + 1..];
        let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
        let n1 = digits(rest);
        let strict = if n1 > 0 {
            match rest.get(n1) {
                Some(b'}') => Some((n1 + 2, &rest[..n1], None)),
                Some(b',') => {
                    let n2 = digits(&rest[n1 + 1..]);
                    match rest.get(n1 + 1 + n2) {
                        Some(b'}') => Some((n1 + n2 + 3, &rest[..n1], Some(&rest[n1 + 1..n1 + 1 + n2]))),
                        _ => None,
                    }
                }
                _ => None,
            }
        } else {
            None
        };
        let Some((len, min_text, max_text)) = strict else {
            // PCRE2 10.43 made `{,n}` and `{ n , m }` quantifiers; 10.42 reads them as
            // literal text. Refuse anything that is one reading and not the other.
            let inner =
                rest.iter().take_while(|&&c| c.is_ascii_digit() || c == b',' || c == b' ' || c == b'\t');
            let n = inner.count();
            if rest.get(n) == Some(&b'}') && rest[..n].iter().any(|c| c.is_ascii_digit() || *c == b',') {
                return Err(
                    self.err_at(start, "quantifier syntax whose meaning differs between PCRE2 versions")
                );
            }
            return Ok(None);
        };
        let number = |t: &[u8]| -> Option<u32> {
            let v: u64 = std::str::from_utf8(t).ok()?.parse().ok()?;
            (v <= u64::from(MAX_REPEAT)).then_some(v as u32)
        };
        let Some(min) = number(min_text) else {
            return Err(self.err_at(start, "number too big in {} quantifier"));
        };
        let max = match max_text {
            None => Some(min),
            Some([]) => None,
            Some(t) => match number(t) {
                Some(m) if m >= min => Some(m),
                Some(_) => return Err(self.err_at(start, "numbers out of order in {} quantifier")),
                None => return Err(self.err_at(start, "number too big in {} quantifier")),
            },
        };
        self.i += len;
        Ok(Some((min, max)))
    }

    /// Applies a quantifier (already read) and its `?`/`+` suffix to `node`.
    fn repeat(&mut self, node: Node, min: u32, max: Option<u32>, start: usize) -> Result<Node, Unsupported> {
        let mut mode = if self.flags.ungreedy { RepeatMode::Lazy } else { RepeatMode::Greedy };
        // The `+`/`?` suffix may follow after a comment or extended space (`a* ?` is lazy).
        let at = self.after_transparent(self.i);
        match self.p.get(at) {
            Some(b'+') => {
                self.i = at + 1;
                mode = RepeatMode::Possessive;
            }
            Some(b'?') => {
                self.i = at + 1;
                mode = if self.flags.ungreedy { RepeatMode::Greedy } else { RepeatMode::Lazy };
            }
            _ => {}
        }
        if matches!(node, Node::Group(ref g) if g.kind.is_lookaround()) && max.is_none() {
            // PCRE2 caps an unbounded repeat of an assertion at one more than the minimum.
            return self.repeat_checked(node, min, Some(min + 1), mode, start);
        }
        self.repeat_checked(node, min, max, mode, start)
    }

    fn repeat_checked(
        &self,
        node: Node,
        min: u32,
        max: Option<u32>,
        mode: RepeatMode,
        start: usize,
    ) -> Result<Node, Unsupported> {
        if !matches!(node, Node::Literal { .. } | Node::Set(_) | Node::Group(_) | Node::Backref { .. }) {
            return Err(self.err_at(start, "quantifier does not follow a repeatable item"));
        }
        if max == Some(0) && matches!(node, Node::Group(_)) {
            // PCRE2's start-of-match optimisation takes a lookahead inside a skipped group
            // into account: `(?:$|(?=b)){0}` does not match "/" (it does with
            // (*NO_START_OPT)). A group repeated zero times is pointless, so refuse it.
            return Err(self.err_at(start, "a group repeated {0} times is not supported"));
        }
        if min == 1 && max == Some(1) && mode != RepeatMode::Possessive {
            return Ok(node);
        }
        Ok(Node::Repeat(Box::new(Repeat { node, min, max, mode })))
    }

    /// Reads one item (not a quantifier) outside a class.
    fn item(&mut self) -> Result<Item, Unsupported> {
        let c = self.peek().expect("caller checked");
        match c {
            b'(' => self.group(),
            b'[' => self.class_or_word_boundary(),
            b'\\' => self.escape(),
            b'.' => {
                self.i += 1;
                Ok(Item::Atom(Node::Set(self.dot())))
            }
            b'^' => {
                self.i += 1;
                Ok(Item::Fixed(Node::Assert(if self.flags.multiline {
                    Assertion::LineStart
                } else {
                    Assertion::Start
                })))
            }
            b'$' => {
                self.i += 1;
                Ok(Item::Fixed(Node::Assert(if self.flags.multiline {
                    Assertion::LineEnd
                } else if self.dollar_endonly {
                    Assertion::End
                } else {
                    Assertion::EndOrFinalNewline
                })))
            }
            _ => {
                self.i += 1;
                Ok(Item::Atom(self.literal(c)))
            }
        }
    }

    fn dot(&self) -> ByteSet {
        if self.flags.dotall { ByteSet::FULL } else { ByteSet::single(b'\n').negate() }
    }

    fn group(&mut self) -> Result<Item, Unsupported> {
        let start = self.i;
        self.i += 1; // (
        if self.peek() == Some(b'*') {
            return Err(self.err_at(start, "(*VERB) and (*alpha:...) constructs are not supported"));
        }
        if self.peek() != Some(b'?') {
            let kind = if self.flags.no_auto_capture {
                GroupKind::NonCapture
            } else {
                self.groups += 1;
                GroupKind::Capture(self.groups)
            };
            return self.group_body(kind, start, None);
        }
        self.i += 1; // ?
        let Some(c) = self.peek() else { return Err(self.err_at(start, "missing closing parenthesis")) };
        match c {
            b'#' => {
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == b')' {
                        return Ok(Item::Nothing { options: false });
                    }
                }
                Err(self.err_at(start, "missing ) after (?# comment"))
            }
            b':' => {
                self.i += 1;
                self.group_body(GroupKind::NonCapture, start, None)
            }
            b'>' => {
                self.i += 1;
                self.group_body(GroupKind::Atomic, start, None)
            }
            b'=' | b'!' => {
                self.i += 1;
                self.group_body(GroupKind::LookAhead { negate: c == b'!' }, start, None)
            }
            b'<' if matches!(self.peek_at(1), Some(b'=' | b'!')) => {
                let negate = self.peek_at(1) == Some(b'!');
                self.i += 2;
                self.group_body(GroupKind::LookBehind { negate }, start, None)
            }
            b'<' | b'\'' => {
                self.i += 1;
                let name = self.name(if c == b'<' { b'>' } else { b'\'' })?;
                self.named_group(name, start)
            }
            b'P' => match self.peek_at(1) {
                Some(b'<') => {
                    self.i += 2;
                    let name = self.name(b'>')?;
                    self.named_group(name, start)
                }
                Some(b'=') => {
                    self.i += 2;
                    let name = self.name(b')')?;
                    Ok(Item::Atom(self.named_ref(name, start)))
                }
                _ => Err(self.err_at(start, "subroutine calls ((?P>name)) are not supported")),
            },
            b'|' => Err(self.err_at(start, "branch reset groups (?|...) are not supported")),
            b'(' => Err(self.err_at(start, "conditional groups (?(...)...) are not supported")),
            b'C' => Err(self.err_at(start, "callouts (?C...) are not supported")),
            b'*' => Err(self.err_at(start, "non-atomic assertions (?*...) are not supported")),
            b'R' | b'&' | b'+' | b'0'..=b'9' => {
                Err(self.err_at(start, "recursion and subroutine calls are not supported"))
            }
            b'-' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => {
                Err(self.err_at(start, "recursion and subroutine calls are not supported"))
            }
            _ => self.options(start),
        }
    }

    fn named_group(&mut self, name: String, start: usize) -> Result<Item, Unsupported> {
        if self.names.iter().any(|(n, _)| *n == name) {
            // Only reachable with PCRE2_DUPNAMES, which Apache sets: a reference to a
            // duplicated name means "the first set one", which the machine refuses (the
            // rule fails closed).
            return Err(self.err_at(start, "duplicate group names are not supported"));
        }
        self.groups += 1;
        self.names.push((name, self.groups));
        self.group_body(GroupKind::Capture(self.groups), start, None)
    }

    /// Reads a group name up to `terminator`, which is consumed.
    fn name(&mut self, terminator: u8) -> Result<String, Unsupported> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
        let name = &self.p[start..self.i];
        if name.is_empty() || name[0].is_ascii_digit() || self.peek() != Some(terminator) {
            return Err(self.err_at(start, "malformed group name"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(self.err_at(start, "group names longer than 32 bytes are refused by PCRE2 10.42"));
        }
        self.i += 1;
        Ok(String::from_utf8(name.to_vec()).expect("ASCII"))
    }

    fn named_ref(&mut self, name: String, offset: usize) -> Node {
        self.named_refs.push((name, offset));
        Node::Backref { group: NAMED_REF_BASE + self.named_refs.len() - 1, caseless: self.flags.caseless }
    }

    fn numbered_ref(&mut self, group: usize, offset: usize) -> Node {
        self.numbered_refs.push((group, offset));
        Node::Backref { group, caseless: self.flags.caseless }
    }

    /// Parses a group body up to its `)`; options changed inside end with the group.
    fn group_body(
        &mut self,
        kind: GroupKind,
        start: usize,
        flags: Option<Flags>,
    ) -> Result<Item, Unsupported> {
        let saved = self.flags;
        if let Some(f) = flags {
            self.flags = f;
        }
        let body = self.alternation()?;
        self.flags = saved;
        if self.peek() != Some(b')') {
            return Err(self.err_at(start, "missing closing parenthesis"));
        }
        self.i += 1;
        if let GroupKind::LookBehind { .. } = kind {
            check_lookbehind(&body).map_err(|reason| self.err_at(start, reason))?;
        }
        Ok(Item::Atom(Node::Group(Box::new(Group { kind, body }))))
    }

    /// `(?imnsxU-imnsxU)` or `(?imnsxU-imnsxU:...)`, `^` first unsets `imnsx`.
    fn options(&mut self, start: usize) -> Result<Item, Unsupported> {
        let mut f = self.flags;
        if self.peek() == Some(b'^') {
            self.i += 1;
            f.caseless = false;
            f.multiline = false;
            f.no_auto_capture = false;
            f.dotall = false;
            f.extended = false;
            f.extended_more = false;
        }
        let mut on = true;
        let (mut set_x, mut set_xx, mut unset_x) = (false, false, false);
        loop {
            let Some(c) = self.peek() else { return Err(self.err_at(start, "missing closing parenthesis")) };
            self.i += 1;
            match c {
                b'-' => on = false,
                b'i' => f.caseless = on,
                b'm' => f.multiline = on,
                b'n' => f.no_auto_capture = on,
                b's' => f.dotall = on,
                b'U' => f.ungreedy = on,
                b'x' => {
                    let double = self.peek() == Some(b'x');
                    if double {
                        self.i += 1;
                    }
                    if on {
                        set_x = true;
                        set_xx |= double;
                    } else {
                        unset_x = true;
                    }
                }
                b')' | b':' => {
                    if set_x {
                        f.extended = true;
                        f.extended_more = set_xx;
                    }
                    if unset_x {
                        f.extended = false;
                        f.extended_more = false;
                    }
                    if c == b')' {
                        self.flags = f;
                        return Ok(Item::Nothing { options: true });
                    }
                    return self.group_body(GroupKind::NonCapture, start, Some(f));
                }
                b'J' => return Err(self.err_at(start, "(?J) duplicate names are not supported")),
                _ => return Err(self.err_at(self.i - 1, "option letter not supported by PCRE2 10.42")),
            }
        }
    }
}

/// Whether a positive lookahead whose first byte is fixed (one byte, or one letter in
/// either case) can come before the first byte a branch consumes, where the branch is not
/// anchored at the subject start first. Lookaheads that start with a class or `.*` give
/// PCRE2 no first code unit and are fine.
fn starts_with_lookahead(n: &Node) -> bool {
    match n {
        Node::Group(g) => match g.kind {
            GroupKind::LookAhead { negate } => {
                // A body that can be empty gives no first code unit either.
                let (first, nullable) = g.body.first_bytes();
                let letter = first.iter().next().is_some_and(|b| b.is_ascii_alphabetic())
                    && first == first.case_fold()
                    && first.len() == 2;
                !negate && !nullable && (first.len() == 1 || letter)
            }
            GroupKind::LookBehind { .. } => false,
            _ => starts_with_lookahead(&g.body),
        },
        Node::Alt(branches) => branches.iter().any(starts_with_lookahead),
        Node::Concat(items) => {
            for item in items {
                if *item == Node::Assert(Assertion::Start) {
                    return false;
                }
                if starts_with_lookahead(item) {
                    return true;
                }
                if !item.can_be_empty() {
                    return false;
                }
            }
            false
        }
        Node::Repeat(r) => starts_with_lookahead(&r.node),
        _ => false,
    }
}

/// PCRE2 10.42 requires every top-level branch of a lookbehind to have a fixed length
/// (10.43 allows bounded variable lengths, with a different matching algorithm).
fn check_lookbehind(body: &Node) -> Result<(), &'static str> {
    let branches = match body {
        Node::Alt(b) => b.as_slice(),
        other => std::slice::from_ref(other),
    };
    for b in branches {
        if b.has_backref() {
            return Err("back references inside lookbehind are not supported");
        }
        if b.fixed_len().is_none() {
            return Err("lookbehind branch without a fixed length (PCRE2 10.42 rejects it)");
        }
    }
    Ok(())
}
