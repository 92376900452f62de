//! The application facade: the one type the web layer and the CLI call.

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use time::OffsetDateTime;

use crate::account;
use crate::changes::{ChangeLog, ChangeSubscriber};
use crate::collection::{self, Collection};
use crate::config::SiteConfig;
use crate::document::{Frontmatter, ItemDocument};
use crate::error::{CoreError, CoreResult};
use crate::event_log::{Announcer, EventLog};
use crate::events::{Event, EventData, EventKind};
use crate::item::ItemMeta;
use crate::license::{Feature, License, LicenseState};
pub use crate::policy::Principal;
use crate::policy::{Caller, Operation};
use crate::ports::{
    ChangeSource, Clock, ContentStore, EventSink, IndexSnapshots, KeyStore, LicenseSource, ResourceStore,
    SettingsStore, UserStore, VersionStore, WebhookDirectory,
};
use crate::resource::ResourceFolder;

mod accounts;
mod discovery;
mod discovery_params;
mod health;
mod incoming;
mod index;
mod items;
mod languages;
mod locks;
mod model;
mod previews;
mod rendered;
mod resources;
mod schedule;
mod search;
mod settings;
mod shared_fields;
mod stream_tokens;
mod translating;
mod translation_marks;
mod upkeep;
mod variants;
mod versions;
mod webhooks;

pub use discovery::{RelatedItem, SearchEntry, TagCount, TagLink};
pub use discovery_params::{
    DEFAULT_AUTHOR_PAGE_PATH, DEFAULT_TAG_PAGE_PATH, RELATED_DEFAULT_LIMIT, RSS_DEFAULT_LIMIT, RelatedParams,
    RelatedText, RssParams, RssText, SITEMAP_MAX_URLS, SearchIndexParams, SearchIndexText, SitemapParams,
    SitemapText, TagItemsParams, TagItemsText, TagsParams, TagsText,
};

pub use crate::engine::index::{IndexedItem, StatusCounts};
pub use crate::engine::kept::{Elements, KeptField, KeptValue};
pub use crate::item_file::{Precondition, etag_of};
pub use accounts::SESSION_KEY_ID;
pub use incoming::Incoming;
pub use index::{Indexing, SkippedFile};
pub use languages::{InLanguage, Translation, TranslationFilter};
pub use previews::PreviewLink;
pub use rendered::AheadSink;
pub use resources::{ResourceFile, ResourceListing, ServedFile, Upload, parse_folder_index};
pub use search::{SearchHit, SearchInput, SearchParams, SearchQuery};
pub use stream_tokens::{STREAM_TOKEN_PREFIX, StreamToken};
pub use translating::SourceDiff;
pub use upkeep::Upkeep;
pub use variants::{ServedVariant, VariantBody, VariantInfo};
pub use versions::{DeletedItem, DeletedItems, VersionContent, VersionId, VersionList};

/// The adapters the facade works through.
#[derive(Clone)]
pub struct Ports {
    pub content: Arc<dyn ContentStore>,
    pub users: Arc<dyn UserStore>,
    pub keys: Arc<dyn KeyStore>,
    pub license: Arc<dyn LicenseSource>,
    pub events: Arc<dyn EventSink>,
    pub clock: Arc<dyn Clock>,
    pub versions: Arc<dyn VersionStore>,
    pub resources: Arc<dyn ResourceStore>,
    pub settings: Arc<dyn SettingsStore>,
    pub webhooks: Arc<dyn WebhookDirectory>,
    /// Reports changes made behind the facade's back (see [`Upkeep::follow_changes`]).
    pub changes: Arc<dyn ChangeSource>,
    /// Keeps each collection's index between runs (see `crate::engine::snapshot`).
    pub snapshots: Arc<dyn IndexSnapshots>,
    /// Rendered image variants (see `crate::images`).
    pub variants: Arc<dyn crate::ports::VariantStore>,
    /// Decodes, resizes and encodes images.
    pub images: Arc<dyn crate::ports::ImageCodec>,
    /// The key of preview links; `None`: the site makes none.
    pub previews: Option<Arc<dyn crate::ports::PreviewKeys>>,
    /// Whether other servers serve the same store (which decides who announces what).
    pub sharing: crate::ports::Sharing,
    /// The site's event history (see `crate::event_log`).
    pub event_store: Arc<dyn crate::ports::EventStore>,
}

