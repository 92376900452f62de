//! The kept sets behind `missing=` and `outdated=` (issue 46, part 8): in each language's
//! index, for every language of the site, the items whose translation into it is missing
//! (no file, not even a draft) and those whose translation is outdated (see
//! `languages::is_outdated`), as index marks ([`Mark`]) kept in date order. A list filtered
//! by either is then a slice or a walk of those items, never a walk of the collection
//! with a lookup in two other indexes per item. Beside them each index keeps every
//! item's linked state (`languages::hash_sibling`): what a single answer's version names
//! of its translations, read with the item instead of a lookup in each other language.
//!
//! Whether an item is marked depends on the other languages' indexes, so every change is
//! made under the write locks of the whole family (every language's index of one
//! configured collection, taken in index order as every reader of several takes them):
//! the change where the index changes (`index.rs`, `change_entry`) re-decides the marks
//! and states of the items linked to the changed file, in every language, before any
//! reader sees either; so does the schedule for a translation that went live or came
//! down as the clock moved (`schedule.rs`: a state names whether each translation is
//! live); the install of the family's last index decides every mark and state, in one
//! walk of each language's items. Until every language's index of a family is built, its indexes
//! hold no marks, and the lists that read them build the family first.

use std::sync::{Arc, RwLockWriteGuard};

use super::Cms;
use super::languages::{TranslationFilter, hash_sibling, is_outdated};
use crate::collection::Collection;
use crate::engine::index::{CollectionIndex, IndexedItem, Link, Mark};
use crate::slug::Naming;

/// One family's write locks, in index order (which is the order of `languages:`).
pub(super) type FamilyLocks<'a> = Vec<RwLockWriteGuard<'a, Option<CollectionIndex>>>;

impl TranslationFilter {
    /// The index mark of this filter.
    pub(super) fn mark(self) -> Mark {
        match self {
            Self::Missing(at) => missing_mark(at),
            Self::Outdated(at) => outdated_mark(at),
        }
    }
}

fn missing_mark(at: usize) -> Mark {
    Mark(2 * at as u32)
}

fn outdated_mark(at: usize) -> Mark {
    Mark(2 * at as u32 + 1)
}

/// The marks of `item`, an item of the language at `lane_at` that `naming` names, into
/// `answers` (two per language: missing, outdated), from the family's indexes (`family`,
/// every one built, in the order of `languages:`).
fn decide(
    item: &IndexedItem,
    naming: &Naming,
    lane_at: usize,
    family: &[&CollectionIndex],
    answers: &mut [bool],
) {
    // What the default language's file of the item holds now (the source).
    let source = match lane_at {
        0 => Some(item.content),
        _ => family[0].linked_to(item, naming).and_then(Result::ok).map(|source| source.content),
    };
    for (at, target) in family.iter().enumerate() {
        let translation = target.linked_to(item, naming);
        answers[2 * at] = translation.is_none();
        // The default language's items are the sources: never outdated.
        answers[2 * at + 1] =
            at > 0 && matches!(translation, Some(Ok(translation)) if is_outdated(translation, source));
    }
}

/// The linked state of `item`, an item of the language at `lane_at` (see
/// `Cms::linked_state_by_lookups`, the same number), from the family's indexes.
fn linked_state(
    item: &IndexedItem,
    naming: &Naming,
    lane_at: usize,
    lanes: &[&Collection],
    family: &[&CollectionIndex],
) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for (at, (lane, index)) in lanes.iter().zip(family).enumerate() {
        if at != lane_at {
            hash_sibling(&mut hasher, lane.index, Some(index), item, naming);
        }
    }
    std::hash::Hasher::finish(&hasher).max(1)
}

