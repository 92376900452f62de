//! JSON shapes of responses. Domain types stay free of serde; these map them.

use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::ports::WebhookInfo;
use cms_core::query::Page;
use cms_core::service::{
    ItemSummary, ItemView, RawItem, RelatedItem, ResourceFile, ResourceListing, SearchEntry, SearchHit,
    TagCount, VersionContent, VersionList,
};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;

#[derive(Serialize)]
pub struct CollectionDto<'a> {
    pub index: usize,
    pub label: &'a str,
    pub slug: &'a str,
    pub path: &'a str,
}

impl<'a> From<&'a Collection> for CollectionDto<'a> {
    fn from(c: &'a Collection) -> Self {
        Self { index: c.index, label: &c.label, slug: &c.slug, path: &c.path }
    }
}

/// An item list entry: the spec's fields plus a few that clients of lists want. It
/// borrows from the index's entry: a list answer copies no string before serializing.
#[derive(Serialize)]
pub struct ItemEntryDto<'a> {
    pub slug: &'a str,
    pub title: &'a str,
    pub url: &'a str,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: &'a str,
    pub date: Option<&'a str>,
    pub status: &'static str,
    pub filename: &'a str,
    pub tags: &'a [std::sync::Arc<str>],
    pub author: Option<&'a str>,
    pub excerpt: &'a str,
    pub modified: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleDto>,
}

/// A scheduled item's window (`publish_date`, `unpublish_date`) as instants; only items
/// that have one carry it, and only callers that may see drafts see items outside it.
#[derive(Serialize)]
pub struct ScheduleDto {
    pub publish_date: Option<String>,
    pub unpublish_date: Option<String>,
}

impl ScheduleDto {
    pub fn of(meta: &cms_core::item::ItemMeta) -> Option<Self> {
        let schedule = meta.schedule.as_deref()?;
        let text = |at: Option<time::OffsetDateTime>| {
            at.and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok())
        };
        Some(Self { publish_date: text(schedule.publish_at), unpublish_date: text(schedule.unpublish_at) })
    }
}

impl<'a> From<&'a ItemSummary> for ItemEntryDto<'a> {
    fn from(s: &'a ItemSummary) -> Self {
        let meta = &s.item.meta;
        Self {
            slug: &meta.slug,
            title: &meta.title,
            url: &s.url,
            canonical_url: &s.canonical_url,
            date: meta.date.as_deref(),
            status: meta.status.as_str(),
            filename: &meta.filename,
            tags: &meta.tags,
            author: meta.author.as_deref(),
            excerpt: s.item.excerpt(),
            modified: meta.modified,
            schedule: ScheduleDto::of(meta),
        }
    }
}

#[derive(Serialize)]
pub struct PageMetaDto {
    #[serde(rename = "currentPage")]
    pub current_page: usize,
    #[serde(rename = "lastPage")]
    pub last_page: usize,
    #[serde(rename = "totalItems")]
    pub total_items: usize,
    #[serde(rename = "perPage")]
    pub per_page: usize,
    pub has_prev: bool,
    pub has_next: bool,
}

impl<T> From<&Page<T>> for PageMetaDto {
    fn from(p: &Page<T>) -> Self {
        Self {
            current_page: p.current_page,
            last_page: p.last_page,
            total_items: p.total_items,
            per_page: p.per_page,
            has_prev: p.has_prev(),
            has_next: p.has_next(),
        }
    }
}

/// The rendered single item.
#[derive(Serialize)]
pub struct ItemDto {
    pub slug: String,
    pub filename: String,
    pub title: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: &'static str,
    pub tags: Vec<String>,
    pub author: Option<String>,
    pub excerpt: String,
    pub frontmatter: Frontmatter,
    pub body_html: String,
    pub modified: i64,
    pub folder: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleDto>,
}

