//! The index's sorted lists: every usable item in each list order, and the published
//! ones apart, kept sorted as items change (a binary search and a shift of ids, never a
//! sort), and the selection of a list page from them ([`CollectionIndex::select`]).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::engine::kept::compare_kept;
use crate::query::{Direction, ListQuery, OrderBy, StatusFilter};

use super::*;

/// The longest run of items of one date that a newest-first page sorts around its window
/// (see `CollectionIndex::newest_window`); past it, the page is selected from the matches.
pub(super) const NEWEST_RUN_LIMIT: usize = 4096;

pub(super) const ORDERS: [OrderBy; 4] =
    [OrderBy::DatePublished, OrderBy::Title, OrderBy::Slug, OrderBy::Modified];

pub(super) fn order_slot(order: OrderBy) -> usize {
    match order {
        OrderBy::DatePublished => 0,
        OrderBy::Title => 1,
        OrderBy::Slug => 2,
        OrderBy::Modified => 3,
        // Not kept: a list in this order takes its candidates from the date order (any kept
        // order would do) and sorts its matches.
        OrderBy::Newest => 0,
    }
}

/// Ascending comparison of two items in one order; ties fall back to the filename so that
/// pages are stable.
pub(super) fn compare(order: OrderBy, a: &IndexedItem, b: &IndexedItem) -> Ordering {
    let primary = match order {
        // Instants, not strings: `2024-03-01 23:00 -0500` is after `2024-03-02 01:00 +0100`.
        OrderBy::DatePublished => a.meta.date_at.cmp(&b.meta.date_at),
        OrderBy::Title => caseless_cmp(&a.meta.title, &b.meta.title),
        OrderBy::Slug => a.meta.slug.cmp(&b.meta.slug),
        OrderBy::Modified => a.meta.modified.cmp(&b.meta.modified),
        OrderBy::Newest => (a.meta.date_at, a.meta.modified).cmp(&(b.meta.date_at, b.meta.modified)),
    };
    primary.then_with(|| a.meta.filename.cmp(&b.meta.filename))
}

/// Ascending comparison of two items by a field of the model (its place in it).
pub(super) fn compare_field(at: usize, a: &IndexedItem, b: &IndexedItem) -> Ordering {
    match (a.field(at).map(|f| f.value), b.field(at).map(|f| f.value)) {
        (Some(a), Some(b)) => compare_kept(a, b),
        _ => Ordering::Equal,
    }
}

/// One page of a list query, with the number of matches.
#[derive(Debug, Clone)]
pub struct Selection {
    pub items: Vec<Arc<IndexedItem>>,
    /// Matching items after `offset`.
    pub total: usize,
}

impl CollectionIndex {
    /// Sorts the bulk-built orders: each once, on a thread of its own, by a key computed
    /// once per item (a title's lowercase form, a date's instant) rather than in every
    /// comparison. At 100,000 items this was most of a restart.
    pub(super) fn sort_orders(&mut self) {
        let slots = &self.slots;
        let item =
            |id: Id| slots[id as usize].as_ref().and_then(|s| s.item.as_deref().ok()).expect("usable id");
        std::thread::scope(|scope| {
            for (k, ids) in self.sorted_all.iter_mut().enumerate() {
                scope.spawn(move || sort_by_order(ORDERS[k], ids, item));
            }
        });
    }

