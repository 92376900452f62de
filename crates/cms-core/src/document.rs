//! An item file: YAML frontmatter between `---` lines, then the Markdown body.
//!
//! The body round-trips byte for byte: whatever follows the closing `---` line (less one
//! blank separator line) is the body, including further `---` lines, CRLF endings or a BOM.

use serde_json::{Map, Value};

use crate::codec::{self, YamlError, YamlLimits};
use crate::error::CoreResult;

/// Frontmatter: an ordered map of keys to JSON-compatible values.
pub type Frontmatter = Map<String, Value>;

/// The source form of an item: frontmatter and Markdown body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ItemDocument {
    pub fm: Frontmatter,
    pub body: String,
}

const BOM: char = '\u{feff}';

impl ItemDocument {
    /// Splits a file into frontmatter and body and parses the frontmatter.
    pub fn parse(text: &str) -> Result<Self, YamlError> {
        let text = text.strip_prefix(BOM).unwrap_or(text);
        let Some((yaml, body)) = split_frontmatter(text) else {
            return Ok(Self { fm: Map::new(), body: text.to_owned() });
        };
        let fm = codec::mapping_from_yaml(yaml, YamlLimits::FRONTMATTER)?;
        Ok(Self { fm, body: body.to_owned() })
    }

    /// Writes the file form: `---`, the YAML, `---`, one blank line, the body.
    pub fn to_file_text(&self) -> CoreResult<String> {
        let yaml = if self.fm.is_empty() { String::new() } else { codec::to_yaml(&self.fm)? };
        let mut text = String::with_capacity(yaml.len() + self.body.len() + 10);
        text.push_str("---\n");
        text.push_str(&yaml);
        if !yaml.is_empty() && !yaml.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("---\n\n");
        text.push_str(&self.body);
        Ok(text)
    }

    /// Merges `patch` over the frontmatter: new keys are appended, existing keys keep their
    /// place, and a key set to `null` is removed.
    pub fn merge_frontmatter(&mut self, patch: Frontmatter) {
        for (key, value) in patch {
            if value.is_null() {
                self.fm.shift_remove(&key);
            } else {
                self.fm.insert(key, value);
            }
        }
    }
}

/// Returns `(yaml, body)` when `text` opens with a `---` line and has a closing one.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let after_open = strip_delimiter_line(text, "---")?;
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            let yaml = &after_open[..offset];
            let rest = &after_open[offset + line.len()..];
            let body = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')).unwrap_or(rest);
            return Some((yaml, body));
        }
        offset += line.len();
    }
    None
}

fn strip_delimiter_line<'a>(text: &'a str, delimiter: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(delimiter)?;
    rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(fm: Value, body: &str) -> ItemDocument {
        ItemDocument { fm: fm.as_object().unwrap().clone(), body: body.into() }
    }

    #[test]
    fn parses_frontmatter_and_body() {
        let parsed = ItemDocument::parse("---\ntitle: Hi\ntags: [a, b]\n---\n\n# Body\n").unwrap();
        assert_eq!(parsed, doc(json!({"title": "Hi", "tags": ["a", "b"]}), "# Body\n"));
    }

    #[test]
    fn file_without_frontmatter_is_all_body() {
        let parsed = ItemDocument::parse("# Just text\n---\n").unwrap();
        assert!(parsed.fm.is_empty());
        assert_eq!(parsed.body, "# Just text\n---\n");
    }

    #[test]
    fn tricky_bodies_round_trip_unchanged() {
        for body in [
            "",
            "\n",
            "\nstarts with a blank line",
            "---\nnot frontmatter\n---\n",
            "line one\r\nline two\r\n---\r\nthree\r\n",
            "\u{feff}BOM first, then text",
            "text with a BOM \u{feff} inside",
            "...\n",
        ] {
            let original = doc(json!({"title": "T", "status": "draft"}), body);
            let text = original.to_file_text().unwrap();
            assert_eq!(ItemDocument::parse(&text).unwrap(), original, "body {body:?}");
        }
    }

    #[test]
    fn crlf_files_and_leading_bom_parse() {
        let parsed = ItemDocument::parse("\u{feff}---\r\ntitle: Win\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(parsed, doc(json!({"title": "Win"}), "Body\r\n"));
    }

    #[test]
    fn empty_frontmatter_round_trips() {
        let original = doc(json!({}), "body");
        let text = original.to_file_text().unwrap();
        assert_eq!(text, "---\n---\n\nbody");
        assert_eq!(ItemDocument::parse(&text).unwrap(), original);
    }

    #[test]
    fn merge_keeps_order_appends_new_and_removes_null() {
        let mut d = doc(json!({"title": "A", "draft": true, "tags": ["x"]}), "");
        let patch = json!({"tags": ["y"], "draft": null, "author": "Ann"});
        d.merge_frontmatter(patch.as_object().unwrap().clone());
        let keys: Vec<_> = d.fm.keys().cloned().collect();
        assert_eq!(keys, ["title", "tags", "author"]);
        assert_eq!(d.fm["tags"], json!(["y"]));
    }

    #[test]
    fn broken_yaml_is_an_error() {
        assert!(ItemDocument::parse("---\ntitle: [unclosed\n---\n").is_err());
    }
}
