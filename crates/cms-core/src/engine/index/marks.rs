//! What the facade decides of each item from other indexes (on a site with languages,
//! see `service::translation_marks`): marked items, sets such as the items whose
//! translation into a language is missing or outdated, each kept as a tag's items are (in
//! date order, all and published, moved as the items change), so that a list filtered by
//! a mark is a slice or a walk of the marked items, never of the collection; and each
//! item's linked state, a number read with the item.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::query::{Direction, ListQuery, OrderBy, StatusFilter};

use super::orders::compare;
use super::*;

/// A set of marked items, numbered by whoever marks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mark(pub u32);

/// The items of one mark, made by [`CollectionIndex::marked_by`] for
/// [`CollectionIndex::set_marked`].
#[derive(Debug, Default)]
pub struct MarkedItems(TagLists);

impl MarkedItems {
    pub fn is_empty(&self) -> bool {
        self.0.all.is_empty()
    }
}

impl CollectionIndex {
    /// Each of `marks` marks with the usable items `decide` says it does (`decide` fills
    /// one answer per mark, in the order of `marks`): one walk of the date order, no sort.
    /// Pure: a caller may decide several indexes' marks side by side, then set them.
    pub fn marked_by(&self, marks: usize, decide: impl Fn(&IndexedItem, &mut [bool])) -> Vec<MarkedItems> {
        let mut made: Vec<MarkedItems> = (0..marks).map(|_| MarkedItems::default()).collect();
        let mut answers = vec![false; marks];
        for id in &self.sorted_all[order_slot(OrderBy::DatePublished)] {
            let item = self.usable_item(*id);
            answers.fill(false);
            decide(item, &mut answers);
            let live = self.is_live(item);
            for (marked, _) in made.iter_mut().zip(&answers).filter(|(_, on)| **on) {
                marked.0.all.push(*id);
                if live {
                    marked.0.published.push(*id);
                }
            }
        }
        made
    }

    /// Makes `items` (of [`Self::marked_by`], on this index as it is now) the items that
    /// `mark` marks, in place of those it marked.
    pub fn set_marked(&mut self, mark: Mark, items: MarkedItems) {
        if items.is_empty() {
            self.by_mark.remove(&mark);
        } else {
            self.by_mark.insert(mark, items.0);
        }
    }

    /// Marks or unmarks the usable item of file `name` (nothing for any other file).
    pub fn set_mark(&mut self, name: &str, mark: Mark, on: bool) {
        let Some(id) = self.id_of(name) else { return };
        let Ok(item) = self.slot(id).item.clone() else { return };
        if self.is_marked_id(mark, id, &item) == on {
            return;
        }
        let live = self.is_live(&item);
        let mut by_mark = std::mem::take(&mut self.by_mark);
        let lists = by_mark.entry(mark).or_default();
        let order = OrderBy::DatePublished;
        if on {
            self.insert_sorted(&mut lists.all, order, &item, id);
            if live {
                self.insert_sorted(&mut lists.published, order, &item, id);
            }
        } else {
            self.remove_sorted(&mut lists.all, order, &item, id);
            self.remove_sorted(&mut lists.published, order, &item, id);
        }
        if lists.all.is_empty() {
            by_mark.remove(&mark);
        }
        self.by_mark = by_mark;
    }

    /// Whether `mark` marks the usable item of file `name`.
    #[cfg(test)]
    pub fn is_marked(&self, name: &str, mark: Mark) -> bool {
        let Some(id) = self.id_of(name) else { return false };
        self.slot(id).item.as_ref().is_ok_and(|item| self.is_marked_id(mark, id, item))
    }

    /// How many items `mark` marks.
    #[cfg(test)]
    pub fn marked_count(&self, mark: Mark) -> usize {
        self.by_mark.get(&mark).map_or(0, |lists| lists.all.len())
    }

    /// Whether `mark` marks `id`, whose slot holds `item`.
    fn is_marked_id(&self, mark: Mark, id: Id, item: &IndexedItem) -> bool {
        self.by_mark.get(&mark).is_some_and(|lists| self.is_marked_in(&lists.all, id, item))
    }

    /// Takes a usable item that is about to go out of every mark's lists (the slot must
    /// still hold it).
    pub(super) fn unmark(&mut self, id: Id, item: &IndexedItem) {
        if self.by_mark.is_empty() {
            return;
        }
        let mut by_mark = std::mem::take(&mut self.by_mark);
        for lists in by_mark.values_mut() {
            self.remove_sorted(&mut lists.all, OrderBy::DatePublished, item, id);
            self.remove_sorted(&mut lists.published, OrderBy::DatePublished, item, id);
        }
        by_mark.retain(|_, lists| !lists.all.is_empty());
        self.by_mark = by_mark;
    }

