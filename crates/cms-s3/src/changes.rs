//! How nodes sharing a bucket see each other's writes: a change journal in the bucket.
//!
//! Every item write made through a node also puts an empty object
//!
//! ```text
//! .cms/changes/<unix ms, 13 digits>.<node>.<sequence>.<collection slug>.<item filename>
//! .cms/changes/<unix ms, 13 digits>.<node>.<sequence>.license
//! ```
//!
//! and every node lists the keys after "now minus [`LOOKBACK_MS`]" twice a second: one
//! request, and only as many keys as there were writes in that window, never the
//! collection. Keys it has already seen, and its own, are skipped; the rest become
//! `StorageChange::Items`, which the core applies in place (reading only those files).
//! Writes that did not go through a node (`aws s3 sync`, another tool) are found by a full
//! comparison of each collection every [`FollowSettings::rescan_every`]. Node clocks are
//! assumed to agree within the lookback window (NTP does far better).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::collection::Collection;
use cms_core::ports::{ChangeFeed, ChangeOrigin, ChangeSource, StorageChange};
use ring::rand::{SecureRandom, SystemRandom};

use crate::bucket::Bucket;

pub(crate) const JOURNAL_DIR: &str = ".cms/changes";
/// How far back each poll looks: a write becomes visible to the others once its journal
/// key is listed, and a node whose clock runs behind writes keys up to this far back.
const LOOKBACK_MS: i64 = 10_000;
/// Journal entries older than this are deleted (by whichever node gets there).
const RETAIN_MS: i64 = 10 * 60 * 1000;

/// How often a node looks for others' writes.
#[derive(Debug, Clone, Copy)]
pub struct FollowSettings {
    /// Between two journal polls.
    pub poll: Duration,
    /// Between two full comparisons (for writes made behind the nodes' back).
    pub rescan_every: Duration,
}

impl Default for FollowSettings {
    fn default() -> Self {
        Self { poll: Duration::from_millis(500), rescan_every: Duration::from_secs(60) }
    }
}

/// This node's side of the journal: it records the writes it makes.
#[derive(Debug)]
pub struct Journal {
    bucket: Bucket,
    /// Random per process, so that a node skips its own entries (its index already has
    /// its writes).
    node: String,
    sequence: AtomicU64,
}

impl Journal {
    pub(crate) fn new(bucket: Bucket) -> CoreResult<Self> {
        let mut id = [0u8; 6];
        SystemRandom::new()
            .fill(&mut id)
            .map_err(|_| cms_core::CoreError::internal("a node id", "the system random source failed"))?;
        Ok(Self { bucket, node: hex::encode(id), sequence: AtomicU64::new(0) })
    }

    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    pub(crate) async fn item_changed(&self, collection: &Collection, name: &str) {
        self.item_changed_in(&collection.slug, name).await;
    }

    /// The same, by the collection's slug.
    pub(crate) async fn item_changed_in(&self, collection_slug: &str, name: &str) {
        self.record(&format!("{collection_slug}.{name}")).await;
    }

    pub(crate) async fn license_changed(&self) {
        self.record("license").await;
    }

    /// Puts the entry. A failure is logged, not returned: the write itself is done, and
    /// the other nodes still see it at their next full comparison.
    async fn record(&self, what: &str) {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let key = format!("{JOURNAL_DIR}/{:013}.{}.{sequence:08}.{what}", now_ms(), self.node);
        if let Err(error) = self.bucket.put(&key, Vec::new()).await {
            tracing::warn!(%key, %error, "could not record a change for the other nodes");
        }
    }
}

fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// One journal key, read back.
#[derive(Debug, PartialEq, Eq)]
struct Entry<'a> {
    millis: i64,
    node: &'a str,
    what: What<'a>,
}

#[derive(Debug, PartialEq, Eq)]
enum What<'a> {
    Item { collection: &'a str, name: &'a str },
    License,
}

fn parse_entry(file_name: &str) -> Option<Entry<'_>> {
    let mut parts = file_name.splitn(5, '.');
    let millis = parts.next()?.parse().ok()?;
    let node = parts.next()?;
    let _sequence = parts.next()?;
    let what = match (parts.next()?, parts.next()) {
        ("license", None) => What::License,
        (collection, Some(name)) => What::Item { collection, name },
        _ => return None,
    };
    Some(Entry { millis, node, what })
}

/// The change source of a bucket: a poll of the journal plus periodic full comparisons.
#[derive(Clone)]
pub struct S3ChangeSource {
    bucket: Bucket,
    node: String,
    settings: FollowSettings,
    /// Forgets the license kept in memory, before the core is told it may have changed.
    forget_license: Arc<dyn Fn() + Send + Sync>,
}

impl S3ChangeSource {
    pub(crate) fn new(
        bucket: Bucket,
        journal: &Journal,
        settings: FollowSettings,
        forget_license: Arc<dyn Fn() + Send + Sync>,
    ) -> Self {
        Self { bucket, node: journal.node().to_owned(), settings, forget_license }
    }
}

impl ChangeSource for S3ChangeSource {
    fn subscribe(&self, collections: &[Collection]) -> CoreResult<Option<Box<dyn ChangeFeed>>> {
        Ok(Some(Box::new(PollFeed {
            source: self.clone(),
            collections: collections.iter().fold(HashMap::new(), |mut by_slug, c| {
                by_slug.entry(c.slug.clone()).or_insert_with(Vec::new).push(c.index);
                by_slug
            }),
            seen: HashMap::new(),
            last_rescan: Instant::now(),
            last_sweep: Instant::now(),
            // From the subscription: a first poll long after it (a slow index build)
            // compares everything.
            last_poll: Some(now_ms()),
            rescan_returned: false,
        })))
    }
}

