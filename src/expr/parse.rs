//! The scanner and parser: httpd 2.4's `util_expr_scan.l` and `util_expr_parse.y`, by hand.
//!
//! The scanner is modal like Apache's: in a condition it reads tokens (white space is
//! space, tab and newline only); inside quotes, in a string expression and in the
//! argument of `%{func:arg}` it reads text with escapes. Token rules that matter:
//!
//! | input           | token                                                            |
//! |-----------------|------------------------------------------------------------------|
//! | `=` `==`        | string equality                                                  |
//! | `and` `or` `not`| the same as `&&` `\|\|` `!` (whole words only: `android` is a name) |
//! | `eq lt ... in`  | the same as `-eq -lt ... -in` (ssl_expr compatibility)           |
//! | `-x`            | a unary operator (one letter, case-sensitive)                    |
//! | `-foo`          | a binary operator (two or more characters, any case)            |
//! | `-12`, `12`     | digits                                                           |
//! | `/re/`, `m#re#` | a regex; after `m` any of `/#$%^,;:_?\|-!.'"`; no escape for the delimiter; only flag `i` |
//! | `$1`            | a backreference, also inside quotes (not in `%{f:arg}`)          |
//!
//! Inside quotes `\n \r \t \b \f` and octal `\101` are escapes, a backslash before any
//! other character keeps that character, a line break is an error, and a piece of text
//! longer than Apache's `MAX_STRING_LEN` (8192) is refused. A decoded NUL ends the piece,
//! as it ends a C string.
//!
//! Operator names are checked while parsing, as Apache's lookup hook does; function and
//! variable names are not (modules register more of them, and the context answers).
//! Nesting is limited so that no input can exhaust the stack.

use super::ExprError;
use super::ast::{BinaryOp, CompareOp, Cond, FILE_TESTS, List, Part, Regex, UnaryOp, Word};
use super::builtin::c_string;
use super::subnet::Subnet;

/// Apache's `MAX_STRING_LEN`: its scanner buffers strings and regexes in this many bytes.
const MAX_STRING_LEN: usize = 8192;

/// Parentheses, `!` and function calls nested deeper than this are refused. Apache's own
/// evaluator stops at 20 levels of recursion, so nothing it runs comes near.
const MAX_DEPTH: usize = 100;

/// What may follow `m` to delimit a regex (`REG_SEP` in util_expr_scan.l).
const REG_SEP: &[u8] = b"/#$%^,;:_?|-!.'\"";

pub(super) fn condition(src: &str) -> Result<Cond, ExprError> {
    condition_with_variables(src).map(|(c, _)| c)
}

/// The variables (`%{NAME}`) and functions (`%{name:arg}`, `name(arg)`; true for a list
/// function) an expression names, each with its byte offset.
pub(super) struct Names {
    pub variables: Vec<(String, usize)>,
    pub functions: Vec<(String, usize, bool)>,
}

/// A condition and the names it reads.
pub(super) fn condition_with_variables(src: &str) -> Result<(Cond, Names), ExprError> {
    let mut p = Parser { src, pos: 0, peeked: None, depth: 0, variables: Vec::new(), functions: Vec::new() };
    if matches!(p.peek()?.tok, Tok::Eof) {
        return Err(err(src.len(), "empty expression"));
    }
    let cond = p.or()?;
    let t = p.next()?;
    match t.tok {
        Tok::Eof => Ok((cond, Names { variables: p.variables, functions: p.functions })),
        Tok::RParen => Err(err(t.start, "unmatched ')'")),
        _ => Err(err(t.start, format!("unexpected {} after a complete condition", p.describe(&t)))),
    }
}

pub(super) fn string(src: &str) -> Result<Vec<Part>, ExprError> {
    string_with_variables(src).map(|(parts, _)| parts)
}

/// A string expression and the `%{NAME}` variables it names, as `condition_with_variables`.
pub(super) fn string_with_variables(src: &str) -> Result<(Vec<Part>, Names), ExprError> {
    let mut p = Parser { src, pos: 0, peeked: None, depth: 0, variables: Vec::new(), functions: Vec::new() };
    let parts = p.text(None, 0)?;
    Ok((parts, Names { variables: p.variables, functions: p.functions }))
}

fn err(offset: usize, message: impl Into<String>) -> ExprError {
    ExprError { offset, message: message.into() }
}

