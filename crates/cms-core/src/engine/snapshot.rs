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

use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::engine::index::{Held, IndexedItem};
use crate::item::SlugSource;
use crate::model::Model;
use crate::ports::FileStamp;

/// Bumped whenever what a snapshot holds changes shape.
const FORMAT: u32 = 13;

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

/// Encodes the header, the folder's state and the number of chunks as one part, then the
/// entries in chunks of [`CHUNK_ENTRIES`], each a part of its own, then the kept orders
/// (each a list of places in the entries, see `CollectionIndex::entries_and_orders`) as
/// one part, then an empty part. Each part is its length (four bytes, little-endian) and
/// its bytes, so that a start reads and decodes a part at a time ([`open`],
/// [`decode_entries`]) and never holds the whole snapshot; and a part is encoded when it
/// is asked for, so that a save never holds it whole either.
pub fn encode_parts(
    header: &SnapshotHeader,
    folder: &FolderState,
    entries: Vec<(FileStamp, Held)>,
    orders: Vec<Vec<u32>>,
) -> Parts {
    let chunks = u32::try_from(entries.len().div_ceil(CHUNK_ENTRIES)).expect("fewer than 2^32 chunks");
    let opening = postcard::to_allocvec(&(header, folder, chunks)).expect("a header encodes");
    Parts { opening: Some(opening), entries, next: 0, orders: Some(orders), ended: false }
}

/// The parts of a snapshot, each encoded when it is asked for (see [`encode_parts`]).
pub struct Parts {
    opening: Option<Vec<u8>>,
    entries: Vec<(FileStamp, Held)>,
    /// The first entry of the next chunk.
    next: usize,
    orders: Option<Vec<Vec<u32>>>,
    ended: bool,
}

impl Iterator for Parts {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if let Some(opening) = self.opening.take() {
            return Some(with_length(opening));
        }
        if self.next < self.entries.len() {
            let chunk = &self.entries[self.next..(self.next + CHUNK_ENTRIES).min(self.entries.len())];
            self.next += chunk.len();
            let rows: Vec<EntryRef<'_>> = chunk
                .iter()
                .map(|(stamp, item)| EntryRef { stamp, item: item.as_deref().map_err(|reason| &**reason) })
                .collect();
            // About 800 bytes an item, after room for the length: one allocation of about
            // the right size rather than a series of doublings.
            let bytes =
                postcard::to_extend(&rows, placeholder(chunk.len() * 800)).expect("index entries encode");
            return Some(set_length(bytes));
        }
        if let Some(orders) = self.orders.take() {
            let bytes = postcard::to_extend(&orders, placeholder(orders.len() * self.entries.len() * 3))
                .expect("orders encode");
            return Some(set_length(bytes));
        }
        if self.ended {
            return None;
        }
        self.ended = true;
        Some(0u32.to_le_bytes().to_vec())
    }
}

/// A part's buffer with room for its length first.
fn placeholder(capacity: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(4 + capacity);
    bytes.extend_from_slice(&[0; 4]);
    bytes
}

/// Writes the length of a part made after a [`placeholder`].
fn set_length(mut bytes: Vec<u8>) -> Vec<u8> {
    let length = u32::try_from(bytes.len() - 4).expect("a part of a snapshot is under 4 GB");
    bytes[..4].copy_from_slice(&length.to_le_bytes());
    bytes
}

fn with_length(part: Vec<u8>) -> Vec<u8> {
    let mut bytes = placeholder(part.len());
    bytes.extend_from_slice(&part);
    set_length(bytes)
}

/// The largest part a snapshot is read with: a chunk of [`CHUNK_ENTRIES`] entries is a few
/// MB; a length beyond this is a damaged file, not an allocation to make.
const MAX_PART_BYTES: u32 = 1 << 28;

/// Reads one part (see [`encode_parts`]); `None` at the empty part that ends a snapshot.
fn read_part(reader: &mut impl Read) -> Result<Option<Vec<u8>>, String> {
    let mut length = [0u8; 4];
    reader.read_exact(&mut length).map_err(|error| format!("the snapshot is cut short: {error}"))?;
    let length = u32::from_le_bytes(length);
    if length == 0 {
        return Ok(None);
    }
    if length > MAX_PART_BYTES {
        return Err(format!("the snapshot holds a part of {length} bytes: it is damaged"));
    }
    let mut part = vec![0; length as usize];
    reader.read_exact(&mut part).map_err(|error| format!("the snapshot is cut short: {error}"))?;
    Ok(Some(part))
}

/// A snapshot being read: its folder's state is known, its entries are still to decode
/// ([`decode_entries`]).
pub struct Opened<R> {
    pub folder: FolderState,
    /// How many chunks of entries follow.
    chunks: u32,
    rest: R,
}

/// A snapshot's entries in the order they were encoded, and the orders it kept (see
/// [`encode_parts`]).
#[derive(Debug, Default)]
pub struct Decoded {
    pub entries: Vec<(FileStamp, Held)>,
    pub orders: Option<Vec<Vec<u32>>>,
}

