//! The JSON document of `lighten inspect --json`, described in docs/inspect-json.md.
//! Fields are only ever added within a version; a change that removes or renames one
//! bumps [`JSON_VERSION`].

use crate::diagnostic::{Diagnostic, render};
use crate::model::Model;
use crate::source::{SourceMap, with_source_map};
use serde::Serialize;

pub const JSON_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    #[serde(flatten)]
    model: &'a Model,
    diagnostics: Vec<render::JsonDiagnostic>,
}

pub fn render(model: &Model, diagnostics: &[Diagnostic], map: &SourceMap) -> String {
    let doc = Document {
        version: JSON_VERSION,
        model,
        diagnostics: diagnostics.iter().map(|d| render::json(map, d)).collect(),
    };
    with_source_map(map, || serde_json::to_string_pretty(&doc).expect("the model serializes")) + "\n"
}
