//! The in-memory index of a collection: built once, then changed in place.
//!
//! Every item file has a slot (its stamp and, if it could be parsed, its [`IndexedItem`]).
//! Beside the slots the index keeps what makes reads cheap without touching storage:
//! filename and slug maps (single reads in O(1)), the usable items sorted by each list
//! order, once over every item and once over the published ones (a default list page is a
//! slice), and per tag the items in date order (a tag list walks only its tag). Each
//! change costs a binary search and a shift of 4-byte ids per order, never a sort or a
//! scan of the collection; a new version of a listed item (the usual write) moves only in
//! the lists whose key or membership it changed, usually the `modified` order alone.
//!
//! The index itself does no I/O: the facade feeds it what the ports read (see
//! `service::index` for when).

mod bulk;
mod columns;
mod item;
mod listing;
mod marks;
mod orders;
mod other_names;
mod schedule;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upsert_cost;

use foldhash::HashMap;
use std::sync::Arc;

use crate::engine::names::NameTable;
use crate::item::Status;
use crate::ports::FileStamp;
use crate::query::OrderBy;
use crate::slug::{ItemFilename, ItemRef, Naming};

pub use item::{Held, IndexedItem, Parsed, Reading, excerpt_of, held, translation_key_of};
use orders::order_slot;
use other_names::{Named, OtherNames};

pub use marks::{Mark, MarkedItems};
pub use orders::Selection;
pub use schedule::Transition;

/// What the index holds for one item file.
#[derive(Debug, Clone)]
struct Slot {
    name: Arc<str>,
    stamp: Stamp,
    /// `Err`: why the file cannot be used (broken YAML, over a limit). It stays known, so
    /// that it is not re-read until it changes, and it is reported as skipped.
    item: Held,
}

type Id = u32;

/// What the index holds for a file it knows: the usable item, or why the file cannot be
/// used.
pub type Found<'a> = Result<&'a Arc<IndexedItem>, &'a str>;

/// A [`FileStamp`] without its name, which the slot holds once (shared with the item): a
/// second copy of every filename cost about 70 bytes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: i64,
    change_token: u64,
}

impl Stamp {
    fn of(stamp: &FileStamp) -> Self {
        Self { size: stamp.size, modified: stamp.modified, change_token: stamp.change_token }
    }

    fn named(self, name: &str) -> FileStamp {
        FileStamp {
            name: name.to_owned(),
            size: self.size,
            modified: self.modified,
            change_token: self.change_token,
        }
    }
}

/// One tag's usable items ascending by date: all of them, and the published ones.
#[derive(Debug, Default)]
struct TagLists {
    all: Vec<Id>,
    published: Vec<Id>,
}

/// How an item is found in another language's collection: by its `translationKey`, or,
/// without one, by its file's name without the language ([`Naming::base_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub key: Option<Box<str>>,
    pub base: String,
}

impl Link {
    /// The link of `item`, a file that `naming` names.
    pub fn of(item: &IndexedItem, naming: &Naming) -> Self {
        Self { key: item.translation_key().map(Box::from), base: naming.base_name(&item.meta.filename) }
    }
}

/// Which of the index's maps of other names a name is filed in (see
/// [`CollectionIndex::names_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameMap {
    Slug,
    Key,
    WrittenName,
}

/// What a change did to the index, so the caller can log or count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The stamp was already known: nothing to do.
    Unchanged,
    Updated,
    Removed,
}

/// A collection's items by status, as the web editor's dashboard shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusCounts {
    pub live: usize,
    pub scheduled: usize,
    pub drafts: usize,
}

fn is_draft(item: &IndexedItem) -> bool {
    item.meta.status == Status::Draft
}

