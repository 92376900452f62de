//! The JSON shapes that the REST API and the MCP tools answer alike: one definition, so
//! a field added to a list entry, a version or a search hit reaches both surfaces, and the
//! MCP tools' output schemas are made from the shapes REST sends. Domain types stay free of
//! serde; these map them. Shapes only one surface sends stay with it (`cms-http`'s `dto`,
//! `cms-mcp`'s `shapes`), which wraps these where it adds fields (`#[serde(flatten)]`
//! keeps the field order and the bytes).

use std::borrow::Cow;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use crate::collection::Collection;
use crate::document::Frontmatter;
use crate::query::Page;
use crate::resource::ResourceFolder;
use crate::service::{ItemSummary, ItemView, ResourceFile, SearchHit, TagCount, VersionContent, VersionList};

/// What a write did, in the words every surface answers with: REST's `message`, the MCP
/// tools' (one list, so that the surfaces cannot drift to two spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    FileCreated,
    FileSaved,
    FileDeleted,
    VersionRestored,
    FileRenamed,
    FileMoved,
    FolderCreated,
}

impl Done {
    pub const ALL: [Self; 7] = [
        Self::FileCreated,
        Self::FileSaved,
        Self::FileDeleted,
        Self::VersionRestored,
        Self::FileRenamed,
        Self::FileMoved,
        Self::FolderCreated,
    ];

    pub const fn message(self) -> &'static str {
        match self {
            Self::FileCreated => "File created.",
            Self::FileSaved => "File saved.",
            Self::FileDeleted => "File deleted.",
            Self::VersionRestored => "Version restored.",
            Self::FileRenamed => "File renamed.",
            Self::FileMoved => "File moved.",
            Self::FolderCreated => "Folder created.",
        }
    }
}

impl Serialize for Done {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.message())
    }
}

impl JsonSchema for Done {
    fn schema_name() -> Cow<'static, str> {
        "Done".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let messages: Vec<&str> = Self::ALL.iter().map(|done| done.message()).collect();
        schemars::json_schema!({ "type": "string", "enum": messages })
    }
}

/// An item write's answer: `WriteResult` (create, save) and `RestoreResult` (with the
/// restored version) in the API reference.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ItemWritten {
    pub filename: String,
    pub folder: usize,
    pub message: Done,
    /// The restored version (a restore only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<i64>,
}

impl ItemWritten {
    pub fn new(outcome: &crate::service::WriteOutcome, done: Done) -> Self {
        Self { filename: outcome.filename.clone(), folder: outcome.folder, message: done, restored: None }
    }
}

/// A write that answers that it is done: `Deleted` and `ResourceDone` in the API
/// reference (`name`: a resource's new name, after a rename, a move or a new folder).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Acknowledged {
    pub ok: bool,
    pub message: Done,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Acknowledged {
    pub fn new(done: Done) -> Self {
        Self { ok: true, message: done, name: None }
    }

    pub fn named(done: Done, name: String) -> Self {
        Self { ok: true, message: done, name: Some(name) }
    }
}

/// A collection, as `GET /cms/collections` and `list_collections` list it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CollectionInfo {
    pub index: usize,
    pub label: String,
    pub slug: String,
    pub path: String,
    /// How many of its items break its content model (files edited by hand; they are
    /// still served): only for a collection with a model, once its index is built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_items: Option<usize>,
}

impl From<&Collection> for CollectionInfo {
    fn from(c: &Collection) -> Self {
        Self {
            index: c.index,
            label: c.label.clone(),
            slug: c.slug.clone(),
            path: c.path.clone(),
            invalid_items: None,
        }
    }
}

/// An item list entry: the spec's fields plus a few that clients of lists want. REST
/// borrows it from the index's entry (a list answer copies no string before serializing);
/// MCP, which must hand over an owned answer, takes [`ItemEntry::into_owned`].
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemEntry<'a> {
    pub slug: Cow<'a, str>,
    pub title: Cow<'a, str>,
    pub url: Cow<'a, str>,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: Cow<'a, str>,
    pub date: Option<Cow<'a, str>>,
    pub status: &'static str,
    pub filename: Cow<'a, str>,
    pub tags: Cow<'a, [Arc<str>]>,
    pub author: Option<Cow<'a, str>>,
    pub excerpt: Cow<'a, str>,
    /// Unix seconds.
    pub modified: i64,
    /// The frontmatter fields that `fields=` and `expand=` asked for (only then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fm: Option<Cow<'a, Frontmatter>>,
    /// The language the item is in (a code of `languages:`), on a site with languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// The language asked for, when the answer fell back to another (see `fallback=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_lang: Option<String>,
    /// The item in the site's other languages that the caller may see, on a site with
    /// languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translations: Option<Vec<TranslationEntry>>,
    /// For a translation: whether its source (the default language's item) changed since
    /// it was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outdated: Option<bool>,
}

