//! An index built from a snapshot, checked against a listing of its folder made at the
//! same time (see `service::index`): a restart builds the index while the folder is
//! listed and its files' stamps read, rather than after, and then only the files the
//! listing shows changed are forgotten and read again.

use super::{CollectionIndex, Held, Id, Stamp};
use crate::ports::FileStamp;

/// Fewer listed files than this are looked up on one thread.
const PARALLEL_LOOKUPS: usize = 8192;

/// What a listing of the folder says of an index (see [`CollectionIndex::compare_listing`]).
#[derive(Debug)]
pub struct ListingDiff {
    /// Listed files the index does not hold at their listed stamp: new or changed.
    pub to_read: Vec<FileStamp>,
    /// Per slot id: the listing shows its file at the stamp the slot holds.
    held: Vec<bool>,
    /// Slots the listing does not show as held: files removed or changed since.
    unheld: usize,
}

impl ListingDiff {
    /// Files the index holds as the listing shows them.
    pub fn held_count(&self) -> usize {
        self.held.iter().filter(|held| **held).count()
    }

    /// Files to forget or to read again: how far the index is from the listing.
    pub fn changes(&self) -> usize {
        self.to_read.len() + self.unheld
    }
}

impl CollectionIndex {
    /// Compares the index with `listed`, a listing of the collection's item files (each
    /// name once): which files it holds as listed, and which are to be read.
    pub fn compare_listing(&self, listed: Vec<FileStamp>) -> ListingDiff {
        // Each lookup is a few cache misses (the name's hash, its slot, the stored name):
        // a large listing is looked up on every core.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
        let chunk = listed.len().div_ceil(threads).max(PARALLEL_LOOKUPS);
        let held_ids = |part: &[FileStamp]| -> Vec<Option<Id>> {
            part.iter()
                .map(|stamp| {
                    let id = self.id_of(&stamp.name)?;
                    (self.slot(id).stamp == Stamp::of(stamp)).then_some(id)
                })
                .collect()
        };
        let found: Vec<Option<Id>> = if listed.len() <= chunk {
            held_ids(&listed)
        } else {
            std::thread::scope(|scope| {
                let parts: Vec<_> =
                    listed.chunks(chunk).map(|part| scope.spawn(move || held_ids(part))).collect();
                parts.into_iter().flat_map(|part| part.join().expect("a listing lookup panicked")).collect()
            })
        };
        let mut held = vec![false; self.slots.len()];
        let mut to_read = Vec::new();
        for (stamp, id) in listed.into_iter().zip(found) {
            match id {
                Some(id) if !held[id as usize] => held[id as usize] = true,
                _ => to_read.push(stamp),
            }
        }
        let unheld = self.slots.iter().zip(&held).filter(|(slot, held)| slot.is_some() && !**held).count();
        ListingDiff { to_read, held, unheld }
    }

    /// Forgets every file the listing did not show as held (one by one: for a few).
    pub fn forget_unheld(&mut self, diff: &ListingDiff) {
        let unheld: Vec<std::sync::Arc<str>> = self
            .slots
            .iter()
            .zip(&diff.held)
            .filter_map(|(slot, held)| slot.as_ref().filter(|_| !*held).map(|slot| slot.name.clone()))
            .collect();
        for name in unheld {
            self.remove(&name);
        }
    }

    /// Adds a file read after the build, as the build would have (a name that is not an
    /// item's, or already held, is passed over).
    pub fn insert_read(&mut self, stamp: &FileStamp, item: Held) {
        if self.naming.file_slug(&stamp.name).is_none() || self.id_of(&stamp.name).is_some() {
            return;
        }
        self.insert_slot(&stamp.name, Stamp::of(stamp), item);
    }

    /// The entries the listing showed as held, for a build of its own.
    pub fn into_held_entries(self, diff: &ListingDiff) -> Vec<(FileStamp, Held)> {
        self.slots
            .into_iter()
            .zip(&diff.held)
            .filter_map(|(slot, held)| slot.filter(|_| *held))
            .map(|slot| (slot.stamp.named(&slot.name), slot.item))
            .collect()
    }
}
