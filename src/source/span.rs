//! Byte spans into loaded files.
//!
//! A span is three integers, so every node, argument and diagnostic can carry one cheaply.
//! Turning a span into `file:line:column` is the source map's job, not the span's.

use serde::Serialize;

/// Index of a file in the [`SourceMap`](super::SourceMap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FileId(pub u32);

/// A byte range `start..end` in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start: start as u32, end: end.max(start) as u32 }
    }

    /// The smallest span that covers both (they must be in the same file).
    pub fn to(self, other: Span) -> Span {
        debug_assert_eq!(self.file, other.file);
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// An empty span at the start of this one, for "here" diagnostics.
    pub fn head(self) -> Span {
        Span { end: self.start, ..self }
    }
}

scoped_tls::scoped_thread_local!(static SERIALIZE_MAP: super::SourceMap);

/// Runs `f` with `map` used to serialize spans as `{file, line, column}`; outside it,
/// spans serialize as raw byte offsets.
pub fn with_source_map<R>(map: &super::SourceMap, f: impl FnOnce() -> R) -> R {
    SERIALIZE_MAP.set(map, f)
}

impl serde::Serialize for Span {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        if SERIALIZE_MAP.is_set() {
            SERIALIZE_MAP.with(|map| {
                let p = map.position(self.file, self.start);
                let mut st = s.serialize_struct("Location", 3)?;
                st.serialize_field("file", &map.file(self.file).display)?;
                st.serialize_field("line", &p.line)?;
                st.serialize_field("column", &p.column)?;
                st.end()
            })
        } else {
            let mut st = s.serialize_struct("Span", 3)?;
            st.serialize_field("file", &self.file.0)?;
            st.serialize_field("start", &self.start)?;
            st.serialize_field("end", &self.end)?;
            st.end()
        }
    }
}
