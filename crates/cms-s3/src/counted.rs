//! The bucket's requests counted, for `/metrics`: [`CountedStore`] wraps the object store
//! every part of the adapter goes through, so each request is counted by operation and
//! outcome with the time it took (to its answer's head; a listing, all its pages, is one;
//! a delete is counted per object, whatever the batching; a multipart upload is counted
//! when it starts, not per part); the change feed adds how late other nodes' changes are
//! read.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use cms_core::readings::{Observed, Reading};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use tracing::Instrument;

/// The operations counted, as the label `operation` names them.
const OPERATIONS: [&str; 7] = ["get", "put", "multipart", "delete", "list", "copy", "rename"];
/// How a request ended: `refused` is a condition not met (a key taken, another version, not
/// modified), which conditional requests expect.
const OUTCOMES: [&str; 4] = ["ok", "not_found", "refused", "error"];

#[derive(Clone, Copy)]
enum Operation {
    Get,
    Put,
    Multipart,
    Delete,
    List,
    Copy,
    Rename,
}

/// What the bucket's requests and its change feed did since the start.
#[derive(Default, Debug)]
pub struct BucketStats {
    requests: [[AtomicU64; OUTCOMES.len()]; OPERATIONS.len()],
    micros: [AtomicU64; OPERATIONS.len()],
    /// Other nodes' changes read from the journal, and the sum of how late each was read
    /// (from its write to its reading here), in milliseconds.
    changes_read: AtomicU64,
    change_lag_ms: AtomicU64,
    /// When the journal was last read (Unix ms; 0: not yet).
    last_poll_ms: AtomicI64,
}

impl BucketStats {
    fn count<T>(&self, operation: Operation, started: Instant, result: &object_store::Result<T>) {
        let outcome = outcome_of(result);
        let operation = operation as usize;
        self.requests[operation][outcome].fetch_add(1, Ordering::Relaxed);
        self.micros[operation].fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// The journal was read at `now_ms`, with other nodes' entries written at `written_ms`.
    pub(crate) fn polled(&self, now_ms: i64, written_ms: impl Iterator<Item = i64>) {
        self.last_poll_ms.store(now_ms, Ordering::Relaxed);
        for written in written_ms {
            self.changes_read.fetch_add(1, Ordering::Relaxed);
            self.change_lag_ms.fetch_add((now_ms - written).max(0) as u64, Ordering::Relaxed);
        }
    }
}

/// For `/metrics`: `store_requests{operation,outcome}`, `store_request_seconds{operation}`,
/// `change_feed_changes`, `change_feed_lag_seconds`, `change_feed_last_read_age_seconds`.
impl Observed for BucketStats {
    fn readings(&self) -> Vec<Reading> {
        let mut readings = Vec::new();
        for (operation, outcomes) in OPERATIONS.iter().zip(&self.requests) {
            for (outcome, count) in OUTCOMES.iter().zip(outcomes) {
                let help = "Requests to the bucket, by operation and outcome (refused: a condition not met)";
                let count = count.load(Ordering::Relaxed) as f64;
                readings.push(
                    Reading::counter("store_requests", help, count)
                        .with("operation", *operation)
                        .with("outcome", *outcome),
                );
            }
        }
        for (operation, micros) in OPERATIONS.iter().zip(&self.micros) {
            let help =
                "Time the bucket's requests took to answer, by operation (over store_requests: the mean)";
            let seconds = micros.load(Ordering::Relaxed) as f64 / 1e6;
            readings
                .push(Reading::counter("store_request_seconds", help, seconds).with("operation", *operation));
        }
        let read = self.changes_read.load(Ordering::Relaxed) as f64;
        readings.push(Reading::counter(
            "change_feed_changes",
            "Other nodes' changes read from the bucket's journal",
            read,
        ));
        let lag = self.change_lag_ms.load(Ordering::Relaxed) as f64 / 1e3;
        readings.push(Reading::counter(
            "change_feed_lag_seconds",
            "Sum of how late other nodes' changes were read here, from their write (over change_feed_changes: the mean)",
            lag,
        ));
        let last = self.last_poll_ms.load(Ordering::Relaxed);
        if last > 0 {
            let age = (unix_ms() - last).max(0) as f64 / 1e3;
            readings.push(Reading::gauge(
                "change_feed_last_read_age_seconds",
                "Time since this node last read the bucket's journal",
                age,
            ));
        }
        readings
    }
}

/// Now, in Unix milliseconds (the journal's clock).
fn unix_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// A stream of results counted when it ends (or is dropped): a listing as one request
/// (`ok`, or `error` at its first failure), deletes one per object (`per_item`); its time
/// is added once.
struct Tally<S> {
    inner: S,
    stats: Arc<BucketStats>,
    operation: Operation,
    per_item: bool,
    started: Instant,
    failed: bool,
    counted: bool,
}

impl<S> Tally<S> {
    fn new(inner: S, stats: Arc<BucketStats>, operation: Operation, per_item: bool) -> Self {
        Self { inner, stats, operation, per_item, started: Instant::now(), failed: false, counted: false }
    }

