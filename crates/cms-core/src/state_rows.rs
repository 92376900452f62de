//! The stored form of accounts (`.cms/users.yaml`, `.cms/keys.yaml`): the same rows
//! whatever the store, so that a site folder and a bucket hold the same files. Stores
//! read and write the rows; the edits on them are here, once.

use serde::{Deserialize, Serialize};

use crate::account::{KeyRecord, Role, User};
use crate::{CoreError, CoreResult};

pub const USERS_FILE: &str = "users.yaml";
pub const KEYS_FILE: &str = "keys.yaml";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserRow {
    pub email: String,
    pub role: String,
    pub created: i64,
    /// The argon2id hash (PHC string) of the web editor password, when one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl UserRow {
    /// The user, or `Corrupt` naming `file` when the role is unknown.
    pub fn user(&self, file: &str) -> CoreResult<User> {
        let role: Role =
            self.role.parse().map_err(|e: CoreError| CoreError::Corrupt(format!("{file}: {e}")))?;
        Ok(User { email: self.email.clone(), role, created: self.created })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub email: String,
    pub sha256: String,
    pub created: i64,
}

impl From<KeyRecord> for KeyRow {
    fn from(k: KeyRecord) -> Self {
        Self { id: k.id, name: k.name, email: k.email, sha256: k.hash, created: k.created }
    }
}

impl From<KeyRow> for KeyRecord {
    fn from(r: KeyRow) -> Self {
        Self { id: r.id, name: r.name, email: r.email, hash: r.sha256, created: r.created }
    }
}

/// Adds or replaces a user; a replaced user keeps their password.
pub fn put_user(rows: &mut Vec<UserRow>, user: User) {
    let mut row =
        UserRow { email: user.email, role: user.role.as_str().into(), created: user.created, password: None };
    match rows.iter_mut().find(|r| r.email == row.email) {
        Some(existing) => {
            row.password = existing.password.take();
            *existing = row;
        }
        None => rows.push(row),
    }
}

/// Sets a user's password hash; `false` (nothing changed) without such a user.
pub fn set_password_hash(rows: &mut [UserRow], email: &str, hash: String) -> bool {
    let Some(row) = rows.iter_mut().find(|r| r.email == email) else { return false };
    row.password = Some(hash);
    true
}

/// Removes a user; `false` (nothing changed) without such a user.
pub fn remove_user(rows: &mut Vec<UserRow>, email: &str) -> bool {
    let before = rows.len();
    rows.retain(|r| r.email != email);
    rows.len() != before
}
