use std::sync::Arc;

use cms_core::events::{Event, EventData};
use cms_core::ports::EventSink;
use cms_webhooks::WebhookSink;

/// The site's event sink: each event goes to the log, then to webhook delivery (which only
/// enqueues it; see `cms_webhooks::sink`).
pub struct SiteEvents {
    pub webhooks: Arc<WebhookSink>,
}

impl EventSink for SiteEvents {
    fn publish(&self, event: Event) {
        log(&event);
        self.webhooks.publish(event);
    }
}

fn log(event: &Event) {
    match &event.data {
        EventData::File { filename, folder } => {
            tracing::info!(event = event.kind.as_str(), filename, folder, "event")
        }
        EventData::User { email, role } => {
            tracing::info!(event = event.kind.as_str(), email, role = role.map(|r| r.as_str()), "event")
        }
    }
}
