//! The core driven through its facade with in-memory ports.

mod accounts;
mod changes;
mod contract;
mod discovery;
mod event_log;
mod health;
mod index;
mod invariants;
mod items;
mod model;
mod model_queries;
mod other_nodes;
mod previews;
mod schedule;
mod search;
mod translations;
mod versions;
mod webhooks;

/// An event's data with only the spec's fields (`filename`, `folder`), for tests that
/// compare events with what the spec says of them.
pub fn spec_fields(data: cms_core::events::EventData) -> cms_core::events::EventData {
    use cms_core::events::{EventData, FileEvent};
    match data {
        EventData::File(file) => EventData::File(FileEvent::new(file.filename, file.folder)),
        other => other,
    }
}
