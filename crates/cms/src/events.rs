use std::sync::Arc;

use cms_core::events::{Event, EventData};
use cms_core::ports::EventSink;
use cms_webhooks::WebhookSink;

/// The site's event sink: each event goes to the log, then to webhook delivery (which only
/// enqueues it; see `cms_webhooks::sink`).
pub struct SiteEvents {
    /// `None` for a command that cannot emit events: it starts no delivery workers.
    pub webhooks: Option<Arc<WebhookSink>>,
}

impl EventSink for SiteEvents {
    fn publish(&self, event: Event) {
        log(&event);
        match &self.webhooks {
            Some(webhooks) => webhooks.publish(event),
            // A command said it emits no events (`AdminCommand::emits_events`) and did.
            None => tracing::error!(
                event = event.kind.as_str(),
                "this command runs without webhook delivery; the event is not sent"
            ),
        }
    }
}

fn log(event: &Event) {
    match &event.data {
        EventData::File(file) => tracing::info!(
            event = event.kind.as_str(),
            id = event.id,
            filename = file.filename,
            folder = file.folder,
            "event"
        ),
        EventData::User { email, role } => {
            tracing::info!(event = event.kind.as_str(), email, role = role.map(|r| r.as_str()), "event")
        }
    }
}
