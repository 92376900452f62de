//! Related items: which criteria a request asks for, the significant words of an item, and
//! the score of a candidate against the source item.
//!
//! Each criterion gives a number between 0 and 1 (the Jaccard index of two sets: shared
//! elements over all distinct elements); the score is their mean, so it stays between 0
//! and 1 however many criteria are combined.

use std::collections::BTreeSet;

use crate::error::{CoreError, CoreResult};
use crate::slug::slugify;

/// What makes two items related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Criterion {
    /// Shared tags, compared by slug (`Rust Lang` ≡ `rust-lang`).
    Tags,
    /// Shared significant words of title and body.
    Content,
}

/// Parses `by`: comma-separated criteria, default `tags`. Unknown names are refused.
pub fn parse_criteria(raw: Option<&str>) -> CoreResult<Vec<Criterion>> {
    let mut criteria = Vec::new();
    for name in raw.unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let criterion = match name.to_ascii_lowercase().as_str() {
            "tags" => Criterion::Tags,
            "content" => Criterion::Content,
            _ => {
                return Err(CoreError::invalid(format!(
                    "by must be a comma-separated list of tags and content, got the unknown criterion {name:?}"
                )));
            }
        };
        if !criteria.contains(&criterion) {
            criteria.push(criterion);
        }
    }
    if criteria.is_empty() {
        criteria.push(Criterion::Tags);
    }
    Ok(criteria)
}

/// Most distinct words kept per item; a very long body keeps its first ones.
pub const MAX_WORDS: usize = 1000;

/// Words too common to say anything about what an item is about.
const STOP_WORDS: &[&str] = &[
    "about", "after", "again", "all", "also", "and", "any", "are", "because", "been", "before", "being",
    "between", "both", "but", "can", "could", "did", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "her", "here", "hers", "him", "his", "how", "into",
    "its", "just", "like", "more", "most", "much", "must", "not", "now", "off", "once", "only", "other",
    "our", "ours", "out", "over", "own", "same", "she", "should", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "too", "under", "until",
    "use", "used", "using", "very", "was", "way", "were", "what", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// The significant words of a text, sorted and distinct: lowercased runs of letters and
/// digits, at least 3 characters long, not only digits, not a stop word.
pub fn significant_words(text: &str) -> Vec<String> {
    let mut words = BTreeSet::new();
    for_each_significant_word(text, |word| {
        words.insert(word.to_owned());
        words.len()
    });
    words.into_iter().collect()
}

/// [`significant_words`] as 32-bit FNV-1a hashes, sorted and distinct: what the index
/// keeps per item. Two words sharing a hash would count as one shared word; among the
/// few thousand words of one collection that is vanishingly rare and moves a score by a
/// fraction of a percent at most.
pub fn word_hashes(text: &str) -> Box<[u32]> {
    let mut seen = std::collections::HashSet::new();
    for_each_significant_word(text, |word| {
        seen.insert(fnv1a(word.as_bytes()));
        seen.len()
    });
    let mut hashes: Vec<u32> = seen.into_iter().collect();
    hashes.sort_unstable();
    hashes.into_boxed_slice()
}

/// Calls `keep` with each significant word (lowercased) in order of appearance, until it
/// says [`MAX_WORDS`] distinct words are kept. Indexing a collection runs this over every
/// body, so it allocates once, not per word.
fn for_each_significant_word(text: &str, mut keep: impl FnMut(&str) -> usize) {
    let mut lower = String::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.len() < 3 || word.chars().nth(2).is_none() || word.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        lower.clear();
        if word.is_ascii() {
            lower.push_str(word);
            lower.make_ascii_lowercase();
        } else {
            lower.extend(word.chars().flat_map(char::to_lowercase));
        }
        if STOP_WORDS.binary_search(&lower.as_str()).is_err() && keep(&lower) >= MAX_WORDS {
            break;
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193))
}

/// What scoring needs to know about an item.
#[derive(Debug, Clone, Copy)]
pub struct Features<'a> {
    pub tags: &'a [String],
    /// Sorted and distinct, as [`word_hashes`] returns them.
    pub words: &'a [u32],
}

