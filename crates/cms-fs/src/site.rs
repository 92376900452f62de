use std::path::Path;
use std::sync::Arc;

use cms_core::Ports;
use cms_core::ports::{Clock, EventSink, Sharing, SiteStorage, WebhookDirectory};

use crate::{
    FsAccounts, FsChangeSource, FsContentStore, FsEventStore, FsLicense, FsPreviewKeys, FsResourceStore,
    FsSessionStore, FsSettings, FsSnapshots, FsStateDocuments, FsVariantStore, FsVersionStore, STATE_DIR,
};

/// Opens the site folder `site` as a backend: every port on its files (its `.cms/` for
/// the state). Events, time, the webhook directory and the image codec are not the
/// folder's business: the composition root adds them.
pub fn open(site: &Path) -> SiteStorage {
    let state = site.join(STATE_DIR);
    let accounts = Arc::new(FsAccounts::new(&state));
    let content = FsContentStore::new(site);
    SiteStorage {
        content: Arc::new(content.clone()),
        users: accounts.clone(),
        keys: accounts,
        license: Arc::new(FsLicense::new(&state)),
        versions: Arc::new(FsVersionStore::new(&state).linking_items_of(content)),
        resources: Arc::new(FsResourceStore::new(site, &state)),
        settings: Arc::new(FsSettings::new(&state)),
        changes: Arc::new(FsChangeSource::new(site)),
        snapshots: Arc::new(FsSnapshots::new(&state)),
        variants: Arc::new(FsVariantStore::new(&state)),
        previews: Arc::new(FsPreviewKeys::new(&state)),
        sessions: Arc::new(FsSessionStore::new(&state)),
        state: Arc::new(FsStateDocuments::new(&state)),
        sharing: Sharing::OneServer,
        events: Arc::new(FsEventStore::new(&state)),
        description: format!("site folder: {}", site.display()),
        readings: Vec::new(),
    }
}

/// The facade's ports on a site folder, for tests and tools: [`open`] with the given
/// events, clock and webhook directory.
pub fn site_ports(
    site: &Path,
    events: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    webhooks: Arc<dyn WebhookDirectory>,
) -> Ports {
    Ports::of_storage(&open(site), events, clock, webhooks)
}
