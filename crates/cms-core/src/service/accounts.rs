//! Users and API keys.

use crate::account::{self, KEY_RANDOM_BYTES, KeyFamily, KeyRecord, NewKey, Role, User};
use crate::error::{CoreError, CoreResult};
use crate::events::{EventData, EventKind};
use crate::service::Cms;

impl Cms {
    // ---- accounts ----------------------------------------------------------------------

    pub async fn users(&self) -> CoreResult<Vec<User>> {
        self.ports.users.list_users().await
    }

    /// Adds a user or changes an existing user's role. Returns the user and whether it is new.
    pub async fn add_user(&self, email: &str, role: Role) -> CoreResult<(User, bool)> {
        let email = account::parse_email(email)?;
        match self.ports.users.find_user(&email).await? {
            Some(existing) if existing.role == role => Ok((existing, false)),
            Some(existing) => {
                let user = User { role, ..existing };
                self.ports.users.put_user(user.clone()).await?;
                self.publish(EventKind::UserUpdated, EventData::User { email, role: None });
                Ok((user, false))
            }
            None => {
                let user = User { email: email.clone(), role, created: self.now().unix_timestamp() };
                self.ports.users.put_user(user.clone()).await?;
                self.publish(EventKind::UserCreated, EventData::User { email, role: Some(role) });
                Ok((user, true))
            }
        }
    }

    /// Removes a user and every key of theirs.
    pub async fn remove_user(&self, email: &str) -> CoreResult<()> {
        let email = account::parse_email(email)?;
        if !self.ports.users.remove_user(&email).await? {
            return Err(CoreError::not_found(format!("no user {email}")));
        }
        self.ports.keys.remove_keys(&|k| k.email == email).await?;
        self.publish(EventKind::UserDeleted, EventData::User { email, role: None });
        Ok(())
    }

    pub async fn keys(&self) -> CoreResult<Vec<KeyRecord>> {
        self.ports.keys.list_keys().await
    }

    /// Creates a REST key for an existing user from caller-supplied randomness.
    pub async fn create_key(
        &self,
        email: &str,
        name: &str,
        random: [u8; KEY_RANDOM_BYTES],
    ) -> CoreResult<NewKey> {
        self.create_key_of(KeyFamily::Api, email, name, random).await
    }

    /// Creates a key of either family (`api_` or `mcp_`) for an existing user.
    pub async fn create_key_of(
        &self,
        family: KeyFamily,
        email: &str,
        name: &str,
        random: [u8; KEY_RANDOM_BYTES],
    ) -> CoreResult<NewKey> {
        let email = account::parse_email(email)?;
        if self.ports.users.find_user(&email).await?.is_none() {
            return Err(CoreError::not_found(format!("no user {email}; add it with `cms users add` first")));
        }
        let key = NewKey::of_family(family, random, &email, name, self.now().unix_timestamp());
        self.ports.keys.add_key(key.record.clone()).await?;
        Ok(key)
    }

    pub async fn revoke_key(&self, id: &str) -> CoreResult<()> {
        match self.ports.keys.remove_keys(&|k| k.id == id).await? {
            0 => Err(CoreError::not_found(format!("no key with id {id}"))),
            _ => Ok(()),
        }
    }
}
