//! Full-text search over one collection: an inverted index of stemmed words, ranked so
//! that a word in the title counts more than in the tags, and in the tags more than in
//! the body, with short highlighted snippets.
//!
//! Why an index of our own and not an engine such as tantivy: it is changed in the same
//! step as the kept item index (the facade's writes and the store's change reports, see
//! `service::search`), so it is never behind and a write is searchable by the very next
//! request, with no commit or reader reload in between; it does no I/O, so it lives in the
//! domain crate; and it keeps 5 bytes per distinct word of an item, with no stored text.
//!
//! Words are lowercased runs of letters and digits, stemmed with the Snowball English
//! stemmer (`rust-stemmers`, the stemmer tantivy uses), so `running` finds `run` and
//! `runs`. Each query word also matches as a prefix of indexed words (`front` finds
//! `frontmatter`), at a lower weight than an exact match. Every query word must match.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use rust_stemmers::{Algorithm, Stemmer};

use crate::engine::names::NameTable;
use crate::related;

/// Marks of one posting: bit 7 the title has the word, bit 6 a tag has it, bits 0-5 how
/// often the body has it (capped).
const IN_TITLE: u8 = 0x80;
const IN_TAGS: u8 = 0x40;
const BODY_COUNT: u8 = 0x3f;

/// Distinct body words indexed per item (the first ones), as related items do: a very
/// long item is found by its beginning, and cannot blow up the index.
pub const MAX_BODY_TERMS: usize = 2_000;
/// Longest word indexed, in characters (longer runs are hashes, base64, not words).
const MAX_WORD_CHARS: usize = 40;
/// Query words taken (the rest are ignored).
pub const MAX_QUERY_WORDS: usize = 16;
/// Indexed words a query word may expand to as a prefix.
const MAX_PREFIX_TERMS: usize = 64;
/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 500;

/// Field weights: a title match always outranks a tag match, which outranks any body
/// match (at most `1 + ln(63) / 2`, about 3.1).
const TITLE_WEIGHT: f32 = 8.0;
const TAGS_WEIGHT: f32 = 4.0;
/// A query word that only matches as a prefix counts this much of an exact match.
const PREFIX_WEIGHT: f32 = 0.6;

/// The lowercased words of a text with their byte ranges; with `bigrams`, each run of
/// Chinese or Japanese characters (written without spaces between words) is cut into its
/// overlapping pairs of characters instead (`東京都` → `東京`, `京都`), as Lucene's CJK
/// analyzer does: a query's pairs then find the same text without a dictionary. A word
/// already in lowercase is borrowed from the text: a start-up's search build reads tens of
/// millions of words, and allocating each was most of its allocations.
fn words(text: &str, bigrams: bool) -> impl Iterator<Item = (usize, usize, Cow<'_, str>)> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        loop {
            let (start, c) = chars.next()?;
            if !c.is_alphanumeric() {
                continue;
            }
            let mut end = start + c.len_utf8();
            while let Some(&(i, c)) = chars.peek() {
                if !c.is_alphanumeric() {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            return Some((start, end));
        }
    })
    .flat_map(move |(start, end)| Pieces::of(text, start, end, bigrams))
}

/// `word` in lowercase: itself when it is already (the usual case in a body).
fn lowercase(word: &str) -> Cow<'_, str> {
    if word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(word.to_lowercase())
    }
}

/// Whether a word is short enough to index (see [`MAX_WORD_CHARS`]).
fn indexable(word: &str) -> bool {
    word.len() <= MAX_WORD_CHARS || word.chars().count() <= MAX_WORD_CHARS
}

