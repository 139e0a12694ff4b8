//! Unified diffs (the `similar` crate) between the files a conversion would write and
//! what a folder holds, or between two folders.

use similar::{ChangeTag, TextDiff};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Added,
    Changed,
    Removed,
    Same,
}

/// One file's fate.
#[derive(Clone, Debug)]
pub struct FileChange {
    /// Relative to the folder.
    pub path: PathBuf,
    pub kind: Kind,
    /// The unified diff (empty when the same).
    pub diff: String,
    pub added: usize,
    pub removed: usize,
}

/// What writing `files` into `dir` would change. Files already in `dir` that the
/// conversion does not write are left alone by a write, so they are not listed.
pub fn diff_files(dir: &Path, files: &[(PathBuf, String)]) -> std::io::Result<Vec<FileChange>> {
    let mut out = Vec::new();
    for (rel, new) in files {
        let old = read_text(&dir.join(rel))?;
        out.push(change(rel, old.as_deref(), Some(new)));
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Every file of two folders (recursively; backups and hidden files skipped).
pub fn diff_dirs(old: &Path, new: &Path) -> std::io::Result<Vec<FileChange>> {
    let (a, b) = (list(old)?, list(new)?);
    let mut all: BTreeMap<PathBuf, (bool, bool)> = BTreeMap::new();
    for p in a {
        all.entry(p).or_default().0 = true;
    }
    for p in b {
        all.entry(p).or_default().1 = true;
    }
    let mut out = Vec::new();
    for (rel, (in_old, in_new)) in all {
        let x = if in_old { read_text(&old.join(&rel))? } else { None };
        let y = if in_new { read_text(&new.join(&rel))? } else { None };
        out.push(change(&rel, x.as_deref(), y.as_deref()));
    }
    Ok(out)
}

fn list(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{}: not a folder", dir.display()),
        ));
    }
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.map_err(std::io::Error::other)?;
        let name = e.file_name().to_string_lossy();
        if e.depth() > 0 && name.starts_with('.') {
            continue;
        }
        if e.file_type().is_file() && !name.ends_with(super::apply::BACKUP_SUFFIX) {
            out.push(e.path().strip_prefix(dir).unwrap_or(e.path()).to_path_buf());
        }
    }
    Ok(out)
}

/// A file's text; `None` when it does not exist. Bytes that are not UTF-8 are shown
/// replaced (generated files are UTF-8).
fn read_text(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))),
    }
}

fn change(rel: &Path, old: Option<&str>, new: Option<&str>) -> FileChange {
    let kind = match (old, new) {
        (None, Some(_)) => Kind::Added,
        (Some(_), None) => Kind::Removed,
        (Some(a), Some(b)) if a == b => Kind::Same,
        _ => Kind::Changed,
    };
    let (mut diff, mut added, mut removed) = (String::new(), 0, 0);
    if kind != Kind::Same {
        let (a, b) = (old.unwrap_or(""), new.unwrap_or(""));
        let td = TextDiff::from_lines(a, b);
        for c in td.iter_all_changes() {
            match c.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
        let shown = rel.display().to_string();
        let (from, to) = match kind {
            Kind::Added => ("/dev/null".to_string(), format!("b/{shown}")),
            Kind::Removed => (format!("a/{shown}"), "/dev/null".to_string()),
            _ => (format!("a/{shown}"), format!("b/{shown}")),
        };
        diff = td.unified_diff().context_radius(3).header(&from, &to).to_string();
    }
    FileChange { path: rel.to_path_buf(), kind, diff, added, removed }
}

/// The diffs one after the other, coloured for a terminal when asked (red removals,
/// green additions, cyan hunk headers, bold file headers).
pub fn render(changes: &[FileChange], color: bool) -> String {
    let mut out = String::new();
    for c in changes.iter().filter(|c| c.kind != Kind::Same) {
        for line in c.diff.split_inclusive('\n') {
            let code = if !color {
                None
            } else if line.starts_with("+++") || line.starts_with("---") {
                Some("1")
            } else if line.starts_with('+') {
                Some("32")
            } else if line.starts_with('-') {
                Some("31")
            } else if line.starts_with("@@") {
                Some("36")
            } else {
                None
            };
            match code {
                Some(code) => {
                    let (body, nl) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
                    out.push_str(&format!("\x1b[{code}m{body}\x1b[0m{nl}"));
                }
                None => out.push_str(line),
            }
        }
        if !c.diff.ends_with('\n') && !c.diff.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// `3 files: 1 added, 1 changed (+12 -4), 1 the same`.
pub fn summary(changes: &[FileChange]) -> String {
    let count = |k: Kind| changes.iter().filter(|c| c.kind == k).count();
    let (add, rem): (usize, usize) = changes.iter().fold((0, 0), |(a, r), c| (a + c.added, r + c.removed));
    let mut parts = Vec::new();
    for (k, label) in [(Kind::Added, "added"), (Kind::Changed, "changed"), (Kind::Removed, "removed")] {
        let n = count(k);
        if n > 0 {
            parts.push(format!("{n} {label}"));
        }
    }
    let same = count(Kind::Same);
    if same > 0 {
        parts.push(format!("{same} the same"));
    }
    let n = changes.len();
    format!(
        "{n} file{}: {} (+{add} -{rem} lines)",
        if n == 1 { "" } else { "s" },
        if parts.is_empty() { "none".to_string() } else { parts.join(", ") }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_of_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.conf"), "one\ntwo\n").unwrap();
        std::fs::write(dir.path().join("same.lua"), "x\n").unwrap();
        let files = vec![
            (PathBuf::from("a.conf"), "one\nthree\n".to_string()),
            (PathBuf::from("same.lua"), "x\n".to_string()),
            (PathBuf::from("lua/new.lua"), "y\n".to_string()),
        ];
        let c = diff_files(dir.path(), &files).unwrap();
        let kinds: Vec<(String, Kind)> = c.iter().map(|c| (c.path.display().to_string(), c.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("a.conf".into(), Kind::Changed),
                ("lua/new.lua".into(), Kind::Added),
                ("same.lua".into(), Kind::Same)
            ]
        );
        assert!(c[0].diff.contains("--- a/a.conf\n+++ b/a.conf\n") && c[0].diff.contains("-two\n+three\n"));
        assert_eq!(summary(&c), "3 files: 1 added, 1 changed, 1 the same (+2 -1 lines)");
        let text = render(&c, true);
        assert!(text.contains("\x1b[31m-two\x1b[0m\n") && text.contains("\x1b[32m+three\x1b[0m\n"), "{text}");
        assert!(!render(&c, false).contains('\x1b'));

        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("a.conf"), "one\ntwo\n").unwrap();
        std::fs::write(other.path().join("gone.txt"), "z\n").unwrap();
        let d = diff_dirs(dir.path(), other.path()).unwrap();
        let kinds: Vec<Kind> = d.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Kind::Same, Kind::Added, Kind::Removed], "{d:?}");
    }
}
