//! One indexed item ([`IndexedItem`]): what the index holds of an item file, made from
//! the file or from the document the facade just encoded, and its excerpts.

use std::sync::Arc;

use crate::dates::SiteZone;
use crate::document::ItemDocument;
use crate::engine::kept::{KeptField, KeptFields, Shared};
use crate::item::{ItemMeta, SlugSource};
use crate::item_file::ContentTag;
use crate::model::Model;
use crate::ports::StoredFile;
use crate::query::ListQuery;
use crate::render;
use crate::slug::{ItemFilename, slugify};

/// One indexed item: its metadata and what lists and feeds show of its body (related items
/// by content use the search index's postings).
/// Only what a list or a discovery route needs is kept, each in its smallest form: a
/// single read takes the rest (frontmatter, HTML, the excerpt as written) from the file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexedItem {
    pub meta: ItemMeta,
    /// The excerpt as plain text for discovery routes: no Markdown, no HTML, cut on a word
    /// boundary (see [`plain_excerpt_of`]).
    pub plain_excerpt: Box<str>,
    /// What names the file's bytes (its strong ETag as text: [`Self::etag`]).
    pub content: ContentTag,
    /// What names this version of the file (`service::file_version`): a single read's
    /// answer is kept by it.
    pub file_version: u64,
    /// The fields of the collection's model, as filters, orders and `fields=` use them
    /// (see [`Self::field`]); `None` in a collection without a model. They refer to texts
    /// of `meta` (see [`Shared`]): an item is made whole, never given another meta.
    fields: Option<KeptFields>,
    /// What most items do not have, boxed together: 8 bytes an item where the five took
    /// 64 (the index keeps one `IndexedItem` per item, and 208 bytes with the `Arc`'s
    /// counts fit mimalloc's 224-byte class, where 216 took the 256-byte one).
    rare: Option<Box<Rare>>,
}

/// The parts of an [`IndexedItem`] that most items do not have.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Rare {
    /// `fm.image`, for discovery routes.
    image: Option<Box<str>>,
    /// The excerpt as lists and single reads show it, when it differs from
    /// `plain_excerpt` (a written `fm.excerpt` with Markdown or HTML in it): see
    /// [`IndexedItem::excerpt`].
    written_excerpt: Option<Box<str>>,
    /// The tags as slugs, for `tags=` filters; `None` when every tag is its own slug (the
    /// usual case), so that nothing is kept twice.
    tag_slugs: Option<Box<[Box<str>]>>,
    /// What links a translation to its siblings and its source.
    linking: Option<Linking>,
    /// Whether the frontmatter breaks the collection's model (its own rules; whether the
    /// items and media it names exist is checked on writes and by `cms check`).
    breaks_model: bool,
}

/// How an item file is read: in the site's time zone, against its collection's model,
/// its slug from where [`SlugSource`] says.
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    pub zone: &'a SiteZone,
    pub model: Option<&'a Model>,
    pub slugs: SlugSource,
}

impl<'a> Reading<'a> {
    /// As a site without languages or model reads its files.
    pub fn plain(zone: &'a SiteZone) -> Self {
        Self { zone, model: None, slugs: SlugSource::FileName }
    }
}

impl IndexedItem {
    /// Parses an item file; `Err` with the reason when it cannot be used.
    pub fn from_file(name: &ItemFilename, file: &StoredFile, reading: Reading<'_>) -> Result<Self, String> {
        let doc = document_of(file)?;
        // Only the excerpt needs the body's text here, and only its start (a start-up
        // reads every item this way; the search index takes the whole text later).
        let (plain_excerpt, excerpt) = match written_excerpt(&doc) {
            Some(written) => (plain_written_excerpt(written), written.to_owned()),
            None => {
                let excerpt =
                    render::excerpt(&render::plain_text_start(&doc.body, EXCERPT_CHARS), EXCERPT_CHARS);
                (excerpt.clone(), excerpt)
            }
        };
        Ok(Self::assemble(name, &doc, file, reading, plain_excerpt, excerpt))
    }

    /// [`Self::from_file`], and the body as plain text (what the search index takes), so
    /// that a write parses and renders its file once for both.
    pub fn from_file_with_text(
        name: &ItemFilename,
        file: &StoredFile,
        reading: Reading<'_>,
    ) -> Result<(Self, String), String> {
        let doc = document_of(file)?;
        Ok(Self::from_document_with_text(name, &doc, file, reading))
    }

    /// [`Self::from_file_with_text`] for a file whose document is at hand (`doc` must be
    /// what its bytes parse to): a write has just encoded it and need not parse it again.
    pub fn from_document_with_text(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        reading: Reading<'_>,
    ) -> (Self, String) {
        let body_text = render::to_plain_text(&doc.body);
        let plain_excerpt = plain_excerpt_with(doc, &body_text);
        let excerpt = excerpt_with(doc, &body_text);
        (Self::assemble(name, doc, file, reading, plain_excerpt, excerpt), body_text)
    }

