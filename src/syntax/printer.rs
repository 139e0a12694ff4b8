//! Prints a tree back as Apache configuration text.
//!
//! Structure is normalised (one line per directive, four spaces per level, continuation
//! lines joined); arguments are printed as written, because raw-argument directives read
//! their text in ways the generic word splitter does not.  Parsing the output gives the
//! same tree, and printing that tree gives the same bytes.

use super::tree::{Document, Node};
use super::words::{quote, quote_always};

/// A name that would read back as a section, a closing tag or a comment is quoted.
fn name(n: &str) -> String {
    if n.starts_with(['<', '#']) { quote_always(n) } else { quote(n) }
}

/// Ends a line; a trailing lone backslash would join the next line, so it gets a space
/// (which reading trims again).
fn end_line(out: &mut String) {
    let b = out.as_bytes();
    let n = b.len();
    if n >= 1 && b[n - 1] == b'\\' && !(n >= 2 && b[n - 2] == b'\\') {
        out.push(' ');
    }
    out.push('\n');
}

pub fn print(doc: &Document) -> String {
    let mut out = String::new();
    for n in &doc.nodes {
        node(&mut out, n, 0);
    }
    out
}

fn node(out: &mut String, n: &Node, depth: usize) {
    let indent = "    ".repeat(depth);
    match n {
        Node::Comment(c) => {
            out.push_str(&indent);
            out.push('#');
            out.push_str(&c.text);
            end_line(out);
        }
        Node::Directive(d) => {
            out.push_str(&indent);
            out.push_str(&name(&d.name.value));
            if !d.raw.text.is_empty() {
                out.push(' ');
                out.push_str(&d.raw.text);
            }
            end_line(out);
        }
        Node::Section(s) => {
            out.push_str(&indent);
            out.push('<');
            // The opening tag's name is read as a bare word (a doubled backslash is one);
            // the closing tag's is taken as written.
            out.push_str(&s.name.value.replace('\\', "\\\\"));
            if !s.raw.text.is_empty() {
                out.push(' ');
                out.push_str(&s.raw.text);
            }
            out.push_str(">\n");
            for c in &s.children {
                node(out, c, depth + 1);
            }
            out.push_str(&indent);
            out.push_str("</");
            out.push_str(&s.name.value);
            out.push_str(">\n");
        }
    }
}
