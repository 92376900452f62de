//! Settings: the webhook subscriptions, read-only (they are managed with the CLI).

use crate::account::Role;
use crate::error::CoreResult;
use crate::license::Feature;
use crate::ports::WebhookInfo;
use crate::service::{Cms, Principal};

impl Cms {
    /// The subscriptions, for an owner whose license has the `webhooks` feature. A missing
    /// role or feature is `Forbidden`: on a settings route the plan feature is an access
    /// right like the role (a license without `json_api` is refused before any route).
    pub async fn webhook_settings(&self, principal: &Principal) -> CoreResult<Vec<WebhookInfo>> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.list_webhooks().await
    }
}