/// The words of one run of letters and digits (see [`words`]).
enum Pieces<'a> {
    One(Option<(usize, usize, Cow<'a, str>)>),
    Many(std::vec::IntoIter<(usize, usize, Cow<'a, str>)>),
}

impl<'a> Pieces<'a> {
    fn of(text: &'a str, start: usize, end: usize, bigrams: bool) -> Self {
        let run = &text[start..end];
        if !(bigrams && run.chars().any(is_cjk)) {
            let word = lowercase(run);
            return Self::One(indexable(&word).then_some((start, end, word)));
        }
        // Other letters as words; each stretch of CJK characters as its pairs (a lone
        // character as itself).
        let mut pieces = Vec::new();
        let chars: Vec<(usize, char)> = run.char_indices().map(|(i, c)| (start + i, c)).collect();
        let end_of = |at: usize| chars.get(at + 1).map_or(end, |(i, _)| *i);
        let mut at = 0;
        while at < chars.len() {
            let cjk = is_cjk(chars[at].1);
            let mut stop = at + 1;
            while stop < chars.len() && is_cjk(chars[stop].1) == cjk {
                stop += 1;
            }
            if !cjk {
                let (from, to) = (chars[at].0, end_of(stop - 1));
                let word = lowercase(&text[from..to]);
                if indexable(&word) {
                    pieces.push((from, to, word));
                }
            } else if stop - at == 1 {
                let (from, to) = (chars[at].0, end_of(at));
                pieces.push((from, to, Cow::Borrowed(&text[from..to])));
            } else {
                for (offset, (from, _)) in chars[at..stop - 1].iter().enumerate() {
                    let (from, to) = (*from, end_of(at + offset + 1));
                    pieces.push((from, to, Cow::Borrowed(&text[from..to])));
                }
            }
            at = stop;
        }
        Self::Many(pieces.into_iter())
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = (usize, usize, Cow<'a, str>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::One(word) => word.take(),
            Self::Many(pieces) => pieces.next(),
        }
    }
}

/// Whether a query word also matches the terms it begins: two letters or more, or, where
/// text is cut into pairs (`bigrams`), one Chinese or Japanese character (a word of its
/// own, found in the pairs it starts).
fn expands(prefix: &str, bigrams: bool) -> bool {
    let mut chars = prefix.chars();
    match (chars.next(), chars.next()) {
        (Some(_), Some(_)) => true,
        (Some(only), None) => bigrams && is_cjk(only),
        _ => false,
    }
}

/// Han ideographs, hiragana and katakana: scripts written without spaces between words.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // hiragana, katakana
        | 0x31F0..=0x31FF // katakana phonetic extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0xFF66..=0xFF9F // halfwidth katakana
        | 0x20000..=0x3134F // extensions B to G
    )
}

/// How a collection's words are reduced to their stems: by its language's Snowball
/// stemmer (English on a site without languages), or not at all for a language Snowball
/// has none for (each word is then its own term, still found by prefix). Chinese and
/// Japanese text is cut into pairs of characters (see [`words`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stemming {
    algorithm: Option<Algorithm>,
    bigrams: bool,
}

impl Default for Stemming {
    fn default() -> Self {
        Self { algorithm: Some(Algorithm::English), bigrams: false }
    }
}

impl Stemming {
    /// The stemmer of a BCP 47 language (its primary subtag: `fr-CH` is French).
    pub fn of_language(code: &str) -> Self {
        let primary = code.split('-').next().unwrap_or_default().to_ascii_lowercase();
        let algorithm = match primary.as_str() {
            "ar" => Algorithm::Arabic,
            "da" => Algorithm::Danish,
            "nl" => Algorithm::Dutch,
            "en" => Algorithm::English,
            "fi" => Algorithm::Finnish,
            "fr" => Algorithm::French,
            "de" => Algorithm::German,
            "el" => Algorithm::Greek,
            "hu" => Algorithm::Hungarian,
            "it" => Algorithm::Italian,
            "no" | "nb" | "nn" => Algorithm::Norwegian,
            "pt" => Algorithm::Portuguese,
            "ro" => Algorithm::Romanian,
            "ru" => Algorithm::Russian,
            "es" => Algorithm::Spanish,
            "sv" => Algorithm::Swedish,
            "ta" => Algorithm::Tamil,
            "tr" => Algorithm::Turkish,
            "zh" | "ja" | "yue" => return Self { algorithm: None, bigrams: true },
            _ => return Self { algorithm: None, bigrams: false },
        };
        Self { algorithm: Some(algorithm), bigrams: false }
    }