    /// Moves an item in the lists of the marks that mark it, from where `old` sorts to
    /// where `new` does (by date, and in or out of the published lists). The slot must
    /// still hold `old`.
    pub(super) fn remark(&mut self, id: Id, old: &IndexedItem, new: &IndexedItem) {
        let (was_live, live) = (self.is_live(old), self.is_live(new));
        let same_date = compare(OrderBy::DatePublished, old, new) == Ordering::Equal;
        if self.by_mark.is_empty() || (same_date && was_live == live) {
            return;
        }
        let mut by_mark = std::mem::take(&mut self.by_mark);
        let order = OrderBy::DatePublished;
        for lists in by_mark.values_mut() {
            if !self.is_marked_in(&lists.all, id, old) {
                continue;
            }
            self.reposition(&mut lists.all, order, id, Some(old), Some(new));
            self.reposition(&mut lists.published, order, id, was_live.then_some(old), live.then_some(new));
        }
        self.by_mark = by_mark;
    }

    /// Moves an item whose visibility changed with the index's clock in or out of the
    /// published lists of the marks that mark it.
    pub(super) fn remark_visibility(&mut self, id: Id, was_live: bool, live: bool) {
        if self.by_mark.is_empty() || was_live == live {
            return;
        }
        let item = Arc::clone(self.usable_item(id));
        let mut by_mark = std::mem::take(&mut self.by_mark);
        let order = OrderBy::DatePublished;
        for lists in by_mark.values_mut() {
            if self.is_marked_in(&lists.all, id, &item) {
                let (from, to) = (was_live.then_some(&*item), live.then_some(&*item));
                self.reposition(&mut lists.published, order, id, from, to);
            }
        }
        self.by_mark = by_mark;
    }

    /// Whether `id`, whose slot holds `item`, is in `all` (a mark's list, in date order):
    /// a binary search.
    fn is_marked_in(&self, all: &[Id], id: Id, item: &IndexedItem) -> bool {
        let at = all.partition_point(|other| {
            compare(OrderBy::DatePublished, self.usable_item(*other), item) == Ordering::Less
        });
        all.get(at) == Some(&id)
    }

    /// One page of the items `mark` marks that a list query admits: a slice of the mark's
    /// lists when only `status` filters in date order; a walk of them for other filters;
    /// in another order, the matches sorted as far as the page needs.
    pub(super) fn select_marked(
        &self,
        query: &ListQuery,
        start: usize,
        per_page: usize,
        mark: Mark,
    ) -> Selection {
        let (all, published) =
            self.by_mark.get(&mark).map_or((&[][..], &[][..]), |l| (&l.all[..], &l.published[..]));
        let filtered = query.author.is_some()
            || query.text.is_some()
            || !query.filters.is_empty()
            || !query.tags.is_empty();
        let by_date = query.order_by == OrderBy::DatePublished && query.order_field.is_none();
        let slice = match query.status {
            StatusFilter::All => Some(all),
            StatusFilter::Published => Some(published),
            StatusFilter::Draft | StatusFilter::Scheduled => None,
        };
        if let (true, false, Some(ids)) = (by_date, filtered, slice) {
            let total = ids.len().saturating_sub(query.offset);
            let items = match query.direction {
                Direction::Asc => self.page_of(ids.iter(), start, per_page),
                Direction::Desc => self.page_of(ids.iter().rev(), start, per_page),
            };
            return Selection { items, total };
        }
        // The status's own list when it has one (then the status is known), else every item.
        let walked = slice.unwrap_or(all);
        let filters = self.column_filters(query, slice.is_some());
        let admitted = |id: &&Id| filters.admits(self, **id, false);
        if by_date {
            return match query.direction {
                Direction::Asc => self.walk(walked.iter().filter(admitted), query.offset, start, per_page),
                Direction::Desc => {
                    self.walk(walked.iter().rev().filter(admitted), query.offset, start, per_page)
                }
            };
        }
        let matches: Vec<Id> = walked.iter().filter(admitted).copied().collect();
        self.sorted_page(matches, query, start, per_page)
    }

    /// Each usable item's linked state as `state_of` makes it (pure, like
    /// [`Self::marked_by`]), for [`Self::set_linked_states`].
    pub fn linked_states_by(&self, state_of: impl Fn(&IndexedItem) -> u64) -> Vec<u64> {
        self.slots
            .iter()
            .map(|slot| slot.as_ref().and_then(|slot| slot.item.as_deref().ok()).map_or(0, &state_of))
            .collect()
    }

    /// Makes `states` (of [`Self::linked_states_by`], on this index as it is now) the
    /// items' linked states.
    pub fn set_linked_states(&mut self, states: Vec<u64>) {
        self.linked_states = states;
    }

    /// Keeps `state` as the linked state of the usable item of file `name` (see
    /// [`Self::find_linked`]).
    pub fn set_linked_state(&mut self, name: &str, state: u64) {
        let Some(id) = self.id_of(name) else { return };
        let at = id as usize;
        if self.linked_states.len() <= at {
            self.linked_states.resize(self.slots.len().max(at + 1), 0);
        }
        self.linked_states[at] = state;
    }
}
