//! [`OtherNames`]: the maps that find a slot by a name other than its filename (its slugs,
//! its `translationKey`, its name as its language writes it).
//!
//! They hold entries of 4 bytes (the slot's id) in hash tables and read each name back from
//! the slot, to compare it on a lookup and to hash it again when a table grows. A map from
//! the name's hash to the files took 24 bytes a bucket, and the slug map has a bucket and
//! more for every item: at 1,000,000 items 2^21 buckets, 52 MB where this takes 10.

use std::borrow::Cow;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::{Id, NameMap, Slot};
use crate::slug::Naming;

/// An entry of the maps: a slot's id, with [`OWN_SLUG`] set where the slug map files it under
/// its item's own `slug:` (which differs from its file's slug) rather than its file's.
type Filed = u32;
const OWN_SLUG: Filed = 1 << 31;

/// The highest id the maps can file (the flag takes the top bit).
pub(super) const MAX_ID: Id = OWN_SLUG - 1;

fn id_of(filed: Filed) -> Id {
    filed & !OWN_SLUG
}

#[derive(Debug, Default)]
pub(super) struct OtherNames {
    hasher: foldhash::fast::RandomState,
    /// Files every name under one hash, so that tests see lookups pass over other names.
    #[cfg(test)]
    pub(super) collide: bool,
    /// Every file with this slug (dated or not): its file's slug, and on a site with
    /// languages its own `slug:` too when that differs.
    by_slug: HashTable<Filed>,
    /// Every usable item with this `translationKey` (empty on most sites).
    by_key: HashTable<Filed>,
    /// Files whose language suffix is not written as [`Naming::name_for_base`] writes it
    /// (`hello.FR.md`), by the name it writes (`hello.fr.md`): how other languages find
    /// them. Empty on most sites.
    by_written_name: HashTable<Filed>,
}

/// The ids a name is filed under, in filename order: nearly always one, listed without
/// allocating.
pub(super) enum Named {
    One(Option<Id>),
    Many(std::vec::IntoIter<Id>),
}

impl Iterator for Named {
    type Item = Id;

    fn next(&mut self) -> Option<Id> {
        match self {
            Self::One(id) => id.take(),
            Self::Many(ids) => ids.next(),
        }
    }
}

impl OtherNames {
    /// Maps with room for `slugs` entries in the slug map.
    pub(super) fn with_capacity(slugs: usize) -> Self {
        Self { by_slug: HashTable::with_capacity(slugs), ..Self::default() }
    }

    /// The entries a slot is filed under: in `by_slug`, its file's slug and its own slug
    /// when that differs; in `by_key`, its `translationKey`; in `by_written_name`, its name
    /// as this language writes it when that differs.
    pub(super) fn entries_of(slot: &Slot, id: Id, naming: &Naming) -> Vec<(NameMap, Filed)> {
        assert!(id <= MAX_ID, "ids below 2^31");
        let mut entries = Vec::with_capacity(1);
        let file_slug = naming.file_slug(&slot.name);
        if let Ok(item) = slot.item.as_ref() {
            if file_slug != Some(&*item.meta.slug) {
                entries.push((NameMap::Slug, id | OWN_SLUG));
            }
            if item.translation_key().is_some() {
                entries.push((NameMap::Key, id));
            }
        }
        if naming.writes_otherwise(&slot.name) {
            entries.push((NameMap::WrittenName, id));
        }
        if file_slug.is_some() {
            entries.push((NameMap::Slug, id));
        }
        entries
    }

    /// Files `entry` (one of [`Self::entries_of`] its slot) in `map`.
    pub(super) fn file(&mut self, map: NameMap, entry: Filed, slots: &[Option<Slot>], naming: &Naming) {
        let hash = self.hash(&name_of(map, entry, slots, naming));
        #[cfg(test)]
        let collide = self.collide;
        #[cfg(not(test))]
        let collide = false;
        let Self { hasher, by_slug, by_key, by_written_name, .. } = self;
        let table = match map {
            NameMap::Slug => by_slug,
            NameMap::Key => by_key,
            NameMap::WrittenName => by_written_name,
        };
        let rehash = |other: &Filed| match collide {
            true => 0,
            false => hasher.hash_one(&*name_of(map, *other, slots, naming)),
        };
        table.insert_unique(hash, entry, rehash);
    }

