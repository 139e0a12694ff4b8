//! Views of the model for people and programs: a readable tree with `file:line` on every
//! line, a coverage table, and a stable JSON document (docs/inspect-json.md).
//!
//! Rendering is pure: strings out, nothing printed, nothing read.

mod json;
mod text;

pub use json::{JSON_VERSION, render as json};
pub use text::{render as text, render_with as text_with, summary};
