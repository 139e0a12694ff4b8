//! The one integration-test binary: every test runs the real `lighten` or the library on
//! fixtures from `fixtures/` and compares whole outputs with reviewed snapshots.

mod batch;
mod bench;
mod convert;
mod convert_diff;
mod docs;
mod dry_run;
mod explain;
mod helpers;
mod inspect;
mod one_site;
mod package;
mod properties;
mod rewrite_diff;
mod roundtrip;
mod sandbox;
mod settings;
mod startup;
mod tidy;
mod watch;
mod wizard;
