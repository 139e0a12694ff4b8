//! Diagnostics: one type for every finding, from a bad quote to a directive the target
//! cannot express.
//!
//! Library code never prints; it returns [`Diagnostic`] values next to its results.  The
//! [`render`] module turns them into text with source snippets or into JSON, and only the
//! command line decides where that goes.

mod code;
pub mod render;

pub use code::Code;

use crate::source::Span;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A secondary place that explains the primary one ("the section opened here").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Lowercase, no trailing period, says what is wrong.
    pub message: String,
    /// Where it is; `None` only for findings about the run itself (a missing path).
    pub span: Option<Span>,
    pub labels: Vec<Label>,
    /// What the admin can do, or what lighten does instead.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with the code's usual severity.
    pub fn new(code: Code, span: impl Into<Option<Span>>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            span: span.into(),
            labels: Vec::new(),
            help: None,
        }
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, message: message.into() });
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Diagnostic {
        self.severity = severity;
        self
    }
}

/// Diagnostics collected along the way; a thin wrapper so stages can push without caring
/// who reads them.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

/// The errors Apache would refuse to start for: every error outside `.htaccess` files
/// (an error in one of those only makes Apache answer 500 where it applies).
pub fn refused_at_startup<'a>(
    map: &crate::source::SourceMap,
    diags: impl IntoIterator<Item = &'a Diagnostic>,
) -> Vec<&'a Diagnostic> {
    diags
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .filter(|d| !d.span.is_some_and(|s| map.file(s.file).kind == crate::source::FileKind::Htaccess))
        .collect()
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(ds);
    }

    pub fn retain(&mut self, keep: impl FnMut(&Diagnostic) -> bool) {
        self.items.retain(keep);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.items.iter()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// Stable order for output: by file, then position, then code.
    pub fn sort(&mut self) {
        self.items.sort_by(|a, b| {
            let ka = a.span.map(|s| (s.file, s.start, s.end));
            let kb = b.span.map(|s| (s.file, s.start, s.end));
            ka.cmp(&kb).then(a.code.name().cmp(b.code.name())).then(a.message.cmp(&b.message))
        });
        self.items.dedup();
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}
