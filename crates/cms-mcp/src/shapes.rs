//! The tools' arguments and results, with their JSON Schemas. Arguments are named as the
//! REST API names them (`collection`, `slug`, `fm`, `per_page`, `orderBy`...); results
//! carry the fields of the matching REST answers.

use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::query::Page;
use cms_core::service::{
    ItemSummary, ItemView, RawItem, ResourceListing, SearchHit, TagCount, VersionContent, VersionList,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// ---- arguments ------------------------------------------------------------------------

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListItemsArgs {
    /// The collection: its index (`0`) or its label slug (`blog-posts`).
    pub collection: String,
    /// Page number, from 1.
    #[schemars(range(min = 1))]
    pub page: Option<u64>,
    /// Items per page (clamped to the site's maximum).
    #[schemars(range(min = 1))]
    pub per_page: Option<u64>,
    /// `published` (default), `draft` or `all`.
    pub status: Option<String>,
    /// Comma-separated tags; items carrying any of them.
    pub tags: Option<String>,
    /// `fm.author`, case-insensitively.
    pub author: Option<String>,
    /// `date_published` (default), `title`, `slug` or `modified`.
    #[serde(rename = "orderBy")]
    pub order_by: Option<String>,
    /// `desc` (default) or `asc`.
    pub direction: Option<String>,
    /// Items skipped before paging.
    pub offset: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug (`hello-world`) or full filename (`2026-01-12-hello-world.md`).
    pub slug: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateItemArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The frontmatter (`title`, `status`, `tags`, `date`, `author`...). New items are
    /// drafts unless `status` is `published`.
    pub fm: Option<Frontmatter>,
    /// The Markdown body.
    pub body: Option<String>,
    /// The slug; derived from `fm.title` when absent.
    pub slug: Option<String>,
    /// Whether the filename starts with the date; the collection's setting when absent.
    pub date_prefix: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateItemArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename.
    pub slug: String,
    /// Merged over the stored frontmatter; a key set to `null` is removed.
    pub fm: Option<Frontmatter>,
    /// The new Markdown body; the stored body is kept when absent.
    pub body: Option<String>,
    /// The `etag` of your last read: the update is refused if the item changed since.
    pub if_match: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteItemArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename.
    pub slug: String,
    /// The `etag` of your last read: the delete is refused if the item changed since.
    pub if_match: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename.
    pub slug: String,
    /// The version's `timestamp`, from `list_versions`.
    pub version: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreVersionArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename.
    pub slug: String,
    /// The version's `timestamp`, from `list_versions`.
    pub version: i64,
    /// The `etag` of your last read of the item.
    pub if_match: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The words to search for; each must match (stemmed, or as the start of a word).
    pub q: String,
    /// One collection (index or label slug); every collection when absent.
    pub collection: Option<String>,
    /// Page number, from 1.
    #[schemars(range(min = 1))]
    pub page: Option<u64>,
    /// Results per page.
    #[schemars(range(min = 1))]
    pub per_page: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTagsArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListResourcesArgs {
    /// The resource folder's index (default 0).
    pub folder: Option<u64>,
    /// A folder inside it (`2026/photos`); its top when absent.
    pub subpath: Option<String>,
}

// ---- results --------------------------------------------------------------------------

#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionOut {
    pub index: usize,
    pub label: String,
    pub slug: String,
    pub path: String,
    /// The URI template of its items as resources.
    pub resource_template: String,
}

impl From<&Collection> for CollectionOut {
    fn from(c: &Collection) -> Self {
        Self {
            index: c.index,
            label: c.label.clone(),
            slug: c.slug.clone(),
            path: c.path.clone(),
            resource_template: format!("cms://{}/{{slug}}", c.slug),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Collections {
    pub collections: Vec<CollectionOut>,
}

/// A list entry, as in the REST list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemEntry {
    pub slug: String,
    pub title: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: String,
    pub filename: String,
    pub tags: Vec<String>,
    pub author: Option<String>,
    pub excerpt: String,
    /// Unix seconds.
    pub modified: i64,
}

impl From<&ItemSummary> for ItemEntry {
    fn from(s: &ItemSummary) -> Self {
        let meta = &s.item.meta;
        Self {
            slug: meta.slug.clone(),
            title: meta.title.clone(),
            url: s.url.clone(),
            canonical_url: s.canonical_url.clone(),
            date: meta.date.clone(),
            status: meta.status.as_str().to_owned(),
            filename: meta.filename.to_string(),
            tags: meta.tags.to_strings(),
            author: meta.author.clone(),
            excerpt: s.item.excerpt().to_owned(),
            modified: meta.modified,
        }
    }
}

/// Paging, as the REST list's `meta`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PageMeta {
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

impl<T> From<&Page<T>> for PageMeta {
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

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemList {
    pub items: Vec<ItemEntry>,
    pub meta: PageMeta,
}

/// The rendered item (as `GET .../items/{slug}`) and its source (as `.../raw`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemOut {
    pub slug: String,
    pub filename: String,
    pub title: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: String,
    pub tags: Vec<String>,
    pub author: Option<String>,
    pub excerpt: String,
    /// The collection's index.
    pub folder: usize,
    /// Unix seconds.
    pub modified: i64,
    /// Pass it as `if_match` to `update_item` or `delete_item`.
    pub etag: String,
    /// The body rendered to HTML.
    pub body_html: String,
    /// The frontmatter as stored.
    pub fm: Frontmatter,
    /// The Markdown body as stored.
    pub body: String,
}

impl ItemOut {
    pub fn new(view: ItemView, raw: RawItem) -> Self {
        Self {
            slug: view.meta.slug,
            filename: view.meta.filename.to_string(),
            title: view.meta.title,
            url: view.url,
            canonical_url: view.canonical_url,
            date: view.meta.date,
            status: view.meta.status.as_str().to_owned(),
            tags: view.meta.tags.to_strings(),
            author: view.meta.author,
            excerpt: view.excerpt,
            folder: view.collection,
            modified: view.meta.modified,
            etag: raw.etag,
            body_html: view.html,
            fm: raw.doc.fm,
            body: raw.doc.body,
        }
    }
}

/// What a create, update or restore wrote.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    pub filename: String,
    pub slug: String,
    pub folder: usize,
    /// The new content's ETag.
    pub etag: Option<String>,
    pub message: String,
    /// The restored version (`restore_version` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    pub ok: bool,
    pub message: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionStamp {
    /// Pass it as `version`.
    pub timestamp: i64,
    pub size: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Current {
    pub modified: i64,
    pub size: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Versions {
    pub filename: String,
    /// Newest first.
    pub versions: Vec<VersionStamp>,
    /// `null` when the item is deleted.
    pub current: Option<Current>,
}

impl From<VersionList> for Versions {
    fn from(list: VersionList) -> Self {
        Self {
            filename: list.filename,
            versions: list
                .versions
                .into_iter()
                .map(|v| VersionStamp { timestamp: v.timestamp, size: v.size })
                .collect(),
            current: list.current.map(|(modified, size)| Current { modified, size }),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionOut {
    pub timestamp: i64,
    pub size: u64,
    pub fm: Frontmatter,
    pub body: String,
}

impl From<VersionContent> for VersionOut {
    fn from(v: VersionContent) -> Self {
        Self { timestamp: v.stamp.timestamp, size: v.stamp.size, fm: v.doc.fm, body: v.doc.body }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    pub slug: String,
    pub title: String,
    /// The collection's label slug.
    pub collection: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: String,
    pub tags: Vec<String>,
    pub filename: String,
    /// Higher is better.
    pub score: f64,
    /// A short passage around the first match, HTML-escaped, matches in `<mark>`.
    pub snippet: String,
    /// The item as a resource.
    pub uri: String,
}

impl From<SearchHit> for SearchResult {
    fn from(hit: SearchHit) -> Self {
        let meta = &hit.item.meta;
        Self {
            uri: crate::resources::item_uri(&hit.collection_slug, &meta.slug),
            slug: meta.slug.clone(),
            title: meta.title.clone(),
            collection: hit.collection_slug,
            url: hit.url,
            canonical_url: hit.canonical_url,
            date: meta.date.clone(),
            status: meta.status.as_str().to_owned(),
            tags: meta.tags.to_strings(),
            filename: meta.filename.to_string(),
            score: hit.score,
            snippet: hit.snippet,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
    pub meta: PageMeta,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TagOut {
    pub tag: String,
    pub slug: String,
    /// Published items carrying it.
    pub count: usize,
    pub url: String,
}

impl From<TagCount> for TagOut {
    fn from(t: TagCount) -> Self {
        Self { tag: t.tag, slug: t.slug, count: t.count, url: t.url }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Tags {
    pub tags: Vec<TagOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourceFileOut {
    pub name: String,
    pub size: u64,
    pub url: String,
    pub modified: i64,
    pub is_image: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourceFolderOut {
    pub index: usize,
    pub label: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourcesOut {
    pub folder: ResourceFolderOut,
    pub subpath: String,
    /// Subfolders' names.
    pub dirs: Vec<String>,
    pub files: Vec<ResourceFileOut>,
}

impl From<ResourceListing> for ResourcesOut {
    fn from(l: ResourceListing) -> Self {
        Self {
            folder: ResourceFolderOut { index: l.folder.index, label: l.folder.label },
            subpath: l.subpath,
            dirs: l.dirs,
            files: l
                .files
                .into_iter()
                .map(|f| ResourceFileOut {
                    name: f.name,
                    size: f.size,
                    url: f.url,
                    modified: f.modified,
                    is_image: f.is_image,
                })
                .collect(),
        }
    }
}
