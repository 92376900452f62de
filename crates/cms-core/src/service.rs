//! The application facade: the one type the web layer and the CLI call.

use std::sync::{Arc, Mutex, MutexGuard};

use ring::digest;
use time::OffsetDateTime;

use crate::account::{self, KEY_RANDOM_BYTES, KeyRecord, NewKey, Role, User};
use crate::codec::YamlLimits;
use crate::collection::{self, Collection};
use crate::config::SiteConfig;
use crate::document::{Frontmatter, ItemDocument};
use crate::error::{CoreError, CoreResult};
use crate::events::{Event, EventData, EventKind};
use crate::index::{CollectionIndex, IndexedItem};
use crate::item::{self, ItemMeta};
use crate::license::{Feature, License, LicenseState};
use crate::ports::{Clock, ContentStore, EventSink, KeyStore, LicenseSource, StoredFile, UserStore};
use crate::query::{ListQuery, Page, StatusFilter};
use crate::render;
use crate::slug::{ItemFilename, ItemRef, Slug, slugify};

/// The adapters the facade works through.
#[derive(Clone)]
pub struct Ports {
    pub content: Arc<dyn ContentStore>,
    pub users: Arc<dyn UserStore>,
    pub keys: Arc<dyn KeyStore>,
    pub license: Arc<dyn LicenseSource>,
    pub events: Arc<dyn EventSink>,
    pub clock: Arc<dyn Clock>,
}

/// Site-wide settings the facade needs.
#[derive(Debug, Clone)]
pub struct SiteInfo {
    pub name: String,
    /// Absolute, without a trailing slash.
    pub url: String,
    pub per_page: usize,
    pub max_per_page: usize,
}

impl SiteInfo {
    /// `https://example.com` + `/blog/hello`.
    pub fn absolute_url(&self, site_relative: &str) -> String {
        format!("{}{}", self.url, site_relative)
    }
}

/// Who is asking: nobody in particular, or the user behind a valid key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    Anonymous,
    Key(Principal),
}

impl Viewer {
    fn has_key(&self) -> bool {
        matches!(self, Self::Key(_))
    }
}

/// An authenticated key and its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user: User,
    pub key_id: String,
}

impl Principal {
    /// `Forbidden` unless the user's role is at least `role`.
    pub fn require_role(&self, role: Role) -> CoreResult<()> {
        if self.user.role >= role {
            Ok(())
        } else {
            Err(CoreError::Forbidden(format!(
                "this route needs the {role} role; the key's user {} is {}",
                self.user.email, self.user.role
            )))
        }
    }
}

/// A rendered item with its metadata.
#[derive(Debug, Clone)]
pub struct ItemView {
    pub collection: usize,
    pub meta: ItemMeta,
    pub url: String,
    pub canonical_url: String,
    pub excerpt: String,
    pub fm: Frontmatter,
    pub html: String,
    pub etag: String,
}

/// An item's source form.
#[derive(Debug, Clone)]
pub struct RawItem {
    pub collection: usize,
    pub meta: ItemMeta,
    pub doc: ItemDocument,
    pub etag: String,
}

/// A list entry with its URLs.
#[derive(Debug, Clone)]
pub struct ItemSummary {
    pub item: Arc<IndexedItem>,
    pub url: String,
    pub canonical_url: String,
}

/// The body of a create request.
#[derive(Debug, Clone, Default)]
pub struct NewItem {
    pub slug: Option<String>,
    pub date_prefix: Option<bool>,
    pub fm: Frontmatter,
    pub body: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// An omitted body saves an empty body (as the spec says).
    Put,
    /// An omitted body keeps the stored body.
    Patch,
}

/// The body of an update request.
#[derive(Debug, Clone)]
pub struct ItemUpdate {
    pub mode: UpdateMode,
    pub fm: Frontmatter,
    pub body: Option<String>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub filename: String,
    pub slug: String,
    pub folder: usize,
    /// ETag of the new content (`None` after a delete).
    pub etag: Option<String>,
}

