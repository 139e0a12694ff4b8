//! Text that remembers where each byte came from.
//!
//! Apache joins continuation lines and substitutes `${VAR}` before it splits a line into
//! words, so a word of the line Apache sees may come from two physical lines, or from a
//! `Define` elsewhere.  [`MappedText`] keeps the logical text and a list of segments that
//! map each byte back to the file, so every word still gets an exact span.

use super::{FileId, Span};
use smallvec::{SmallVec, smallvec};

/// One stretch of logical text and where it starts in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    /// Offset in the logical text.
    text_start: u32,
    /// Offset in the source file.
    source_start: u32,
    /// Length in the source; a substituted `${VAR}` maps its whole value onto the reference.
    source_len: u32,
}

/// Logical text with a byte-to-source map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedText {
    pub text: String,
    file: FileId,
    /// One segment for the common case of a line without continuation or substitution,
    /// kept inline so such a line costs a single allocation.
    segments: SmallVec<[Segment; 1]>,
}

impl MappedText {
    /// Text that is a contiguous slice of the file starting at `source_start`.
    pub fn contiguous(file: FileId, text: &str, source_start: usize) -> MappedText {
        MappedText {
            text: text.to_string(),
            file,
            segments: smallvec![Segment {
                text_start: 0,
                source_start: source_start as u32,
                source_len: text.len() as u32,
            }],
        }
    }

    pub fn empty(file: FileId, at: usize) -> MappedText {
        MappedText::contiguous(file, "", at)
    }

    pub fn file(&self) -> FileId {
        self.file
    }

    /// Appends text copied from the source at `source_start`.
    pub fn push_source(&mut self, text: &str, source_start: usize) {
        self.segments.push(Segment {
            text_start: self.text.len() as u32,
            source_start: source_start as u32,
            source_len: text.len() as u32,
        });
        self.text.push_str(text);
    }

    /// Appends text that stands for the source range `source` (a substitution).
    pub fn push_substitute(&mut self, text: &str, source: Span) {
        self.segments.push(Segment {
            text_start: self.text.len() as u32,
            source_start: source.start,
            source_len: source.end - source.start,
        });
        self.text.push_str(text);
    }

    /// The source offset of logical byte `i`.
    pub fn source_offset(&self, i: usize) -> usize {
        let i = i as u32;
        let seg = match self.segments.binary_search_by(|s| s.text_start.cmp(&i)) {
            Ok(n) => &self.segments[n],
            Err(0) => return self.segments.first().map_or(0, |s| s.source_start as usize),
            Err(n) => &self.segments[n - 1],
        };
        (seg.source_start + (i - seg.text_start).min(seg.source_len)) as usize
    }

    /// The source span of the logical range `start..end`.
    pub fn span(&self, start: usize, end: usize) -> Span {
        let s = self.source_offset(start);
        let e = if end > start { self.end_offset(end) } else { s };
        Span::new(self.file, s, e.max(s))
    }

    /// Like `source_offset`, but an end offset at a segment boundary belongs to the
    /// segment before it.
    fn end_offset(&self, end: usize) -> usize {
        let i = end as u32;
        let n = self.segments.partition_point(|s| s.text_start < i);
        if n == 0 {
            return self.source_offset(end);
        }
        let seg = &self.segments[n - 1];
        (seg.source_start + (i - seg.text_start).min(seg.source_len)) as usize
    }

    /// The span of the whole text.
    pub fn full_span(&self) -> Span {
        self.span(0, self.text.len())
    }

    /// A sub-range as its own mapped text.
    pub fn slice(&self, start: usize, end: usize) -> MappedText {
        let mut out = MappedText { text: String::new(), file: self.file, segments: SmallVec::new() };
        if start >= end {
            out.segments.push(Segment {
                text_start: 0,
                source_start: self.source_offset(start) as u32,
                source_len: 0,
            });
            return out;
        }
        let mut pos = start;
        while pos < end {
            let n = self.segments.partition_point(|s| s.text_start as usize <= pos);
            let seg = &self.segments[n - 1];
            let seg_end = self.segments.get(n).map_or(self.text.len(), |s| s.text_start as usize);
            let stop = seg_end.min(end);
            let offset = (pos - seg.text_start as usize) as u32;
            out.segments.push(Segment {
                text_start: out.text.len() as u32,
                source_start: seg.source_start + offset.min(seg.source_len),
                source_len: seg.source_len.saturating_sub(offset).min((stop - pos) as u32),
            });
            out.text.push_str(&self.text[pos..stop]);
            pos = stop;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_lines_map_back_to_both_lines() {
        // "Foo a\\\n  b" read as the logical line "Foo a  b".
        let f = FileId(0);
        let mut t = MappedText::contiguous(f, "Foo a", 0);
        t.push_source("  b", 7);
        assert_eq!(t.text, "Foo a  b");
        assert_eq!(t.span(4, 5), Span::new(f, 4, 5));
        assert_eq!(t.span(7, 8), Span::new(f, 9, 10));
        assert_eq!(t.span(4, 8), Span::new(f, 4, 10));
    }

    #[test]
    fn substitution_maps_onto_the_reference() {
        let f = FileId(0);
        let mut t = MappedText::contiguous(f, "A ", 0);
        t.push_substitute("long value", Span::new(f, 2, 8));
        t.push_source(" z", 8);
        assert_eq!(t.span(2, 12), Span::new(f, 2, 8));
        assert_eq!(t.span(13, 14), Span::new(f, 9, 10));
        let s = t.slice(2, 14);
        assert_eq!(s.text, "long value z");
        assert_eq!(s.span(11, 12), Span::new(f, 9, 10));
    }
}
