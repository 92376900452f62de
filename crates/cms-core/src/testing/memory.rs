use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use time::OffsetDateTime;

use crate::account::{KeyRecord, User};
use crate::collection::Collection;
use crate::error::{CoreError, CoreResult};
use crate::events::Event;
use crate::license::License;
use crate::ports::{
    ChangeFeed, ChangeOrigin, ChangeSource, Clock, ContentStore, EventSink, FileStamp, IndexSnapshots,
    KeyStore, LicenseSource, SettingsStore, StorageChange, StoredFile, UserStore, VersionStamp, VersionStore,
    WebhookDirectory, WebhookInfo,
};
use crate::slug::ItemFilename;

/// Item files in a map: (collection path, filename) → bytes and stamp.
#[derive(Default)]
pub struct MemoryContentStore {
    files: Mutex<BTreeMap<(String, String), StoredFile>>,
    next_token: AtomicU64,
    /// Unix seconds stamped on writes.
    pub now: AtomicI64,
    /// Counts `read` calls, so tests can prove lists do not re-read unchanged files.
    pub reads: AtomicU64,
    /// Counts `scan` calls (listings of a folder).
    pub scans: AtomicU64,
    /// Changes made "by another program" ([`Self::put_raw`], [`Self::remove_raw`]) that
    /// the facade has not been told of yet; [`MemoryWorld::settle`](super::MemoryWorld)
    /// hands them over, as a change feed would.
    pending: Mutex<Vec<StorageChange>>,
    /// Collection paths by number, learned from `subscribe`.
    collection_paths: Mutex<Vec<String>>,
    /// Each folder's stamp (see [`ContentStore::folder_stamp`]): how many times a file was
    /// added to or removed from it.
    folder_stamps: Mutex<HashMap<String, u64>>,
}

impl MemoryContentStore {
    /// Puts raw bytes in place as another program would (no validation).
    pub fn put_raw(&self, collection_path: &str, filename: &str, bytes: &[u8]) {
        self.put_by(collection_path, filename, bytes, ChangeOrigin::Outside);
    }

    /// Puts bytes in place as another node serving the same store would: the change is
    /// reported as that node's ([`ChangeOrigin::OtherNode`]).
    pub fn put_from_other_node(&self, collection_path: &str, filename: &str, bytes: &[u8]) {
        self.put_by(collection_path, filename, bytes, ChangeOrigin::OtherNode);
    }

    fn put_by(&self, collection_path: &str, filename: &str, bytes: &[u8], origin: ChangeOrigin) {
        let stamp = self.stamp(filename, bytes.len());
        let file = StoredFile { bytes: bytes.to_vec(), stamp };
        let replaced = self.files.lock().unwrap().insert((collection_path.into(), filename.into()), file);
        if replaced.is_none() {
            self.folder_changed(collection_path);
        }
        self.changed(collection_path, filename, origin);
    }

    /// Replaces a file's bytes but not its stamp, as a write in place looks to a reader
    /// that took the stamp just before it (a race no stamp can see), and reports nothing.
    pub fn overwrite_in_place(&self, collection_path: &str, filename: &str, bytes: &[u8]) {
        if let Some(file) = self.files.lock().unwrap().get_mut(&(collection_path.into(), filename.into())) {
            file.bytes = bytes.to_vec();
        }
    }

    /// Removes a file as another program would.
    pub fn remove_raw(&self, collection_path: &str, filename: &str) {
        if self.files.lock().unwrap().remove(&(collection_path.into(), filename.into())).is_some() {
            self.folder_changed(collection_path);
        }
        self.changed(collection_path, filename, ChangeOrigin::Outside);
    }

    /// A file was added to the folder or removed from it.
    fn folder_changed(&self, collection_path: &str) {
        *self.folder_stamps.lock().unwrap().entry(collection_path.to_owned()).or_default() += 1;
    }

    fn changed(&self, collection_path: &str, filename: &str, origin: ChangeOrigin) {
        // Every collection of the folder hears of it (translations by file name share one);
        // none before a subscription: the index is built from a scan anyway.
        let paths = self.collection_paths.lock().unwrap();
        let changes =
            paths.iter().enumerate().filter(|(_, path)| *path == collection_path).map(|(collection, _)| {
                StorageChange::Items { collection, names: vec![filename.to_owned()], origin }
            });
        self.pending.lock().unwrap().extend(changes);
    }

