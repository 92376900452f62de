//! Rendered single items (the body as HTML and the whole frontmatter), kept per file
//! version in the [`RenderCache`](crate::ports::RenderCache) port; and every live item
//! rendered ahead of requests after start-up ([`Cms::render_ahead`]), for the web layer
//! to keep as finished answers, so that a read of any item costs a lookup, not a parse
//! and a render.
//!
//! A record names the version it was rendered from (collection, filename, ETag) and is
//! only taken for that very version: a changed file asks for another key, and a record
//! that does not say what was asked for (a key collision, a damaged file) is a miss.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::{Cms, ItemView};
use crate::collection::Collection;
use crate::document::Frontmatter;
use crate::engine::index::IndexedItem;
use crate::error::CoreResult;
use crate::item_file::{ContentTag, parse_bytes};
use crate::ports::StoredFile;
use crate::render;
use crate::slug::ItemFilename;

/// Files read at a time while rendering ahead.
const AHEAD_BATCH: usize = 256;

/// What a single read needs beyond the index.
#[derive(Debug, PartialEq)]
pub(super) struct Rendered {
    pub(super) html: String,
    pub(super) fm: Frontmatter,
}

/// Which version of which file a record is of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Version<'a> {
    pub(super) collection: usize,
    pub(super) name: &'a str,
    pub(super) content: ContentTag,
}

impl Version<'_> {
    pub(super) fn key(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        (self.collection, self.name, self.content).hash(&mut hasher);
        hasher.finish()
    }

    /// `collection` (u32), then the filename and the content tag (each a u16 length and
    /// the bytes), the frontmatter as JSON (a u32 length and the bytes), the HTML to the end.
    pub(super) fn encode(&self, rendered: &Rendered) -> Option<Vec<u8>> {
        let fm = serde_json::to_vec(&rendered.fm).ok()?;
        let mut record = Vec::with_capacity(28 + self.name.len() + fm.len() + rendered.html.len());
        record.extend_from_slice(&u32::try_from(self.collection).ok()?.to_le_bytes());
        for text in [self.name.as_bytes(), self.content.as_bytes()] {
            record.extend_from_slice(&u16::try_from(text.len()).ok()?.to_le_bytes());
            record.extend_from_slice(text);
        }
        record.extend_from_slice(&u32::try_from(fm.len()).ok()?.to_le_bytes());
        record.extend_from_slice(&fm);
        record.extend_from_slice(rendered.html.as_bytes());
        Some(record)
    }

    /// The rendering in `record`, if it is of this version.
    pub(super) fn decode(&self, record: &[u8]) -> Option<Rendered> {
        let mut rest = record;
        let collection = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
        if usize::try_from(collection).ok()? != self.collection {
            return None;
        }
        for expected in [self.name.as_bytes(), self.content.as_bytes()] {
            let len = u16::from_le_bytes(take(&mut rest, 2)?.try_into().ok()?);
            if take(&mut rest, usize::from(len))? != expected {
                return None;
            }
        }
        let fm_len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
        let fm = serde_json::from_slice(take(&mut rest, usize::try_from(fm_len).ok()?)?).ok()?;
        let html = String::from_utf8(rest.to_vec()).ok()?;
        Some(Rendered { html, fm })
    }
}

/// The first `n` bytes of `rest`, which keeps the remainder.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = rest.split_at_checked(n)?;
    *rest = tail;
    Some(head)
}

impl Cms {
    /// The kept rendering of this version, if any.
    pub(super) fn kept_rendering(&self, version: Version<'_>) -> Option<Rendered> {
        self.render_cache.get(version.key()).and_then(|record| version.decode(&record))
    }

    /// Keeps a rendering of this version (unless it cannot be encoded: then it is simply
    /// rendered again next time).
    pub(super) fn keep_rendering(&self, version: Version<'_>, rendered: &Rendered) {
        if let Some(record) = version.encode(rendered) {
            self.render_cache.put(version.key(), &record);
        }
    }

