//! The tools' arguments and results, with their JSON Schemas. Arguments are named as the
//! REST API names them (`collection`, `slug`, `fm`, `per_page`, `orderBy`...); results
//! are the REST answers' shapes ([`cms_core::answers`]), wrapped where a tool adds a field.

use cms_core::answers::{
    CollectionInfo, ItemEntry, ItemHead, PageMeta, ResourceFileEntry, ResourceFolderInfo, SearchResultEntry,
    TagEntry,
};
use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::service::{ItemView, RawItem, ResourceListing, SearchHit};
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
    /// `date_published` (default), `title`, `slug` or `modified`; in a collection with a
    /// content model, also any of its scalar fields (see `describe_collection`).
    #[serde(rename = "orderBy")]
    pub order_by: Option<String>,
    /// `desc` (default) or `asc`.
    pub direction: Option<String>,
    /// Items skipped before paging.
    pub offset: Option<u64>,
    /// Only in a collection with a content model: conditions on its fields, all met.
    /// Keys are `FIELD` (equals; comma-separated values mean any of them) or `FIELD[OP]`,
    /// OP one of `ne`, `gt`, `gte`, `lt`, `lte`, `contains`, `exists`; values as text
    /// (`{"price[gte]": "10", "category": "news,guide"}`).
    pub filter: Option<std::collections::BTreeMap<String, String>>,
    /// Only in a collection with a content model: comma-separated fields each entry
    /// shows in its `fm`.
    pub fields: Option<String>,
    /// Only in a collection with a content model: comma-separated reference fields whose
    /// items each entry's `fm` shows inline.
    pub expand: Option<String>,
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

/// A collection, and the URI template of its items as resources.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionOut {
    #[serde(flatten)]
    pub collection: CollectionInfo,
    /// The URI template of its items as resources.
    pub resource_template: String,
}

impl From<&Collection> for CollectionOut {
    fn from(c: &Collection) -> Self {
        Self { collection: CollectionInfo::from(c), resource_template: format!("cms://{}/{{slug}}", c.slug) }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Collections {
    pub collections: Vec<CollectionOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemList {
    pub items: Vec<ItemEntry<'static>>,
    pub meta: PageMeta,
}

/// The rendered item (as `GET .../items/{slug}`) and its source (as `.../raw`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemOut {
    #[serde(flatten)]
    pub head: ItemHead,
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
    pub fn new(mut view: ItemView, raw: RawItem) -> Self {
        Self {
            head: ItemHead::take(&mut view),
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

/// A search result, and the item as a resource.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    #[serde(flatten)]
    pub hit: SearchResultEntry,
    /// The item as a resource.
    pub uri: String,
}

impl From<SearchHit> for SearchResult {
    fn from(hit: SearchHit) -> Self {
        let uri = crate::resources::item_uri(&hit.collection_slug, &hit.item.meta.slug);
        Self { hit: SearchResultEntry::from(hit), uri }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
    pub meta: PageMeta,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Tags {
    pub tags: Vec<TagEntry>,
}

/// A resource folder's listing; its subfolders by name.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourcesOut {
    pub folder: ResourceFolderInfo,
    pub subpath: String,
    /// Subfolders' names.
    pub dirs: Vec<String>,
    pub files: Vec<ResourceFileEntry>,
}

impl From<ResourceListing> for ResourcesOut {
    fn from(l: ResourceListing) -> Self {
        Self {
            folder: ResourceFolderInfo::from(l.folder),
            subpath: l.subpath,
            dirs: l.dirs,
            files: l.files.into_iter().map(ResourceFileEntry::from).collect(),
        }
    }
}