    fn end(&mut self) {
        if std::mem::replace(&mut self.counted, true) {
            return;
        }
        let operation = self.operation as usize;
        if !self.per_item && !self.failed {
            self.stats.requests[operation][0].fetch_add(1, Ordering::Relaxed);
        }
        self.stats.micros[operation].fetch_add(self.started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }
}

impl<T, S: futures_util::Stream<Item = object_store::Result<T>> + Unpin> futures_util::Stream for Tally<S> {
    type Item = object_store::Result<T>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = std::task::ready!(std::pin::Pin::new(&mut self.inner).poll_next(cx));
        match &next {
            Some(result) if self.per_item => {
                let outcome = outcome_of(result);
                self.stats.requests[self.operation as usize][outcome].fetch_add(1, Ordering::Relaxed);
            }
            Some(result @ Err(_)) if !self.failed => {
                self.failed = true;
                self.stats.requests[self.operation as usize][outcome_of(result)]
                    .fetch_add(1, Ordering::Relaxed);
            }
            Some(_) => {}
            None => self.end(),
        }
        std::task::Poll::Ready(next)
    }
}

impl<S> Drop for Tally<S> {
    fn drop(&mut self) {
        // A listing read only in part (`take`) is a request all the same.
        self.end();
    }
}

/// Which of [`OUTCOMES`] a result is.
fn outcome_of<T>(result: &object_store::Result<T>) -> usize {
    match result {
        Ok(_) => 0,
        Err(object_store::Error::NotFound { .. }) => 1,
        Err(
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. }
            | object_store::Error::NotModified { .. },
        ) => 2,
        Err(_) => 3,
    }
}

/// An object store whose requests are counted in [`BucketStats`].
#[derive(Debug)]
pub(crate) struct CountedStore {
    inner: Arc<dyn ObjectStore>,
    stats: Arc<BucketStats>,
}

impl CountedStore {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, stats: Arc<BucketStats>) -> Self {
        Self { inner, stats }
    }
}

impl std::fmt::Display for CountedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counted({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let started = Instant::now();
        let result = self
            .inner
            .put_opts(location, payload, opts)
            .instrument(tracing::trace_span!("store", operation = "put"))
            .await;
        self.stats.count(Operation::Put, started, &result);
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let started = Instant::now();
        let result = self
            .inner
            .put_multipart_opts(location, opts)
            .instrument(tracing::trace_span!("store", operation = "multipart"))
            .await;
        self.stats.count(Operation::Multipart, started, &result);
        result
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        let started = Instant::now();
        let result = self
            .inner
            .get_opts(location, options)
            .instrument(tracing::trace_span!("store", operation = "get"))
            .await;
        self.stats.count(Operation::Get, started, &result);
        result
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        Tally::new(self.inner.delete_stream(locations), Arc::clone(&self.stats), Operation::Delete, true)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        Tally::new(self.inner.list(prefix), Arc::clone(&self.stats), Operation::List, false).boxed()
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        Tally::new(
            self.inner.list_with_offset(prefix, offset),
            Arc::clone(&self.stats),
            Operation::List,
            false,
        )
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let started = Instant::now();
        let result = self
            .inner
            .list_with_delimiter(prefix)
            .instrument(tracing::trace_span!("store", operation = "list"))
            .await;
        self.stats.count(Operation::List, started, &result);
        result
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        let started = Instant::now();
        let result = self
            .inner
            .copy_opts(from, to, options)
            .instrument(tracing::trace_span!("store", operation = "copy"))
            .await;
        self.stats.count(Operation::Copy, started, &result);
        result
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> object_store::Result<()> {
        let started = Instant::now();
        let result = self
            .inner
            .rename_opts(from, to, options)
            .instrument(tracing::trace_span!("store", operation = "rename"))
            .await;
        self.stats.count(Operation::Rename, started, &result);
        result
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutMode};

    use super::*;

    fn value(readings: &[Reading], name: &str, labels: &[(&str, &str)]) -> f64 {
        readings
            .iter()
            .find(|r| {
                r.name == name && labels.iter().all(|(k, v)| r.labels.iter().any(|(l, w)| l == k && w == v))
            })
            .unwrap_or_else(|| panic!("{name} {labels:?}"))
            .value
    }

    #[tokio::test]
    async fn requests_are_counted_by_operation_and_outcome() {
        let stats = Arc::new(BucketStats::default());
        let store = CountedStore::new(Arc::new(InMemory::new()), Arc::clone(&stats));
        let path = Path::from("a/b.md");
        store.put(&path, PutPayload::from_static(b"x")).await.unwrap();
        let create = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        assert!(store.put_opts(&path, PutPayload::from_static(b"y"), create).await.is_err());
        store.get(&path).await.unwrap();
        assert!(store.get(&Path::from("missing")).await.is_err());
        store.list_with_delimiter(Some(&Path::from("a"))).await.unwrap();
        let listed: Vec<_> = store.list(Some(&Path::from("a"))).collect().await;
        assert_eq!(listed.len(), 1);
        store.delete(&path).await.unwrap();
        stats.polled(unix_ms(), [unix_ms() - 1500].into_iter());

        let readings = stats.readings();
        let requests = |operation, outcome| {
            value(&readings, "store_requests", &[("operation", operation), ("outcome", outcome)])
        };
        assert_eq!(requests("put", "ok"), 1.0);
        assert_eq!(requests("put", "refused"), 1.0, "a key taken");
        assert_eq!(requests("get", "ok"), 1.0);
        assert_eq!(requests("get", "not_found"), 1.0);
        assert_eq!(requests("list", "ok"), 2.0, "a listing is one request, counted when it ends");
        assert_eq!(requests("delete", "ok"), 1.0);
        assert_eq!(requests("copy", "ok"), 0.0);
        assert!(value(&readings, "store_request_seconds", &[("operation", "put")]) > 0.0);
        assert_eq!(value(&readings, "change_feed_changes", &[]), 1.0);
        let lag = value(&readings, "change_feed_lag_seconds", &[]);
        assert!((1.4..2.0).contains(&lag), "{lag}");
        assert!(value(&readings, "change_feed_last_read_age_seconds", &[]) < 1.0);
    }
}