    /// The changes not yet handed to the facade.
    pub fn take_changes(&self) -> Vec<StorageChange> {
        std::mem::take(&mut *self.pending.lock().unwrap())
    }

    /// Every stored file, readable or not.
    pub fn file_count(&self) -> usize {
        self.files.lock().unwrap().len()
    }

    pub fn get_raw(&self, collection_path: &str, filename: &str) -> Option<Vec<u8>> {
        let files = self.files.lock().unwrap();
        files.get(&(collection_path.into(), filename.into())).map(|f| f.bytes.clone())
    }

    fn stamp(&self, name: &str, size: usize) -> FileStamp {
        FileStamp {
            name: name.to_owned(),
            size: size as u64,
            modified: self.now.load(Ordering::Relaxed),
            change_token: self.next_token.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn key(collection: &Collection, name: &ItemFilename) -> (String, String) {
        (collection.path.clone(), name.as_str().to_owned())
    }
}

#[async_trait]
impl ContentStore for MemoryContentStore {
    async fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        self.scans.fetch_add(1, Ordering::Relaxed);
        let files = self.files.lock().unwrap();
        Ok(files
            .iter()
            .filter(|((path, name), _)| *path == collection.path && !name.starts_with('.'))
            .map(|(_, file)| file.stamp.clone())
            .collect())
    }

    async fn folder_stamp(&self, collection: &Collection) -> CoreResult<Option<u64>> {
        Ok(Some(self.folder_stamps.lock().unwrap().get(&collection.path).copied().unwrap_or(0)))
    }

    async fn stat(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>> {
        Ok(self.files.lock().unwrap().get(&Self::key(collection, name)).map(|f| f.stamp.clone()))
    }

    async fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.files.lock().unwrap().get(&Self::key(collection, name)).cloned())
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp> {
        let mut files = self.files.lock().unwrap();
        let key = Self::key(collection, name);
        if files.contains_key(&key) {
            return Err(CoreError::Conflict(format!("{} already exists", name.as_str())));
        }
        let stamp = self.stamp(name.as_str(), bytes.len());
        files.insert(key, StoredFile { bytes: bytes.to_vec(), stamp: stamp.clone() });
        drop(files);
        self.folder_changed(&collection.path);
        Ok(stamp)
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp> {
        let mut files = self.files.lock().unwrap();
        let key = Self::key(collection, name);
        // Checked and written under one lock: exact, like a store's compare-and-swap.
        if files.get(&key).is_none_or(|file| file.stamp.change_token != expected.change_token) {
            return Err(stale(name));
        }
        let stamp = self.stamp(name.as_str(), bytes.len());
        files.insert(key, StoredFile { bytes: bytes.to_vec(), stamp: stamp.clone() });
        Ok(stamp)
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        let removed = self.files.lock().unwrap().remove(&Self::key(collection, name));
        match removed {
            Some(_) => {
                self.folder_changed(&collection.path);
                Ok(())
            }
            None => Err(CoreError::not_found(format!("{} does not exist", name.as_str()))),
        }
    }
}

fn stale(name: &ItemFilename) -> CoreError {
    CoreError::Stale(format!(
        "item file {} changed while it was being written; read it again and retry",
        name.as_str()
    ))
}

/// The memory store reports changes through [`MemoryContentStore::take_changes`] rather
/// than a feed, so tests decide when they are applied; `subscribe` only learns the
/// collections' numbers.
impl ChangeSource for MemoryContentStore {
    fn subscribe(&self, collections: &[Collection]) -> CoreResult<Option<Box<dyn ChangeFeed>>> {
        *self.collection_paths.lock().unwrap() = collections.iter().map(|c| c.path.clone()).collect();
        Ok(None)
    }
}

/// Users and key hashes in memory.
#[derive(Default)]
pub struct MemoryAccounts {
    users: Mutex<Vec<User>>,
    keys: Mutex<Vec<KeyRecord>>,
    /// Password hashes by email.
    passwords: Mutex<std::collections::HashMap<String, String>>,
}

#[async_trait]
impl UserStore for MemoryAccounts {
    async fn list_users(&self) -> CoreResult<Vec<User>> {
        Ok(self.users.lock().unwrap().clone())
    }

    async fn put_user(&self, user: User) -> CoreResult<()> {
        let mut users = self.users.lock().unwrap();
        match users.iter_mut().find(|u| u.email == user.email) {
            Some(existing) => *existing = user,
            None => users.push(user),
        }
        Ok(())
    }

    async fn remove_user(&self, email: &str) -> CoreResult<bool> {
        let mut users = self.users.lock().unwrap();
        let before = users.len();
        users.retain(|u| u.email != email);
        self.passwords.lock().unwrap().remove(email);
        Ok(users.len() != before)
    }

    async fn find_user_with_password(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        let user = self.users.lock().unwrap().iter().find(|u| u.email == email).cloned();
        Ok(user.map(|user| (user, self.passwords.lock().unwrap().get(email).cloned())))
    }

    async fn set_password_hash(&self, email: &str, hash: &str) -> CoreResult<bool> {
        if !self.users.lock().unwrap().iter().any(|u| u.email == email) {
            return Ok(false);
        }
        self.passwords.lock().unwrap().insert(email.to_owned(), hash.to_owned());
        Ok(true)
    }
}

#[async_trait]
impl KeyStore for MemoryAccounts {
    async fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        Ok(self.keys.lock().unwrap().clone())
    }

    async fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        self.keys.lock().unwrap().push(key);
        Ok(())
    }

