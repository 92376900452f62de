//! Who made each version, in the form both history stores keep it: one `authors` file per
//! item's history, beside its snapshots, with a line `<timestamp> <author>` for each version
//! kept (`<timestamp>` alone: unknown). A later line for a timestamp wins, and lines of
//! versions that are gone are ignored, so keeping an author is an append and removing a
//! version leaves its line until the file is next compacted. Versions kept before authors
//! were recorded have no line: their author is unknown. The snapshots' own bytes stay the
//! item's (the folder store keeps a snapshot as a second name of the item's file).

use std::collections::BTreeMap;

/// The file's name in an item's history folder (no snapshot is named so: those are
/// `<timestamp>.md`).
pub const AUTHORS_FILE: &str = "authors";

/// Characters of an author kept at most.
pub const MAX_AUTHOR_CHARS: usize = 200;

/// An author as kept and read back: one line of at most [`MAX_AUTHOR_CHARS`], without
/// control characters; `None` when nothing is left.
pub fn author_line(raw: &str) -> Option<String> {
    let line: String = raw.chars().filter(|c| !c.is_control()).take(MAX_AUTHOR_CHARS).collect();
    let line = line.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// The line that records `author` for the version at `timestamp`.
pub fn record(timestamp: i64, author: Option<&str>) -> String {
    match author.and_then(author_line) {
        Some(author) => format!("{timestamp} {author}\n"),
        None => format!("{timestamp}\n"),
    }
}

/// Every version's author the file records (the last line of each timestamp); lines that
/// cannot be read are skipped.
pub fn parse(text: &str) -> BTreeMap<i64, Option<String>> {
    let mut authors = BTreeMap::new();
    for line in text.lines() {
        let (timestamp, author) = line.split_once(' ').unwrap_or((line, ""));
        if let Ok(timestamp) = timestamp.parse::<i64>() {
            authors.insert(timestamp, author_line(author));
        }
    }
    authors
}

/// The file again with only the lines of `kept` versions, one per version.
pub fn compact(text: &str, kept: &[i64]) -> String {
    parse(text)
        .into_iter()
        .filter(|(timestamp, _)| kept.contains(timestamp))
        .map(|(timestamp, author)| record(timestamp, author.as_deref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_a_timestamp_wins_and_compacting_keeps_the_versions_left() {
        let text =
            [record(100, Some("ed@example.com")), record(101, Some(" Deploy\nbot ")), record(100, None)]
                .concat()
                + "garbage\n102 cms CLI\n";
        assert_eq!(text.lines().nth(1), Some("101 Deploybot"), "one line, however it came");
        let authors = parse(&text);
        assert_eq!(authors.get(&100), Some(&None), "the later line wins");
        assert_eq!(authors.get(&101).cloned().flatten().as_deref(), Some("Deploybot"));
        assert_eq!(authors.get(&102).cloned().flatten().as_deref(), Some("cms CLI"));
        assert_eq!(compact(&text, &[101, 102, 103]), "101 Deploybot\n102 cms CLI\n");
        assert_eq!(author_line(&"x".repeat(300)).unwrap().len(), MAX_AUTHOR_CHARS);
        assert_eq!(author_line(" \u{7} "), None);
    }
}
