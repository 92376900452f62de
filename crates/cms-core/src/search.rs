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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use rust_stemmers::{Algorithm, Stemmer};

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

/// The lowercased words of a text with their byte ranges.
fn words(text: &str) -> impl Iterator<Item = (usize, usize, String)> + '_ {
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
            let word = text[start..end].to_lowercase();
            if word.chars().count() <= MAX_WORD_CHARS {
                return Some((start, end, word));
            }
        }
    })
}

fn stem(word: &str) -> String {
    Stemmer::create(Algorithm::English).stem(word).into_owned()
}

/// What of an item is searched.
pub struct SearchText<'a> {
    pub title: &'a str,
    pub tags: &'a [String],
    /// The body as plain text (no Markdown, no HTML).
    pub body: &'a str,
}

/// One term's items: ids in the order they were added, and their marks.
#[derive(Debug, Default)]
struct Postings {
    docs: Vec<u32>,
    marks: Vec<u8>,
}

#[derive(Debug)]
struct Doc {
    name: Arc<str>,
    published: bool,
    /// How many of its distinct terms are content terms (see [`SearchIndex::content_overlap`]).
    content_terms: u32,
}

/// Distinct words remembered with their term (so that a word is stemmed once, not once
/// per occurrence); forgotten all at once past this many.
const WORD_CACHE: usize = 500_000;

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
    by_name: HashMap<Arc<str>, u32>,
    /// Term → id, and the same in order (for prefixes).
    term_ids: HashMap<Arc<str>, u32>,
    ordered: BTreeMap<Arc<str>, u32>,
    postings: Vec<Postings>,
    /// Per term: whether it says something about what an item is about (see
    /// [`related::is_significant`]): only those count for related items.
    significant: Vec<bool>,
    /// Lowercased word → its term's id.
    words: HashMap<Box<str>, u32>,
    /// Retired ids still named in postings.
    retired: usize,
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
    /// The id of a word's term, made when new.
    fn term_of(&mut self, word: String) -> u32 {
        if let Some(id) = self.words.get(word.as_str()) {
            return *id;
        }
        let term = stem(&word);
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
        self.words.insert(word.into_boxed_str(), id);
        id
    }

    /// The distinct terms of an item with their marks.
    fn item_terms(&mut self, text: &SearchText<'_>) -> HashMap<u32, u8> {
        let mut terms: HashMap<u32, u8> = HashMap::new();
        let mut body_terms = 0;
        for (_, _, word) in words(text.body) {
            let term = self.term_of(word);
            match terms.get_mut(&term) {
                Some(marks) => *marks = (*marks & !BODY_COUNT) | ((*marks & BODY_COUNT) + 1).min(BODY_COUNT),
                None if body_terms < MAX_BODY_TERMS => {
                    terms.insert(term, 1);
                    body_terms += 1;
                }
                None => {}
            }
        }
        for (_, _, word) in words(text.title) {
            *terms.entry(self.term_of(word)).or_default() |= IN_TITLE;
        }
        for tag in text.tags {
            for (_, _, word) in words(tag) {
                *terms.entry(self.term_of(word)).or_default() |= IN_TAGS;
            }
        }
        terms
    }

    /// Adds an item, or replaces what is indexed under its filename.
    pub fn upsert(&mut self, name: &str, published: bool, text: &SearchText<'_>) {
        self.remove(name);
        let terms = self.item_terms(text);
        let content_terms =
            terms.iter().filter(|(term, marks)| self.is_content(**term, **marks)).count() as u32;
        let name: Arc<str> = Arc::from(name);
        let doc = Doc { name: Arc::clone(&name), published, content_terms };
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
        self.by_name.insert(name, id);
        for (term, marks) in terms {
            let postings = &mut self.postings[term as usize];
            postings.docs.push(id);
            postings.marks.push(marks);
        }
    }

    /// Shows an indexed item to public searches or hides it (a scheduled item's window
    /// opened or closed); nothing happens when it is not indexed.
    pub fn set_published(&mut self, name: &str, published: bool) {
        if let Some(doc) = self.by_name.get(name).and_then(|id| self.docs[*id as usize].as_mut()) {
            doc.published = published;
        }
    }

    /// Forgets an item (nothing happens when it is not indexed).
    pub fn remove(&mut self, name: &str) {
        if let Some(id) = self.by_name.remove(name) {
            self.docs[id as usize] = None;
            self.retired += 1;
            if self.retired > 256 + self.by_name.len() / 4 {
                self.compact();
            }
        }
    }

    /// Drops the postings of retired ids, and frees the ids for reuse.
    pub fn compact(&mut self) {
        let docs = &self.docs;
        for postings in &mut self.postings {
            let mut keep = 0;
            for i in 0..postings.docs.len() {
                if docs[postings.docs[i] as usize].is_some() {
                    postings.docs[keep] = postings.docs[i];
                    postings.marks[keep] = postings.marks[i];
                    keep += 1;
                }
            }
            postings.docs.truncate(keep);
            postings.marks.truncate(keep);
            postings.docs.shrink_to_fit();
            postings.marks.shrink_to_fit();
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
        let known =
            |word: &str| self.words.get(word).or_else(|| self.term_ids.get(stem(word).as_str())).copied();
        for (_, _, word) in words(text.body) {
            if body_terms.len() >= MAX_BODY_TERMS {
                break;
            }
            if let Some(term) = known(&word) {
                body_terms.insert(term);
            }
        }
        source.extend(body_terms);
        source.extend(words(text.title).filter_map(|(_, _, word)| known(&word)));
        source.retain(|term| self.significant[*term as usize]);
        let mut shared = vec![0u32; self.docs.len()];
        for &term in &source {
            let postings = &self.postings[term as usize];
            for (&id, &marks) in postings.docs.iter().zip(&postings.marks) {
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

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The best `limit` items matching every query word (ties by filename), and how many
    /// match in all; drafts only when `drafts` is set.
    pub fn search(&self, query: &Query, drafts: bool, limit: usize) -> (Vec<Hit>, usize) {
        if query.words.is_empty() {
            return (Vec::new(), 0);
        }
        let live = self.by_name.len().max(1) as f32;
        // Dense by id: the score so far, how many words matched, this word's best.
        let n = self.docs.len();
        let (mut total, mut matched, mut best) = (vec![0f32; n], vec![0u8; n], vec![0f32; n]);
        let mut touched: Vec<u32> = Vec::new();
        for (i, word) in query.words.iter().enumerate() {
            touched.clear();
            for (term, weight) in self.candidates(word) {
                let postings = &self.postings[term as usize];
                if postings.docs.is_empty() {
                    continue;
                }
                let idf = (1.0 + live / postings.docs.len() as f32).ln();
                for (&id, &marks) in postings.docs.iter().zip(&postings.marks) {
                    let id = id as usize;
                    if usize::from(matched[id]) != i {
                        continue;
                    }
                    let score = weight * idf * field_score(marks);
                    if best[id] == 0.0 {
                        touched.push(id as u32);
                    }
                    best[id] = best[id].max(score);
                }
            }
            if touched.is_empty() {
                return (Vec::new(), 0);
            }
            for &id in &touched {
                let id = id as usize;
                total[id] += best[id];
                best[id] = 0.0;
                matched[id] += 1;
            }
        }
        // `touched` now holds the items that matched every word.
        let mut hits: Vec<(u32, f32)> = touched
            .into_iter()
            .filter(|&id| self.docs[id as usize].as_ref().is_some_and(|doc| drafts || doc.published))
            .map(|id| (id, total[id as usize]))
            .collect();
        let count = hits.len();
        let name = |id: u32| self.docs[id as usize].as_ref().map(|doc| &*doc.name);
        let order =
            |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then_with(|| name(a.0).cmp(&name(b.0)));
        if limit == 0 {
            return (Vec::new(), count);
        }
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
        if word.prefix.chars().count() >= 2 {
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
}

impl Query {
    /// The words of `q` (at most [`MAX_QUERY_WORDS`], duplicates once).
    pub fn parse(q: &str) -> Self {
        let mut seen = HashSet::new();
        let words = words(q)
            .filter(|(_, _, w)| seen.insert(w.clone()))
            .take(MAX_QUERY_WORDS)
            .map(|(_, _, prefix)| QueryWord { stem: stem(&prefix), prefix })
            .collect();
        Self { words }
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether a word of a text (lowercased) is one the query matches.
    fn matches(&self, word: &str) -> bool {
        let term = stem(word);
        self.words
            .iter()
            .any(|q| term == q.stem || (q.prefix.chars().count() >= 2 && term.starts_with(&q.prefix)))
    }

    /// A short passage of `text` around the first word the query matches (its start when
    /// none does), at most about `max_chars` characters, HTML-escaped, with each matching
    /// word in `<mark>`, and `…` where text was cut.
    pub fn snippet(&self, text: &str, max_chars: usize) -> String {
        let found: Vec<(usize, usize)> =
            words(text).filter(|(_, _, w)| self.matches(w)).map(|(s, e, _)| (s, e)).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn add(index: &mut SearchIndex, name: &str, title: &str, tags: &[&str], body: &str, published: bool) {
        let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        index.upsert(name, published, &SearchText { title, tags: &tags, body });
    }

    fn hits_of(index: &SearchIndex, query: &Query, drafts: bool) -> Vec<Hit> {
        index.search(query, drafts, usize::MAX).0
    }

    fn names(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| &*h.name).collect()
    }

    #[test]
    fn ranks_title_above_tags_above_body() {
        let mut index = SearchIndex::default();
        add(&mut index, "body.md", "Other", &[], "All about gardening here.", true);
        add(&mut index, "tag.md", "Another", &["Gardening"], "Nothing.", true);
        add(&mut index, "title.md", "Gardening basics", &[], "Nothing.", true);
        add(&mut index, "none.md", "Cooking", &[], "Pots and pans.", true);
        let hits = hits_of(&index, &Query::parse("garden"), false);
        assert_eq!(names(&hits), ["title.md", "tag.md", "body.md"]);
    }

    #[test]
    fn stems_prefixes_and_every_word() {
        let mut index = SearchIndex::default();
        add(&mut index, "a.md", "Running fast", &[], "Frontmatter is YAML.", true);
        add(&mut index, "b.md", "Runs", &[], "Slow walking.", true);
        assert_eq!(names(&hits_of(&index, &Query::parse("run"), false)), ["a.md", "b.md"]);
        assert_eq!(names(&hits_of(&index, &Query::parse("RUNNING"), false)), ["a.md", "b.md"]);
        assert_eq!(names(&hits_of(&index, &Query::parse("frontm"), false)), ["a.md"], "a prefix");
        assert_eq!(names(&hits_of(&index, &Query::parse("run yaml"), false)), ["a.md"], "every word");
        assert!(hits_of(&index, &Query::parse("run cooking"), false).is_empty());
        assert!(hits_of(&index, &Query::parse("  ...  "), false).is_empty());
    }

    #[test]
    fn drafts_only_when_asked_and_changes_apply_in_place() {
        let mut index = SearchIndex::default();
        add(&mut index, "a.md", "Alpha", &[], "", false);
        assert!(hits_of(&index, &Query::parse("alpha"), false).is_empty());
        assert_eq!(names(&hits_of(&index, &Query::parse("alpha"), true)), ["a.md"]);
        add(&mut index, "a.md", "Beta", &[], "", true);
        assert!(hits_of(&index, &Query::parse("alpha"), true).is_empty(), "the old words are gone");
        assert_eq!(names(&hits_of(&index, &Query::parse("beta"), false)), ["a.md"]);
        index.remove("a.md");
        assert!(hits_of(&index, &Query::parse("beta"), true).is_empty());
        assert!(index.is_empty());
    }

    #[test]
    fn compaction_keeps_what_is_live() {
        let mut index = SearchIndex::default();
        for round in 0..5 {
            for i in 0..200 {
                add(&mut index, &format!("{i}.md"), &format!("word{round} common"), &[], "", true);
            }
        }
        index.compact();
        assert_eq!(index.len(), 200);
        assert_eq!(hits_of(&index, &Query::parse("common"), false).len(), 200);
        assert_eq!(hits_of(&index, &Query::parse("word4"), false).len(), 200);
        assert!(hits_of(&index, &Query::parse("word0"), false).is_empty());
        // Retired ids are reused once compacted: the slots stay near the live count plus
        // what may be retired before a compaction.
        assert!(index.docs.len() <= 200 + 256 + 50 + 1, "ids are reused: {}", index.docs.len());
    }

    #[test]
    fn snippets_highlight_and_escape() {
        let query = Query::parse("garden");
        let text = "Intro words. ".repeat(30) + "My <b>gardens</b> & gardening notes." + &" More.".repeat(40);
        let snippet = query.snippet(&text, 80);
        assert!(snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
        assert!(
            snippet.contains("&lt;b&gt;<mark>gardens</mark>&lt;/b&gt; &amp; <mark>gardening</mark>"),
            "{snippet}"
        );
        let visible =
            snippet.replace("<mark>", "").replace("</mark>", "").replace("&lt;", "<").replace("&gt;", ">");
        assert!(
            visible.replace("&amp;", "&").chars().count() <= 82,
            "about 80 characters and two …: {snippet}"
        );
        let short = query.snippet("A garden.", 80);
        assert_eq!(short, "A <mark>garden</mark>.");
        assert_eq!(query.snippet("No match here.", 80), "No match here.");
        assert_eq!(query.snippet("", 80), "");
    }

    /// A rough figure for 100,000 items of about 300 words from a small vocabulary (the
    /// bench's shape): `cargo test -p cms-core --release --lib -- --ignored search_scale --nocapture`.
    #[test]
    #[ignore]
    fn search_scale() {
        let vocabulary: Vec<String> = (0..5_000).map(|i| format!("word{i}")).collect();
        let mut index = SearchIndex::default();
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let started = std::time::Instant::now();
        for i in 0..100_000 {
            let body: Vec<&str> = (0..300).map(|_| vocabulary[(next() % 5_000) as usize].as_str()).collect();
            let body = format!("{} markdown render", body.join(" "));
            add(&mut index, &format!("{i}.md"), "Markdown notes", &["rust"], &body, true);
        }
        let postings: usize = index.postings.iter().map(|p| p.docs.len()).sum();
        eprintln!("built in {:?}; {} terms, {postings} postings", started.elapsed(), index.postings.len());
        for q in ["markdown render", "word42", "word4", "rust notes word7"] {
            let started = std::time::Instant::now();
            let (_, count) = index.search(&Query::parse(q), false, 20);
            eprintln!("{q:?}: {count} hits in {:?}", started.elapsed());
        }
    }
}
