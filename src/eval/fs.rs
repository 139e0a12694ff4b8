//! The filesystem as the evaluated server sees it: the sysroot, with Apache's directory
//! walk that splits a mapped path into the file and its PATH_INFO.

use crate::source::Sysroot;
use std::os::unix::fs::PermissionsExt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Other,
    Missing,
}

#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub kind: Kind,
    pub size: u64,
    pub executable: bool,
    /// The path itself is a symbolic link (lstat).
    pub link: bool,
}

pub fn stat(fs: &Sysroot, path: &str) -> Stat {
    let host = fs.host_path(path);
    let link = std::fs::symlink_metadata(&host).map(|m| m.file_type().is_symlink()).unwrap_or(false);
    match std::fs::metadata(&host) {
        Ok(m) => Stat {
            kind: if m.is_file() {
                Kind::File
            } else if m.is_dir() {
                Kind::Dir
            } else {
                Kind::Other
            },
            size: m.len(),
            executable: m.permissions().mode() & 0o111 != 0,
            link,
        },
        Err(_) => Stat { kind: Kind::Missing, size: 0, executable: false, link },
    }
}

/// The longest file name the filesystem takes (NAME_MAX on Linux filesystems).
pub const NAME_MAX: usize = 255;

/// Whether Apache's directory walk meets a name longer than [`NAME_MAX`] while every
/// name before it is a directory: its stat() fails with ENAMETOOLONG, which
/// `ap_directory_walk` answers with 403 (only ENOENT and ENOTDIR end the walk as
/// PATH_INFO), before any .htaccess or access rule is read.
pub fn name_too_long(fs: &Sysroot, path: &str) -> bool {
    // Only a path that has such a name costs a stat per folder before it.
    let Some(end) = path
        .split('/')
        .scan(0, |at, seg| {
            let start = *at;
            *at += seg.len() + 1;
            Some((start, seg.len()))
        })
        .find(|(_, len)| *len > NAME_MAX)
        .map(|(start, _)| start)
    else {
        return false;
    };
    let folders = path[..end].trim_end_matches('/');
    let mut cur = String::new();
    for seg in folders.split('/').skip(1) {
        cur.push('/');
        cur.push_str(seg);
        if stat(fs, &cur).kind != Kind::Dir {
            return false;
        }
    }
    true
}

/// Apache's directory walk: the longest prefix of `path` that is a directory, then the
/// next component (a file or the first missing name) as the filename, the rest as
/// PATH_INFO.  A path that is a directory all along stays whole.
pub fn walk(fs: &Sysroot, path: &str) -> (String, Option<String>, Kind) {
    let whole = stat(fs, path);
    if whole.kind != Kind::Missing && !(whole.kind == Kind::File && path.ends_with('/')) {
        return (path.to_string(), None, whole.kind);
    }
    let mut cur = String::new();
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    for (i, seg) in segs.iter().enumerate() {
        cur.push('/');
        cur.push_str(seg);
        let st = stat(fs, &cur);
        if st.kind == Kind::Dir && i + 1 < segs.len() {
            continue;
        }
        let rest: String = segs[i + 1..].iter().map(|s| format!("/{s}")).collect();
        let info = if rest.is_empty() { None } else { Some(rest) };
        return (cur, info, st.kind);
    }
    (path.to_string(), None, whole.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_splits_path_info() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("w/sub")).unwrap();
        std::fs::write(t.path().join("w/index.php"), "x").unwrap();
        let fs = Sysroot::at(t.path());
        assert_eq!(walk(&fs, "/w/index.php/a/b"), ("/w/index.php".into(), Some("/a/b".into()), Kind::File));
        assert_eq!(walk(&fs, "/w/missing/a"), ("/w/missing".into(), Some("/a".into()), Kind::Missing));
        assert_eq!(walk(&fs, "/w/sub/"), ("/w/sub/".into(), None, Kind::Dir));
        assert_eq!(walk(&fs, "/w/index.php/"), ("/w/index.php".into(), Some("/".into()), Kind::File));
    }
}