    /// Takes `entry` out of `map` (while its slot still gives the name it was filed under).
    pub(super) fn unfile(&mut self, map: NameMap, entry: Filed, slots: &[Option<Slot>], naming: &Naming) {
        let hash = self.hash(&name_of(map, entry, slots, naming));
        if let Ok(filed) = self.table_mut(map).find_entry(hash, |other| *other == entry) {
            filed.remove();
        }
    }

    /// The ids filed under `name` in `map`, in filename order (another name with the same
    /// hash is passed over).
    pub(super) fn named(&self, map: NameMap, name: &str, slots: &[Option<Slot>], naming: &Naming) -> Named {
        let mut found = self
            .table(map)
            .iter_hash(self.hash(name))
            .filter(|entry| carries(map, **entry, name, slots, naming))
            .map(|entry| id_of(*entry));
        let Some(first) = found.next() else { return Named::One(None) };
        let Some(second) = found.next() else { return Named::One(Some(first)) };
        let mut ids = vec![first, second];
        ids.extend(found);
        ids.sort_unstable_by(|a, b| slot_of(slots, *a).name.cmp(&slot_of(slots, *b).name));
        ids.dedup();
        Named::Many(ids.into_iter())
    }

    /// How many entries `map` holds.
    #[cfg(test)]
    pub(super) fn len(&self, map: NameMap) -> usize {
        self.table(map).len()
    }

    fn hash(&self, name: &str) -> u64 {
        #[cfg(test)]
        if self.collide {
            return 0;
        }
        self.hasher.hash_one(name)
    }

    fn table(&self, map: NameMap) -> &HashTable<Filed> {
        match map {
            NameMap::Slug => &self.by_slug,
            NameMap::Key => &self.by_key,
            NameMap::WrittenName => &self.by_written_name,
        }
    }

    fn table_mut(&mut self, map: NameMap) -> &mut HashTable<Filed> {
        match map {
            NameMap::Slug => &mut self.by_slug,
            NameMap::Key => &mut self.by_key,
            NameMap::WrittenName => &mut self.by_written_name,
        }
    }
}

fn slot_of(slots: &[Option<Slot>], id: Id) -> &Slot {
    slots[id as usize].as_ref().expect("filed id")
}

/// Whether `entry` is filed in `map` under `name`. In the slug map the item's slug is
/// compared first: on the usual read it is the name, and one comparison, where reading
/// the file's slug back parses the file's name (at 1,000,000 items 4% of a random read's
/// time). An item whose slug is `name` carries it, whichever of its entries was found; a
/// file found by both is listed once (see [`OtherNames::named`]).
fn carries(map: NameMap, entry: Filed, name: &str, slots: &[Option<Slot>], naming: &Naming) -> bool {
    let item_slug = || slot_of(slots, id_of(entry)).item.as_ref().ok().map(|item| &*item.meta.slug);
    (map == NameMap::Slug && item_slug() == Some(name)) || name_of(map, entry, slots, naming) == name
}

/// The name `entry` is filed under in `map`, read back from its slot.
fn name_of<'a>(map: NameMap, entry: Filed, slots: &'a [Option<Slot>], naming: &Naming) -> Cow<'a, str> {
    let slot = slot_of(slots, id_of(entry));
    let item = || slot.item.as_ref().expect("only usable items are filed by what they carry");
    match map {
        NameMap::Slug if entry & OWN_SLUG != 0 => Cow::Borrowed(&item().meta.slug),
        NameMap::Slug => Cow::Borrowed(naming.file_slug(&slot.name).expect("filed by its file's slug")),
        NameMap::Key => Cow::Borrowed(item().translation_key().expect("filed by its key")),
        NameMap::WrittenName => Cow::Owned(naming.name_for_base(&naming.base_name(&slot.name))),
    }
}