impl Ports {
    /// A backend's ports (see [`crate::ports::SiteStorage`]) with what is not storage's
    /// business: events, time, the webhook directory. No image codec: decoding is CPU
    /// work, not the store's; the composition root puts one in (the `cms-images` pool).
    pub fn of_storage(
        storage: &crate::ports::SiteStorage,
        events: Arc<dyn EventSink>,
        clock: Arc<dyn Clock>,
        webhooks: Arc<dyn WebhookDirectory>,
    ) -> Self {
        Self {
            content: storage.content.clone(),
            users: storage.users.clone(),
            keys: storage.keys.clone(),
            license: storage.license.clone(),
            events,
            clock,
            versions: storage.versions.clone(),
            resources: storage.resources.clone(),
            settings: storage.settings.clone(),
            webhooks,
            changes: storage.changes.clone(),
            snapshots: storage.snapshots.clone(),
            variants: storage.variants.clone(),
            images: Arc::new(crate::ports::NoImageCodec),
            previews: Some(storage.previews.clone()),
            sharing: storage.sharing,
            event_store: storage.events.clone(),
        }
    }
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
    /// A valid preview link: sees its one item whatever its status or schedule.
    Preview,
}

impl Viewer {
    /// Whether drafts and scheduled items are visible to this viewer.
    pub fn has_key(&self) -> bool {
        match self {
            Self::Key(principal) => crate::policy::may(principal, Operation::ReadDrafts),
            Self::Preview => true,
            Self::Anonymous => false,
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
    /// Names everything this view shows (see [`ItemVersion`]).
    pub version: u64,
    /// Its language and translations, on a site with `languages:`.
    pub language: Option<InLanguage>,
}

/// What names a single read's answer before it is rendered: two reads with the same
/// `version` answer the same, so a caller that keeps answers by version can skip the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemVersion {
    pub etag: String,
    pub version: u64,
}

impl ItemVersion {
    /// A file version (see [`crate::item_file::file_version`]) in a collection.
    pub(crate) fn of(collection: usize, file_version: u64, etag: String) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        ("item", collection, file_version).hash(&mut hasher);
        Self { etag, version: hasher.finish() }
    }

    /// The version of an answer that also says what `languages` names (its translations,
    /// the language asked for): 0 (a site without languages) leaves it as it is. The ETag
    /// gets the same as a suffix (`"<file's tag>-<16 hex digits>"`), which `If-Match`
    /// takes as the file's tag (see [`Precondition`]).
    pub(crate) fn with_languages(mut self, languages: u64) -> Self {
        if languages != 0 {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            (self.version, languages).hash(&mut hasher);
            self.version = hasher.finish();
            self.etag = crate::item_file::etag_with_suffix(&self.etag, languages);
        }
        self
    }
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
    /// The fields a list's `fields=` and `expand=` asked for (`None`: neither was given),
    /// as the file has them.
    pub fm: Option<crate::document::Frontmatter>,
    /// For each reference `expand=` names: the item it refers to, `None` when there is
    /// none the caller may see (the answer shows it in `fm` in place of the slug).
    pub expanded: Vec<(String, Option<Box<ItemSummary>>)>,
    /// Its language and translations, on a site with `languages:`.
    pub language: Option<InLanguage>,
}

/// A tag of a collection's items, as the web editor's tag filter offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionTag {
    /// What a list's `tags` filter takes.
    pub slug: String,
    /// As the newest item carrying it writes it.
    pub tag: String,
    /// How many items carry it.
    pub items: usize,
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

