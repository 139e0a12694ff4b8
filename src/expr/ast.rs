//! The tree that [`super::parse()`] builds, and its canonical printing.
//!
//! A condition ([`Cond`]) joins tests over words ([`Word`]); a quoted string is a list of
//! [`Part`]s. The tree keeps what a translator needs (operator, operands, regex source)
//! and drops spelling: printing is canonical, not a copy of the source.
//!
//! | source                         | printed                          |
//! |--------------------------------|----------------------------------|
//! | `%{A} = "x" and %{B} eq 5`     | `%{A} == 'x' && %{B} -eq 5`      |
//! | `not -f %{F} or %{U} in {"a"}` | `!-f %{F} \|\| %{U} -in {'a'}`   |
//! | `%{U} =~ m#^a#`               | `%{U} =~ /^a/`                   |
//! | `%{U} =~ m#^/a#i`              | `%{U} =~ m#^/a#i` (keeps its delimiter when it holds `/`) |
//!
//! Parsing the printed text gives a tree that prints the same again (a proptest holds it).

use super::subnet::Subnet;
use std::fmt;

/// A boolean expression: what `<If>`, `Require expr` and `SetEnvIfExpr` test.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    True,
    False,
    Not(Box<Cond>),
    /// Two or more conditions joined by `&&`, tried left to right until one is false.
    And(Vec<Cond>),
    /// Two or more conditions joined by `||`, tried left to right until one is true.
    Or(Vec<Cond>),
    Compare(Word, CompareOp, Word),
    /// `word -in {'a', 'b'}` or `word -in listfunc(word)`.
    In(Word, List),
    /// `word =~ regex`, or `word !~ regex` when `negated`.
    Match {
        word: Word,
        regex: Regex,
        negated: bool,
    },
    Unary(UnaryOp, Word),
    Binary(Word, BinaryOp, Word),
}

/// The comparison operators: string ones compare bytes (`strcmp`), integer ones compare
/// the leading integers of both sides (`apr_atoi64`, so `"10abc" -eq 10`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    StrEq,
    StrNe,
    StrLt,
    StrLe,
    StrGt,
    StrGe,
    IntEq,
    IntNe,
    IntLt,
    IntLe,
    IntGt,
    IntGe,
}

impl CompareOp {
    /// The canonical spelling (`=` prints as `==`, `eq` as `-eq`).
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::StrEq => "==",
            CompareOp::StrNe => "!=",
            CompareOp::StrLt => "<",
            CompareOp::StrLe => "<=",
            CompareOp::StrGt => ">",
            CompareOp::StrGe => ">=",
            CompareOp::IntEq => "-eq",
            CompareOp::IntNe => "-ne",
            CompareOp::IntLt => "-lt",
            CompareOp::IntLe => "-le",
            CompareOp::IntGt => "-gt",
            CompareOp::IntGe => "-ge",
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(
            self,
            CompareOp::IntEq
                | CompareOp::IntNe
                | CompareOp::IntLt
                | CompareOp::IntLe
                | CompareOp::IntGt
                | CompareOp::IntGe
        )
    }

    /// Whether `ordering` (left compared with right) satisfies the operator.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            CompareOp::StrEq | CompareOp::IntEq => ordering == Equal,
            CompareOp::StrNe | CompareOp::IntNe => ordering != Equal,
            CompareOp::StrLt | CompareOp::IntLt => ordering == Less,
            CompareOp::StrLe | CompareOp::IntLe => ordering != Greater,
            CompareOp::StrGt | CompareOp::IntGt => ordering == Greater,
            CompareOp::StrGe | CompareOp::IntGe => ordering != Less,
        }
    }
}

/// The unary operators of httpd's core (`unary_op_providers` in util_expr_eval.c).
/// Their names are case-sensitive: `-f` exists, `-E` does not.
#[derive(Debug, Clone, PartialEq)]
pub enum UnaryOp {
    /// `-n`: the string is not empty.
    NotEmpty,
    /// `-z`: the string is empty.
    Empty,
    /// `-T`: false for `""`, `0`, `off`, `no` and `false` (any case), true otherwise.
    Truthy,
    /// `-R 'subnet'`: the client address is in the subnet. Apache parses the subnet
    /// while reading the configuration, so the argument must be a constant string.
    Remote(Subnet),
    /// `-d -e -f -s -L -h -x` (file system) and `-F -U -A` (subrequests): answered by
    /// [`super::Context::file_test`].
    File(char),
}