/// The CMS: collections, items, accounts and license over the ports.
pub struct Cms {
    site: SiteInfo,
    collections: Vec<Collection>,
    license_public_key: Option<String>,
    ports: Ports,
    indexes: Vec<Mutex<CollectionIndex>>,
    /// One lock per collection: writes to a collection serialize, so a read-modify-write
    /// never loses another's changes.
    write_locks: Vec<Mutex<()>>,
}

impl Cms {
    pub fn new(config: &SiteConfig, ports: Ports) -> Self {
        let collections: Vec<Collection> =
            config.collections.iter().enumerate().map(|(i, c)| Collection::from_config(i, c)).collect();
        let site = SiteInfo {
            name: config.site.name.clone(),
            url: config.site.url.trim_end_matches('/').to_owned(),
            per_page: config.site.per_page as usize,
            max_per_page: config.site.max_per_page as usize,
        };
        Self {
            indexes: collections.iter().map(|_| Mutex::default()).collect(),
            write_locks: collections.iter().map(|_| Mutex::default()).collect(),
            collections,
            site,
            license_public_key: config.license.public_key.clone(),
            ports,
        }
    }

    pub fn site(&self) -> &SiteInfo {
        &self.site
    }

    pub fn collections(&self) -> &[Collection] {
        &self.collections
    }

    /// Resolves `{collection}`: index or label slug.
    pub fn collection(&self, key: &str) -> CoreResult<&Collection> {
        collection::resolve(&self.collections, key)
    }

    pub fn now(&self) -> OffsetDateTime {
        self.ports.clock.now()
    }

    // ---- license and keys -------------------------------------------------------------

    pub fn license_state(&self) -> CoreResult<LicenseState> {
        let license = self.ports.license.current()?;
        Ok(LicenseState::evaluate(license, self.license_public_key.as_deref(), self.now()))
    }

    /// `PaymentRequired` unless the license is active and has `feature`.
    pub fn require_feature(&self, feature: Feature) -> CoreResult<()> {
        self.license_state()?.require(feature)
    }

    /// Validates and installs a license file's text.
    pub fn install_license(&self, text: &str) -> CoreResult<License> {
        let license = License::from_yaml(text)?;
        if let Some(key) = &self.license_public_key {
            license.verify(key)?;
        }
        self.ports.license.install(text)?;
        Ok(license)
    }

    /// Checks a presented key: its family, that it is known, and that its user exists.
    pub fn authenticate(&self, presented: &str) -> CoreResult<Principal> {
        account::check_key_family(presented)?;
        let hash = account::hash_key(presented);
        let key = self
            .ports
            .keys
            .find_key_by_hash(&hash)?
            .ok_or_else(|| CoreError::Unauthorized("unknown or revoked API key".into()))?;
        let user = self
            .ports
            .users
            .find_user(&key.email)?
            .ok_or_else(|| CoreError::Unauthorized("the user of this API key no longer exists".into()))?;
        Ok(Principal { user, key_id: key.id })
    }

    // ---- items: reads ------------------------------------------------------------------

    /// One page of a collection's items, from the index.
    pub fn list_items(
        &self,
        collection: &Collection,
        query: &ListQuery,
        viewer: &Viewer,
    ) -> CoreResult<Page<ItemSummary>> {
        if query.status != StatusFilter::Published && !viewer.has_key() {
            return Err(CoreError::Unauthorized(
                "listing drafts (status=draft or status=all) needs an API key".into(),
            ));
        }
        let per_page = query.per_page.unwrap_or(self.site.per_page).min(self.site.max_per_page);
        let mut items: Vec<Arc<IndexedItem>> =
            self.indexed_items(collection)?.into_iter().filter(|i| query.admits(&i.meta)).collect();
        items.sort_by(|a, b| query.compare(&a.meta, &b.meta));
        Ok(Page::cut(items, query.page, per_page, query.offset).map(|item| self.summary(collection, item)))
    }

    /// Every usable item of a collection, as the index holds them.
    pub fn indexed_items(&self, collection: &Collection) -> CoreResult<Vec<Arc<IndexedItem>>> {
        let scan = self.ports.content.scan(collection)?;
        let mut index = lock(&self.indexes[collection.index]);
        index.refresh(scan, |name| self.ports.content.read(collection, name))
    }

