//! The tools' arguments and results, with their JSON Schemas. Arguments are named as the
//! REST API names them (`collection`, `slug`, `fm`, `per_page`, `orderBy`...); results
//! are the REST answers' shapes ([`cms_core::answers`]), wrapped where a tool adds a field.

use cms_core::answers::{
    CollectionInfo, ItemEntry, ItemHead, PageMeta, ResourceFileEntry, ResourceFolderInfo, SearchResultEntry,
    TagEntry,
};
use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::model::{Counts, ExtraFields, Field, Kind};
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
    /// On a site with languages: the language (a code of the site's `languages`); the
    /// default language when absent. A site without languages ignores it.
    pub lang: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug (`hello-world`) or full filename (`2026-01-12-hello-world.md`).
    pub slug: String,
    /// On a site with languages: the language to read (`get_item` falls back along the
    /// language's chain, and says so in `requested_lang`); the default language when
    /// absent. A site without languages ignores it.
    pub lang: Option<String>,
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
    /// On a site with languages: the language (a code of the site's `languages`); the
    /// default language when absent. A site without languages ignores it.
    pub lang: Option<String>,
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
    /// On a site with languages: the language (a code of the site's `languages`); the
    /// default language when absent. A site without languages ignores it.
    pub lang: Option<String>,
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
    /// On a site with languages: the language (a code of the site's `languages`); the
    /// default language when absent. A site without languages ignores it.
    pub lang: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TranslateArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename (in the default language).
    pub slug: String,
    /// The language to translate into (not the default language).
    pub lang: String,
    /// Written over the source's frontmatter (a new translation) or merged over the
    /// translation's (an existing one); shared fields come from the source.
    pub fm: Option<Frontmatter>,
    /// The translated Markdown body; a new translation starts with the source's.
    pub body: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TranslationArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The item: its slug or full filename.
    pub slug: String,
    /// The translation's language (not the default language).
    pub lang: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedArgs {
    /// The collection: its index or its label slug.
    pub collection: String,
    /// The translations' language (not the default language).
    pub lang: String,
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
    /// On a site with languages: the item's language (the default language when absent).
    pub lang: Option<String>,
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
    /// On a site with languages: the item's language (the default language when absent).
    pub lang: Option<String>,
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
pub struct DescribeCollectionArgs {
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

/// A collection, whether it has a content model, and the URI template of its items as
/// resources.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionOut {
    #[serde(flatten)]
    pub collection: CollectionInfo,
    /// Whether its items must fit a content model (`describe_collection` tells its fields).
    pub has_model: bool,
    /// The URI template of its items as resources.
    pub resource_template: String,
}

impl CollectionOut {
    /// `invalid_items` as `GET /cms/collections` counts them (`Cms::items_breaking_model_count`).
    pub fn new(c: &Collection, invalid_items: Option<usize>) -> Self {
        Self {
            collection: CollectionInfo { invalid_items, ..CollectionInfo::from(c) },
            has_model: c.model.is_some(),
            resource_template: format!("cms://{}/{{slug}}", c.slug),
        }
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

/// What changed in a translation's source since it was made (as REST's `source-diff`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SourceDiffOut {
    /// The translation's language.
    pub lang: String,
    /// The source's language (the default language).
    pub source_lang: String,
    /// The source's file name.
    pub source: String,
    /// Whether the source changed since the translation was made.
    pub outdated: bool,
    /// What the translation says it was made from (32 hex digits).
    pub translated_from: Option<String>,
    /// The source's version (`timestamp`) it was made from, while its history keeps it.
    pub from_version: Option<i64>,
    /// A unified diff of the source from then to now: empty when nothing changed; null
    /// when that version is no longer kept or the translation does not say.
    pub diff: Option<String>,
}

impl From<cms_core::service::SourceDiff> for SourceDiffOut {
    fn from(d: cms_core::service::SourceDiff) -> Self {
        Self {
            lang: d.lang.to_string(),
            source_lang: d.source_lang.to_string(),
            source: d.source,
            outdated: d.outdated,
            translated_from: d.translated_from,
            from_version: d.from_version,
            diff: d.diff,
        }
    }
}

/// Outdated translations: their list entries.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutdatedList {
    pub items: Vec<ItemEntry<'static>>,
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
        let meta = &hit.item.meta;
        let uri = crate::resources::item_uri(&hit.collection_slug, &meta.slug, &meta.filename);
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

/// What a collection's items may hold: its model's fields, one by one, and its JSON Schema.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionDescription {
    #[serde(flatten)]
    pub collection: CollectionInfo,
    /// Whether the collection has a content model; without one any frontmatter is accepted.
    pub has_model: bool,
    /// What the model asks of a write, in a sentence.
    pub note: String,
    /// The model's fields in the editor's order (none without a model).
    pub fields: Vec<FieldOut>,
    /// Keys the model does not name: `allow` (kept as written) or `refuse`; absent without
    /// a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_fields: Option<&'static str>,
    /// The JSON Schema (2020-12) of the frontmatter (also the resource `schema_uri`).
    pub schema: serde_json::Value,
    /// The JSON Schema as a resource.
    pub schema_uri: String,
}

impl CollectionDescription {
    /// `invalid_items` as `GET /cms/collections` counts them.
    pub fn new(collection: &Collection, invalid_items: Option<usize>, schema: serde_json::Value) -> Self {
        let model = collection.model.as_deref();
        let note = match model {
            None => "This collection has no content model: any frontmatter is accepted.".to_owned(),
            Some(model) => {
                let extra = match model.extra_fields {
                    ExtraFields::Allow => "keys it does not name are kept as written",
                    ExtraFields::Refuse => {
                        "keys it does not name are refused, but for the server's own status, draft, \
                         publish_date and unpublish_date"
                    }
                };
                format!(
                    "Every write of fm is checked against these fields (after update_item merges it): \
                     a failing write names each failing field; {extra}. New items get the defaults."
                )
            }
        };
        Self {
            collection: CollectionInfo { invalid_items, ..CollectionInfo::from(collection) },
            has_model: model.is_some(),
            note,
            fields: model.map(|m| m.fields.iter().map(FieldOut::from).collect()).unwrap_or_default(),
            extra_fields: model.map(|m| match m.extra_fields {
                ExtraFields::Allow => "allow",
                ExtraFields::Refuse => "refuse",
            }),
            schema,
            schema_uri: crate::resources::schema_uri(&collection.slug),
        }
    }
}

/// One field of a model, with the rules of its type (those that are set).
#[derive(Debug, Serialize, JsonSchema)]
pub struct FieldOut {
    /// The frontmatter key (for `of`, the list's own).
    pub name: String,
    /// `string`, `text`, `number`, `integer`, `boolean`, `select`, `multiselect`, `tags`,
    /// `datetime`, `date`, `image`, `file`, `reference`, `url`, `email`, `list` or `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// A write without it, or with it empty, is refused.
    pub required: bool,
    /// Kept, but not shown in the web editor's form.
    pub hidden: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Given to new items that leave the field out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// `select`, `multiselect`: the values allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// `string`, `text`: the fewest characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// `string`, `text`: the most characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `string`, `text`: a regular expression the whole value must match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// `number`, `integer`: the least value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<serde_json::Number>,
    /// `number`, `integer`: the greatest value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<serde_json::Number>,
    /// `list`, `multiselect`, `tags`: the fewest elements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// `list`, `multiselect`, `tags`: the most elements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// `reference`: the slug of the collection whose item it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// `list`: the field each element is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<Box<FieldOut>>,
    /// `object`: its fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldOut>>,
}

/// A bound as written: `5`, not `5.0`, when it is whole.
fn bound(value: Option<f64>) -> Option<serde_json::Number> {
    let value = value?;
    // Within ±2^53 a whole f64 is exactly an i64.
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        return Some((value as i64).into());
    }
    serde_json::Number::from_f64(value)
}

