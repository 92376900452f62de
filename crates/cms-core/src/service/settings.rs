//! Settings: the theme (owner, `theme_customization`) and the users listing (admin).

use serde_json::{Map, Value};

use super::Cms;
use crate::account::User;
use crate::error::CoreResult;
use crate::policy::{Caller, Operation};
use crate::theme;

impl Cms {
    /// The theme: what is stored, over the defaults.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn theme(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Map<String, Value>> {
        self.authorize(caller, Operation::EditTheme).await?;
        self.stored_theme().await
    }

    async fn stored_theme(&self) -> CoreResult<Map<String, Value>> {
        Ok(theme::complete(self.ports.settings.load_theme().await?, &self.site.name))
    }

    /// Sets any subset of the theme fields; the others stay as they are.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn update_theme(
        &self,
        caller: impl Into<Caller<'_>>,
        patch: Map<String, Value>,
    ) -> CoreResult<Map<String, Value>> {
        self.authorize(caller, Operation::EditTheme).await?;
        theme::validate(&patch)?;
        let _guard = self.settings_lock.lock().await;
        let mut current = self.stored_theme().await?;
        current.extend(patch);
        self.ports.settings.save_theme(&current).await?;
        Ok(current)
    }

    /// Users for the read-only settings listing, owners first.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn users_by_role(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Vec<User>> {
        let mut users = self.users(caller).await?;
        users.sort_by(|a, b| b.role.cmp(&a.role).then_with(|| a.email.cmp(&b.email)));
        Ok(users)
    }
}