/// What an item answer says of its language: `lang`, `requested_lang`, `translations`,
/// `outdated`.
pub type LanguageFields = (Option<String>, Option<String>, Option<Vec<TranslationEntry>>, Option<bool>);

/// One translation of an item.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TranslationEntry {
    pub lang: String,
    pub slug: String,
    /// Site-relative: `/{lang}/...` for a language other than the default.
    pub url: String,
    /// `published`, `draft` or `scheduled`.
    pub status: &'static str,
    /// Whether its source (the default language's item) changed since it was made
    /// (`false` for the default language's item).
    pub outdated: bool,
}

/// The answer's language fields of an item (all `None` on a site without languages).
pub fn language_fields(language: Option<&crate::service::InLanguage>) -> LanguageFields {
    let Some(language) = language else { return (None, None, None, None) };
    let translations = language
        .translations
        .iter()
        .map(|t| TranslationEntry {
            lang: t.lang.to_string(),
            slug: t.slug.clone(),
            url: t.url.clone(),
            status: t.status,
            outdated: t.outdated,
        })
        .collect();
    let requested = language.requested.as_deref().map(str::to_owned);
    (Some(language.lang.to_string()), requested, Some(translations), language.outdated)
}

impl<'a> From<&'a ItemSummary> for ItemEntry<'a> {
    fn from(s: &'a ItemSummary) -> Self {
        let meta = &s.item.meta;
        let (lang, requested_lang, translations, outdated) = language_fields(s.language.as_ref());
        Self {
            slug: Cow::Borrowed(&meta.slug),
            title: Cow::Borrowed(&meta.title),
            url: Cow::Borrowed(&s.url),
            canonical_url: Cow::Borrowed(&s.canonical_url),
            date: meta.date.as_deref().map(Cow::Borrowed),
            status: meta.status.as_str(),
            filename: Cow::Borrowed(&meta.filename),
            tags: Cow::Borrowed(&meta.tags),
            author: meta.author.as_deref().map(Cow::Borrowed),
            excerpt: Cow::Borrowed(s.item.excerpt()),
            modified: meta.modified,
            fm: s.fm.as_ref().map(|fm| match s.expanded.is_empty() {
                true => Cow::Borrowed(fm),
                false => Cow::Owned(with_expanded(fm, &s.expanded)),
            }),
            lang,
            requested_lang,
            translations,
            outdated,
        }
    }
}

/// `fm` with each expanded reference's slug replaced by the referred item's entry (or
/// `null`).
fn with_expanded(fm: &Frontmatter, expanded: &[(String, Option<Box<ItemSummary>>)]) -> Frontmatter {
    let mut fm = fm.clone();
    for (name, referred) in expanded {
        let value = referred
            .as_deref()
            .and_then(|summary| serde_json::to_value(ItemEntry::from(summary)).ok())
            .unwrap_or(serde_json::Value::Null);
        fm.insert(name.clone(), value);
    }
    fm
}

impl ItemEntry<'_> {
    /// The same entry, owning its strings.
    pub fn into_owned(self) -> ItemEntry<'static> {
        let owned = |text: Cow<'_, str>| Cow::Owned(text.into_owned());
        ItemEntry {
            slug: owned(self.slug),
            title: owned(self.title),
            url: owned(self.url),
            canonical_url: owned(self.canonical_url),
            date: self.date.map(owned),
            status: self.status,
            filename: owned(self.filename),
            tags: Cow::Owned(self.tags.into_owned()),
            author: self.author.map(owned),
            excerpt: owned(self.excerpt),
            modified: self.modified,
            fm: self.fm.map(|fm| Cow::Owned(fm.into_owned())),
            lang: self.lang,
            requested_lang: self.requested_lang,
            translations: self.translations,
            outdated: self.outdated,
        }
    }
}

/// The fields every single-item answer starts with (REST's rendered item, MCP's
/// `get_item`); each surface adds its own after them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemHead {
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
    /// The language the item is in (a code of `languages:`), on a site with languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// The language asked for, when the answer fell back to another (see `fallback=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_lang: Option<String>,
    /// The item in the site's other languages that the caller may see, on a site with
    /// languages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translations: Option<Vec<TranslationEntry>>,
    /// For a translation: whether its source (the default language's item) changed since
    /// it was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outdated: Option<bool>,
}

