//! `lighten diff OLD NEW`: two output folders compared file by file.

use super::args::DiffArgs;
use crate::plan;
use std::io::{IsTerminal, Write};

pub fn run(a: DiffArgs) -> anyhow::Result<i32> {
    let changes = plan::diff_dirs(&a.old, &a.new)?;
    let mut out = std::io::stdout().lock();
    if !a.stat {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        out.write_all(plan::render(&changes, color).as_bytes())?;
    }
    writeln!(out, "{}", plan::summary(&changes))?;
    Ok(if changes.iter().all(|c| c.kind == plan::Kind::Same) { 0 } else { 1 })
}
