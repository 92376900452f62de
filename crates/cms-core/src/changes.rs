//! The change log: one road for every change to a collection's items.
//!
//! Whatever changed an item (a write through this process's facade, a file edited by hand
//! and reported by the store's change feed, a write through another node of a bucket site,
//! a scheduled instant that passed), the change is made in one place, where the kept index
//! changes (`service/index.rs`, `service/schedule.rs`), as one [`Change`]: the collection,
//! the file, what it was and is as far as the index knows, the cause. The log numbers it
//! and hands it to every subscriber, in sequence, before the write that made it answers.
//! Subscribers: the search index (`service/search.rs`), the announcer
//! (`crate::event_log::Announcer`), and whatever an adapter adds with [`ChangeLog::subscribe`]. No facade
//! method announces a content change by hand.
//!
//! Ordering: a change is applied to the index and delivered under the log's lock, so the
//! sequence is the order in which the index changed, and every subscriber sees the changes
//! of one item in that order. Subscribers run on the writer's thread and must be quick and
//! must not write through the facade (the lock is not reentrant): queue, do not wait.
//!
//! Account events (`user.*`) are not item changes: `service/accounts.rs` publishes them.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use time::OffsetDateTime;

use crate::engine::index::IndexedItem;
use crate::events::EventKind;

/// Why an item changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A write through this process's facade, by `author` (`Caller::author`: a key's name,
    /// an editor's email, `cms CLI`); `email` is the acting user's (a key's owner's), `None`
    /// for the operator.
    Write { author: String, email: Option<String> },
    /// A change found in the store that no process of the site made: a file edited by
    /// hand, a `git pull`, a sync tool (reported by the change feed, or found by a rescan).
    OutsideEdit,
    /// A write through another process serving the same store (another node of a bucket
    /// site), read from the store's journal; that process announced it itself.
    OtherNode,
    /// A scheduled item's instant passed. `announced_elsewhere`: another server sharing
    /// the store claimed that instant and announced it (this one applies it, silently).
    Schedule { announced_elsewhere: bool },
}

/// What happened to the item, as the webhook events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Updated,
    Deleted,
    /// A scheduled item went live by itself.
    Published,
    /// A scheduled item came down by itself.
    Unpublished,
}

impl ChangeKind {
    /// The webhook event of this kind.
    pub fn event(self) -> EventKind {
        match self {
            Self::Created => EventKind::FileCreated,
            Self::Updated => EventKind::FileUpdated,
            Self::Deleted => EventKind::FileDeleted,
            Self::Published => EventKind::ItemPublished,
            Self::Unpublished => EventKind::ItemUnpublished,
        }
    }

    /// The kind of a change found in the store, from whether the file was and is there;
    /// `None` when it was neither (nothing to say).
    pub(crate) fn between(before: bool, after: bool) -> Option<Self> {
        match (before, after) {
            (false, true) => Some(Self::Created),
            (true, true) => Some(Self::Updated),
            (true, false) => Some(Self::Deleted),
            (false, false) => None,
        }
    }
}

/// An item file as the kept index knows it.
#[derive(Debug, Clone)]
pub enum Known {
    /// A listed item, and whether anonymous readers see it now.
    Item { item: Arc<IndexedItem>, live: bool },
    /// A file the index holds but cannot list (broken frontmatter, too large, ...).
    Unusable,
}

impl Known {
    /// The item, when it is a usable one.
    pub fn item(&self) -> Option<&Arc<IndexedItem>> {
        match self {
            Self::Item { item, .. } => Some(item),
            Self::Unusable => None,
        }
    }

    /// Whether anonymous readers see it.
    pub fn live(&self) -> bool {
        matches!(self, Self::Item { live: true, .. })
    }
}

/// One change to one item file.
#[derive(Debug, Clone)]
pub struct Change {
    /// This process's change number, from 1, without gaps: the order in which the index
    /// changed.
    pub sequence: u64,
    /// When it was applied (the facade's clock).
    pub at: OffsetDateTime,
    /// The collection's number.
    pub collection: usize,
    pub filename: Arc<str>,
    pub kind: ChangeKind,
    /// The file before (`None`: there was none).
    pub before: Option<Known>,
    /// The file now (`None`: there is none).
    pub after: Option<Known>,
    pub cause: Cause,
    /// What the search index takes of the new version.
    pub(crate) terms: SearchTerms,
}

/// What the search index takes of a change (the body's text is not in the kept index).
#[derive(Debug, Clone)]
pub(crate) enum SearchTerms {
    /// The new version's body as plain text.
    Text(Arc<str>),
    /// The title, tags and body of the version it replaces: only whether it is public may
    /// differ; the Markdown body, should the search index not hold the item yet.
    Unchanged(Arc<str>),
    /// Only whether it is public changed (a scheduled instant passed).
    Visibility,
    /// No terms: the file is gone or cannot be used.
    None,
}

