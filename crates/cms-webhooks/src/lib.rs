//! Outbound webhooks: an adapter of the core's [`EventSink`](cms_core::ports::EventSink)
//! and [`WebhookDirectory`](cms_core::ports::WebhookDirectory) ports.
//!
//! ```text
//! site/.cms/webhooks.yaml      subscriptions (id, url, events, enabled, secret, created_at)
//! site/.cms/webhook-log.yaml   the delivery log, newest 200 attempts
//! site/.cms/webhooks.lock      serializes read-modify-write of both between processes
//! ```
//!
//! On a site in a bucket, the first two are objects of the bucket instead, shared by every
//! server (the site's [`StateDocuments`](cms_core::ports::StateDocuments) port keeps them);
//! the outbox stays in each server's folder.
//!
//! - [`store`]: the two documents ([`WebhookStore`]); the CLI manages subscriptions
//!   through it.
//! - [`payload`]: the JSON body of an event and its `X-Webhook-Signature`.
//! - [`deliver`]: one HTTPS `POST` with ureq ([`Deliverer`]): time-out, HTTPS only,
//!   `webhooks.ca_file` trusted beside the bundled roots, no redirects, no retries.
//! - [`address`]: the address policy: public receivers only, checked on the resolved
//!   addresses at delivery (and on literal addresses when a subscription is added),
//!   unless `webhooks.allow_private_addresses` is true.
//! - [`sink`]: [`WebhookSink`], the `EventSink`: `publish` only enqueues (bounded); worker
//!   threads deliver and log; [`WebhookSink::shutdown`] finishes or logs what is pending.
//! - [`gate`]: [`DeliveryGate`], asked when an event's deliveries are due; [`LicenseGate`]
//!   holds them back (logged as not sent) unless the license port's license has the
//!   `webhooks` feature at the `Clock` port's time.

pub mod address;
pub mod deliver;
pub mod gate;
pub mod model;
pub mod outbox;
pub mod payload;
pub mod sink;
pub mod store;

#[cfg(feature = "testing")]
pub mod testing;

pub use deliver::{Attempt, Deliverer, DeliveryConfig, SetupError};
pub use gate::{DeliveryGate, LicenseGate};
pub use model::{LogEntry, Subscription};
pub use sink::{ShutdownReport, SinkConfig, WebhookSink};
pub use store::{LOG_FILE, LOG_KEEP, SUBSCRIPTIONS_FILE, WebhookStore};

/// `User-Agent` of every delivery: `cms/<version>`.
pub const USER_AGENT: &str = concat!("cms/", env!("CARGO_PKG_VERSION"));
