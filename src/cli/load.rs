//! Loading a configuration for a command that converts it or runs it (`convert`,
//! `verify`, `wizard`, `compare`, `demo`): what Apache would refuse at startup stops the
//! command here, before anything is written or started, as `lighten batch` does for an
//! account.
//!
//! Errors in `.htaccess` files do not stop it: Apache starts and answers 500 for the
//! directories they govern, and the conversion carries that answer.

use crate::config::{self, Config, LoadOptions};
use crate::diagnostic::{Diagnostics, refused_at_startup, render};
use crate::model::{self, Model};
use std::path::Path;

/// Apache would not start on this configuration; the errors were printed.
#[derive(Debug)]
pub struct Refused {
    pub errors: usize,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Apache would refuse to start on this configuration ({} error(s) above); nothing was converted",
            self.errors
        )
    }
}

impl std::error::Error for Refused {}

/// Loads and models `path`; fails with [`Refused`] (after printing each error with its
/// `file:line:column`) when Apache would not start on it.  The model's diagnostics are
/// added to the configuration's.
pub fn checked(path: &Path, opts: &LoadOptions, color: bool) -> anyhow::Result<(Config, Model)> {
    let mut cfg = config::load(path, opts)?;
    let (model, model_diags) = model::build(&mut cfg);
    // The model's findings join the loader's, so the caller sees them all in one place.
    cfg.diagnostics.extend(model_diags);
    let mut fatal = Diagnostics::new();
    fatal.extend(refused_at_startup(&cfg.sources, cfg.diagnostics.iter()).into_iter().cloned());
    fatal.sort();
    let fatal = fatal.into_vec();
    if !fatal.is_empty() {
        eprint!("{}", render::text(&cfg.sources, &fatal, color));
        return Err(Refused { errors: fatal.len() }.into());
    }
    Ok((cfg, model))
}
