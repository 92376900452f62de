//! JSON shapes of the responses only the REST API sends. Domain types stay free of serde;
//! these map them. The shapes REST and MCP answer alike (list entries, paging, versions,
//! search results, tags, collections) are [`cms_core::answers`].

use cms_core::answers::{ItemEntry, ItemHead, ResourceFileEntry, ResourceFolderInfo};
use cms_core::document::Frontmatter;
use cms_core::ports::WebhookInfo;
use cms_core::service::{
    ItemSummary, ItemView, RawItem, RelatedItem, ResourceFile, ResourceListing, SearchEntry,
};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;

/// An item list entry: the shared entry, and the item's schedule when it has one.
#[derive(Serialize)]
pub struct ItemEntryDto<'a> {
    #[serde(flatten)]
    pub entry: ItemEntry<'a>,
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
        Self { entry: ItemEntry::from(s), schedule: ScheduleDto::of(&s.item.meta) }
    }
}

/// The rendered single item.
#[derive(Serialize)]
pub struct ItemDto {
    #[serde(flatten)]
    pub head: ItemHead,
    pub frontmatter: Frontmatter,
    pub body_html: String,
    pub modified: i64,
    pub folder: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleDto>,
}

impl From<ItemView> for ItemDto {
    fn from(mut v: ItemView) -> Self {
        let schedule = ScheduleDto::of(&v.meta);
        Self {
            schedule,
            head: ItemHead::take(&mut v),
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
            slug: r.meta.slug.into(),
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
pub struct ResourceFileDto {
    #[serde(flatten)]
    pub file: ResourceFileEntry,
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
    fn from(mut f: ResourceFile) -> Self {
        let variants = std::mem::take(&mut f.variants)
            .into_iter()
            .map(|v| VariantDto { name: v.name, url: v.url, width: v.width, height: v.height, size: v.size })
            .collect();
        Self { file: ResourceFileEntry::from(f), variants }
    }
}

/// `GET /cms/resources`.
#[derive(Serialize)]
pub struct ResourceListingDto {
    pub folder: ResourceFolderInfo,
    pub subpath: String,
    pub dirs: Vec<serde_json::Value>,
    pub files: Vec<ResourceFileDto>,
    pub license: serde_json::Value,
}

impl ResourceListingDto {
    pub fn new(listing: ResourceListing, license_valid: bool) -> Self {
        Self {
            folder: ResourceFolderInfo::from(listing.folder),
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
            slug: meta.slug.to_string(),
            title: meta.title.to_string(),
            url: e.url,
            canonical_url: e.canonical_url,
            excerpt: e.item.plain_excerpt.to_string(),
            tags: meta.tags.to_strings(),
            date: meta.date.as_deref().map(str::to_owned),
            collection: e.collection,
            filename: meta.filename.to_string(),
            author: meta.author.as_deref().map(str::to_owned),
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
            slug: r.item.meta.slug.to_string(),
            title: r.item.meta.title.to_string(),
            url: r.url,
            canonical_url: r.canonical_url,
            score: r.score,
            shared_tags: r.shared_tags,
            date: r.item.meta.date.as_deref().map(str::to_owned),
            excerpt: r.item.plain_excerpt.to_string(),
        }
    }
}
