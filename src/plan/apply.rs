//! Writing a conversion: every file through a temporary file in its folder renamed over
//! the old one (a reader never sees half a file), the replaced file kept as
//! `NAME.lighten-bak`, and only inside the output folder.
//!
//! Durability is bought once per write, not once per file: all temporary files are
//! written, the filesystem is synced (`syncfs`), then everything is renamed into place
//! and synced again. A crash leaves each file either old or new, never empty, at the
//! cost of two syncs instead of one per file (a server of 1,000 accounts is 18,000
//! files).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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
    write_files(dir, files, true, None)
}

/// Writes `files` into `dir` like [`apply`], without backups: for folders lighten owns
/// (a sandbox, a demo's output).
pub fn write_all(dir: &Path, files: &[(PathBuf, String)], backups: bool) -> std::io::Result<Applied> {
    write_files(dir, files, backups, None)
}

/// The files of one run of writes, by content: a later file with the same bytes as one
/// written (or found unchanged) before is made a hard link to it, one copy on disk.
/// `lighten batch` writes the same runtime into every account's folder and every
/// account's modules again into the combined one.  A link is replaced, never written
/// through: a later write renames a new file over the name, and the other names keep
/// the old bytes.  Where a link cannot be made (another filesystem, a file of another
/// owner under `fs.protected_hardlinks`), the file is written as usual.
#[derive(Debug, Default)]
pub struct Shared {
    by_content: Mutex<HashMap<u64, PathBuf>>,
}

impl Shared {
    fn digest(bytes: &[u8]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        bytes.hash(&mut h);
        h.finish()
    }

    /// A file written before with exactly these bytes.
    fn same_as(&self, bytes: &[u8]) -> Option<PathBuf> {
        let p = self.by_content.lock().ok()?.get(&Self::digest(bytes)).cloned()?;
        // (read back: a digest is not proof, and the file may have changed since)
        std::fs::read(&p).ok().filter(|b| b == bytes).map(|_| p)
    }

    fn note(&self, path: &Path, bytes: &[u8]) {
        if let Ok(mut m) = self.by_content.lock() {
            m.entry(Self::digest(bytes)).or_insert_with(|| path.to_path_buf());
        }
    }
}

/// [`apply`], sharing one copy of each content with the other writes of `shared`.
pub fn apply_shared(dir: &Path, files: &[(PathBuf, String)], shared: &Shared) -> std::io::Result<Applied> {
    write_files(dir, files, true, Some(shared))
}

fn write_files(
    dir: &Path,
    files: &[(PathBuf, String)],
    backups: bool,
    shared: Option<&Shared>,
) -> std::io::Result<Applied> {
    use std::os::unix::fs::PermissionsExt;
    let mut checked = Vec::with_capacity(files.len());
    for (rel, text) in files {
        let rel = super::inside(rel).map_err(std::io::Error::other)?;
        checked.push((rel, text));
    }
    let mut done = Applied::default();
    // (temporary file, where it goes), backups first so they land before what replaces them.
    let mut staged: Vec<(tempfile::TempPath, PathBuf)> = Vec::new();
    let mut staged_files: Vec<(tempfile::TempPath, PathBuf, &str)> = Vec::new();
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
                if let Some(sh) = shared {
                    sh.note(&path, &old);
                }
                done.unchanged.push(rel);
                continue;
            }
            Ok(old) if backups => {
                let mut name = rel.clone().into_os_string();
                name.push(BACKUP_SUFFIX);
                let backup = PathBuf::from(name);
                staged.push((stage(&dir.join(&backup), &old, None)?, dir.join(&backup)));
                done.backups.push(backup);
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ctx(e, "reading", &path)),
        }
        let mode = Some(std::fs::Permissions::from_mode(0o644));
        let linked = shared.and_then(|sh| sh.same_as(text.as_bytes())).and_then(|src| link(&src, &path));
        let tmp = match linked {
            Some(tmp) => tmp,
            None => stage(&path, text.as_bytes(), mode)?,
        };
        staged_files.push((tmp, path, text));
        done.written.push(rel);
    }
    if staged.is_empty() && staged_files.is_empty() {
        return Ok(done);
    }
    sync(dir)?;
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| ctx(e.error, "replacing", &path))?;
    }
    for (tmp, path, text) in staged_files {
        tmp.persist(&path).map_err(|e| ctx(e.error, "replacing", &path))?;
        if let Some(sh) = shared {
            sh.note(&path, text.as_bytes());
        }
    }
    sync(dir)?;
    Ok(done)
}