    fn summary(&self, collection: &Collection, item: Arc<IndexedItem>) -> ItemSummary {
        let url = collection.item_url(&item.meta.slug);
        ItemSummary { canonical_url: self.site.absolute_url(&url), url, item }
    }

    /// A single item, rendered. Drafts are invisible without a key.
    pub fn read_item(&self, collection: &Collection, item: &str, viewer: &Viewer) -> CoreResult<ItemView> {
        let item_ref = ItemRef::parse(item)?;
        let (name, file) = self.load(collection, &item_ref)?;
        let doc = parse_stored(&name, &file)?;
        let meta = ItemMeta::derive(&name, &doc, file.stamp.modified, file.stamp.size);
        if meta.status == item::Status::Draft && !viewer.has_key() {
            return Err(item_not_found(collection, &item_ref));
        }
        let excerpt =
            match doc.fm.get("excerpt").or_else(|| doc.fm.get("description")).and_then(|v| v.as_str()) {
                Some(text) => text.to_owned(),
                None => render::excerpt(&render::to_plain_text(&doc.body), crate::index::EXCERPT_CHARS),
            };
        let url = collection.item_url(&meta.slug);
        Ok(ItemView {
            collection: collection.index,
            canonical_url: self.site.absolute_url(&url),
            url,
            excerpt,
            html: render::to_html(&doc.body),
            etag: etag_of(&file.bytes),
            fm: doc.fm,
            meta,
        })
    }

    /// An item's frontmatter and Markdown as stored.
    pub fn read_raw(&self, collection: &Collection, item: &str) -> CoreResult<RawItem> {
        let item_ref = ItemRef::parse(item)?;
        let (name, file) = self.load(collection, &item_ref)?;
        let doc = parse_stored(&name, &file)?;
        Ok(RawItem {
            collection: collection.index,
            meta: ItemMeta::derive(&name, &doc, file.stamp.modified, file.stamp.size),
            etag: etag_of(&file.bytes),
            doc,
        })
    }

    /// Finds the file an item reference names and reads it.
    fn load(&self, collection: &Collection, item_ref: &ItemRef) -> CoreResult<(ItemFilename, StoredFile)> {
        let name = self.locate(collection, item_ref)?;
        let file = self
            .ports
            .content
            .read(collection, &name)?
            .ok_or_else(|| item_not_found(collection, item_ref))?;
        Ok((name, file))
    }

    /// The filename an item reference names (first in name order when several match).
    fn locate(&self, collection: &Collection, item_ref: &ItemRef) -> CoreResult<ItemFilename> {
        let mut matches: Vec<ItemFilename> = self
            .ports
            .content
            .scan(collection)?
            .into_iter()
            .filter_map(|stamp| ItemFilename::parse(&stamp.name))
            .filter(|name| item_ref.matches(name))
            .collect();
        matches.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        matches.into_iter().next().ok_or_else(|| item_not_found(collection, item_ref))
    }

    // ---- items: writes -----------------------------------------------------------------

    pub fn create_item(&self, collection: &Collection, new: NewItem) -> CoreResult<WriteOutcome> {
        let NewItem { slug, date_prefix, mut fm, body } = new;
        item::validate_frontmatter(&fm)?;
        let slug = match slug {
            Some(slug) => Slug::parse(&slug)?,
            None => {
                let title = fm
                    .get("title")
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| CoreError::invalid("slug is required when fm.title is absent"))?;
                Slug::parse(&slugify(title)).map_err(|_| {
                    CoreError::invalid(format!("cannot derive a slug from fm.title {title:?}; send a slug"))
                })?
            }
        };
        fm.retain(|_, v| !v.is_null());
        if !fm.contains_key("status") {
            fm.insert("status".into(), item::Status::Draft.as_str().into());
        }
        let date = if date_prefix.unwrap_or(collection.date_prefix) {
            let from_fm =
                fm.get("date").and_then(|d| d.as_str()).and_then(|d| d.get(..10)).map(str::to_owned);
            Some(from_fm.unwrap_or_else(|| today(self.now())))
        } else {
            None
        };
        let name = ItemFilename::new(&slug, date.as_deref());
        let bytes = encode(&ItemDocument { fm, body })?;

