//! Users and API keys (each call checked against the policy table); passwords and web
//! editor sessions.

use crate::account::{self, KEY_RANDOM_BYTES, KeyFamily, KeyRecord, NewKey, PasswordHash, Role, User};
use crate::error::{CoreError, CoreResult};
use crate::events::{EventData, EventKind};
use crate::policy::{Caller, Operation};
use crate::service::{Cms, Principal};
use crate::session::{Session, Sessions};

/// The `key_id` of a [`Principal`] signed in to the web editor rather than holding a key.
pub const SESSION_KEY_ID: &str = "session";

impl Cms {
    // ---- accounts ----------------------------------------------------------------------

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn users(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Vec<User>> {
        self.authorize(caller, Operation::ListUsers).await?;
        self.ports.users.list_users().await
    }

    /// Adds a user or changes an existing user's role. Returns the user and whether it is new.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn add_user(
        &self,
        caller: impl Into<Caller<'_>>,
        email: &str,
        role: Role,
    ) -> CoreResult<(User, bool)> {
        self.authorize(caller, Operation::ManageUsers).await?;
        let email = account::parse_email(email)?;
        match self.ports.users.find_user(&email).await? {
            Some(existing) if existing.role == role => Ok((existing, false)),
            Some(existing) => {
                if existing.role == Role::Owner {
                    self.refuse_last_owner(&email).await?;
                }
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
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn remove_user(&self, caller: impl Into<Caller<'_>>, email: &str) -> CoreResult<()> {
        self.authorize(caller, Operation::ManageUsers).await?;
        let email = account::parse_email(email)?;
        if self.ports.users.find_user(&email).await?.is_some_and(|user| user.role == Role::Owner) {
            self.refuse_last_owner(&email).await?;
        }
        if !self.ports.users.remove_user(&email).await? {
            return Err(CoreError::not_found(format!("no user {email}")));
        }
        self.ports.keys.remove_keys(&|k| k.email == email).await?;
        self.publish(EventKind::UserDeleted, EventData::User { email, role: None });
        Ok(())
    }

    /// Refuses to leave the site without an owner (every surface: the editor, the CLI): the
    /// owner `email` may lose that role, or be removed, only while another owner remains.
    async fn refuse_last_owner(&self, email: &str) -> CoreResult<()> {
        let users = self.ports.users.list_users().await?;
        if users.iter().any(|user| user.role == Role::Owner && user.email != email) {
            return Ok(());
        }
        Err(CoreError::invalid(format!("{email} is the only owner; make another user an owner first")))
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn keys(&self, caller: impl Into<Caller<'_>>) -> CoreResult<Vec<KeyRecord>> {
        self.authorize(caller, Operation::ManageKeys).await?;
        self.ports.keys.list_keys().await
    }

    /// Creates a REST key for an existing user from caller-supplied randomness.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_key(
        &self,
        caller: impl Into<Caller<'_>>,
        email: &str,
        name: &str,
        random: [u8; KEY_RANDOM_BYTES],
    ) -> CoreResult<NewKey> {
        self.create_key_of(caller, KeyFamily::Api, email, name, random).await
    }

    /// Creates a key of either family (`api_` or `mcp_`) for an existing user.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_key_of(
        &self,
        caller: impl Into<Caller<'_>>,
        family: KeyFamily,
        email: &str,
        name: &str,
        random: [u8; KEY_RANDOM_BYTES],
    ) -> CoreResult<NewKey> {
        self.authorize(caller, Operation::ManageKeys).await?;
        let email = account::parse_email(email)?;
        if self.ports.users.find_user(&email).await?.is_none() {
            return Err(CoreError::not_found(format!("no user {email}; add it with `cms users add` first")));
        }
        let key = NewKey::of_family(family, random, &email, name, self.now().unix_timestamp());
        self.ports.keys.add_key(key.record.clone()).await?;
        Ok(key)
    }

    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn revoke_key(&self, caller: impl Into<Caller<'_>>, id: &str) -> CoreResult<()> {
        self.authorize(caller, Operation::ManageKeys).await?;
        match self.ports.keys.remove_keys(&|k| k.id == id).await? {
            0 => Err(CoreError::not_found(format!("no key with id {id}"))),
            _ => Ok(()),
        }
    }

    // ---- passwords and sessions ---------------------------------------------------------

    /// Sets a user's password, hashed beforehand with [`account::hash_password`] (slow on
    /// purpose, so the caller chooses the thread). Sessions started with the old password
    /// end on their next request.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn set_password(
        &self,
        caller: impl Into<Caller<'_>>,
        email: &str,
        hash: &PasswordHash,
    ) -> CoreResult<()> {
        self.authorize(caller, Operation::ManageUsers).await?;
        let email = account::parse_email(email)?;
        if self.ports.users.set_password_hash(&email, hash.as_str()).await? {
            Ok(())
        } else {
            Err(CoreError::not_found(format!("no user {email}; add it with `cms users add` first")))
        }
    }

    /// A user and their password hash, to check a sign-in (verify it off the async workers
    /// with [`account::verify_password`]). An address that is not an email has no user.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn user_credentials(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        match account::parse_email(email) {
            Ok(email) => self.ports.users.find_user_with_password(&email).await,
            Err(_) => Ok(None),
        }
    }

    /// Starts a web editor session for a user whose password was just verified against
    /// `password_hash`; randomness comes from the caller.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn start_session(
        &self,
        sessions: &Sessions,
        user: &User,
        password_hash: Option<&str>,
        token_random: [u8; crate::session::TOKEN_RANDOM_BYTES],
        csrf_random: [u8; crate::session::TOKEN_RANDOM_BYTES],
    ) -> CoreResult<crate::session::NewSession> {
        sessions.start(user, password_hash, token_random, csrf_random, self.now()).await
    }

    /// The signed-in user behind a session token, as stored now (so a role change shows at
    /// once); `None` once the session has expired or ended, or its user was removed or
    /// changed password (the session is then removed).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn resume_session(
        &self,
        sessions: &Sessions,
        token: &str,
    ) -> CoreResult<Option<(Principal, Session)>> {
        let Some(session) = sessions.resume(token, self.now()).await? else { return Ok(None) };
        match self.ports.users.find_user_with_password(&session.email).await? {
            Some((user, hash)) if session.stands_for(&user, hash.as_deref()) => {
                Ok(Some((Principal { user, key_id: SESSION_KEY_ID.to_owned(), key_name: None }, session)))
            }
            _ => {
                sessions.end(token).await?;
                Ok(None)
            }
        }
    }
}
