//! The ports: every way the core reaches the outside world. Adapters live in other crates
//! (`cms-fs`, `cms-webhooks`) and in [`crate::testing`] (in memory).
//!
//! Storage ports are async (`async-trait`), so that a remote store calls its client
//! natively and the file adapter moves its blocking I/O off the async workers itself. The
//! core names no runtime: it only awaits the futures the adapters return. The event sink
//! and the clock stay synchronous: they never wait.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use time::OffsetDateTime;

use crate::account::{KeyRecord, User};
use crate::collection::Collection;
use crate::error::{CoreError, CoreResult};
use crate::events::{Event, EventKind};
use crate::images::{RenderSpec, VariantKey};
use crate::license::License;
use crate::resource::{FileName, ResourceFolder, Subpath};
use crate::slug::ItemFilename;

/// What a cheap directory scan says about one item file, without reading it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileStamp {
    pub name: String,
    pub size: u64,
    /// Unix seconds of the last modification.
    pub modified: i64,
    /// Changes whenever the file's content may have changed (adapter-defined: a digest of
    /// a folder's file metadata, a bucket's ETag).
    pub change_token: u64,
}

/// A file's bytes together with the stamp they were read under.
#[derive(Debug, Clone)]
pub struct StoredFile {
    pub bytes: Vec<u8>,
    pub stamp: FileStamp,
}

/// The site's key for preview links (see `service/previews.rs`). Read on every use, so
/// that a rotation by another process (`cms previews revoke-all`) applies at once.
#[async_trait]
pub trait PreviewKeys: Send + Sync {
    /// The current key, made on first use.
    async fn current(&self) -> CoreResult<Vec<u8>>;
    /// Replaces the key: every link made before stops working.
    async fn rotate(&self) -> CoreResult<()>;
    /// Ends the links to one item made up to `at_ms` (Unix milliseconds): the item was
    /// deleted, so a new item under its name is another item. `item` is a short hex name
    /// (safe as a file or object name). Kept for at least the longest link lifetime
    /// ([`crate::config::MAX_PREVIEW_TTL_SECS`]), then forgotten.
    async fn end_item_links(&self, item: &str, at_ms: i64) -> CoreResult<()>;
    /// When [`Self::end_item_links`] last ended the links to `item`, if it did.
    async fn item_links_ended(&self, item: &str) -> CoreResult<Option<i64>>;
}

/// A web editor session's record as [`SessionStore::get`] reads it: the text the core
/// wrote (see `crate::session`) and the version it was read at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    pub text: String,
    /// Changes with every write (a file's digest, a bucket's ETag).
    pub version: String,
}

/// The web editor's sessions, kept in the site's store so that every server of the site
/// (and a restarted one) knows them: one small record per session, named by the SHA-256
/// of its token (64 hex digits: safe as a file or object name; the token itself is never
/// stored). The text is the core's; the store keeps it as given.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The record named `key`, if there is one.
    async fn get(&self, key: &str) -> CoreResult<Option<StoredSession>>;
    /// Writes a record, whatever was there (a key names a fresh random token: it is new).
    async fn put(&self, key: &str, text: &str) -> CoreResult<()>;
    /// Replaces a record only while it is still at `version`: `false`, writing nothing,
    /// when it changed or is gone (a sign-out in between must not be undone by a request
    /// that read the record before it).
    async fn replace(&self, key: &str, text: &str, version: &str) -> CoreResult<bool>;
    /// Removes a record (absent is fine).
    async fn remove(&self, key: &str) -> CoreResult<()>;
    /// Every record's key with when it was last written (Unix seconds, the store's
    /// clock), to remove the stale ones without reading them.
    async fn list(&self) -> CoreResult<Vec<(String, i64)>>;
}

