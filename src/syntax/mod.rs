//! Apache's configuration grammar: text in, a generic tree plus diagnostics out.
//!
//! The same grammar serves httpd.conf, included files and .htaccess.  This module never
//! fails, never reads files and knows no directive: `${VAR}`, `<IfModule>` and `Include`
//! are plain nodes here and get their meaning in [`crate::config`].

mod lines;
mod parser;
mod printer;
mod tree;
pub mod words;

pub use parser::parse;
pub use printer::print;
pub use tree::{Comment, Directive, Document, Node, Section, Word};
