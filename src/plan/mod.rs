//! What a conversion would change on disk, and changing it safely.
//!
//! [`diff`] compares the files a conversion would write with what an output folder
//! holds now (or two folders with each other) and renders a unified diff; [`apply`]
//! writes them: each file through a temporary file and a rename, the file it replaces
//! kept as a backup first, and never a path outside the output folder. Nothing here
//! prints.

pub mod apply;
pub mod diff;

pub use apply::{Applied, Shared, apply, apply_shared};
pub use diff::{FileChange, Kind, diff_dirs, diff_files, render, summary};

use std::path::{Component, Path, PathBuf};

/// A relative path that stays inside its folder: no root, no `..`, not empty.
pub fn inside(rel: &Path) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return Err(format!("{}: not a path inside the output folder", rel.display())),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(format!("{}: not a file name", rel.display()));
    }
    Ok(out)
}