#[derive(Debug, Default)]
pub struct CollectionIndex {
    slots: Vec<Option<Slot>>,
    free: Vec<Id>,
    /// Every slot's id by its file's name (read back from the slot).
    by_name: NameTable,
    /// The maps that find a slot by its slugs, its `translationKey` or its name as its
    /// language writes it (see [`OtherNames::entries_of`]).
    other_names: OtherNames,
    /// Per order (see [`order_slot`]): usable items ascending, all and published.
    sorted_all: [Vec<Id>; 4],
    sorted_published: [Vec<Id>; 4],
    /// Per tag slug: its items ascending by date, all and published.
    by_tag: HashMap<String, TagLists>,
    /// Per mark (see [`Mark`]): its items ascending by date, all and published. Empty on
    /// a site without languages.
    by_mark: HashMap<Mark, TagLists>,
    /// By id: a number the facade keeps for each usable item, saying what it links to in
    /// the other languages (see `service::translation_marks`); 0 where it kept none.
    /// Empty on a site without languages.
    linked_states: Vec<u64>,
    usable: usize,
    /// Usable items that break the collection's model (see [`IndexedItem::breaks_model`]).
    breaking_model: usize,
    /// Usable items whose status is draft (see [`Self::status_counts`]).
    drafts: usize,
    /// Item files that cannot be used, in filename order (so the skipped-file report
    /// does not walk every slot).
    unusable: std::collections::BTreeMap<Arc<str>, Id>,
    /// Files of the folder whose names are not items', with the reason.
    others: std::collections::BTreeMap<Box<str>, Box<str>>,
    /// XOR of a hash of every slot's name and stamp, and of the name of every published
    /// item outside its window: the same set of file versions at the same visibility
    /// gives the same value, whatever changes led to it (see [`Self::fingerprint`]).
    fingerprint: u64,
    /// The index's clock (Unix seconds): what "published" means for the published orders,
    /// moved only by [`Self::advance`].
    now: i64,
    /// Instants after `now` at which a published item's visibility changes, with the item:
    /// the first one is when [`Self::advance`] has work (no scan needed to find it).
    pending: std::collections::BTreeSet<(i64, Id)>,
    /// Which file names are this collection's items, and their slugs.
    naming: Naming,
    /// The model's fields that filters asked for, by id (see [`columns`]).
    columns: columns::Columns,
}

impl CollectionIndex {
    /// An index of these files at `now` (Unix seconds), sorted once, on a site without
    /// languages.
    #[cfg(test)]
    pub fn build(entries: Vec<(FileStamp, Held)>, now: i64) -> Self {
        Self::build_named(entries, now, Naming::default())
    }

    /// An index of these files at `now` (Unix seconds), sorted once; `naming` says which
    /// names are this collection's items (see [`Naming`]).
    pub fn build_named(entries: Vec<(FileStamp, Held)>, now: i64, naming: Naming) -> Self {
        Self::build_with_orders(entries, now, naming, None).0
    }

    /// [`Self::build_named`] of a snapshot's entries (in filename order) with the orders
    /// it kept (see [`Self::entries_and_orders`]): taken instead of sorting when each is
    /// every usable item, ascending as the order compares them; sorted otherwise. At
    /// 1,000,000 items the sorts were a fifth of a restart. Whether the orders were taken.
    pub fn build_with_orders(
        mut entries: Vec<(FileStamp, Held)>,
        now: i64,
        naming: Naming,
        orders: Option<Vec<Vec<Id>>>,
    ) -> (Self, bool) {
        // In filename order, so that ids are too (see `sort_by_order`). Usually already
        // in order, or two ordered runs: a stable sort merges those in linear time.
        entries.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let count = entries.len();
        let mut index = Self { now, naming, slots: Vec::with_capacity(count), ..Self::default() };
        index.fill(entries);
        // Each entry a slot (none passed over): the orders' places are the slots' ids.
        let taken =
            orders.filter(|_| index.slots.len() == count).is_some_and(|orders| index.take_orders(orders));
        if !taken {
            index.sort_orders();
        }
        index.derive_lists();
        (index, taken)
    }

    /// Whether a public client sees this item now (see [`ItemMeta::live_at`]), by the
    /// index's clock.
    pub fn is_live(&self, item: &IndexedItem) -> bool {
        item.meta.live_at(self.now)
    }

