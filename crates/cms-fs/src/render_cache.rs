//! The [`RenderCache`] port on a local file: rendered single items appended to one
//! unnamed file under `.cms/`, found by an offset kept in memory, read back with one
//! positional read. On a large site the records stay out of the server's memory (the page
//! cache holds the ones read often), and the file has no name: it goes when the process
//! does, even after a crash, so nothing is left to sweep.
//!
//! Append-only: a record is never written over, so a read that raced a rotation reads
//! the file it found the offset in (kept open by its `Arc`). Once `budget` bytes are
//! appended, the next record starts a new file and the old records are forgotten.
//!
//! While the process is small ([`HeldInMemory`]), records are also held in memory and a
//! read shares them: the positional read (its system call, the page lookup, the copy)
//! was an eighth of a random single item's time at 10,000 items.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use cms_core::ports::{KeptNow, RenderCache};
use foldhash::{HashMap, HashMapExt};
use rustix::io::{Errno, ReadWriteFlags};

/// Each record is followed by its key, checked on every read (after the record, so that
/// the record is read into place and the key cut off the end, not moved past).
const TRAILER: u64 = 8;

/// Records offered to memory between two readings of the process's resident size: its
/// bound is passed by at most this much.
const RESIDENT_CHECK_BYTES: usize = 4 << 20;

/// Rendered items in an unnamed file of `dir`, at most `budget` bytes of it; the newest
/// also in memory within [`HeldInMemory`]'s bounds.
pub struct FsRenderCache {
    dir: PathBuf,
    budget: u64,
    memory: HeldInMemory,
    inner: Mutex<Inner>,
    /// Requests' first lookups that found their answer, and that did not.
    hits: AtomicU64,
    misses: AtomicU64,
}

/// When records are held in memory as well as written to the file: up to `budget` bytes of
/// them (the oldest let go first), and new ones only while the process's resident size,
/// as `resident` reads it, is below `resident_below`. On a large site the index takes
/// that memory, and the answers are read from the file (the page cache) alone.
#[derive(Debug, Clone, Copy)]
pub struct HeldInMemory {
    pub budget: usize,
    pub resident_below: u64,
    pub resident: fn() -> Option<u64>,
}

impl HeldInMemory {
    /// Nothing held in memory: every read is a positional read of the file.
    pub const NONE: Self = Self { budget: 0, resident_below: 0, resident: || None };

    /// Up to half of `resident_below` bytes of records, while this process's resident
    /// size (`VmRSS` in `/proc/self/status`) is below it.
    pub fn below(resident_below: u64) -> Self {
        let budget = usize::try_from(resident_below / 2).unwrap_or(usize::MAX);
        Self { budget, resident_below, resident: crate::system::resident_bytes }
    }
}

struct Inner {
    file: Arc<File>,
    /// Bytes appended (or reserved by a write under way).
    end: u64,
    places: HashMap<u64, Place>,
    /// A failed write was reported for this file: say it once, not per item.
    reported: bool,
    /// Records held in memory (they are in the file too, or were before it started over).
    held: Held,
}

#[derive(Default)]
struct Held {
    records: HashMap<u64, Bytes>,
    /// Keys in the order they were first held, the oldest first (a key let go, then held
    /// again, is listed twice; its first listing then lets the newer record go early).
    order: VecDeque<u64>,
    bytes: usize,
    /// Whether the resident size was below the bound when last read, and the bytes
    /// offered since (read again once they pass [`RESIDENT_CHECK_BYTES`]).
    room: bool,
    offered: usize,
}

impl Held {
    fn new() -> Self {
        Self { offered: RESIDENT_CHECK_BYTES, ..Self::default() }
    }

    /// Lets go of the record held under `key`; whether there was one.
    fn release(&mut self, key: u64) -> bool {
        let gone = self.records.remove(&key);
        if let Some(gone) = &gone {
            self.bytes -= gone.len();
        }
        gone.is_some()
    }
}

