//! The ports: every way the core reaches the outside world. Adapters live in other crates
//! (`cms-fs`, `cms-webhooks`) and in [`crate::testing`] (in memory).
//!
//! Ports are synchronous: the file adapter does blocking I/O, and the web layer runs facade
//! calls on a blocking thread pool, so the core needs no async runtime.

use time::OffsetDateTime;

use crate::account::{KeyRecord, User};
use crate::collection::Collection;
use crate::error::CoreResult;
use crate::events::{Event, EventKind};
use crate::license::License;
use crate::resource::{FileName, ResourceFolder, Subpath};
use crate::slug::ItemFilename;

/// What a cheap directory scan says about one item file, without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    pub name: String,
    pub size: u64,
    /// Unix seconds of the last modification.
    pub modified: i64,
    /// Changes whenever the file's content may have changed (an adapter-defined digest of
    /// modification and change times, inode and size).
    pub change_token: u64,
}

/// A file's bytes together with the stamp they were read under.
#[derive(Debug, Clone)]
pub struct StoredFile {
    pub bytes: Vec<u8>,
    pub stamp: FileStamp,
}

/// Item files of the collections.
pub trait ContentStore: Send + Sync {
    /// Stamps of the item files (`*.md` regular files; symlinks are never followed).
    fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>>;
    /// The file's bytes, or `None` if it does not exist.
    fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>>;
    /// Writes a new file atomically; `Conflict` if the name is taken.
    fn create(&self, collection: &Collection, name: &ItemFilename, bytes: &[u8]) -> CoreResult<FileStamp>;
    /// Replaces an existing file atomically (readers see the old or the new content).
    fn replace(&self, collection: &Collection, name: &ItemFilename, bytes: &[u8]) -> CoreResult<FileStamp>;
    /// Removes a file; `NotFound` if it does not exist.
    fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()>;
}

/// User accounts.
pub trait UserStore: Send + Sync {
    fn list_users(&self) -> CoreResult<Vec<User>>;
    /// Adds the user, or replaces the one with the same email.
    fn put_user(&self, user: User) -> CoreResult<()>;
    /// Returns whether a user was removed.
    fn remove_user(&self, email: &str) -> CoreResult<bool>;

    fn find_user(&self, email: &str) -> CoreResult<Option<User>> {
        Ok(self.list_users()?.into_iter().find(|u| u.email == email))
    }
}

/// Hashes of API keys. Changes take effect on the next lookup (revocation is immediate).
pub trait KeyStore: Send + Sync {
    fn list_keys(&self) -> CoreResult<Vec<KeyRecord>>;
    fn add_key(&self, key: KeyRecord) -> CoreResult<()>;
    /// Removes every key for which `doomed` is true; returns how many went.
    fn remove_keys(&self, doomed: &dyn Fn(&KeyRecord) -> bool) -> CoreResult<usize>;

    fn find_key_by_hash(&self, hash: &str) -> CoreResult<Option<KeyRecord>> {
        Ok(self.list_keys()?.into_iter().find(|k| k.hash == hash))
    }
}

/// Where the license comes from. Reads see a changed license without a restart.
pub trait LicenseSource: Send + Sync {
    /// The installed license, `None` when there is none.
    fn current(&self) -> CoreResult<Option<License>>;
    /// Installs a license (already validated by the core).
    fn install(&self, license_text: &str) -> CoreResult<()>;
}

/// Outbound events. Publishing must not block on delivery.
pub trait EventSink: Send + Sync {
    fn publish(&self, event: Event);
}

/// A webhook subscription as the API may show it: never its signing secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookInfo {
    /// `wh_` followed by hex.
    pub id: String,
    /// An `https://` URL.
    pub url: String,
    /// The selected events, in [`EventKind::ALL`] order.
    pub events: Vec<EventKind>,
    pub enabled: bool,
    pub created_at: OffsetDateTime,
}

/// Read access to the webhook subscriptions (created and changed with the CLI, which talks
/// to the webhook adapter directly). Reads see the CLI's changes at once.
pub trait WebhookDirectory: Send + Sync {
    /// Every subscription, oldest first.
    fn list_webhooks(&self) -> CoreResult<Vec<WebhookInfo>>;
}

/// The time, so that tests can fix it.
pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

/// One stored snapshot of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionStamp {
    /// Unix seconds; unique per item.
    pub timestamp: i64,
    pub size: u64,
}

/// Item history, kept apart from the collections so that snapshots are never listed or
/// served as items. Keyed by collection and item filename, so a deleted item keeps it.
pub trait VersionStore: Send + Sync {
    /// The snapshots of one item file, in any order.
    fn list_versions(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Vec<VersionStamp>>;
    fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>>;
    /// Stores a snapshot atomically; `Conflict` if that timestamp is taken.
    fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
    ) -> CoreResult<()>;
    fn remove_version(&self, collection: &Collection, name: &ItemFilename, timestamp: i64) -> CoreResult<()>;
    /// Filenames of the collection's items that have a history (deleted ones included).
    fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>>;
}

/// What a resource folder holds at one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceStat {
    pub name: FileName,
    pub is_dir: bool,
    pub size: u64,
    /// Unix seconds.
    pub modified: i64,
}

/// A readable, seekable resource file (for serving with `Range`).
pub trait ResourceReader: std::io::Read + std::io::Seek + Send {}
impl<T: std::io::Read + std::io::Seek + Send> ResourceReader for T {}

/// An upload being received. Bytes go to a temporary place as they arrive (never held
/// whole in memory); `commit` moves them into place under a name no file has yet;
/// dropping the sink without committing leaves nothing behind.
pub trait UploadSink: Send {
    fn write(&mut self, chunk: &[u8]) -> CoreResult<()>;
    /// Stores the upload in `dir` as `name`, or `name-1`, `name-2`, ... if taken.
    fn commit(
        self: Box<Self>,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<ResourceStat>;
}

/// Files and folders of the resource folders. Symlinks are never followed.
pub trait ResourceStore: Send + Sync {
    /// Entries of a folder; `NotFound` if it does not exist.
    fn list(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>>;
    fn stat(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>>;
    /// Up to `max` first bytes of a file (to recognise images by content).
    fn read_head(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>>;
    /// A file to serve; `None` if there is no such file.
    fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>>;
    /// Starts an upload; its bytes are staged where the adapter likes until `commit`.
    fn begin_upload(&self) -> CoreResult<Box<dyn UploadSink>>;
    /// Renames or moves a file; `NotFound` without a source, `Conflict` if the target exists.
    fn rename(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()>;
    /// Deletes a file or an empty folder; `NotFound` if absent, `Conflict` if not empty.
    fn delete(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()>;
    /// Creates a folder; `Conflict` if the name is taken, `NotFound` without a parent.
    fn create_dir(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()>;
}

/// Site settings kept by the server (the theme, as a JSON object).
pub trait SettingsStore: Send + Sync {
    fn load_theme(&self) -> CoreResult<Option<serde_json::Map<String, serde_json::Value>>>;
    /// Saves the theme atomically.
    fn save_theme(&self, theme: &serde_json::Map<String, serde_json::Value>) -> CoreResult<()>;
}