    fn stem(self, word: &str) -> String {
        match self.algorithm {
            Some(algorithm) => Stemmer::create(algorithm).stem(word).into_owned(),
            None => word.to_owned(),
        }
    }

    /// The words of `text` as this language cuts them (see [`words`]).
    fn words(self, text: &str) -> impl Iterator<Item = (usize, usize, Cow<'_, str>)> + '_ {
        words(text, self.bigrams)
    }
}

/// What of an item is searched.
pub struct SearchText<'a> {
    pub title: &'a str,
    pub tags: &'a [Arc<str>],
    /// The body as plain text (no Markdown, no HTML).
    pub body: &'a str,
    /// The version of the item file these were read from (`IndexedItem::file_version`):
    /// a saved index keeps an item's terms only while its file is still that version.
    pub version: u64,
}

/// One term's items in the order they were added, packed: per item the difference
/// from the previous item's id (zigzag, as a varint: ids mostly ascend, so it is usually
/// one byte) and then its marks. About 2 bytes an item where two arrays took 5; the
/// postings are most of the index.
#[derive(Debug, Default)]
struct Postings {
    bytes: Vec<u8>,
    /// The last id added (what the next difference is taken from).
    last: u32,
    len: u32,
}

impl Postings {
    fn push(&mut self, id: u32, marks: u8) {
        let delta = i64::from(id) - i64::from(self.last);
        let mut zigzag = ((delta << 1) ^ (delta >> 63)) as u64;
        while zigzag >= 0x80 {
            self.bytes.push((zigzag as u8) | 0x80);
            zigzag >>= 7;
        }
        self.bytes.push(zigzag as u8);
        self.bytes.push(marks);
        self.last = id;
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each item's id and marks, in the order they were added.
    fn iter(&self) -> PostingsIter<'_> {
        PostingsIter { bytes: &self.bytes, last: 0 }
    }
}

struct PostingsIter<'a> {
    bytes: &'a [u8],
    last: u32,
}

impl Iterator for PostingsIter<'_> {
    type Item = (u32, u8);

    fn next(&mut self) -> Option<(u32, u8)> {
        let mut zigzag = 0u64;
        let mut shift = 0;
        loop {
            let (&byte, rest) = self.bytes.split_first()?;
            self.bytes = rest;
            zigzag |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let delta = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
        self.last = (i64::from(self.last) + delta) as u32;
        let (&marks, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some((self.last, marks))
    }
}

#[derive(Debug)]
struct Doc {
    name: Arc<str>,
    published: bool,
    /// How many of its distinct terms are content terms (see [`SearchIndex::content_overlap`]).
    content_terms: u32,
    /// See [`SearchText::version`].
    version: u64,
}

/// The name of the item with this id (which is indexed).
fn doc_name(docs: &[Option<Doc>], id: u32) -> &str {
    &docs[id as usize].as_ref().expect("a filed id's doc").name
}

/// Distinct words remembered with their term (so that a word is stemmed once, not once
/// per occurrence); forgotten all at once past this many.
const WORD_CACHE: usize = 500_000;

/// Working sets kept between searches: a few more than the cores, so that searches
/// running at once rarely allocate, and a burst leaves no more than these behind.
const KEPT_SCRATCH: usize = 4;

/// One collection's search index. Items are named by filename.
///
/// A changed or removed item's postings are left in place and its id retired (a retired
/// id is never matched); once retired ids pile up, one pass drops them all
/// ([`Self::compact`]), so no item has to remember its words. Terms are never removed
/// (an unused one costs its few bytes), so a term id stays valid.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    /// Every item's id by its filename (read back from its doc).
    by_name: NameTable,
    /// Term → id, and the same in order (for prefixes).
    term_ids: HashMap<Arc<str>, u32>,
    ordered: BTreeMap<Arc<str>, u32>,
    postings: Vec<Postings>,
    /// Per term: whether it says something about what an item is about (see
    /// [`related::is_significant`]): only those count for related items.
    significant: Vec<bool>,
    /// Lowercased word → its term's id.
    words: HashMap<Box<str>, u32>,
    /// The map [`Self::upsert`] gathers an item's terms in, kept for the next item.
    item_scratch: HashMap<u32, u8>,
    /// Retired ids still named in postings.
    retired: usize,
    /// What searches work in, kept for the next one (up to [`KEPT_SCRATCH`]) rather than
    /// allocated per search: at 100,000 items each is about 800 KB.
    scratch: Mutex<Vec<Scratch>>,
    /// How its words are stemmed (its collection's language).
    stemming: Stemming,
}