/// Where a record is: 8 bytes, since a site keeps one per item and language (an offset
/// within a budget of at most [`MAX_BUDGET`]).
#[derive(Debug, Clone, Copy)]
struct Place {
    offset: u32,
    len: u32,
}

/// The largest budget: a record's offset is kept in 32 bits.
pub const MAX_BUDGET: u64 = u32::MAX as u64;

impl FsRenderCache {
    /// A cache whose file lives in `dir` (made if missing), of at most `budget` bytes
    /// (or [`MAX_BUDGET`], if less).
    pub fn create_in(dir: &Path, budget: u64, memory: HeldInMemory) -> io::Result<Self> {
        let budget = budget.min(MAX_BUDGET);
        std::fs::create_dir_all(dir)?;
        let file = Arc::new(tempfile::tempfile_in(dir)?);
        let inner = Inner { file, end: 0, places: HashMap::new(), reported: false, held: Held::new() };
        Ok(Self {
            dir: dir.to_owned(),
            budget,
            memory,
            inner: Mutex::new(inner),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every change under the lock is one assignment: nothing is left half-done.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where a record of `len` bytes goes: reserved at the end of the current file, or at
    /// the start of a new one once the budget is spent. `None` if no new file can be made.
    fn reserve(&self, len: u64) -> Option<(Arc<File>, u64)> {
        let mut inner = self.lock();
        if inner.end + len > self.budget {
            match tempfile::tempfile_in(&self.dir) {
                Ok(file) => {
                    inner.file = Arc::new(file);
                    inner.end = 0;
                    inner.places = HashMap::new();
                    inner.reported = false;
                }
                Err(error) => {
                    report(&mut inner, &error);
                    return None;
                }
            }
        }
        let offset = inner.end;
        inner.end += len;
        Some((Arc::clone(&inner.file), offset))
    }

    /// Holds `record` in memory too, if [`HeldInMemory`] allows it; else lets go of an
    /// older record held under `key`, so that reads find the one just written.
    fn hold(&self, key: u64, record: &[u8]) {
        let memory = &self.memory;
        if memory.budget == 0 {
            return;
        }
        // The resident size is read outside the lock (a small file read).
        let check = self.lock().held.offered >= RESIDENT_CHECK_BYTES;
        let room =
            check.then(|| (memory.resident)().is_some_and(|resident| resident < memory.resident_below));
        let mut inner = self.lock();
        let held = &mut inner.held;
        if let Some(room) = room {
            held.room = room;
            held.offered = 0;
        }
        held.offered += record.len();
        let was_held = held.release(key);
        if !held.room || record.len() > memory.budget / 8 {
            return;
        }
        held.records.insert(key, Bytes::copy_from_slice(record));
        // A key held again keeps its place: the order lists each held key once.
        if !was_held {
            held.order.push_back(key);
        }
        held.bytes += record.len();
        while held.bytes > memory.budget {
            let Some(oldest) = held.order.pop_front() else { break };
            held.release(oldest);
        }
    }
}

fn report(inner: &mut Inner, error: &io::Error) {
    if !inner.reported {
        inner.reported = true;
        tracing::warn!(%error, "cannot keep rendered items on disk; they are rendered on each read");
    }
}

/// For `/metrics`: the kept answers of single items, as `cms-http` reports its own caches
/// (`answer_cache_*` with `cache="items"`; the bytes are those written to the file since
/// it last started over).
impl cms_core::readings::Observed for FsRenderCache {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        use cms_core::readings::Reading;
        let (end, entries, held, held_entries) = {
            let inner = self.lock();
            (inner.end, inner.places.len(), inner.held.bytes, inner.held.records.len())
        };
        let lookups =
            "Requests' first lookups of their kept answer, by cache (lists, documents, items) and outcome";
        let (hits, misses) = (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed));
        vec![
            Reading::counter("answer_cache_lookups", lookups, hits as f64)
                .with("cache", "items")
                .with("outcome", "hit"),
            Reading::counter("answer_cache_lookups", lookups, misses as f64)
                .with("cache", "items")
                .with("outcome", "miss"),
            Reading::gauge("answer_cache_bytes", "Bytes of kept answers, by cache", end as f64)
                .with("cache", "items"),
            Reading::gauge("answer_cache_entries", "Kept answers, by cache", entries as f64)
                .with("cache", "items"),
            Reading::gauge(
                "answer_cache_held_bytes",
                "Bytes of kept answers held in memory as well, by cache",
                held as f64,
            )
            .with("cache", "items"),
            Reading::gauge(
                "answer_cache_held_entries",
                "Kept answers held in memory as well, by cache",
                held_entries as f64,
            )
            .with("cache", "items"),
        ]
    }
}

/// Where the record under a key is, if anywhere.
enum Found {
    Held(Bytes),
    InFile(Arc<File>, Place),
}

impl FsRenderCache {
    fn find(&self, key: u64) -> Option<Found> {
        let inner = self.lock();
        if let Some(record) = inner.held.records.get(&key) {
            return Some(Found::Held(record.clone()));
        }
        Some(Found::InFile(Arc::clone(&inner.file), *inner.places.get(&key)?))
    }
}

/// A record's bytes read with its trailer: the record, or `None` when the trailer names
/// another key.
fn checked(mut bytes: Vec<u8>, key: u64) -> Option<Bytes> {
    let len = bytes.len() - TRAILER as usize;
    if bytes[len..] != key.to_le_bytes() {
        return None;
    }
    bytes.truncate(len);
    Some(Bytes::from(bytes))
}

fn record_buffer(place: Place) -> Vec<u8> {
    vec![0; place.len as usize + TRAILER as usize]
}

impl RenderCache for FsRenderCache {
    fn get(&self, key: u64) -> Option<Bytes> {
        let (file, place) = match self.find(key)? {
            Found::Held(record) => return Some(record),
            Found::InFile(file, place) => (file, place),
        };
        let mut bytes = record_buffer(place);
        file.read_exact_at(&mut bytes, u64::from(place.offset)).ok()?;
        checked(bytes, key)
    }