    async fn remove_keys(
        &self,
        doomed: &(dyn for<'k> Fn(&'k KeyRecord) -> bool + Send + Sync),
    ) -> CoreResult<usize> {
        let mut keys = self.keys.lock().unwrap();
        let before = keys.len();
        keys.retain(|k| !doomed(k));
        Ok(before - keys.len())
    }
}

/// A license held in memory; `set` swaps it as an operator would.
#[derive(Default)]
pub struct MemoryLicense {
    license: Mutex<Option<License>>,
}

impl MemoryLicense {
    pub fn with_features(features: &[&str]) -> Self {
        let license = Self::default();
        license.set(Some(License {
            licensee: "Test".into(),
            features: features.iter().map(|f| (*f).to_owned()).collect(),
            expires_at: None,
            signature: None,
        }));
        license
    }

    pub fn set(&self, license: Option<License>) {
        *self.license.lock().unwrap() = license;
    }
}

#[async_trait]
impl LicenseSource for MemoryLicense {
    async fn current(&self) -> CoreResult<Option<License>> {
        Ok(self.license.lock().unwrap().clone())
    }

    async fn install(&self, license_text: &str) -> CoreResult<()> {
        self.set(Some(License::from_yaml(license_text)?));
        Ok(())
    }
}

/// Keeps every published event for assertions.
#[derive(Default)]
pub struct RecordingEvents {
    events: Mutex<Vec<Event>>,
}

impl RecordingEvents {
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.events.lock().unwrap())
    }
}

impl EventSink for RecordingEvents {
    fn publish(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
}

/// A clock that stands still until moved.
pub struct FixedClock {
    unix: AtomicI64,
}

impl FixedClock {
    pub fn at_unix(seconds: i64) -> Self {
        Self { unix: AtomicI64::new(seconds) }
    }

    pub fn now_unix(&self) -> i64 {
        self.unix.load(Ordering::Relaxed)
    }

    pub fn advance(&self, seconds: i64) {
        self.unix.fetch_add(seconds, Ordering::Relaxed);
    }
}

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(self.unix.load(Ordering::Relaxed)).expect("valid test time")
    }
}

/// Snapshots of one item: timestamp → bytes and author.
type History = BTreeMap<i64, (Vec<u8>, Option<String>)>;

/// Item history in memory: (collection path, filename) → history.
#[derive(Default)]
pub struct MemoryVersions {
    histories: Mutex<BTreeMap<(String, String), History>>,
}