impl UnaryOp {
    /// The operator letter (`f` for `-f`).
    pub fn letter(&self) -> char {
        match self {
            UnaryOp::NotEmpty => 'n',
            UnaryOp::Empty => 'z',
            UnaryOp::Truthy => 'T',
            UnaryOp::Remote(_) => 'R',
            UnaryOp::File(c) => *c,
        }
    }
}

/// The letters of the file and subrequest tests, in `unary_op_providers` order.
pub(super) const FILE_TESTS: &str = "defsLhxFUA";

/// The binary operators of httpd's core (`binary_op_providers`); names are not
/// case-sensitive.
#[derive(Debug, Clone, PartialEq)]
pub enum BinaryOp {
    /// `-ipmatch 'subnet'`: the left side is an IP address in the subnet (a constant).
    IpMatch(Subnet),
    /// `-strmatch`: the left side matches the wildcard pattern on the right.
    StrMatch,
    /// `-strcmatch`: as `-strmatch`, ignoring ASCII case.
    StrCMatch,
    /// `-fnmatch`: as `-strmatch`, but wildcards do not match `/`.
    FnMatch,
}

impl BinaryOp {
    pub fn name(&self) -> &'static str {
        match self {
            BinaryOp::IpMatch(_) => "ipmatch",
            BinaryOp::StrMatch => "strmatch",
            BinaryOp::StrCMatch => "strcmatch",
            BinaryOp::FnMatch => "fnmatch",
        }
    }
}

/// The right side of `-in`.
#[derive(Debug, Clone, PartialEq)]
pub enum List {
    Words(Vec<Word>),
    /// A list-valued function such as mod_ssl's `PeerExtList(...)`.
    Call {
        name: String,
        arg: Box<Word>,
    },
}

/// An operand: a string-valued piece of the expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    /// `123` or `-5`, kept as written.
    Digits(String),
    /// A quoted string; `''` has no parts.
    Str(Vec<Part>),
    /// `%{NAME}`, name as written.
    Var(String),
    /// `%{name:arg}`: a function call whose argument is literal text.
    VarFunc { name: String, arg: String },
    /// `name(word)`.
    Call { name: String, arg: Box<Word> },
    /// `$0` to `$9`: a capture of the last regex with groups that was tried.
    Backref(u8),
    /// `a . b . c`: two or more words joined.
    Concat(Vec<Word>),
}

/// A piece of a quoted string, or of a whole string expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text, escapes already applied.
    Text(String),
    Var(String),
    Func {
        name: String,
        arg: String,
    },
    Backref(u8),
}

/// A regular expression literal, compiled with PCRE as Apache does (`i` is the only
/// flag in httpd 2.4).
#[derive(Clone)]
pub struct Regex {
    pattern: String,
    caseless: bool,
    /// The delimiter it was written with; it never occurs in the pattern, so printing can
    /// fall back on it when the pattern holds a `/`.
    delimiter: char,
    compiled: pcre2::bytes::Regex,
}

impl Regex {
    /// Compiles `pattern`; the error is PCRE's message.
    pub fn new(pattern: &str, caseless: bool, delimiter: char) -> Result<Regex, String> {
        let compiled =
            pcre2::bytes::RegexBuilder::new().caseless(caseless).build(pattern).map_err(|e| e.to_string())?;
        Ok(Regex { pattern: pattern.to_string(), caseless, delimiter, compiled })
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    pub fn caseless(&self) -> bool {
        self.caseless
    }

    /// Apache only records captures for a regex with at least one group.
    pub fn has_groups(&self) -> bool {
        self.compiled.captures_len() > 1
    }

    pub(super) fn compiled(&self) -> &pcre2::bytes::Regex {
        &self.compiled
    }
}

impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        self.pattern == other.pattern && self.caseless == other.caseless
    }
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = if self.caseless { "i" } else { "" };
        if self.pattern.contains('/') {
            let d = self.delimiter;
            write!(f, "m{d}{}{d}{flags}", self.pattern)
        } else {
            write!(f, "/{}/{flags}", self.pattern)
        }
    }
}

impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cond::True => f.write_str("true"),
            Cond::False => f.write_str("false"),
            Cond::Not(c) => match **c {
                Cond::And(_) | Cond::Or(_) => write!(f, "!({c})"),
                _ => write!(f, "!{c}"),
            },
            // `&&` binds tighter than `||`, so only an `||` inside `&&` needs parentheses;
            // a nested `&&` inside `&&` (or `||` in `||`) keeps its own to keep the shape.
            Cond::And(items) => join(f, items, " && ", |c| matches!(c, Cond::And(_) | Cond::Or(_))),
            Cond::Or(items) => join(f, items, " || ", |c| matches!(c, Cond::Or(_))),
            Cond::Compare(l, op, r) => write!(f, "{l} {} {r}", op.symbol()),
            Cond::In(w, list) => write!(f, "{w} -in {list}"),
            Cond::Match { word, regex, negated } => {
                write!(f, "{word} {} {regex}", if *negated { "!~" } else { "=~" })
            }
            Cond::Unary(op, w) => write!(f, "-{} {w}", op.letter()),
            Cond::Binary(l, op, r) => write!(f, "{l} -{} {r}", op.name()),
        }
    }
}

fn join(
    f: &mut fmt::Formatter<'_>,
    items: &[Cond],
    sep: &str,
    parenthesise: impl Fn(&Cond) -> bool,
) -> fmt::Result {
    for (i, c) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if parenthesise(c) { write!(f, "({c})")? } else { write!(f, "{c}")? }
    }
    Ok(())
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            List::Words(words) => {
                f.write_str("{")?;
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{w}")?;
                }
                f.write_str("}")
            }
            List::Call { name, arg } => write!(f, "{name}({arg})"),
        }
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Word::Digits(d) => f.write_str(d),
            Word::Str(parts) => {
                f.write_str("'")?;
                write_parts(f, parts, Some('\''))?;
                f.write_str("'")
            }
            Word::Var(name) => write!(f, "%{{{name}}}"),
            Word::VarFunc { name, arg } => write_var_func(f, name, arg),
            Word::Call { name, arg } => write!(f, "{name}({arg})"),
            Word::Backref(n) => write!(f, "${n}"),
            Word::Concat(words) => {
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" . ")?;
                    }
                    write!(f, "{w}")?;
                }
                Ok(())
            }
        }
    }
}

/// Prints string parts so that the scanner reads them back: inside quotes when `quote`
/// is set, as a whole string expression otherwise (where quotes are plain text).
pub(super) fn write_parts(f: &mut fmt::Formatter<'_>, parts: &[Part], quote: Option<char>) -> fmt::Result {
    for part in parts {
        match part {
            Part::Text(text) => write_text(f, text, quote)?,
            Part::Var(name) => write!(f, "%{{{name}}}")?,
            Part::Func { name, arg } => write_var_func(f, name, arg)?,
            Part::Backref(n) => write!(f, "${n}")?,
        }
    }
    Ok(())
}

fn write_text(f: &mut fmt::Formatter<'_>, text: &str, quote: Option<char>) -> fmt::Result {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            // `$1` would be a backreference and `%{` a variable: escape the first char.
            '$' if next.is_some_and(|n| n.is_ascii_digit()) => f.write_str("\\$")?,
            '%' if next == Some('{') => f.write_str("\\%")?,
            c if Some(c) == quote => write!(f, "\\{c}")?,
            c => write!(f, "{c}")?,
        }
    }
    Ok(())
}

fn write_var_func(f: &mut fmt::Formatter<'_>, name: &str, arg: &str) -> fmt::Result {
    write!(f, "%{{{name}:")?;
    for c in arg.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '}' => f.write_str("\\}")?,
            '\n' => f.write_str("\\n")?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("}")
}
