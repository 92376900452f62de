//! Settings routes: the theme (owner, `theme_customization`) and the users listing (admin).

use serde_json::{Map, Value};

use super::{Cms, Principal};
use crate::account::{Role, User};
use crate::error::{CoreError, CoreResult};
use crate::license::Feature;
use crate::theme;

impl Cms {
    /// Checks a settings route's role and plan feature. A missing feature is `Forbidden`
    /// here (the license still has `json_api`, or the request would not have got this far).
    pub async fn require_setting(
        &self,
        principal: &Principal,
        role: Role,
        feature: Option<Feature>,
    ) -> CoreResult<()> {
        principal.require_role(role)?;
        if let Some(feature) = feature
            && !self.license_state().await?.has(feature)
        {
            return Err(CoreError::Forbidden(format!(
                "this route needs the {} plan feature, which the license does not include",
                feature.as_str()
            )));
        }
        Ok(())
    }

    /// The theme: what is stored, over the defaults.
    pub async fn theme(&self) -> CoreResult<Map<String, Value>> {
        Ok(theme::complete(self.ports.settings.load_theme().await?, &self.site.name))
    }

    /// Sets any subset of the theme fields; the others stay as they are.
    pub async fn update_theme(&self, patch: Map<String, Value>) -> CoreResult<Map<String, Value>> {
        theme::validate(&patch)?;
        let _guard = self.settings_lock.lock().await;
        let mut current = self.theme().await?;
        current.extend(patch);
        self.ports.settings.save_theme(&current).await?;
        Ok(current)
    }

    /// Users for the read-only settings listing, owners first.
    pub async fn users_by_role(&self) -> CoreResult<Vec<User>> {
        let mut users = self.users().await?;
        users.sort_by(|a, b| b.role.cmp(&a.role).then_with(|| a.email.cmp(&b.email)));
        Ok(users)
    }
}
