//! Watching folders with inotify (the `inotify` crate, which the `notify` crate's Linux
//! backend is built on): one watch per folder, added for every folder of a watched tree
//! and for each one created or moved in later.
//!
//! Why not `notify`: its inotify backend always asks for IN_OPEN, so every file lighttpd
//! opens under a watched document root (every static file it serves) would wake watch
//! and go through a channel to be thrown away. The mask here has only what can change a
//! file's content or a folder's entries: create, delete, write, close after writing,
//! attributes, moves, and the watched folder itself going away.

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use std::collections::HashMap;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::ONLYDIR);

/// One change seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub path: PathBuf,
    /// The event is about a folder.
    pub dir: bool,
}

pub struct Trees {
    inotify: Inotify,
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// Folders under these are watched with all their subfolders.
    recursive: Vec<PathBuf>,
    buffer: Vec<u8>,
}

impl Trees {
    pub fn new() -> io::Result<Trees> {
        Ok(Trees {
            inotify: Inotify::init()?,
            dirs: HashMap::new(),
            recursive: Vec::new(),
            buffer: vec![0; 64 * 1024],
        })
    }

    /// Watches `dir` itself (its entries, not its subfolders).
    pub fn watch_dir(&mut self, dir: &Path) -> io::Result<()> {
        let wd = self.inotify.watches().add(dir, MASK).map_err(|e| limit_error(dir, e))?;
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(())
    }

    /// Watches `root` and every folder below it (symbolic links are not followed: the
    /// link's own name is watched through its parent).
    pub fn watch_tree(&mut self, root: &Path) -> io::Result<()> {
        self.recursive.push(root.to_path_buf());
        self.add_below(root)
    }

    fn add_below(&mut self, root: &Path) -> io::Result<()> {
        for e in walkdir::WalkDir::new(root).follow_links(false) {
            let Ok(e) = e else { continue };
            if e.file_type().is_dir() {
                match self.watch_dir(e.path()) {
                    Ok(()) => {}
                    // Gone meanwhile, or not ours to read: nothing to watch there.
                    Err(err)
                        if matches!(
                            err.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                        ) => {}
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(())
    }

    /// Waits up to `timeout` for events; returns what changed (`Err` only for inotify
    /// itself failing). `overflow` is set when the kernel dropped events: anything may have
    /// changed.
    pub fn wait(&mut self, timeout: Duration, overflow: &mut bool) -> io::Result<Vec<Seen>> {
        let mut pfd = libc::pollfd { fd: self.inotify.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd that lives for the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n <= 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut new_dirs = Vec::new();
        let mut gone = Vec::new();
        let events = match self.inotify.read_events(&mut self.buffer) {
            Ok(ev) => ev,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        for ev in events {
            if ev.mask.contains(EventMask::Q_OVERFLOW) {
                *overflow = true;
                continue;
            }
            if ev.mask.contains(EventMask::IGNORED) {
                gone.push(ev.wd.clone());
                continue;
            }
            let Some(dir) = self.dirs.get(&ev.wd) else { continue };
            let path = match ev.name {
                Some(n) => dir.join(n),
                None => dir.clone(),
            };
            let is_dir = ev.mask.contains(EventMask::ISDIR);
            if is_dir && ev.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                new_dirs.push(path.clone());
            }
            out.push(Seen { path, dir: is_dir || ev.name.is_none() });
        }
        for wd in gone {
            self.dirs.remove(&wd);
        }
        for d in new_dirs {
            if self.recursive.iter().any(|r| d.starts_with(r)) {
                // Watched first, then listed: a file written between the two is then seen
                // by one or the other (listed first, one written before the watch was
                // added went unseen; the watch test caught it under load).
                self.add_below(&d)?;
                // A folder created (or moved in) with files already in it: each is a change.
                for e in walkdir::WalkDir::new(&d).min_depth(1).follow_links(false).into_iter().flatten() {
                    out.push(Seen { path: e.path().to_path_buf(), dir: e.file_type().is_dir() });
                }
            }
        }
        Ok(out)
    }
}

/// ENOSPC from inotify_add_watch means the per-user watch limit.
fn limit_error(dir: &Path, e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        io::Error::other(format!(
            "watching {}: the limit of inotify watches is reached (sysctl fs.inotify.max_user_watches; \
             one is needed per folder watched)",
            dir.display()
        ))
    } else {
        e
    }
}
