//! Where configuration text comes from: files, their names and positions.
//!
//! This module owns spans, the source map and the [`Sysroot`] through which every file is
//! read.  It knows nothing about Apache's grammar; the loader that follows `Include` lives
//! in [`crate::config`].

mod source_map;
mod span;
mod sysroot;
mod text;

pub use source_map::{FileKind, Position, SourceFile, SourceMap};
pub use span::{FileId, Span, with_source_map};
pub use sysroot::{Sysroot, clean_path, join};
pub use text::MappedText;
