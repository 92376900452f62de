//! A collection's index as one file, so that a restart reads it instead of parsing every
//! item (at 100,000 items, parsing is most of a start-up).
//!
//! A snapshot is only ever a cache of what parsing would give:
//! - it is used only when it was written in this [`FORMAT`], for the same collection folder
//!   and with the same `site.timezone` (the store adds its own check that the same program
//!   wrote it, since parsing rules change with the program);
//! - each entry is used only when its file's stamp (size, times, inode) is exactly the one
//!   a fresh scan reports; every other file is read and parsed as without a snapshot;
//! - bytes that do not decode are ignored.

use serde::{Deserialize, Serialize};

use crate::index::{Held, IndexedItem};
use crate::ports::FileStamp;

/// Bumped whenever what a snapshot holds changes shape.
const FORMAT: u32 = 1;

/// What a snapshot must match to be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotHeader {
    format: u32,
    /// The collection folder, as configured.
    folder: String,
    /// `site.timezone`: dates without an offset depend on it.
    zone: String,
}

impl SnapshotHeader {
    pub fn new(folder: &str, zone: &str) -> Self {
        Self { format: FORMAT, folder: folder.to_owned(), zone: zone.to_owned() }
    }
}

#[derive(Serialize)]
struct EntryRef<'a> {
    stamp: &'a FileStamp,
    item: Result<&'a IndexedItem, &'a str>,
}

/// Decoded straight into what the index keeps (an `Arc` per item), so that a restart
/// holds each item once.
#[derive(Deserialize)]
struct Entry {
    stamp: FileStamp,
    item: Held,
}

/// Encodes the header, then the entries.
pub fn encode(header: &SnapshotHeader, entries: &[(FileStamp, Held)]) -> Vec<u8> {
    let rows: Vec<EntryRef<'_>> = entries
        .iter()
        .map(|(stamp, item)| EntryRef { stamp, item: item.as_deref().map_err(|reason| &**reason) })
        .collect();
    // About 800 bytes an item: one allocation of about the right size rather than a
    // series of doublings, each a copy of everything so far.
    let bytes = Vec::with_capacity(64 + entries.len() * 800);
    let bytes = postcard::to_extend(header, bytes).expect("a header encodes");
    postcard::to_extend(&rows, bytes).expect("index entries encode")
}

/// The entries of a snapshot in filename order, when its header is `expected`; `Err` says
/// why it cannot be used.
pub fn decode(bytes: &[u8], expected: &SnapshotHeader) -> Result<Vec<(FileStamp, Held)>, String> {
    let (header, rest) = postcard::take_from_bytes::<SnapshotHeader>(bytes)
        .map_err(|error| format!("the snapshot's header does not decode: {error}"))?;
    if header != *expected {
        return Err(format!("the snapshot was made for {header:?}, not {expected:?}"));
    }
    let entries: Vec<Entry> =
        postcard::from_bytes(rest).map_err(|error| format!("the snapshot does not decode: {error}"))?;
    let mut entries: Vec<(FileStamp, Held)> = entries.into_iter().map(|e| (e.stamp, e.item)).collect();
    entries.sort_unstable_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::dates::SiteZone;
    use crate::ports::StoredFile;
    use crate::slug::ItemFilename;

    fn entry(name: &str, text: &str) -> (FileStamp, Held) {
        let stamp = FileStamp { name: name.into(), size: text.len() as u64, modified: 7, change_token: 9 };
        let file = StoredFile { bytes: text.as_bytes().to_vec(), stamp: stamp.clone() };
        let item = IndexedItem::from_file(&ItemFilename::parse(name).unwrap(), &file, &SiteZone::utc());
        (stamp, item.map(Arc::new).map_err(Box::from))
    }

    #[test]
    fn round_trips_items_and_unusable_files() {
        let header = SnapshotHeader::new("content/posts", "UTC");
        let entries = vec![
            entry(
                "2024-01-01-a.md",
                "---\ntitle: Ä\ndate: 2024-01-01 10:00 +0100\ntags: [Rust, x]\nexcerpt: '*e*'\n---\nBody words here.\n",
            ),
            entry("b.md", "---\ntitle: [\n---\n"),
        ];
        let decoded = decode(&encode(&header, &entries), &header).unwrap();
        assert_eq!(decoded, entries, "in filename order, items and reasons as they were");
    }

    #[test]
    fn another_folder_zone_or_garbage_is_refused() {
        let header = SnapshotHeader::new("content/posts", "UTC");
        let bytes = encode(&header, &[entry("a.md", "---\ntitle: A\n---\n")]);
        assert!(decode(&bytes, &SnapshotHeader::new("content/pages", "UTC")).is_err());
        assert!(decode(&bytes, &SnapshotHeader::new("content/posts", "Europe/Berlin")).is_err());
        assert!(decode(&bytes[..bytes.len() - 3], &header).is_err(), "a truncated snapshot");
        assert!(decode(b"\xff\xff\xff\xff\xff\xff", &header).is_err());
        assert!(decode(&[], &header).is_err());
    }
}