/// A new name for `src` beside `path` (a hard link), to be renamed over `path`; `None`
/// when the link cannot be made.
fn link(src: &Path, path: &Path) -> Option<tempfile::TempPath> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let parent = path.parent()?;
    for _ in 0..4 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".lighten-link-{}-{n}", std::process::id()));
        match std::fs::hard_link(src, &tmp) {
            Ok(()) => return tempfile::TempPath::try_from_path(tmp).ok(),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

/// A temporary file beside `path` holding `bytes` (closed; removed if never renamed).
fn stage(
    path: &Path,
    bytes: &[u8],
    mode: Option<std::fs::Permissions>,
) -> std::io::Result<tempfile::TempPath> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| ctx(e, "writing in", parent))?;
    tmp.write_all(bytes)?;
    if let Some(m) = mode {
        tmp.as_file().set_permissions(m)?;
    }
    Ok(tmp.into_temp_path())
}

/// Flushes the filesystem holding `dir` to disk.
fn sync(dir: &Path) -> std::io::Result<()> {
    let f = std::fs::File::open(dir).map_err(|e| ctx(e, "opening", dir))?;
    // SAFETY: syncfs(2) takes an open file descriptor and touches no memory.
    if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) } != 0 {
        return Err(ctx(std::io::Error::last_os_error(), "syncing", dir));
    }
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
        // (the output folder one level down, so that what would escape it lands in a folder
        // of this test's own, whatever the machine's /tmp holds)
        let top = tempfile::tempdir().unwrap();
        std::fs::create_dir(top.path().join("out")).unwrap();
        let dir = tempfile::TempDir::new_in(top.path().join("out")).unwrap();
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

    #[test]
    fn shared_writes_keep_one_copy_that_a_later_write_replaces_for_one_name_only() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let shared = Shared::default();
        let runtime = "-- the same runtime\n".to_string();
        let ino = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().ino();
        apply_shared(dir.path(), &[(PathBuf::from("a/lua/rt.lua"), runtime.clone())], &shared).unwrap();
        let b = [(PathBuf::from("b/lua/rt.lua"), runtime.clone()), (PathBuf::from("b/own"), "b\n".into())];
        let done = apply_shared(dir.path(), &b, &shared).unwrap();
        assert_eq!(done.written.len(), 2);
        assert_eq!(ino("a/lua/rt.lua"), ino("b/lua/rt.lua"), "the same bytes are one file");
        assert_ne!(ino("b/own"), ino("a/lua/rt.lua"));
        assert_eq!(std::fs::read_to_string(dir.path().join("b/lua/rt.lua")).unwrap(), runtime);
        // no temporary name is left beside it
        let names: Vec<_> =
            std::fs::read_dir(dir.path().join("b/lua")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["rt.lua"]);
        // a new conversion of b replaces its name; a keeps the old bytes
        apply_shared(dir.path(), &[(PathBuf::from("b/lua/rt.lua"), "-- new\n".into())], &shared).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("a/lua/rt.lua")).unwrap(), runtime);
        assert_eq!(std::fs::read_to_string(dir.path().join("b/lua/rt.lua.lighten-bak")).unwrap(), runtime);
        assert_ne!(ino("a/lua/rt.lua"), ino("b/lua/rt.lua"));
        // a file changed behind the run's back is not linked to
        std::fs::write(dir.path().join("a/lua/rt.lua"), "edited\n").unwrap();
        apply_shared(dir.path(), &[(PathBuf::from("c/rt.lua"), runtime.clone())], &shared).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("c/rt.lua")).unwrap(), runtime);
        assert_ne!(ino("c/rt.lua"), ino("a/lua/rt.lua"));
    }
}
