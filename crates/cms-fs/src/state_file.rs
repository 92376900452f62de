//! Private state files under `.cms/`: a YAML list of rows, read within the state budgets
//! and written atomically with mode 0600.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cms_core::CoreResult;
use cms_core::codec::{self, YamlLimits};
use cms_core::ports::FileStamp;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic;
use crate::error::{FsError, io_error};
use crate::stamp;

/// The rows of a state file; a missing or empty file has none. A damaged file is
/// `Corrupt`, naming the file.
pub fn read_rows<T: DeserializeOwned>(path: &Path) -> CoreResult<Vec<T>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(path)(e)),
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    codec::from_yaml(&text, YamlLimits::STATE)
        .map_err(|e| FsError::State { path: path.to_owned(), message: e.to_string() }.into())
}

/// Replaces a state file with `rows`, atomically.
pub fn write_rows<T: Serialize>(path: &Path, rows: &[T]) -> CoreResult<()> {
    let text = if rows.is_empty() { "[]\n".to_owned() } else { codec::to_yaml(&rows)? };
    atomic::write_private(path, text.as_bytes()).map_err(io_error(path))
}

/// A state file's rows as last read, with the stamp of the file they came from: a lookup
/// costs one `stat` while the file is unchanged and sees any change (the CLI's rename, an
/// edit in place) on the next lookup, so a revoked key stops working at once.
///
/// A file modified within the last [`RACY`] is read every time and not kept: on a file
/// system with coarse timestamps, an edit in place of the same size within the same tick
/// would leave the stamp as it was (git's "racily clean" files).
#[derive(Debug)]
pub struct CachedRows<T> {
    path: PathBuf,
    kept: Mutex<Option<(FileStamp, Arc<Vec<T>>)>>,
}

/// What a state file's `stat` tells of the rows kept.
enum Look<T> {
    /// Unchanged since they were read.
    Kept(Arc<Vec<T>>),
    /// No file: no rows.
    Missing,
    /// Changed or never read, and old enough to be kept under this stamp once read.
    Settled(FileStamp),
    /// Modified within [`RACY`]: read, not kept.
    Fresh,
}

/// How long after its last modification a file's stamp is trusted to show every change.
const RACY: Duration = Duration::from_secs(2);

impl<T: DeserializeOwned> CachedRows<T> {
    pub fn new(path: PathBuf) -> Self {
        Self { path, kept: Mutex::new(None) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rows, read again only when the file's stamp changed. The `stat` comes before
    /// the read: a change made after it gives a new stamp, so it can never be kept under
    /// the old one.
    pub fn read(&self) -> CoreResult<Arc<Vec<T>>> {
        let settled = match self.look()? {
            Look::Kept(rows) => return Ok(rows),
            Look::Missing => return Ok(Arc::new(Vec::new())),
            Look::Settled(stamp) => Some(stamp),
            Look::Fresh => None,
        };
        let rows = Arc::new(read_rows(&self.path)?);
        if let Some(stamp) = settled {
            *self.lock() = Some((stamp, Arc::clone(&rows)));
        }
        Ok(rows)
    }

    /// The rows when answering takes no read of the file: the kept ones while the file is
    /// unchanged, none when it is missing. `None` when the file must be read ([`Self::read`],
    /// on the blocking pool). Costs one `stat`, made on the caller's thread: the file's
    /// inode, looked up by every request that carries a key or a session, stays in the
    /// kernel's cache, and a `stat` there costs a microsecond or two where a hop to the
    /// blocking pool and back costs two thread wake-ups (measured in docs/performance.md).
    pub fn kept_now(&self) -> Option<Arc<Vec<T>>> {
        match self.look() {
            Ok(Look::Kept(rows)) => Some(rows),
            Ok(Look::Missing) => Some(Arc::new(Vec::new())),
            // An error is reported by the read that follows.
            Ok(Look::Settled(_) | Look::Fresh) | Err(_) => None,
        }
    }

    /// What the file's `stat` says of the rows kept. The `stat` comes before any read: a
    /// change made after it gives a new stamp, so it can never be kept under the old one.
    fn look(&self) -> CoreResult<Look<T>> {
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                *self.lock() = None;
                return Ok(Look::Missing);
            }
            Err(e) => return Err(io_error(&self.path)(e)),
        };
        let stamp = stamp::from_metadata("", &meta);
        let settled = meta
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_some_and(|age| age >= RACY);
        if !settled {
            *self.lock() = None;
            return Ok(Look::Fresh);
        }
        match self.lock().as_ref() {
            Some((kept, rows)) if *kept == stamp => Ok(Look::Kept(Arc::clone(rows))),
            _ => Ok(Look::Settled(stamp)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(FileStamp, Arc<Vec<T>>)>> {
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` and dates the file back past [`RACY`], so that it may be kept.
    fn write_settled(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        let past = SystemTime::now() - Duration::from_secs(60);
        fs::File::options().write(true).open(path).unwrap().set_modified(past).unwrap();
    }

    fn rows_file() -> (tempfile::TempDir, CachedRows<String>) {
        let dir = tempfile::tempdir().unwrap();
        let rows = CachedRows::new(dir.path().join("rows.yaml"));
        (dir, rows)
    }

    #[test]
    fn an_unchanged_file_is_kept_and_a_missing_one_has_no_rows() {
        let (_dir, rows) = rows_file();
        assert!(rows.read().unwrap().is_empty());
        write_settled(rows.path(), "- a\n- b\n");
        let first = rows.read().unwrap();
        assert_eq!(*first, ["a", "b"]);
        assert!(Arc::ptr_eq(&first, &rows.read().unwrap()), "read again though unchanged");
        fs::remove_file(rows.path()).unwrap();
        assert!(rows.read().unwrap().is_empty());
    }

    #[test]
    fn a_rename_over_the_file_and_an_edit_in_place_of_the_same_size_are_seen() {
        let (dir, rows) = rows_file();
        write_settled(rows.path(), "- a\n");
        assert_eq!(*rows.read().unwrap(), ["a"]);
        let staged = dir.path().join("staged");
        write_settled(&staged, "- b\n");
        fs::rename(&staged, rows.path()).unwrap();
        assert_eq!(*rows.read().unwrap(), ["b"]);
        // Same size, same inode: the change time moves, and the fresh file is not kept.
        fs::write(rows.path(), "- c\n").unwrap();
        assert_eq!(*rows.read().unwrap(), ["c"]);
        fs::write(rows.path(), "- d\n").unwrap();
        assert_eq!(*rows.read().unwrap(), ["d"]);
        // Dated back to its old modification time, the ctime still tells the edit.
        write_settled(rows.path(), "- e\n");
        assert_eq!(*rows.read().unwrap(), ["e"]);
    }

    #[test]
    fn a_damaged_file_is_an_error_and_its_repair_is_seen() {
        let (_dir, rows) = rows_file();
        fs::write(rows.path(), "- [unclosed\n").unwrap();
        assert!(rows.read().is_err());
        fs::write(rows.path(), "- fixed\n").unwrap();
        assert_eq!(*rows.read().unwrap(), ["fixed"]);
    }
}
