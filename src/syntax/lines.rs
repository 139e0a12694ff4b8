//! Physical lines to the logical lines Apache reads (`ap_cfg_getline()`).
//!
//! A line that ends in a single backslash right before the newline continues on the next
//! line: the backslash and the newline go, the next line's leading white space stays.  A
//! doubled backslash does not continue, and neither does a backslash followed by a space.
//! The joined line is then trimmed at both ends.  This happens before comments are
//! recognised, so a comment that ends in a backslash swallows the next line too.

use crate::source::{FileId, MappedText};

use super::words::is_space;

/// One logical line; `text` is trimmed and maps back to the file.
#[derive(Debug)]
pub struct Line {
    pub text: MappedText,
    /// Number of physical lines joined into this one.
    pub physical: usize,
}

/// Splits a file into logical lines, skipping lines that are empty after trimming.
pub fn logical_lines(file: FileId, src: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < src.len() {
        let mut text: Option<MappedText> = None;
        let mut physical = 0;
        loop {
            let nl = src[pos..].find('\n').map(|i| pos + i);
            let line_end = nl.unwrap_or(src.len());
            let mut content_end = line_end;
            if nl.is_some() && content_end > pos && src.as_bytes()[content_end - 1] == b'\r' {
                content_end -= 1;
            }
            let continues = nl.is_some()
                && content_end > pos
                && src.as_bytes()[content_end - 1] == b'\\'
                && !(content_end - 1 > pos && src.as_bytes()[content_end - 2] == b'\\');
            let piece_end = if continues { content_end - 1 } else { content_end };
            let piece = &src[pos..piece_end];
            match &mut text {
                None => text = Some(MappedText::contiguous(file, piece, pos)),
                Some(t) => t.push_source(piece, pos),
            }
            physical += 1;
            pos = nl.map_or(src.len(), |n| n + 1);
            if !continues || pos >= src.len() {
                break;
            }
        }
        let text = text.expect("at least one piece");
        let start = text.text.len() - text.text.trim_start_matches(is_space).len();
        let end = text.text.trim_end_matches(is_space).len();
        if start < end {
            out.push(Line { text: text.slice(start, end), physical });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        logical_lines(FileId(0), src).into_iter().map(|l| l.text.text).collect()
    }

    #[test]
    fn continuation_rules() {
        assert_eq!(texts("a\\\n  b\nc\n"), ["a  b", "c"]);
        assert_eq!(texts("a\\\\\nb\n"), ["a\\\\", "b"]);
        assert_eq!(texts("a\\ \nb\n"), ["a\\", "b"]);
        assert_eq!(texts("a\\\r\nb\r\n"), ["ab"]);
        assert_eq!(texts("# c \\\nDirective x\n"), ["# c Directive x"]);
        assert_eq!(texts("\n   \n\tx\t\n"), ["x"]);
        assert_eq!(texts("last\\"), ["last\\"]);
    }

    #[test]
    fn spans_point_into_the_right_physical_line() {
        let src = "Foo a\\\n  bar\n";
        let lines = logical_lines(FileId(0), src);
        let t = &lines[0].text;
        let at = t.text.find("bar").unwrap();
        let span = t.span(at, at + 3);
        assert_eq!(&src[span.range()], "bar");
    }
}
