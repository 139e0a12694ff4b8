//! `lighten completions` and `lighten man`: generated from the clap definitions, so
//! they always list the flags the binary has.

use super::args::{Cli, CompletionsArgs, ManArgs};
use clap::CommandFactory;
use std::io::Write;

pub fn completions(a: CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "lighten", &mut std::io::stdout().lock());
    Ok(0)
}

pub fn man(a: ManArgs) -> anyhow::Result<i32> {
    let cmd = Cli::command();
    let Some(dir) = a.out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        std::io::stdout().lock().write_all(&page)?;
        return Ok(0);
    };
    let mut files = Vec::new();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    files.push((std::path::PathBuf::from("lighten.1"), String::from_utf8_lossy(&page).into_owned()));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("lighten-{}", sub.get_name());
        let sub = sub.clone().name(name.clone()).display_name(name.clone());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub).render(&mut page)?;
        files.push((format!("{name}.1").into(), String::from_utf8_lossy(&page).into_owned()));
    }
    crate::plan::apply(&dir, &files)?;
    println!("wrote {} man pages to {}", files.len(), dir.display());
    Ok(0)
}
