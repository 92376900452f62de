//! Per-item write serialization: writes to one item queue behind each other, writes to
//! different items run in parallel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::lock::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::lock;

type Key = (usize, String);

/// Async locks keyed by collection and slug, made on demand and dropped when unused, so
/// that 100,000 items cost nothing until written.
#[derive(Default)]
pub(super) struct ItemLocks {
    held: Arc<Mutex<HashMap<Key, Arc<AsyncMutex<()>>>>>,
}

/// Holds one item's lock until dropped.
pub(super) struct ItemGuard {
    guard: Option<OwnedMutexGuard<()>>,
    key: Key,
    held: Arc<Mutex<HashMap<Key, Arc<AsyncMutex<()>>>>>,
}

impl ItemLocks {
    /// Waits for the lock of item `slug` in collection number `collection`. Keyed by slug,
    /// not filename: a dated and an undated file with one slug are one item to the API.
    pub(super) async fn lock(&self, collection: usize, slug: &str) -> ItemGuard {
        let key = (collection, slug.to_owned());
        let mutex = Arc::clone(lock(&self.held).entry(key.clone()).or_default());
        let guard = mutex.lock_owned().await;
        ItemGuard { guard: Some(guard), key, held: Arc::clone(&self.held) }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.held).len()
    }
}

impl Drop for ItemGuard {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        self.guard = None;
        // Only the map holds it now: nobody waits, so the entry can go. New waiters clone
        // under the map lock, which is held here.
        if held.get(&self.key).is_some_and(|m| Arc::strong_count(m) == 1) {
            held.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[test]
    fn one_item_queues_and_others_do_not() {
        let locks = ItemLocks::default();
        let first = locks.lock(0, "a").now_or_never().expect("free");
        assert!(locks.lock(0, "a").now_or_never().is_none(), "the same item waits");
        let other = locks.lock(0, "b").now_or_never().expect("another item does not wait");
        let other_collection = locks.lock(1, "a").now_or_never().expect("another collection does not wait");
        drop((other, other_collection));
        drop(first);
        assert_eq!(locks.len(), 0, "unused locks are dropped");
        assert!(locks.lock(0, "a").now_or_never().is_some());
    }
}
