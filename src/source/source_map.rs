//! Every file lighten has read, with its text and line index.
//!
//! Files are added once and never removed, so a [`FileId`] stays valid for the whole run.
//! Each file has two names: the path on this machine (what an admin opens in an editor)
//! and the path Apache would see, which differ when the tree is read under a `--sysroot`.

use super::{FileId, Span};
use serde::Serialize;

/// What a file is to Apache; it decides how errors in it behave (a broken .htaccess
/// makes its directory answer 500, a broken server config stops the server).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// httpd.conf, apache2.conf and everything they include.
    ServerConfig,
    /// A per-directory file named by `AccessFileName`.
    Htaccess,
    /// Text lighten made up to stand for defaults (a Plesk or Debian server context).
    Builtin,
}

#[derive(Debug)]
pub struct SourceFile {
    /// The path on this machine, as lighten opened it.
    pub display: String,
    /// The path as Apache names it (without the sysroot).
    pub apache_path: String,
    pub kind: FileKind,
    pub text: String,
    line_starts: Vec<u32>,
}

/// A resolved position, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, display: String, apache_path: String, kind: FileKind, text: String) -> FileId {
        let mut line_starts = vec![0u32];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        self.files.push(SourceFile { display, apache_path, kind, text, line_starts });
        FileId(self.files.len() as u32 - 1)
    }

    /// Reserves `n` consecutive ids for files read elsewhere (in parallel); each must be
    /// filled with [`SourceMap::fill`] before it is used.
    pub fn reserve(&mut self, n: usize) -> FileId {
        let base = FileId(self.files.len() as u32);
        for _ in 0..n {
            self.files.push(SourceFile {
                display: String::new(),
                apache_path: String::new(),
                kind: FileKind::Builtin,
                text: String::new(),
                line_starts: vec![0],
            });
        }
        base
    }

    /// Fills a reserved id.
    pub fn fill(&mut self, id: FileId, display: String, apache_path: String, kind: FileKind, text: String) {
        let mut line_starts = vec![0u32];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        self.files[id.0 as usize] = SourceFile { display, apache_path, kind, text, line_starts };
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Forgets the files added after the first `n` (their ids are given out again).
    pub fn truncate(&mut self, n: usize) {
        self.files.truncate(n);
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Line and column (in characters) of a byte offset.
    pub fn position(&self, file: FileId, offset: u32) -> Position {
        let f = self.file(file);
        let line = f.line_starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = f.line_starts[line] as usize;
        let end = (offset as usize).min(f.text.len());
        let column = f.text.get(start..end).map_or(end - start, |s| s.chars().count()) + 1;
        Position { line: line as u32 + 1, column: column as u32 }
    }

    /// `path:line:column` of the start of a span, as editors and compilers print it.
    pub fn locate(&self, span: Span) -> String {
        let p = self.position(span.file, span.start);
        format!("{}:{}:{}", self.file(span.file).display, p.line, p.column)
    }

    /// `path:line` of the start of a span, for provenance in trees and generated output.
    pub fn line_ref(&self, span: Span) -> String {
        let p = self.position(span.file, span.start);
        format!("{}:{}", self.file(span.file).display, p.line)
    }

    pub fn line_starts(&self, file: FileId) -> &[u32] {
        &self.file(file).line_starts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let mut map = SourceMap::new();
        let id = map.add("a".into(), "/a".into(), FileKind::ServerConfig, "ab\nxé z\n".into());
        assert_eq!(map.position(id, 0), Position { line: 1, column: 1 });
        assert_eq!(map.position(id, 3), Position { line: 2, column: 1 });
        // 'z' sits after a two-byte character.
        assert_eq!(map.position(id, 7), Position { line: 2, column: 4 });
        assert_eq!(map.locate(Span::new(id, 7, 8)), "a:2:4");
    }
}
