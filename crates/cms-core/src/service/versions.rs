//! Item version history: every write that replaces content snapshots it first.

use super::WriteOutcome;
use crate::changes::ChangeKind;
use crate::collection::Collection;
use crate::document::ItemDocument;
use crate::error::{CoreError, CoreResult};
use crate::item_file::{Precondition, parse_bytes};
use crate::policy::{Caller, Operation};
use crate::ports::{FileStamp, SavedVersion, StoredFile, VersionStamp, VersionToSave};
use crate::service::Cms;
use crate::service::index::Why;
use crate::service::items::{check, item_not_found, outcome};
use crate::slug::{ItemFilename, ItemRef};

/// An item's history, newest first, and its current state (`None` once deleted).
#[derive(Debug, Clone)]
pub struct VersionList {
    pub filename: String,
    pub versions: Vec<VersionStamp>,
    /// `(modified, size)` of the current file.
    pub current: Option<(i64, u64)>,
}

/// One historical version in source form.
#[derive(Debug, Clone)]
pub struct VersionContent {
    pub stamp: VersionStamp,
    pub doc: ItemDocument,
}

/// A collection's deleted items, one page of them in name order: the items whose file is
/// gone but whose history remains.
#[derive(Debug, Clone)]
pub struct DeletedItems {
    pub items: Vec<DeletedItem>,
    /// Deleted items in the collection, on every page.
    pub total: usize,
}

/// One deleted item, as its newest version (the content the delete kept) tells it.
#[derive(Debug, Clone)]
pub struct DeletedItem {
    pub filename: String,
    /// `fm.title` of the newest version, else the filename.
    pub title: String,
    /// The newest version: when the item was deleted (or last changed before that).
    pub newest: VersionStamp,
}

/// Names one version of an item's history: the timestamp the versions list gives it
/// (Unix seconds, never negative). Adapters parse what they received into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VersionId(i64);

impl VersionId {
    /// A version as sent in text (a path segment).
    pub fn parse(raw: &str) -> CoreResult<Self> {
        raw.parse::<i64>().ok().filter(|t| *t >= 0).map(Self).ok_or_else(|| refused(raw))
    }

    /// A version as sent as a number.
    pub fn new(timestamp: i64) -> CoreResult<Self> {
        if timestamp >= 0 { Ok(Self(timestamp)) } else { Err(refused(&timestamp.to_string())) }
    }

    pub fn timestamp(self) -> i64 {
        self.0
    }
}

fn refused(raw: &str) -> CoreError {
    CoreError::invalid(format!("version must be an integer timestamp from the versions list, got {raw:?}"))
}

impl Cms {
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn list_versions(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item: &ItemRef,
    ) -> CoreResult<VersionList> {
        self.authorize(caller, Operation::ReadHistory).await?;
        let (name, current) = self.resolve_history(collection, item).await?;
        let versions = self.versions_newest_first(collection, &name).await?;
        Ok(VersionList {
            filename: name.as_str().to_owned(),
            versions,
            current: current.map(|file| (file.stamp.modified, file.stamp.size)),
        })
    }

