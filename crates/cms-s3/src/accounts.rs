//! Users in `.cms/users.yaml`, key hashes in `.cms/keys.yaml`, in the rows a site folder
//! uses ([`cms_core::state_rows`]). Kept in memory and re-validated at most every
//! [`crate::S3Settings::state_max_age`]: that is how soon a key revoked on another node
//! stops working here.

use std::time::Duration;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::account::{KeyRecord, User};
use cms_core::codec::{self, YamlLimits};
use cms_core::ports::{KeyStore, UserStore};
use cms_core::state_rows::{self, KEYS_FILE, KeyRow, USERS_FILE, UserRow};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bucket::Bucket;
use crate::error::S3Error;
use crate::state::StateObject;

pub struct S3Accounts {
    users: StateObject<Vec<UserRow>>,
    keys: StateObject<Vec<KeyRow>>,
}

impl S3Accounts {
    pub(crate) fn new(bucket: &Bucket, max_age: Duration) -> Self {
        Self {
            users: StateObject::new(bucket.clone(), format!(".cms/{USERS_FILE}"), max_age, decode_rows),
            keys: StateObject::new(bucket.clone(), format!(".cms/{KEYS_FILE}"), max_age, decode_rows),
        }
    }
}

/// The rows of a state object; absent or empty has none.
fn decode_rows<T: DeserializeOwned>(key: &str, bytes: Option<&[u8]>) -> CoreResult<Vec<T>> {
    let text = std::str::from_utf8(bytes.unwrap_or_default())
        .map_err(|_| S3Error::State { key: key.to_owned(), message: "not UTF-8 text".into() })?;
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    codec::from_yaml(text, YamlLimits::STATE)
        .map_err(|e| S3Error::State { key: key.to_owned(), message: e.to_string() }.into())
}

fn encode_rows<T: Serialize>(rows: &[T]) -> CoreResult<Vec<u8>> {
    let text = if rows.is_empty() { "[]\n".to_owned() } else { codec::to_yaml(&rows)? };
    Ok(text.into_bytes())
}

/// A read-modify-write of a rows object: `edit` says whether it changed anything.
async fn edit_rows<T, R>(
    object: &StateObject<Vec<T>>,
    mut edit: impl FnMut(&mut Vec<T>) -> (bool, R) + Send,
) -> CoreResult<R>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    object
        .update(|bytes| {
            let mut rows: Vec<T> = decode_rows(object.key(), bytes)?;
            let (changed, answer) = edit(&mut rows);
            Ok((if changed { Some(encode_rows(&rows)?) } else { None }, answer))
        })
        .await
}

#[async_trait]
impl UserStore for S3Accounts {
    async fn list_users(&self) -> CoreResult<Vec<User>> {
        let rows = self.users.get().await?;
        rows.iter().map(|row| row.user(self.users.key())).collect()
    }

    async fn put_user(&self, user: User) -> CoreResult<()> {
        edit_rows(&self.users, |rows| {
            state_rows::put_user(rows, user.clone());
            (true, ())
        })
        .await
    }

    async fn remove_user(&self, email: &str) -> CoreResult<bool> {
        edit_rows(&self.users, |rows| {
            let removed = state_rows::remove_user(rows, email);
            (removed, removed)
        })
        .await
    }

    async fn find_user_with_password(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        let rows = self.users.get().await?;
        match rows.iter().find(|r| r.email == email) {
            Some(row) => Ok(Some((row.user(self.users.key())?, row.password.clone()))),
            None => Ok(None),
        }
    }

    async fn set_password_hash(&self, email: &str, hash: &str) -> CoreResult<bool> {
        edit_rows(&self.users, |rows| {
            let set = state_rows::set_password_hash(rows, email, hash.to_owned());
            (set, set)
        })
        .await
    }
}

#[async_trait]
impl KeyStore for S3Accounts {
    async fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        Ok(self.keys.get().await?.iter().cloned().map(KeyRecord::from).collect())
    }

    async fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        edit_rows(&self.keys, |rows| {
            rows.push(KeyRow::from(key.clone()));
            (true, ())
        })
        .await
    }

    async fn remove_keys(
        &self,
        doomed: &(dyn for<'k> Fn(&'k KeyRecord) -> bool + Send + Sync),
    ) -> CoreResult<usize> {
        edit_rows(&self.keys, |rows| {
            let before = rows.len();
            rows.retain(|row| !doomed(&KeyRecord::from(row.clone())));
            let removed = before - rows.len();
            (removed > 0, removed)
        })
        .await
    }

    /// From the keys kept in memory: no request to the store per API request.
    async fn find_key_by_hash(&self, hash: &str) -> CoreResult<Option<KeyRecord>> {
        Ok(self.keys.get().await?.iter().find(|k| k.sha256 == hash).cloned().map(KeyRecord::from))
    }
}
