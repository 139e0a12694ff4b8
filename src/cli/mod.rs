//! The `lighten` command: parses flags, resolves them into settings, calls the library,
//! prints.  The only module besides the diagnostic renderer that writes to the terminal.

mod args;
mod convert;
mod directives;
mod explain;
mod inspect;

use args::{Cli, ColorChoice, Command};
use clap::Parser;
use std::io::IsTerminal;

/// Runs the command line; returns the exit status.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a, color),
        Command::Directives(a) => directives::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Convert(a) => convert::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lighten: {e:#}");
            2
        }
    }
}
