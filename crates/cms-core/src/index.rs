//! The in-memory index of a collection's item metadata.
//!
//! Each refresh takes a directory scan (names, sizes, change tokens: no file reads) and
//! re-reads only the files whose stamp changed since the last refresh, so a list request
//! costs one scan however many items the collection holds, and edits made on disk by other
//! programs are seen by the next request.

use std::collections::HashMap;
use std::sync::Arc;

use crate::document::ItemDocument;
use crate::error::CoreResult;
use crate::item::ItemMeta;
use crate::ports::{FileStamp, StoredFile};
use crate::related;
use crate::render;
use crate::slug::ItemFilename;

/// One indexed item: its metadata and what lists and feeds show of its body.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedItem {
    pub meta: ItemMeta,
    pub fm: crate::document::Frontmatter,
    /// Plain text of the body, cut for excerpts.
    pub excerpt: String,
    /// The excerpt as plain text for discovery routes: no Markdown, no HTML, cut on a word
    /// boundary (see [`plain_excerpt_of`]).
    pub plain_excerpt: String,
    /// Significant words of title and body, sorted and distinct, for related items.
    pub words: Vec<String>,
}

/// Longest excerpt kept in the index, in characters.
pub const EXCERPT_CHARS: usize = 160;

#[derive(Debug)]
enum Entry {
    Item(Arc<IndexedItem>),
    /// The file could not be used (broken YAML, over a limit); kept so that it is not
    /// re-read until it changes.
    Broken,
}

#[derive(Debug, Default)]
pub struct CollectionIndex {
    entries: HashMap<String, (FileStamp, Entry)>,
}

impl CollectionIndex {
    /// Brings the index up to date with `scan`, loading changed files with `load`.
    /// Returns the usable items in no particular order; files that cannot be loaded or
    /// parsed are left out until they change.
    pub fn refresh(
        &mut self,
        scan: Vec<FileStamp>,
        mut load: impl FnMut(&ItemFilename) -> CoreResult<Option<StoredFile>>,
    ) -> Vec<Arc<IndexedItem>> {
        let mut fresh = HashMap::with_capacity(scan.len());
        for stamp in scan {
            let Some(name) = ItemFilename::parse(&stamp.name) else { continue };
            let entry = match self.entries.remove(&stamp.name) {
                Some((old, entry)) if old == stamp => entry,
                _ => match load(&name) {
                    Ok(Some(file)) => index_file(&name, &file),
                    Ok(None) => continue, // deleted between scan and read
                    // One unreadable file (too large, no permission) must not fail the list.
                    Err(error) => broken(&name, &error.to_string()),
                },
            };
            fresh.insert(stamp.name.clone(), (stamp, entry));
        }
        self.entries = fresh;
        self.entries
            .values()
            .filter_map(|(_, entry)| match entry {
                Entry::Item(item) => Some(Arc::clone(item)),
                Entry::Broken => None,
            })
            .collect()
    }
}

fn index_file(name: &ItemFilename, file: &StoredFile) -> Entry {
    let parsed = std::str::from_utf8(&file.bytes)
        .map_err(|_| "the file is not UTF-8".to_owned())
        .and_then(|text| ItemDocument::parse(text).map_err(|e| e.to_string()));
    match parsed {
        Ok(doc) => {
            let meta = ItemMeta::derive(name, &doc, file.stamp.modified, file.stamp.size);
            let body_text = render::to_plain_text(&doc.body);
            let excerpt = excerpt_with(&doc, &body_text);
            let plain_excerpt = plain_excerpt_with(&doc, &body_text);
            let words = related::significant_words(&format!("{} {body_text}", meta.title));
            Entry::Item(Arc::new(IndexedItem { meta, fm: doc.fm, excerpt, plain_excerpt, words }))
        }
        Err(reason) => broken(name, &reason),
    }
}

/// An item's excerpt: `fm.excerpt`, else `fm.description`, else the body as plain text
/// cut on a word boundary. Lists and single reads use this one rule.
pub fn excerpt_of(doc: &ItemDocument) -> String {
    excerpt_with(doc, &render::to_plain_text(&doc.body))
}

fn excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => text.to_owned(),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

/// The same rule as [`excerpt_of`], as plain text: a written `fm.excerpt` or
/// `fm.description` loses its Markdown and HTML too, and every excerpt is cut on a word
/// boundary at [`EXCERPT_CHARS`]. The search index, feeds and related items use this.
pub fn plain_excerpt_of(doc: &ItemDocument) -> String {
    plain_excerpt_with(doc, &render::to_plain_text(&doc.body))
}

fn plain_excerpt_with(doc: &ItemDocument, body_text: &str) -> String {
    match written_excerpt(doc) {
        Some(text) => render::excerpt(&render::to_plain_text(&strip_tags(text)), EXCERPT_CHARS),
        None => render::excerpt(body_text, EXCERPT_CHARS),
    }
}

/// Removes HTML tags (`<p>`, `</b>`, `<!-- -->`) from a written excerpt, keeping their
/// text: Markdown drops a whole HTML block, and `<p>Intro</p>` must still give `Intro`.
/// A `<` that does not open a tag (`a < b`) stays.
fn strip_tags(text: &str) -> String {
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

fn written_excerpt(doc: &ItemDocument) -> Option<&str> {
    ["excerpt", "description"].iter().find_map(|key| doc.fm.get(*key).and_then(|v| v.as_str()))
}

/// Logged once per change of the file, not on every request.
fn broken(name: &ItemFilename, reason: &str) -> Entry {
    tracing::warn!(filename = name.as_str(), reason, "skipping an item that cannot be read");
    Entry::Broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(fm: &str) -> ItemDocument {
        ItemDocument::parse(&format!("---\n{fm}\n---\nThe *body* text.\n")).unwrap()
    }

    #[test]
    fn plain_excerpts_lose_markdown_and_html() {
        assert_eq!(plain_excerpt_of(&doc("excerpt: '<p>Intro &amp; <b>more</b></p>'")), "Intro & more");
        assert_eq!(plain_excerpt_of(&doc("description: '**a** < b <!-- c -->'")), "a < b");
        assert_eq!(plain_excerpt_of(&doc("title: T")), "The body text.");
        assert_eq!(excerpt_of(&doc("excerpt: '<p>x</p>'")), "<p>x</p>", "lists keep it as written");
    }
}
