//! What this process last saw of items' history folders, so that keeping a snapshot (every
//! write) neither lists the item's folder (up to `versions.keep` entries) nor reads its
//! newest snapshot back: together about a third of what the history cost a write.
//!
//! What is known of a folder is used only while the folder's stamp (its modification and
//! change times, inode) is the one taken right after this process last changed it, and
//! only by a keep that no other keep of the same folder overlaps (callers hold the item's
//! lock, but a write whose request was dropped may still be finishing on the blocking
//! pool). Another process's change can still go unseen when it lands within the clock
//! tick of this process's own, or between that change and the stamp taken after it. Then:
//! a snapshot's timestamp may already be taken, which the create refuses (nothing is
//! overwritten) and the snapshot is decided again from the folder; a snapshot removed
//! unseen leaves one fewer than `versions.keep`, one added unseen is kept beyond it, and a
//! repeat of the content they hold is judged against what this process wrote, until the
//! folder is next read (a seen change, a restart, the bound below).

use std::collections::HashMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use cms_core::CoreResult;

use crate::error::io_error;

/// Item folders remembered at most; beyond it all but those being written are forgotten
/// (each is read again on its item's next write). About 2 MB at `versions.keep: 50`.
const KNOWN_FOLDERS: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct KnownHistories {
    folders: Mutex<HashMap<PathBuf, Folder>>,
}

/// One item's history folder as this process knows it.
#[derive(Debug, Default)]
struct Folder {
    known: Option<KnownHistory>,
    /// Keeps under way in the folder.
    in_flight: u32,
    /// Keeps begun in the folder (and forgettings), so that a keep that another overlapped
    /// records nothing.
    begun: u64,
}

/// A history folder's content as this process left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownHistory {
    /// The folder's stamp (see [`folder_stamp`]) just after this process changed it.
    pub folder: u64,
    /// The snapshots' timestamps, in any order.
    pub timestamps: Vec<i64>,
    /// SHA-256 of the newest snapshot's bytes.
    pub newest: Option<[u8; 32]>,
}

/// A keep under way, from [`KnownHistories::begin`].
#[derive(Debug)]
pub(crate) struct Keeping {
    /// What is known of the folder, when it can be trusted.
    pub known: Option<KnownHistory>,
    begun: u64,
    overlapped: bool,
}

impl KnownHistories {
    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Folder>> {
        // Every change under the lock is whole: a panic elsewhere cannot leave one half-done.
        self.folders.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a keep in `dir`, whose stamp is now `stamp` (`None`: no folder yet).
    pub fn begin(&self, dir: &Path, stamp: Option<u64>) -> Keeping {
        let mut folders = self.lock();
        if folders.len() >= KNOWN_FOLDERS && !folders.contains_key(dir) {
            folders.retain(|_, folder| folder.in_flight > 0);
        }
        let folder = folders.entry(dir.to_owned()).or_default();
        folder.begun += 1;
        folder.in_flight += 1;
        let overlapped = folder.in_flight > 1;
        let known = folder.known.take().filter(|known| !overlapped && Some(known.folder) == stamp);
        Keeping { known, begun: folder.begun, overlapped }
    }

    /// Ends a keep: what the folder holds now (`None` when it failed or cannot be told) is
    /// recorded if no other keep overlapped this one.
    pub fn end(&self, dir: &Path, keeping: Keeping, now: Option<KnownHistory>) {
        let mut folders = self.lock();
        let Some(folder) = folders.get_mut(dir) else { return };
        folder.in_flight = folder.in_flight.saturating_sub(1);
        let alone = !keeping.overlapped && folder.begun == keeping.begun;
        folder.known = now.filter(|_| alone);
        if folder.in_flight == 0 && folder.known.is_none() {
            folders.remove(dir);
        }
    }

    /// Forgets `dir` (a snapshot saved or removed one by one, outside a keep), and what a
    /// keep under way there would record.
    pub fn forget(&self, dir: &Path) {
        let mut folders = self.lock();
        if let Some(folder) = folders.get_mut(dir) {
            folder.known = None;
            folder.begun += 1;
        }
    }
}

/// The stamp of a history folder; `None` when it does not exist (yet).
pub(crate) fn folder_stamp(dir: &Path) -> CoreResult<Option<u64>> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => {
            let mut hasher = DefaultHasher::new();
            (meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec(), meta.ino(), meta.dev())
                .hash(&mut hasher);
            Ok(Some(hasher.finish()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(dir)(e)),
    }
}

pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(folder: u64) -> KnownHistory {
        KnownHistory { folder, timestamps: vec![1], newest: None }
    }