    /// Changes whenever a file is added, changed or removed: a version of everything a
    /// list of this collection can show.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Every known item file with what the index holds for it, in filename order, and each
    /// kept order as places in that list (for a snapshot: a start that builds an index of
    /// the same entries takes these orders rather than sorting, see
    /// [`Self::build_with_orders`]).
    pub fn entries_and_orders(&self) -> (Vec<(FileStamp, Held)>, Vec<Vec<Id>>) {
        let mut ids: Vec<Id> =
            (0..self.slots.len() as Id).filter(|id| self.slots[*id as usize].is_some()).collect();
        // Already in order unless files were added since the build (a sorted run is one
        // pass).
        ids.sort_unstable_by(|a, b| self.slot(*a).name.cmp(&self.slot(*b).name));
        let mut place = vec![Id::MAX; self.slots.len()];
        for (at, id) in ids.iter().enumerate() {
            place[*id as usize] = at as Id;
        }
        let entries = ids
            .iter()
            .map(|id| {
                let slot = self.slot(*id);
                (slot.stamp.named(&slot.name), slot.item.clone())
            })
            .collect();
        let orders = self
            .sorted_all
            .iter()
            .map(|order| order.iter().map(|id| place[*id as usize]).collect())
            .collect();
        (entries, orders)
    }

    /// How many item files are known, usable or not.
    pub fn file_count(&self) -> usize {
        self.by_name.len()
    }

    /// How many items can be listed.
    pub fn usable_count(&self) -> usize {
        self.usable
    }

    /// How many listed items break the collection's model.
    pub fn breaking_model_count(&self) -> usize {
        self.breaking_model
    }

    /// How many usable items are live (published and inside their window at the index's
    /// clock), scheduled (published, outside it) and drafts: from the kept lists and
    /// counts, without a walk.
    pub fn status_counts(&self) -> StatusCounts {
        let live = self.sorted_published[0].len();
        let drafts = self.drafts;
        StatusCounts { live, scheduled: self.usable.saturating_sub(live + drafts), drafts }
    }

    /// The stamp the index holds for a file.
    pub fn stamp(&self, name: &str) -> Option<FileStamp> {
        self.id_of(name).map(|id| self.slot(id).stamp.named(name))
    }

    /// Whether the index holds this file at this stamp.
    pub fn holds(&self, stamp: &FileStamp) -> bool {
        self.id_of(&stamp.name).is_some_and(|id| self.slot(id).stamp == Stamp::of(stamp))
    }

