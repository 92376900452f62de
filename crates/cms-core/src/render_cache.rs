//! The in-memory [`RenderCache`]: records first in, first out within a byte budget. The
//! facade's default, and what commands and tests use; a server keeps its rendered items
//! in a local file instead (`cms_fs::FsRenderCache`), and in memory only while it is small.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

use crate::ports::RenderCache;

/// Records by key, the oldest forgotten first once `budget` bytes are held.
pub struct MemoryRenderCache {
    inner: Mutex<Inner>,
    budget: usize,
}

#[derive(Default)]
struct Inner {
    records: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
    bytes: usize,
}

impl MemoryRenderCache {
    pub fn new(budget: usize) -> Self {
        Self { inner: Mutex::default(), budget }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Records are whole values: a panic elsewhere cannot leave one half-written.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl RenderCache for MemoryRenderCache {
    fn get(&self, key: u64) -> Option<Bytes> {
        self.lock().records.get(&key).cloned()
    }

    fn put(&self, key: u64, record: &[u8]) {
        if record.len() > self.budget / 8 {
            return; // one huge item must not flush everything else
        }
        let mut inner = self.lock();
        match inner.records.insert(key, Bytes::copy_from_slice(record)) {
            Some(old) => inner.bytes -= old.len(),
            None => inner.order.push_back(key),
        }
        inner.bytes += record.len();
        while inner.bytes > self.budget {
            let Some(oldest) = inner.order.pop_front() else { break };
            if let Some(gone) = inner.records.remove(&oldest) {
                inner.bytes -= gone.len();
            }
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.lock().records.contains_key(&key)
    }

    fn is_full(&self) -> bool {
        let inner = self.lock();
        inner.bytes + self.budget / 16 > self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_the_budget() {
        let cache = MemoryRenderCache::new(800);
        assert!(!cache.is_full());
        for key in 0..20u64 {
            cache.put(key, &[b'x'; 100]);
        }
        assert!(cache.contains(19) && cache.contains(12));
        assert!(!cache.contains(11), "the oldest went");
        assert!(cache.is_full());
        cache.put(12, b"short");
        assert_eq!(cache.get(12).as_deref(), Some(&b"short"[..]), "a put replaces");
        cache.put(99, &[b'x'; 101]);
        assert!(cache.get(99).is_none(), "a record over an eighth of the budget is not kept");
        assert!(cache.lock().bytes <= 800);
    }
}
