use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{FileStamp, SavePlan, SavedVersion, VersionStamp, VersionStore, VersionToSave};
use cms_core::slug::ItemFilename;
use cms_core::version_authors::{self, AUTHORS_FILE};
use cms_core::{CoreError, CoreResult};

use crate::atomic;
use crate::blocking;
use crate::content::FsContentStore;
use crate::error::io_error;
use crate::history_memo::{KnownHistories, KnownHistory, digest, folder_stamp};
use crate::stamp;

/// History under `.cms/versions/<collection path>/<item filename>/<timestamp>.md`: inside
/// the private state folder, so snapshots are never listed or served as items. Who made the
/// change that kept a version is a line appended to the folder's `authors` file
/// ([`cms_core::version_authors`]): after the snapshot, without an fsync of its own (a
/// crash right after a write may leave that version's author unknown, never its bytes),
/// and without a new file per write (new inodes are what a write costs most here; see
/// `docs/performance.md`). The file is rewritten without the lines of removed versions once
/// it passes [`AUTHORS_COMPACT_BYTES`].
///
/// With the site's item files at hand ([`FsVersionStore::linking_items_of`]), the snapshot
/// a write keeps is the item's own file under a second name (a hard link) whenever that
/// file holds the bytes to keep: no copy, no new file, no fsync of data; the write then renames its new file over the item's name, which leaves the old
/// one to the history alone. Such a snapshot keeps the item file's mode and owner (a copy
/// is 0600); its bytes are the same either way. Where a link cannot be made (another file system, a file
/// changed meanwhile), the bytes are copied as before. Between the link and the write's
/// rename the item's file and its newest snapshot are one file. A program that rewrites
/// the item in place (not by rename) in that moment changes both; the write then finds
/// the file changed, puts a private copy of the bytes it read over the snapshot's name
/// ([`VersionStore::write_failed`], as after any failed write; without room for the
/// copy the snapshot's name is removed) and starts again (a restore answers that the item
/// changed). What is left: a crash in that moment, or a request dropped in it, leaves the
/// two one file until the item's next write; a delete removes the item's name without
/// comparing, so an in-place edit in that moment goes to the history in place of the bytes
/// read; and a program that still holds the old file open and writes to it after the
/// rename writes into the history.
#[derive(Debug, Clone)]
pub struct FsVersionStore {
    root: PathBuf,
    known: Arc<KnownHistories>,
    items: Option<FsContentStore>,
}

/// What keeping a snapshot left: the history's timestamps and newest digest (for the
/// memo), and the item file's stamp when the snapshot is that file.
struct Kept {
    timestamps: Vec<i64>,
    newest: [u8; 32],
    linked: Option<LinkedSnapshot>,
}

/// A snapshot kept as a second name of the item's own file: its timestamp, and the item
/// file's stamp after the link (a link changes the file's change time).
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkedSnapshot {
    timestamp: i64,
    stamp: FileStamp,
}

impl LinkedSnapshot {
    /// What the write hears of it: the stamp its replace expects, and that a failure must
    /// be reported (to part the two files).
    fn kept(linked: Option<Self>) -> SavedVersion {
        match linked {
            Some(linked) => {
                SavedVersion { item_stamp: Some(linked.stamp), timestamp: Some(linked.timestamp) }
            }
            None => SavedVersion::default(),
        }
    }
}

impl FsVersionStore {
    /// A history that copies the bytes it keeps.
    pub fn new(state_dir: &Path) -> Self {
        Self { root: state_dir.join("versions"), known: Arc::default(), items: None }
    }

    /// A history that keeps a snapshot by linking the item's file in `items` when the file
    /// holds the snapshot's bytes (see the type's documentation).
    pub fn linking_items_of(self, items: FsContentStore) -> Self {
        Self { items: Some(items), ..self }
    }

    fn item_dir(&self, collection: &Collection, name: &ItemFilename) -> PathBuf {
        self.root.join(&collection.path).join(name.as_str())
    }

    fn version_path(&self, collection: &Collection, name: &ItemFilename, timestamp: i64) -> PathBuf {
        self.item_dir(collection, name).join(format!("{timestamp}.md"))
    }

    fn authors_path(&self, collection: &Collection, name: &ItemFilename) -> PathBuf {
        self.item_dir(collection, name).join(AUTHORS_FILE)
    }
}