/// A search's working arrays: by id, the score so far (0: an item a query word missed)
/// and the current word's best score; the items that matched every word so far, and
/// those the current word matched. All zero and empty between searches.
#[derive(Debug, Default)]
struct Scratch {
    total: Vec<f32>,
    best: Vec<f32>,
    touched: Vec<u32>,
    found: Vec<u32>,
}

impl Scratch {
    fn fit(&mut self, docs: usize) {
        if self.total.len() < docs {
            self.total.resize(docs, 0.0);
            self.best.resize(docs, 0.0);
        }
    }

    /// Back to all zero, touching only what a search set.
    fn clear(&mut self) {
        for &id in &self.touched {
            self.total[id as usize] = 0.0;
        }
        self.touched.clear();
        self.found.clear();
    }
}

/// A matching item and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: Arc<str>,
    pub score: f32,
}

/// What [`SearchIndex::content_overlap`] found.
#[derive(Debug)]
pub struct ContentOverlap<'a> {
    /// The text's distinct content terms.
    pub source_terms: u32,
    /// Per filename sharing at least one: (terms shared, the item's content terms).
    pub items: HashMap<&'a str, (u32, u32)>,
}

impl SearchIndex {
    /// An empty index of a collection whose words stem as `stemming` says.
    pub fn new(stemming: Stemming) -> Self {
        Self { stemming, ..Self::default() }
    }

    /// The id of a word's term, made when new.
    fn term_of(&mut self, word: &str) -> u32 {
        if let Some(id) = self.words.get(word) {
            return *id;
        }
        let term = self.stemming.stem(word);
        let id = match self.term_ids.get(term.as_str()) {
            Some(id) => *id,
            None => {
                let id = self.postings.len() as u32;
                let term: Arc<str> = Arc::from(term);
                self.term_ids.insert(Arc::clone(&term), id);
                self.significant.push(related::is_significant_term(&term));
                self.ordered.insert(term, id);
                self.postings.push(Postings::default());
                id
            }
        };
        if self.words.len() >= WORD_CACHE {
            self.words.clear();
        }
        self.words.insert(Box::from(word), id);
        id
    }

    /// The distinct terms of an item with their marks, in `terms` (emptied first: one map
    /// serves every item of a build).
    fn item_terms(&mut self, text: &SearchText<'_>, terms: &mut HashMap<u32, u8>) {
        terms.clear();
        let mut body_terms = 0;
        for (_, _, word) in self.stemming.words(text.body) {
            let term = self.term_of(&word);
            match terms.get_mut(&term) {
                Some(marks) => *marks = (*marks & !BODY_COUNT) | ((*marks & BODY_COUNT) + 1).min(BODY_COUNT),
                None if body_terms < MAX_BODY_TERMS => {
                    terms.insert(term, 1);
                    body_terms += 1;
                }
                None => {}
            }
        }
        for (_, _, word) in self.stemming.words(text.title) {
            *terms.entry(self.term_of(&word)).or_default() |= IN_TITLE;
        }
        for tag in text.tags {
            for (_, _, word) in self.stemming.words(tag) {
                *terms.entry(self.term_of(&word)).or_default() |= IN_TAGS;
            }
        }
    }