/// One change of resource files through the facade: an upload, a rename or move, a
/// removal. Resource files have no index, no history and no events of their own: a
/// subscriber that keeps the site's files elsewhere (the git committer) follows these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceChange {
    /// The resource folder's number.
    pub folder: usize,
    /// The files changed, as paths in the folder (`photos/cat.jpg`), and whether each is
    /// there now: a rename or move names the old path (gone) and the new one.
    pub files: Vec<(String, bool)>,
    /// As [`Cause::Write`] names them.
    pub author: String,
    pub email: Option<String>,
    pub at: OffsetDateTime,
}

/// Something that follows every change of resource files through the facade.
pub trait ResourceSubscriber: Send + Sync {
    /// Called once per change, on the thread that made it, before the write answers.
    /// Must be quick and must not write through the facade.
    fn resources_changed(&self, change: &ResourceChange);
}

/// Something that follows every change.
pub trait ChangeSubscriber: Send + Sync {
    /// Called once per change, in sequence, on the thread that made it, before the write
    /// answers. Must be quick and must not write through the facade.
    fn changed(&self, change: &Change);
}

/// Numbers changes and hands them to the subscribers (see the module doc).
#[derive(Default)]
pub struct ChangeLog {
    /// The last sequence number given; held while a change is applied and delivered.
    last: Mutex<u64>,
    subscribers: RwLock<Vec<Arc<dyn ChangeSubscriber>>>,
    resource_subscribers: RwLock<Vec<Arc<dyn ResourceSubscriber>>>,
}

impl ChangeLog {
    /// Adds a subscriber: it sees every change made from now on.
    pub fn subscribe(&self, subscriber: Arc<dyn ChangeSubscriber>) {
        self.subscribers.write().unwrap_or_else(PoisonError::into_inner).push(subscriber);
    }

    /// Adds a subscriber of resource changes ([`ResourceChange`]).
    pub fn subscribe_resources(&self, subscriber: Arc<dyn ResourceSubscriber>) {
        self.resource_subscribers.write().unwrap_or_else(PoisonError::into_inner).push(subscriber);
    }

    /// Hands a change of resource files to their subscribers.
    pub(crate) fn record_resources(&self, change: &ResourceChange) {
        for subscriber in self.resource_subscribers.read().unwrap_or_else(PoisonError::into_inner).iter() {
            subscriber.resources_changed(change);
        }
    }

    /// The sequence number of the last change (0: none yet).
    pub fn last_sequence(&self) -> u64 {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `apply`, which changes the index and says what it did, in the log's order;
    /// then numbers each change and hands it to every subscriber. Returns what `apply`
    /// returned beside its changes.
    pub(crate) fn record<R>(&self, apply: impl FnOnce() -> (Vec<Change>, R)) -> R {
        // A panic in a subscriber leaves the count right: changes are numbered before delivery.
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let (changes, result) = apply();
        if changes.is_empty() {
            return result;
        }
        let subscribers = self.subscribers.read().unwrap_or_else(PoisonError::into_inner);
        for mut change in changes {
            *last += 1;
            change.sequence = *last;
            for subscriber in subscribers.iter() {
                subscriber.changed(&change);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_change_is_named_by_whether_the_file_was_and_is_there() {
        assert_eq!(ChangeKind::between(false, true), Some(ChangeKind::Created));
        assert_eq!(ChangeKind::between(true, true), Some(ChangeKind::Updated));
        assert_eq!(ChangeKind::between(true, false), Some(ChangeKind::Deleted));
        assert_eq!(ChangeKind::between(false, false), None);
    }

    #[test]
    fn the_log_numbers_changes_without_gaps_and_skips_empty_applies() {
        struct Count(Mutex<Vec<u64>>);
        impl ChangeSubscriber for Count {
            fn changed(&self, change: &Change) {
                self.0.lock().unwrap().push(change.sequence);
            }
        }
        let log = ChangeLog::default();
        let seen = Arc::new(Count(Mutex::new(Vec::new())));
        log.subscribe(seen.clone());
        let change = || Change {
            sequence: 0,
            at: OffsetDateTime::UNIX_EPOCH,
            collection: 0,
            filename: "a.md".into(),
            kind: ChangeKind::Created,
            before: None,
            after: Some(Known::Unusable),
            cause: Cause::OutsideEdit,
            terms: SearchTerms::None,
        };
        assert_eq!(log.record(|| (vec![change(), change()], 7)), 7);
        log.record(|| (Vec::new(), ()));
        log.record(|| (vec![change()], ()));
        assert_eq!(*seen.0.lock().unwrap(), [1, 2, 3]);
        assert_eq!(log.last_sequence(), 3);
    }
}
