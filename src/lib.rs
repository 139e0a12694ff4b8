//! lighten moves websites from Apache httpd to lighttpd, and proves and measures the move.
//!
//! The pipeline, one module per stage (see ARCHITECTURE.md):
//! `source` (files, spans) -> `syntax` (generic tree) -> `config` (includes, defines and
//! conditions applied) -> `model` (vhosts, scopes, typed settings) -> `inspect` (views).
//! The `catalogue` knows every directive; `diagnostic` carries every finding.

pub mod batch;
pub mod bench;
pub mod catalogue;
pub mod cli;
pub mod config;
pub mod diagnostic;
pub mod eval;
pub mod expr;
pub mod inspect;
pub mod luare;
pub mod model;
pub mod output;
pub mod par;
pub mod plan;
pub mod run;
pub mod settings;
pub mod source;
pub mod syntax;
pub mod translate;
pub mod verify;
pub mod watch;
