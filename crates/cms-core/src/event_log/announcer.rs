//! The change log's announcing subscriber: each change that this process is the one to
//! announce becomes an event on the event log.

use std::sync::Arc;

use super::EventLog;
use crate::changes::{Cause, Change, ChangeSubscriber};

/// Queues the event of each change this process announces (see the module doc of
/// `crate::event_log`).
pub struct Announcer {
    events: Arc<EventLog>,
    /// How each collection's events name it, by index.
    collections: Vec<super::CollectionName>,
    /// `webhooks.outside_edits`: whether changes found in the store are announced.
    outside_edits: bool,
}

impl Announcer {
    pub fn new(events: Arc<EventLog>, collections: Vec<super::CollectionName>, outside_edits: bool) -> Self {
        Self { events, collections, outside_edits }
    }

    /// Whether this process announces `cause`: its own writes and schedule, outside
    /// edits when the site wants them; never another node's write (that node did).
    fn announces(&self, cause: &Cause) -> bool {
        match cause {
            Cause::Write { .. } => true,
            Cause::OutsideEdit => self.outside_edits,
            Cause::OtherNode => false,
            Cause::Schedule { announced_elsewhere } => !announced_elsewhere,
        }
    }
}

impl ChangeSubscriber for Announcer {
    fn changed(&self, change: &Change) {
        if !self.announces(&change.cause) {
            return;
        }
        let unknown = super::CollectionName { slug: String::new(), folder: change.collection, lang: None };
        let collection = self.collections.get(change.collection).unwrap_or(&unknown);
        self.events.queue(change, collection);
    }
}
