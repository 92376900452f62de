//! Settings: the webhook subscriptions (listed on the REST API; managed with the CLI and
//! in the web editor).

use crate::error::CoreResult;
use crate::policy::{Caller, Operation};
use crate::ports::{WebhookDelivery, WebhookInfo};
use crate::service::Cms;

impl Cms {
    /// The subscriptions. Each call here is `ManageWebhooks` in the policy table (owner,
    /// `webhooks`; a missing role or feature is `Forbidden`).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn webhook_settings(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Vec<WebhookInfo>> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        self.ports.webhooks.list_webhooks().await
    }

    /// Adds a subscription; returns it with its signing secret (shown once).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn add_webhook(
        &self,
        caller: impl Into<Caller<'_>>,
        url: &str,
        events: &str,
    ) -> CoreResult<(WebhookInfo, String)> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        self.ports.webhooks.add_webhook(url, events).await
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn set_webhook_enabled(
        &self,
        caller: impl Into<Caller<'_>>,
        id: &str,
        enabled: bool,
    ) -> CoreResult<()> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        self.ports.webhooks.set_webhook_enabled(id, enabled).await
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn remove_webhook(&self, caller: impl Into<Caller<'_>>, id: &str) -> CoreResult<()> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        self.ports.webhooks.remove_webhook(id).await
    }

    /// The delivery log, newest first.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn webhook_log(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Vec<WebhookDelivery>> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        let mut log = self.ports.webhooks.webhook_log().await?;
        log.reverse();
        Ok(log)
    }

    /// Empties the delivery log; returns how many entries went.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn clear_webhook_log(&self, caller: impl Into<Caller<'_>>) -> CoreResult<usize> {
        self.authorize(caller, Operation::ManageWebhooks).await?;
        self.ports.webhooks.clear_webhook_log().await
    }
}
