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

/// Splits a file into logical lines, skipping lines that are empty after trimming.  Lazy,
/// so each line's copy is dropped before the next one is made.
pub fn logical_lines(file: FileId, src: &str) -> LogicalLines<'_> {
    LogicalLines { file, src, pos: 0 }
}

pub struct LogicalLines<'a> {
    file: FileId,
    src: &'a str,
    pos: usize,
}

impl Iterator for LogicalLines<'_> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        let (file, src) = (self.file, self.src);
        while self.pos < src.len() {
            let mut text: Option<MappedText> = None;
            let mut physical = 0;
            loop {
                let pos = self.pos;
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
                physical += 1;
                let next = nl.map_or(src.len(), |n| n + 1);
                self.pos = next;
                match &mut text {
                    // The common case, one physical line: trim first, copy once.
                    None if !continues || next >= src.len() => {
                        let start = piece.len() - piece.trim_start_matches(is_space).len();
                        let trimmed = piece[start..].trim_end_matches(is_space);
                        if !trimmed.is_empty() {
                            return Some(Line {
                                text: MappedText::contiguous(file, trimmed, pos + start),
                                physical,
                            });
                        }
                        break;
                    }
                    None => text = Some(MappedText::contiguous(file, piece, pos)),
                    Some(t) => t.push_source(piece, pos),
                }
                if !continues || next >= src.len() {
                    let t = text.take().expect("set above");
                    let start = t.text.len() - t.text.trim_start_matches(is_space).len();
                    let end = t.text.trim_end_matches(is_space).len();
                    if start < end {
                        return Some(Line { text: t.slice(start, end), physical });
                    }
                    break;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        logical_lines(FileId(0), src).map(|l| l.text.text).collect()
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
        let lines: Vec<Line> = logical_lines(FileId(0), src).collect();
        let t = &lines[0].text;
        let at = t.text.find("bar").unwrap();
        let span = t.span(at, at + 3);
        assert_eq!(&src[span.range()], "bar");
    }
}
