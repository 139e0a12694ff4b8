//! Questions at the terminal (dialoguer, drawn on standard output), or none: without a
//! terminal every question must have been answered by a flag, and asking one is an
//! error that names the flag.  Escape, `q` and Ctrl-C cancel the wizard.

use anyhow::bail;
use dialoguer::console::Term;
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, MultiSelect, Select};
use std::io::Write;

/// The admin cancelled a question: nothing has been written.
#[derive(Debug)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

pub struct Prompt {
    /// `None` without a terminal.
    term: Option<(Term, Box<dyn Theme>)>,
}

impl Prompt {
    pub fn terminal(color: bool) -> Prompt {
        let theme: Box<dyn Theme> =
            if color { Box::new(ColorfulTheme::default()) } else { Box::new(SimpleTheme) };
        Prompt { term: Some((Term::stdout(), theme)) }
    }

    pub fn none() -> Prompt {
        Prompt { term: None }
    }

    /// The terminal and theme, after what was printed so far is flushed (dialoguer writes
    /// to the terminal directly, around Rust's buffered standard output).
    fn term(&self, question: &str, flag: &str) -> anyhow::Result<(&Term, &dyn Theme)> {
        let Some((term, theme)) = &self.term else {
            bail!("no terminal to ask {question:?} on: pass {flag}");
        };
        std::io::stdout().flush()?;
        Ok((term, theme.as_ref()))
    }

    /// One of `items`; `default` is highlighted first.
    pub fn select(
        &self,
        question: &str,
        items: &[String],
        default: usize,
        flag: &str,
    ) -> anyhow::Result<usize> {
        let (term, theme) = self.term(question, flag)?;
        let r = Select::with_theme(theme)
            .with_prompt(question)
            .items(items)
            .default(default)
            .interact_on_opt(term);
        answered(term, r)
    }

    /// Any of `items`, all ticked to start with; at least one.
    pub fn pick(&self, question: &str, items: &[String], flag: &str) -> anyhow::Result<Vec<usize>> {
        let (term, theme) = self.term(question, flag)?;
        loop {
            let r = MultiSelect::with_theme(theme)
                .with_prompt(format!("{question} (space ticks, a ticks all, enter accepts)"))
                .items(items)
                .defaults(&vec![true; items.len()])
                .interact_on_opt(term);
            let picked = answered(term, r)?;
            if !picked.is_empty() {
                return Ok(picked);
            }
            term.write_line("  pick at least one")?;
        }
    }

    /// A line of text; `check` refuses an answer with its reason.
    pub fn text(
        &self,
        question: &str,
        default: Option<&str>,
        flag: &str,
        check: impl Fn(&str) -> Result<(), String>,
    ) -> anyhow::Result<String> {
        let (term, theme) = self.term(question, flag)?;
        let mut input = Input::<String>::with_theme(theme).with_prompt(question);
        if let Some(d) = default {
            input = input.default(d.to_string());
        }
        let r = input.validate_with(|s: &String| check(s.trim())).interact_text_on(term);
        Ok(answered(term, r.map(Some))?.trim().to_string())
    }

    /// Yes or no.
    pub fn confirm(&self, question: &str, default: bool, flag: &str) -> anyhow::Result<bool> {
        let (term, theme) = self.term(question, flag)?;
        let r = Confirm::with_theme(theme).with_prompt(question).default(default).interact_on_opt(term);
        answered(term, r)
    }
}

/// An answer, or [`Cancelled`] for Escape, `q` and Ctrl-C (the terminal is in raw mode
/// while a question is asked, so Ctrl-C arrives as an interrupted read, not a signal).
fn answered<T>(term: &Term, r: dialoguer::Result<Option<T>>) -> anyhow::Result<T> {
    match r {
        Ok(Some(v)) => Ok(v),
        Ok(None) => {
            let _ = term.show_cursor();
            Err(Cancelled.into())
        }
        Err(dialoguer::Error::IO(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
            let _ = term.show_cursor();
            Err(Cancelled.into())
        }
        Err(e) => Err(e.into()),
    }
}