/// Item files of the collections.
#[async_trait]
pub trait ContentStore: Send + Sync {
    /// Stamps of every visible regular file of the collection's folder (not hidden, not a
    /// folder; symlinks are never followed), items or not: the facade tells item files
    /// from the rest and reports the rest as skipped.
    async fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>>;
    /// A value that changes whenever a file is added to, removed from or renamed in the
    /// collection's folder (an edit in place need not change it), read without listing
    /// the folder; `None` where the store cannot tell so cheaply (the default). A server's
    /// start answers from the index snapshot alone while the folder's stamp is the one the
    /// snapshot recorded, and compares every file's stamp behind its first answers.
    async fn folder_stamp(&self, _collection: &Collection) -> CoreResult<Option<u64>> {
        Ok(None)
    }
    /// The stamp of one item file, or `None` if there is no such regular file.
    async fn stat(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>>;
    /// [`Self::stat`] of several files, in the order of `names`: what a batch of the change
    /// feed checks first (most of a busy server's reports are of its own writes, already
    /// indexed). One file's error does not fail the others (a batch that fails whole, such
    /// as a blocking task that panicked, gives each file the error).
    async fn stat_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<FileStamp>>> {
        let mut stamps = Vec::with_capacity(names.len());
        for name in names {
            stamps.push(self.stat(collection, name).await);
        }
        stamps
    }
    /// The file's bytes, or `None` if it does not exist.
    async fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>>;
    /// Several files at once, in the order of `names` (the index is built in batches of
    /// these; an adapter may read them in parallel). One file's error does not fail the
    /// others.
    async fn read_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<StoredFile>>> {
        let mut files = Vec::with_capacity(names.len());
        for name in names {
            files.push(self.read(collection, name).await);
        }
        files
    }
    /// Writes a new file atomically; `Conflict` if the name is taken.
    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp>;
    /// Replaces an existing file atomically (readers see the old or the new content), but
    /// only if it is still the file `expected` describes (same `change_token`; a remote
    /// store compares its object version, e.g. S3 `If-Match` on the ETag). Otherwise nothing
    /// is written and the error is `Stale`: so too when the file is gone (a replace never
    /// creates), which lets the caller read again and see `NotFound` itself. Several servers
    /// may share one store, so the facade's in-process locks alone cannot prevent a lost
    /// update.
    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp>;
    /// Removes a file; `NotFound` if it does not exist.
    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()>;
}

/// Something that changed in storage without going through this facade (an editor, `git
/// pull`, `rm`, another process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageChange {
    /// These item files of collection number `collection` may have changed, appeared or
    /// gone (names only; names that are not item files are ignored), by `origin`.
    Items { collection: usize, names: Vec<String>, origin: ChangeOrigin },
    /// Anything in the collection may have changed: compare it whole (a lost or
    /// overflowed watch, a folder replaced wholesale).
    Rescan { collection: usize },
    /// The installed license may have changed.
    License,
}

/// Who made a reported change, as far as the store can tell: the webhooks announce an
/// outside edit here, and leave another node's write to the node that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOrigin {
    /// A program that is not a process of this site (an editor, `git pull`, `rm`), or
    /// unknown (a folder's watch reports what changed, not who changed it).
    Outside,
    /// Another process serving the same store, through its facade (a bucket's journal
    /// names the node that wrote each entry).
    OtherNode,
}

/// A stream of change batches, as a store reports them.
#[async_trait]
pub trait ChangeFeed: Send {
    /// The next batch; `None` once the feed has ended (the caller then falls back to
    /// rescanning).
    async fn next_batch(&mut self) -> Option<Vec<StorageChange>>;
}

