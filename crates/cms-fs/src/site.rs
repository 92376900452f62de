use std::path::Path;
use std::sync::Arc;

use cms_core::ports::{Clock, EventSink, WebhookDirectory};
use cms_core::service::Ports;

use crate::{
    FsAccounts, FsChangeSource, FsContentStore, FsLicense, FsResourceStore, FsSettings, FsSnapshots,
    FsVariantStore, FsVersionStore, STATE_DIR,
};

/// The ports a site folder provides. Events, time and the webhook directory are not the
/// folder's business, so the caller passes them in.
pub fn site_ports(
    site: &Path,
    events: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    webhooks: Arc<dyn WebhookDirectory>,
) -> Ports {
    let state = site.join(STATE_DIR);
    let accounts = Arc::new(FsAccounts::new(&state));
    let content = FsContentStore::new(site);
    Ports {
        content: Arc::new(content.clone()),
        users: accounts.clone(),
        keys: accounts,
        license: Arc::new(FsLicense::new(&state)),
        events,
        clock,
        versions: Arc::new(FsVersionStore::new(&state).linking_items_of(content)),
        resources: Arc::new(FsResourceStore::new(site, &state)),
        settings: Arc::new(FsSettings::new(&state)),
        webhooks,
        changes: Arc::new(FsChangeSource::new(site)),
        snapshots: Arc::new(FsSnapshots::new(&state)),
        variants: Arc::new(FsVariantStore::new(&state)),
        // No codec here: decoding is CPU work, not the folder's; the composition root
        // puts one in (the `cms-images` pool).
        images: Arc::new(cms_core::images::NoImageCodec),
    }
}
