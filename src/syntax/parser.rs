//! Logical lines to a tree of sections, the way `ap_build_config()` nests them.
//!
//! The parser never fails: every line ends up in the tree, and what Apache would refuse
//! (an unclosed section, a stray `</Files>`) becomes a diagnostic next to a best-effort
//! tree.  Nesting is purely syntactic: `<Anything ...>` opens a section and `</Anything>`
//! closes it, as Apache also tracks nesting inside blocks it skips.

use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, MappedText, Span};

use super::lines::{Line, logical_lines};
use super::tree::{Comment, Directive, Document, Node, Section, Word};
use super::words::{self, is_space};
use nom::bytes::complete::{tag, take_till};
use nom::{IResult, Parser};

/// Parses one file.  `src` is the whole text; spans refer to `file`.
pub fn parse(file: FileId, src: &str) -> (Document, Vec<Diagnostic>) {
    let mut p = Builder { stack: Vec::new(), root: Vec::new(), diags: Vec::new() };
    for line in logical_lines(file, src) {
        p.line(line);
    }
    while let Some(open) = p.stack.pop() {
        p.diags.push(
            Diagnostic::new(
                Code::UnclosedSection,
                open.span,
                format!("<{}> was not closed", open.name.value),
            )
            .with_help(format!("add </{}> where the section should end", open.name.value)),
        );
        p.attach(Node::Section(open));
    }
    (Document { nodes: p.root }, p.diags)
}

struct Builder {
    stack: Vec<Section>,
    root: Vec<Node>,
    diags: Vec<Diagnostic>,
}

/// `</Name` followed by the rest of the line.
fn close_tag(input: &str) -> IResult<&str, &str> {
    let (rest, _) = tag("</").parse(input)?;
    take_till(|c: char| c == '>' || is_space(c)).parse(rest)
}

impl Builder {
    fn attach(&mut self, node: Node) {
        match self.stack.last_mut() {
            Some(s) => s.children.push(node),
            None => self.root.push(node),
        }
    }

    fn line(&mut self, line: Line) {
        let t = &line.text;
        let span = t.full_span();
        if let Some(body) = t.text.strip_prefix('#') {
            if line.physical > 1 {
                self.diags.push(
                    Diagnostic::new(
                        Code::CommentContinuation,
                        span,
                        "this comment ends in a backslash, so Apache reads the next line as part of it",
                    )
                    .with_help("remove the trailing backslash if the next line is meant to count"),
                );
            }
            self.attach(Node::Comment(Comment { text: body.to_string(), span }));
            return;
        }
        if t.text.starts_with("</") {
            self.close(t, span);
            return;
        }
        let all = words::split(&t.text);
        let Some(first) = all.first() else { return };
        self.flag_quotes(t, &all);
        if first.quote.is_none() && first.value.starts_with('<') && first.value.len() > 1 {
            let first = all.into_iter().next().expect("checked");
            self.open(t, first, span);
            return;
        }
        let raw_start = skip_space(&t.text, first.end);
        let raw = t.slice(raw_start, t.text.len());
        let mut words = all.into_iter().map(|w| {
            let span = t.span(w.start, w.end);
            Word { value: w.value, quote: w.quote, span }
        });
        let name = words.next().expect("checked");
        let args: Vec<Word> = words.collect();
        if let Some(hash) = args.iter().find(|w| w.quote.is_none() && w.value.starts_with('#')) {
            self.diags.push(
                Diagnostic::new(
                    Code::HashArgument,
                    hash.span,
                    "Apache has no trailing comments: this '#' and what follows are arguments",
                )
                .with_help("move the comment to a line of its own"),
            );
        }
        self.attach(Node::Directive(Directive { name, args, raw, span }));
    }

    fn flag_quotes(&mut self, t: &MappedText, all: &[words::RawWord]) {
        for w in all.iter().filter(|w| w.unterminated) {
            self.diags.push(
                Diagnostic::new(
                    Code::UnterminatedQuote,
                    t.span(w.start, w.start + 1),
                    "this quote is never closed; Apache takes the rest of the line as one argument",
                )
                .with_help("add the closing quote"),
            );
        }
    }