/// Where each collection's index snapshot is kept between runs (see `crate::engine::snapshot`).
/// The facade encodes and validates them; the store only keeps the bytes. A store that
/// keeps nothing is valid: every start then parses every item.
#[async_trait]
pub trait IndexSnapshots: Send + Sync {
    /// The last snapshot saved for the collection by this same program, if any.
    async fn load(&self, collection: &Collection) -> CoreResult<Option<Vec<u8>>>;
    /// [`Self::load`] as a reader, so that a start decodes the snapshot while it is read
    /// rather than holding it whole (it is about 480 bytes an item). Its reads block: the
    /// start decodes on threads of its own. The default reads it whole first.
    async fn open(&self, collection: &Collection) -> CoreResult<Option<Box<dyn std::io::Read + Send>>> {
        let bytes = self.load(collection).await?;
        Ok(bytes.map(|bytes| Box::new(std::io::Cursor::new(bytes)) as Box<dyn std::io::Read + Send>))
    }
    /// Replaces the collection's snapshot (atomically: a crash leaves the old one or the
    /// new one).
    async fn save(&self, collection: &Collection, bytes: Vec<u8>) -> CoreResult<()>;
    /// [`Self::save`] of a snapshot given in parts, each made (encoded) as it is asked
    /// for, so that a store that writes them one after the other never holds the whole
    /// snapshot. The default joins them first.
    async fn save_parts(
        &self,
        collection: &Collection,
        parts: Box<dyn Iterator<Item = Vec<u8>> + Send>,
    ) -> CoreResult<()> {
        let mut bytes = Vec::new();
        for part in parts {
            bytes.extend_from_slice(&part);
        }
        self.save(collection, bytes).await
    }
    /// The last search index snapshot saved for the collection by this same program (see
    /// `crate::engine::search`), kept as [`Self::load`] keeps the index's. A store without
    /// them is valid: every start then reads every item file to build search.
    async fn load_search(&self, _collection: &Collection) -> CoreResult<Option<Vec<u8>>> {
        Ok(None)
    }
    /// Replaces the collection's search index snapshot (atomically).
    async fn save_search(&self, _collection: &Collection, _bytes: Vec<u8>) -> CoreResult<()> {
        Ok(())
    }
}

/// Where changes made behind the facade's back are reported.
pub trait ChangeSource: Send + Sync {
    /// Starts following the collections' storage (and the license). `None` where the
    /// store cannot report changes: the caller must then rescan periodically.
    fn subscribe(&self, collections: &[Collection]) -> CoreResult<Option<Box<dyn ChangeFeed>>>;
}

/// User accounts.
#[async_trait]
pub trait UserStore: Send + Sync {
    async fn list_users(&self) -> CoreResult<Vec<User>>;
    /// Adds the user, or replaces the one with the same email.
    async fn put_user(&self, user: User) -> CoreResult<()>;
    /// Returns whether a user was removed.
    async fn remove_user(&self, email: &str) -> CoreResult<bool>;

    async fn find_user(&self, email: &str) -> CoreResult<Option<User>> {
        Ok(self.list_users().await?.into_iter().find(|u| u.email == email))
    }

    /// A user with their password hash (a PHC string; `None` when they have no password).
    /// A store that keeps no passwords has none.
    async fn find_user_with_password(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        Ok(self.find_user(email).await?.map(|user| (user, None)))
    }

    /// Sets the password hash of an existing user (kept with the user: removing the user
    /// removes it, and changing the role keeps it). Returns `false` when there is no such
    /// user.
    async fn set_password_hash(&self, email: &str, hash: &str) -> CoreResult<bool> {
        let _ = (email, hash);
        Err(CoreError::invalid("this user store keeps no passwords"))
    }
}

/// Hashes of API keys. Changes take effect on the next lookup (revocation is immediate).
#[async_trait]
pub trait KeyStore: Send + Sync {
    async fn list_keys(&self) -> CoreResult<Vec<KeyRecord>>;
    async fn add_key(&self, key: KeyRecord) -> CoreResult<()>;
    /// Removes every key for which `doomed` is true; returns how many went.
    async fn remove_keys(
        &self,
        doomed: &(dyn for<'k> Fn(&'k KeyRecord) -> bool + Send + Sync),
    ) -> CoreResult<usize>;

    async fn find_key_by_hash(&self, hash: &str) -> CoreResult<Option<KeyRecord>> {
        Ok(self.list_keys().await?.into_iter().find(|k| k.hash == hash))
    }
}

/// Where the license comes from. Reads see a changed license without a restart.
#[async_trait]
pub trait LicenseSource: Send + Sync {
    /// The installed license, `None` when there is none.
    async fn current(&self) -> CoreResult<Option<License>>;
    /// Installs a license (already validated by the core).
    async fn install(&self, license_text: &str) -> CoreResult<()>;
}