    /// What a keep beginning now would know (the keep ends at once, recording it again).
    fn peek(known: &KnownHistories, dir: &str, stamp: u64) -> Option<KnownHistory> {
        let keeping = known.begin(Path::new(dir), Some(stamp));
        let seen = keeping.known.clone();
        known.end(Path::new(dir), keeping, seen.clone());
        seen
    }

    #[test]
    fn knows_a_folder_while_its_stamp_holds() {
        let known = KnownHistories::default();
        let dir = Path::new("a");
        let keeping = known.begin(dir, Some(1));
        assert_eq!(keeping.known, None, "nothing known yet");
        known.end(dir, keeping, Some(history(7)));
        let keeping = known.begin(dir, Some(7));
        assert_eq!(keeping.known, Some(history(7)));
        known.end(dir, keeping, Some(history(9)));
        assert_eq!(peek(&known, "a", 9), Some(history(9)));
        let keeping = known.begin(dir, Some(9));
        known.end(dir, keeping, None);
        assert_eq!(peek(&known, "a", 9), None, "a failed keep records nothing");

        let keeping = known.begin(Path::new("b"), None);
        known.end(Path::new("b"), keeping, Some(history(7)));
        assert_eq!(peek(&known, "b", 8), None, "another stamp: changed since");
        assert_eq!(peek(&known, "b", 7), None, "a folder seen changed is read again");
    }

    #[test]
    fn keeps_that_overlap_record_nothing() {
        let known = KnownHistories::default();
        let dir = Path::new("a");
        let first = known.begin(dir, Some(1));
        known.end(dir, first, Some(history(1)));
        let first = known.begin(dir, Some(1));
        assert!(first.known.is_some());
        let second = known.begin(dir, Some(1));
        assert_eq!(second.known, None, "the first is still under way");
        known.end(dir, first, Some(history(2)));
        known.end(dir, second, Some(history(3)));
        assert_eq!(peek(&known, "a", 2), None);
        assert_eq!(peek(&known, "a", 3), None);

        // Forgotten while under way: the keep records nothing either.
        let alone = known.begin(Path::new("b"), None);
        known.forget(Path::new("b"));
        known.end(Path::new("b"), alone, Some(history(4)));
        assert_eq!(peek(&known, "b", 4), None);
    }

    #[test]
    fn forgets_every_idle_folder_beyond_its_bound() {
        let known = KnownHistories::default();
        let busy = known.begin(Path::new("busy"), None);
        for n in 1..KNOWN_FOLDERS {
            let dir = PathBuf::from(n.to_string());
            let keeping = known.begin(&dir, None);
            known.end(&dir, keeping, Some(history(1)));
        }
        assert_eq!(known.lock().len(), KNOWN_FOLDERS);
        let keeping = known.begin(Path::new("one more"), None);
        assert_eq!(known.lock().len(), 2, "the one under way stays");
        known.end(Path::new("one more"), keeping, Some(history(1)));
        known.end(Path::new("busy"), busy, Some(history(5)));
        assert_eq!(peek(&known, "busy", 5), Some(history(5)));
        assert_eq!(peek(&known, "1", 1), None, "forgotten");
    }
}
