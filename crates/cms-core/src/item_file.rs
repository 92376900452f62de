//! An item file as stored: the strong ETag of its bytes, the number that names it at a
//! content and stamp, and its parse. Plain functions below both the kept index and the
//! facade, which name and read files the same way.

use ring::digest;

use crate::document::ItemDocument;
use crate::error::{CoreError, CoreResult};
use crate::item::ItemMeta;
use crate::slug::ItemFilename;

/// A strong ETag of a file's bytes (see [`ContentTag`]).
pub fn etag_of(bytes: &[u8]) -> String {
    ContentTag::of(bytes).text()
}

/// The ETag of an answer that shows more than its file (an item's translations, on a
/// site with languages): the file's tag with `-` and 16 hex digits of `more` inside its
/// quotes.
pub(crate) fn etag_with_suffix(etag: &str, more: u64) -> String {
    match etag.strip_suffix('"') {
        Some(open) => format!("{open}-{more:016x}\""),
        None => etag.to_owned(),
    }
}

/// Whether `tag` is `etag`, or `etag` with a suffix of [`etag_with_suffix`]: both name the
/// same bytes of the file, which is what a write's precondition is about.
fn names_file(tag: &str, etag: &str) -> bool {
    if tag == etag {
        return true;
    }
    let (Some(open), Some(tag)) = (etag.strip_suffix('"'), tag.strip_suffix('"')) else { return false };
    tag.strip_prefix(open)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|suffix| suffix.len() == 16 && suffix.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What names a file's bytes: the first 16 bytes of their SHA-256. Its text, the strong
/// ETag (32 hex digits in quotes), is made when it is sent: the index keeps one per item,
/// and as text it cost 64 bytes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ContentTag([u8; 16]);

impl ContentTag {
    pub fn of(bytes: &[u8]) -> Self {
        let digest = digest::digest(&digest::SHA256, bytes);
        Self(digest.as_ref()[..16].try_into().expect("a SHA-256 digest has 32 bytes"))
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The 32 hex digits of [`Self::hex`] read back; `None` for anything else.
    pub fn parse_hex(text: &str) -> Option<Self> {
        let mut bytes = [0; 16];
        hex::decode_to_slice(text.trim(), &mut bytes).ok()?;
        Some(Self(bytes))
    }

    /// The 32 hex digits, without the quotes of the ETag.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// The frontmatter key of a translation that names the content of its source (the default
/// language's file) it was made from, as [`ContentTag::hex`]: the translation is outdated
/// once the source holds something else.
pub const TRANSLATED_FROM: &str = "translated_from";

pub use crate::item::OWN_SLUG;

/// The frontmatter key that links translations of different file names (Hugo's
/// `translationKey`): files with the same key are one item's translations; a file without
/// one is linked by its name.
pub const TRANSLATION_KEY: &str = "translationKey";

/// The keys the server reads on a site with languages, allowed whatever a model says.
pub const LANGUAGE_KEYS: [&str; 3] = [TRANSLATED_FROM, OWN_SLUG, TRANSLATION_KEY];

impl std::fmt::Display for ContentTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::str::from_utf8(&self.quoted()).expect("hex digits and quotes are ASCII"))
    }
}

impl ContentTag {
    /// The ETag's text as one string of its size (a single read names its answer by it).
    pub fn text(&self) -> String {
        String::from_utf8(self.quoted().to_vec()).expect("hex digits and quotes are ASCII")
    }

    fn quoted(&self) -> [u8; 34] {
        let mut text = [b'"'; 34];
        hex::encode_to_slice(self.0, &mut text[1..33]).expect("16 bytes are 32 hex digits");
        text
    }
}

/// Names a file (its name) at this content (`etag`) and stamp (`modified`); the index keeps
/// it with each item, so that a read names its answer without hashing the name again.
pub(crate) fn file_version(meta: &ItemMeta, etag: ContentTag) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (&meta.filename, etag, meta.modified).hash(&mut hasher);
    hasher.finish()
}

/// A stored item's bytes as a document; `Corrupt` (naming the file) when they are not
/// UTF-8 or their frontmatter cannot be read.
pub(crate) fn parse_bytes(name: &ItemFilename, bytes: &[u8]) -> CoreResult<ItemDocument> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| CoreError::Corrupt(format!("item file {} is not UTF-8 text", name.as_str())))?;
    ItemDocument::parse(text).map_err(|e| {
        CoreError::Corrupt(format!("item file {} has frontmatter that cannot be read: {e}", name.as_str()))
    })
}

/// What a write requires of the item's current content, as a client sent it with its
/// `If-Match` (REST) or `if_match` (MCP), or as the editor's form carried it: any content
/// (`*`), or one of these ETags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    Any,
    Tags(Vec<String>),
}

impl Precondition {
    /// An `If-Match` list: `*`, or comma-separated ETags (where a `*` among them matches
    /// any current content, but not a deleted item's absence of one).
    pub fn from_if_match(list: &str) -> Self {
        match list.trim() {
            "*" => Self::Any,
            list => Self::Tags(list.split(',').map(str::trim).map(str::to_owned).collect()),
        }
    }

    /// `PreconditionFailed` unless `current` (the item's bytes now) satisfies it.
    pub(crate) fn check(&self, current: &[u8]) -> CoreResult<()> {
        let Self::Tags(tags) = self else { return Ok(()) };
        let etag = etag_of(current);
        if tags.iter().any(|tag| names_file(tag, &etag) || tag == "*") {
            Ok(())
        } else {
            Err(CoreError::PreconditionFailed(format!(
                "If-Match {} does not match the item's current ETag {etag}; read it again and retry",
                tags.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_lists() {
        let etag = etag_of(b"now");
        assert_eq!(Precondition::from_if_match(" * "), Precondition::Any);
        assert!(Precondition::from_if_match(&format!("\"old\", {etag}")).check(b"now").is_ok());
        assert!(
            matches!(Precondition::from_if_match("\"old\", *"), Precondition::Tags(_)),
            "a deleted item fails it"
        );
        assert!(Precondition::from_if_match("\"old\", *").check(b"now").is_ok());
        let refused = Precondition::from_if_match("\"a\",\"b\"").check(b"now").unwrap_err().to_string();
        assert!(
            refused.contains("If-Match \"a\", \"b\" does not match the item's current ETag"),
            "{refused}"
        );
    }
}