/// Outbound events. Publishing must not block on delivery.
pub trait EventSink: Send + Sync {
    fn publish(&self, event: Event);
}

/// One record of the site's event history (see [`EventStore`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: u64,
    /// What the core wrote (`crate::event_log`'s encoding); the store never reads it.
    pub record: String,
}

/// The site's event history, behind the live event stream and the ids of webhooks'
/// bodies (see `crate::event_log`): records numbered from 1 without gaps, in the order
/// every process serving the site appended them, kept for a while. A client that
/// resumes a stream on any server of the site reads the same ids.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Appends `records`, in order, after the last record the store holds (whichever
    /// process appended it), each with the next id; returns the ids given. Records of
    /// other processes may come between two of these.
    async fn append(&self, at: OffsetDateTime, records: &[String]) -> CoreResult<Vec<u64>>;
    /// Up to `limit` records with ids above `after`, in order (the first may be well
    /// after `after + 1` when older records were forgotten).
    async fn read_after(&self, after: u64, limit: usize) -> CoreResult<Vec<StoredEvent>>;
    /// The id of the last record (0: none was ever appended).
    async fn last_id(&self) -> CoreResult<u64>;
    /// Forgets records appended before `cutoff`, never the last one (it carries the
    /// count on).
    async fn forget_before(&self, cutoff: OffsetDateTime) -> CoreResult<()>;
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
#[async_trait]
pub trait WebhookDirectory: Send + Sync {
    /// Every subscription, oldest first.
    async fn list_webhooks(&self) -> CoreResult<Vec<WebhookInfo>>;

    // Management, for the web editor (as the CLI does it). A directory that cannot be
    // changed refuses with `Invalid`.

    /// Adds an enabled subscription (`events` as a comma-separated list); returns it and
    /// its signing secret, to be shown once.
    async fn add_webhook(&self, url: &str, events: &str) -> CoreResult<(WebhookInfo, String)> {
        let _ = (url, events);
        Err(read_only_webhooks())
    }

    /// Enables or disables a subscription; `NotFound` for an unknown id.
    async fn set_webhook_enabled(&self, id: &str, enabled: bool) -> CoreResult<()> {
        let _ = (id, enabled);
        Err(read_only_webhooks())
    }

    /// Removes a subscription; `NotFound` for an unknown id.
    async fn remove_webhook(&self, id: &str) -> CoreResult<()> {
        let _ = id;
        Err(read_only_webhooks())
    }

    /// The delivery log, oldest first.
    async fn webhook_log(&self) -> CoreResult<Vec<WebhookDelivery>> {
        Ok(Vec::new())
    }

    /// Empties the delivery log; returns how many entries went.
    async fn clear_webhook_log(&self) -> CoreResult<usize> {
        Err(read_only_webhooks())
    }
}

fn read_only_webhooks() -> CoreError {
    CoreError::invalid("the webhook subscriptions of this site cannot be changed here")
}

/// One delivery attempt, as the delivery log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    pub time: OffsetDateTime,
    /// The `X-Webhook-Delivery` id.
    pub delivery: String,
    /// The subscription's id.
    pub webhook: String,
    pub event: EventKind,
    pub url: String,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    pub success: bool,
    /// Why it failed or was not sent.
    pub error: Option<String>,
}

/// A change of a state document's text: given the current text (`None`: no document yet),
/// the text to write (`None`: write nothing). It may run more than once (see
/// [`StateDocuments::update`]).
pub type TextChange = Box<dyn FnMut(Option<&str>) -> CoreResult<Option<String>> + Send>;

/// Small YAML documents of the site's state that every process (and, on a shared store,
/// every server) reads and changes: the webhook subscriptions and delivery log, the
/// schedule's mark. Named by file name (`webhooks.yaml`), kept in `.cms/` of the folder or
/// of the bucket.
///
/// Synchronous on purpose: its callers are plain threads (the webhook delivery workers,
/// the CLI, the schedule's ring on the blocking pool), and an update is a
/// read-modify-write that must hold out every other writer.
pub trait StateDocuments: Send + Sync {
    /// A document's text; `None` when there is none.
    fn read(&self, name: &str) -> CoreResult<Option<String>>;
    /// Applies `change` atomically against every other writer (another thread, process
    /// or server): when another one wrote in between, `change` runs again on what it wrote.
    fn update(&self, name: &str, change: TextChange) -> CoreResult<()>;
    /// Where the document is, for messages (a path, or the bucket's address).
    fn describe(&self, name: &str) -> String;
}

