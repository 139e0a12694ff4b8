//! Writing a conversion: atomic per file (temporary file in the same folder, synced,
//! renamed over the old one), with the replaced file kept as `NAME.lighten-bak`, and
//! only inside the output folder.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The suffix of the copy kept of a file a write replaced.
pub const BACKUP_SUFFIX: &str = ".lighten-bak";

/// What a write did.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    pub written: Vec<PathBuf>,
    /// Files whose content did not change: left as they are (no backup, same mtime).
    pub unchanged: Vec<PathBuf>,
    /// Backups made of replaced files (relative to the folder).
    pub backups: Vec<PathBuf>,
}

/// Writes `files` (relative paths) into `dir`. A file that exists with other content is
/// first copied to `NAME.lighten-bak` (replacing an older backup); one with the same
/// content is not touched. A path that would leave `dir` is an error before anything is
/// written.
pub fn apply(dir: &Path, files: &[(PathBuf, String)]) -> std::io::Result<Applied> {
    use std::os::unix::fs::PermissionsExt;
    let mut checked = Vec::with_capacity(files.len());
    for (rel, text) in files {
        let rel = super::inside(rel).map_err(std::io::Error::other)?;
        checked.push((rel, text));
    }
    let mut done = Applied::default();
    for (rel, text) in checked {
        let path = dir.join(&rel);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(|e| ctx(e, "creating", parent))?;
        // A symbolic link in the way could point outside the folder: refuse it.
        if let Ok(m) = std::fs::symlink_metadata(&path)
            && m.file_type().is_symlink()
        {
            return Err(std::io::Error::other(format!(
                "{}: is a symbolic link; not replacing it",
                path.display()
            )));
        }
        match std::fs::read(&path) {
            Ok(old) if old == text.as_bytes() => {
                done.unchanged.push(rel);
                continue;
            }
            Ok(old) => {
                let mut name = rel.clone().into_os_string();
                name.push(BACKUP_SUFFIX);
                let backup = PathBuf::from(name);
                write_atomic(&dir.join(&backup), &old, None)?;
                done.backups.push(backup);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ctx(e, "reading", &path)),
        }
        write_atomic(&path, text.as_bytes(), Some(std::fs::Permissions::from_mode(0o644)))?;
        done.written.push(rel);
    }
    Ok(done)
}

fn write_atomic(path: &Path, bytes: &[u8], mode: Option<std::fs::Permissions>) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| ctx(e, "writing in", parent))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Some(m) = mode {
        tmp.as_file().set_permissions(m)?;
    }
    tmp.persist(path).map_err(|e| ctx(e.error, "replacing", path))?;
    Ok(())
}

fn ctx(e: std::io::Error, what: &str, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keep_backups_and_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.conf"), "old\n").unwrap();
        std::fs::write(dir.path().join("same"), "s\n").unwrap();
        let files = vec![
            (PathBuf::from("a.conf"), "new\n".to_string()),
            (PathBuf::from("same"), "s\n".to_string()),
            (PathBuf::from("lua/x.lua"), "x\n".to_string()),
        ];
        let done = apply(dir.path(), &files).unwrap();
        assert_eq!(done.written, [PathBuf::from("a.conf"), PathBuf::from("lua/x.lua")]);
        assert_eq!(done.unchanged, [PathBuf::from("same")]);
        assert_eq!(done.backups, [PathBuf::from("a.conf.lighten-bak")]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.conf.lighten-bak")).unwrap(), "old\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("a.conf")).unwrap(), "new\n");
        for bad in ["../x", "/etc/passwd", "a/../../x", ""] {
            let r = apply(dir.path(), &[(PathBuf::from(bad), "x".into())]);
            assert!(r.is_err(), "{bad:?} was accepted");
        }
        assert!(!dir.path().parent().unwrap().join("x").exists());
    }
}