    /// Adds an item, or replaces what is indexed under its filename (an `Arc` is kept
    /// as given: the kept index's copy of the name serves both).
    pub fn upsert(&mut self, name: impl Into<Arc<str>>, published: bool, text: &SearchText<'_>) {
        let name: Arc<str> = name.into();
        self.remove(&name);
        let mut terms = std::mem::take(&mut self.item_scratch);
        self.item_terms(text, &mut terms);
        let content_terms =
            terms.iter().filter(|(term, marks)| self.is_content(**term, **marks)).count() as u32;
        let doc = Doc { name: Arc::clone(&name), published, content_terms, version: text.version };
        let id = match self.free.pop() {
            Some(id) => {
                self.docs[id as usize] = Some(doc);
                id
            }
            None => {
                self.docs.push(Some(doc));
                (self.docs.len() - 1) as u32
            }
        };
        let docs = &self.docs;
        self.by_name.insert(id, &name, |id| doc_name(docs, id));
        for (&term, &marks) in &terms {
            self.postings[term as usize].push(id, marks);
        }
        self.item_scratch = terms;
    }

    /// Shows an indexed item to public searches or hides it (a scheduled item's window
    /// opened or closed); false, and nothing happens, when it is not indexed.
    pub fn set_published(&mut self, name: &str, published: bool) -> bool {
        match self.id_of(name).and_then(|id| self.docs[id as usize].as_mut()) {
            Some(doc) => {
                doc.published = published;
                true
            }
            None => false,
        }
    }

    /// [`Self::set_published`] for a new version of an item file whose searched text is
    /// the same (its title, tags and body unchanged): its terms stand for `version` too.
    pub fn set_published_at(&mut self, name: &str, published: bool, version: u64) -> bool {
        match self.id_of(name).and_then(|id| self.docs[id as usize].as_mut()) {
            Some(doc) => {
                doc.published = published;
                doc.version = version;
                true
            }
            None => false,
        }
    }

    /// Forgets an item (nothing happens when it is not indexed).
    pub fn remove(&mut self, name: &str) {
        let docs = &self.docs;
        if let Some(id) = self.by_name.remove(name, |id| doc_name(docs, id)) {
            self.docs[id as usize] = None;
            self.retired += 1;
            if self.retired > 256 + self.by_name.len() / 4 {
                self.compact();
            }
        }
    }

