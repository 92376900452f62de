//! Removal of the staging files a crash left behind: once the start-up is over and the
//! grace period has passed, and every few minutes after.
//!
//! A staging file (`.cms-tmp-*`, see [`crate::atomic`]) lives from the moment a write
//! creates it until it is renamed into place, milliseconds usually. One that a crash cut
//! short stays. Two guards keep the sweep off the staging files of live writes, of this
//! process or another (the CLI, a second server on the same folder):
//!
//! - **The grace period** ([`MIN_AGE`]): a file modified less than 10 s ago is left alone.
//!   A write stages for milliseconds (write, fsync, rename), but fsync on a busy disk can
//!   take seconds, so the margin is generous, while a crash's leftovers are soon older.
//! - **The writer's lock**: a write holds a shared `flock` on its staging file from just
//!   after creating it until the file is renamed and closed, and the sweep removes a file
//!   only while it holds the exclusive lock itself. A crash releases the lock with the
//!   process; a write stalled in fsync for longer than the grace keeps it. (A writer of an
//!   older build, which takes no lock, is still covered by the grace period.)
//!
//! The first pass, at [`AFTER_START`], removes what a crash left before the server started
//! (even a crash just before: by then its files are past the grace period), within the
//! first minute; later passes, every [`SWEEP_EVERY`], remove what other processes' crashes
//! leave while it runs. No pass runs as the server starts: sweeping lists every folder,
//! which at 300,000 files took 0.4 s on the start-up's path, and staging files are hidden
//! from the index's own listing, so nothing waits for them to go.

use std::fs::{self, File, TryLockError};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, SystemTime};

use crate::atomic::STAGING_PREFIX;

/// Staging files modified less than this long ago are left alone (see the module).
pub const MIN_AGE: Duration = Duration::from_secs(10);

/// The first pass, after start-up: by then every staging file there at the start is
/// past the grace period (with a second of margin for coarse file times).
pub const AFTER_START: Duration = Duration::from_secs(MIN_AGE.as_secs() + 1);

/// The passes after that.
pub const SWEEP_EVERY: Duration = Duration::from_secs(5 * 60);

/// Removes the staging files (`.cms-tmp-*`, regular files only: never symlinks or folders)
/// left in `folder` by a crash: those at least [`MIN_AGE`] old that no live write holds.
/// Returns how many went; a missing folder is `Ok(0)`.
pub fn sweep_staging(folder: &Path) -> io::Result<usize> {
    sweep_staging_at(folder, SystemTime::now())
}

/// [`sweep_staging`] as at `now` (ages are counted from it).
pub fn sweep_staging_at(folder: &Path, now: SystemTime) -> io::Result<usize> {
    sweep(folder, now, MIN_AGE)
}

fn sweep(folder: &Path, now: SystemTime, min_age: Duration) -> io::Result<usize> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        if !entry.file_name().as_encoded_bytes().starts_with(STAGING_PREFIX.as_bytes()) {
            continue;
        }
        // DirEntry::metadata does not follow symlinks.
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // Renamed into place meanwhile.
            Err(e) => return Err(e),
        };
        // A modification time in the future (clock skew) counts as young.
        let old_enough = now.duration_since(meta.modified()?).is_ok_and(|age| age >= min_age);
        if !meta.is_file() || !old_enough {
            continue;
        }
        // Held while the name goes, so that no write can take the file up in between.
        let Some(_unused) = unused(&entry.path(), &meta)? else { continue };
        match fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// The file at `path`, locked exclusively, when it is still the one `meta` describes and
/// no live write holds it; `None` otherwise (held, gone, or replaced meanwhile).
fn unused(path: &Path, meta: &fs::Metadata) -> io::Result<Option<File>> {
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        // Gone meanwhile, or not ours to read (left alone, as it always was).
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied) => {
            return Ok(None);
        }
        // A symlink swapped in meanwhile (ELOOP): not ours to judge.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None), // A live write holds it.
        Err(TryLockError::Error(e)) => return Err(e),
    }
    let now = file.metadata()?;
    let same = now.is_file() && (now.dev(), now.ino()) == (meta.dev(), meta.ino());
    Ok(same.then_some(file))
}

/// The folders whose staging files are swept, and the log lines of each pass.
#[derive(Debug, Clone)]
pub struct StagingSweep {
    folders: Vec<PathBuf>,
}

impl StagingSweep {
    pub fn new(folders: Vec<PathBuf>) -> Self {
        Self { folders }
    }

    /// One pass over every folder as at `now`; returns how many files went. Problems are
    /// logged, not returned: a folder that cannot be swept now may be next time.
    pub fn sweep_at(&self, now: SystemTime) -> usize {
        let mut total = 0;
        for folder in &self.folders {
            match sweep_staging_at(folder, now) {
                Ok(0) => {}
                Ok(removed) => {
                    total += removed;
                    tracing::info!(folder = %folder.display(), removed, "removed staging files a crash left");
                }
                Err(error) => {
                    tracing::warn!(folder = %folder.display(), %error, "cannot sweep staging files")
                }
            }
        }
        total
    }

    /// The passes: after [`AFTER_START`], then every [`SWEEP_EVERY`]. `wait` waits the given time and answers whether to go on; `now`
    /// is the clock the ages are counted by.
    pub fn run(&self, mut wait: impl FnMut(Duration) -> bool, now: impl Fn() -> SystemTime) {
        let mut delay = AFTER_START;
        while wait(delay) {
            self.sweep_at(now());
            delay = SWEEP_EVERY;
        }
    }

    /// [`StagingSweep::run`] on a thread of its own until the answer is dropped.
    pub fn start(self) -> StagingSweeper {
        let (stop, stopped) = mpsc::channel::<()>();
        let spawned = thread::Builder::new().name("cms-sweep".into()).spawn(move || {
            let wait = |delay| matches!(stopped.recv_timeout(delay), Err(RecvTimeoutError::Timeout));
            self.run(wait, SystemTime::now);
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the staging sweep; leftovers stay until a sweep runs");
        }
        StagingSweeper { _stop: stop }
    }
}

/// The sweep's thread, which stops when this is dropped.
#[derive(Debug)]
pub struct StagingSweeper {
    _stop: Sender<()>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_and_folders_are_never_swept() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("keep");
        fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(".cms-tmp-link")).unwrap();
        fs::create_dir(dir.path().join(".cms-tmp-folder")).unwrap();
        fs::write(dir.path().join(".cms-tmp-file"), "x").unwrap();
        assert_eq!(sweep(dir.path(), SystemTime::now(), Duration::ZERO).unwrap(), 1);
        assert!(fs::symlink_metadata(dir.path().join(".cms-tmp-link")).is_ok());
        assert!(target.exists(), "nor what they point to");
        assert!(dir.path().join(".cms-tmp-folder").is_dir());
    }
}