impl From<ItemView> for ItemDto {
    fn from(v: ItemView) -> Self {
        let schedule = ScheduleDto::of(&v.meta);
        Self {
            schedule,
            slug: v.meta.slug,
            filename: v.meta.filename.to_string(),
            title: v.meta.title,
            url: v.url,
            canonical_url: v.canonical_url,
            date: v.meta.date,
            status: v.meta.status.as_str(),
            tags: v.meta.tags.to_strings(),
            author: v.meta.author,
            excerpt: v.excerpt,
            frontmatter: v.fm,
            body_html: v.html,
            modified: v.meta.modified,
            folder: v.collection,
        }
    }
}

/// The raw item (editor shape).
#[derive(Serialize)]
pub struct RawItemDto {
    pub slug: String,
    pub filename: String,
    pub folder: usize,
    pub fm: Frontmatter,
    pub body: String,
    pub modified: i64,
    pub size: u64,
}

impl From<RawItem> for RawItemDto {
    fn from(r: RawItem) -> Self {
        Self {
            slug: r.meta.slug,
            filename: r.meta.filename.to_string(),
            folder: r.collection,
            fm: r.doc.fm,
            body: r.doc.body,
            modified: r.meta.modified,
            size: r.meta.size,
        }
    }
}

#[derive(Serialize)]
pub struct VersionStampDto {
    pub timestamp: i64,
    pub size: u64,
}

#[derive(Serialize)]
pub struct CurrentDto {
    pub modified: i64,
    pub size: u64,
}

/// `{"versions": [...], "current": {...}}`; `current` is `null` for a deleted item.
#[derive(Serialize)]
pub struct VersionListDto {
    pub filename: String,
    pub versions: Vec<VersionStampDto>,
    pub current: Option<CurrentDto>,
}

impl From<VersionList> for VersionListDto {
    fn from(list: VersionList) -> Self {
        Self {
            filename: list.filename,
            versions: list
                .versions
                .into_iter()
                .map(|v| VersionStampDto { timestamp: v.timestamp, size: v.size })
                .collect(),
            current: list.current.map(|(modified, size)| CurrentDto { modified, size }),
        }
    }
}

#[derive(Serialize)]
pub struct VersionDto {
    pub timestamp: i64,
    pub size: u64,
    pub fm: Frontmatter,
    pub body: String,
}

impl From<VersionContent> for VersionDto {
    fn from(v: VersionContent) -> Self {
        Self { timestamp: v.stamp.timestamp, size: v.stamp.size, fm: v.doc.fm, body: v.doc.body }
    }
}

#[derive(Serialize)]
pub struct ResourceFileDto {
    pub name: String,
    pub size: u64,
    pub url: String,
    pub modified: i64,
    pub is_image: bool,
    /// The presets' variants (`images.presets`); empty for other files.
    pub variants: Vec<VariantDto>,
}

/// One preset's variant of an image; `size` is `null` until it has been made.
#[derive(Serialize)]
pub struct VariantDto {
    pub name: String,
    pub url: String,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub size: Option<u64>,
}

impl From<ResourceFile> for ResourceFileDto {
    fn from(f: ResourceFile) -> Self {
        let variants = f
            .variants
            .into_iter()
            .map(|v| VariantDto { name: v.name, url: v.url, width: v.width, height: v.height, size: v.size })
            .collect();
        Self { name: f.name, size: f.size, url: f.url, modified: f.modified, is_image: f.is_image, variants }
    }
}

/// `GET /cms/resources`.
#[derive(Serialize)]
pub struct ResourceListingDto {
    pub folder: serde_json::Value,
    pub subpath: String,
    pub dirs: Vec<serde_json::Value>,
    pub files: Vec<ResourceFileDto>,
    pub license: serde_json::Value,
}

impl ResourceListingDto {
    pub fn new(listing: ResourceListing, license_valid: bool) -> Self {
        Self {
            folder: serde_json::json!({ "index": listing.folder.index, "label": listing.folder.label }),
            subpath: listing.subpath,
            dirs: listing
                .dirs
                .into_iter()
                .map(|name| serde_json::json!({ "name": name, "type": "dir" }))
                .collect(),
            files: listing.files.into_iter().map(ResourceFileDto::from).collect(),
            license: serde_json::json!({ "valid": license_valid }),
        }
    }
}

/// A tag with the URL of its page, inside a search index entry.
#[derive(Serialize)]
pub struct TagLinkDto {
    pub tag: String,
    pub slug: String,
    pub url: String,
}

