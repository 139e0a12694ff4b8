//! `lighten directives`: the catalogue as a table or JSON.

use super::args::{DirectivesArgs, StatusArg};
use crate::catalogue::{Status, catalogue};
use std::fmt::Write as _;
use std::io::Write;

pub fn run(a: DirectivesArgs) -> anyhow::Result<i32> {
    let want = a.status.map(|s| match s {
        StatusArg::Translated => Status::Translated,
        StatusArg::Approximated => Status::Approximated,
        StatusArg::Ignored => Status::Ignored,
        StatusArg::Unsupported => Status::Unsupported,
    });
    let rows: Vec<_> = catalogue()
        .entries()
        .iter()
        .filter(|e| want.is_none_or(|w| e.status == w))
        .filter(|e| a.module.as_deref().is_none_or(|m| e.module.eq_ignore_ascii_case(m)))
        .collect();
    let mut out = String::new();
    if a.json {
        out = serde_json::to_string_pretty(&rows)? + "\n";
    } else {
        let _ = writeln!(
            out,
            "{:<32} {:<24} {:<9} {:<24} {:<7} {:<12} note",
            "directive", "module", "where", ".htaccess", "args", "status"
        );
        for e in &rows {
            let ht = e.htaccess.map(|o| o.to_string()).unwrap_or_else(|| "-".into());
            let place = match e.place {
                crate::catalogue::Where::Global => "global",
                crate::catalogue::Where::Server => "server",
                crate::catalogue::Where::Directory => "directory",
                crate::catalogue::Where::Anywhere => "anywhere",
            };
            let _ = writeln!(
                out,
                "{:<32} {:<24} {:<9} {:<24} {:<7} {:<12} {}",
                e.name,
                e.module,
                place,
                ht,
                e.args.as_str(),
                e.status.as_str(),
                e.note
            );
        }
        let _ = writeln!(out, "{} directives", rows.len());
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(0)
}