/// Size past which an `authors` file is rewritten with the lines of the versions left
/// only: at `versions.keep: 50` and long emails about every 150th write of an item.
const AUTHORS_COMPACT_BYTES: u64 = 32 * 1024;

/// Entries of a folder; a missing folder has none.
fn entries(dir: &Path) -> CoreResult<Vec<fs::DirEntry>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries.collect::<io::Result<Vec<_>>>().map_err(io_error(dir)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(dir)(e)),
    }
}

fn timestamp_of(file_name: &str) -> Option<i64> {
    file_name.strip_suffix(".md")?.parse().ok()
}

impl FsVersionStore {
    fn list_versions_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let mut versions = Vec::new();
        let mut authors = None;
        for entry in entries(&self.item_dir(collection, name))? {
            let Some(timestamp) = entry.file_name().to_str().and_then(timestamp_of) else { continue };
            let meta = entry.metadata().map_err(io_error(&entry.path()))?;
            if meta.is_file() {
                if authors.is_none() {
                    authors = Some(self.authors_blocking(collection, name)?);
                }
                let author = authors.as_ref().and_then(|a| a.get(&timestamp).cloned().flatten());
                versions.push(VersionStamp { timestamp, size: meta.len(), author, commit: None });
            }
        }
        Ok(versions)
    }

    /// The snapshots' timestamps from the folder's entries alone: the file type comes
    /// with the entry (`d_type`), so no file is `stat`ed.
    fn version_timestamps_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<i64>> {
        let mut timestamps = Vec::new();
        for entry in entries(&self.item_dir(collection, name))? {
            let Some(timestamp) = entry.file_name().to_str().and_then(timestamp_of) else { continue };
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                timestamps.push(timestamp);
            }
        }
        Ok(timestamps)
    }

    fn read_version_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let path = self.version_path(collection, name, timestamp);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    /// What the item's `authors` file records (nothing when there is none).
    fn authors_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<std::collections::BTreeMap<i64, Option<String>>> {
        let path = self.authors_path(collection, name);
        match fs::read(&path) {
            Ok(bytes) => Ok(version_authors::parse(&String::from_utf8_lossy(&bytes))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Default::default()),
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    /// Records who kept the version at `timestamp` (an unknown one only where the file
    /// exists: it may hold a line of a removed version of that timestamp). Best effort:
    /// the version is kept already, so a failure is logged, not answered.
    fn keep_author_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        author: Option<&str>,
    ) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.authors_path(collection, name);
        let line = version_authors::record(timestamp, author);
        let known = author.and_then(version_authors::author_line).is_some();
        let appended =
            fs::OpenOptions::new().append(true).create(known).mode(0o600).open(&path).and_then(|mut file| {
                // One write, so that two processes' lines never interleave.
                file.write_all(line.as_bytes())?;
                file.metadata()
            });
        let compacted = match appended {
            Ok(meta) if meta.len() > AUTHORS_COMPACT_BYTES => self.compact_authors_blocking(collection, name),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !known => Ok(()),
            Err(e) => Err(io_error(&path)(e)),
        };
        if let Err(error) = compacted {
            tracing::warn!(path = %path.display(), %error, "a version's author was not kept");
        }
    }

    /// Rewrites the `authors` file with the lines of the versions left only.
    fn compact_authors_blocking(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        let path = self.authors_path(collection, name);
        let text = fs::read_to_string(&path).map_err(io_error(&path))?;
        let kept = self.version_timestamps_blocking(collection, name)?;
        atomic::write_private(&path, version_authors::compact(&text, &kept).as_bytes())
            .map_err(io_error(&path))
    }

    fn save_version_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        let path = self.version_path(collection, name, timestamp);
        match atomic::create_private(&path, bytes) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(CoreError::Conflict(format!("version {timestamp} of {} exists", name.as_str())))
            }
            Err(e) => Err(io_error(&path)(e)),
            Ok(()) => {
                self.keep_author_blocking(collection, name, timestamp, author);
                Ok(())
            }
        }
    }

    fn remove_version_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        let path = self.version_path(collection, name, timestamp);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(&path)(e)),
            _ => Ok(()),
        }
    }

    /// [`VersionStore::save_current`]'s steps, in one trip to the blocking pool: from what
    /// this process knows of the item's history folder while the folder is as it left it
    /// (see [`crate::history_memo`]), else from the folder.
    fn keep_snapshot_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: VersionToSave<'_>,
    ) -> CoreResult<Option<LinkedSnapshot>> {
        let dir = self.item_dir(collection, name);
        let keeping = self.known.begin(&dir, folder_stamp(&dir)?);
        let kept = self.keep_snapshot_from(collection, name, snapshot, keeping.known.clone());
        // A stamp that cannot be taken now only means nothing is known next time.
        let now = match &kept {
            Ok(kept) => folder_stamp(&dir).ok().flatten().map(|folder| KnownHistory {
                folder,
                timestamps: kept.timestamps.clone(),
                newest: Some(kept.newest),
            }),
            Err(_) => None,
        };
        self.known.end(&dir, keeping, now);
        kept.map(|kept| kept.linked)
    }

    /// Keeps the snapshot given the history as `known` (read from the folder when `None`).
    fn keep_snapshot_from(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: VersionToSave<'_>,
        known: Option<KnownHistory>,
    ) -> CoreResult<Kept> {
        let from_memory = known.is_some();
        let (timestamps, newest) = match known {
            Some(known) => (known.timestamps, known.newest),
            None => self.history_on_disk(collection, name)?,
        };
        let bytes_digest = digest(snapshot.bytes);
        let plan = snapshot.plan(timestamps.clone());
        if plan.newest.is_some() && newest == Some(bytes_digest) {
            return Ok(Kept { timestamps, newest: bytes_digest, linked: None });
        }
        match self.store_snapshot(collection, name, &snapshot, &plan, timestamps) {
            Ok((timestamps, linked)) => Ok(Kept { timestamps, newest: bytes_digest, linked }),
            // The timestamp was taken unseen by another process: decide again, once, from
            // the folder.
            Err(CoreError::Conflict(_)) if from_memory => {
                self.keep_snapshot_from(collection, name, snapshot, None)
            }
            Err(error) => Err(error),
        }
    }

    /// Saves the new snapshot and drops the old ones `plan` names; the history's timestamps
    /// after that, and the item file's stamp when the snapshot is that file.
    fn store_snapshot(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: &VersionToSave<'_>,
        plan: &SavePlan,
        mut timestamps: Vec<i64>,
    ) -> CoreResult<(Vec<i64>, Option<LinkedSnapshot>)> {
        let bytes = snapshot.bytes;
        let linked = match self.link_item_blocking(collection, name, plan.timestamp, bytes)? {
            Some(stamp) => {
                self.keep_author_blocking(collection, name, plan.timestamp, snapshot.author);
                Some(LinkedSnapshot { timestamp: plan.timestamp, stamp })
            }
            None => {
                self.save_version_blocking(collection, name, plan.timestamp, bytes, snapshot.author)?;
                None
            }
        };
        for old in &plan.drop {
            if let Err(error) = self.remove_version_blocking(collection, name, *old) {
                // The write stops here, so the item's file and its snapshot part again; the
                // removal's error is the one to answer.
                if linked.is_some()
                    && let Err(unshared) = self.unshare_blocking(collection, name, plan.timestamp, bytes)
                {
                    tracing::error!(item = name.as_str(), error = %unshared, "a snapshot still shares the item's file");
                }
                return Err(error);
            }
        }
        timestamps.push(plan.timestamp);
        timestamps.retain(|timestamp| !plan.drop.contains(timestamp));
        Ok((timestamps, linked))
    }

    /// [`VersionStore::write_failed`]'s step.
    fn unshare_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
    ) -> CoreResult<()> {
        self.known.forget(&self.item_dir(collection, name));
        let path = self.version_path(collection, name, timestamp);
        match atomic::write_private(&path, bytes) {
            Ok(()) => Ok(()),
            // No room for a copy (a full disk): the snapshot's name goes, which needs none;
            // the history then lacks this version rather than sharing the item's file.
            Err(_) => fs::remove_file(&path).map_err(io_error(&path)),
        }
    }

    /// The snapshot at `timestamp` as a second name of the item's file, when the file holds
    /// `bytes`; its stamp after that (the link changed it). `None` when there is no linking
    /// or no link: the caller copies the bytes.
    fn link_item_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
    ) -> CoreResult<Option<FileStamp>> {
        let Some(items) = &self.items else { return Ok(None) };
        // A collection folder outside the site is refused here as everywhere: copy, and let
        // the write that follows refuse it.
        let Ok(folder) = items.folder(collection) else { return Ok(None) };
        let path = self.version_path(collection, name, timestamp);
        match atomic::link_if_holds(&folder.join(name.as_str()), &path, bytes) {
            Ok(linked) => Ok(linked.map(|meta| stamp::from_metadata(name.as_str(), &meta))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(CoreError::Conflict(format!("version {timestamp} of {} exists", name.as_str())))
            }
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    /// An item's history as its folder holds it: the snapshots' timestamps, and the digest
    /// of the newest one.
    fn history_on_disk(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<(Vec<i64>, Option<[u8; 32]>)> {
        let timestamps = self.version_timestamps_blocking(collection, name)?;
        let newest = match timestamps.iter().max() {
            Some(&newest) => {
                self.read_version_blocking(collection, name, newest)?.map(|bytes| digest(&bytes))
            }
            None => None,
        };
        Ok((timestamps, newest))
    }

    fn items_with_history_blocking(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let mut names = Vec::new();
        for entry in entries(&self.root.join(&collection.path))? {
            let Ok(file_name) = entry.file_name().into_string() else { continue };
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let holds_a_version = |entries: Vec<fs::DirEntry>| {
                entries.iter().any(|e| e.file_name().to_str().and_then(timestamp_of).is_some())
            };
            if is_dir && ItemFilename::parse(&file_name).is_some() && holds_a_version(entries(&entry.path())?)
            {
                names.push(file_name);
            }
        }
        Ok(names)
    }
}

#[async_trait]
impl VersionStore for FsVersionStore {
    async fn list_versions(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.list_versions_blocking(&collection, &name)).await
    }

    async fn version_timestamps(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Vec<i64>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.version_timestamps_blocking(&collection, &name)).await
    }

    async fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.read_version_blocking(&collection, &name, timestamp)).await
    }

    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || Ok(store.authors_blocking(&collection, &name)?.remove(&timestamp).flatten()))
            .await
    }

    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        let (store, collection, name, bytes, author) =
            (self.clone(), collection.clone(), name.clone(), bytes.to_vec(), author.map(str::to_owned));
        blocking::run(move || {
            store.known.forget(&store.item_dir(&collection, &name));
            store.save_version_blocking(&collection, &name, timestamp, &bytes, author.as_deref())
        })
        .await
    }

    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || {
            store.known.forget(&store.item_dir(&collection, &name));
            store.remove_version_blocking(&collection, &name, timestamp)
        })
        .await
    }

    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.items_with_history_blocking(&collection)).await
    }

    async fn save_current(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: VersionToSave<'_>,
    ) -> CoreResult<SavedVersion> {
        let (store, collection, name, bytes, author) = (
            self.clone(),
            collection.clone(),
            name.clone(),
            snapshot.bytes.to_vec(),
            snapshot.author.map(str::to_owned),
        );
        let linked = blocking::run(move || {
            let snapshot = VersionToSave { bytes: &bytes, author: author.as_deref(), ..snapshot };
            store.keep_snapshot_blocking(&collection, &name, snapshot)
        })
        .await?;
        Ok(LinkedSnapshot::kept(linked))
    }

    /// When the version is a second name of the item's file (a hard link): a private copy
    /// of `bytes` renamed over the version's name, so that the item's file keeps its one
    /// name and the version becomes a file of its own.
    async fn write_failed(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        kept: &SavedVersion,
        bytes: &[u8],
    ) -> CoreResult<()> {
        let Some(timestamp) = kept.timestamp else { return Ok(()) };
        let (store, collection, name, bytes) =
            (self.clone(), collection.clone(), name.clone(), bytes.to_vec());
        blocking::run(move || store.unshare_blocking(&collection, &name, timestamp, &bytes)).await
    }
}