    /// One positional read that fails rather than wait for the disk (`RWF_NOWAIT`): a
    /// record paged out (this file is read at random, and a host may page out what is
    /// not read for a while) is read by `get` off the async worker, which meanwhile
    /// answers requests whose records are in memory.
    fn get_now(&self, key: u64) -> KeptNow {
        let (file, place) = match self.find(key) {
            None => return KeptNow::Missing,
            Some(Found::Held(record)) => return KeptNow::Found(record),
            Some(Found::InFile(file, place)) => (file, place),
        };
        let mut bytes = record_buffer(place);
        let wanted = bytes.len();
        let read = rustix::io::preadv2(
            &*file,
            &mut [io::IoSliceMut::new(&mut bytes)],
            u64::from(place.offset),
            ReadWriteFlags::NOWAIT,
        );
        match read {
            Ok(read) if read == wanted => checked(bytes, key).map_or(KeptNow::Missing, KeptNow::Found),
            // Part of it in memory, or none: the rest waits for the disk.
            Ok(_) | Err(Errno::AGAIN) => KeptNow::OnDisk,
            // A file system that cannot read without waiting: read as `get` does.
            Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => file
                .read_exact_at(&mut bytes, u64::from(place.offset))
                .ok()
                .and_then(|()| checked(bytes, key))
                .map_or(KeptNow::Missing, KeptNow::Found),
            Err(_) => KeptNow::Missing,
        }
    }

