//! Small state objects under `.cms/` (users, keys, license, theme, the preview key): kept
//! decoded in memory and re-validated with the store (a conditional GET: `304` when
//! unchanged) once they are older than `max_age`, so that a change made on another node
//! applies here within that bound without a request to the store per API request.
//! Changes are read-modify-write cycles with `If-Match` (or `If-None-Match: *` for a new
//! object), repeated when another node wrote in between: no node's change is lost.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cms_core::{CoreError, CoreResult};

use crate::bucket::{Bucket, WriteRefused};

/// Read-modify-write cycles tried before giving up (each lost one means another node
/// wrote the object meanwhile).
const MAX_ATTEMPTS: usize = 16;

/// Turns an object's bytes into the value kept (`None` for an absent object).
pub(crate) type Decode<T> = fn(&str, Option<&[u8]>) -> CoreResult<T>;

pub(crate) struct StateObject<T> {
    bucket: Bucket,
    key: String,
    max_age: Duration,
    decode: Decode<T>,
    cache: Mutex<Option<Cached<T>>>,
}

struct Cached<T> {
    etag: Option<String>,
    value: Arc<T>,
    checked: Instant,
}

impl<T: Send + Sync + 'static> StateObject<T> {
    pub(crate) fn new(bucket: Bucket, key: String, max_age: Duration, decode: Decode<T>) -> Self {
        Self { bucket, key, max_age, decode, cache: Mutex::new(None) }
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The value, fetched again only when the one kept is older than `max_age` and the
    /// object changed since.
    pub(crate) async fn get(&self) -> CoreResult<Arc<T>> {
        let known_etag = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            match cache.as_ref() {
                Some(cached) if cached.checked.elapsed() < self.max_age => return Ok(cached.value.clone()),
                Some(cached) => cached.etag.clone(),
                None => None,
            }
        };
        let fetched = self.bucket.get_unless(&self.key, known_etag).await?;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        match fetched {
            // Not modified.
            Some((None, _)) if cache.is_some() => {
                let cached = cache.as_mut().expect("checked");
                cached.checked = Instant::now();
                Ok(cached.value.clone())
            }
            Some((bytes, meta)) => {
                let value = Arc::new((self.decode)(&self.key, Some(bytes.as_deref().unwrap_or_default()))?);
                *cache = Some(Cached { etag: meta.e_tag, value: value.clone(), checked: Instant::now() });
                Ok(value)
            }
            None => {
                let value = Arc::new((self.decode)(&self.key, None)?);
                *cache = Some(Cached { etag: None, value: value.clone(), checked: Instant::now() });
                Ok(value)
            }
        }
    }

    /// Forgets the value kept, so that the next `get` asks the store.
    pub(crate) fn expire(&self) {
        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Applies `change` to the current bytes (`None`: no object yet) and writes the result
    /// if the object is still the one read; `change` returns the new bytes (`None`: write
    /// nothing) and what to answer.
    pub(crate) async fn update<R>(
        &self,
        mut change: impl FnMut(Option<&[u8]>) -> CoreResult<(Option<Vec<u8>>, R)>,
    ) -> CoreResult<R> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.bucket.get(&self.key).await?;
            let (bytes, answer) = change(current.as_ref().map(|(bytes, _)| bytes.as_slice()))?;
            let Some(bytes) = bytes else { return Ok(answer) };
            let written = match current.as_ref().and_then(|(_, meta)| meta.e_tag.as_deref()) {
                Some(etag) => self.bucket.put_if(&self.key, bytes, etag).await?,
                None => self.bucket.put_new(&self.key, bytes).await?,
            };
            match written {
                Ok(_) => {
                    self.expire();
                    return Ok(answer);
                }
                Err(WriteRefused::Changed | WriteRefused::Exists) => continue,
            }
        }
        Err(CoreError::Stale(format!("{} kept changing while it was being written; try again", self.key)))
    }
}
