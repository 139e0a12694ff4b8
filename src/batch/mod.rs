//! A whole hosting server at once (`lighten batch`): which accounts a run converts
//! ([`Shard`]) and what became of each ([`Summary`]).
//!
//! The conversion of each account is `convert`'s, run once per domain of a Plesk root
//! (the domain read alone, inside the server-wide configuration, through
//! [`crate::config::LoadOptions::plesk_domains`]); the command line drives it on many
//! threads and writes the files.  This module holds only the data and its rendering: it
//! reads nothing, writes nothing, and starts nothing.

pub mod fallback;
pub mod shard;
pub mod summary;

pub use shard::Shard;
pub use summary::{Account, Combined, Counts, Failure, Status, Summary, Totals, Worst};
