//! Atomic file writes: readers and crashes see the old content or the new, never a part.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use tempfile::NamedTempFile;

/// What to do when the target exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Replace,
    /// Fail with `io::ErrorKind::AlreadyExists`.
    Keep,
}

/// Writes `bytes` to `path` through a temporary file in the same folder: write, fsync,
/// rename (or hard-link for [`Existing::Keep`]), then fsync the folder.
pub fn write(path: &Path, bytes: &[u8], existing: Existing) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("a file path needs a parent folder"))?;
    fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new().prefix(".cms-tmp-").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    persist(temp, path, existing)?;
    sync_dir(dir)
}

fn persist(temp: NamedTempFile, path: &Path, existing: Existing) -> io::Result<()> {
    let result = match existing {
        Existing::Replace => temp.persist(path).map(drop),
        Existing::Keep => temp.persist_noclobber(path).map(drop),
    };
    result.map_err(|e| e.error)
}

/// Makes a rename durable: fsync of the folder that holds the entry.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replaces_and_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/a.md");
        write(&path, b"one", Existing::Keep).unwrap();
        let err = write(&path, b"two", Existing::Keep).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write(&path, b"three", Existing::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files are left behind");
    }
}
