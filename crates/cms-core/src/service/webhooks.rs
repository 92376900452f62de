//! Settings: the webhook subscriptions (listed on the REST API; managed with the CLI and
//! in the web editor).

use crate::account::Role;
use crate::error::CoreResult;
use crate::license::Feature;
use crate::ports::{WebhookDelivery, WebhookInfo};
use crate::service::{Cms, Principal};

impl Cms {
    /// The subscriptions, for an owner whose license has the `webhooks` feature. A missing
    /// role or feature is `Forbidden`: on a settings route the plan feature is an access
    /// right like the role (a license without `json_api` is refused before any route).
    pub async fn webhook_settings(&self, principal: &Principal) -> CoreResult<Vec<WebhookInfo>> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.list_webhooks().await
    }

    /// Adds a subscription; returns it with its signing secret (shown once).
    pub async fn add_webhook(
        &self,
        principal: &Principal,
        url: &str,
        events: &str,
    ) -> CoreResult<(WebhookInfo, String)> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.add_webhook(url, events).await
    }

    pub async fn set_webhook_enabled(
        &self,
        principal: &Principal,
        id: &str,
        enabled: bool,
    ) -> CoreResult<()> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.set_webhook_enabled(id, enabled).await
    }

    pub async fn remove_webhook(&self, principal: &Principal, id: &str) -> CoreResult<()> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.remove_webhook(id).await
    }

    /// The delivery log, newest first.
    pub async fn webhook_log(&self, principal: &Principal) -> CoreResult<Vec<WebhookDelivery>> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        let mut log = self.ports.webhooks.webhook_log().await?;
        log.reverse();
        Ok(log)
    }

    /// Empties the delivery log; returns how many entries went.
    pub async fn clear_webhook_log(&self, principal: &Principal) -> CoreResult<usize> {
        self.require_setting(principal, Role::Owner, Some(Feature::Webhooks)).await?;
        self.ports.webhooks.clear_webhook_log().await
    }
}