    fn put(&self, key: u64, record: &[u8]) {
        let Ok(len) = u32::try_from(record.len()) else { return };
        let size = u64::from(len) + TRAILER;
        if size > self.budget / 8 {
            return; // one huge item must not push everything else out
        }
        let Some((file, offset)) = self.reserve(size) else { return };
        let mut bytes = Vec::with_capacity(size as usize);
        bytes.extend_from_slice(record);
        bytes.extend_from_slice(&key.to_le_bytes());
        let written = file.write_all_at(&bytes, offset);
        let mut inner = self.lock();
        match written {
            // Found only once it is whole, and only in the file it was written to.
            // (The offset is within the budget, so within `MAX_BUDGET`.)
            Ok(()) if Arc::ptr_eq(&inner.file, &file) => {
                let Ok(offset) = u32::try_from(offset) else { return };
                inner.places.insert(key, Place { offset, len });
            }
            Ok(()) => {}
            Err(error) => report(&mut inner, &error),
        }
        drop(inner);
        self.hold(key, record);
    }

    fn contains(&self, key: u64) -> bool {
        let inner = self.lock();
        inner.held.records.contains_key(&key) || inner.places.contains_key(&key)
    }

    fn is_full(&self) -> bool {
        self.lock().end + self.budget / 16 > self.budget
    }

    fn note(&self, found: bool) {
        let counter = if found { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_records_outside_memory_and_starts_over_at_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FsRenderCache::create_in(&dir.path().join(".cms"), 1_000, HeldInMemory::NONE).unwrap();
        assert!(std::fs::read_dir(dir.path().join(".cms")).unwrap().next().is_none(), "the file has no name");
        assert_eq!(cache.get(1), None);
        cache.put(1, b"one");
        cache.put(2, b"two");
        cache.put(1, b"one again");
        assert_eq!(cache.get(1).as_deref(), Some(&b"one again"[..]));
        assert_eq!(cache.get(2).as_deref(), Some(&b"two"[..]));
        assert!(cache.contains(2) && !cache.contains(3));
        cache.put(3, &[b'x'; 200]);
        assert_eq!(cache.get(3), None, "over an eighth of the budget: not kept");
        assert!(!cache.is_full());
        for key in 10..18 {
            cache.put(key, &[b'y'; 110]);
        }
        assert!(cache.is_full());
        cache.put(99, &[b'z'; 110]);
        assert_eq!(cache.get(99).as_deref(), Some(&[b'z'; 110][..]), "the newest is kept");
        assert_eq!(cache.get(1), None, "a new file: older records are forgotten");
        assert!(!cache.is_full());
    }

    #[test]
    fn a_record_whose_key_does_not_match_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FsRenderCache::create_in(dir.path(), 1 << 20, HeldInMemory::NONE).unwrap();
        cache.put(7, b"seven");
        // Point key 8 at key 7's record: the stored key says it is not 8's.
        let place = cache.lock().places[&7];
        cache.lock().places.insert(8, place);
        assert_eq!(cache.get(8), None);
        assert_eq!(cache.get(7).as_deref(), Some(&b"seven"[..]));
    }

