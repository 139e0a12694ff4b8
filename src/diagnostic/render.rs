//! Turns diagnostics into text with source snippets (codespan-reporting) or into JSON.
//!
//! Rendering is pure: it returns strings and never decides where they go.

use super::{Diagnostic, Severity};
use crate::source::{FileId, SourceMap};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{self, Files};
use codespan_reporting::term;
use serde::Serialize;
use std::ops::Range;

/// Adapter so codespan can read our source map.
struct MapFiles<'a>(&'a SourceMap);

impl<'a> Files<'a> for MapFiles<'a> {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        Ok(self.0.file(id).display.as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        Ok(self.0.file(id).text.as_str())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        let starts = self.0.line_starts(id);
        Ok(starts.partition_point(|&s| s as usize <= byte_index).max(1) - 1)
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, files::Error> {
        let starts = self.0.line_starts(id);
        let text = &self.0.file(id).text;
        let start = *starts
            .get(line_index)
            .ok_or(files::Error::LineTooLarge { given: line_index, max: starts.len() - 1 })?
            as usize;
        let end = starts.get(line_index + 1).map_or(text.len(), |&e| e as usize);
        Ok(start..end)
    }
}

fn to_codespan(d: &Diagnostic) -> cs::Diagnostic<FileId> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        Severity::Note => cs::Severity::Note,
    };
    let mut labels = Vec::new();
    if let Some(span) = d.span {
        labels.push(cs::Label::primary(span.file, span.range()));
    }
    for l in &d.labels {
        labels.push(cs::Label::secondary(l.span.file, l.span.range()).with_message(&l.message));
    }
    let mut out =
        cs::Diagnostic::new(severity).with_code(d.code.name()).with_message(&d.message).with_labels(labels);
    if let Some(help) = &d.help {
        out = out.with_notes(vec![format!("help: {help}")]);
    }
    out
}

/// Human-readable text with source snippets; `color` adds ANSI colours.
pub fn text(map: &SourceMap, diagnostics: &[Diagnostic], color: bool) -> String {
    let config = term::Config::default();
    let files = MapFiles(map);
    let mut out = String::new();
    for d in diagnostics {
        let mut buf = if color { termcolor::Buffer::ansi() } else { termcolor::Buffer::no_color() };
        match term::emit_to_write_style(&mut buf, &config, &files, &to_codespan(d)) {
            Ok(()) => out.push_str(&String::from_utf8_lossy(buf.as_slice())),
            // A span codespan cannot place must not lose the diagnostic.
            Err(_) => {
                out.push_str(&short(map, d));
                out.push('\n');
            }
        }
    }
    out
}

/// One line: `path:line:column: severity[code]: message`.
pub fn short(map: &SourceMap, d: &Diagnostic) -> String {
    let at = d.span.map(|s| format!("{}: ", map.locate(s))).unwrap_or_default();
    format!("{at}{}[{}]: {}", d.severity.as_str(), d.code.name(), d.message)
}

/// The JSON shape of a diagnostic (documented in docs/inspect-json.md).
#[derive(Serialize)]
pub struct JsonDiagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub location: Option<JsonLocation>,
    pub labels: Vec<JsonLabel>,
    pub help: Option<String>,
}

#[derive(Serialize)]
pub struct JsonLocation {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

#[derive(Serialize)]
pub struct JsonLabel {
    pub location: JsonLocation,
    pub message: String,
}

pub fn location(map: &SourceMap, span: crate::source::Span) -> JsonLocation {
    let start = map.position(span.file, span.start);
    let end = map.position(span.file, span.end);
    JsonLocation {
        file: map.file(span.file).display.clone(),
        line: start.line,
        column: start.column,
        end_line: end.line,
        end_column: end.column,
    }
}

pub fn json(map: &SourceMap, d: &Diagnostic) -> JsonDiagnostic {
    JsonDiagnostic {
        code: d.code.name(),
        severity: d.severity,
        message: d.message.clone(),
        location: d.span.map(|s| location(map, s)),
        labels: d
            .labels
            .iter()
            .map(|l| JsonLabel { location: location(map, l.span), message: l.message.clone() })
            .collect(),
        help: d.help.clone(),
    }
}