    /// [`Self::from_document_with_text`] for a new version of `previous`'s file with the same
    /// body (a change of frontmatter alone, such as publishing): the body's excerpt is taken
    /// from `previous` rather than rendering the Markdown again. `previous_wrote_excerpt`
    /// says whether the document `previous` was made from had a written excerpt. `None`
    /// when the body's excerpt is needed and `previous` does not hold it (its excerpt was
    /// written).
    pub fn with_body_of(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        reading: Reading<'_>,
        previous: &IndexedItem,
        previous_wrote_excerpt: bool,
    ) -> Option<Self> {
        let (plain_excerpt, excerpt) = match written_excerpt(doc) {
            Some(written) => (plain_written_excerpt(written), written.to_owned()),
            None if previous_wrote_excerpt => return None,
            None => (previous.plain_excerpt.to_string(), previous.plain_excerpt.to_string()),
        };
        Some(Self::assemble(name, doc, file, reading, plain_excerpt, excerpt))
    }

    pub(super) fn assemble(
        name: &ItemFilename,
        doc: &ItemDocument,
        file: &StoredFile,
        reading: Reading<'_>,
        plain_excerpt: String,
        excerpt: String,
    ) -> Self {
        let Reading { zone, model, slugs } = reading;
        let meta = ItemMeta::derive(name, doc, file.stamp.modified, file.stamp.size, zone, slugs);
        let slugs: Vec<String> = meta.tags.iter().map(|t| slugify(t)).collect();
        let tag_slugs = (!slugs.iter().map(String::as_str).eq(meta.tags.iter().map(|t| &**t)))
            .then(|| slugs.into_iter().map(String::into_boxed_str).collect());
        let content = ContentTag::of(&file.bytes);
        let meta = meta.compacted();
        let rare = Rare {
            image: doc.fm.get("image").and_then(|v| v.as_str()).map(Box::from),
            written_excerpt: (excerpt != plain_excerpt).then(|| excerpt.into_boxed_str()),
            tag_slugs,
            linking: Linking::of(&doc.fm),
            breaks_model: model.is_some_and(|model| !model.validate(&doc.fm).is_empty()),
        };
        Self {
            plain_excerpt: plain_excerpt.into_boxed_str(),
            file_version: crate::item_file::file_version(&meta, content),
            content,
            fields: model.map(|model| model.keep(&doc.fm, Shared::of(&meta))),
            meta,
            rare: (rare != Rare::default()).then(|| Box::new(rare)),
        }
    }

    /// Whether the document has a written excerpt (`fm.excerpt` or `fm.description`):
    /// then the index's excerpts come from it, not from the body.
    pub fn writes_excerpt(doc: &ItemDocument) -> bool {
        written_excerpt(doc).is_some()
    }

    /// The excerpt as lists and single reads show it: `fm.excerpt` or `fm.description` as
    /// written, else the body as plain text (see [`excerpt_of`]).
    pub fn excerpt(&self) -> &str {
        self.rare.as_ref().and_then(|rare| rare.written_excerpt.as_deref()).unwrap_or(&self.plain_excerpt)
    }

    /// Whether the frontmatter breaks the collection's model (its own rules; whether the
    /// items and media it names exist is checked on writes and by `cms check`).
    pub fn breaks_model(&self) -> bool {
        self.rare.as_ref().is_some_and(|rare| rare.breaks_model)
    }

    /// `fm.image`, as written.
    pub fn image(&self) -> Option<&str> {
        self.rare.as_ref()?.image.as_deref()
    }

    /// A translation's `translated_from`: the content of its source (the default
    /// language's file) it was made from.
    pub fn translated_from(&self) -> Option<ContentTag> {
        self.rare.as_ref()?.linking.as_ref()?.translated_from
    }

    /// The frontmatter's `translationKey`, which links files of different names.
    pub fn translation_key(&self) -> Option<&str> {
        self.rare.as_ref()?.linking.as_ref()?.key.as_deref()
    }

    /// The strong ETag of the file's bytes.
    pub fn etag(&self) -> String {
        self.content.text()
    }

    /// The item's tags as slugs.
    pub fn tag_slugs(&self) -> impl Iterator<Item = &str> {
        let (slugs, tags) = match self.rare.as_ref().and_then(|rare| rare.tag_slugs.as_ref()) {
            Some(slugs) => (Some(slugs.iter().map(|s| &**s)), None),
            None => (None, Some(self.meta.tags.iter().map(|t| &**t))),
        };
        slugs.into_iter().flatten().chain(tags.into_iter().flatten())
    }

