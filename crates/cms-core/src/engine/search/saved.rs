//! A search index as bytes, so that a restart reads it instead of reading and parsing
//! every item file again (at 100,000 items in three languages that rebuild was a minute of
//! both cores after every start, while requests were served).
//!
//! Like the kept index's snapshot, only ever a cache of what a build would give:
//! - it is used only when written in this [`FORMAT`] with the same stemming (the store
//!   adds its own check that the same program wrote it);
//! - each item's terms are kept only when the item's file version (`IndexedItem::
//!   file_version`) is still the one they were read from ([`SearchIndex::keep_current`]);
//!   every other item is read again, as without a snapshot;
//! - bytes that do not decode are ignored.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Doc, Postings, SearchIndex, Stemming, doc_name};
use crate::related;

/// Bumped whenever what a saved search index holds changes shape.
const FORMAT: u32 = 1;

#[derive(Serialize)]
struct SavedRef<'a> {
    format: u32,
    stemming: String,
    /// By id; `None` for a free or retired id.
    docs: Vec<Option<DocRef<'a>>>,
    /// By term id.
    terms: Vec<TermRef<'a>>,
}

#[derive(Serialize)]
struct DocRef<'a> {
    name: &'a str,
    version: u64,
    content_terms: u32,
}

#[derive(Serialize)]
struct TermRef<'a> {
    term: &'a str,
    postings: &'a [u8],
    last: u32,
    len: u32,
}

#[derive(Deserialize)]
struct Saved {
    format: u32,
    stemming: String,
    docs: Vec<Option<SavedDoc>>,
    terms: Vec<SavedTerm>,
}

#[derive(Deserialize)]
struct SavedDoc {
    name: Box<str>,
    version: u64,
    content_terms: u32,
}

#[derive(Deserialize)]
struct SavedTerm {
    term: Box<str>,
    postings: Vec<u8>,
    last: u32,
    len: u32,
}

fn label(stemming: Stemming) -> String {
    format!("{stemming:?}")
}

impl SearchIndex {
    /// The index as bytes (see the module's notes).
    pub fn encode(&self) -> Vec<u8> {
        let mut terms: Vec<TermRef<'_>> = self
            .postings
            .iter()
            .map(|p| TermRef { term: "", postings: &p.bytes, last: p.last, len: p.len })
            .collect();
        for (term, id) in &self.ordered {
            terms[*id as usize].term = term;
        }
        let docs = self
            .docs
            .iter()
            .map(|doc| {
                doc.as_ref().map(|doc| DocRef {
                    name: &doc.name,
                    version: doc.version,
                    content_terms: doc.content_terms,
                })
            })
            .collect();
        let saved = SavedRef { format: FORMAT, stemming: label(self.stemming), docs, terms };
        postcard::to_allocvec(&saved).expect("a search index encodes")
    }

    /// An index decoded from [`Self::encode`]'s bytes, for a collection whose words stem
    /// as `stemming` says; `Err` says why the bytes cannot be used. Every item in it is
    /// taken as unpublished until [`Self::keep_current`] says otherwise.
    pub fn decode(bytes: &[u8], stemming: Stemming) -> Result<Self, String> {
        let saved: Saved = postcard::from_bytes(bytes)
            .map_err(|error| format!("the search snapshot does not decode: {error}"))?;
        if saved.format != FORMAT || saved.stemming != label(stemming) {
            return Err(format!(
                "the search snapshot was made in format {} for {}, not {FORMAT} for {}",
                saved.format,
                saved.stemming,
                label(stemming)
            ));
        }
        let mut index = SearchIndex::new(stemming);
        let docs = saved.docs.len();
        for (id, term) in saved.terms.into_iter().enumerate() {
            let id = id as u32;
            let postings = Postings { bytes: term.postings, last: term.last, len: term.len };
            if postings.iter().any(|(doc, _)| doc as usize >= docs) {
                return Err("the search snapshot names an item it does not hold".into());
            }
            let term: Arc<str> = Arc::from(term.term);
            if index.term_ids.insert(Arc::clone(&term), id).is_some() {
                return Err(format!("the search snapshot holds the term {term:?} twice"));
            }
            index.significant.push(related::is_significant_term(&term));
            index.ordered.insert(term, id);
            index.postings.push(postings);
        }
        for (id, doc) in saved.docs.into_iter().enumerate() {
            let doc = doc.map(|doc| Doc {
                name: Arc::from(doc.name),
                published: false,
                content_terms: doc.content_terms,
                version: doc.version,
            });
            let filed = doc.is_some();
            if !filed {
                index.retired += 1;
            }
            index.docs.push(doc);
            if filed {
                let docs = &index.docs;
                let name = doc_name(docs, id as u32);
                if index.by_name.insert(id as u32, name, |id| doc_name(docs, id)).is_some() {
                    return Err(format!("the search snapshot holds {name:?} twice"));
                }
            }
        }
        Ok(index)
    }

    /// Keeps the items whose terms were read from the file version the kept index holds
    /// now, as `current` says (`Some((name, version, published))`, the name shared with
    /// the kept index); forgets the others. Then drops what was forgotten.
    pub fn keep_current<'a>(&mut self, current: impl Fn(&str) -> Option<(&'a Arc<str>, u64, bool)>) {
        for id in 0..self.docs.len() {
            let Some(doc) = &mut self.docs[id] else { continue };
            match current(&doc.name) {
                Some((name, version, published)) if version == doc.version => {
                    doc.published = published;
                    // The same text: the table needs no change.
                    if !Arc::ptr_eq(name, &doc.name) {
                        doc.name = Arc::clone(name);
                    }
                }
                _ => {
                    let docs = &self.docs;
                    let name = &*docs[id].as_ref().expect("a doc").name;
                    self.by_name.remove(name, |id| doc_name(docs, id));
                    self.docs[id] = None;
                    self.retired += 1;
                }
            }
        }
        if self.retired > 0 {
            self.compact();
        } else {
            self.free.clear();
        }
    }

    /// Whether the item file `name` is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.id_of(name).is_some()
    }
}