    /// Renders every live item that `sink` still wants and hands it over, so that single
    /// reads find their answers kept (the server calls it in the background after the
    /// search index is built). Reads files in batches, takes only the version the kept
    /// index holds, and stops once the sink is full. Answers how many items it rendered.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn render_ahead(&self, sink: &dyn AheadSink) -> CoreResult<usize> {
        // On a site with languages, each language's collection: its answers in its own
        // language, as an anonymous read of `?lang=` (or of its negotiated language) asks.
        let mut rendered = 0;
        if self.languages.is_some() {
            // An answer names its translations: every language's index first.
            for collection in &self.collections {
                drop(self.index(collection).await?);
            }
        }
        for collection in &self.collections {
            rendered += self.render_collection_ahead(collection, sink).await?;
        }
        Ok(rendered)
    }

    async fn render_collection_ahead(
        &self,
        collection: &Collection,
        sink: &dyn AheadSink,
    ) -> CoreResult<usize> {
        let live: Vec<Arc<IndexedItem>> = {
            let index = self.index(collection).await?;
            index.items().into_iter().filter(|item| index.is_live(item)).collect()
        };
        // Asked without holding the index: writers do not wait on the sink.
        let wanted: Vec<ItemFilename> = live
            .iter()
            .filter(|item| sink.wants(self.public_answer_version(collection, item)))
            .filter_map(|item| collection.naming.parse(&item.meta.filename))
            .collect();
        drop(live);
        let mut rendered = 0;
        for batch in wanted.chunks(AHEAD_BATCH) {
            if sink.is_full() {
                break;
            }
            let files = self.ports.content.read_many(collection, batch).await;
            for file in files.into_iter().filter_map(|file| file.ok()?) {
                if let Some(view) = self.render_file_ahead(collection, &file).await? {
                    sink.keep(view);
                    rendered += 1;
                }
            }
        }
        Ok(rendered)
    }

    /// The view of one file read ahead, if the kept index still holds this very version.
    async fn render_file_ahead(
        &self,
        collection: &Collection,
        file: &StoredFile,
    ) -> CoreResult<Option<ItemView>> {
        let Some(name) = collection.naming.parse(&file.stamp.name) else { return Ok(None) };
        let indexed = {
            let index = self.index(collection).await?;
            if !index.holds(&file.stamp) {
                return Ok(None); // changed since: rendered when it is read
            }
            match index.get(name.as_str()) {
                Some(Ok(item)) if index.is_live(item) => Arc::clone(item),
                _ => return Ok(None),
            }
        };
        // The stamp was taken before the read: a write in place between the two leaves
        // other bytes under the same stamp. Those wait for the change report.
        if ContentTag::of(&file.bytes) != indexed.content {
            return Ok(None);
        }
        let Ok(doc) = parse_bytes(&name, &file.bytes) else { return Ok(None) };
        let rendered = Rendered { html: render::to_html(&doc.body), fm: doc.fm };
        let view = self.view_of(collection, &indexed, rendered);
        let own = collection.language.as_ref().map(|l| l.at);
        Ok(Some(self.in_its_language(collection, view, own, &super::Viewer::Anonymous)))
    }
}

/// What [`Cms::render_ahead`] hands its renderings to: the web layer keeps each as its
/// finished answer, by the view's `version`.
pub trait AheadSink: Send + Sync {
    /// Whether an item of this version (see [`ItemVersion`]) is still wanted, i.e. not
    /// kept yet.
    fn wants(&self, version: u64) -> bool;
    /// Whether the sink is at its budget: rendering ahead stops rather than churn.
    fn is_full(&self) -> bool;
    /// Takes one rendered live item.
    fn keep(&self, view: ItemView);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered() -> Rendered {
        let fm = json!({"title": "Hello", "tags": ["a", "b"], "n": 3});
        Rendered { html: "<p>Hé</p>\n".into(), fm: fm.as_object().cloned().unwrap_or_default() }
    }

    #[test]
    fn a_record_reads_back_only_as_its_own_version() {
        let version = Version { collection: 1, name: "2024-01-01-hello.md", content: ContentTag::of(b"abc") };
        let record = version.encode(&rendered()).expect("encodes");
        assert_eq!(version.decode(&record), Some(rendered()));
        for other in [
            Version { collection: 0, ..version },
            Version { name: "2024-01-01-hello.markdown", ..version },
            Version { content: ContentTag::of(b"abd"), ..version },
        ] {
            assert_ne!(other.key(), version.key());
            assert_eq!(other.decode(&record), None, "{other:?} is another version");
        }
    }

    #[test]
    fn a_damaged_record_is_a_miss() {
        let version = Version { collection: 0, name: "a.md", content: ContentTag::of(b"e") };
        let record = version.encode(&rendered()).expect("encodes");
        for cut in 0..record.len() - "<p>Hé</p>\n".len() {
            assert_eq!(version.decode(&record[..cut]), None, "cut at {cut}");
        }
        let mut bad_utf8 = record.clone();
        let last = bad_utf8.len() - 2;
        bad_utf8[last] = 0xff;
        assert_eq!(version.decode(&bad_utf8), None);
    }
}
