//! Writing generated files into folders lighten owns (a sandbox, a demo's or a
//! benchmark's output): atomic per file, synced once per call, no backups. Writes into
//! an admin's output folder go through `plan::apply`, which keeps backups.

use std::io;
use std::path::{Path, PathBuf};

/// Writes `files` (paths relative to `dir`, never leaving it); other files in `dir` are
/// left alone.
pub fn write_files(dir: &Path, files: &[(PathBuf, String)]) -> io::Result<()> {
    crate::plan::apply::write_all(dir, files, false).map(|_| ())
}

/// Writes one file at `path` the same way (its folder is created when missing).
pub fn write_file(path: &Path, text: &str) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name =
        path.file_name().ok_or_else(|| io::Error::other(format!("{}: not a file name", path.display())))?;
    write_files(dir, &[(PathBuf::from(name), text.to_string())])
}
