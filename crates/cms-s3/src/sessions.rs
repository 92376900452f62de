//! The web editor's sessions in the bucket, `.cms/sessions/<SHA-256 of the token>`: read
//! on every request by whichever node it reaches, so that a sign-out on one node ends the
//! session on all of them at once. Use is recorded with a conditional write (`If-Match`),
//! which a removal in between refuses.

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::ports::{SessionStore, StoredSession};

use crate::bucket::Bucket;

const SESSIONS_DIR: &str = ".cms/sessions";

pub struct S3SessionStore {
    bucket: Bucket,
}

impl S3SessionStore {
    pub(crate) fn new(bucket: &Bucket) -> Self {
        Self { bucket: bucket.clone() }
    }
}

/// The object of a record; `None` for a key that is not a SHA-256 in hex (it names none).
fn object(key: &str) -> Option<String> {
    (key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())).then(|| format!("{SESSIONS_DIR}/{key}"))
}

#[async_trait]
impl SessionStore for S3SessionStore {
    async fn get(&self, key: &str) -> CoreResult<Option<StoredSession>> {
        let Some(object) = object(key) else { return Ok(None) };
        Ok(self.bucket.get(&object).await?.map(|(bytes, meta)| StoredSession {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            version: meta.e_tag.unwrap_or_default(),
        }))
    }

    async fn put(&self, key: &str, text: &str) -> CoreResult<()> {
        let Some(object) = object(key) else {
            return Err(cms_core::CoreError::internal("a session", "its key is not a SHA-256"));
        };
        self.bucket.put(&object, text.as_bytes().to_vec()).await.map(drop)
    }

    async fn replace(&self, key: &str, text: &str, version: &str) -> CoreResult<bool> {
        let Some(object) = object(key) else { return Ok(false) };
        if version.is_empty() {
            // A store that gave no ETag cannot say whether the record changed.
            return Ok(false);
        }
        Ok(self.bucket.put_if(&object, text.as_bytes().to_vec(), version).await?.is_ok())
    }

    async fn remove(&self, key: &str) -> CoreResult<()> {
        let Some(object) = object(key) else { return Ok(()) };
        self.bucket.delete(&object).await
    }

    async fn list(&self) -> CoreResult<Vec<(String, i64)>> {
        let (objects, _) = self.bucket.list_dir(SESSIONS_DIR).await?;
        Ok(objects
            .iter()
            .filter_map(|meta| {
                let name = meta.location.filename()?;
                object(name).map(|_| (name.to_owned(), meta.last_modified.timestamp()))
            })
            .collect())
    }
}
