//! Any bytes as a server configuration: parse, print and parse again, then load, model and
//! render, which must never panic; the round trip must keep the tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lighten::config::{self, LoadOptions};
use lighten::source::{FileId, Sysroot};
use lighten::syntax;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (doc, _) = syntax::parse(FileId(0), &text);
    let printed = syntax::print(&doc);
    let (again, _) = syntax::parse(FileId(0), &printed);
    assert_eq!(printed, syntax::print(&again), "printing twice differs");

    // An empty sysroot: includes find nothing, so each run reads only this text.
    let opts = LoadOptions { sysroot: Sysroot::at("/nonexistent-lighten-fuzz-root"), ..LoadOptions::default() };
    let mut cfg = config::load_source("fuzz.conf", &text, &opts);
    let (model, diags) = lighten::model::build(&mut cfg);
    let _ = lighten::inspect::text(&model, &cfg.sources);
    let _ = lighten::inspect::json(&model, &diags, &cfg.sources);
});