    /// The id of the item file `name`.
    fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name, |id| doc_name(&self.docs, id))
    }

    /// Drops the postings of retired ids, and frees the ids for reuse; each term's
    /// postings are rewritten in id order (the smallest differences) with no spare room.
    pub fn compact(&mut self) {
        let docs = &self.docs;
        let mut kept: Vec<(u32, u8)> = Vec::new();
        for postings in &mut self.postings {
            kept.clear();
            kept.extend(postings.iter().filter(|(id, _)| docs[*id as usize].is_some()));
            kept.sort_unstable_by_key(|(id, _)| *id);
            let mut packed = Postings { bytes: Vec::with_capacity(kept.len() * 2), ..Postings::default() };
            for &(id, marks) in &kept {
                packed.push(id, marks);
            }
            packed.bytes.shrink_to_fit();
            *postings = packed;
        }
        self.free =
            (0..self.docs.len() as u32).rev().filter(|id| self.docs[*id as usize].is_none()).collect();
        self.retired = 0;
        // The word cache speeds up a build; between builds an item at a time is stemmed
        // quickly enough without it.
        self.words = HashMap::new();
    }

    /// Whether a term of an item counts for related items: a significant term of its
    /// title or body (tags are compared on their own).
    fn is_content(&self, term: u32, marks: u8) -> bool {
        marks & !IN_TAGS != 0 && self.significant[term as usize]
    }

    /// How much each item shares with a text by content: the text's distinct content
    /// terms (title and body, as [`Self::upsert`] counts them), and per item sharing any,
    /// how many it shares and how many it has. Walks the postings of the text's terms only.
    pub fn content_overlap(&self, text: &SearchText<'_>) -> ContentOverlap<'_> {
        let mut source: HashSet<u32> = HashSet::new();
        let mut body_terms = HashSet::new();
        let known = |word: &str| {
            self.words.get(word).or_else(|| self.term_ids.get(self.stemming.stem(word).as_str())).copied()
        };
        for (_, _, word) in self.stemming.words(text.body) {
            if body_terms.len() >= MAX_BODY_TERMS {
                break;
            }
            if let Some(term) = known(&word) {
                body_terms.insert(term);
            }
        }
        source.extend(body_terms);
        source.extend(self.stemming.words(text.title).filter_map(|(_, _, word)| known(&word)));
        source.retain(|term| self.significant[*term as usize]);
        let mut shared = vec![0u32; self.docs.len()];
        for &term in &source {
            for (id, marks) in self.postings[term as usize].iter() {
                if marks & !IN_TAGS != 0 {
                    shared[id as usize] += 1;
                }
            }
        }
        let items = self
            .docs
            .iter()
            .zip(shared)
            .filter(|(_, shared)| *shared > 0)
            .filter_map(|(doc, shared)| {
                let doc = doc.as_ref()?;
                Some((&*doc.name, (shared, doc.content_terms)))
            })
            .collect();
        ContentOverlap { source_terms: source.len() as u32, items }
    }

    /// How many items are indexed.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.by_name.len() == 0
    }

    /// The best `limit` items matching every query word (ties by filename), and how many
    /// match in all; drafts only when `drafts` is set.
    pub fn search(&self, query: &Query, drafts: bool, limit: usize) -> (Vec<Hit>, usize) {
        if query.words.is_empty() {
            return (Vec::new(), 0);
        }
        let live = self.by_name.len().max(1) as f32;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        scratch.fit(self.docs.len());
        let Scratch { total, best, touched, found } = &mut scratch;
        for (i, word) in query.words.iter().enumerate() {
            found.clear();
            for (term, weight) in self.candidates(word) {
                let postings = &self.postings[term as usize];
                if postings.is_empty() {
                    continue;
                }
                let idf = (1.0 + live / postings.len() as f32).ln();
                for (id, marks) in postings.iter() {
                    let id = id as usize;
                    // Scores are positive: a total of 0 is an item an earlier word missed.
                    if i > 0 && total[id] == 0.0 {
                        continue;
                    }
                    let score = weight * idf * field_score(marks);
                    if best[id] == 0.0 {
                        found.push(id as u32);
                    }
                    best[id] = best[id].max(score);
                }
            }
            for &id in touched.iter() {
                if best[id as usize] == 0.0 {
                    total[id as usize] = 0.0;
                }
            }
            for &id in found.iter() {
                total[id as usize] += best[id as usize];
                best[id as usize] = 0.0;
            }
            std::mem::swap(touched, found);
            if touched.is_empty() {
                break;
            }
        }
        // `touched` now holds the items that matched every word.
        let name = |id: u32| self.docs[id as usize].as_ref().map(|doc| &*doc.name);
        let order =
            |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then_with(|| name(a.0).cmp(&name(b.0)));
        // The best `limit` so far, cut back whenever twice as many are held: a page's
        // worth, not one entry per match.
        let (mut hits, mut count): (Vec<(u32, f32)>, usize) = (Vec::new(), 0);
        for &id in touched.iter() {
            if !self.docs[id as usize].as_ref().is_some_and(|doc| drafts || doc.published) {
                continue;
            }
            count += 1;
            if limit == 0 {
                continue;
            }
            hits.push((id, total[id as usize]));
            if hits.len() >= limit.saturating_mul(2).max(1024) {
                hits.select_nth_unstable_by(limit - 1, order);
                hits.truncate(limit);
            }
        }
        scratch.clear();
        let mut kept = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        // Searches beyond this many at once allocate their own: a burst must not leave
        // the index holding one set per search it ever ran at once.
        if kept.len() < KEPT_SCRATCH {
            kept.push(scratch);
        }
        drop(kept);
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        let hits = hits
            .into_iter()
            .filter_map(|(id, score)| {
                Some(Hit { name: Arc::clone(&self.docs[id as usize].as_ref()?.name), score })
            })
            .collect();
        (hits, count)
    }

    /// The terms a query word matches, with their weights: its stem exactly, and the terms
    /// its lowercased form is a prefix of.
    fn candidates(&self, word: &QueryWord) -> Vec<(u32, f32)> {
        let mut found: Vec<(u32, f32)> = Vec::new();
        let exact = self.term_ids.get(word.stem.as_str()).copied();
        found.extend(exact.map(|id| (id, 1.0)));
        if expands(&word.prefix, self.stemming.bigrams) {
            let range =
                self.ordered.range::<str, _>((Bound::Included(word.prefix.as_str()), Bound::Unbounded));
            for (_, &id) in range.take_while(|(t, _)| t.starts_with(&word.prefix)).take(MAX_PREFIX_TERMS) {
                if Some(id) != exact {
                    found.push((id, PREFIX_WEIGHT));
                }
            }
        }
        found
    }
}