#[derive(Debug)]
enum Tok {
    Eof,
    True,
    False,
    Not,
    And,
    Or,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Compare(CompareOp),
    In,
    Match,
    NoMatch,
    Concat,
    Unary(char),
    Binary(String),
    Digits(String),
    Ident(String),
    Str(Vec<Part>),
    /// `%{NAME}` or `%{func:arg}`, as a word.
    Var(Word),
    Backref(u8),
    Regex(Regex),
}

#[derive(Debug)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

struct Parser<'s> {
    src: &'s str,
    pos: usize,
    peeked: Option<Token>,
    depth: usize,
    /// The `%{NAME}` variables read so far, with the offset of each.
    variables: Vec<(String, usize)>,
    /// The functions called so far (`%{name:arg}`, `name(arg)`), with the offset of each
    /// and whether it is a list function (`-in name(arg)`).
    functions: Vec<(String, usize, bool)>,
}

impl Parser<'_> {
    // ---- grammar ----

    fn or(&mut self) -> Result<Cond, ExprError> {
        let mut items = vec![self.and()?];
        while matches!(self.peek()?.tok, Tok::Or) {
            self.next()?;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 { items.swap_remove(0) } else { Cond::Or(items) })
    }

    fn and(&mut self) -> Result<Cond, ExprError> {
        let mut items = vec![self.not()?];
        while matches!(self.peek()?.tok, Tok::And) {
            self.next()?;
            items.push(self.not()?);
        }
        Ok(if items.len() == 1 { items.swap_remove(0) } else { Cond::And(items) })
    }

    /// `!` binds tighter than `&&`: `!a && b` is `(!a) && b`, while `!a == b` negates the
    /// whole comparison, since a comparison is one unit of the grammar.
    fn not(&mut self) -> Result<Cond, ExprError> {
        if !matches!(self.peek()?.tok, Tok::Not) {
            return self.primary();
        }
        let t = self.next()?;
        self.enter(t.start)?;
        let inner = self.not()?;
        self.depth -= 1;
        Ok(Cond::Not(Box::new(inner)))
    }

    fn primary(&mut self) -> Result<Cond, ExprError> {
        let t = self.next()?;
        match t.tok {
            Tok::True => Ok(Cond::True),
            Tok::False => Ok(Cond::False),
            Tok::LParen => {
                self.enter(t.start)?;
                let inner = self.or()?;
                let close = self.next()?;
                if !matches!(close.tok, Tok::RParen) {
                    let found = self.describe(&close);
                    return Err(err(
                        close.start,
                        format!("missing ')' to close the '(' at offset {}, found {found}", t.start),
                    ));
                }
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Unary(letter) => {
                if !("nzTR".contains(letter) || FILE_TESTS.contains(letter)) {
                    return Err(err(t.start, format!("unary operator '-{letter}' does not exist")));
                }
                let arg_start = self.peek()?.start;
                let arg = self.word()?;
                let op = match letter {
                    'n' => UnaryOp::NotEmpty,
                    'z' => UnaryOp::Empty,
                    'T' => UnaryOp::Truthy,
                    'R' => UnaryOp::Remote(constant_subnet(&arg, "-R", arg_start)?),
                    c => UnaryOp::File(c),
                };
                Ok(Cond::Unary(op, arg))
            }
            _ if starts_word(&t.tok) => {
                let left = self.word_from(t)?;
                self.comparison(left)
            }
            _ => Err(err(t.start, format!("expected a condition, found {}", self.describe(&t)))),
        }
    }

    /// What follows the first word of a comparison.
    fn comparison(&mut self, left: Word) -> Result<Cond, ExprError> {
        let t = self.next()?;
        match t.tok {
            Tok::Compare(op) => Ok(Cond::Compare(left, op, self.word()?)),
            Tok::In => Ok(Cond::In(left, self.list()?)),
            Tok::Match | Tok::NoMatch => {
                let negated = matches!(t.tok, Tok::NoMatch);
                let r = self.next()?;
                match r.tok {
                    Tok::Regex(regex) => Ok(Cond::Match { word: left, regex, negated }),
                    _ => {
                        let op = if negated { "!~" } else { "=~" };
                        Err(err(
                            r.start,
                            format!("expected a regex after '{op}', found {}", self.describe(&r)),
                        ))
                    }
                }
            }
            Tok::Binary(name) => {
                let lower = name.to_ascii_lowercase();
                if !["ipmatch", "strmatch", "strcmatch", "fnmatch"].contains(&lower.as_str()) {
                    return Err(err(t.start, format!("binary operator '-{name}' does not exist")));
                }
                let arg_start = self.peek()?.start;
                let right = self.word()?;
                let op = match lower.as_str() {
                    "ipmatch" => BinaryOp::IpMatch(constant_subnet(&right, "-ipmatch", arg_start)?),
                    "strmatch" => BinaryOp::StrMatch,
                    "strcmatch" => BinaryOp::StrCMatch,
                    _ => BinaryOp::FnMatch,
                };
                Ok(Cond::Binary(left, op, right))
            }
            _ => {
                Err(err(t.start, format!("expected an operator after the word, found {}", self.describe(&t))))
            }
        }
    }

    fn list(&mut self) -> Result<List, ExprError> {
        let t = self.next()?;
        match t.tok {
            Tok::LBrace => {
                let mut words = vec![self.word()?];
                loop {
                    let s = self.next()?;
                    match s.tok {
                        Tok::Comma => words.push(self.word()?),
                        Tok::RBrace => return Ok(List::Words(words)),
                        _ => {
                            let found = self.describe(&s);
                            return Err(err(
                                s.start,
                                format!("expected ',' or '}}' in the list, found {found}"),
                            ));
                        }
                    }
                }
            }
            Tok::Ident(name) => {
                self.functions.push((name.clone(), t.start, true));
                let arg = self.call_argument(&name, t.start)?;
                Ok(List::Call { name, arg: Box::new(arg) })
            }
            _ => Err(err(
                t.start,
                format!("expected '{{' or a list function after '-in', found {}", self.describe(&t)),
            )),
        }
    }

    fn word(&mut self) -> Result<Word, ExprError> {
        let t = self.next()?;
        self.word_from(t)
    }

    /// A word starting with `first`, joined by `.` to more.
    fn word_from(&mut self, first: Token) -> Result<Word, ExprError> {
        let first = self.atom(first)?;
        if !matches!(self.peek()?.tok, Tok::Concat) {
            return Ok(first);
        }
        let mut words = vec![first];
        while matches!(self.peek()?.tok, Tok::Concat) {
            self.next()?;
            let t = self.next()?;
            words.push(self.atom(t)?);
        }
        Ok(Word::Concat(words))
    }

    fn atom(&mut self, t: Token) -> Result<Word, ExprError> {
        match t.tok {
            Tok::Digits(d) => Ok(Word::Digits(d)),
            Tok::Str(parts) => Ok(Word::Str(parts)),
            Tok::Var(w) => Ok(w),
            Tok::Backref(n) => Ok(Word::Backref(n)),
            Tok::Ident(name) => {
                self.functions.push((name.clone(), t.start, false));
                let arg = self.call_argument(&name, t.start)?;
                Ok(Word::Call { name, arg: Box::new(arg) })
            }
            _ => Err(err(t.start, format!("expected a word, found {}", self.describe(&t)))),
        }
    }

    /// `( word )` after a function name.
    fn call_argument(&mut self, name: &str, start: usize) -> Result<Word, ExprError> {
        let open = self.next()?;
        if !matches!(open.tok, Tok::LParen) {
            let found = self.describe(&open);
            return Err(err(
                open.start,
                format!("expected '(' after the function name '{name}', found {found}"),
            ));
        }
        self.enter(start)?;
        let arg = self.word()?;
        let close = self.next()?;
        if !matches!(close.tok, Tok::RParen) {
            let found = self.describe(&close);
            return Err(err(
                close.start,
                format!("missing ')' after the argument of '{name}', found {found}"),
            ));
        }
        self.depth -= 1;
        Ok(arg)
    }

    fn enter(&mut self, offset: usize) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(err(offset, format!("expression nested more than {MAX_DEPTH} levels deep")));
        }
        Ok(())
    }

    fn describe(&self, t: &Token) -> String {
        if matches!(t.tok, Tok::Eof) {
            return "the end of the expression".to_string();
        }
        let text = self.src.get(t.start..t.end).unwrap_or("?");
        if text.chars().count() > 30 {
            format!("'{}...'", text.chars().take(27).collect::<String>())
        } else {
            format!("'{text}'")
        }
    }

    // ---- tokens ----

    fn peek(&mut self) -> Result<&Token, ExprError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lex()?,
        };
        Ok(self.peeked.insert(t))
    }

    fn next(&mut self) -> Result<Token, ExprError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    fn lex(&mut self) -> Result<Token, ExprError> {
        while matches!(self.byte(self.pos), Some(b' ' | b'\t' | b'\n')) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(c) = self.byte(start) else {
            return Ok(Token { tok: Tok::Eof, start, end: start });
        };
        let next = self.byte(start + 1);
        let (tok, len) = match c {
            b'"' | b'\'' => {
                self.pos += 1;
                let parts = self.text(Some(c), start)?;
                return Ok(Token { tok: Tok::Str(parts), start, end: self.pos });
            }
            b'%' if next == Some(b'{') => {
                let word = match self.variable()? {
                    (name, None) => Word::Var(name),
                    (name, Some(arg)) => Word::VarFunc { name, arg },
                };
                return Ok(Token { tok: Tok::Var(word), start, end: self.pos });
            }
            b'$' if next.is_some_and(|n| n.is_ascii_digit()) => {
                (Tok::Backref(next.unwrap_or(b'0') - b'0'), 2)
            }
            b'/' => return self.regex(start, start + 1, '/'),
            b'=' => match next {
                Some(b'=') => (Tok::Compare(CompareOp::StrEq), 2),
                Some(b'~') => (Tok::Match, 2),
                _ => (Tok::Compare(CompareOp::StrEq), 1),
            },
            b'!' => match next {
                Some(b'=') => (Tok::Compare(CompareOp::StrNe), 2),
                Some(b'~') => (Tok::NoMatch, 2),
                _ => (Tok::Not, 1),
            },
            b'<' if next == Some(b'=') => (Tok::Compare(CompareOp::StrLe), 2),
            b'<' => (Tok::Compare(CompareOp::StrLt), 1),
            b'>' if next == Some(b'=') => (Tok::Compare(CompareOp::StrGe), 2),
            b'>' => (Tok::Compare(CompareOp::StrGt), 1),
            b'&' if next == Some(b'&') => (Tok::And, 2),
            b'|' if next == Some(b'|') => (Tok::Or, 2),
            b'.' => (Tok::Concat, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'{' => (Tok::LBrace, 1),
            b'}' => (Tok::RBrace, 1),
            b',' => (Tok::Comma, 1),
            b':' => (Tok::Colon, 1),
            b'-' if next.is_some_and(|n| n.is_ascii_digit()) => self.digits(start + 1),
            b'-' if next.is_some_and(|n| n.is_ascii_alphabetic() || n == b'_') => self.dash_operator(start),
            b'0'..=b'9' => self.digits(start),
            c if c.is_ascii_alphabetic() => {
                let len = self.ident_len(start);
                if c == b'm' && next.is_some_and(|n| REG_SEP.contains(&n)) && len <= 2 {
                    // `m_` ties with the name `m_`; flex takes the earlier rule, the regex.
                    return self.regex(start, start + 2, char::from(next.unwrap_or(b'/')));
                }
                (keyword(&self.src[start..start + len]), len)
            }
            _ => return Err(self.unexpected_char(start)),
        };
        self.pos = start + len;
        Ok(Token { tok, start, end: self.pos })
    }

    fn unexpected_char(&self, at: usize) -> ExprError {
        let c = self.src.get(at..).and_then(|s| s.chars().next()).unwrap_or('?');
        err(at, format!("parse error near '{}'", c.escape_debug()))
    }

    fn ident_len(&self, start: usize) -> usize {
        self.src.as_bytes()[start..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count()
    }

    /// Digits from `from` on; the token starts at `self.pos` (a `-` may precede).
    fn digits(&self, from: usize) -> (Tok, usize) {
        let n = self.src.as_bytes()[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = from + n;
        (Tok::Digits(self.src[self.pos..end].to_string()), end - self.pos)
    }

    /// `-x` is a unary operator, `-name` a binary one, and a few names are built in.
    fn dash_operator(&self, start: usize) -> (Tok, usize) {
        let n = self.ident_len(start + 1);
        let name = &self.src[start + 1..start + 1 + n];
        let tok = match name {
            _ if n == 1 => Tok::Unary(char::from(name.as_bytes()[0])),
            "in" => Tok::In,
            "eq" => Tok::Compare(CompareOp::IntEq),
            "ne" => Tok::Compare(CompareOp::IntNe),
            "lt" => Tok::Compare(CompareOp::IntLt),
            "le" => Tok::Compare(CompareOp::IntLe),
            "gt" => Tok::Compare(CompareOp::IntGt),
            "ge" => Tok::Compare(CompareOp::IntGe),
            _ => Tok::Binary(name.to_string()),
        };
        (tok, n + 1)
    }

    /// A regex whose body starts at `body`; runs to the first `delimiter`, then an
    /// optional `i`.
    fn regex(&mut self, start: usize, body: usize, delimiter: char) -> Result<Token, ExprError> {
        let Some(len) =
            self.src.as_bytes()[body.min(self.src.len())..].iter().position(|&b| b == delimiter as u8)
        else {
            return Err(err(start, "unterminated regex"));
        };
        if len >= MAX_STRING_LEN {
            return Err(err(start, "regex too long"));
        }
        let pattern = &self.src[body..body + len];
        self.pos = body + len + 1;
        let caseless = self.byte(self.pos) == Some(b'i');
        if caseless {
            self.pos += 1;
        }
        let regex = Regex::new(pattern, caseless, delimiter)
            .map_err(|e| err(start, format!("cannot compile regular expression '{pattern}': {e}")))?;
        Ok(Token { tok: Tok::Regex(regex), start, end: self.pos })
    }

    // ---- text ----

    /// Text up to the closing `quote` (a quoted string whose opening quote is at `start`)
    /// or, without a quote, to the end (a whole string expression).
    fn text(&mut self, quote: Option<u8>, start: usize) -> Result<Vec<Part>, ExprError> {
        let mut parts = Vec::new();
        let mut buf = Vec::new();
        loop {
            let Some(c) = self.byte(self.pos) else {
                if quote.is_some() {
                    return Err(err(start, "unterminated string"));
                }
                flush(&mut buf, &mut parts);
                return Ok(parts);
            };
            let next = self.byte(self.pos + 1);
            match c {
                _ if Some(c) == quote => {
                    self.pos += 1;
                    flush(&mut buf, &mut parts);
                    return Ok(parts);
                }
                b'\n' => return Err(err(self.pos, "line break in a string")),
                b'\\' => {
                    if !self.escape(&mut buf)? {
                        if quote.is_some() {
                            return Err(err(start, "unterminated string"));
                        }
                        buf.push(b'\\');
                        self.pos += 1;
                    }
                }
                b'$' if next.is_some_and(|n| n.is_ascii_digit()) => {
                    flush(&mut buf, &mut parts);
                    parts.push(Part::Backref(next.unwrap_or(b'0') - b'0'));
                    self.pos += 2;
                }
                b'%' if next == Some(b'{') => {
                    flush(&mut buf, &mut parts);
                    parts.push(match self.variable()? {
                        (name, None) => Part::Var(name),
                        (name, Some(arg)) => Part::Func { name, arg },
                    });
                }
                _ => {
                    buf.push(c);
                    self.pos += 1;
                }
            }
            if buf.len() >= MAX_STRING_LEN {
                return Err(err(self.pos, "string too long"));
            }
        }
    }

    /// The escape at `self.pos` (a backslash) into `buf`; `false` when the backslash is
    /// the last character.
    fn escape(&mut self, buf: &mut Vec<u8>) -> Result<bool, ExprError> {
        let at = self.pos;
        let rest = &self.src.as_bytes()[at + 1..];
        let Some(&c) = rest.first() else {
            return Ok(false);
        };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            // flex takes the longest match: `\18` and `\1234` are longer as "bad escape"
            // (`\\[0-9]+`) than as octal (`\\[0-7]{1,3}`).
            let octal = rest.iter().take(3).take_while(|b| (b'0'..=b'7').contains(b)).count();
            if digits > octal {
                return Err(err(at, "bad escape sequence"));
            }
            let value = rest[..octal].iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
            let Ok(byte) = u8::try_from(value) else {
                return Err(err(at, "escape sequence out of bound"));
            };
            buf.push(byte);
            self.pos += 1 + octal;
            return Ok(true);
        }
        buf.push(match c {
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'b' => 0x08,
            b'f' => 0x0c,
            other => other,
        });
        self.pos += 2;
        Ok(true)
    }

    /// `%{NAME}` or `%{func:arg}` at `self.pos`.
    fn variable(&mut self) -> Result<(String, Option<String>), ExprError> {
        let start = self.pos;
        self.pos += 2;
        let name_start = self.pos;
        match self.byte(self.pos) {
            Some(c) if c.is_ascii_alphabetic() => {}
            Some(b'}') => return Err(err(self.pos, "missing variable name in '%{}'")),
            _ => return Err(self.bad_in_variable(start)),
        }
        self.pos += self.ident_len(self.pos);
        let name = self.src[name_start..self.pos].to_string();
        match self.byte(self.pos) {
            Some(b'}') => {
                self.pos += 1;
                self.variables.push((name.clone(), start));
                Ok((name, None))
            }
            Some(b':') => {
                self.pos += 1;
                self.functions.push((name.clone(), start, false));
                let arg = self.argument(start, &name)?;
                Ok((name, Some(arg)))
            }
            _ => Err(self.bad_in_variable(start)),
        }
    }

    fn bad_in_variable(&self, start: usize) -> ExprError {
        match self.byte(self.pos) {
            None => err(start, "unterminated variable"),
            Some(b'\n') => err(self.pos, "line break in a variable"),
            Some(_) => {
                let c = self.src.get(self.pos..).and_then(|s| s.chars().next()).unwrap_or('?');
                err(self.pos, format!("invalid character '{}' in variable name", c.escape_debug()))
            }
        }
    }

    /// The literal argument of `%{func:arg}`, up to `}`; escapes apply, `%{` and `$1` do not.
    fn argument(&mut self, start: usize, name: &str) -> Result<String, ExprError> {
        let arg_start = self.pos;
        let mut buf = Vec::new();
        loop {
            match self.byte(self.pos) {
                None => return Err(err(start, "unterminated variable")),
                Some(b'}') => break,
                Some(b'\n') => return Err(err(self.pos, "line break in a variable")),
                Some(b'\\') => {
                    if !self.escape(&mut buf)? {
                        return Err(err(start, "unterminated variable"));
                    }
                }
                Some(c) => {
                    buf.push(c);
                    self.pos += 1;
                }
            }
            if buf.len() >= MAX_STRING_LEN {
                return Err(err(self.pos, "string too long"));
            }
        }
        if self.pos == arg_start {
            return Err(err(self.pos, format!("missing argument in '%{{{name}:}}'")));
        }
        self.pos += 1;
        Ok(c_string(buf))
    }
}

fn keyword(word: &str) -> Tok {
    match word {
        "true" => Tok::True,
        "false" => Tok::False,
        "and" => Tok::And,
        "or" => Tok::Or,
        "not" => Tok::Not,
        "in" => Tok::In,
        "eq" => Tok::Compare(CompareOp::IntEq),
        "ne" => Tok::Compare(CompareOp::IntNe),
        "lt" => Tok::Compare(CompareOp::IntLt),
        "le" => Tok::Compare(CompareOp::IntLe),
        "gt" => Tok::Compare(CompareOp::IntGt),
        "ge" => Tok::Compare(CompareOp::IntGe),
        _ => Tok::Ident(word.to_string()),
    }
}

fn starts_word(tok: &Tok) -> bool {
    matches!(tok, Tok::Digits(_) | Tok::Str(_) | Tok::Var(_) | Tok::Backref(_) | Tok::Ident(_))
}

fn flush(buf: &mut Vec<u8>, parts: &mut Vec<Part>) {
    if buf.is_empty() {
        return;
    }
    let text = c_string(std::mem::take(buf));
    if text.is_empty() {
        return;
    }
    match parts.last_mut() {
        Some(Part::Text(prev)) => prev.push_str(&text),
        _ => parts.push(Part::Text(text)),
    }
}

/// `-R` and `-ipmatch` take their subnet from a constant string, read while parsing.
fn constant_subnet(arg: &Word, op: &str, offset: usize) -> Result<Subnet, ExprError> {
    let text = match arg {
        Word::Str(parts) => match parts.as_slice() {
            [] => "",
            [Part::Text(t)] => t.as_str(),
            _ => return Err(err(offset, format!("{op} requires subnet/netmask as constant argument"))),
        },
        _ => return Err(err(offset, format!("{op} requires subnet/netmask as constant argument"))),
    };
    Subnet::parse(text).ok_or_else(|| err(offset, format!("{op}: parsing of subnet/netmask '{text}' failed")))
}
