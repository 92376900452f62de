//! Scheduled and expiring items (`publish_date`, `unpublish_date`): each kept index holds
//! the next instant at which an item's visibility changes; the composition root keeps a
//! timer on [`Cms::next_scheduled_instant`] and calls [`Cms::advance_schedule`] when it
//! rings (the core names no runtime, so it holds no timer itself). Each transition is
//! one change on the change log (`item.published` or `item.unpublished`).

use std::sync::Arc;

use super::{Cms, read};
use crate::changes::{Cause, Change, ChangeKind, Known, SearchTerms};
use crate::engine::index::{CollectionIndex, Transition};

impl Cms {
    /// Registers what to call when a write moves the next scheduled instant earlier (the
    /// timer then sleeps for less). Only the first registration counts.
    pub(super) fn on_schedule_change(&self, wake: impl Fn() + Send + Sync + 'static) {
        let _ = self.schedule_waker.set(Box::new(wake));
    }

    /// Registers how to record the instant up to which scheduled changes are announced
    /// (the composition root keeps it in a file, for [`Self::catch_up_schedule`] after a
    /// restart). It is called before that instant's events are published, so that a
    /// server killed right after an event went out does not announce it again; only the
    /// first registration (of this or [`Self::on_schedule_claim`]) counts.
    pub(super) fn on_schedule_mark(&self, record: impl Fn(i64) + Send + Sync + 'static) {
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
    pub(super) fn on_schedule_claim(&self, claim: impl Fn(i64) -> Option<i64> + Send + Sync + 'static) {
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
    pub(super) fn next_scheduled_instant(&self) -> Option<i64> {
        self.indexes.iter().filter_map(|cell| read(&cell.index).as_ref()?.next_instant()).min()
    }

    /// Moves every built index to the clock's now: items whose instant passed go live or
    /// come down, the instant is recorded (see [`Self::on_schedule_mark`]), and then each
    /// transition is published as an event. Returns the instant reached.
    pub(super) fn advance_schedule(&self) -> i64 {
        self.advance_and_announce(Vec::new())
    }

    /// For a server that starts: publishes the transitions that happened while no server
    /// was running, i.e. in `(since, now]`, where `since` is the instant the last server
    /// recorded (`None` on a site's first start: nothing is announced for the past). Then
    /// advances to now. Returns the instant reached (recorded as `advance_schedule` does).
    pub(super) fn catch_up_schedule(&self, since: Option<i64>) -> i64 {
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

    /// Advances every due index to now, records (claims) now, then records `past` and the
    /// transitions of the advance on the change log, in that order; those the claim says
    /// were announced already are marked so (the webhooks leave them out).
    fn advance_and_announce(&self, past: Vec<(usize, Vec<Transition>)>) -> i64 {
        let now = self.now_secs();
        let at = self.now();
        // The claim is asked before anything is announced, so that a server killed right
        // after an event went out does not announce it again; the advance itself is
        // applied under the log's order, so that no write's change to the same item can
        // come between the index's change and its record.
        let due: Vec<usize> = self
            .collections
            .iter()
            .map(|c| c.index)
            .filter(|&i| {
                read(&self.indexes[i].index).as_ref().and_then(|x| x.next_instant()).is_some_and(|t| t <= now)
            })
            .collect();
        let announced_until = self.schedule_mark.get().and_then(|claim| claim(now));
        self.change_log.record(|| {
            let mut changes = Vec::new();
            for (folder, transitions) in past {
                let index = read(&self.indexes[folder].index);
                changes.extend(
                    transitions
                        .iter()
                        .map(|t| self.transition(folder, index.as_ref(), t, at, announced_until)),
                );
            }
            for folder in due {
                // The whole family's locks on a site with languages: a translation that went
                // live or came down changes what its siblings' answers say of it.
                let collection = &self.collections[folder];
                let mut family = self.family_locks(collection);
                let own = collection.language.as_ref().map_or(0, |language| language.at);
                let transitions = {
                    let Some(index) = family[own].as_mut() else { continue };
                    let transitions = index.advance(now);
                    changes.extend(
                        transitions
                            .iter()
                            .map(|t| self.transition(folder, Some(&*index), t, at, announced_until)),
                    );
                    transitions
                };
                for transition in &transitions {
                    let item = family[own].as_ref().and_then(|index| index.get(&transition.filename));
                    let item = item.and_then(Result::ok).map(Arc::clone);
                    self.remark_linked(
                        collection,
                        &mut family,
                        &transition.filename,
                        [item.as_deref(), None],
                    );
                }
            }
            (changes, ())
        });
        now
    }

    /// The change of one transition, logged as it is recorded.
    fn transition(
        &self,
        folder: usize,
        index: Option<&CollectionIndex>,
        transition: &Transition,
        at: time::OffsetDateTime,
        announced_until: Option<i64>,
    ) -> Change {
        let kind = if transition.live { ChangeKind::Published } else { ChangeKind::Unpublished };
        let announced_elsewhere = announced_until.is_some_and(|until| transition.at <= until);
        let collection = self.collections[folder].slug.as_str();
        if announced_elsewhere {
            tracing::debug!(
                collection,
                filename = &*transition.filename,
                "scheduled change announced already (by another server)"
            );
        } else {
            tracing::info!(
                collection,
                filename = &*transition.filename,
                event = kind.event().as_str(),
                "scheduled change"
            );
        }
        let item = index.and_then(|index| index.get(&transition.filename)?.ok().cloned());
        let known = |live: bool| item.clone().map(|item| Known::Item { item, live });
        Change {
            sequence: 0,
            at,
            collection: folder,
            filename: Arc::clone(&transition.filename),
            kind,
            before: known(!transition.live),
            after: known(transition.live),
            cause: Cause::Schedule { announced_elsewhere },
            terms: SearchTerms::Visibility,
        }
    }
}