    /// One page (from 1) of the collection's deleted items, `per_page` to a page, in name
    /// order. The cost is one listing of the collection's histories and, for the page's
    /// items only, one listing of each history and one read of its newest version: never
    /// a file per item of the collection.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn deleted_items(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        page: usize,
        per_page: usize,
    ) -> CoreResult<DeletedItems> {
        self.authorize(caller, Operation::ReadHistory).await?;
        let with_history = self.ports.versions.items_with_history(collection).await?;
        let mut deleted: Vec<ItemFilename> = {
            let index = self.index(collection).await?;
            with_history
                .iter()
                .filter_map(|filename| collection.naming.parse(filename))
                .filter(|name| index.stamp(name.as_str()).is_none())
                .collect()
        };
        deleted.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        let total = deleted.len();
        let mut items = Vec::new();
        for name in deleted.into_iter().skip(page.saturating_sub(1) * per_page).take(per_page) {
            let versions = &self.ports.versions;
            // Removed meanwhile (another server, by hand): the page is one shorter.
            let Some(timestamp) = versions.version_timestamps(collection, &name).await?.into_iter().max()
            else {
                continue;
            };
            let Some(bytes) = versions.read_version(collection, &name, timestamp).await? else { continue };
            let author = versions.version_author(collection, &name, timestamp).await?;
            let newest = VersionStamp { timestamp, size: bytes.len() as u64, author, commit: None };
            let title = parse_bytes(&name, &bytes)
                .ok()
                .and_then(|doc| doc.fm.get("title").and_then(|t| t.as_str()).map(str::to_owned))
                .filter(|title| !title.trim().is_empty())
                .unwrap_or_else(|| name.as_str().to_owned());
            items.push(DeletedItem { filename: name.as_str().to_owned(), title, newest });
        }
        Ok(DeletedItems { items, total })
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_version(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item: &ItemRef,
        version: VersionId,
    ) -> CoreResult<VersionContent> {
        self.authorize(caller, Operation::ReadHistory).await?;
        let timestamp = version.timestamp();
        let (name, _) = self.resolve_history(collection, item).await?;
        let bytes = self.version_bytes(collection, &name, timestamp).await?;
        let doc = parse_bytes(&name, &bytes)?;
        let author = self.ports.versions.version_author(collection, &name, timestamp).await?;
        Ok(VersionContent {
            stamp: VersionStamp { timestamp, size: bytes.len() as u64, author, commit: None },
            doc,
        })
    }

    /// Makes a historical version current. The content it replaces is snapshotted first,
    /// so a restore is itself undoable; a deleted item comes back.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn restore_version(
        &self,
        caller: impl Into<Caller<'_>>,
        collection: &Collection,
        item_ref: &ItemRef,
        version: VersionId,
        if_match: Option<&Precondition>,
    ) -> CoreResult<(WriteOutcome, i64)> {
        let caller = caller.into();
        self.authorize(caller, Operation::RestoreVersion).await?;
        let timestamp = version.timestamp();
        let _guard = self.item_locks.lock(collection.index, &self.lock_key(collection, item_ref).await).await;
        let (name, current) = self.resolve_history(collection, item_ref).await?;
        let bytes = self.version_bytes(collection, &name, timestamp).await?;
        if collection.model.is_some() {
            // An old version must fit the model as it is now, like any other write.
            let mut old = crate::item_file::parse_bytes(&name, &bytes)?;
            self.check_model(collection, &mut old.fm, false).await?;
        }
        // A restore is an update, whether or not the item was deleted (the spec's
        // `file.updated`: "restored from version history").
        let why = || Why::write(caller, ChangeKind::Updated);
        match current {
            Some(file) => {
                check(if_match, &file.bytes)?;
                let stamp =
                    self.snapshot_and_replace(collection, &name, &file, &bytes, caller.author()).await?;
                self.index_written(collection, &name, &StoredFile { bytes: bytes.clone(), stamp }, why());
            }
            None => {
                // The item is deleted: there is no current ETag for If-Match to name.
                if matches!(if_match, Some(Precondition::Tags(_))) {
                    return Err(CoreError::PreconditionFailed(format!(
                        "If-Match names a current version, but item {:?} is deleted",
                        name.as_str()
                    )));
                }
                // Bringing it back must not give the collection two items with one slug.
                if let Some(other) = self.file_with_slug(collection, name.slug()).await? {
                    return Err(CoreError::Conflict(format!(
                        "cannot restore {}: item {} now uses the slug {:?}",
                        name.as_str(),
                        other.as_str(),
                        name.slug()
                    )));
                }
                let stamp = self.ports.content.create(collection, &name, &bytes).await?;
                self.index_written(collection, &name, &StoredFile { bytes: bytes.clone(), stamp }, why());
            }
        }
        self.event_log.publish_pending().await;
        Ok((outcome(collection, &name, Some(&bytes)), timestamp))
    }

    /// Stores the file's bytes as the newest snapshot of an item unless the newest one is
    /// identical, then drops the oldest beyond `versions.keep`, and replaces the file with
    /// `bytes` if it is still the one read. Callers hold the item's write lock. A version
    /// kept through the item's own storage changes its stamp, which the replace then
    /// expects, and the store hears when the replace fails (see
    /// [`crate::ports::VersionStore::save_current`]).
    pub(super) async fn snapshot_and_replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        bytes: &[u8],
        author: &str,
    ) -> CoreResult<FileStamp> {
        let kept = self.snapshot(collection, name, file, author).await?;
        let expected = kept.item_stamp.as_ref().unwrap_or(&file.stamp);
        let replaced = self.ports.content.replace(collection, name, bytes, expected).await;
        if replaced.is_err() {
            self.write_failed(collection, name, &kept, file).await;
        }
        replaced
    }

    /// [`Self::snapshot_and_replace`] for a delete.
    pub(super) async fn snapshot_and_delete(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        author: &str,
    ) -> CoreResult<()> {
        let kept = self.snapshot(collection, name, file, author).await?;
        let deleted = self.ports.content.delete(collection, name).await;
        if deleted.is_err() {
            self.write_failed(collection, name, &kept, file).await;
        }
        deleted
    }

    async fn snapshot(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        file: &StoredFile,
        author: &str,
    ) -> CoreResult<SavedVersion> {
        let snapshot = VersionToSave {
            bytes: &file.bytes,
            now: self.now().unix_timestamp(),
            keep: self.keep_versions,
            author: Some(author),
        };
        self.ports.versions.save_current(collection, name, snapshot).await
    }

    async fn write_failed(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        kept: &SavedVersion,
        file: &StoredFile,
    ) {
        if kept.timestamp.is_none() {
            return;
        }
        // The write's own error is the one to answer (a stale one is retried, and the
        // retry's version, a repeat of this one, parts the two by its rename).
        if let Err(error) = self.ports.versions.write_failed(collection, name, kept, &file.bytes).await {
            tracing::error!(item = name.as_str(), %error, "a kept version still shares the item's file");
        }
    }

    async fn versions_newest_first(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let mut versions = self.ports.versions.list_versions(collection, name).await?;
        versions.sort_by_key(|v| std::cmp::Reverse(v.timestamp));
        Ok(versions)
    }

    async fn version_bytes(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Vec<u8>> {
        self.ports.versions.read_version(collection, name, timestamp).await?.ok_or_else(|| {
            CoreError::not_found(format!(
                "no version {timestamp} of item {:?} in collection {:?}",
                name.as_str(),
                collection.slug
            ))
        })
    }

    /// The item a history route names: the current file if there is one, else a deleted
    /// item that left a history.
    async fn resolve_history(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
    ) -> CoreResult<(ItemFilename, Option<StoredFile>)> {
        match self.load(collection, item_ref).await {
            Ok((name, file)) => return Ok((name, Some(file))),
            Err(CoreError::NotFound(_)) => {}
            Err(other) => return Err(other),
        }
        let mut deleted: Vec<ItemFilename> = self
            .ports
            .versions
            .items_with_history(collection)
            .await?
            .iter()
            .filter_map(|filename| collection.naming.parse(filename))
            .filter(|name| item_ref.matches(name))
            .collect();
        deleted.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        deleted
            .into_iter()
            .next()
            .map(|name| (name, None))
            .ok_or_else(|| item_not_found(collection, item_ref))
    }
}

#[cfg(test)]
mod tests {
    use super::VersionId;

    #[test]
    fn versions_are_integer_timestamps() {
        assert_eq!(VersionId::parse("1767225600").unwrap().timestamp(), 1_767_225_600);
        for bad in ["", "abc", "-1", "1.5", "2026-01-01"] {
            assert!(VersionId::parse(bad).is_err(), "{bad}");
        }
        assert!(VersionId::new(-1).unwrap_err().to_string().contains("got \"-1\""));
    }
}