impl From<&Field> for FieldOut {
    fn from(field: &Field) -> Self {
        let mut out = Self {
            name: field.name.clone(),
            kind: field.kind.field_type().as_str(),
            required: field.required,
            hidden: field.hidden,
            description: field.description.clone(),
            default: field.default.clone(),
            options: None,
            min_length: None,
            max_length: None,
            pattern: None,
            min: None,
            max: None,
            min_items: None,
            max_items: None,
            collection: None,
            of: None,
            fields: None,
        };
        let counts = |out: &mut Self, counts: &Counts| {
            out.min_items = counts.min;
            out.max_items = counts.max;
        };
        match &field.kind {
            Kind::String(rules) | Kind::Text(rules) => {
                out.min_length = rules.min_length;
                out.max_length = rules.max_length;
                out.pattern = rules.pattern.as_ref().map(|p| p.source.clone());
            }
            Kind::Number(bounds) | Kind::Integer(bounds) => {
                out.min = bound(bounds.min);
                out.max = bound(bounds.max);
            }
            Kind::Select(options) => out.options = Some(options.clone()),
            Kind::Multiselect { options, items } => {
                out.options = Some(options.clone());
                counts(&mut out, items);
            }
            Kind::Tags(items) => counts(&mut out, items),
            Kind::Reference { collection } => out.collection = Some(collection.clone()),
            Kind::List { of, items } => {
                out.of = Some(Box::new(FieldOut::from(of.as_ref())));
                counts(&mut out, items);
            }
            Kind::Object(fields) => out.fields = Some(fields.iter().map(FieldOut::from).collect()),
            Kind::Boolean
            | Kind::Datetime
            | Kind::Date
            | Kind::Image
            | Kind::File
            | Kind::Url
            | Kind::Email => {}
        }
        out
    }
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