    fn open(&mut self, t: &MappedText, first: words::RawWord, span: Span) {
        // `<Else>` arrives as one word ending in '>'; `<Directory /x>` has the '>' at the
        // end of its arguments, and Apache cuts at the last '>' of the line.
        let mut name_text = &first.value[1..];
        let mut closed_in_name = false;
        if let Some(stripped) = name_text.strip_suffix('>') {
            name_text = stripped;
            closed_in_name = true;
        }
        let name_end = first.start + 1 + name_text.len();
        let name =
            Word { value: name_text.to_string(), quote: None, span: t.span(first.start + 1, name_end) };
        let after_name = skip_space(&t.text, first.end);
        let raw = if closed_in_name {
            if after_name < t.text.len() {
                self.diags.push(
                    Diagnostic::new(
                        Code::TextAfterBracket,
                        t.span(after_name, t.text.len()),
                        "Apache ignores text after the section's closing '>'",
                    )
                    .with_help("remove it or move it inside the brackets"),
                );
            }
            t.slice(after_name, after_name)
        } else {
            match t.text[after_name..].rfind('>') {
                Some(rel) => {
                    let gt = after_name + rel;
                    let tail = skip_space(&t.text, gt + 1);
                    if tail < t.text.len() {
                        self.diags.push(
                            Diagnostic::new(
                                Code::TextAfterBracket,
                                t.span(tail, t.text.len()),
                                "Apache ignores text after the section's closing '>'",
                            )
                            .with_help("remove it or move it inside the brackets"),
                        );
                    }
                    let end = t.text[..gt].trim_end_matches(is_space).len().max(after_name);
                    t.slice(after_name, end)
                }
                None => {
                    self.diags.push(
                        Diagnostic::new(
                            Code::MissingBracket,
                            span,
                            format!("<{}> directive missing closing '>'", name.value),
                        )
                        .with_help("end the tag with '>'"),
                    );
                    t.slice(after_name, t.text.len())
                }
            }
        };
        let args = Word::split(&raw);
        if args.is_empty() && needs_argument(&name.value) {
            self.diags.push(Diagnostic::new(
                Code::MissingSectionArgument,
                span,
                format!("<{}> directive requires additional arguments", name.value),
            ));
        }
        self.stack.push(Section { name, args, raw, span, children: Vec::new(), close: None });
    }

    fn close(&mut self, t: &MappedText, span: Span) {
        let (name, exact) = match close_tag(&t.text) {
            Ok((rest, name)) => (name.to_string(), rest == ">"),
            Err(_) => (String::new(), false),
        };
        if !exact {
            self.diags.push(
                Diagnostic::new(
                    Code::MissingBracket,
                    span,
                    format!("closing tag must be exactly </{name}>: Apache rejects this form"),
                )
                .with_help(format!("write </{name}> with nothing else on the line")),
            );
        }
        let Some(depth) = self.stack.iter().rposition(|s| s.name.value.eq_ignore_ascii_case(&name)) else {
            let d = match self.stack.last() {
                Some(open) => Diagnostic::new(
                    Code::MismatchedClose,
                    span,
                    format!("expected </{}> but saw </{}>", open.name.value, name),
                )
                .with_label(open.span, "this section is still open"),
                None => Diagnostic::new(
                    Code::StrayClose,
                    span,
                    format!("</{name}> without matching <{name}> section"),
                ),
            };
            self.diags.push(d);
            return;
        };
        // Sections opened after the one being closed were never closed themselves.
        while self.stack.len() > depth + 1 {
            let inner = self.stack.pop().expect("depth checked");
            self.diags.push(
                Diagnostic::new(
                    Code::MismatchedClose,
                    span,
                    format!("expected </{}> but saw </{}>", inner.name.value, name),
                )
                .with_label(inner.span, "this section is still open"),
            );
            self.attach(Node::Section(inner));
        }
        let mut section = self.stack.pop().expect("depth checked");
        section.close = Some(span);
        self.attach(Node::Section(section));
    }
}

fn skip_space(s: &str, from: usize) -> usize {
    from + s[from..].len() - s[from..].trim_start_matches(is_space).len()
}

/// Sections that mean nothing without an argument; these four take none.
fn needs_argument(name: &str) -> bool {
    !["Else", "RequireAll", "RequireAny", "RequireNone"].iter().any(|n| n.eq_ignore_ascii_case(name))
}