/// The license as loaded: evaluated (parsed, signature checked) once, with its expiry kept
/// so that a license running out while the server runs is seen at once.
struct LoadedLicense {
    state: LicenseState,
    expires: Option<OffsetDateTime>,
}

impl LoadedLicense {
    fn state_at(&self, now: OffsetDateTime) -> std::borrow::Cow<'_, LicenseState> {
        match (&self.state, self.expires) {
            (LicenseState::Active(license), Some(expires)) if expires <= now => {
                std::borrow::Cow::Owned(LicenseState::Expired(license.clone()))
            }
            (state, _) => std::borrow::Cow::Borrowed(state),
        }
    }
}

/// The CMS: collections, items, accounts and license over the ports.
pub struct Cms {
    site: SiteInfo,
    /// Where item dates without an offset happened (`site.timezone`).
    zone: crate::dates::SiteZone,
    /// Every collection: the configured ones (`families` of them) first, then their
    /// translations' (see [`Collection::all_of_site`]).
    collections: Vec<Collection>,
    families: usize,
    /// `languages:` of `cms.yaml` (`None`: a site in one language).
    languages: Option<Arc<crate::language::Languages>>,
    license_public_key: Option<String>,
    ports: Ports,
    /// One kept index per collection (see `index.rs`).
    indexes: Vec<index::IndexCell>,
    /// How far the first indexing has come (see [`Cms::start`]).
    progress: index::StartProgress,
    /// One search index per collection, kept in step with `indexes` by following the
    /// change log (see `search.rs`).
    search: Arc<search::SearchIndexes>,
    /// Every change to the kept indexes, numbered and handed to its subscribers (see
    /// `crate::changes`).
    change_log: ChangeLog,
    /// The announced changes as events with site-wide ids, for streams and webhooks (see
    /// `crate::event_log`).
    event_log: Arc<EventLog>,
    /// `events:` of `cms.yaml` (stream bounds, token lifetime).
    events_config: crate::config::EventsConfig,
    /// The live streams open on this server, on every surface (REST, editor), within
    /// `events:`'s bounds.
    stream_slots: Arc<crate::event_log::streams::StreamSlots>,
    /// Readiness: draining, and the last store probe (see `health.rs`).
    health: health::Health,
    /// One lock per item: writes to an item serialize, so a read-modify-write never loses
    /// another's changes; writes to different items run in parallel.
    item_locks: locks::ItemLocks,
    /// Rendered single items, per file version (see `rendered.rs`).
    render_cache: Arc<dyn crate::ports::RenderCache>,
    /// The installed license as last loaded (`None` until loaded); reloaded when the store
    /// reports a change and after an install.
    license: RwLock<Option<Arc<LoadedLicense>>>,
    /// Snapshots kept per item (`versions.keep`).
    keep_versions: usize,
    resource_folders: Vec<ResourceFolder>,
    /// Serializes read-modify-write of the settings.
    settings_lock: futures_util::lock::Mutex<()>,
    /// The site folder's absolute path, as the composition root knows it; lets path-valued
    /// query parameters be absolute. `None`: only relative paths resolve.
    site_root: Option<String>,
    /// Called when the next scheduled instant moved earlier (see `schedule.rs`).
    schedule_waker: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Records (claims) the instant up to which scheduled changes are announced; answers up
    /// to which instant another server already announced them (see `schedule.rs`).
    schedule_mark: std::sync::OnceLock<Box<dyn Fn(i64) -> Option<i64> + Send + Sync>>,
    /// Preview links: the key store and the default lifetime (see `previews.rs`).
    previews: Option<(Arc<dyn crate::ports::PreviewKeys>, u64)>,
    /// `images:` of `cms.yaml`, and the content hash of each transformed source.
    images: crate::images::ImagesConfig,
    source_hashes: variants::SourceHashes,
    /// The largest source read whole for a transform (`limits.upload_bytes`).
    upload_limit: u64,
    /// Which names are this server and which proxies are believed (`server:`).
    hosts: crate::host_policy::HostPolicy,
}