/// One entry of the search index: decisions.md's fields plus `author`, `authorUrl`,
/// `tagLinks`, `image` and `filename`.
#[derive(Serialize)]
pub struct SearchEntryDto {
    pub slug: String,
    pub title: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub excerpt: String,
    pub tags: Vec<String>,
    pub date: Option<String>,
    pub collection: String,
    pub filename: String,
    pub author: Option<String>,
    #[serde(rename = "authorUrl")]
    pub author_url: Option<String>,
    #[serde(rename = "tagLinks")]
    pub tag_links: Vec<TagLinkDto>,
    pub image: Option<String>,
}

impl From<SearchEntry> for SearchEntryDto {
    fn from(e: SearchEntry) -> Self {
        let meta = &e.item.meta;
        Self {
            slug: meta.slug.clone(),
            title: meta.title.clone(),
            url: e.url,
            canonical_url: e.canonical_url,
            excerpt: e.item.plain_excerpt.to_string(),
            tags: meta.tags.to_strings(),
            date: meta.date.clone(),
            collection: e.collection,
            filename: meta.filename.to_string(),
            author: meta.author.clone(),
            author_url: e.author_url,
            tag_links: e
                .tag_links
                .into_iter()
                .map(|t| TagLinkDto { tag: t.tag, slug: t.slug, url: t.url })
                .collect(),
            image: e.image,
        }
    }
}

/// A webhook subscription in `GET /cms/settings/webhooks`; there is no secret to leak.
#[derive(Serialize)]
pub struct WebhookDto {
    pub id: String,
    pub url: String,
    pub events: Vec<&'static str>,
    pub enabled: bool,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<WebhookInfo> for WebhookDto {
    fn from(w: WebhookInfo) -> Self {
        Self {
            id: w.id,
            url: w.url,
            events: w.events.iter().map(|e| e.as_str()).collect(),
            enabled: w.enabled,
            created_at: w.created_at.to_offset(time::UtcOffset::UTC).format(&Rfc3339).unwrap_or_default(),
        }
    }
}

/// `GET /cms/tags` entries.
#[derive(Serialize)]
pub struct TagDto {
    pub tag: String,
    pub slug: String,
    pub count: usize,
    pub url: String,
}

impl From<TagCount> for TagDto {
    fn from(t: TagCount) -> Self {
        Self { tag: t.tag, slug: t.slug, count: t.count, url: t.url }
    }
}

/// `GET /cms/items/related` entries: decisions.md's fields plus `date` and `excerpt`.
#[derive(Serialize)]
pub struct RelatedDto {
    pub slug: String,
    pub title: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub score: f64,
    pub shared_tags: Vec<String>,
    pub date: Option<String>,
    pub excerpt: String,
}

impl From<RelatedItem> for RelatedDto {
    fn from(r: RelatedItem) -> Self {
        Self {
            slug: r.item.meta.slug.clone(),
            title: r.item.meta.title.clone(),
            url: r.url,
            canonical_url: r.canonical_url,
            score: r.score,
            shared_tags: r.shared_tags,
            date: r.item.meta.date.clone(),
            excerpt: r.item.plain_excerpt.to_string(),
        }
    }
}

/// `GET /cms/search` results.
#[derive(Serialize)]
pub struct SearchHitDto {
    pub slug: String,
    pub title: String,
    /// The collection's slug.
    pub collection: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: &'static str,
    pub tags: Vec<String>,
    pub filename: String,
    pub score: f64,
    pub snippet: String,
}

impl From<SearchHit> for SearchHitDto {
    fn from(hit: SearchHit) -> Self {
        let meta = &hit.item.meta;
        Self {
            slug: meta.slug.clone(),
            title: meta.title.clone(),
            collection: hit.collection_slug,
            url: hit.url,
            canonical_url: hit.canonical_url,
            date: meta.date.clone(),
            status: meta.status.as_str(),
            tags: meta.tags.to_strings(),
            filename: meta.filename.to_string(),
            score: hit.score,
            snippet: hit.snippet,
        }
    }
}