    /// Takes `orders` (one list of ids per kept order, as a snapshot kept them) as the
    /// index's when each holds every usable item once, ascending as [`compare`] orders
    /// them (checked on a thread per order: a comparison per item, not a sort); else
    /// leaves the orders as they are and answers `false`.
    pub(super) fn take_orders(&mut self, orders: Vec<Vec<Id>>) -> bool {
        if orders.len() != ORDERS.len() || orders.iter().any(|order| order.len() != self.usable) {
            return false;
        }
        let slots = &self.slots;
        let usable = |id: Id| slots.get(id as usize)?.as_ref()?.item.as_deref().ok();
        let ascending = |order: OrderBy, ids: &[Id]| {
            let mut previous: Option<&IndexedItem> = None;
            for id in ids {
                let Some(item) = usable(*id) else { return false };
                if previous.is_some_and(|before| compare(order, before, item) != Ordering::Less) {
                    return false;
                }
                previous = Some(item);
            }
            true
        };
        let checked = std::thread::scope(|scope| {
            let checks: Vec<_> = orders
                .iter()
                .enumerate()
                .map(|(k, ids)| scope.spawn(move || ascending(ORDERS[k], ids)))
                .collect();
            checks.into_iter().all(|check| check.join().expect("an order's check panicked"))
        });
        if checked {
            for (kept, taken) in self.sorted_all.iter_mut().zip(orders) {
                *kept = taken;
            }
        }
        checked
    }

