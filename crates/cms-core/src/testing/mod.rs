//! In-memory adapters of every port, and contract cases that every adapter must pass.
//! Compiled with the `testing` feature, so that any crate's tests can drive the core
//! without a disk.

pub mod config_schema;
pub mod contract;
pub mod fixtures;
mod memory;
mod memory_events;
mod memory_resources;
mod memory_variants;
mod rng;

pub use memory::{
    FixedClock, MemoryAccounts, MemoryContentStore, MemoryLicense, MemoryPreviewKeys, MemorySessionStore,
    MemorySettings, MemorySnapshots, MemoryStateDocuments, MemoryVersions, MemoryWebhooks, RecordingEvents,
};
pub use memory_events::MemoryEventStore;
pub use memory_resources::MemoryResources;
pub use memory_variants::MemoryVariants;
pub use rng::Rng;

use std::sync::Arc;

use crate::config::SiteConfig;
use crate::service::{Cms, Ports};

/// A small site configuration: collections `posts` (dated, page path `/blog`) and `pages`.
pub const SITE_YAML: &str = "\
site:
  name: Test Site
  url: https://example.com
  per_page: 10
  max_per_page: 50
collections:
  - label: Posts
    path: content/posts
    page_path: /blog
    date_prefix: true
  - label: Pages
    path: content/pages
resources:
  - label: Uploads
    path: media/uploads
    url: /media/uploads
  - label: Documents
    path: media/docs
    url: /files
cors:
  allowed_origins: [https://app.example.com]
versions:
  keep: 5
";

/// In-memory ports with a license that has every feature.
pub struct MemoryWorld {
    pub content: Arc<MemoryContentStore>,
    pub accounts: Arc<MemoryAccounts>,
    pub license: Arc<MemoryLicense>,
    pub events: Arc<RecordingEvents>,
    pub clock: Arc<FixedClock>,
    pub versions: Arc<MemoryVersions>,
    pub resources: Arc<MemoryResources>,
    pub settings: Arc<MemorySettings>,
    pub webhooks: Arc<MemoryWebhooks>,
    pub snapshots: Arc<MemorySnapshots>,
    pub variants: Arc<MemoryVariants>,
    pub event_store: Arc<MemoryEventStore>,
}

impl MemoryWorld {
    pub fn new() -> Self {
        Self {
            content: Arc::default(),
            accounts: Arc::default(),
            license: Arc::new(MemoryLicense::with_features(&[
                "json_api",
                "theme_customization",
                "webhooks",
                "mcp",
            ])),
            events: Arc::default(),
            clock: Arc::new(FixedClock::at_unix(1_767_225_600)), // 2026-01-01T00:00:00Z
            versions: Arc::default(),
            resources: Arc::default(),
            settings: Arc::default(),
            webhooks: Arc::default(),
            snapshots: Arc::default(),
            variants: Arc::default(),
            event_store: Arc::default(),
        }
    }

    pub fn ports(&self) -> Ports {
        Ports {
            content: self.content.clone(),
            users: self.accounts.clone(),
            keys: self.accounts.clone(),
            license: self.license.clone(),
            events: self.events.clone(),
            clock: self.clock.clone(),
            versions: self.versions.clone(),
            resources: self.resources.clone(),
            settings: self.settings.clone(),
            webhooks: self.webhooks.clone(),
            changes: self.content.clone(),
            snapshots: self.snapshots.clone(),
            variants: self.variants.clone(),
            images: Arc::new(crate::ports::NoImageCodec),
            previews: None,
            sharing: crate::ports::Sharing::OneServer,
            event_store: self.event_store.clone(),
        }
    }

    /// A facade over these ports with [`SITE_YAML`], subscribed to the memory store's
    /// changes (hand them over with [`Self::settle`]).
    pub fn cms(&self) -> Cms {
        self.cms_with(SITE_YAML)
    }

    /// The same with another site configuration (e.g. [`SITE_YAML`] with a line added).
    pub fn cms_with(&self, site_yaml: &str) -> Cms {
        self.cms_with_ports(site_yaml, self.ports())
    }

    /// The same over these ports (the world's, some replaced).
    pub fn cms_with_ports(&self, site_yaml: &str, ports: Ports) -> Cms {
        let cms = Cms::builder(&SiteConfig::from_yaml(site_yaml).expect("test site config"), ports).build();
        cms.upkeep().subscribe().expect("the memory store subscribes");
        cms
    }

    /// Applies the changes made "by other programs" since the last call (content, and
    /// the license through [`MemoryLicense::set`]), as the change feed of a real store
    /// would within its delay.
    pub async fn settle(&self, cms: &Cms) {
        cms.upkeep().apply_changes(self.content.take_changes()).await.expect("changes apply");
        cms.reload_license().await.expect("the license reloads");
    }
}

impl Default for MemoryWorld {
    fn default() -> Self {
        Self::new()
    }
}
