use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{KeepSnapshot, VersionStamp, VersionStore};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};

use crate::atomic;
use crate::blocking;
use crate::error::io_error;

/// History under `.cms/versions/<collection path>/<item filename>/<timestamp>.md`: inside
/// the private state folder, so snapshots are never listed or served as items.
#[derive(Debug, Clone)]
pub struct FsVersionStore {
    root: PathBuf,
}

impl FsVersionStore {
    pub fn new(state_dir: &Path) -> Self {
        Self { root: state_dir.join("versions") }
    }

    fn item_dir(&self, collection: &Collection, name: &ItemFilename) -> PathBuf {
        self.root.join(&collection.path).join(name.as_str())
    }

    fn version_path(&self, collection: &Collection, name: &ItemFilename, timestamp: i64) -> PathBuf {
        self.item_dir(collection, name).join(format!("{timestamp}.md"))
    }
}

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
        for entry in entries(&self.item_dir(collection, name))? {
            let Some(timestamp) = entry.file_name().to_str().and_then(timestamp_of) else { continue };
            let meta = entry.metadata().map_err(io_error(&entry.path()))?;
            if meta.is_file() {
                versions.push(VersionStamp { timestamp, size: meta.len() });
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

    fn save_version_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
    ) -> CoreResult<()> {
        let path = self.version_path(collection, name, timestamp);
        match atomic::create_private(&path, bytes) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(CoreError::Conflict(format!("version {timestamp} of {} exists", name.as_str())))
            }
            other => other.map_err(io_error(&path)),
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

    /// [`VersionStore::keep_snapshot`]'s steps, in one trip to the blocking pool.
    fn keep_snapshot_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: KeepSnapshot<'_>,
    ) -> CoreResult<()> {
        let plan = snapshot.plan(self.version_timestamps_blocking(collection, name)?);
        if let Some(newest) = plan.newest
            && self.read_version_blocking(collection, name, newest)?.as_deref() == Some(snapshot.bytes)
        {
            return Ok(());
        }
        self.save_version_blocking(collection, name, plan.timestamp, snapshot.bytes)?;
        for old in plan.drop {
            self.remove_version_blocking(collection, name, old)?;
        }
        Ok(())
    }

    fn items_with_history_blocking(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let mut names = Vec::new();
        for entry in entries(&self.root.join(&collection.path))? {
            let Ok(file_name) = entry.file_name().into_string() else { continue };
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && ItemFilename::parse(&file_name).is_some() && !entries(&entry.path())?.is_empty() {
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

    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
    ) -> CoreResult<()> {
        let (store, collection, name, bytes) =
            (self.clone(), collection.clone(), name.clone(), bytes.to_vec());
        blocking::run(move || store.save_version_blocking(&collection, &name, timestamp, &bytes)).await
    }

    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.remove_version_blocking(&collection, &name, timestamp)).await
    }

    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.items_with_history_blocking(&collection)).await
    }

    async fn keep_snapshot(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: KeepSnapshot<'_>,
    ) -> CoreResult<()> {
        let (store, collection, name, bytes) =
            (self.clone(), collection.clone(), name.clone(), snapshot.bytes.to_vec());
        blocking::run(move || {
            store.keep_snapshot_blocking(&collection, &name, KeepSnapshot { bytes: &bytes, ..snapshot })
        })
        .await
    }
}