struct PollFeed {
    source: S3ChangeSource,
    /// Each slug's collections: one, or on a site with languages one per language (their
    /// changes are journaled under the slug; each language's collection takes the names
    /// that are its own).
    collections: HashMap<String, Vec<usize>>,
    /// Journal keys already handled, with their time (forgotten once out of the window).
    seen: HashMap<String, i64>,
    last_rescan: Instant,
    last_sweep: Instant,
    /// When the journal was last read (Unix ms): past half the lookback window ago,
    /// entries may have aged out of it unread, so everything is compared instead.
    last_poll: Option<i64>,
    /// The last batch was a full comparison: when the next is asked for, it is done, and
    /// it covered everything before it (so a long one does not cause another).
    rescan_returned: bool,
}

impl PollFeed {
    fn rescan_all(&mut self) -> Vec<StorageChange> {
        self.rescan_returned = true;
        (self.source.forget_license)();
        let mut changes: Vec<_> = self
            .collections
            .values()
            .flatten()
            .map(|&collection| StorageChange::Rescan { collection })
            .collect();
        changes.push(StorageChange::License);
        changes
    }

    /// Others' entries since the last poll.
    async fn poll(&mut self) -> CoreResult<Vec<StorageChange>> {
        let now = now_ms();
        if self.last_poll.is_some_and(|last| now - last > LOOKBACK_MS / 2) {
            // A slow apply, a sweep or an outage kept this node away too long.
            self.last_poll = Some(now);
            self.last_rescan = Instant::now();
            return Ok(self.rescan_all());
        }
        let after = format!("{JOURNAL_DIR}/{:013}", now - LOOKBACK_MS);
        let listed = self.source.bucket.list_after(JOURNAL_DIR, &after).await?;
        self.last_poll = Some(now);
        let mut items: HashMap<usize, Vec<String>> = HashMap::new();
        let mut license = false;
        let mut written = Vec::new();
        for meta in &listed {
            let Some(file_name) = meta.location.filename() else { continue };
            let Some(entry) = parse_entry(file_name) else { continue };
            if self.seen.insert(file_name.to_owned(), entry.millis).is_some()
                || entry.node == self.source.node
            {
                continue;
            }
            written.push(entry.millis);
            match entry.what {
                What::License => license = true,
                What::Item { collection, name } => {
                    for &index in self.collections.get(collection).into_iter().flatten() {
                        items.entry(index).or_default().push(name.to_owned());
                    }
                }
            }
        }
        self.source.bucket.stats().polled(now_ms(), written.into_iter());
        self.seen.retain(|_, millis| *millis >= now - 2 * LOOKBACK_MS);
        let mut changes: Vec<_> = items
            .into_iter()
            .map(|(collection, names)| StorageChange::Items {
                collection,
                names,
                origin: ChangeOrigin::OtherNode,
            })
            .collect();
        if license {
            (self.source.forget_license)();
            changes.push(StorageChange::License);
        }
        Ok(changes)
    }

    /// Deletes journal entries past [`RETAIN_MS`], oldest first (keys sort by time).
    async fn sweep(&self) -> CoreResult<()> {
        let cutoff = format!("{:013}", now_ms() - RETAIN_MS);
        for meta in self.source.bucket.list_all(JOURNAL_DIR).await? {
            let Some(file_name) = meta.location.filename() else { continue };
            if *file_name >= *cutoff.as_str() {
                break;
            }
            if let Some(key) = self.source.bucket.key_of(&meta.location) {
                self.source.bucket.delete(key).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ChangeFeed for PollFeed {
    async fn next_batch(&mut self) -> Option<Vec<StorageChange>> {
        if std::mem::take(&mut self.rescan_returned) {
            self.last_poll = Some(now_ms());
        }
        loop {
            let pause = self.source.settings.poll;
            self.source
                .bucket
                .run(async move {
                    tokio::time::sleep(pause).await;
                    Ok(())
                })
                .await
                .ok()?;
            if self.last_rescan.elapsed() >= self.source.settings.rescan_every {
                self.last_rescan = Instant::now();
                return Some(self.rescan_all());
            }
            if self.last_sweep.elapsed() >= Duration::from_millis(RETAIN_MS as u64 / 10) {
                self.last_sweep = Instant::now();
                if let Err(error) = self.sweep().await {
                    tracing::warn!(%error, "could not sweep old change journal entries");
                }
            }
            match self.poll().await {
                Ok(changes) if changes.is_empty() => {}
                Ok(changes) => return Some(changes),
                // The store is unreachable for now: once it answers again, compare
                // everything, since entries may have been missed meanwhile.
                Err(error) => {
                    tracing::warn!(%error, "could not read the change journal");
                    self.last_rescan = Instant::now() - self.source.settings.rescan_every;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back() {
        assert_eq!(
            parse_entry("1764000000000.a1b2c3.00000007.posts.2026-01-12-hello.world.md"),
            Some(Entry {
                millis: 1_764_000_000_000,
                node: "a1b2c3",
                what: What::Item { collection: "posts", name: "2026-01-12-hello.world.md" }
            })
        );
        assert_eq!(
            parse_entry("1764000000000.a1b2c3.00000008.license"),
            Some(Entry { millis: 1_764_000_000_000, node: "a1b2c3", what: What::License })
        );
        assert_eq!(parse_entry("garbage"), None);
        assert_eq!(parse_entry("x.a.b.posts.a.md"), None);
    }
}
