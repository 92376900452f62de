//! Settings: the webhook subscriptions, read-only (they are managed with the CLI).

use crate::account::Role;
use crate::error::{CoreError, CoreResult};
use crate::license::Feature;
use crate::ports::WebhookInfo;
use crate::service::{Cms, Principal};

impl Cms {
    /// The subscriptions, for an owner whose license has the `webhooks` feature. A missing
    /// role or feature is `Forbidden`: on a settings route the plan feature is an access
    /// right like the role (a license without `json_api` is refused before any route).
    pub fn webhook_settings(&self, principal: &Principal) -> CoreResult<Vec<WebhookInfo>> {
        principal.require_role(Role::Owner)?;
        self.require_settings_feature(Feature::Webhooks)?;
        self.ports.webhooks.list_webhooks()
    }

    /// `Forbidden` unless the license is active and has `feature`.
    pub fn require_settings_feature(&self, feature: Feature) -> CoreResult<()> {
        self.require_feature(feature).map_err(|error| match error {
            CoreError::PaymentRequired(message) => CoreError::Forbidden(message),
            other => other,
        })
    }
}
