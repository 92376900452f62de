//! A whole index built at once (a start): the slots laid out first, then the maps of other
//! names (slugs, keys) on one thread while the map of filenames, the counts, orders and
//! tags are made on another (about the same work: at 1,000,000 items the maps of names
//! alone were a second of one core while the other waited). One item at a time, the build
//! was the single-threaded part of a restart (4 s at 1,000,000 items, the maps' inserts
//! each a few cache misses).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;

use foldhash::HashMap;

use super::orders::{ORDERS, order_slot};
use super::other_names::OtherNames;
use super::{CollectionIndex, Held, Id, Slot, Stamp, TagLists};
use super::{distinct, hidden_hash, is_draft, slot_name, stamp_hash};
use crate::engine::names::NameTable;
use crate::item::Status;
use crate::ports::FileStamp;

/// Fewer slots than this are added up on one thread (a thread costs more than they do);
/// in tests, fewer, so that small indexes take both ways.
const SIDE_BY_SIDE: usize = if cfg!(test) { 64 } else { 4096 };

/// What the slots add up to, besides the maps of names.
#[derive(Default)]
struct Tally {
    fingerprint: u64,
    unusable: BTreeMap<Arc<str>, Id>,
    usable: usize,
    breaking_model: usize,
    drafts: usize,
    pending: BTreeSet<(i64, Id)>,
    /// The usable ids, in id order: every order's list before it is sorted.
    usable_ids: Vec<Id>,
    by_tag: HashMap<String, TagLists>,
}

impl CollectionIndex {
    /// Lays out `entries` (in filename order) as slots, passing over a name that is not an
    /// item's or that came before, then makes the rest from the slots.
    pub(super) fn fill(&mut self, entries: Vec<(FileStamp, Held)>) {
        let mut previous = String::new();
        for (stamp, item) in entries {
            if self.naming.file_slug(&stamp.name).is_none() || stamp.name == previous {
                continue;
            }
            // A usable item's filename is shared with it (and with the search index).
            let name = match &item {
                Ok(item) => Arc::clone(&item.meta.filename),
                Err(_) => Arc::from(stamp.name.as_str()),
            };
            self.slots.push(Some(Slot { name, stamp: Stamp::of(&stamp), item }));
            previous = stamp.name;
        }
        let (other_names, by_name, tally) = if self.slots.len() < SIDE_BY_SIDE {
            (self.name_maps(), self.filename_map(), self.tally())
        } else {
            std::thread::scope(|scope| {
                let other_names = scope.spawn(|| self.name_maps());
                let (by_name, tally) = (self.filename_map(), self.tally());
                (other_names.join().expect("the maps of names panicked"), by_name, tally)
            })
        };
        (self.by_name, self.other_names) = (by_name, other_names);
        let Tally { fingerprint, unusable, usable, breaking_model, drafts, pending, usable_ids, by_tag } =
            tally;
        self.fingerprint = fingerprint;
        self.unusable = unusable;
        (self.usable, self.breaking_model, self.drafts) = (usable, breaking_model, drafts);
        self.pending = pending;
        for order in ORDERS {
            self.sorted_all[order_slot(order)] = usable_ids.clone();
        }
        self.by_tag = by_tag;
    }

    /// Every slot's id by its filename.
    fn filename_map(&self) -> NameTable {
        let mut by_name = NameTable::with_capacity(self.slots.len());
        for (id, slot) in self.slots.iter().enumerate() {
            if let Some(slot) = slot {
                by_name.insert(id as Id, &slot.name, |id| slot_name(&self.slots, id));
            }
        }
        by_name
    }

    /// The maps of other names of every slot (see [`Self::link_names`], which files one).
    fn name_maps(&self) -> OtherNames {
        let mut maps = OtherNames::with_capacity(self.slots.len());
        #[cfg(test)]
        {
            maps.collide = self.other_names.collide;
        }
        for (id, slot) in self.slots.iter().enumerate() {
            let Some(slot) = slot else { continue };
            for (map, entry) in OtherNames::entries_of(slot, id as Id, &self.naming) {
                maps.file(map, entry, &self.slots, &self.naming);
            }
        }
        maps
    }

    /// The counts, the fingerprint, the schedule and the tags of every slot, as
    /// [`Self::insert_slot`] adds one's.
    fn tally(&self) -> Tally {
        let mut tally = Tally { usable_ids: Vec::with_capacity(self.slots.len()), ..Tally::default() };
        for (id, slot) in self.slots.iter().enumerate() {
            let Some(slot) = slot else { continue };
            let id = id as Id;
            tally.fingerprint ^= stamp_hash(&slot.name, slot.stamp);
            let item = match &slot.item {
                Ok(item) => item,
                Err(_) => {
                    tally.unusable.insert(Arc::clone(&slot.name), id);
                    continue;
                }
            };
            tally.usable += 1;
            tally.breaking_model += usize::from(item.breaks_model());
            tally.drafts += usize::from(is_draft(item));
            let live = self.is_live(item);
            // As `note_schedule` does.
            if let Some(schedule) = item.meta.schedule.as_deref()
                && item.meta.status == Status::Published
            {
                tally.pending.extend(schedule.instants().filter(|at| *at > self.now).map(|at| (at, id)));
                if !live {
                    tally.fingerprint ^= hidden_hash(&slot.name);
                }
            }
            tally.usable_ids.push(id);
            for tag in distinct(item) {
                // A tag is usually known: its name is copied only the first time.
                let lists = match tally.by_tag.get_mut(tag) {
                    Some(lists) => lists,
                    None => tally.by_tag.entry(tag.to_owned()).or_default(),
                };
                lists.all.push(id);
                if live {
                    lists.published.push(id);
                }
            }
        }
        tally
    }
}
