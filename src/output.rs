//! Writing generated files: each through a temporary file in its folder and a rename,
//! so a reader never sees half a file and an interrupted run leaves the old one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

fn context(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Writes `files` (paths relative to `dir`); other files in `dir` are left alone.
pub fn write_files(dir: &Path, files: &[(PathBuf, String)]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for (rel, text) in files {
        let path = dir.join(rel);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(|e| context(e, "creating", parent))?;
        let mut tmp =
            tempfile::NamedTempFile::new_in(parent).map_err(|e| context(e, "writing in", parent))?;
        tmp.write_all(text.as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
        tmp.persist(&path).map_err(|e| context(e.error, "replacing", &path))?;
    }
    Ok(())
}

/// Writes one file at `path` the same way (its folder is created when missing).
pub fn write_file(path: &Path, text: &str) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name =
        path.file_name().ok_or_else(|| io::Error::other(format!("{}: not a file name", path.display())))?;
    write_files(dir, &[(PathBuf::from(name), text.to_string())])
}
