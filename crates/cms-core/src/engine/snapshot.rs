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
//!
//! Beside the entries it records the folder as the index last listed it ([`FolderState`]):
//! the store's folder stamp and the files that are not items. A server's start answers
//! from the snapshot alone when the folder's stamp is still that one (no file added,
//! removed or renamed since), and checks each file's stamp behind its first answers.

use serde::{Deserialize, Serialize};

use crate::engine::index::{Held, IndexedItem};
use crate::item::SlugSource;
use crate::model::Model;
use crate::ports::FileStamp;

/// Bumped whenever what a snapshot holds changes shape.
const FORMAT: u32 = 11;

/// Entries per chunk: chunks are encoded separately so that a restart decodes them on
/// every core.
const CHUNK_ENTRIES: usize = 4096;

/// What a snapshot must match to be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotHeader {
    format: u32,
    /// The collection folder, as configured.
    folder: String,
    /// `site.timezone`: dates without an offset depend on it.
    zone: String,
    /// The content model as [`Model::signature`] names it: the fields the index keeps, and
    /// whether an item breaks the model, depend on it.
    model: u64,
    /// Where the items' slugs come from (their own `slug:` on a site with languages).
    slugs: SlugSource,
}

impl SnapshotHeader {
    pub fn new(folder: &str, zone: &str, model: Option<&Model>, slugs: SlugSource) -> Self {
        let model = model.map_or(0, Model::signature);
        Self { format: FORMAT, folder: folder.to_owned(), zone: zone.to_owned(), model, slugs }
    }
}

/// The collection's folder as the index last listed it, recorded beside its entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderState {
    /// The store's stamp of the folder when the snapshot was taken
    /// (`ContentStore::folder_stamp`); `None` where the store has none.
    pub stamp: Option<u64>,
    /// The folder's files whose names are not items', with why (see
    /// `CollectionIndex::set_others`).
    pub others: Vec<(String, String)>,
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

/// Encodes the header, the folder's state, then the entries in chunks of
/// [`CHUNK_ENTRIES`], each a byte string of its own.
pub fn encode(header: &SnapshotHeader, folder: &FolderState, entries: &[(FileStamp, Held)]) -> Vec<u8> {
    let chunks: Vec<Vec<u8>> = entries
        .chunks(CHUNK_ENTRIES)
        .map(|chunk| {
            let rows: Vec<EntryRef<'_>> = chunk
                .iter()
                .map(|(stamp, item)| EntryRef { stamp, item: item.as_deref().map_err(|reason| &**reason) })
                .collect();
            // About 800 bytes an item: one allocation of about the right size rather than
            // a series of doublings.
            postcard::to_extend(&rows, Vec::with_capacity(chunk.len() * 800)).expect("index entries encode")
        })
        .collect();
    let size = chunks.iter().map(|c| c.len() + 5).sum::<usize>();
    let bytes = postcard::to_extend(header, Vec::with_capacity(64 + size)).expect("a header encodes");
    let bytes = postcard::to_extend(folder, bytes).expect("a folder's state encodes");
    let chunks: Vec<Chunk<'_>> = chunks.iter().map(|c| Chunk(c)).collect();
    postcard::to_extend(&chunks, bytes).expect("index chunks encode")
}

/// The folder's state a snapshot recorded, when its header is `expected` (without
/// decoding its entries); `Err` says why it cannot be used.
pub fn folder_state(bytes: &[u8], expected: &SnapshotHeader) -> Result<FolderState, String> {
    take_folder_state(bytes, expected).map(|(folder, _)| folder)
}

fn take_folder_state<'a>(
    bytes: &'a [u8],
    expected: &SnapshotHeader,
) -> Result<(FolderState, &'a [u8]), String> {
    let (header, rest) = postcard::take_from_bytes::<SnapshotHeader>(bytes)
        .map_err(|error| format!("the snapshot's header does not decode: {error}"))?;
    if header != *expected {
        return Err(format!("the snapshot was made for {header:?}, not {expected:?}"));
    }
    postcard::take_from_bytes::<FolderState>(rest)
        .map_err(|error| format!("the snapshot's folder state does not decode: {error}"))
}