#[async_trait]
impl VersionStore for MemoryVersions {
    async fn list_versions(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let histories = self.histories.lock().unwrap();
        Ok(histories
            .get(&MemoryContentStore::key(collection, name))
            .map(|h| {
                h.iter()
                    .map(|(t, (b, author))| VersionStamp {
                        timestamp: *t,
                        size: b.len() as u64,
                        author: author.clone(),
                        commit: None,
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let histories = self.histories.lock().unwrap();
        Ok(histories
            .get(&MemoryContentStore::key(collection, name))
            .and_then(|h| h.get(&timestamp))
            .map(|v| v.0.clone()))
    }

    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>> {
        let histories = self.histories.lock().unwrap();
        let version =
            histories.get(&MemoryContentStore::key(collection, name)).and_then(|h| h.get(&timestamp));
        Ok(version.and_then(|(_, author)| author.clone()))
    }

    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        let mut histories = self.histories.lock().unwrap();
        let history = histories.entry(MemoryContentStore::key(collection, name)).or_default();
        if history.contains_key(&timestamp) {
            return Err(CoreError::Conflict(format!("version {timestamp} of {} exists", name.as_str())));
        }
        history.insert(timestamp, (bytes.to_vec(), author.and_then(crate::version_authors::author_line)));
        Ok(())
    }

    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        let mut histories = self.histories.lock().unwrap();
        if let Some(history) = histories.get_mut(&MemoryContentStore::key(collection, name)) {
            history.remove(&timestamp);
        }
        Ok(())
    }

    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let histories = self.histories.lock().unwrap();
        Ok(histories
            .iter()
            .filter(|((path, _), history)| *path == collection.path && !history.is_empty())
            .map(|((_, name), _)| name.clone())
            .collect())
    }
}

/// Settings in memory.
#[derive(Default)]
pub struct MemorySettings {
    theme: Mutex<Option<serde_json::Map<String, serde_json::Value>>>,
}

#[async_trait]
impl SettingsStore for MemorySettings {
    async fn load_theme(&self) -> CoreResult<Option<serde_json::Map<String, serde_json::Value>>> {
        Ok(self.theme.lock().unwrap().clone())
    }

    async fn save_theme(&self, theme: &serde_json::Map<String, serde_json::Value>) -> CoreResult<()> {
        *self.theme.lock().unwrap() = Some(theme.clone());
        Ok(())
    }
}

/// Webhook subscriptions held in memory; `set` replaces them as the CLI would.
#[derive(Default)]
pub struct MemoryWebhooks {
    webhooks: Mutex<Vec<WebhookInfo>>,
}

impl MemoryWebhooks {
    pub fn set(&self, webhooks: Vec<WebhookInfo>) {
        *self.webhooks.lock().unwrap() = webhooks;
    }
}

#[async_trait]
impl WebhookDirectory for MemoryWebhooks {
    async fn list_webhooks(&self) -> CoreResult<Vec<WebhookInfo>> {
        Ok(self.webhooks.lock().unwrap().clone())
    }
}

/// Index snapshots in a map, by collection folder; [`Self::saves`] counts the saves.
#[derive(Default)]
pub struct MemorySnapshots {
    by_folder: Mutex<BTreeMap<String, Vec<u8>>>,
    pub saves: AtomicU64,
    pub search_saves: AtomicU64,
}

impl MemorySnapshots {
    /// Replaces a snapshot's bytes, as a damaged disk would.
    pub fn corrupt(&self, collection_path: &str, bytes: &[u8]) {
        self.by_folder.lock().unwrap().insert(collection_path.to_owned(), bytes.to_vec());
    }
}

#[async_trait]
impl IndexSnapshots for MemorySnapshots {
    async fn load(&self, collection: &Collection) -> CoreResult<Option<Vec<u8>>> {
        Ok(self.by_folder.lock().unwrap().get(&snapshot_key(collection)).cloned())
    }

    async fn save(&self, collection: &Collection, bytes: Vec<u8>) -> CoreResult<()> {
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.by_folder.lock().unwrap().insert(snapshot_key(collection), bytes);
        Ok(())
    }

    async fn load_search(&self, collection: &Collection) -> CoreResult<Option<Vec<u8>>> {
        Ok(self.by_folder.lock().unwrap().get(&search_key(collection)).cloned())
    }

    async fn save_search(&self, collection: &Collection, bytes: Vec<u8>) -> CoreResult<()> {
        self.search_saves.fetch_add(1, Ordering::Relaxed);
        self.by_folder.lock().unwrap().insert(search_key(collection), bytes);
        Ok(())
    }
}

/// Where a collection's search index snapshot is kept, beside its index's.
fn search_key(collection: &Collection) -> String {
    format!("search:{}", snapshot_key(collection))
}

/// A preview key in memory; [`crate::ports::PreviewKeys::rotate`] counts up.
#[derive(Default)]
pub struct MemoryPreviewKeys {
    generation: AtomicI64,
    ended: Mutex<HashMap<String, i64>>,
}

#[async_trait]
impl crate::ports::PreviewKeys for MemoryPreviewKeys {
    async fn current(&self) -> CoreResult<Vec<u8>> {
        Ok(format!("preview key {}", self.generation.load(Ordering::Relaxed)).into_bytes())
    }

    async fn rotate(&self) -> CoreResult<()> {
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn end_item_links(&self, item: &str, at_ms: i64) -> CoreResult<()> {
        let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        let entry = ended.entry(item.to_owned()).or_insert(at_ms);
        *entry = (*entry).max(at_ms);
        Ok(())
    }

    async fn item_links_ended(&self, item: &str) -> CoreResult<Option<i64>> {
        Ok(self.ended.lock().unwrap_or_else(|p| p.into_inner()).get(item).copied())
    }
}

/// State documents in a map; one lock for every update, as a store's writers take turns.
#[derive(Default)]
pub struct MemoryStateDocuments {
    texts: Mutex<HashMap<String, String>>,
}

impl crate::ports::StateDocuments for MemoryStateDocuments {
    fn read(&self, name: &str) -> CoreResult<Option<String>> {
        Ok(self.texts.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned())
    }

    fn update(&self, name: &str, mut change: crate::ports::TextChange) -> CoreResult<()> {
        let mut texts = self.texts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(text) = change(texts.get(name).map(String::as_str))? {
            texts.insert(name.to_owned(), text);
        }
        Ok(())
    }

    fn describe(&self, name: &str) -> String {
        format!("{name} in memory")
    }
}

/// Editor sessions in a map. Writes are stamped with its own clock (Unix seconds, from
/// 2026-01-01; [`Self::advance`] moves it), as a store stamps its files.
pub struct MemorySessionStore {
    /// key → (text, version, written).
    records: Mutex<HashMap<String, (String, u64, i64)>>,
    next_version: AtomicU64,
    now: AtomicI64,
}

impl Default for MemorySessionStore {
    fn default() -> Self {
        Self {
            records: Mutex::default(),
            next_version: AtomicU64::new(1),
            now: AtomicI64::new(1_767_225_600),
        }
    }
}

impl MemorySessionStore {
    /// Moves the clock that stamps writes.
    pub fn advance(&self, seconds: i64) {
        self.now.fetch_add(seconds, Ordering::Relaxed);
    }

    /// Every record's key and text, for tests.
    pub fn texts(&self) -> Vec<(String, String)> {
        self.lock().iter().map(|(key, (text, ..))| (key.clone(), text.clone())).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, u64, i64)>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, text: &str) -> (String, u64, i64) {
        (text.to_owned(), self.next_version.fetch_add(1, Ordering::Relaxed), self.now.load(Ordering::Relaxed))
    }
}

#[async_trait]
impl crate::ports::SessionStore for MemorySessionStore {
    async fn get(&self, key: &str) -> CoreResult<Option<crate::ports::StoredSession>> {
        Ok(self.lock().get(key).map(|(text, version, _)| crate::ports::StoredSession {
            text: text.clone(),
            version: version.to_string(),
        }))
    }

    async fn put(&self, key: &str, text: &str) -> CoreResult<()> {
        let record = self.record(text);
        self.lock().insert(key.to_owned(), record);
        Ok(())
    }

    async fn replace(&self, key: &str, text: &str, version: &str) -> CoreResult<bool> {
        let record = self.record(text);
        let mut records = self.lock();
        match records.get_mut(key) {
            Some(current) if current.1.to_string() == version => {
                *current = record;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn remove(&self, key: &str) -> CoreResult<()> {
        self.lock().remove(key);
        Ok(())
    }

    async fn list(&self) -> CoreResult<Vec<(String, i64)>> {
        Ok(self.lock().iter().map(|(key, (_, _, written))| (key.clone(), *written)).collect())
    }
}

/// The folder, and the language of a translation by file name (which shares the folder).
fn snapshot_key(collection: &Collection) -> String {
    match collection.naming.suffix() {
        Some(lang) => format!("{}%lang-{lang}", collection.path),
        None => collection.path.clone(),
    }
}
