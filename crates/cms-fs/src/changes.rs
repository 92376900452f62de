//! The site folder's change feed: the [`FolderWatcher`] on every collection folder and on
//! `.cms/` (for the license), translated into the core's [`StorageChange`]s.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{ChangeFeed, ChangeOrigin, ChangeSource, StorageChange};
use cms_core::{CoreError, CoreResult};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::STATE_DIR;
use crate::license::LICENSE_FILE;
use crate::sweep::{StagingSweep, StagingSweeper};
use crate::watch::{FolderWatcher, WatchEvent};

/// A batch goes out this long after the last event of a burst...
const QUIET: Duration = Duration::from_millis(50);
/// ...or this long after its first event, whichever comes first: an outside edit is seen
/// well within a second even while a `git pull` keeps writing.
const MAX_DELAY: Duration = Duration::from_millis(300);

/// Reports the changes other programs make in the site folder.
#[derive(Debug, Clone)]
pub struct FsChangeSource {
    site: PathBuf,
}

impl FsChangeSource {
    pub fn new(site: impl Into<PathBuf>) -> Self {
        Self { site: site.into() }
    }
}

impl ChangeSource for FsChangeSource {
    fn subscribe(&self, collections: &[Collection]) -> CoreResult<Option<Box<dyn ChangeFeed>>> {
        let site = std::path::absolute(&self.site).map_err(|e| CoreError::internal("the site folder", e))?;
        let mut folders: Vec<PathBuf> = collections.iter().map(|c| site.join(&c.path)).collect();
        folders.push(site.join(STATE_DIR));
        // A crash during a write leaves a staging file beside its target. Swept: the
        // collections, the snapshot folder (a snapshot is as large as an index), `.cms/`
        // itself (accounts, webhook log) and the editor's sessions: once the grace period has
        // passed after start-up, and every few minutes while the feed lives (see `sweep.rs`).
        // Each folder once: a site's languages share theirs.
        let mut swept: Vec<PathBuf> = Vec::with_capacity(folders.len() + 2);
        for folder in folders[..collections.len()].iter().cloned().chain([
            site.join(STATE_DIR),
            site.join(STATE_DIR).join(crate::snapshots::SNAPSHOT_DIR),
            site.join(STATE_DIR).join(crate::sessions::SESSIONS_DIR),
        ]) {
            if !swept.contains(&folder) {
                swept.push(folder);
            }
        }
        let sweeper = StagingSweep::new(swept).start();
        let (watcher, batches) = FolderWatcher::start(folders, QUIET, MAX_DELAY)
            .map_err(|e| CoreError::internal("watching the site folder for changes", e))?;
        Ok(Some(Box::new(FsChangeFeed {
            _watcher: watcher,
            _sweeper: sweeper,
            batches,
            collections: collections.len(),
        })))
    }
}

struct FsChangeFeed {
    /// Watching stops when the feed is dropped.
    _watcher: FolderWatcher,
    /// So do the sweeps after the first.
    _sweeper: StagingSweeper,
    batches: UnboundedReceiver<Vec<WatchEvent>>,
    /// Folders `0..collections` are the collections; the next one is `.cms/`.
    collections: usize,
}

#[async_trait]
impl ChangeFeed for FsChangeFeed {
    async fn next_batch(&mut self) -> Option<Vec<StorageChange>> {
        let batch = self.batches.recv().await?;
        Some(batch.into_iter().filter_map(|event| self.translate(event)).collect())
    }
}

impl FsChangeFeed {
    fn translate(&self, event: WatchEvent) -> Option<StorageChange> {
        match event {
            WatchEvent::Changed { folder, names } if folder < self.collections => {
                Some(StorageChange::Items { collection: folder, names, origin: ChangeOrigin::Outside })
            }
            WatchEvent::Rescan { folder } if folder < self.collections => {
                Some(StorageChange::Rescan { collection: folder })
            }
            WatchEvent::Changed { names, .. } => {
                names.iter().any(|n| n == LICENSE_FILE).then_some(StorageChange::License)
            }
            WatchEvent::Rescan { .. } => Some(StorageChange::License),
        }
    }
}