/// How a facade is made, the one way: the site's configuration and its ports
/// ([`Ports::of_storage`] for an opened backend), then what only the composition root
/// knows. Nothing else sets a port.
pub struct CmsBuilder<'a> {
    config: &'a SiteConfig,
    ports: Ports,
    site_root: Option<String>,
    render_cache: Option<Arc<dyn crate::ports::RenderCache>>,
}

impl CmsBuilder<'_> {
    /// The site folder's absolute path, as the composition root knows it (the core never
    /// asks the disk), so that path-valued query parameters may be absolute.
    pub fn site_root(mut self, root: impl Into<String>) -> Self {
        self.site_root = Some(root.into());
        self
    }

    /// Keeps rendered single items in `cache` instead of the default 8 MB in memory (a
    /// server gives a local file: `cms_fs::FsRenderCache`).
    pub fn render_cache(mut self, cache: Arc<dyn crate::ports::RenderCache>) -> Self {
        self.render_cache = Some(cache);
        self
    }

    pub fn build(self) -> Cms {
        let mut cms = Cms::new(self.config, self.ports);
        cms.site_root = self.site_root;
        if let Some(cache) = self.render_cache {
            cms.render_cache = cache;
        }
        cms
    }
}

impl Cms {
    /// Starts making a facade (see [`CmsBuilder`]).
    pub fn builder(config: &SiteConfig, ports: Ports) -> CmsBuilder<'_> {
        CmsBuilder { config, ports, site_root: None, render_cache: None }
    }

    fn new(config: &SiteConfig, ports: Ports) -> Self {
        let collections = Collection::all_of_site(config);
        let languages = config.languages().ok().flatten().map(Arc::new);
        // The search index follows the log first, so that a webhook's receiver that
        // searches at once finds the change; then the webhooks.
        let search = Arc::new(search::SearchIndexes::new(collections.len()));
        let change_log = ChangeLog::default();
        change_log.subscribe(Arc::clone(&search) as Arc<dyn ChangeSubscriber>);
        // An edit made without a server is found by every server sharing the store (each
        // compares the store whole now and then): announced by none rather than by each.
        let outside_edits =
            config.webhooks.outside_edits && ports.sharing == crate::ports::Sharing::OneServer;
        let event_log = Arc::new(EventLog::new(
            Arc::clone(&ports.event_store),
            Arc::clone(&ports.events),
            Arc::clone(&ports.clock),
            time::Duration::hours(i64::from(config.events.keep_hours)),
            collections.len(),
        ));
        let names = collections
            .iter()
            .map(|collection| crate::event_log::CollectionName {
                slug: collection.slug.clone(),
                folder: collection.family(),
                lang: collection.language.as_ref().map(|language| language.code.to_string()),
            })
            .collect();
        change_log.subscribe(Arc::new(Announcer::new(Arc::clone(&event_log), names, outside_edits)));
        let site = SiteInfo {
            name: config.site.name.clone(),
            url: config.site.url.trim_end_matches('/').to_owned(),
            per_page: config.site.per_page as usize,
            max_per_page: config.site.max_per_page as usize,
        };
        Self {
            indexes: collections.iter().map(|_| index::IndexCell::default()).collect(),
            progress: index::StartProgress::default(),
            search: Arc::clone(&search),
            change_log,
            event_log,
            events_config: config.events.clone(),
            stream_slots: crate::event_log::streams::StreamSlots::new(&config.events),
            health: health::Health::default(),
            item_locks: locks::ItemLocks::default(),
            render_cache: Arc::new(crate::render_cache::MemoryRenderCache::new(MEMORY_RENDER_CACHE_BYTES)),
            license: RwLock::new(None),
            families: config.collections.len(),
            languages,
            collections,
            site,
            license_public_key: config.license.public_key.clone(),
            zone: config.site.timezone.clone(),
            keep_versions: config.versions.keep,
            settings_lock: futures_util::lock::Mutex::new(()),
            site_root: None,
            schedule_waker: std::sync::OnceLock::new(),
            schedule_mark: std::sync::OnceLock::new(),
            previews: ports.previews.clone().map(|keys| (keys, config.previews.ttl_secs)),
            images: config.images.clone(),
            source_hashes: variants::SourceHashes::default(),
            upload_limit: config.limits.upload_bytes,
            hosts: crate::host_policy::HostPolicy::new(
                &config.site.url,
                &config.server.allowed_hosts,
                &config.server.trusted_proxies,
            ),
            resource_folders: config
                .resources
                .iter()
                .enumerate()
                .map(|(i, r)| ResourceFolder::from_config(i, r))
                .collect(),
            ports,
        }
    }

    pub fn site(&self) -> &SiteInfo {
        &self.site
    }

    /// The site's time zone (`site.timezone`): where a date without an offset happened,
    /// and the zone the editor's date and time inputs are in.
    pub fn zone(&self) -> &crate::dates::SiteZone {
        &self.zone
    }

    /// Which names are this server (same-server origins) and whose forwarded headers are
    /// believed; the composition root tells it the bound addresses.
    pub fn hosts(&self) -> &crate::host_policy::HostPolicy {
        &self.hosts
    }

    /// The configured collections (in the default language, on a site with languages).
    pub fn collections(&self) -> &[Collection] {
        &self.collections[..self.families]
    }

    /// Every collection, each translation's too: what storage adapters watch and index.
    pub fn all_collections(&self) -> &[Collection] {
        &self.collections
    }

    /// Resolves `{collection}`: index or label slug (of the configured collections).
    pub fn collection(&self, key: &str) -> CoreResult<&Collection> {
        collection::resolve(self.collections(), key)
    }

    /// The site's languages (`None` for a site in one language).
    pub fn languages(&self) -> Option<&crate::language::Languages> {
        self.languages.as_deref()
    }

    /// The collection of `collection`'s items in language `at` (a position in
    /// `languages:`); `collection` itself on a site without languages.
    pub fn in_language<'a>(&'a self, collection: &'a Collection, at: usize) -> &'a Collection {
        match &self.languages {
            Some(_) => &self.collections[at * self.families + collection.family()],
            None => collection,
        }
    }

    pub fn now(&self) -> OffsetDateTime {
        self.ports.clock.now()
    }

    // ---- license and keys -------------------------------------------------------------

    /// The license state, from memory once loaded: parsed and verified when loaded, and
    /// only its expiry compared with the clock on each call.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn license_state(&self) -> CoreResult<LicenseState> {
        let loaded = self.loaded_license().await?;
        Ok(loaded.state_at(self.now()).into_owned())
    }

    /// Reads the installed license again (after the store reported a change).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn reload_license(&self) -> CoreResult<()> {
        self.reload_license_returning().await.map(drop)
    }

    async fn loaded_license(&self) -> CoreResult<Arc<LoadedLicense>> {
        let cached = read(&self.license).clone();
        match cached {
            Some(loaded) => Ok(loaded),
            None => self.reload_license_returning().await,
        }
    }

    async fn reload_license_returning(&self) -> CoreResult<Arc<LoadedLicense>> {
        let license = self.ports.license.current().await?;
        let expires = license.as_ref().and_then(|l| l.expiry().ok().flatten());
        let state = LicenseState::evaluate(license, self.license_public_key.as_deref(), self.now());
        let loaded = Arc::new(LoadedLicense { state, expires });
        *write(&self.license) = Some(Arc::clone(&loaded));
        Ok(loaded)
    }

    /// `PaymentRequired` unless the license is active and has `feature`. Every request
    /// asks this: it is answered from memory, without cloning the license.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn require_feature(&self, feature: Feature) -> CoreResult<()> {
        self.loaded_license().await?.state_at(self.now()).require(feature)
    }

    /// `Forbidden` unless the policy table lets `caller` do `operation` (see
    /// `crate::policy`). Every privileged facade call asks this first; an adapter asks it
    /// itself only to refuse before reading a request's body.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn authorize(&self, caller: impl Into<Caller<'_>>, operation: Operation) -> CoreResult<()> {
        // The license is asked only by an operation that needs a feature of it.
        match crate::policy::check_role(caller.into(), operation)? {
            Some(feature) => {
                crate::policy::check_feature(feature, &self.loaded_license().await?.state_at(self.now()))
            }
            None => Ok(()),
        }
    }

    /// Validates and installs a license file's text.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn install_license(&self, caller: impl Into<Caller<'_>>, text: &str) -> CoreResult<License> {
        self.authorize(caller, Operation::InstallLicense).await?;
        let license = License::from_yaml(text)?;
        license.check_features()?;
        if let Some(key) = &self.license_public_key {
            license.verify(key)?;
        }
        self.ports.license.install(text).await?;
        self.reload_license().await?;
        Ok(license)
    }

    /// Checks a presented key: its family, that it is known, and that its user exists.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn authenticate(&self, presented: &str) -> CoreResult<Principal> {
        account::check_key_family(presented)?;
        self.principal_of(presented, "API key").await
    }

    /// Checks a key presented to the AI-agent endpoint `/mcp`: an `mcp_` key that is
    /// known and whose user exists (an `api_` key is refused, saying where it belongs).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn authenticate_agent(&self, presented: &str) -> CoreResult<Principal> {
        account::check_agent_key_family(presented)?;
        self.principal_of(presented, "mcp_ key").await
    }

    /// The user behind a key of a known family; `noun` names the key in errors.
    async fn principal_of(&self, presented: &str, noun: &str) -> CoreResult<Principal> {
        let hash = account::hash_key(presented);
        let key = self
            .ports
            .keys
            .find_key_by_hash(&hash)
            .await?
            .ok_or_else(|| CoreError::Unauthorized(format!("unknown or revoked {noun}")))?;
        let user =
            self.ports.users.find_user(&key.email).await?.ok_or_else(|| {
                CoreError::Unauthorized(format!("the user of this {noun} no longer exists"))
            })?;
        Ok(Principal { user, key_id: key.id, key_name: Some(key.name) })
    }

    /// Account events (`user.*`); item changes are announced by the change log's
    /// [`Announcer`](crate::event_log::Announcer), never by hand.
    fn publish(&self, kind: EventKind, data: EventData) {
        self.ports.events.publish(Event { id: None, kind, timestamp: self.now(), data });
    }

    /// The log of every change to the collections' items (see `crate::changes`): an
    /// adapter subscribes to follow them.
    pub fn change_log(&self) -> &ChangeLog {
        &self.change_log
    }

    /// The site's events (see `crate::event_log`): streams follow them with a cursor.
    pub fn event_log(&self) -> &Arc<EventLog> {
        &self.event_log
    }

    /// The live streams open on this server (REST and editor share the bounds).
    pub fn stream_slots(&self) -> &Arc<crate::event_log::streams::StreamSlots> {
        &self.stream_slots
    }
}

// A panic while holding one of these locks leaves no half-done write behind (writes are
// atomic in the store, and index changes are made in one step), so the data behind a
// poisoned lock is still good.

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Budget of the rendered-item cache kept in memory when no other is given
/// ([`CmsBuilder::render_cache`]): about 2,000 items of 2 KB.
const MEMORY_RENDER_CACHE_BYTES: usize = 8 * 1024 * 1024;