#[cfg(test)]
mod tests {
    use cms_core::testing::fixtures::posts;

    use super::*;

    fn keep(store: &FsVersionStore, bytes: &[u8], now: i64) {
        let item = ItemFilename::parse("hello.md").unwrap();
        store
            .keep_snapshot_blocking(&posts(), &item, VersionToSave { bytes, now, keep: 3, author: None })
            .unwrap();
    }

    fn history(store: &FsVersionStore) -> Vec<(i64, String)> {
        let item = ItemFilename::parse("hello.md").unwrap();
        let mut timestamps = store.version_timestamps_blocking(&posts(), &item).unwrap();
        timestamps.sort_unstable();
        let read = |timestamp| store.read_version_blocking(&posts(), &item, timestamp).unwrap().unwrap();
        timestamps
            .into_iter()
            .map(|timestamp| (timestamp, String::from_utf8(read(timestamp)).unwrap()))
            .collect()
    }

    fn folder(state: &Path) -> PathBuf {
        state.join("versions/content/posts/hello.md")
    }

    #[test]
    fn the_item_file_holding_the_bytes_becomes_the_snapshot_and_its_new_stamp_is_answered() {
        use std::os::unix::fs::MetadataExt;
        let site = tempfile::tempdir().unwrap();
        let item_path = site.path().join("content/posts/hello.md");
        fs::create_dir_all(item_path.parent().unwrap()).unwrap();
        fs::write(&item_path, "one").unwrap();
        let items = FsContentStore::new(site.path());
        let store = FsVersionStore::new(&site.path().join(".cms")).linking_items_of(items);
        let item = ItemFilename::parse("hello.md").unwrap();
        let keep = |bytes: &[u8], now| {
            store
                .keep_snapshot_blocking(&posts(), &item, VersionToSave { bytes, now, keep: 3, author: None })
                .unwrap()
        };

        let shared = keep(b"one", 200).expect("kept through the item's file");
        let item_meta = fs::symlink_metadata(&item_path).unwrap();
        assert_eq!(shared.timestamp, 200);
        assert_eq!(shared.stamp, stamp::from_metadata("hello.md", &item_meta), "the stamp the file has now");
        let snapshot = folder(&site.path().join(".cms")).join("200.md");
        assert_eq!(fs::metadata(&snapshot).unwrap().ino(), item_meta.ino());
        assert_eq!(keep(b"one", 201), None, "a repeat keeps nothing");

        // The file holds other bytes than the caller read (an outside edit meanwhile, which
        // the caller's conditional replace refuses anyway): the caller's bytes are copied.
        assert_eq!(keep(b"two", 202), None);
        assert_eq!(history(&store), [(200, "one".into()), (202, "two".into())]);
        let copy = fs::metadata(folder(&site.path().join(".cms")).join("202.md")).unwrap();
        assert_ne!(copy.ino(), item_meta.ino());
        assert_eq!(fs::read(&item_path).unwrap(), b"one");
    }