/// Who else changes a site's storage, which decides how shared marks are claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// One server owns the store (a site folder); commands may write beside it.
    OneServer,
    /// Several servers serve the site from the store at once (a bucket).
    Servers,
}

/// Everything a backend keeps for a site, as its crate opens it (`cms_fs::open`,
/// `cms_s3::open`): the storage ports, the preview keys, the shared state documents and
/// the license as the webhook workers read it. The composition root adds what is not
/// storage's business (events, clock, webhook directory, image codec) to make the
/// facade's `Ports`.
#[derive(Clone)]
pub struct SiteStorage {
    pub content: Arc<dyn ContentStore>,
    pub versions: Arc<dyn VersionStore>,
    pub resources: Arc<dyn ResourceStore>,
    pub users: Arc<dyn UserStore>,
    pub keys: Arc<dyn KeyStore>,
    pub license: Arc<dyn LicenseSource>,
    pub settings: Arc<dyn SettingsStore>,
    pub changes: Arc<dyn ChangeSource>,
    /// A node's own cache on every backend (the local `.cms/index/`).
    pub snapshots: Arc<dyn IndexSnapshots>,
    /// A node's own cache on every backend (the local `.cms/variants/`).
    pub variants: Arc<dyn VariantStore>,
    pub previews: Arc<dyn PreviewKeys>,
    /// The web editor's sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// The webhook subscriptions and log, the schedule's mark.
    pub state: Arc<dyn StateDocuments>,
    pub sharing: Sharing,
    /// The site's event history (shared by every server of the site).
    pub events: Arc<dyn EventStore>,
    /// Where the content lives, for the operator (`site folder: ...`, `bucket: s3://...`).
    pub description: String,
    /// The backend's own measurements (a bucket's requests), for `/metrics`.
    pub readings: Vec<Arc<dyn crate::readings::Observed>>,
}

/// The time, so that tests can fix it.
pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

/// One stored snapshot of an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionStamp {
    /// Unix seconds; unique per item.
    pub timestamp: i64,
    pub size: u64,
    /// Who made the change that kept it (see [`crate::policy::Caller::author`]); `None` for
    /// versions kept before authors were recorded.
    pub author: Option<String>,
    /// On a site kept in git, the commit that holds this version (its author is the
    /// commit's); `None` for a version the store kept itself.
    pub commit: Option<String>,
}

/// An item's current bytes to keep as its newest version (see
/// [`VersionStore::save_current`]).
#[derive(Debug, Clone, Copy)]
pub struct VersionToSave<'a> {
    pub bytes: &'a [u8],
    /// Unix seconds: the new snapshot's timestamp unless the item has one that late.
    pub now: i64,
    /// How many snapshots the item keeps (`versions.keep`).
    pub keep: usize,
    /// Who makes the change the snapshot is kept for.
    pub author: Option<&'a str>,
}

/// What keeping a version means for the write it was kept for (see
/// [`VersionStore::save_current`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedVersion {
    /// The item file's stamp when keeping the version changed it (not its bytes): the
    /// write's conditional replace expects this one. `None`: the stamp read stands.
    pub item_stamp: Option<FileStamp>,
    /// The kept version's timestamp when the store must hear of a write that fails
    /// ([`VersionStore::write_failed`]); `None` when it need not.
    pub timestamp: Option<i64>,
}

/// What keeping a snapshot does, decided from the item's snapshot timestamps alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavePlan {
    /// The newest snapshot: when it holds the same bytes, nothing is done.
    pub newest: Option<i64>,
    /// The new snapshot's timestamp: `now`, or one past the newest when that is later
    /// (two writes in one second), so that timestamps stay unique per item.
    pub timestamp: i64,
    /// The oldest snapshots beyond `keep` once the new one is stored.
    pub drop: Vec<i64>,
}

