//! The webhook adapter against a real HTTPS receiver on 127.0.0.1, trusted through a test
//! CA passed as `webhooks.ca_file`.

mod delivery;
mod gate;
mod invariants;
mod sink;
mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cms_core::Cms;
use cms_core::config::SiteConfig;
use cms_core::events::{Event, EventData, EventKind, FileEvent};
use cms_core::testing::{MemoryWorld, SITE_YAML};
use cms_webhooks::testing::TestCa;
use cms_webhooks::{DeliveryConfig, DeliveryGate, SinkConfig, Subscription, WebhookSink, WebhookStore};
use tempfile::TempDir;
use time::OffsetDateTime;

/// A site state folder, a test CA written to `ca.pem`, and the store. The receivers are on
/// loopback, so the store and the deliveries allow private addresses (as
/// `webhooks.allow_private_addresses: true` does); the address policy's tests turn it off.
pub struct Fixture {
    pub dir: TempDir,
    pub ca: TestCa,
    pub ca_file: PathBuf,
    pub store: WebhookStore,
}

impl Default for Fixture {
    fn default() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let ca_file = dir.path().join("ca.pem");
        ca.write_ca(&ca_file);
        let store = folder_store(&dir.path().join(".cms")).allowing_private_addresses(true);
        Self { dir, ca, ca_file, store }
    }
}

impl Fixture {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&self, url: &str, events: &str) -> Subscription {
        self.store.add(url, events).unwrap()
    }

    pub fn config(&self, timeout: Duration) -> SinkConfig {
        SinkConfig {
            state_dir: self.dir.path().join(".cms"),
            store: self.store.clone(),
            delivery: DeliveryConfig {
                timeout,
                ca_file: Some(self.ca_file.clone()),
                user_agent: cms_webhooks::USER_AGENT.into(),
                allow_private_addresses: true,
            },
            workers: 2,
            queue: 64,
            retry_delays: Vec::new(),
            disable_after: None,
            outbox: false,
        }
    }

    /// A sink whose deliveries are always allowed (the license gate has its own tests).
    pub fn sink(&self) -> Arc<WebhookSink> {
        Arc::new(WebhookSink::start(self.config(Duration::from_secs(10)), allowed()).unwrap())
    }

    /// A facade over in-memory ports whose events go to `sink`.
    pub fn cms(&self, sink: Arc<WebhookSink>) -> (MemoryWorld, Cms) {
        let world = MemoryWorld::new();
        let mut ports = world.ports();
        ports.events = sink;
        let cms = Cms::builder(&SiteConfig::from_yaml(SITE_YAML).unwrap(), ports).build();
        (world, cms)
    }
}

pub fn allowed() -> Arc<dyn DeliveryGate> {
    Arc::new(|| Ok(()))
}

pub fn file_event(kind: EventKind) -> Event {
    Event {
        id: None,
        kind,
        timestamp: OffsetDateTime::now_utc(),
        data: EventData::File(FileEvent::new("hello.md", 1)),
    }
}

/// Generous: a delivery to a receiver on loopback takes milliseconds.
pub const SETTLE: Duration = Duration::from_secs(20);

/// The webhook state of a site folder (`<state>` is its `.cms`), as the binary opens it.
pub fn folder_store(state: &std::path::Path) -> WebhookStore {
    WebhookStore::new(Arc::new(cms_fs::FsStateDocuments::new(state)), Arc::new(cms_fs::SystemClock))
}

/// The license gate of a site folder (`<state>` is its `.cms`).
pub fn folder_gate(state: &std::path::Path, public_key: Option<String>) -> cms_webhooks::LicenseGate {
    cms_webhooks::LicenseGate::new(
        Arc::new(cms_fs::FsLicense::new(state)),
        Arc::new(cms_fs::SystemClock),
        public_key,
    )
}
