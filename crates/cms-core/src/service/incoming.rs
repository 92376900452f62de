//! Changes to item files that come from outside the facade and must be written into the
//! store: a commit pulled from a git remote (`cms-git`). Each is written under the item's
//! lock, only if the file is still what the source last saw (so that a write made through
//! the facade meanwhile is never overwritten), with the version it replaces kept in the
//! history, and recorded as an outside edit: the webhooks and the event stream announce it
//! (unless `webhooks.outside_edits: false`), and the git committer leaves it alone.

use super::Cms;
use super::index::Why;
use crate::collection::Collection;
use crate::error::{CoreError, CoreResult};
use crate::policy::{Caller, Operation};
use crate::ports::{ChangeOrigin, StoredFile};

/// What became of an incoming change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// Written, and recorded.
    Applied,
    /// The file already held it.
    Unchanged,
    /// The file is no longer what the source last saw (a write made meanwhile): nothing
    /// was written.
    Diverged,
}

impl Cms {
    /// Writes `incoming` (`None`: removes the file) as item file `filename` of
    /// `collection`, if the file is still `expected` (`None`: absent). `author` is who made
    /// the change, for the version it replaces.
    pub async fn apply_incoming(
        &self,
        caller: Caller<'_>,
        collection: &Collection,
        filename: &str,
        expected: Option<&[u8]>,
        incoming: Option<&[u8]>,
        author: &str,
    ) -> CoreResult<Incoming> {
        self.authorize(caller, Operation::ApplyIncoming).await?;
        let name = collection.naming.classify(filename).map_err(CoreError::invalid)?;
        let _guard = self.item_locks.lock(collection.index, name.slug()).await;
        let current = self.ports.content.read(collection, &name).await?;
        if current.as_ref().map(|file| file.bytes.as_slice()) != expected {
            return Ok(Incoming::Diverged);
        }
        let why = || Why::found(ChangeOrigin::Outside);
        let written = match (current, incoming) {
            (current, incoming) if current.as_ref().map(|file| file.bytes.as_slice()) == incoming => {
                return Ok(Incoming::Unchanged);
            }
            (Some(file), Some(bytes)) => {
                let stamp = self.snapshot_and_replace(collection, &name, &file, bytes, author).await;
                stamp.map(|stamp| {
                    self.index_written(collection, &name, &StoredFile { bytes: bytes.to_vec(), stamp }, why())
                })
            }
            (None, Some(bytes)) => {
                let stamp = self.ports.content.create(collection, &name, bytes).await;
                stamp.map(|stamp| {
                    self.index_written(collection, &name, &StoredFile { bytes: bytes.to_vec(), stamp }, why())
                })
            }
            (Some(file), None) => {
                let deleted = self.snapshot_and_delete(collection, &name, &file, author).await;
                if deleted.is_ok() {
                    self.index_removed(collection, &name, why());
                    self.end_preview_links(collection, name.slug()).await;
                }
                deleted
            }
            (None, None) => return Ok(Incoming::Unchanged),
        };
        match written {
            Ok(()) => {
                self.event_log.publish_pending().await;
                Ok(Incoming::Applied)
            }
            // Changed behind the lock (another program): as for any later write.
            Err(CoreError::Stale(_) | CoreError::Conflict(_)) => Ok(Incoming::Diverged),
            Err(other) => Err(other),
        }
    }
}
