//! Item reads and writes.

use std::sync::Arc;

use ring::digest;
use time::OffsetDateTime;

use super::{ItemSummary, ItemUpdate, ItemView, NewItem, RawItem, UpdateMode, Viewer, WriteOutcome, lock};
use crate::codec::YamlLimits;
use crate::collection::Collection;
use crate::document::ItemDocument;
use crate::error::{CoreError, CoreResult};
use crate::events::{EventData, EventKind};
use crate::index::IndexedItem;
use crate::item::{self, ItemMeta};
use crate::ports::StoredFile;
use crate::query::{ListQuery, Page, StatusFilter};
use crate::render;
use crate::service::Cms;
use crate::slug::{ItemFilename, ItemRef, Slug, slugify};

impl Cms {
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
        Ok(index.refresh(scan, |name| self.ports.content.read(collection, name)))
    }

    pub(super) fn summary(&self, collection: &Collection, item: Arc<IndexedItem>) -> ItemSummary {
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
        let excerpt = crate::index::excerpt_of(&doc);
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
    pub(super) fn load(
        &self,
        collection: &Collection,
        item_ref: &ItemRef,
    ) -> CoreResult<(ItemFilename, StoredFile)> {
        let name = self.locate(collection, item_ref)?;
        let file = self
            .ports
            .content
            .read(collection, &name)?
            .ok_or_else(|| item_not_found(collection, item_ref))?;
        Ok((name, file))
    }

    /// A current file of the collection with this slug, dated or not.
    pub(super) fn file_with_slug(
        &self,
        collection: &Collection,
        slug: &str,
    ) -> CoreResult<Option<ItemFilename>> {
        Ok(self
            .ports
            .content
            .scan(collection)?
            .into_iter()
            .filter_map(|s| ItemFilename::parse(&s.name))
            .find(|existing| existing.slug() == slug))
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
        if let Some(existing) = self.file_with_slug(collection, slug.as_str())? {
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
        self.snapshot(collection, &name, &file.bytes)?;
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
        self.snapshot(collection, &name, &file.bytes)?;
        self.ports.content.delete(collection, &name)?;
        self.publish(EventKind::FileDeleted, file_event(collection, &name));
        Ok(outcome(collection, &name, None))
    }
}

pub(super) fn item_not_found(collection: &Collection, item_ref: &ItemRef) -> CoreError {
    CoreError::not_found(format!("no item {:?} in collection {:?}", item_ref.to_string(), collection.slug))
}

fn parse_stored(name: &ItemFilename, file: &StoredFile) -> CoreResult<ItemDocument> {
    parse_bytes(name, &file.bytes)
}

pub(super) fn parse_bytes(name: &ItemFilename, bytes: &[u8]) -> CoreResult<ItemDocument> {
    let text = std::str::from_utf8(bytes)
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
pub(super) fn check_precondition(if_match: Option<&str>, current: &[u8]) -> CoreResult<()> {
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

pub(super) fn file_event(collection: &Collection, name: &ItemFilename) -> EventData {
    EventData::File { filename: name.as_str().to_owned(), folder: collection.index }
}

pub(super) fn outcome(collection: &Collection, name: &ItemFilename, bytes: Option<&[u8]>) -> WriteOutcome {
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
