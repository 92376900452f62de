//! An item file as stored: the strong ETag of its bytes, the number that names it at a
//! content and stamp, and its parse. Plain functions below both the kept index and the
//! facade, which name and read files the same way.

use ring::digest;

use crate::document::ItemDocument;
use crate::error::{CoreError, CoreResult};
use crate::item::ItemMeta;
use crate::slug::ItemFilename;

/// A strong ETag of a file's bytes.
pub fn etag_of(bytes: &[u8]) -> String {
    let digest = digest::digest(&digest::SHA256, bytes);
    format!("\"{}\"", &hex::encode(digest)[..32])
}

/// Names a file (its name) at this content (`etag`) and stamp (`modified`); the index keeps
/// it with each item, so that a read names its answer without hashing the name again.
pub(crate) fn file_version(meta: &ItemMeta, etag: &str) -> u64 {
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
