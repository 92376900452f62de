//! Serialized answers kept by the version of what they show, so that a repeated list page
//! or item read costs a lookup and a copy instead of building and escaping its JSON.
//!
//! Keys are versions that change whenever the answer would (a list page's version from
//! the index, an item's ETag and stamp), so an entry is never stale: a changed collection
//! simply asks for other keys, and old entries age out first-in, first-out within a byte
//! budget. [`Builds`] lets one request at a time make an entry that is not kept yet.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::web::Bytes;
use futures_util::lock::{Mutex as AsyncMutex, MutexGuard as AsyncMutexGuard};

/// Answers' bodies up to (not including) their `timestamp`, by version.
pub struct BodyCache {
    inner: Mutex<Inner>,
    /// Requests' first lookups that found their answer, and that did not ([`Self::note`]).
    hits: AtomicU64,
    misses: AtomicU64,
    budget: usize,
    /// The largest body kept: one huge answer must not flush everything else.
    largest: usize,
}

#[derive(Default)]
struct Inner {
    bodies: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
    bytes: usize,
}

/// What a cache did since the start and holds now (for `/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
    pub entries: u64,
}

impl BodyCache {
    /// A cache of `budget` bytes that keeps bodies of up to `budget / share` bytes.
    pub fn new(budget: usize, share: usize) -> Self {
        Self {
            inner: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            budget,
            largest: budget / share.max(1),
        }
    }

    pub fn get(&self, key: u64) -> Option<Bytes> {
        self.lock().bodies.get(&key).cloned()
    }

    /// Counts a request's first lookup of its answer, found or not (one per request,
    /// whatever the lookups it makes).
    pub fn note(&self, found: bool) {
        let counter = if found { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: inner.bytes as u64,
            entries: inner.bodies.len() as u64,
        }
    }

    /// Whether a body of `len` bytes would be kept.
    pub fn keeps(&self, len: usize) -> bool {
        len <= self.largest
    }

    pub fn put(&self, key: u64, body: Bytes) {
        if !self.keeps(body.len()) {
            return;
        }
        let mut inner = self.lock();
        let size = body.len();
        if inner.bodies.insert(key, body).is_none() {
            inner.order.push_back(key);
            inner.bytes += size;
        }
        while inner.bytes > self.budget {
            let Some(oldest) = inner.order.pop_front() else { break };
            if let Some(gone) = inner.bodies.remove(&oldest) {
                inner.bytes -= gone.len();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Entries are whole values: a panic elsewhere cannot leave one half-written.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How many documents may be made at once (requests for documents that share a slot,
/// by their version, wait for each other).
const BUILD_SLOTS: usize = 16;

/// The slots of [`crate::documents::answer`]: one making of a document at a time per slot, so that many
/// requests for a document not kept yet make it once, and the work and memory of making
/// documents are bounded whatever the number of requests. Measured at 100,000 items: 32
/// connections asking for the gzipped sitemap of 50,000 URLs (7 MB plain) just after a
/// start each compressed it, and the server's peak memory went from 270 to 400 MB.
pub struct Builds([AsyncMutex<()>; BUILD_SLOTS]);

impl Default for Builds {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AsyncMutex::new(())))
    }
}

impl Builds {
    /// Waits for the slot of the document `version`.
    pub async fn one_at_a_time(&self, version: u64) -> AsyncMutexGuard<'_, ()> {
        self.0[(version % BUILD_SLOTS as u64) as usize].lock().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_the_budget() {
        let cache = BodyCache::new(800, 8);
        for key in 0..20u64 {
            cache.put(key, Bytes::from(vec![b'x'; 100]));
        }
        assert!(cache.get(19).is_some() && cache.get(12).is_some());
        assert!(cache.get(11).is_none(), "the oldest went");
        cache.put(99, Bytes::from(vec![b'x'; 101]));
        assert!(cache.get(99).is_none(), "an answer over an eighth of the budget is not kept");
        assert_eq!(cache.lock().bytes, 800);
        cache.note(true);
        cache.note(false);
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 1, bytes: 800, entries: 8 });
    }
}