/// A candidate's score against the source item.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// Between 0 and 1, rounded to 3 decimals.
    pub score: f64,
    /// The source's tags (as the source spells them) that the candidate carries too.
    pub shared_tags: Vec<String>,
}

/// Scores `candidate` against `source` by `criteria`.
pub fn score(source: Features<'_>, candidate: Features<'_>, criteria: &[Criterion]) -> Score {
    let source_slugs = tag_slugs(source.tags);
    let candidate_slugs = tag_slugs(candidate.tags);
    let mut shared_tags = Vec::new();
    let mut seen = BTreeSet::new();
    for tag in source.tags {
        let slug = slugify(tag);
        if candidate_slugs.contains(&slug) && seen.insert(slug) {
            shared_tags.push(tag.clone());
        }
    }
    let mut total = 0.0;
    for criterion in criteria {
        total += match criterion {
            Criterion::Tags => jaccard(seen.len(), source_slugs.len(), candidate_slugs.len()),
            Criterion::Content => jaccard(
                sorted_overlap(source.words, candidate.words),
                source.words.len(),
                candidate.words.len(),
            ),
        };
    }
    let mean = if criteria.is_empty() { 0.0 } else { total / criteria.len() as f64 };
    Score { score: (mean * 1000.0).round() / 1000.0, shared_tags }
}

fn tag_slugs(tags: &[String]) -> BTreeSet<String> {
    tags.iter().map(|t| slugify(t)).filter(|s| !s.is_empty()).collect()
}

/// |A ∩ B| / |A ∪ B| from the sizes; 0 for two empty sets.
fn jaccard(shared: usize, a: usize, b: usize) -> f64 {
    let union = a + b - shared;
    if union == 0 { 0.0 } else { shared as f64 / union as f64 }
}

/// How many elements two sorted, distinct lists share.
fn sorted_overlap<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn criteria() {
        assert_eq!(parse_criteria(None).unwrap(), [Criterion::Tags]);
        assert_eq!(parse_criteria(Some("")).unwrap(), [Criterion::Tags]);
        assert_eq!(
            parse_criteria(Some("content, TAGS,content")).unwrap(),
            [Criterion::Content, Criterion::Tags]
        );
        let message = parse_criteria(Some("tags,author")).unwrap_err().to_string();
        assert!(message.contains("\"author\""), "{message}");
    }

    #[test]
    fn words() {
        assert_eq!(
            significant_words("The Rust compiler, the RUST borrow-checker and 2024 ideas; ok"),
            strings(&["borrow", "checker", "compiler", "ideas", "rust"])
        );
        assert_eq!(significant_words("Café déjà vu"), strings(&["café", "déjà"]));
        let long: String = (0..5000).map(|i| format!("word{i} ")).collect();
        assert_eq!(significant_words(&long).len(), MAX_WORDS);
        assert_eq!(word_hashes("Rust, rust and RUST borrow").len(), 2, "distinct words, one hash each");
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted, for binary search");
    }

    #[test]
    fn scores() {
        let source_tags = strings(&["Rust Lang", "web", "wasm"]);
        let candidate_tags = strings(&["rust-lang", "WEB", "go"]);
        let source_words = word_hashes("alpha beta delta gamma");
        let candidate_words = word_hashes("beta delta omega");
        let source = Features { tags: &source_tags, words: &source_words };
        let candidate = Features { tags: &candidate_tags, words: &candidate_words };

        let by_tags = score(source, candidate, &[Criterion::Tags]);
        assert_eq!(by_tags.shared_tags, strings(&["Rust Lang", "web"]));
        assert_eq!(by_tags.score, 0.5, "2 shared of 4 distinct");
        assert_eq!(score(source, candidate, &[Criterion::Content]).score, 0.4, "2 shared of 5 distinct");
        assert_eq!(score(source, candidate, &[Criterion::Tags, Criterion::Content]).score, 0.45);

        let empty = Features { tags: &[], words: &[] };
        assert_eq!(score(source, empty, &[Criterion::Tags, Criterion::Content]).score, 0.0);
        assert_eq!(score(empty, empty, &[Criterion::Tags]).score, 0.0);
    }
}