    /// Whether the item carries any of these tag slugs.
    pub fn has_any_tag(&self, wanted_slugs: &[String]) -> bool {
        self.tag_slugs().any(|t| wanted_slugs.iter().any(|w| w == t))
    }

    /// The kept field at `at` (its place in the collection's model); `None` without a
    /// model.
    pub fn field(&self, at: usize) -> Option<KeptField<'_>> {
        self.fields.as_ref()?.get(at, Shared::of(&self.meta))
    }

    pub(super) fn admitted_by(&self, query: &ListQuery, now: i64) -> bool {
        query.status.admits(self.meta.status, self.meta.live_at(now))
            && query.filters.iter().all(|filter| filter.admits(self.field(filter.at)))
            && (query.tags.is_empty() || self.has_any_tag(&query.tags))
            && query
                .author
                .as_ref()
                .is_none_or(|a| self.meta.author.as_deref().is_some_and(|b| b.eq_ignore_ascii_case(a)))
            && query.text.as_ref().is_none_or(|text| text.admits(&self.meta))
    }
}

/// What links an item to its translations, from its frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Linking {
    /// `translated_from` ([`crate::item_file::TRANSLATED_FROM`]).
    pub translated_from: Option<ContentTag>,
    /// `translationKey` ([`crate::item_file::TRANSLATION_KEY`]).
    pub key: Option<Box<str>>,
}

impl Linking {
    /// `None` when the frontmatter has neither key.
    fn of(fm: &crate::document::Frontmatter) -> Option<Self> {
        let translated_from = fm
            .get(crate::item_file::TRANSLATED_FROM)
            .and_then(|v| v.as_str())
            .and_then(ContentTag::parse_hex);
        let key = translation_key_of(fm);
        (translated_from.is_some() || key.is_some())
            .then(|| Self { translated_from, key: key.map(Box::from) })
    }
}

/// A frontmatter's `translationKey`, trimmed; `None` when it has none or an empty one
/// (then the file is linked by its name).
pub fn translation_key_of(fm: &crate::document::Frontmatter) -> Option<&str> {
    let key = fm.get(crate::item_file::TRANSLATION_KEY)?.as_str()?.trim();
    (!key.is_empty()).then_some(key)
}

/// An item file as the index takes it: its item, or why it cannot be used.
pub type Parsed = Result<IndexedItem, String>;

/// What the index holds for one item file: its item, or why it cannot be used.
pub type Held = Result<Arc<IndexedItem>, Box<str>>;

/// A parsed file as the index holds it.
pub fn held(parsed: Parsed) -> Held {
    parsed.map(Arc::new).map_err(Box::from)
}

/// Longest excerpt kept in the index, in characters.
pub const EXCERPT_CHARS: usize = 160;

/// An item's excerpt: `fm.excerpt`, else `fm.description`, else the body as plain text
/// cut on a word boundary. Lists and single reads use this one rule.
pub fn excerpt_of(doc: &ItemDocument) -> String {
    excerpt_with(doc, &render::plain_text_start(&doc.body, EXCERPT_CHARS))
}

/// A file's document; `Err` with the reason when it cannot be used.
fn document_of(file: &StoredFile) -> Result<ItemDocument, String> {
    let text = std::str::from_utf8(&file.bytes).map_err(|_| "the file is not UTF-8".to_owned())?;
    ItemDocument::parse(text).map_err(|e| format!("the frontmatter cannot be read: {e}"))
}

pub(super) fn excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => text.to_owned(),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

#[cfg(test)]
/// The same rule as [`excerpt_of`], as plain text: a written `fm.excerpt` or
/// `fm.description` loses its Markdown and HTML too, and every excerpt is cut on a word
/// boundary at [`EXCERPT_CHARS`] (the index keeps it made with [`plain_excerpt_with`]).
pub fn plain_excerpt_of(doc: &ItemDocument) -> String {
    plain_excerpt_with(doc, &render::to_plain_text(&doc.body))
}

pub(super) fn plain_excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => plain_written_excerpt(text),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

pub(super) fn plain_written_excerpt(text: &str) -> String {
    render::excerpt(&render::to_plain_text(&strip_tags(text)), EXCERPT_CHARS)
}

/// Removes HTML tags (`<p>`, `</b>`, `<!-- -->`) from a written excerpt, keeping their
/// text: Markdown drops a whole HTML block, and `<p>Intro</p>` must still give `Intro`.
/// A `<` that does not open a tag (`a < b`) stays.
pub(super) fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let opens_tag = after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>') {
            Some(end) if opens_tag => {
                out.push(' ');
                rest = &after[end + 1..];
            }
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(super) fn written_excerpt(doc: &ItemDocument) -> Option<&str> {
    ["excerpt", "description"].iter().find_map(|key| doc.fm.get(*key).and_then(|v| v.as_str()))
}