    #[tokio::test]
    async fn an_unshared_snapshot_is_a_private_file_of_its_own_holding_the_bytes_read() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let site = tempfile::tempdir().unwrap();
        let item_path = site.path().join("content/posts/hello.md");
        fs::create_dir_all(item_path.parent().unwrap()).unwrap();
        fs::write(&item_path, "one").unwrap();
        let store =
            FsVersionStore::new(&site.path().join(".cms")).linking_items_of(FsContentStore::new(site.path()));
        let item = ItemFilename::parse("hello.md").unwrap();
        let snapshot = VersionToSave { bytes: b"one", now: 200, keep: 3, author: None };
        let kept = store.save_current(&posts(), &item, snapshot).await.unwrap();
        assert!(kept.item_stamp.is_some(), "linked");

        // A program rewrites the item in place (which reaches the shared snapshot too), so
        // the write does not happen; then the item is rewritten in place again.
        fs::write(&item_path, "edited in place").unwrap();
        store.write_failed(&posts(), &item, &kept, b"one").await.unwrap();
        fs::write(&item_path, "edited in place again").unwrap();
        assert_eq!(history(&store), [(200, "one".into())]);
        let kept = fs::metadata(folder(&site.path().join(".cms")).join("200.md")).unwrap();
        assert_ne!(kept.ino(), fs::metadata(&item_path).unwrap().ino());
        assert_eq!(kept.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_authors_file_is_rewritten_with_the_versions_left_once_it_grows() {
        let state = tempfile::tempdir().unwrap();
        let store = FsVersionStore::new(state.path());
        let item = ItemFilename::parse("hello.md").unwrap();
        let author = "a".repeat(200);
        for now in 0..200 {
            let bytes = now.to_string();
            let snapshot = VersionToSave { bytes: bytes.as_bytes(), now, keep: 3, author: Some(&author) };
            store.keep_snapshot_blocking(&posts(), &item, snapshot).unwrap();
        }
        let text = fs::read_to_string(folder(state.path()).join("authors")).unwrap();
        assert!(text.len() as u64 <= AUTHORS_COMPACT_BYTES, "{} bytes", text.len());
        assert!(text.lines().count() < 200, "compacted");
        let versions = store.list_versions_blocking(&posts(), &item).unwrap();
        assert_eq!(versions.len(), 3);
        assert!(versions.iter().all(|v| v.author.as_deref() == Some(author.as_str())));
    }

    #[test]
    fn a_snapshot_goes_by_what_the_store_wrote_while_the_folder_is_as_it_left_it() {
        let state = tempfile::tempdir().unwrap();
        let store = FsVersionStore::new(state.path());
        keep(&store, b"one", 200);
        // Rewritten in place, which leaves the folder's stamp alone: the store goes by what
        // it wrote, so the repeat of "one" is still a repeat.
        fs::write(folder(state.path()).join("200.md"), "edited").unwrap();
        keep(&store, b"one", 300);
        assert_eq!(history(&store), [(200, "edited".into())]);
        // A fresh store (another process, a restart) reads the folder.
        keep(&FsVersionStore::new(state.path()), b"one", 300);
        assert_eq!(history(&store), [(200, "edited".into()), (300, "one".into())]);
    }

    #[test]
    fn snapshots_another_process_added_or_removed_are_neither_overwritten_nor_miscounted() {
        let state = tempfile::tempdir().unwrap();
        let store = FsVersionStore::new(state.path());
        keep(&store, b"one", 200);
        keep(&store, b"two", 200);
        // Another process adds the next timestamp, then removes the oldest.
        fs::write(folder(state.path()).join("202.md"), "theirs").unwrap();
        keep(&store, b"three", 200);
        assert_eq!(history(&store), [(201, "two".into()), (202, "theirs".into()), (203, "three".into())]);
        fs::remove_file(folder(state.path()).join("201.md")).unwrap();
        keep(&store, b"theirs", 200);
        keep(&store, b"four", 200);
        assert_eq!(history(&store), [(203, "three".into()), (204, "theirs".into()), (205, "four".into())]);
    }

    #[test]
    fn a_changed_folder_stamp_makes_the_store_read_the_folder_again() {
        let state = tempfile::tempdir().unwrap();
        let store = FsVersionStore::new(state.path());
        for (bytes, now) in [(&b"a"[..], 200), (b"b", 201), (b"c", 202)] {
            keep(&store, bytes, now);
        }
        // Another process removes a snapshot in the middle; the folder's times say so (set
        // here, so that the test does not hang on the clock's granularity).
        let dir = folder(state.path());
        fs::remove_file(dir.join("201.md")).unwrap();
        fs::File::open(&dir).unwrap().set_modified(std::time::UNIX_EPOCH).unwrap();
        keep(&store, b"d", 203);
        // Going by what it wrote, the store would have dropped 200 as the fourth.
        assert_eq!(history(&store), [(200, "a".into()), (202, "c".into()), (203, "d".into())]);
    }

    #[test]
    fn a_timestamp_taken_unseen_is_kept_and_the_snapshot_decided_again_from_the_folder() {
        let state = tempfile::tempdir().unwrap();
        let store = FsVersionStore::new(state.path());
        keep(&store, b"one", 200);
        let dir = folder(state.path());
        fs::write(dir.join("201.md"), "theirs").unwrap();
        // As if the change had come within the clock tick of the store's own.
        let folder = folder_stamp(&dir).unwrap();
        let keeping = store.known.begin(&dir, folder);
        let unseen =
            KnownHistory { folder: folder.unwrap(), timestamps: vec![200], newest: Some(digest(b"one")) };
        store.known.end(&dir, keeping, Some(unseen));
        keep(&store, b"two", 200);
        assert_eq!(history(&store), [(200, "one".into()), (201, "theirs".into()), (202, "two".into())]);
    }
}