impl ItemHead {
    /// The head of `view`, its strings moved out (the rest of the view stays to be read).
    pub fn take(view: &mut ItemView) -> Self {
        let (lang, requested_lang, translations, outdated) = language_fields(view.language.as_ref());
        let meta = &mut view.meta;
        Self {
            slug: std::mem::take(&mut meta.slug).into(),
            filename: meta.filename.to_string(),
            title: std::mem::take(&mut meta.title).into(),
            url: std::mem::take(&mut view.url),
            canonical_url: std::mem::take(&mut view.canonical_url),
            date: meta.date.take().map(String::from),
            status: meta.status.as_str(),
            tags: meta.tags.to_strings(),
            author: meta.author.take().map(String::from),
            excerpt: std::mem::take(&mut view.excerpt),
            lang,
            requested_lang,
            translations,
            outdated,
        }
    }
}

/// Paging, the `meta` of a list or search answer.
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
pub struct VersionStamp {
    /// Pass it as `version`.
    pub timestamp: i64,
    pub size: u64,
    /// Who made the change that kept this version: the user's email (web editor), the
    /// key's name (REST API, MCP) or `cms CLI`. Absent for versions kept before authors
    /// were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// On a site kept in git (`git:` in `cms.yaml`), the commit holding this version; its
    /// `author` is then the commit's author. Absent for versions the server kept itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CurrentStamp {
    pub modified: i64,
    pub size: u64,
}

/// An item's versions: `{"filename", "versions": [...], "current": {...}}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionListing {
    pub filename: String,
    /// Newest first.
    pub versions: Vec<VersionStamp>,
    /// `null` when the item is deleted.
    pub current: Option<CurrentStamp>,
}

impl From<VersionList> for VersionListing {
    fn from(list: VersionList) -> Self {
        Self {
            filename: list.filename,
            versions: list
                .versions
                .into_iter()
                .map(|v| VersionStamp {
                    timestamp: v.timestamp,
                    size: v.size,
                    author: v.author,
                    commit: v.commit,
                })
                .collect(),
            current: list.current.map(|(modified, size)| CurrentStamp { modified, size }),
        }
    }
}

/// One saved version's source.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionText {
    pub timestamp: i64,
    pub size: u64,
    pub fm: Frontmatter,
    pub body: String,
}

impl From<VersionContent> for VersionText {
    fn from(v: VersionContent) -> Self {
        Self { timestamp: v.stamp.timestamp, size: v.stamp.size, fm: v.doc.fm, body: v.doc.body }
    }
}

/// A search result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResultEntry {
    pub slug: String,
    pub title: String,
    /// The collection's label slug.
    pub collection: String,
    pub url: String,
    #[serde(rename = "canonicalUrl")]
    pub canonical_url: String,
    pub date: Option<String>,
    pub status: &'static str,
    pub tags: Vec<String>,
    pub filename: String,
    /// Higher is better.
    pub score: f64,
    /// A short passage around the first match, HTML-escaped, matches in `<mark>`.
    pub snippet: String,
}

impl From<SearchHit> for SearchResultEntry {
    fn from(hit: SearchHit) -> Self {
        let meta = &hit.item.meta;
        Self {
            slug: meta.slug.to_string(),
            title: meta.title.to_string(),
            collection: hit.collection_slug,
            url: hit.url,
            canonical_url: hit.canonical_url,
            date: meta.date.as_deref().map(str::to_owned),
            status: meta.status.as_str(),
            tags: meta.tags.to_strings(),
            filename: meta.filename.to_string(),
            score: hit.score,
            snippet: hit.snippet,
        }
    }
}

/// A tag of a collection's published items.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TagEntry {
    pub tag: String,
    pub slug: String,
    /// Published items carrying it.
    pub count: usize,
    pub url: String,
}

impl From<TagCount> for TagEntry {
    fn from(t: TagCount) -> Self {
        Self { tag: t.tag, slug: t.slug, count: t.count, url: t.url }
    }
}

/// The resource folder a listing is of.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourceFolderInfo {
    pub index: usize,
    pub label: String,
}

impl From<ResourceFolder> for ResourceFolderInfo {
    fn from(f: ResourceFolder) -> Self {
        Self { index: f.index, label: f.label }
    }
}

/// A file of a resource folder.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ResourceFileEntry {
    pub name: String,
    pub size: u64,
    pub url: String,
    pub modified: i64,
    pub is_image: bool,
}

impl From<ResourceFile> for ResourceFileEntry {
    fn from(f: ResourceFile) -> Self {
        Self { name: f.name, size: f.size, url: f.url, modified: f.modified, is_image: f.is_image }
    }
}
