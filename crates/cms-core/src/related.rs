//! Related items: which criteria a request asks for, which search terms count as content,
//! and the score of a candidate against the source item.
//!
//! Each criterion gives a number between 0 and 1 (the Jaccard index of two sets: shared
//! elements over all distinct elements); the score is their mean, so it stays between 0
//! and 1 however many criteria are combined.

use std::collections::BTreeSet;

use crate::error::{CoreError, CoreResult};
use crate::slug::slugify;

/// What makes two items related.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// Whether a search term (a stemmed, lowercased word) says something about what an item
/// is about: at least 3 characters, not only digits, and not the stem of a stop word.
/// Related items by content compare these terms, from the search index's postings.
pub fn is_significant_term(term: &str) -> bool {
    static STOP_STEMS: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    let stops = STOP_STEMS.get_or_init(|| {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        STOP_WORDS.iter().flat_map(|w| [(*w).to_owned(), stemmer.stem(w).into_owned()]).collect()
    });
    term.chars().nth(2).is_some() && !term.bytes().all(|b| b.is_ascii_digit()) && !stops.contains(term)
}

/// How two items overlap by content: their distinct significant terms and how many they
/// share (see [`crate::engine::search::SearchIndex::content_overlap`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContentCounts {
    pub shared: u32,
    pub source: u32,
    pub candidate: u32,
}

/// A candidate's score against the source item.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// Between 0 and 1, rounded to 3 decimals.
    pub score: f64,
    /// The source's tags (as the source spells them) that the candidate carries too.
    pub shared_tags: Vec<String>,
}

/// Scores a candidate against the source by `criteria`, from their tags and their
/// content overlap.
pub fn score(
    source_tags: &[impl AsRef<str>],
    candidate_tags: &[impl AsRef<str>],
    content: ContentCounts,
    criteria: &[Criterion],
) -> Score {
    let source_slugs = tag_slugs(source_tags);
    let candidate_slugs = tag_slugs(candidate_tags);
    let mut shared_tags = Vec::new();
    let mut seen = BTreeSet::new();
    for tag in source_tags {
        let slug = slugify(tag.as_ref());
        if candidate_slugs.contains(&slug) && seen.insert(slug) {
            shared_tags.push(tag.as_ref().to_owned());
        }
    }
    let mut total = 0.0;
    for criterion in criteria {
        total += match criterion {
            Criterion::Tags => jaccard(seen.len(), source_slugs.len(), candidate_slugs.len()),
            Criterion::Content => {
                jaccard(content.shared as usize, content.source as usize, content.candidate as usize)
            }
        };
    }
    let mean = if criteria.is_empty() { 0.0 } else { total / criteria.len() as f64 };
    Score { score: (mean * 1000.0).round() / 1000.0, shared_tags }
}

fn tag_slugs(tags: &[impl AsRef<str>]) -> BTreeSet<String> {
    tags.iter().map(|t| slugify(t.as_ref())).filter(|s| !s.is_empty()).collect()
}

/// |A ∩ B| / |A ∪ B| from the sizes; 0 for two empty sets.
fn jaccard(shared: usize, a: usize, b: usize) -> f64 {
    let union = a + b - shared;
    if union == 0 { 0.0 } else { shared as f64 / union as f64 }
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
    fn significant_terms() {
        assert!(is_significant_term("compil"));
        assert!(is_significant_term("café"));
        assert!(!is_significant_term("ok"), "too short");
        assert!(!is_significant_term("2024"), "only digits");
        assert!(!is_significant_term("the") && !is_significant_term("becaus"), "stop words and their stems");
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted, for reading");
    }

    #[test]
    fn scores() {
        let source_tags = strings(&["Rust Lang", "web", "wasm"]);
        let candidate_tags = strings(&["rust-lang", "WEB", "go"]);
        let content = ContentCounts { shared: 2, source: 4, candidate: 3 };

        let by_tags = score(&source_tags, &candidate_tags, content, &[Criterion::Tags]);
        assert_eq!(by_tags.shared_tags, strings(&["Rust Lang", "web"]));
        assert_eq!(by_tags.score, 0.5, "2 shared of 4 distinct");
        assert_eq!(
            score(&source_tags, &candidate_tags, content, &[Criterion::Content]).score,
            0.4,
            "2 shared of 5 distinct"
        );
        assert_eq!(
            score(&source_tags, &candidate_tags, content, &[Criterion::Tags, Criterion::Content]).score,
            0.45
        );

        let none = ContentCounts::default();
        assert_eq!(
            score(&source_tags, &[] as &[String], none, &[Criterion::Tags, Criterion::Content]).score,
            0.0
        );
        assert_eq!(score(&[] as &[String], &[] as &[String], none, &[Criterion::Tags]).score, 0.0);
    }
}