    /// Every known filename (for comparing with a fresh scan).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().flatten().map(|s| &*s.name)
    }

    /// Every usable item, in no particular order.
    pub fn items(&self) -> Vec<Arc<IndexedItem>> {
        self.slots.iter().flatten().filter_map(|s| s.item.clone().ok()).collect()
    }

    /// Every tag of the usable items (of the live ones only, for `live_only`), once per
    /// slug: the slug, how the newest item carrying it spells it, and how many items carry
    /// it. From the tag lists (no walk of the items), in no particular order.
    pub fn tags(&self, live_only: bool) -> Vec<(&str, &str, usize)> {
        let mut found = Vec::with_capacity(self.by_tag.len());
        for (slug, lists) in &self.by_tag {
            let ids = if live_only { &lists.published } else { &lists.all };
            let Some(newest) = ids.last() else { continue };
            let item = self.usable_item(*newest);
            let spelling = item.meta.tags.iter().zip(item.tag_slugs()).find(|(_, s)| s == slug);
            found.push((slug.as_str(), spelling.map_or(slug.as_str(), |(tag, _)| &**tag), ids.len()));
        }
        found
    }

    /// The published items, newest first (by `date`, then filename).
    pub fn published_newest_first(&self) -> impl Iterator<Item = &Arc<IndexedItem>> {
        self.sorted_published[order_slot(OrderBy::DatePublished)].iter().rev().map(|id| self.usable_item(*id))
    }

    /// The file an item reference names (first in filename order when several files share
    /// a slug), usable or not.
    pub fn locate(&self, item_ref: &ItemRef) -> Option<ItemFilename> {
        let id = match item_ref {
            ItemRef::Slug(slug) => self.named(NameMap::Slug, slug.as_str()).next()?,
            ItemRef::Filename(name) => self.id_of(name.as_str())?,
        };
        self.naming.parse(&self.slot(id).name)
    }

    /// What the index holds for the file an item reference names (as [`Self::locate`]),
    /// found with one lookup: the indexed item, or `Err` with why the file is unusable.
    /// The hot path of single reads, which need no `ItemFilename`.
    pub fn find(&self, item_ref: &ItemRef) -> Option<Result<&Arc<IndexedItem>, &str>> {
        let id = match item_ref {
            ItemRef::Slug(slug) => self.named(NameMap::Slug, slug.as_str()).next()?,
            ItemRef::Filename(name) => self.id_of(name.as_str())?,
        };
        Some(self.slot(id).item.as_ref().map_err(|reason| &**reason))
    }

    /// [`Self::find`], with the linked state kept for the item (see
    /// [`Self::set_linked_state`]; `None` when none is kept).
    pub fn find_linked(&self, item_ref: &ItemRef) -> Option<(Found<'_>, Option<u64>)> {
        let id = match item_ref {
            ItemRef::Slug(slug) => self.named(NameMap::Slug, slug.as_str()).next()?,
            ItemRef::Filename(name) => self.id_of(name.as_str())?,
        };
        let state = self.linked_states.get(id as usize).copied().filter(|state| *state != 0);
        Some((self.slot(id).item.as_ref().map_err(|reason| &**reason), state))
    }

    /// The published item a reference names: for a bare slug that several files carry,
    /// the first published one in filename order, so a draft never shadows it.
    pub fn locate_published(&self, item_ref: &ItemRef) -> Option<&Arc<IndexedItem>> {
        let usable_live = |id: Id| self.slot(id).item.as_ref().ok().filter(|item| self.is_live(item));
        match item_ref {
            ItemRef::Slug(slug) => self.named(NameMap::Slug, slug.as_str()).find_map(usable_live),
            ItemRef::Filename(name) => usable_live(self.id_of(name.as_str())?),
        }
    }

    /// A file with this slug (dated or not).
    pub fn file_with_slug(&self, slug: &str) -> Option<ItemFilename> {
        let id = self.named(NameMap::Slug, slug).next()?;
        self.naming.parse(&self.slot(id).name)
    }

    /// The item of this collection that is a translation of an item linked by `link`
    /// (see [`Link`]): the one with its `translationKey`, or, for an item without one, the
    /// file `link` names in this collection when that file has no key of its own (as Hugo
    /// links pages: by key when they have one, else by path).
    pub fn linked(&self, link: &Link) -> Option<Result<&Arc<IndexedItem>, &str>> {
        match link.key.as_deref() {
            Some(key) => self.with_key(key),
            None => self.linked_by_name(&self.naming.name_for_base(&link.base)),
        }
    }

    /// [`Self::linked`] for the link of `item`, a file that `naming` names (`Link::of`),
    /// without making the link: the hot path of answers, which name each item's
    /// translations.
    pub fn linked_to(&self, item: &IndexedItem, naming: &Naming) -> Option<Result<&Arc<IndexedItem>, &str>> {
        thread_local! {
            static NAME: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        match item.translation_key() {
            Some(key) => self.with_key(key),
            None => NAME.with_borrow_mut(|name| {
                self.naming.write_name_from(naming, &item.meta.filename, name);
                self.linked_by_name(name)
            }),
        }
    }

    /// Every usable item of this collection whose own link is `link`, so that another
    /// language's lookup by `link` finds (or found) its translation there: each item with
    /// the link's key, or, for a link by name, the file of that name without a key.
    pub fn all_linked(&self, link: &Link) -> Vec<&Arc<IndexedItem>> {
        match link.key.as_deref() {
            Some(key) => self.named(NameMap::Key, key).map(|id| self.usable_item(id)).collect(),
            None => {
                let name = self.naming.name_for_base(&link.base);
                let ids: Vec<Id> =
                    self.id_of(&name).into_iter().chain(self.named(NameMap::WrittenName, &name)).collect();
                ids.into_iter()
                    .filter_map(|id| self.slot(id).item.as_ref().ok())
                    .filter(|item| item.translation_key().is_none())
                    .collect()
            }
        }
    }

    fn with_key(&self, key: &str) -> Option<Result<&Arc<IndexedItem>, &str>> {
        Some(Ok(self.usable_item(self.named(NameMap::Key, key).next()?)))
    }

    /// The file named `name` in this language (or written otherwise: `hello.FR.md`),
    /// unless it has a key of its own.
    fn linked_by_name(&self, name: &str) -> Option<Result<&Arc<IndexedItem>, &str>> {
        let found = match self.id_of(name) {
            Some(id) => id,
            None => self.named(NameMap::WrittenName, name).next()?,
        };
        Some(self.slot(found).item.as_ref().map_err(|reason| &**reason))
            .filter(|found| !matches!(found, Ok(item) if item.translation_key().is_some()))
    }

    /// The indexed item of a file; `Err` with the reason when the file is known but
    /// unusable.
    pub fn get(&self, name: &str) -> Option<Result<&Arc<IndexedItem>, &str>> {
        self.id_of(name).map(|id| self.slot(id).item.as_ref().map_err(|reason| &**reason))
    }

    /// Files in the collection's folder that are not listed, each with the reason: item
    /// files that cannot be used, and files whose names are not items' (as of the last
    /// full scan), in filename order.
    pub fn skipped(&self) -> Vec<(&str, &str)> {
        let unusable = self.unusable.values().filter_map(|id| {
            let slot = self.slot(*id);
            Some((&*slot.name, &**slot.item.as_ref().err()?))
        });
        let mut all: Vec<(&str, &str)> =
            unusable.chain(self.others.iter().map(|(n, r)| (&**n, &**r))).collect();
        all.sort_unstable();
        all
    }

    /// The files of the last full scan whose names are not items', with the reason, in
    /// filename order (for a snapshot).
    pub fn others(&self) -> Vec<(String, String)> {
        self.others.iter().map(|(name, reason)| (name.to_string(), reason.to_string())).collect()
    }

    /// Records the files of the last full scan whose names are not items', with the
    /// reason; returns those that were not known before (to report each once).
    pub fn set_others(&mut self, others: Vec<(String, String)>) -> Vec<(String, String)> {
        let fresh: Vec<(String, String)> =
            others.iter().filter(|(name, _)| !self.others.contains_key(name.as_str())).cloned().collect();
        self.others = others.into_iter().map(|(n, r)| (n.into_boxed_str(), r.into_boxed_str())).collect();
        fresh
    }

    /// Records a file's new content (or that it cannot be used).
    pub fn upsert(&mut self, name: &ItemFilename, stamp: FileStamp, item: Parsed) -> Applied {
        let known = self.id_of(name.as_str());
        if let Some(id) = known
            && self.slot(id).stamp == Stamp::of(&stamp)
        {
            return Applied::Unchanged;
        }
        match (known, item) {
            // The usual write: a new version of a listed item.
            (Some(id), Ok(item)) if self.slot(id).item.is_ok() => self.replace_usable(id, stamp, item),
            (_, item) => {
                self.remove(name.as_str());
                self.insert_slot(name.as_str(), Stamp::of(&stamp), item.map(Arc::new).map_err(Box::from));
            }
        }
        Applied::Updated
    }

    /// Puts a new usable version of a usable item in its slot, keeping the slot's id and
    /// name: only the lists whose key or published membership changed are touched (a
    /// write usually moves the item in the `modified` order alone), where a removal and
    /// an insertion would search and shift every list.
    fn replace_usable(&mut self, id: Id, stamp: FileStamp, mut item: IndexedItem) {
        let slot = self.slots[id as usize].as_mut().expect("indexed id");
        debug_assert_eq!(*slot.name, *item.meta.filename, "a new version of the same file");
        // The slot's name is the key of `by_name` (and of the search index): the new
        // version shares it, so that no map changes.
        item.meta.filename = Arc::clone(&slot.name);
        let new = Arc::new(item);
        let old = Arc::clone(slot.item.as_ref().expect("usable id"));
        self.breaking_model =
            self.breaking_model + usize::from(new.breaks_model()) - usize::from(old.breaks_model());
        self.drafts = self.drafts + usize::from(is_draft(&new)) - usize::from(is_draft(&old));
        let stamp = Stamp::of(&stamp);
        self.fingerprint ^= stamp_hash(&slot.name, slot.stamp) ^ stamp_hash(&slot.name, stamp);
        slot.stamp = stamp;
        self.forget_schedule(id, &old);
        // While the slot still holds the old version, which places the id in its lists.
        self.relink_sorted(id, &old, &new);
        self.remark(id, &old, &new);
        let renamed = old.meta.slug != new.meta.slug || old.translation_key() != new.translation_key();
        if renamed {
            self.unlink_names(id);
        }
        self.slots[id as usize].as_mut().expect("indexed id").item = Ok(Arc::clone(&new));
        self.columns.update(id, Some(&new));
        if renamed {
            self.link_names(id);
        }
        self.note_schedule(id, &new);
    }

    /// Forgets a file.
    pub fn remove(&mut self, name: &str) -> Applied {
        let Some(id) = self.id_of(name) else { return Applied::Unchanged };
        if let Ok(item) = self.slot(id).item.clone() {
            self.unmark(id, &item);
            self.unlink_sorted(id);
            self.usable -= 1;
            self.breaking_model -= usize::from(item.breaks_model());
            self.drafts -= usize::from(is_draft(&item));
            self.forget_schedule(id, &item);
        } else {
            self.unusable.remove(name);
        }
        self.unlink_names(id);
        if let Some(state) = self.linked_states.get_mut(id as usize) {
            *state = 0;
        }
        self.columns.update(id, None);
        // While the slot still gives its name.
        let slots = &self.slots;
        self.by_name.remove(name, |id| slot_name(slots, id));
        let slot = self.slots[id as usize].take().expect("indexed id");
        self.fingerprint ^= stamp_hash(&slot.name, slot.stamp);
        self.free.push(id);
        Applied::Removed
    }

    /// The ids filed under `name` in `map` (in filename order).
    fn named(&self, map: NameMap, name: &str) -> Named {
        self.other_names.named(map, name, &self.slots, &self.naming)
    }

    /// Files a slot under its slugs and key (see [`OtherNames::entries_of`]).
    fn link_names(&mut self, id: Id) {
        for (map, entry) in OtherNames::entries_of(self.slot(id), id, &self.naming) {
            self.other_names.file(map, entry, &self.slots, &self.naming);
        }
    }

    /// Takes a slot out of the maps [`Self::link_names`] filed it in (while it still holds
    /// what it was filed by).
    fn unlink_names(&mut self, id: Id) {
        for (map, entry) in OtherNames::entries_of(self.slot(id), id, &self.naming) {
            self.other_names.unfile(map, entry, &self.slots, &self.naming);
        }
    }

    fn slot(&self, id: Id) -> &Slot {
        self.slots[id as usize].as_ref().expect("indexed id")
    }

    /// The id of the file named `name`.
    fn id_of(&self, name: &str) -> Option<Id> {
        self.by_name.get(name, |id| slot_name(&self.slots, id))
    }

    fn usable_item(&self, id: Id) -> &Arc<IndexedItem> {
        self.slot(id).item.as_ref().expect("usable id")
    }

    fn insert_slot(&mut self, name: &str, stamp: Stamp, item: Held) {
        let usable = item.is_ok();
        self.fingerprint ^= stamp_hash(name, stamp);
        // A usable item's filename is shared with it (and with the search index).
        let shared = match &item {
            Ok(item) => Arc::clone(&item.meta.filename),
            Err(_) => Arc::from(name),
        };
        let slot = Slot { name: shared, stamp, item };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(slot.clone());
                id
            }
            None => {
                self.slots.push(Some(slot.clone()));
                Id::try_from(self.slots.len() - 1)
                    .ok()
                    .filter(|id| *id <= other_names::MAX_ID)
                    .expect("fewer than 2^31 items")
            }
        };
        if !usable {
            self.unusable.insert(Arc::clone(&slot.name), id);
        }
        let slots = &self.slots;
        self.by_name.insert(id, &slot.name, |id| slot_name(slots, id));
        self.link_names(id);
        if usable {
            self.usable += 1;
            let item = Arc::clone(self.usable_item(id));
            self.breaking_model += usize::from(item.breaks_model());
            self.drafts += usize::from(is_draft(&item));
            self.note_schedule(id, &item);
            self.link_sorted(id);
            self.columns.update(id, Some(&item));
        }
    }
}

/// The name of the file in slot `id` (which holds one).
fn slot_name(slots: &[Option<Slot>], id: Id) -> &str {
    &slots[id as usize].as_ref().expect("indexed id").name
}

/// What a published item outside its window adds to the fingerprint.
fn hidden_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    ("outside its window", name).hash(&mut hasher);
    hasher.finish()
}

fn stamp_hash(name: &str, stamp: Stamp) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (name, stamp.change_token, stamp.size, stamp.modified).hash(&mut hasher);
    hasher.finish()
}

/// An item's tag slugs, each once (an item tagged `Rust` and `rust` is listed once).
fn distinct(item: &IndexedItem) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for slug in item.tag_slugs() {
        if !seen.contains(&slug) {
            seen.push(slug);
        }
    }
    seen
}