impl VersionToSave<'_> {
    /// The plan, given the item's snapshot timestamps in any order.
    pub fn plan(&self, mut timestamps: Vec<i64>) -> SavePlan {
        timestamps.sort_unstable_by(|a, b| b.cmp(a));
        let newest = timestamps.first().copied();
        let timestamp = newest.map_or(self.now, |newest| self.now.max(newest + 1));
        let drop = std::iter::once(timestamp).chain(timestamps).skip(self.keep).collect();
        SavePlan { newest, timestamp, drop }
    }
}

/// Item history, kept apart from the collections so that snapshots are never listed or
/// served as items. Keyed by collection and item filename, so a deleted item keeps it.
#[async_trait]
pub trait VersionStore: Send + Sync {
    /// The snapshots of one item file, in any order, each with its author.
    async fn list_versions(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>>;
    /// The timestamps of one item file's snapshots, in any order: what a new snapshot
    /// needs. A store that can list them without each one's size (a folder without a
    /// `stat` per file) answers this more cheaply than [`Self::list_versions`].
    async fn version_timestamps(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Vec<i64>> {
        Ok(self.list_versions(collection, name).await?.into_iter().map(|v| v.timestamp).collect())
    }
    async fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>>;
    /// The author kept with one snapshot; `None` when none was kept (an older version) or
    /// there is no such snapshot.
    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>>;
    /// Stores a snapshot atomically, with its author when given; `Conflict` if that
    /// timestamp is taken (a shared store may accept the very same bytes again: two
    /// servers keeping one version at once). The author is kept best effort, after the
    /// bytes (see [`crate::version_authors`]): a crash between the two, or a failure to
    /// keep it, leaves a version whose author is unknown.
    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()>;
    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()>;
    /// Filenames of the collection's items that have a history (deleted ones included).
    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>>;

    /// Keeps `snapshot.bytes` as the item's newest version unless the newest one holds the
    /// same bytes, then removes the oldest beyond `snapshot.keep`, as
    /// [`VersionToSave::plan`] decides. Every write of an item does this first, so a store
    /// that can do it in one step (one trip to a blocking pool) should; the default takes
    /// one call of the methods above per step.
    ///
    /// A store may keep the version through the item's own storage (the folder store does,
    /// when it can, without a copy): then the item's stamp changes though its bytes do not,
    /// and the answer says what the write's conditional replace expects, and that the
    /// store must hear of it if the write fails ([`Self::write_failed`]).
    async fn save_current(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: VersionToSave<'_>,
    ) -> CoreResult<SavedVersion> {
        let plan = snapshot.plan(self.version_timestamps(collection, name).await?);
        if let Some(newest) = plan.newest
            && self.read_version(collection, name, newest).await?.as_deref() == Some(snapshot.bytes)
        {
            return Ok(SavedVersion::default());
        }
        self.save_version(collection, name, plan.timestamp, snapshot.bytes, snapshot.author).await?;
        for old in plan.drop {
            self.remove_version(collection, name, old).await?;
        }
        Ok(SavedVersion::default())
    }

    /// The write `kept` was kept for did not happen (`bytes` are those the version holds):
    /// the item's file stays, and a later change to it must not reach the version. Only a
    /// store whose [`SavedVersion::timestamp`] was set has anything to do.
    async fn write_failed(
        &self,
        _collection: &Collection,
        _name: &ItemFilename,
        _kept: &SavedVersion,
        _bytes: &[u8],
    ) -> CoreResult<()> {
        Ok(())
    }
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

/// Bytes of a file as an adapter reads them, chunk by chunk (a large file is never held
/// whole); an error ends the stream.
pub type ByteStream = BoxStream<'static, CoreResult<Bytes>>;

/// An open resource file or stored variant, for serving (whole, or one `Range` of it).
///
/// Reading is asynchronous and by byte range: the bucket adapter streams a ranged GET,
/// the folder adapter reads its open file in positional chunks on the blocking pool, so no
/// thread waits on a response's client. A handle may be read any number of times.
pub trait ResourceReader: Send + Sync {
    /// Bytes `range` of the file as it was opened, cut at its end: a range that starts
    /// at or past the end reads nothing. Lazy: nothing is read until the stream is polled
    /// (a `HEAD` or a `304` reads nothing), and a read that fails is an error in the stream.
    fn range(&self, range: Range<u64>) -> ByteStream;
}

/// An upload being received. Bytes go to a temporary place as they arrive (never held
/// whole in memory); `commit` moves them into place under a name no file has yet;
/// dropping the sink without committing leaves nothing behind.
#[async_trait]
pub trait UploadSink: Send {
    async fn write(&mut self, chunk: &[u8]) -> CoreResult<()>;
    /// Stores the upload in `dir` as `name`, or `name-1`, `name-2`, ... if taken.
    async fn commit(
        self: Box<Self>,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<ResourceStat>;
}

/// Files and folders of the resource folders. Symlinks are never followed.
#[async_trait]
pub trait ResourceStore: Send + Sync {
    /// Entries of a folder; `NotFound` if it does not exist.
    async fn list(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>>;
    async fn stat(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>>;
    /// Up to `max` first bytes of a file (to recognise images by content).
    async fn read_head(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>>;
    /// A whole file, at most `max` bytes (`TooLarge` beyond); `None` if there is no such
    /// file. For the image transforms, which need the source in memory.
    async fn read_all(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: u64,
    ) -> CoreResult<Option<Vec<u8>>>;
    /// A file to serve; `None` if there is no such file.
    async fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>>;
    /// Starts an upload; its bytes are staged where the adapter likes until `commit`.
    async fn begin_upload(&self) -> CoreResult<Box<dyn UploadSink>>;
    /// Renames or moves a file; `NotFound` without a source, `Conflict` if the target exists.
    async fn rename(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()>;
    /// Deletes a file or an empty folder; `NotFound` if absent, `Conflict` if not empty.
    async fn delete(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()>;
    /// Creates a folder; `Conflict` if the name is taken, `NotFound` without a parent.
    async fn create_dir(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()>;
}

/// Site settings kept by the server (the theme, as a JSON object).
#[async_trait]
pub trait SettingsStore: Send + Sync {
    async fn load_theme(&self) -> CoreResult<Option<serde_json::Map<String, serde_json::Value>>>;
    /// Saves the theme atomically.
    async fn save_theme(&self, theme: &serde_json::Map<String, serde_json::Value>) -> CoreResult<()>;
}

/// Decodes, resizes and encodes images. CPU-heavy: an adapter runs `render` on its own
/// bounded pool (and answers `Busy` when that is full) so that transforms cannot starve
/// the API.
#[async_trait]
pub trait ImageCodec: Send + Sync {
    /// Width and height as shown (EXIF orientation applied), from a file's first bytes;
    /// `None` when the header cannot be read from them.
    fn probe(&self, head: &[u8]) -> Option<(u32, u32)>;
    /// Renders a variant of an image file's bytes. A source over `spec.limits.max_pixels`,
    /// corrupt, animated, or that its output format cannot hold is `Unprocessable`; a
    /// render that finds no worker within `spec.limits.queue_timeout` or runs past
    /// `spec.limits.render_timeout` is `Busy`.
    async fn render(&self, source: Vec<u8>, spec: RenderSpec) -> CoreResult<Vec<u8>>;
}

/// A codec for builds and tests without one: reads no header, renders nothing.
pub struct NoImageCodec;

#[async_trait]
impl ImageCodec for NoImageCodec {
    fn probe(&self, _head: &[u8]) -> Option<(u32, u32)> {
        None
    }

    async fn render(&self, _source: Vec<u8>, _spec: RenderSpec) -> CoreResult<Vec<u8>> {
        Err(CoreError::Unprocessable("this server has no image codec; images are served as they are".into()))
    }
}

/// A resource file whose variants are meant.
#[derive(Debug, Clone, Copy)]
pub struct VariantSource<'a> {
    pub folder: &'a ResourceFolder,
    pub dir: &'a Subpath,
    pub name: &'a FileName,
}

/// Rendered variants of resource files, kept apart from the resource folders (never in
/// their listings), grouped by source file so that they follow it.
#[async_trait]
pub trait VariantStore: Send + Sync {
    /// A stored variant and its size; `None` if there is none.
    async fn open(
        &self,
        source: VariantSource<'_>,
        key: &VariantKey,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, u64)>>;
    /// Stores a variant (atomically), and drops the source's variants whose key names
    /// other source content (an older version of the file).
    async fn put(&self, source: VariantSource<'_>, key: &VariantKey, bytes: &[u8]) -> CoreResult<()>;
    /// The source's stored variants with their sizes.
    async fn list(&self, source: VariantSource<'_>) -> CoreResult<Vec<(VariantKey, u64)>>;
    /// Forgets every variant of a source (it was deleted).
    async fn remove_all(&self, source: VariantSource<'_>) -> CoreResult<()>;
    /// Moves a source's variants with it (it was renamed or moved).
    async fn rename(&self, from: VariantSource<'_>, to: VariantSource<'_>) -> CoreResult<()>;
}

/// Rendered single items kept by this server (see `service/rendered.rs`): records the
/// facade encodes and checks itself, by a 64-bit key. A cache: it may forget any record at
/// any time, and a record is only ever read by the process that wrote it.
///
/// Synchronous on purpose: an implementation answers from memory or from a local file it
/// wrote itself (one positional read of a few kilobytes), never over a network, so that a
/// read held in memory (the process's or the page cache) costs no hop to a blocking pool.
/// [`get_now`](Self::get_now) says when a read would wait for the disk instead, so that
/// the caller makes that one off its async worker.
pub trait RenderCache: Send + Sync {
    /// The record last put under `key`, if it is still kept (shared, not copied, when the
    /// cache holds it in memory). It may wait for a disk.
    fn get(&self, key: u64) -> Option<bytes::Bytes>;
    /// [`get`](Self::get) when it need not wait for a disk; else [`KeptNow::OnDisk`].
    /// By default `get` itself (a cache held in memory never waits).
    fn get_now(&self, key: u64) -> KeptNow {
        match self.get(key) {
            Some(record) => KeptNow::Found(record),
            None => KeptNow::Missing,
        }
    }
    /// Keeps `record` under `key`, replacing what was there. Failures are the cache's own
    /// business (a record not kept is rendered again).
    fn put(&self, key: u64, record: &[u8]);
    /// Whether a record is kept under `key`, without reading it.
    fn contains(&self, key: u64) -> bool;
    /// Whether the cache is at its budget: the next records put push older ones out.
    /// Rendering ahead of requests stops here rather than churn.
    fn is_full(&self) -> bool;
    /// Counts a request's first lookup of its answer, found or not (for metrics: one per
    /// request, whatever the lookups it makes); by default nothing.
    fn note(&self, _found: bool) {}
}

/// What [`RenderCache::get_now`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptNow {
    /// The record, had without waiting.
    Found(bytes::Bytes),
    /// Nothing is kept under the key.
    Missing,
    /// A record may be kept, but reading it waits for the disk (its pages are not in
    /// memory): [`RenderCache::get`] reads it, where waiting is allowed.
    OnDisk,
}

#[cfg(test)]
mod tests {
    use super::{SavePlan, VersionToSave};

    #[test]
    fn a_snapshot_plan_keeps_timestamps_unique_and_drops_the_oldest() {
        let plan = |now, keep, timestamps: &[i64]| {
            VersionToSave { bytes: b"", now, keep, author: None }.plan(timestamps.to_vec())
        };
        assert_eq!(plan(100, 3, &[]), SavePlan { newest: None, timestamp: 100, drop: vec![] });
        assert_eq!(
            plan(100, 3, &[90, 100, 95]),
            SavePlan { newest: Some(100), timestamp: 101, drop: vec![90] },
            "a second write within a second takes the next one"
        );
        assert_eq!(
            plan(200, 2, &[50, 60, 70]),
            SavePlan { newest: Some(70), timestamp: 200, drop: vec![60, 50] }
        );
    }
}
