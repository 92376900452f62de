//! Settings routes: the theme (owner, `theme_customization`) and the users listing (admin).

use serde_json::{Map, Value};

use super::{Cms, Principal, lock};
use crate::account::{Role, User};
use crate::error::{CoreError, CoreResult};
use crate::license::Feature;
use crate::theme;

impl Cms {
    /// Checks a settings route's role and plan feature. A missing feature is `Forbidden`
    /// here (the license still has `json_api`, or the request would not have got this far).
    pub fn require_setting(
        &self,
        principal: &Principal,
        role: Role,
        feature: Option<Feature>,
    ) -> CoreResult<()> {
        principal.require_role(role)?;
        if let Some(feature) = feature
            && !self.license_state()?.has(feature)
        {
            return Err(CoreError::Forbidden(format!(
                "this route needs the {} plan feature, which the license does not include",
                feature.as_str()
            )));
        }
        Ok(())
    }

    /// The theme: what is stored, over the defaults.
    pub fn theme(&self) -> CoreResult<Map<String, Value>> {
        Ok(theme::complete(self.ports.settings.load_theme()?, &self.site.name))
    }

    /// Sets any subset of the theme fields; the others stay as they are.
    pub fn update_theme(&self, patch: Map<String, Value>) -> CoreResult<Map<String, Value>> {
        theme::validate(&patch)?;
        let _guard = lock(&self.settings_lock);
        let mut current = self.theme()?;
        current.extend(patch);
        self.ports.settings.save_theme(&current)?;
        Ok(current)
    }

    /// Users for the read-only settings listing, owners first.
    pub fn users_by_role(&self) -> CoreResult<Vec<User>> {
        let mut users = self.users()?;
        users.sort_by(|a, b| b.role.cmp(&a.role).then_with(|| a.email.cmp(&b.email)));
        Ok(users)
    }
}