/// Reads a snapshot's header and folder's state, when its header is `expected`; its
/// entries are still to read. `Err` says why it cannot be used.
pub fn open<R: Read>(mut reader: R, expected: &SnapshotHeader) -> Result<Opened<R>, String> {
    let opening = read_part(&mut reader)?.ok_or("the snapshot is empty")?;
    let (header, folder, chunks): (SnapshotHeader, FolderState, u32) = postcard::from_bytes(&opening)
        .map_err(|error| format!("the snapshot's header does not decode: {error}"))?;
    if header != *expected {
        return Err(format!("the snapshot was made for {header:?}, not {expected:?}"));
    }
    Ok(Opened { folder, chunks, rest: reader })
}

/// The entries of an opened snapshot in the order they were encoded, and its orders: its
/// chunks are read here, one at a time, and decoded on every core meanwhile, so that a
/// start holds a few chunks of bytes (not the whole snapshot) beside the entries. `Err`
/// says why the snapshot cannot be used.
pub fn decode_entries<R: Read>(opened: Opened<R>) -> Result<Decoded, String> {
    let Opened { mut rest, chunks, .. } = opened;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let decode_chunk = |chunk: &[u8]| -> Result<Vec<Entry>, String> {
        postcard::from_bytes(chunk).map_err(|error| format!("the snapshot does not decode: {error}"))
    };
    // A few chunks wait at most: the reader stops while every decoder is busy.
    let (send, receive) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(threads * 2);
    let receive = std::sync::Mutex::new(receive);
    let (decoded, read) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let receive = &receive;
                scope.spawn(move || {
                    let mut decoded = Vec::new();
                    loop {
                        let next = receive.lock().map(|r| r.recv());
                        let Ok(Ok((at, chunk))) = next else { break };
                        decoded.push((at, decode_chunk(&chunk)));
                    }
                    decoded
                })
            })
            .collect();
        let mut read = Ok(());
        for at in 0..chunks as usize {
            match read_part(&mut rest) {
                Ok(Some(chunk)) => {
                    if send.send((at, chunk)).is_err() {
                        break;
                    }
                }
                Ok(None) => {
                    read = Err(format!("the snapshot ends after {at} of its {chunks} chunks"));
                    break;
                }
                Err(error) => {
                    read = Err(error);
                    break;
                }
            }
        }
        drop(send);
        let mut decoded: Vec<(usize, Result<Vec<Entry>, String>)> =
            workers.into_iter().flat_map(|w| w.join().expect("a snapshot worker panicked")).collect();
        decoded.sort_unstable_by_key(|(at, _)| *at);
        (decoded, read)
    });
    read?;
    let mut entries = Vec::with_capacity(decoded.iter().map(|(_, d)| d.as_ref().map_or(0, Vec::len)).sum());
    for (_, part) in decoded {
        entries.extend(part?.into_iter().map(|e| (e.stamp, e.item)));
    }
    let orders = match read_part(&mut rest)? {
        None => None,
        Some(part) => {
            let orders = postcard::from_bytes(&part)
                .map_err(|error| format!("the snapshot's orders do not decode: {error}"))?;
            if read_part(&mut rest)?.is_some() {
                return Err("the snapshot goes on after its orders".to_owned());
            }
            Some(orders)
        }
    };
    Ok(Decoded { entries, orders })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::index::Reading;
    use std::sync::Arc;

    use crate::dates::SiteZone;
    use crate::ports::StoredFile;
    use crate::slug::ItemFilename;

    fn encode(header: &SnapshotHeader, folder: &FolderState, entries: &[(FileStamp, Held)]) -> Vec<u8> {
        encode_parts(header, folder, entries.to_vec(), Vec::new()).flatten().collect()
    }

    /// The folder's state and the entries of a snapshot held whole (see [`open`] and
    /// [`decode_entries`]).
    fn decode(
        bytes: &[u8],
        expected: &SnapshotHeader,
    ) -> Result<(FolderState, Vec<(FileStamp, Held)>), String> {
        let opened = open(bytes, expected)?;
        let folder = opened.folder.clone();
        Ok((folder, decode_entries(opened)?.entries))
    }

    /// The folder's state a snapshot recorded, when its header is `expected` (without
    /// decoding its entries); `Err` says why it cannot be used.
    fn folder_state(bytes: &[u8], expected: &SnapshotHeader) -> Result<FolderState, String> {
        open(bytes, expected).map(|opened| opened.folder)
    }

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
    fn the_orders_come_back_after_the_entries() {
        let header = SnapshotHeader::new("content/posts", "UTC", None, SlugSource::FileName);
        let entries = vec![entry("a.md", "---\ntitle: A\n---\n"), entry("b.md", "---\ntitle: B\n---\n")];
        let orders = vec![vec![1, 0], vec![0, 1]];
        let bytes: Vec<u8> = encode_parts(&header, &FolderState::default(), entries.clone(), orders.clone())
            .flatten()
            .collect();
        let decoded = decode_entries(open(&bytes[..], &header).unwrap()).unwrap();
        assert_eq!((decoded.entries, decoded.orders), (entries, Some(orders)));
        // Cut before its end: refused, not taken as a snapshot without orders.
        assert!(decode_entries(open(&bytes[..bytes.len() - 4], &header).unwrap()).is_err());
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
