use cms_core::events::{Event, EventData};
use cms_core::ports::EventSink;

/// Writes each event to the log. Outbound webhook delivery plugs in here as another sink.
pub struct LogEvents;

impl EventSink for LogEvents {
    fn publish(&self, event: Event) {
        match event.data {
            EventData::File { filename, folder } => {
                tracing::info!(event = event.kind.as_str(), filename, folder, "event")
            }
            EventData::User { email, role } => {
                tracing::info!(event = event.kind.as_str(), email, role = role.map(|r| r.as_str()), "event")
            }
        }
    }
}
