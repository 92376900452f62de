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

/// The distinct stemmed words of an item with their marks.
fn item_terms(text: &SearchText<'_>) -> HashMap<String, u8> {
    let mut terms: HashMap<String, u8> = HashMap::new();
    let mut body_terms = 0;
    for (_, _, word) in words(text.body) {
        let term = stem(&word);
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
        *terms.entry(stem(&word)).or_default() |= IN_TITLE;
    }
    for tag in text.tags {
        for (_, _, word) in words(tag) {
            *terms.entry(stem(&word)).or_default() |= IN_TAGS;
        }
    }
    terms
}

/// One term's items: ids ascending by when they were added, and their marks.
#[derive(Debug, Default)]
struct Postings {
    docs: Vec<u32>,
    marks: Vec<u8>,
}

#[derive(Debug)]
struct Doc {
    name: Arc<str>,
    published: bool,
}

/// One collection's search index. Items are named by filename.
///
/// A changed or removed item's postings are left in place and its id retired (a retired
/// id is never matched); once retired ids pile up, one pass drops them all
/// ([`Self::compact`]), so no item has to remember its words.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    by_name: HashMap<Arc<str>, u32>,
    terms: BTreeMap<Box<str>, Postings>,
    /// Retired ids still named in postings.
    retired: usize,
}

/// A matching item and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: Arc<str>,
    pub score: f32,
}

impl SearchIndex {
    /// Adds an item, or replaces what is indexed under its filename.
    pub fn upsert(&mut self, name: &str, published: bool, text: &SearchText<'_>) {
        self.remove(name);
        let name: Arc<str> = Arc::from(name);
        let doc = Doc { name: Arc::clone(&name), published };
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
        for (term, marks) in item_terms(text) {
            let postings = match self.terms.get_mut(term.as_str()) {
                Some(postings) => postings,
                None => self.terms.entry(term.into_boxed_str()).or_default(),
            };
            postings.docs.push(id);
            postings.marks.push(marks);
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
        self.terms.retain(|_, postings| {
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
            keep > 0
        });
        self.free = (0..self.docs.len() as u32).filter(|id| self.docs[*id as usize].is_none()).collect();
        self.free.reverse();
        self.retired = 0;
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

    /// Every item matching every query word, best first (ties by filename); drafts only
    /// when `drafts` is set.
    pub fn search(&self, query: &Query, drafts: bool) -> Vec<Hit> {
        if query.words.is_empty() {
            return Vec::new();
        }
        let live = self.by_name.len().max(1) as f32;
        let mut total: HashMap<u32, f32> = HashMap::new();
        for (i, word) in query.words.iter().enumerate() {
            let mut best: HashMap<u32, f32> = HashMap::new();
            for (term, weight) in self.candidates(word) {
                let Some(postings) = self.terms.get(term) else { continue };
                let idf = (1.0 + live / postings.docs.len() as f32).ln();
                for (&id, &marks) in postings.docs.iter().zip(&postings.marks) {
                    if i > 0 && !total.contains_key(&id) {
                        continue;
                    }
                    let score = weight * idf * field_score(marks);
                    let entry = best.entry(id).or_insert(0.0);
                    *entry = entry.max(score);
                }
            }
            total = if i == 0 {
                best
            } else {
                best.into_iter().filter_map(|(id, s)| total.get(&id).map(|t| (id, t + s))).collect()
            };
            if total.is_empty() {
                return Vec::new();
            }
        }
        let mut hits: Vec<Hit> = total
            .into_iter()
            .filter_map(|(id, score)| {
                let doc = self.docs[id as usize].as_ref()?;
                (drafts || doc.published).then(|| Hit { name: Arc::clone(&doc.name), score })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(&b.name)));
        hits
    }

    /// The indexed terms a query word matches, with their weights: its stem exactly, and
    /// the terms its lowercased form is a prefix of.
    fn candidates<'a>(&'a self, word: &'a QueryWord) -> Vec<(&'a str, f32)> {
        let mut found: Vec<(&str, f32)> = vec![(word.stem.as_str(), 1.0)];
        if word.prefix.chars().count() >= 2 {
            let range = self.terms.range::<str, _>((Bound::Included(word.prefix.as_str()), Bound::Unbounded));
            for (term, _) in range.take_while(|(t, _)| t.starts_with(&word.prefix)).take(MAX_PREFIX_TERMS) {
                if **term != *word.stem {
                    found.push((term, PREFIX_WEIGHT));
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
        let hits = index.search(&Query::parse("garden"), false);
        assert_eq!(names(&hits), ["title.md", "tag.md", "body.md"]);
    }

    #[test]
    fn stems_prefixes_and_every_word() {
        let mut index = SearchIndex::default();
        add(&mut index, "a.md", "Running fast", &[], "Frontmatter is YAML.", true);
        add(&mut index, "b.md", "Runs", &[], "Slow walking.", true);
        assert_eq!(names(&index.search(&Query::parse("run"), false)), ["a.md", "b.md"]);
        assert_eq!(names(&index.search(&Query::parse("RUNNING"), false)), ["a.md", "b.md"]);
        assert_eq!(names(&index.search(&Query::parse("frontm"), false)), ["a.md"], "a prefix");
        assert_eq!(names(&index.search(&Query::parse("run yaml"), false)), ["a.md"], "every word");
        assert!(index.search(&Query::parse("run cooking"), false).is_empty());
        assert!(index.search(&Query::parse("  ...  "), false).is_empty());
    }

    #[test]
    fn drafts_only_when_asked_and_changes_apply_in_place() {
        let mut index = SearchIndex::default();
        add(&mut index, "a.md", "Alpha", &[], "", false);
        assert!(index.search(&Query::parse("alpha"), false).is_empty());
        assert_eq!(names(&index.search(&Query::parse("alpha"), true)), ["a.md"]);
        add(&mut index, "a.md", "Beta", &[], "", true);
        assert!(index.search(&Query::parse("alpha"), true).is_empty(), "the old words are gone");
        assert_eq!(names(&index.search(&Query::parse("beta"), false)), ["a.md"]);
        index.remove("a.md");
        assert!(index.search(&Query::parse("beta"), true).is_empty());
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
        assert_eq!(index.search(&Query::parse("common"), false).len(), 200);
        assert_eq!(index.search(&Query::parse("word4"), false).len(), 200);
        assert!(index.search(&Query::parse("word0"), false).is_empty());
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
}
