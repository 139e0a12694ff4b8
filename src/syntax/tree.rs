//! The generic syntax tree: directives, sections and comments exactly as written.
//!
//! Nothing here knows what a directive means.  Names keep the case they were written in
//! (Apache matches them case-insensitively); arguments keep both the words Apache's generic
//! reader sees and the raw text, because some directives read their line their own way.

use crate::source::{MappedText, Span};

use super::words;

/// One word with its unquoted value and its span in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub value: String,
    pub quote: Option<char>,
    pub span: Span,
}

impl Word {
    /// Splits mapped text into words with source spans.
    pub fn split(text: &MappedText) -> Vec<Word> {
        words::split(&text.text)
            .into_iter()
            .map(|w| Word { value: w.value, quote: w.quote, span: text.span(w.start, w.end) })
            .collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub name: Word,
    pub args: Vec<Word>,
    /// Everything after the name, trimmed, as Apache hands it to raw-argument directives.
    pub raw: MappedText,
    /// The whole logical line.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The name without `<` and `>` (`Directory`, `IfModule`, ...).
    pub name: Word,
    pub args: Vec<Word>,
    /// The text between the name and the closing `>`, trimmed.
    pub raw: MappedText,
    /// The opening tag's line.
    pub span: Span,
    pub children: Vec<Node>,
    /// The closing tag's line, when there is one.
    pub close: Option<Span>,
}

impl Section {
    /// From the opening tag to the end of the closing tag (or of the last child).
    pub fn full_span(&self) -> Span {
        match self.close {
            Some(c) => self.span.to(c),
            None => self.children.last().map_or(self.span, |n| self.span.to(n.span())),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// The text after `#`, as written.
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Directive(Directive),
    Section(Section),
    Comment(Comment),
}

impl Node {
    pub fn span(&self) -> Span {
        match self {
            Node::Directive(d) => d.span,
            Node::Section(s) => s.full_span(),
            Node::Comment(c) => c.span,
        }
    }
}

/// One parsed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub nodes: Vec<Node>,
}