fn field_score(marks: u8) -> f32 {
    let mut score = 0.0;
    if marks & IN_TITLE != 0 {
        score += TITLE_WEIGHT;
    }
    if marks & IN_TAGS != 0 {
        score += TAGS_WEIGHT;
    }
    let count = marks & BODY_COUNT;
    if count > 0 {
        score += 1.0 + f32::from(count).ln() / 2.0;
    }
    score
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct QueryWord {
    stem: String,
    /// The word as typed, lowercased.
    prefix: String,
}

/// A parsed query: its words, each stemmed and kept as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    words: Vec<QueryWord>,
    stemming: Stemming,
}

impl Query {
    /// The words of `q` (at most [`MAX_QUERY_WORDS`], duplicates once), stemmed as
    /// English (a site without languages).
    pub fn parse(q: &str) -> Self {
        Self::parse_in(q, Stemming::default())
    }

    /// [`Self::parse`] for an index whose words stem as `stemming` says.
    pub fn parse_in(q: &str, stemming: Stemming) -> Self {
        let mut seen = HashSet::new();
        let words = stemming
            .words(q)
            .filter(|(_, _, w)| seen.insert(w.clone()))
            .take(MAX_QUERY_WORDS)
            .map(|(_, _, prefix)| QueryWord { stem: stemming.stem(&prefix), prefix: prefix.into_owned() })
            .collect();
        Self { words, stemming }
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether a word of a text (lowercased) is one the query matches.
    fn matches(&self, word: &str) -> bool {
        let term = self.stemming.stem(word);
        self.words.iter().any(|q| {
            term == q.stem || (expands(&q.prefix, self.stemming.bigrams) && term.starts_with(&q.prefix))
        })
    }

    /// A short passage of `text` around the first word the query matches (its start when
    /// none does), at most about `max_chars` characters, HTML-escaped, with each matching
    /// word in `<mark>`, and `…` where text was cut.
    pub fn snippet(&self, text: &str, max_chars: usize) -> String {
        // Pairs of CJK characters overlap: overlapping matches are marked as one.
        let mut found: Vec<(usize, usize)> = Vec::new();
        for (s, e, _) in self.stemming.words(text).filter(|(_, _, w)| self.matches(w)) {
            match found.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => found.push((s, e)),
            }
        }
        // Start a few words before the first match, on a word boundary.
        let first = found.first().map_or(0, |(s, _)| *s);
        let lead = text[..first].char_indices().rev().nth(max_chars / 4).map_or(0, |(i, _)| i);
        let start = if lead == 0 {
            0
        } else {
            text[lead..first].find(char::is_whitespace).map_or(first, |i| lead + i).min(first)
        };
        let start = start + (text[start..].len() - text[start..].trim_start().len());
        let mut end = text[start..].char_indices().nth(max_chars).map_or(text.len(), |(i, _)| start + i);
        if end < text.len() {
            end = text[start..end].rfind(char::is_whitespace).map_or(end, |i| start + i).max(
                // Never cut the first match.
                found.first().map_or(start, |(_, e)| *e).min(end),
            );
        }
        let mut out = String::with_capacity(max_chars + 32);
        if start > 0 {
            out.push('…');
        }
        let mut at = start;
        for &(s, e) in found.iter().filter(|(s, e)| *s >= start && *e <= end) {
            escape_into(&mut out, &text[at..s]);
            out.push_str("<mark>");
            escape_into(&mut out, &text[s..e]);
            out.push_str("</mark>");
            at = e;
        }
        escape_into(&mut out, text[at..end].trim_end());
        if end < text.len() {
            out.push('…');
        }
        out
    }
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
}

mod saved;
#[cfg(test)]
mod tests;
