//! The index's clock: scheduled items go live and come down as it moves
//! ([`CollectionIndex::advance`]), and the instants still to come are kept in order.

use std::sync::Arc;

use crate::item::Status;

use super::*;

/// An item that went live or came down when the index's clock moved (see
/// [`CollectionIndex::advance`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub filename: Arc<str>,
    /// `true`: it went live (`item.published`); `false`: it came down.
    pub live: bool,
    /// The instant (Unix seconds) that caused it.
    pub at: i64,
}

impl CollectionIndex {
    /// The index's clock (Unix seconds).
    #[cfg(test)]
    pub fn now(&self) -> i64 {
        self.now
    }

    /// The next instant at which an item's visibility changes, if any.
    pub fn next_instant(&self) -> Option<i64> {
        self.pending.first().map(|(at, _)| *at)
    }

    /// Moves the index's clock to `now`: the items whose window opened or closed since
    /// move in or out of the published orders. Costs the due items only.
    pub fn advance(&mut self, now: i64) -> Vec<Transition> {
        if now <= self.now {
            return Vec::new();
        }
        let later = self.pending.split_off(&(now + 1, 0));
        let due = std::mem::replace(&mut self.pending, later);
        // Each item once, with its latest due instant.
        let mut ids: Vec<(Id, i64)> = due.into_iter().map(|(at, id)| (id, at)).collect();
        ids.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        ids.dedup_by_key(|(id, _)| *id);
        let before: Vec<(Id, i64, bool)> =
            ids.into_iter().map(|(id, at)| (id, at, self.is_live(self.usable_item(id)))).collect();
        self.now = now;
        let mut transitions = Vec::new();
        for (id, at, was_live) in before {
            let live = self.is_live(self.usable_item(id));
            if live == was_live {
                continue;
            }
            self.unlink_sorted(id);
            self.link_sorted(id);
            self.remark_visibility(id, was_live, live);
            let name = Arc::clone(&self.slot(id).name);
            self.fingerprint ^= hidden_hash(&name);
            transitions.push(Transition { filename: name, live, at });
        }
        transitions
    }

    /// The transitions that happened in `(since, self.now]`, for a server that was not
    /// running then: each published item's instants in that span, oldest first. Walks
    /// every item, once per start.
    pub fn transitions_since(&self, since: i64) -> Vec<Transition> {
        let mut found = Vec::new();
        for slot in self.slots.iter().flatten() {
            let Ok(item) = &slot.item else { continue };
            let Some(schedule) = item.meta.schedule.as_deref() else { continue };
            if item.meta.status != Status::Published || schedule.unreadable {
                continue;
            }
            let bounds = [(schedule.publish_at, true), (schedule.unpublish_at, false)];
            for (at, live) in bounds.into_iter().filter_map(|(at, l)| Some((crate::item::whole_secs(at?), l)))
            {
                if since < at && at <= self.now {
                    found.push(Transition { filename: Arc::clone(&slot.name), live, at });
                }
            }
        }
        found.sort_by(|a, b| (a.at, &a.filename, a.live).cmp(&(b.at, &b.filename, b.live)));
        found
    }

    /// Records a new usable item's future instants, and whether its window hides it.
    pub(super) fn note_schedule(&mut self, id: Id, item: &IndexedItem) {
        let Some(schedule) = item.meta.schedule.as_deref() else { return };
        if item.meta.status != Status::Published {
            return;
        }
        for at in schedule.instants().filter(|at| *at > self.now) {
            self.pending.insert((at, id));
        }
        if !self.is_live(item) {
            self.fingerprint ^= hidden_hash(&self.slot(id).name);
        }
    }

    /// Undoes [`Self::note_schedule`] for an item about to leave.
    pub(super) fn forget_schedule(&mut self, id: Id, item: &IndexedItem) {
        let Some(schedule) = item.meta.schedule.as_deref() else { return };
        if item.meta.status != Status::Published {
            return;
        }
        for at in schedule.instants() {
            self.pending.remove(&(at, id));
        }
        if !self.is_live(item) {
            self.fingerprint ^= hidden_hash(&self.slot(id).name);
        }
    }
}