        let _guard = lock(&self.write_locks[collection.index]);
        let taken = self
            .ports
            .content
            .scan(collection)?
            .into_iter()
            .filter_map(|s| ItemFilename::parse(&s.name))
            .find(|existing| existing.slug() == slug.as_str());
        if let Some(existing) = taken {
            return Err(CoreError::Conflict(format!(
                "an item with slug {slug:?} already exists in collection {:?} ({})",
                collection.slug,
                existing.as_str()
            )));
        }
        self.ports.content.create(collection, &name, &bytes)?;
        self.publish(EventKind::FileCreated, file_event(collection, &name));
        Ok(outcome(collection, &name, Some(&bytes)))
    }

    pub fn update_item(
        &self,
        collection: &Collection,
        item: &str,
        update: ItemUpdate,
        if_match: Option<&str>,
    ) -> CoreResult<WriteOutcome> {
        item::validate_frontmatter(&update.fm)?;
        let item_ref = ItemRef::parse(item)?;
        let _guard = lock(&self.write_locks[collection.index]);
        let (name, file) = self.load(collection, &item_ref)?;
        check_precondition(if_match, &file.bytes)?;
        let mut doc = parse_stored(&name, &file)?;
        doc.merge_frontmatter(update.fm);
        doc.body = match (update.body, update.mode) {
            (Some(body), _) => body,
            (None, UpdateMode::Put) => String::new(),
            (None, UpdateMode::Patch) => doc.body,
        };
        let bytes = encode(&doc)?;
        self.ports.content.replace(collection, &name, &bytes)?;
        self.publish(EventKind::FileUpdated, file_event(collection, &name));
        Ok(outcome(collection, &name, Some(&bytes)))
    }

    pub fn delete_item(
        &self,
        collection: &Collection,
        item: &str,
        if_match: Option<&str>,
    ) -> CoreResult<WriteOutcome> {
        let item_ref = ItemRef::parse(item)?;
        let _guard = lock(&self.write_locks[collection.index]);
        let (name, file) = self.load(collection, &item_ref)?;
        check_precondition(if_match, &file.bytes)?;
        self.ports.content.delete(collection, &name)?;
        self.publish(EventKind::FileDeleted, file_event(collection, &name));
        Ok(outcome(collection, &name, None))
    }

    // ---- accounts ----------------------------------------------------------------------

    pub fn users(&self) -> CoreResult<Vec<User>> {
        self.ports.users.list_users()
    }

    /// Adds a user or changes an existing user's role. Returns the user and whether it is new.
    pub fn add_user(&self, email: &str, role: Role) -> CoreResult<(User, bool)> {
        let email = account::parse_email(email)?;
        match self.ports.users.find_user(&email)? {
            Some(existing) if existing.role == role => Ok((existing, false)),
            Some(existing) => {
                let user = User { role, ..existing };
                self.ports.users.put_user(user.clone())?;
                self.publish(EventKind::UserUpdated, EventData::User { email, role: None });
                Ok((user, false))
            }
            None => {
                let user = User { email: email.clone(), role, created: self.now().unix_timestamp() };
                self.ports.users.put_user(user.clone())?;
                self.publish(EventKind::UserCreated, EventData::User { email, role: Some(role) });
                Ok((user, true))
            }
        }
    }

    /// Removes a user and every key of theirs.
    pub fn remove_user(&self, email: &str) -> CoreResult<()> {
        let email = account::parse_email(email)?;
        if !self.ports.users.remove_user(&email)? {
            return Err(CoreError::not_found(format!("no user {email}")));
        }
        self.ports.keys.remove_keys(&|k| k.email == email)?;
        self.publish(EventKind::UserDeleted, EventData::User { email, role: None });
        Ok(())
    }

    pub fn keys(&self) -> CoreResult<Vec<KeyRecord>> {
        self.ports.keys.list_keys()
    }

    /// Creates a key for an existing user from caller-supplied randomness.
    pub fn create_key(&self, email: &str, name: &str, random: [u8; KEY_RANDOM_BYTES]) -> CoreResult<NewKey> {
        let email = account::parse_email(email)?;
        if self.ports.users.find_user(&email)?.is_none() {
            return Err(CoreError::not_found(format!("no user {email}; add it with `cms users add` first")));
        }
        let key = NewKey::from_random(random, &email, name, self.now().unix_timestamp());
        self.ports.keys.add_key(key.record.clone())?;
        Ok(key)
    }

    pub fn revoke_key(&self, id: &str) -> CoreResult<()> {
        match self.ports.keys.remove_keys(&|k| k.id == id)? {
            0 => Err(CoreError::not_found(format!("no key with id {id}"))),
            _ => Ok(()),
        }
    }

    fn publish(&self, kind: EventKind, data: EventData) {
        self.ports.events.publish(Event { kind, timestamp: self.now(), data });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves no half-done write behind (writes are atomic
    // in the store), so the data behind a poisoned lock is still good.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn item_not_found(collection: &Collection, item_ref: &ItemRef) -> CoreError {
    CoreError::not_found(format!("no item {:?} in collection {:?}", item_ref.to_string(), collection.slug))
}

fn parse_stored(name: &ItemFilename, file: &StoredFile) -> CoreResult<ItemDocument> {
    let text = std::str::from_utf8(&file.bytes)
        .map_err(|_| CoreError::Corrupt(format!("item file {} is not UTF-8 text", name.as_str())))?;
    ItemDocument::parse(text).map_err(|e| {
        CoreError::Corrupt(format!("item file {} has frontmatter that cannot be read: {e}", name.as_str()))
    })
}

/// Serializes a document and proves it reads back, so nothing is written that the server
/// could not read again.
fn encode(doc: &ItemDocument) -> CoreResult<Vec<u8>> {
    let text = doc.to_file_text()?;
    let yaml_len = text.len() - doc.body.len();
    if yaml_len > YamlLimits::FRONTMATTER.max_bytes {
        return Err(CoreError::TooLarge(format!(
            "the frontmatter is {yaml_len} bytes as YAML; the limit is {} bytes",
            YamlLimits::FRONTMATTER.max_bytes
        )));
    }
    match ItemDocument::parse(&text) {
        Ok(back) if back == *doc => Ok(text.into_bytes()),
        Ok(_) => Err(CoreError::invalid("fm contains values that do not survive a YAML round trip")),
        Err(e) => Err(CoreError::invalid(format!("fm cannot be stored as YAML: {e}"))),
    }
}

/// A strong ETag of a file's bytes.
pub fn etag_of(bytes: &[u8]) -> String {
    let digest = digest::digest(&digest::SHA256, bytes);
    format!("\"{}\"", &hex::encode(digest)[..32])
}

/// `If-Match`: `*` or a comma-separated list of ETags, one of which must be current.
fn check_precondition(if_match: Option<&str>, current: &[u8]) -> CoreResult<()> {
    let Some(header) = if_match else { return Ok(()) };
    let etag = etag_of(current);
    if header.split(',').map(str::trim).any(|tag| tag == "*" || tag == etag) {
        Ok(())
    } else {
        Err(CoreError::PreconditionFailed(format!(
            "If-Match {header} does not match the item's current ETag {etag}; read it again and retry"
        )))
    }
}

fn file_event(collection: &Collection, name: &ItemFilename) -> EventData {
    EventData::File { filename: name.as_str().to_owned(), folder: collection.index }
}

fn outcome(collection: &Collection, name: &ItemFilename, bytes: Option<&[u8]>) -> WriteOutcome {
    WriteOutcome {
        filename: name.as_str().to_owned(),
        slug: name.slug().to_owned(),
        folder: collection.index,
        etag: bytes.map(etag_of),
    }
}

fn today(now: OffsetDateTime) -> String {
    let date = now.date();
    format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day())
}