    /// The published lists and the tags' lists, from the sorted orders, in one pass each.
    pub(super) fn derive_lists(&mut self) {
        let slots = &self.slots;
        let item =
            |id: Id| slots[id as usize].as_ref().and_then(|s| s.item.as_deref().ok()).expect("usable id");
        // The published lists on one thread, the tags' lists on another: each a pass over
        // every item (at 1,000,000 items, most of a second each).
        let now = self.now;
        let (sorted_all, sorted_published, by_tag) =
            (&self.sorted_all, &mut self.sorted_published, &mut self.by_tag);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for (all, published) in sorted_all.iter().zip(sorted_published.iter_mut()) {
                    published.clear();
                    published.extend(all.iter().filter(|id| item(**id).meta.live_at(now)));
                }
            });
            let mut rank = vec![0u32; slots.len()];
            for (position, id) in sorted_all[order_slot(OrderBy::DatePublished)].iter().enumerate() {
                rank[*id as usize] = position as u32;
            }
            for lists in by_tag.values_mut() {
                for ids in [&mut lists.all, &mut lists.published] {
                    ids.sort_unstable_by_key(|id| rank[*id as usize]);
                }
            }
        });
    }

    /// One page of a list query: a slice of a kept order when only `status` filters (or
    /// one tag in date order, from the tag's own lists); newest first, such a slice of the
    /// date order re-sorted inside its runs of one date; a walk of a kept order for other
    /// filters; for several tags, a partial selection of their matches (never a full
    /// sort of the collection).
    pub fn select(&self, query: &ListQuery, page: usize, per_page: usize) -> Selection {
        self.select_where(query, page, per_page, None)
    }

    /// [`Self::select`] of the items `mark` marks (see [`Mark`]): from the mark's own lists,
    /// never a walk of the collection.
    pub fn select_where(
        &self,
        query: &ListQuery,
        page: usize,
        per_page: usize,
        mark: Option<Mark>,
    ) -> Selection {
        let start = query.offset.saturating_add((page - 1).saturating_mul(per_page));
        if let Some(mark) = mark {
            return self.select_marked(query, start, per_page, mark);
        }
        if let Some(selection) = self.newest_window(query, start, per_page) {
            return selection;
        }
        let k = order_slot(query.order_by);
        // Filters on the model's fields and on text need a look at each item; an order by
        // one of the model's fields, or newest first, is not kept sorted (below: only the
        // matches are, as far as the page needs).
        let unkept_order = query.order_field.is_some() || query.order_by == OrderBy::Newest;
        let on_fields = !query.filters.is_empty() || query.text.is_some() || unkept_order;
        let kept: Option<&[Id]> =
            match (query.tags.as_slice(), query.author.is_none() && !on_fields, query.status) {
                (_, false, _) | (_, _, StatusFilter::Draft | StatusFilter::Scheduled) => None,
                ([], true, StatusFilter::Published) => Some(&self.sorted_published[k]),
                ([], true, _) => Some(&self.sorted_all[k]),
                // One tag in date order: its own lists are already in that order.
                ([tag], true, status) if query.order_by == OrderBy::DatePublished => {
                    let lists = self.by_tag.get(tag);
                    Some(lists.map_or(&[][..], |l| {
                        if status == StatusFilter::Published { &l.published } else { &l.all }
                    }))
                }
                _ => None,
            };
        if let Some(ids) = kept {
            let total = ids.len().saturating_sub(query.offset);
            let items = match query.direction {
                Direction::Asc => self.page_of(ids.iter(), start, per_page),
                Direction::Desc => self.page_of(ids.iter().rev(), start, per_page),
            };
            return Selection { items, total };
        }
        // A public list walks the published items alone: their status is known.
        let published = query.status == StatusFilter::Published;
        let status_known = published || query.status == StatusFilter::All;
        let walked: Option<(&[Id], bool)> = match query.tags.as_slice() {
            _ if unkept_order => None,
            [] if published => Some((&self.sorted_published[k], false)),
            [] => Some((&self.sorted_all[k], false)),
            // One tag in date order: its own list is already in that order.
            [tag] if query.order_by == OrderBy::DatePublished => Some((
                self.by_tag.get(tag).map_or(&[][..], |l| if published { &l.published } else { &l.all }),
                true,
            )),
            _ => None,
        };
        if let Some((ids, tagged)) = walked {
            let filters = self.column_filters(query, status_known);
            let admitted = |id: &&Id| filters.admits(self, **id, tagged);
            return match query.direction {
                Direction::Asc => self.walk(ids.iter().filter(admitted), query.offset, start, per_page),
                Direction::Desc => {
                    self.walk(ids.iter().rev().filter(admitted), query.offset, start, per_page)
                }
            };
        }
        let mut candidates: Vec<Id> = match (query.tags.is_empty(), published) {
            (true, true) => self.sorted_published[k].clone(),
            (true, false) => self.sorted_all[k].clone(),
            (false, _) => query
                .tags
                .iter()
                .filter_map(|t| self.by_tag.get(t))
                .flat_map(|l| if published { &l.published } else { &l.all })
                .copied()
                .collect(),
        };
        if query.tags.len() > 1 {
            candidates.sort_unstable();
            candidates.dedup();
        }
        let filters = self.column_filters(query, status_known);
        candidates.retain(|id| filters.admits(self, *id, true));
        self.sorted_page(candidates, query, start, per_page)
    }

    /// Several tags, one in another order, an order by a field of the model, or newest
    /// first: the page of `matches` (every match of the query), sorting only as far as the
    /// page needs.
    pub(super) fn sorted_page(
        &self,
        mut ids: Vec<Id>,
        query: &ListQuery,
        start: usize,
        per_page: usize,
    ) -> Selection {
        let total = ids.len().saturating_sub(query.offset);
        let wanted = start.saturating_add(per_page).min(ids.len());
        let order = |a: &Id, b: &Id| {
            let (a, b) = (self.usable_item(*a), self.usable_item(*b));
            let ordered = match query.order_field {
                Some(at) => compare_field(at, a, b).then_with(|| a.meta.filename.cmp(&b.meta.filename)),
                None => compare(query.order_by, a, b),
            };
            if query.direction == Direction::Desc { ordered.reverse() } else { ordered }
        };
        if wanted > 0 && wanted < ids.len() {
            ids.select_nth_unstable_by(wanted - 1, order);
            ids.truncate(wanted);
        }
        ids.sort_unstable_by(order);
        let items = ids.iter().skip(start).map(|id| Arc::clone(self.usable_item(*id))).collect();
        Selection { items, total }
    }

    /// A page newest first ([`OrderBy::Newest`]) filtered by status alone or with one tag:
    /// the kept date order differs from it only inside runs of one date, so the page's
    /// window of that order, widened to whole runs, is all that is sorted. `None` for
    /// other filters, or when a run is longer than [`NEWEST_RUN_LIMIT`] (a folder of
    /// undated items): then the matches are selected as for other unkept orders.
    pub(super) fn newest_window(
        &self,
        query: &ListQuery,
        start: usize,
        per_page: usize,
    ) -> Option<Selection> {
        let filtered = query.author.is_some() || query.text.is_some() || !query.filters.is_empty();
        if query.order_by != OrderBy::Newest || query.order_field.is_some() || filtered {
            return None;
        }
        let published = match query.status {
            StatusFilter::All => false,
            StatusFilter::Published => true,
            StatusFilter::Draft | StatusFilter::Scheduled => return None,
        };
        let k = order_slot(OrderBy::DatePublished);
        let ids: &[Id] = match query.tags.as_slice() {
            [] if published => &self.sorted_published[k],
            [] => &self.sorted_all[k],
            [tag] => self.by_tag.get(tag).map_or(&[][..], |l| if published { &l.published } else { &l.all }),
            _ => return None,
        };
        let total = ids.len().saturating_sub(query.offset);
        let end = start.saturating_add(per_page).min(ids.len());
        if start >= end {
            return Some(Selection { items: Vec::new(), total });
        }
        // The window as positions of the ascending list.
        let (first, last) = match query.direction {
            Direction::Asc => (start, end),
            Direction::Desc => (ids.len() - end, ids.len() - start),
        };
        let date = |at: usize| self.usable_item(ids[at]).meta.date_at;
        let (mut from, mut to) = (first, last);
        while from > 0 && date(from - 1) == date(first) {
            from -= 1;
            if first - from > NEWEST_RUN_LIMIT {
                return None;
            }
        }
        while to < ids.len() && date(to) == date(last - 1) {
            to += 1;
            if to - last > NEWEST_RUN_LIMIT {
                return None;
            }
        }
        let mut runs = ids[from..to].to_vec();
        runs.sort_unstable_by(|a, b| compare(OrderBy::Newest, self.usable_item(*a), self.usable_item(*b)));
        let window = &runs[first - from..last - from];
        let items = match query.direction {
            Direction::Asc => self.page_of(window.iter(), 0, per_page),
            Direction::Desc => self.page_of(window.iter().rev(), 0, per_page),
        };
        Some(Selection { items, total })
    }

    pub(super) fn page_of<'a>(
        &self,
        ids: impl Iterator<Item = &'a Id>,
        start: usize,
        per_page: usize,
    ) -> Vec<Arc<IndexedItem>> {
        ids.skip(start).take(per_page).map(|id| Arc::clone(self.usable_item(*id))).collect()
    }

    /// Counts every match and keeps the page's.
    pub(super) fn walk<'a>(
        &self,
        matching: impl Iterator<Item = &'a Id>,
        offset: usize,
        start: usize,
        per_page: usize,
    ) -> Selection {
        let mut items = Vec::new();
        let mut seen = 0usize;
        for id in matching {
            if seen >= start && items.len() < per_page {
                items.push(Arc::clone(self.usable_item(*id)));
            }
            seen += 1;
        }
        Selection { items, total: seen.saturating_sub(offset) }
    }

    pub(super) fn link_sorted(&mut self, id: Id) {
        let item = Arc::clone(self.usable_item(id));
        let published = self.is_live(&item);
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            self.insert_sorted(&mut sorted_all[k], order, &item, id);
            if published {
                self.insert_sorted(&mut sorted_published[k], order, &item, id);
            }
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        for tag in distinct(&item) {
            let lists = by_tag.entry(tag.to_owned()).or_default();
            self.insert_sorted(&mut lists.all, OrderBy::DatePublished, &item, id);
            if published {
                self.insert_sorted(&mut lists.published, OrderBy::DatePublished, &item, id);
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    pub(super) fn unlink_sorted(&mut self, id: Id) {
        let item = Arc::clone(self.usable_item(id));
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            self.remove_sorted(&mut sorted_all[k], order, &item, id);
            self.remove_sorted(&mut sorted_published[k], order, &item, id);
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        for tag in distinct(&item) {
            if let Some(lists) = by_tag.get_mut(tag) {
                self.remove_sorted(&mut lists.all, OrderBy::DatePublished, &item, id);
                self.remove_sorted(&mut lists.published, OrderBy::DatePublished, &item, id);
                if lists.all.is_empty() {
                    by_tag.remove(tag);
                }
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    /// Moves an item's id between its old and new versions' places in each list they
    /// differ in: by its key in an order, or by whether it is live (published lists), or
    /// by a tag's coming or going. The slot must still hold `old`.
    pub(super) fn relink_sorted(&mut self, id: Id, old: &IndexedItem, new: &IndexedItem) {
        let (was_live, live) = (self.is_live(old), self.is_live(new));
        let mut sorted_all = std::mem::take(&mut self.sorted_all);
        let mut sorted_published = std::mem::take(&mut self.sorted_published);
        for order in ORDERS {
            let k = order_slot(order);
            // Same filename: equal means the order's key is the same.
            let same_key = compare(order, old, new) == Ordering::Equal;
            if !same_key {
                self.reposition(&mut sorted_all[k], order, id, Some(old), Some(new));
            }
            if !same_key || was_live != live {
                let (from, to) = (was_live.then_some(old), live.then_some(new));
                self.reposition(&mut sorted_published[k], order, id, from, to);
            }
        }
        let mut by_tag = std::mem::take(&mut self.by_tag);
        let same_date = compare(OrderBy::DatePublished, old, new) == Ordering::Equal;
        let (old_tags, new_tags) = (distinct(old), distinct(new));
        let gone = old_tags.iter().filter(|tag| !new_tags.contains(tag));
        for tag in new_tags.iter().chain(gone) {
            let (had, has) = (old_tags.contains(tag), new_tags.contains(tag));
            if had && has && same_date && was_live == live {
                continue;
            }
            if !by_tag.contains_key(*tag) {
                by_tag.insert((*tag).to_owned(), TagLists::default());
            }
            let lists = by_tag.get_mut(*tag).expect("just made");
            let order = OrderBy::DatePublished;
            self.reposition(&mut lists.all, order, id, had.then_some(old), has.then_some(new));
            let (from, to) = ((had && was_live).then_some(old), (has && live).then_some(new));
            self.reposition(&mut lists.published, order, id, from, to);
            if lists.all.is_empty() {
                by_tag.remove(*tag);
            }
        }
        (self.sorted_all, self.sorted_published, self.by_tag) = (sorted_all, sorted_published, by_tag);
    }

    /// Moves `id` in one sorted list from where `old` sorts (`None`: it is not in the
    /// list) to where `new` sorts (`None`: it leaves the list), shifting only the ids
    /// between the two places. The slot must still hold `old`.
    pub(super) fn reposition(
        &self,
        ids: &mut Vec<Id>,
        order: OrderBy,
        id: Id,
        old: Option<&IndexedItem>,
        new: Option<&IndexedItem>,
    ) {
        let from = old.and_then(|old| {
            let at =
                ids.partition_point(|other| compare(order, self.usable_item(*other), old) == Ordering::Less);
            (ids.get(at) == Some(&id)).then_some(at)
        });
        let Some(new) = new else {
            if let Some(from) = from {
                ids.remove(from);
            }
            return;
        };
        let Some(from) = from else {
            self.insert_sorted(ids, order, new, id);
            return;
        };
        // The place among the other ids (the list without `from`, still sorted), found
        // without comparing the id itself: its slot holds the other version.
        let before = |other: &Id| compare(order, self.usable_item(*other), new) == Ordering::Less;
        let to = if from > 0 && !before(&ids[from - 1]) {
            ids[..from].partition_point(before)
        } else {
            from + sorted_position(&ids[from + 1..], order, before)
        };
        if to < from {
            ids[to..=from].rotate_right(1);
        } else {
            ids[from..=to].rotate_left(1);
        }
    }

    pub(super) fn insert_sorted(&self, ids: &mut Vec<Id>, order: OrderBy, item: &IndexedItem, id: Id) {
        let at = sorted_position(ids, order, |other| {
            compare(order, self.usable_item(*other), item) == Ordering::Less
        });
        ids.insert(at, id);
    }

    pub(super) fn remove_sorted(&self, ids: &mut Vec<Id>, order: OrderBy, item: &IndexedItem, id: Id) {
        let at =
            ids.partition_point(|other| compare(order, self.usable_item(*other), item) == Ordering::Less);
        if ids.get(at) == Some(&id) {
            ids.remove(at);
        }
    }
}

/// Where an item goes in a sorted list (`before` tells the ids that sort before it).
/// In the `modified` order a written item is nearly always the newest: the end is tried
/// first, which saves the binary search's cache misses.
pub(super) fn sorted_position(ids: &[Id], order: OrderBy, before: impl Fn(&Id) -> bool) -> usize {
    if order == OrderBy::Modified && ids.last().is_none_or(&before) {
        return ids.len();
    }
    ids.partition_point(before)
}

/// Sorts ids ascending in one order, exactly as [`compare`] orders them, comparing keys
/// made once per item. Only for a freshly built index, whose ids ascend with filenames:
/// an id then breaks ties as the filename does, without comparing strings.
pub(super) fn sort_by_order<'a>(order: OrderBy, ids: &mut [Id], item: impl Fn(Id) -> &'a IndexedItem) {
    pub(super) fn by_key<'a, K: Ord>(
        ids: &mut [Id],
        item: impl Fn(Id) -> &'a IndexedItem,
        key: impl Fn(&'a IndexedItem) -> K,
    ) {
        let mut keyed: Vec<(K, Id)> = ids.iter().map(|id| (key(item(*id)), *id)).collect();
        keyed.sort_unstable();
        for (slot, (_, id)) in ids.iter_mut().zip(keyed) {
            *slot = id;
        }
    }
    match order {
        OrderBy::DatePublished => by_key(ids, item, |i| i.meta.date_at.map(|d| d.unix_timestamp_nanos())),
        // Lowercase forms compare byte by byte as `caseless_cmp` compares them char by
        // char (UTF-8 keeps the order of code points); their first 8 bytes as a number
        // settle most comparisons without a string comparison.
        OrderBy::Title => by_key(ids, item, |i| {
            let lower = caseless_key(&i.meta.title);
            (prefix_number(&lower), lower)
        }),
        OrderBy::Slug => by_key(ids, item, |i| (prefix_number(&i.meta.slug), &*i.meta.slug)),
        OrderBy::Modified => by_key(ids, item, |i| i.meta.modified),
        OrderBy::Newest => {
            by_key(ids, item, |i| (i.meta.date_at.map(|d| d.unix_timestamp_nanos()), i.meta.modified))
        }
    }
}

/// The first 8 bytes of a string as a big-endian number (zero-padded): ordered as the
/// strings' first 8 bytes are.
pub(super) fn prefix_number(text: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = text.len().min(8);
    bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

pub(super) fn caseless_key(title: &str) -> String {
    if title.is_ascii() {
        title.to_ascii_lowercase()
    } else {
        title.chars().flat_map(char::to_lowercase).collect()
    }
}

/// Compares two titles as their lowercase forms would compare, without keeping or
/// building those forms (ASCII titles, the usual case, compare byte by byte).
pub(super) fn caseless_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()));
    }
    a.chars().flat_map(char::to_lowercase).cmp(b.chars().flat_map(char::to_lowercase))
}
