//! Small state objects under `.cms/` (users, keys, license, theme, the preview key): kept
//! decoded in memory and re-validated with the store (a conditional GET: `304` when
//! unchanged) once they are older than `max_age`, so that a change made on another node
//! applies here within that bound without a request to the store per API request.
//! Changes are read-modify-write cycles with `If-Match` (or `If-None-Match: *` for a new
//! object), repeated when another node wrote in between: no node's change is lost.

use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Bumped by every write here: a fetch that began before a write must not keep what it
    /// read (this node reads its own writes).
    generation: AtomicU64,
}

struct Cached<T> {
    etag: Option<String>,
    value: Arc<T>,
    checked: Instant,
}

impl<T: Send + Sync + 'static> StateObject<T> {
    pub(crate) fn new(bucket: Bucket, key: String, max_age: Duration, decode: Decode<T>) -> Self {
        Self { bucket, key, max_age, decode, cache: Mutex::new(None), generation: AtomicU64::new(0) }
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The value, fetched again only when the one kept is older than `max_age` and the
    /// object changed since.
    pub(crate) async fn get(&self) -> CoreResult<Arc<T>> {
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            let known_etag = {
                let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                match cache.as_ref() {
                    Some(cached) if cached.checked.elapsed() < self.max_age => {
                        return Ok(cached.value.clone());
                    }
                    Some(cached) => cached.etag.clone(),
                    None => None,
                }
            };
            let fetched = self.bucket.get_unless(&self.key, known_etag).await?;
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            let (etag, value) = match fetched {
                Some((None, _)) => match cache.as_mut() {
                    Some(cached) => {
                        cached.checked = Instant::now();
                        return Ok(cached.value.clone());
                    }
                    // Not modified, but forgotten by a write here meanwhile: ask again,
                    // without a condition.
                    None => continue,
                },
                Some((Some(bytes), meta)) => (meta.e_tag, Arc::new((self.decode)(&self.key, Some(&bytes))?)),
                None => (None, Arc::new((self.decode)(&self.key, None)?)),
            };
            if self.generation.load(Ordering::Acquire) == generation {
                *cache = Some(Cached { etag, value: value.clone(), checked: Instant::now() });
            }
            return Ok(value);
        }
    }

    /// Forgets the value kept, so that the next `get` asks the store.
    pub(crate) fn expire(&self) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        *cache = None;
    }

    /// Applies `change` to the current bytes (`None`: no object yet) and writes the result
    /// if the object is still the one read; `change` returns the new bytes (`None`: write
    /// nothing) and what to answer.
    pub(crate) async fn update<R>(
        &self,
        mut change: impl FnMut(Option<&[u8]>) -> CoreResult<(Option<Vec<u8>>, R)>,
    ) -> CoreResult<R> {
        for attempt in 0..MAX_ATTEMPTS {
            let current = self.bucket.get(&self.key).await?;
            let (bytes, answer) = change(current.as_ref().map(|(bytes, _)| bytes.as_slice()))?;
            let Some(bytes) = bytes else {
                // Nothing to write, but what was read may be newer than what is kept.
                self.expire();
                return Ok(answer);
            };
            let written = match current.as_ref().and_then(|(_, meta)| meta.e_tag.as_deref()) {
                Some(etag) => self.bucket.put_if(&self.key, bytes, etag).await?,
                None => self.bucket.put_new(&self.key, bytes).await?,
            };
            match written {
                Ok(_) => {
                    self.expire();
                    return Ok(answer);
                }
                Err(WriteRefused::Changed | WriteRefused::Exists) => {
                    // Another writer won: wait a little, longer each time, with jitter,
                    // so that writers on several nodes do not collide again and again.
                    let jitter = u64::from(time::OffsetDateTime::now_utc().nanosecond() % 10);
                    let pause = Duration::from_millis((5 + jitter) * (attempt as u64 + 1));
                    self.bucket
                        .run(async move {
                            tokio::time::sleep(pause).await;
                            Ok(())
                        })
                        .await?;
                }
            }
        }
        Err(CoreError::Stale(format!("{} kept changing while it was being written; try again", self.key)))
    }
}