/// The folder's state and the entries of a snapshot, in the order they were encoded, when
/// its header is `expected`; `Err` says why it cannot be used. Chunks are decoded in
/// parallel.
pub fn decode(
    bytes: &[u8],
    expected: &SnapshotHeader,
) -> Result<(FolderState, Vec<(FileStamp, Held)>), String> {
    let (folder, rest) = take_folder_state(bytes, expected)?;
    let chunks: Vec<Chunk<'_>> =
        postcard::from_bytes(rest).map_err(|error| format!("the snapshot does not decode: {error}"))?;
    let decode_chunk = |chunk: &[u8]| -> Result<Vec<Entry>, String> {
        postcard::from_bytes(chunk).map_err(|error| format!("the snapshot does not decode: {error}"))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let per_thread = chunks.len().div_ceil(threads).max(1);
    let decoded: Vec<Result<Vec<Entry>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = chunks
            .chunks(per_thread)
            .map(|part| {
                scope.spawn(move || {
                    let mut entries = Vec::new();
                    for chunk in part {
                        entries.extend(decode_chunk(chunk.0)?);
                    }
                    Ok(entries)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a snapshot worker panicked")).collect()
    });
    let mut entries = Vec::new();
    for part in decoded {
        entries.extend(part?.into_iter().map(|e| (e.stamp, e.item)));
    }
    Ok((folder, entries))
}

/// A chunk of encoded entries, kept as a byte string (a length and the bytes, borrowed
/// when decoded), not as a sequence of numbers.
struct Chunk<'a>(&'a [u8]);

impl Serialize for Chunk<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

impl<'de> Deserialize<'de> for Chunk<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Chunk<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a chunk of snapshot entries")
            }
            fn visit_borrowed_bytes<E: serde::de::Error>(self, bytes: &'de [u8]) -> Result<Chunk<'de>, E> {
                Ok(Chunk(bytes))
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::index::Reading;
    use std::sync::Arc;

    use crate::dates::SiteZone;
    use crate::ports::StoredFile;
    use crate::slug::ItemFilename;

    fn entry(name: &str, text: &str) -> (FileStamp, Held) {
        let stamp = FileStamp { name: name.into(), size: text.len() as u64, modified: 7, change_token: 9 };
        let file = StoredFile { bytes: text.as_bytes().to_vec(), stamp: stamp.clone() };
        let item = IndexedItem::from_file(
            &ItemFilename::parse(name).unwrap(),
            &file,
            Reading::plain(&SiteZone::utc()),
        );
        (stamp, item.map(Arc::new).map_err(Box::from))
    }

    #[test]
    fn round_trips_items_and_unusable_files() {
        let header = SnapshotHeader::new("content/posts", "UTC", None, SlugSource::FileName);
        let entries = vec![
            entry(
                "2024-01-01-a.md",
                "---\ntitle: Ä\ndate: 2024-01-01 10:00 +0100\ntags: [Rust, x]\nexcerpt: '*e*'\n---\nBody words here.\n",
            ),
            entry("b.md", "---\ntitle: [\n---\n"),
        ];
        let folder =
            FolderState { stamp: Some(42), others: vec![("notes.txt".into(), "not a Markdown file".into())] };
        let bytes = encode(&header, &folder, &entries);
        assert_eq!(
            decode(&bytes, &header).unwrap(),
            (folder.clone(), entries),
            "items and reasons as they were"
        );
        assert_eq!(folder_state(&bytes, &header).unwrap(), folder, "read without the entries");
    }

    #[test]
    fn several_chunks_come_back_whole_and_in_their_order() {
        let header = SnapshotHeader::new("content/posts", "UTC", None, SlugSource::FileName);
        let (stamp, item) = entry("a.md", "---\ntitle: A\n---\nBody.\n");
        let count = CHUNK_ENTRIES * 2 + 3;
        // Written in reverse filename order, as a changed index may hold them.
        let entries: Vec<(FileStamp, Held)> = (0..count)
            .rev()
            .map(|i| (FileStamp { name: format!("{i:06}.md"), ..stamp.clone() }, item.clone()))
            .collect();
        let (_, decoded) = decode(&encode(&header, &FolderState::default(), &entries), &header).unwrap();
        assert_eq!(decoded, entries, "every chunk, in the order written");
    }

    #[test]
    fn another_folder_zone_or_garbage_is_refused() {
        let header = SnapshotHeader::new("content/posts", "UTC", None, SlugSource::FileName);
        let bytes = encode(&header, &FolderState::default(), &[entry("a.md", "---\ntitle: A\n---\n")]);
        assert!(
            decode(&bytes, &SnapshotHeader::new("content/pages", "UTC", None, SlugSource::FileName)).is_err()
        );
        assert!(
            decode(
                &bytes,
                &SnapshotHeader::new("content/posts", "Europe/Berlin", None, SlugSource::FileName)
            )
            .is_err()
        );
        // Slugs read from the frontmatter (languages added to the site) are others.
        assert!(
            decode(&bytes, &SnapshotHeader::new("content/posts", "UTC", None, SlugSource::Frontmatter))
                .is_err()
        );
        assert!(decode(&bytes[..bytes.len() - 3], &header).is_err(), "a truncated snapshot");
        assert!(decode(b"\xff\xff\xff\xff\xff\xff", &header).is_err());
        assert!(decode(&[], &header).is_err());
        assert!(
            folder_state(&bytes, &SnapshotHeader::new("content/pages", "UTC", None, SlugSource::FileName))
                .is_err()
        );
    }
}
