//! Removal of the staging files a crash left behind.

use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::atomic::STAGING_PREFIX;

/// Staging files younger than this are left alone. Another process (the CLI, a second
/// server) may be writing one right now: a write stages for milliseconds (write, fsync,
/// rename), but fsync on a busy disk can take seconds, so the margin is generous, while a
/// crash's leftovers found at start-up are long older.
const MIN_AGE: Duration = Duration::from_secs(10);

/// Removes the staging files (`.cms-tmp-*`, regular files only: never symlinks or folders)
/// left in `folder` by a crash, if their modification time is at least 10 s old (see
/// [`MIN_AGE`]). Returns how many went; a missing folder is `Ok(0)`.
pub fn sweep_staging(folder: &Path) -> io::Result<usize> {
    sweep(folder, MIN_AGE)
}

fn sweep(folder: &Path, min_age: Duration) -> io::Result<usize> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let now = SystemTime::now();
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
        match fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
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
        assert_eq!(sweep(dir.path(), Duration::ZERO).unwrap(), 1);
        assert!(fs::symlink_metadata(dir.path().join(".cms-tmp-link")).is_ok());
        assert!(target.exists(), "nor what they point to");
        assert!(dir.path().join(".cms-tmp-folder").is_dir());
    }
}
