//! Scheduled and expiring items (`publish_date`, `unpublish_date`): each kept index holds
//! the next instant at which an item's visibility changes; the composition root keeps a
//! timer on [`Cms::next_scheduled_instant`] and calls [`Cms::advance_schedule`] when it
//! rings (the core names no runtime, so it holds no timer itself). Each transition is
//! one `item.published` or `item.unpublished` event.

use super::{Cms, read, write};
use crate::events::{EventData, EventKind};
use crate::index::Transition;

impl Cms {
    /// Registers what to call when a write moves the next scheduled instant earlier (the
    /// timer then sleeps for less). Only the first registration counts.
    pub fn on_schedule_change(&self, wake: impl Fn() + Send + Sync + 'static) {
        let _ = self.schedule_waker.set(Box::new(wake));
    }

    /// Registers how to record the instant up to which scheduled changes are announced
    /// (the composition root keeps it in a file, for [`Self::catch_up_schedule`] after a
    /// restart). It is called before that instant's events are published, so that a
    /// server killed right after an event went out does not announce it again; only the
    /// first registration (of this or [`Self::on_schedule_claim`]) counts.
    pub fn on_schedule_mark(&self, record: impl Fn(i64) + Send + Sync + 'static) {
        self.on_schedule_claim(move |at| {
            record(at);
            None
        });
    }

    /// Like [`Self::on_schedule_mark`], for servers sharing one store: `claim(now)` moves
    /// the shared mark to `now` unless another server already moved it that far, and
    /// answers the instant up to which scheduled changes were already announced (by
    /// another server, or by this one at an earlier ring); `None`: none known. The
    /// transitions at or before that instant are applied here but not announced again,
    /// so that each is announced once per site, not once per server.
    pub fn on_schedule_claim(&self, claim: impl Fn(i64) -> Option<i64> + Send + Sync + 'static) {
        let _ = self.schedule_mark.set(Box::new(claim));
    }

    pub(super) fn wake_schedule(&self) {
        if let Some(wake) = self.schedule_waker.get() {
            wake();
        }
    }

    /// The clock as whole Unix seconds.
    pub(super) fn now_secs(&self) -> i64 {
        self.now().unix_timestamp()
    }

    /// The earliest instant (Unix seconds) at which an item goes live or comes down, over
    /// the built indexes: where the timer should ring next.
    pub fn next_scheduled_instant(&self) -> Option<i64> {
        self.indexes.iter().filter_map(|cell| read(&cell.index).as_ref()?.next_instant()).min()
    }

    /// Moves every built index to the clock's now: items whose instant passed go live or
    /// come down, the instant is recorded (see [`Self::on_schedule_mark`]), and then each
    /// transition is published as an event. Returns the instant reached.
    pub fn advance_schedule(&self) -> i64 {
        self.advance_and_announce(Vec::new())
    }

    /// For a server that starts: publishes the transitions that happened while no server
    /// was running, i.e. in `(since, now]`, where `since` is the instant the last server
    /// recorded (`None` on a site's first start: nothing is announced for the past). Then
    /// advances to now. Returns the instant reached (recorded as `advance_schedule` does).
    pub fn catch_up_schedule(&self, since: Option<i64>) -> i64 {
        let mut past = Vec::new();
        if let Some(since) = since {
            for collection in &self.collections {
                let transitions = match read(&self.indexes[collection.index].index).as_ref() {
                    Some(index) => index.transitions_since(since),
                    None => continue,
                };
                if !transitions.is_empty() {
                    tracing::info!(
                        collection = collection.slug.as_str(),
                        count = transitions.len(),
                        "announcing scheduled changes that happened while the server was stopped"
                    );
                    past.push((collection.index, transitions));
                }
            }
        }
        self.advance_and_announce(past)
    }

    /// Advances every due index to now, records (claims) now, then publishes `past` and
    /// the transitions of the advance, in that order, leaving out those the claim says
    /// were announced already.
    fn advance_and_announce(&self, mut announced: Vec<(usize, Vec<Transition>)>) -> i64 {
        let now = self.now_secs();
        for collection in &self.collections {
            let cell = &self.indexes[collection.index];
            let due = read(&cell.index).as_ref().and_then(|i| i.next_instant()).is_some_and(|at| at <= now);
            if !due {
                continue;
            }
            if let Some(index) = write(&cell.index).as_mut() {
                announced.push((collection.index, index.advance(now)));
            }
        }
        let announced_until = self.schedule_mark.get().and_then(|claim| claim(now));
        for (folder, transitions) in &announced {
            self.announce(*folder, transitions, announced_until);
        }
        now
    }

    /// Applies each transition to the search index, and publishes the events of those
    /// after `announced_until` (the ones before were announced already).
    fn announce(&self, folder: usize, transitions: &[Transition], announced_until: Option<i64>) {
        for transition in transitions {
            let kind = if transition.live { EventKind::ItemPublished } else { EventKind::ItemUnpublished };
            // The search index follows the kept index's visibility.
            if let Some(search) = write(&self.search[folder].index).as_mut() {
                search.set_published(&transition.filename, transition.live);
                self.search_changed();
            }
            if announced_until.is_some_and(|until| transition.at <= until) {
                tracing::debug!(
                    collection = self.collections[folder].slug.as_str(),
                    filename = &*transition.filename,
                    "scheduled change announced already (by another server)"
                );
                continue;
            }
            tracing::info!(
                collection = self.collections[folder].slug.as_str(),
                filename = &*transition.filename,
                event = kind.as_str(),
                "scheduled change"
            );
            self.publish(kind, EventData::File { filename: transition.filename.to_string(), folder });
        }
    }
}