impl Cms {
    /// The write locks of `collection`'s family, in index order; the collection's own
    /// alone on a site without languages.
    pub(super) fn family_locks(&self, collection: &Collection) -> FamilyLocks<'_> {
        if collection.language.is_none() {
            return vec![super::write(&self.indexes[collection.index].index)];
        }
        self.family_of(collection).map(|lane| super::write(&self.indexes[lane.index].index)).collect()
    }

    /// Decides every mark of every language's index of a family, when each is built
    /// (else leaves them without marks: see the module doc). Each language's items are
    /// walked on a thread of their own.
    pub(super) fn mark_family(&self, collection: &Collection, family: &mut FamilyLocks<'_>) {
        if collection.language.is_none() || family.iter().any(|index| index.is_none()) {
            return;
        }
        let lanes: Vec<&Collection> = self.family_of(collection).collect();
        let marks = 2 * family.len();
        type Decided = (Vec<crate::engine::index::MarkedItems>, Vec<u64>);
        let decided: Vec<Decided> = {
            let indexes: Vec<&CollectionIndex> = family.iter().filter_map(|index| index.as_ref()).collect();
            let (indexes, lanes) = (&indexes, &lanes);
            std::thread::scope(|scope| {
                let walks: Vec<_> = lanes
                    .iter()
                    .enumerate()
                    .map(|(at, lane)| {
                        scope.spawn(move || {
                            let index = indexes[at];
                            let marked = index.marked_by(marks, |item, answers| {
                                decide(item, &lane.naming, at, indexes, answers)
                            });
                            let states = index.linked_states_by(|item| {
                                linked_state(item, &lane.naming, at, lanes, indexes)
                            });
                            (marked, states)
                        })
                    })
                    .collect();
                walks.into_iter().map(|walk| walk.join().expect("a translation walk panicked")).collect()
            })
        };
        for (index, (marked, states)) in family.iter_mut().zip(decided) {
            let index = index.as_mut().expect("built");
            for (mark, items) in marked.into_iter().enumerate() {
                index.set_marked(Mark(mark as u32), items);
            }
            index.set_linked_states(states);
        }
    }

    /// After a change of file `name` of `collection` (the item `before` and `after` it,
    /// when usable), re-decides the marks of every item linked to either version, in
    /// every language of the family: by the file's name, and by the key of each version.
    pub(super) fn remark_linked(
        &self,
        collection: &Collection,
        family: &mut FamilyLocks<'_>,
        name: &str,
        versions: [Option<&IndexedItem>; 2],
    ) {
        if collection.language.is_none() || family.iter().any(|index| index.is_none()) {
            return;
        }
        let mut links = vec![Link { key: None, base: collection.naming.base_name(name) }];
        for key in versions.iter().flatten().filter_map(|item| item.translation_key()) {
            let link = Link { key: Some(key.into()), base: String::new() };
            if !links.contains(&link) {
                links.push(link);
            }
        }
        let lanes: Vec<&Collection> = self.family_of(collection).collect();
        let marks = 2 * family.len();
        let mut changes: Vec<(usize, Arc<str>, Vec<bool>, u64)> = Vec::new();
        {
            let indexes: Vec<&CollectionIndex> = family.iter().filter_map(|index| index.as_ref()).collect();
            for (at, (lane, index)) in lanes.iter().zip(&indexes).enumerate() {
                for link in &links {
                    for item in index.all_linked(link) {
                        let mut answers = vec![false; marks];
                        decide(item, &lane.naming, at, &indexes, &mut answers);
                        let state = linked_state(item, &lane.naming, at, &lanes, &indexes);
                        changes.push((at, Arc::clone(&item.meta.filename), answers, state));
                    }
                }
            }
        }
        for (at, filename, answers, state) in changes {
            let index = family[at].as_mut().expect("built");
            for (mark, on) in answers.into_iter().enumerate() {
                index.set_mark(&filename, Mark(mark as u32), on);
            }
            index.set_linked_state(&filename, state);
        }
    }

    /// The items whose kept linked state is not the one their translations make now
    /// (file names, by language); empty when the index kept every one as it should. For
    /// tests: every change must keep them.
    #[doc(hidden)]
    pub fn stale_linked_states(&self) -> Vec<String> {
        let mut stale = Vec::new();
        for family in 0..self.families {
            let Some(first) = self.collections.get(family).filter(|c| c.language.is_some()) else { continue };
            let lanes: Vec<&Collection> = self.family_of(first).collect();
            let guards: Vec<_> =
                lanes.iter().map(|lane| super::read(&self.indexes[lane.index].index)).collect();
            let Some(indexes) = guards.iter().map(|guard| guard.as_ref()).collect::<Option<Vec<_>>>() else {
                continue;
            };
            for (at, (lane, index)) in lanes.iter().zip(&indexes).enumerate() {
                for item in index.items() {
                    let kept = index.find_linked(&crate::slug::ItemRef::Filename(
                        lane.naming.parse(&item.meta.filename).expect("an item's name"),
                    ));
                    let kept = kept.and_then(|(_, state)| state);
                    if kept != Some(linked_state(&item, &lane.naming, at, &lanes, &indexes)) {
                        stale.push(format!("{}: {}", lane.slug, item.meta.filename));
                    }
                }
            }
        }
        stale.sort();
        stale
    }
}
