//! A reader's place in the event log: waits for the next events its filter admits.

use std::sync::Arc;

use super::{EventFilter, EventLog, LoggedEvent, Replay};

/// What [`EventCursor::next`] found.
#[derive(Debug)]
pub enum Next {
    /// The next events the filter admits, in order.
    Events(Vec<Arc<LoggedEvent>>),
    /// The events after the reader's id are no longer kept: it must fetch again; the
    /// cursor goes on from the newest event.
    Reset,
    /// The log closed (the server is stopping), or could not be read.
    Closed,
}

/// See the module doc.
pub struct EventCursor {
    log: Arc<EventLog>,
    after: u64,
    filter: EventFilter,
}

impl EventCursor {
    pub(super) fn new(log: Arc<EventLog>, after: u64, filter: EventFilter) -> Self {
        Self { log, after, filter }
    }

    /// The id of the last event the reader was given or skipped.
    pub fn position(&self) -> u64 {
        self.after
    }

    pub fn filter(&self) -> &EventFilter {
        &self.filter
    }

    /// Waits until there are events after the reader's place that its filter admits.
    pub async fn next(&mut self) -> Next {
        loop {
            if self.log.is_closed() {
                return Next::Closed;
            }
            // Listening before looking: an event added in between still wakes it.
            let moved = self.log.listen(self.filter.collection);
            if let Some(collection) = self.filter.collection {
                self.after = self.log.skip_others(collection, self.after);
            }
            match self.log.after(self.after).await {
                Ok(Replay::Events(events)) => {
                    let Some(last) = events.last() else {
                        if self.log.is_closed() {
                            return Next::Closed;
                        }
                        moved.await;
                        continue;
                    };
                    self.after = last.id();
                    let admitted: Vec<_> =
                        events.into_iter().filter(|event| self.filter.admits(event)).collect();
                    if !admitted.is_empty() {
                        return Next::Events(admitted);
                    }
                }
                Ok(Replay::Reset) => {
                    self.after = self.log.last_id();
                    return Next::Reset;
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot read the event log; ending a stream");
                    return Next::Closed;
                }
            }
        }
    }
}