    #[test]
    fn concurrent_puts_and_gets_see_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(FsRenderCache::create_in(dir.path(), 64 * 1024, HELD).unwrap());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    for i in 0..500u64 {
                        let key = t * 1_000 + i;
                        let record = vec![u8::try_from(key % 251).unwrap(); 50 + (key % 90) as usize];
                        cache.put(key, &record);
                        if let Some(back) = cache.get(key) {
                            assert_eq!(back, record, "key {key}");
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    #[test]
    fn a_record_read_now_is_found_missing_or_left_for_a_read_that_may_wait() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FsRenderCache::create_in(dir.path(), 1 << 20, HeldInMemory::NONE).unwrap();
        cache.put(7, b"seven");
        assert_eq!(cache.get_now(7), KeptNow::Found(Bytes::from_static(b"seven")), "just written: in memory");
        assert_eq!(cache.get_now(8), KeptNow::Missing);
        let place = cache.lock().places[&7];
        cache.lock().places.insert(9, place);
        assert_eq!(cache.get_now(9), KeptNow::Missing, "the trailer names another key");
        // Out of the page cache: written back, then dropped. The kernel skips a page it
        // holds busy at that moment (a page still in another core's batch of new pages,
        // under load): asked again, with pauses. Two CI runs under load kept the page
        // through 20 quick asks; a run where it stays is told, and checks the rest.
        let file = Arc::clone(&cache.lock().file);
        file.sync_all().unwrap();
        let mut now = KeptNow::Missing;
        for _ in 0..50 {
            rustix::fs::fadvise(&*file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            now = cache.get_now(7);
            if now == KeptNow::OnDisk {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        match &now {
            KeptNow::OnDisk => {}
            KeptNow::Found(bytes) if &bytes[..] == b"seven" => {
                eprintln!("the kernel kept the record's page in memory: the paged-out read is not exercised")
            }
            other => panic!("a record is found or left for a read that may wait, not {other:?}"),
        }
        assert_eq!(cache.get(7).as_deref(), Some(&b"seven"[..]), "read where waiting is allowed");
        assert_eq!(cache.get_now(7), KeptNow::Found(Bytes::from_static(b"seven")), "and in memory again");
    }

    /// Holds everything a test offers: a small process.
    const HELD: HeldInMemory = HeldInMemory { budget: 1_000, resident_below: 1, resident: || Some(0) };

    #[test]
    fn holds_records_in_memory_within_its_budget_and_shares_them() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FsRenderCache::create_in(dir.path(), 1 << 20, HELD).unwrap();
        cache.put(1, b"one");
        let (first, again) = (cache.get(1).unwrap(), cache.get(1).unwrap());
        assert_eq!(&first[..], b"one");
        assert_eq!(first.as_ptr(), again.as_ptr(), "shared, not read back");
        // Point key 1's place at nothing: a held record is not read from the file.
        cache.lock().places.insert(1, Place { offset: 1 << 19, len: 3 });
        assert_eq!(cache.get(1).as_deref(), Some(&b"one"[..]));
        for _ in 0..3 {
            cache.put(1, b"one");
        }
        assert_eq!(cache.lock().held.order.len(), 1, "a key held again is listed once");
        for key in 10..30 {
            cache.put(key, &[u8::try_from(key).unwrap(); 100]);
        }
        {
            let inner = cache.lock();
            let held = &inner.held;
            assert!(held.bytes <= 1_000 && held.records.len() == 10, "{} bytes", held.bytes);
            assert!(!held.records.contains_key(&10) && held.records.contains_key(&29), "the oldest let go");
        }
        assert_eq!(cache.get(10).as_deref(), Some(&[10; 100][..]), "still in the file");
        cache.put(2, &[b'x'; 126]);
        assert!(!cache.lock().held.records.contains_key(&2), "over an eighth of the budget: the file alone");
        assert_eq!(cache.get(2).as_deref(), Some(&[b'x'; 126][..]));
    }

    #[test]
    fn holds_nothing_new_once_the_process_is_large_and_reads_the_last_record_put() {
        static RESIDENT: AtomicU64 = AtomicU64::new(0);
        let memory = HeldInMemory {
            budget: 64 << 20,
            resident_below: 1 << 30,
            resident: || Some(RESIDENT.load(Ordering::Relaxed)),
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = FsRenderCache::create_in(dir.path(), 64 << 20, memory).unwrap();
        cache.put(1, b"held");
        assert!(cache.lock().held.records.contains_key(&1));
        RESIDENT.store(2 << 30, Ordering::Relaxed);
        // Read again once the bytes offered since pass the check's interval.
        let record = vec![b'r'; 1 << 20];
        for key in 100..105 {
            cache.put(key, &record);
        }
        cache.put(1, b"held again, not in memory");
        {
            let inner = cache.lock();
            assert!(!inner.held.room, "the process is over its bound");
            assert!(!inner.held.records.contains_key(&1), "the older record let go");
        }
        assert_eq!(cache.get(1).as_deref(), Some(&b"held again, not in memory"[..]));
        assert!(cache.contains(1) && cache.contains(104));
    }
}
