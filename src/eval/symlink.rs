//! Symbolic links in Apache's directory walk: `resolve_symlink()` in server/request.c.
//!
//! The walk lstat()s every component of the mapped path from the root down to the file
//! (or the first missing name).  A component that is a link is judged under the Options
//! in force for the folder that holds it (`dirconf::walk_options`), before anything of
//! the link's own folder is read:
//!
//! | Options of the folder            | link to an existing target      | dangling link |
//! |----------------------------------|---------------------------------|---------------|
//! | neither option                   | 403                             | 403           |
//! | FollowSymLinks                   | followed                        | 403           |
//! | SymLinksIfOwnerMatch (with or without FollowSymLinks) | followed when the link's owner is the target's, else 403 | 403 |
//!
//! (measured on Apache 2.4.71, Debian 12).  A followed link keeps its name: the
//! configuration is that of the path as asked for, so the `<Directory>` sections of the
//! target do not apply, while the target's .htaccess does (it is read through the link,
//! as `<link>/.htaccess`).  Nothing here knows the model: the caller says which Options
//! are in force.

use super::dirconf::opt;
use crate::source::Sysroot;
use std::os::unix::fs::MetadataExt;

/// Why Apache refuses a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The folder's Options have neither FollowSymLinks nor SymLinksIfOwnerMatch.
    NotAllowed,
    /// The target does not exist (or cannot be reached).
    Dangling,
    /// SymLinksIfOwnerMatch, and the link's owner is not the target's.
    OwnerDiffers,
}

impl Refusal {
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::NotAllowed => {
                "the folder's Options have neither FollowSymLinks nor SymLinksIfOwnerMatch"
            }
            Refusal::Dangling => "its target does not exist",
            Refusal::OwnerDiffers => "SymLinksIfOwnerMatch, and the link's owner is not its target's",
        }
    }
}

/// Whether `path` (an Apache path) is itself a symbolic link.
pub fn is_link(fs: &Sysroot, path: &str) -> bool {
    std::fs::symlink_metadata(fs.host_path(path)).is_ok_and(|m| m.file_type().is_symlink())
}

/// Apache's verdict on the link `path` met in a folder whose walk has `options` in force.
pub fn judge(fs: &Sysroot, path: &str, options: u8) -> Result<(), Refusal> {
    if options & (opt::SYM_LINKS | opt::SYM_OWNER) == 0 {
        return Err(Refusal::NotAllowed);
    }
    let host = fs.host_path(path);
    let Ok(target) = std::fs::metadata(&host) else { return Err(Refusal::Dangling) };
    if options & opt::SYM_OWNER != 0 {
        let Ok(link) = std::fs::symlink_metadata(&host) else { return Err(Refusal::Dangling) };
        if link.uid() != target.uid() {
            return Err(Refusal::OwnerDiffers);
        }
    }
    Ok(())
}

/// The first link on the way to `filename` (the walked name, PATH_INFO split off) that
/// Apache refuses, with why.  `options_at(folder)` gives the walk's Options for the
/// entries of `folder` (`""` for the root), or `None` when the walk stops before with
/// another answer (a broken .htaccess there: 500); then nothing is refused here.
pub fn first_refused(
    fs: &Sysroot,
    filename: &str,
    options_at: &mut dyn FnMut(&str) -> Option<u8>,
) -> Option<(String, Refusal)> {
    let path = filename.trim_end_matches('/');
    let mut end = 0;
    while end < path.len() {
        end = path[end + 1..].find('/').map_or(path.len(), |i| end + 1 + i);
        let cur = &path[..end];
        if !is_link(fs, cur) {
            continue;
        }
        let folder = cur.rsplit_once('/').map_or("", |(d, _)| d);
        let options = options_at(folder)?;
        if let Err(why) = judge(fs, cur, options) {
            return Some((cur.to_string(), why));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Sysroot) {
        let t = tempfile::tempdir().unwrap();
        let w = t.path().join("w");
        std::fs::create_dir_all(w.join("private")).unwrap();
        std::fs::create_dir_all(w.join("public")).unwrap();
        std::fs::write(w.join("private/secret.txt"), "s").unwrap();
        symlink("../private", w.join("public/leak")).unwrap();
        symlink("../nothing", w.join("public/dangling")).unwrap();
        let fs = Sysroot::at(t.path());
        (t, fs)
    }

    #[test]
    fn links_are_judged_under_the_options_of_their_folder() {
        let (_t, fs) = tree();
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_LINKS), Ok(()));
        assert_eq!(judge(&fs, "/w/public/leak", opt::INDEXES), Err(Refusal::NotAllowed));
        assert_eq!(judge(&fs, "/w/public/dangling", opt::SYM_LINKS), Err(Refusal::Dangling));
        assert_eq!(judge(&fs, "/w/public/dangling", 0), Err(Refusal::NotAllowed));
        // Same owner (whoever runs the test made both).
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_OWNER), Ok(()));
    }

    #[test]
    fn the_first_refused_link_on_the_way_is_found() {
        let (_t, fs) = tree();
        let mut public_off = |d: &str| Some(if d == "/w/public" { 0 } else { opt::SYM_LINKS });
        assert_eq!(
            first_refused(&fs, "/w/public/leak/secret.txt", &mut public_off),
            Some(("/w/public/leak".into(), Refusal::NotAllowed))
        );
        assert_eq!(
            first_refused(&fs, "/w/public/leak/", &mut public_off),
            Some(("/w/public/leak".into(), Refusal::NotAllowed))
        );
        let mut on = |_: &str| Some(opt::SYM_LINKS);
        assert_eq!(first_refused(&fs, "/w/public/leak/secret.txt", &mut on), None);
        assert_eq!(
            first_refused(&fs, "/w/public/dangling", &mut on),
            Some(("/w/public/dangling".into(), Refusal::Dangling))
        );
        // A broken .htaccess on the way answers first.
        assert_eq!(first_refused(&fs, "/w/public/leak/secret.txt", &mut |_| None), None);
        assert_eq!(first_refused(&fs, "/w/private/secret.txt", &mut public_off), None);
    }

    /// SymLinksIfOwnerMatch compares the link's owner with its target's (lchown needs
    /// root; the differential fixture cannot carry owners, git does not store them).
    #[test]
    fn symlinksifownermatch_refuses_a_link_of_another_owner() {
        let (t, fs) = tree();
        // SAFETY: geteuid() only reads the process's effective user id.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: changing a link's owner needs root");
            return;
        }
        let link = t.path().join("w/public/leak");
        std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_OWNER), Err(Refusal::OwnerDiffers));
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_OWNER | opt::SYM_LINKS), Err(Refusal::OwnerDiffers));
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_LINKS), Ok(()));
        std::os::unix::fs::chown(t.path().join("w/private"), Some(65534), None).unwrap();
        assert_eq!(judge(&fs, "/w/public/leak", opt::SYM_OWNER), Ok(()));
    }
}
