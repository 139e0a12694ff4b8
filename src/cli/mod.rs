//! The `lighten` command: parses flags, resolves them into settings, calls the library,
//! prints.  The only module besides the diagnostic renderer that writes to the terminal.

mod args;
mod batch;
mod bench;
mod compare;
mod convert;
mod demo;
mod diff;
mod directives;
mod explain;
mod inspect;
mod load;
mod manual;
mod progress;
pub(crate) mod service;
mod verify;
mod watch;
mod wizard;

use args::{Cli, ColorChoice, Command};
use clap::Parser;
use std::io::IsTerminal;

/// Whether `args` (the program name first) is a command line lighten takes, and clap's
/// message when not: what the documentation tests hold every documented command to.
pub fn check_args<I, T>(args: I) -> Result<(), String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map(|_| ()).map_err(|e| e.to_string())
}

/// Runs the command line; returns the exit status.
pub fn main() -> i32 {
    // A closed pipe (`lighten ... | head`) ends lighten quietly, as it ends cat, instead of
    // a panic in println!.  Sockets are unaffected: Rust sends with MSG_NOSIGNAL.
    // SAFETY: setting a signal's disposition to the default touches no memory.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let colors = |terminal: bool| match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none(),
    };
    // diagnostics go to standard error; batch's dry-run diff to standard output
    let (color, stdout_color) =
        (colors(std::io::stderr().is_terminal()), colors(std::io::stdout().is_terminal()));
    // Flags over the settings file over the defaults, once, for whichever command runs.
    let settings = match crate::settings::load(cli.settings.as_deref()) {
        Ok(s) => s.resolve(cli.command.given()),
        Err(e) => {
            eprintln!("lighten: settings: {e}");
            return 2;
        }
    };
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a, color),
        Command::Directives(a) => directives::run(a),
        Command::Completions(a) => manual::completions(a),
        Command::Man(a) => manual::man(a),
        Command::Explain(a) => explain::run(a),
        Command::Convert(a) => convert::run(a, &settings, color),
        Command::Watch(a) => watch::run(a, &settings, color),
        Command::Batch(a) => batch::run(a, &settings, stdout_color),
        Command::Diff(a) => diff::run(a),
        Command::Verify(a) => verify::run(a, color),
        Command::Bench(a) => bench::run(a, &settings, color),
        Command::Demo(a) => demo::run(a, color),
        Command::Wizard(a) => wizard::run(a, &settings, color),
    };
    // An interrupted run fails on its way out (its servers are being stopped); the
    // interrupt handler finishes the cleanup and exits 130.
    crate::run::process::wait_for_interrupt_handler();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lighten: {e:#}");
            2
        }
    }
}
