//! The bucket as the other modules see it: keys relative to the site's prefix, objects as
//! bytes with their ETags, and every request run on the adapter's own I/O runtime.
//!
//! Keys mirror the site folder (`content/posts/2026-01-12-hello.md`, `media/uploads/a.png`,
//! `.cms/users.yaml`), so that `aws s3 sync` of a site folder is a valid site.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use cms_core::ports::{ByteStream, FileStamp};
use cms_core::{CoreError, CoreResult};
use futures_util::{StreamExt, TryStreamExt, stream};
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::counted::{BucketStats, CountedStore};
use crate::error::{S3Error, store_error};

/// How many chunks of an object's body a stream fetches ahead of its reader.
const STREAM_AHEAD: usize = 4;

/// A tokio runtime of the adapter's own: the HTTP client's connections live on it, so a
/// call works from any caller (an actix worker's single-threaded runtime, the binary's
/// runtime, a blocking thread).
#[derive(Debug)]
pub(crate) struct IoRuntime {
    runtime: Option<tokio::runtime::Runtime>,
}

impl IoRuntime {
    pub(crate) fn start() -> CoreResult<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cms-s3-io")
            .enable_all()
            .build()
            .map_err(|e| CoreError::internal("the object store's I/O runtime", e))?;
        Ok(Self { runtime: Some(runtime) })
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime.as_ref().expect("present until dropped").handle()
    }
}

impl Drop for IoRuntime {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which is not allowed inside another
        // runtime (where tests and the server drop the adapter).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why a conditional write did not happen.
#[derive(Debug)]
pub(crate) enum WriteRefused {
    /// `Create` found the key taken.
    Exists,
    /// `Update` found another version than the one named.
    Changed,
}

#[derive(Debug, Clone)]
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    /// The site's keys start with this (`sites/blog`); empty for the bucket's root.
    prefix: String,
    io: Arc<IoRuntime>,
    /// Every request through `store` counted (it is a [`CountedStore`]).
    stats: Arc<BucketStats>,
}

impl Bucket {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, prefix: &str, io: Arc<IoRuntime>) -> Self {
        let stats = Arc::new(BucketStats::default());
        let store = Arc::new(CountedStore::new(store, Arc::clone(&stats)));
        Self { store, prefix: prefix.trim_matches('/').to_owned(), io, stats }
    }

    /// What the requests and the change feed did (for `/metrics`).
    pub(crate) fn stats(&self) -> &Arc<BucketStats> {
        &self.stats
    }

    /// The object path of a site-relative key (`content/posts/a.md`): the key as it is,
    /// so that an object is named exactly as the file (`photo~1.jpg`, not object_store's
    /// encoded `photo%7E1.jpg`) and `aws s3 sync` of a folder gives the same keys. Only
    /// what a raw key cannot be (a `.`/`..` or empty part, a control character: never a
    /// validated name) falls back to object_store's encoding.
    pub(crate) fn path(&self, key: &str) -> Path {
        let full = if self.prefix.is_empty() { key.to_owned() } else { format!("{}/{key}", self.prefix) };
        Path::parse(&full).unwrap_or_else(|_| Path::from(full))
    }

    /// The site-relative key of an object path, `None` outside the prefix.
    pub(crate) fn key_of<'a>(&self, path: &'a Path) -> Option<&'a str> {
        let raw = path.as_ref();
        if self.prefix.is_empty() {
            return Some(raw);
        }
        raw.strip_prefix(self.prefix.as_str())?.strip_prefix('/')
    }

    /// Runs a request on the I/O runtime and waits for it from wherever the caller is.
    pub(crate) async fn run<T, F>(&self, request: F) -> CoreResult<T>
    where
        T: Send + 'static,
        F: Future<Output = CoreResult<T>> + Send + 'static,
    {
        // Exported traces: the request's spans (`CountedStore`'s) go under the caller's.
        let span = if tracing::level_enabled!(tracing::Level::TRACE) {
            tracing::Span::current()
        } else {
            tracing::Span::none()
        };
        self.io.handle().spawn(request.instrument(span)).await.map_err(|_| S3Error::Stopped)?
    }

    /// Starts a request and does not wait for it (clean-ups from `Drop`).
    pub(crate) fn spawn_detached(&self, request: impl Future<Output = ()> + Send + 'static) {
        self.io.handle().spawn(request);
    }

    /// The same, for a thread that may block (the tools of `objects.rs`, the license, the
    /// probe).
    pub(crate) fn run_blocking<T, F>(&self, request: F) -> CoreResult<T>
    where
        T: Send + 'static,
        F: Future<Output = CoreResult<T>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.io.handle().spawn(async move {
            let _ = tx.send(request.await);
        });
        rx.recv().map_err(|_| S3Error::Stopped)?
    }

    /// An object's bytes and metadata; `None` if absent.
    pub(crate) async fn get(&self, key: &str) -> CoreResult<Option<(Vec<u8>, ObjectMeta)>> {
        self.get_unless(key, None)
            .await
            .map(|found| found.map(|(bytes, meta)| (bytes.unwrap_or_default(), meta)))
    }

    /// An object's bytes if it has at most `max` of them; `Err(size)` (nothing read) if it
    /// is larger, `None` if absent.
    pub(crate) async fn get_at_most(
        &self,
        key: &str,
        max: u64,
    ) -> CoreResult<Option<Result<(Vec<u8>, ObjectMeta), u64>>> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            match store.get_opts(&path, GetOptions::default()).await {
                Ok(found) if found.meta.size > max => Ok(Some(Err(found.meta.size))),
                Ok(found) => {
                    let meta = found.meta.clone();
                    let bytes = found.bytes().await.map_err(store_error(&path))?;
                    Ok(Some(Ok((bytes.to_vec(), meta))))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(store_error(&path)(e)),
            }
        })
        .await
    }

    /// An object unless its ETag is still `etag`: `Some((None, meta))` then (not modified).
    pub(crate) async fn get_unless(
        &self,
        key: &str,
        etag: Option<String>,
    ) -> CoreResult<Option<(Option<Vec<u8>>, ObjectMeta)>> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            let options = GetOptions { if_none_match: etag, ..GetOptions::default() };
            match store.get_opts(&path, options).await {
                Ok(found) => {
                    let meta = found.meta.clone();
                    let bytes = found.bytes().await.map_err(store_error(&path))?;
                    Ok(Some((Some(bytes.to_vec()), meta)))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(object_store::Error::NotModified { .. }) => {
                    let meta = store.head(&path).await.map_err(store_error(&path))?;
                    Ok(Some((None, meta)))
                }
                Err(e) => Err(store_error(&path)(e)),
            }
        })
        .await
    }

    /// Bytes `range` of an object (not empty, within the object), in memory.
    pub(crate) async fn get_range(&self, key: &str, range: Range<u64>) -> CoreResult<Vec<u8>> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            let options = GetOptions { range: Some(GetRange::Bounded(range)), ..GetOptions::default() };
            let found = store.get_opts(&path, options).await.map_err(store_error(&path))?;
            Ok(found.bytes().await.map_err(store_error(&path))?.to_vec())
        })
        .await
    }

    /// Bytes `range` of an object (not empty, within the object), streamed as they arrive;
    /// with `version` (the ETag it was opened at), of that version only: a changed or
    /// deleted object ends the stream with [`S3Error::ChangedWhileRead`].
    /// The ranged GET starts when the stream is first polled (a `HEAD` answer sends none);
    /// its body is read on the I/O runtime, where the client's connections live, and
    /// handed on through a channel of [`STREAM_AHEAD`] chunks, so a slow reader holds the
    /// download back instead of having it buffered, and one that goes away ends it. A body
    /// that ends before the range does (the runtime stopped) ends the stream with an error.
    pub(crate) fn get_range_stream(
        &self,
        key: &str,
        range: Range<u64>,
        version: Option<String>,
    ) -> ByteStream {
        let (store, path, io) = (self.store.clone(), self.path(key), self.io.clone());
        let key = key.to_owned();
        let length = range.end - range.start;
        let started = async move {
            let (chunks, received) = mpsc::channel(STREAM_AHEAD);
            io.handle().spawn(async move {
                let options = GetOptions {
                    range: Some(GetRange::Bounded(range)),
                    if_match: version,
                    ..GetOptions::default()
                };
                let mut body = match store.get_opts(&path, options).await {
                    Ok(found) => found.into_stream(),
                    Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => {
                        let _ = chunks.send(Err(S3Error::ChangedWhileRead { key }.into())).await;
                        return;
                    }
                    Err(e) => {
                        let _ = chunks.send(Err(store_error(&path)(e))).await;
                        return;
                    }
                };
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(store_error(&path));
                    let failed = chunk.is_err();
                    if chunks.send(chunk).await.is_err() || failed {
                        return;
                    }
                }
            });
            stream::unfold(Some((received, length)), |state| async move {
                let (mut received, left) = state?;
                match received.recv().await {
                    Some(Ok(chunk)) => {
                        let left = left.saturating_sub(chunk.len() as u64);
                        Some((Ok(chunk), Some((received, left))))
                    }
                    Some(Err(e)) => Some((Err(e), None)),
                    None if left > 0 => Some((Err(S3Error::Stopped.into()), None)),
                    None => None,
                }
            })
        };
        Box::pin(stream::once(started).flatten())
    }

    pub(crate) async fn head(&self, key: &str) -> CoreResult<Option<ObjectMeta>> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            match store.head(&path).await {
                Ok(meta) => Ok(Some(meta)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(store_error(&path)(e)),
            }
        })
        .await
    }

    /// Writes an object whatever is there.
    pub(crate) async fn put(&self, key: &str, bytes: Vec<u8>) -> CoreResult<Written> {
        match self.put_mode(key, bytes, PutMode::Overwrite).await? {
            Ok(meta) => Ok(meta),
            Err(refused) => {
                Err(CoreError::internal(key, format!("an unconditional write was refused: {refused:?}")))
            }
        }
    }

    /// Writes an object only if the key is free.
    pub(crate) async fn put_new(
        &self,
        key: &str,
        bytes: Vec<u8>,
    ) -> CoreResult<Result<Written, WriteRefused>> {
        self.put_mode(key, bytes, PutMode::Create).await
    }

    /// Writes an object only if it is still at version `etag`.
    pub(crate) async fn put_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        etag: &str,
    ) -> CoreResult<Result<Written, WriteRefused>> {
        let version = UpdateVersion { e_tag: Some(etag.to_owned()), version: None };
        self.put_mode(key, bytes, PutMode::Update(version)).await
    }

    async fn put_mode(
        &self,
        key: &str,
        bytes: Vec<u8>,
        mode: PutMode,
    ) -> CoreResult<Result<Written, WriteRefused>> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            let size = bytes.len() as u64;
            let options = PutOptions { mode, ..PutOptions::default() };
            match store.put_opts(&path, PutPayload::from(bytes), options).await {
                Ok(result) => Ok(Ok(Written { size, e_tag: result.e_tag })),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(Err(WriteRefused::Exists)),
                Err(object_store::Error::Precondition { .. }) => Ok(Err(WriteRefused::Changed)),
                // A conditional update of a key that is gone.
                Err(object_store::Error::NotFound { .. }) => Ok(Err(WriteRefused::Changed)),
                Err(e) => Err(store_error(&path)(e)),
            }
        })
        .await
    }

    /// Deletes an object (absent is fine: S3 deletes are idempotent).
    pub(crate) async fn delete(&self, key: &str) -> CoreResult<()> {
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(async move {
            match store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(store_error(&path)(e)),
            }
        })
        .await
    }

    /// Copies an object to another key (server side).
    pub(crate) async fn copy(&self, from: &str, to: &str) -> CoreResult<()> {
        let (store, from, to) = (self.store.clone(), self.path(from), self.path(to));
        self.run(async move { store.copy(&from, &to).await.map_err(store_error(&from)) }).await
    }

    /// The objects directly in a folder (`dir` without a trailing slash) and the names of
    /// its subfolders. Some stores (SeaweedFS) keep a folder's own entry (`dir/`, size 0)
    /// after its last object went; it is not an object of the folder, and such a folder
    /// may still be listed as a subfolder of its parent (see [`Bucket::holds_objects`]).
    pub(crate) async fn list_dir(&self, dir: &str) -> CoreResult<(Vec<ObjectMeta>, Vec<String>)> {
        let (store, path) = (self.store.clone(), self.path(dir));
        let prefix = path.clone();
        let listed = self
            .run(async move { store.list_with_delimiter(Some(&path)).await.map_err(store_error(&path)) })
            .await?;
        let folders = listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_owned)).collect();
        let objects = listed.objects.into_iter().filter(|meta| meta.location != prefix).collect();
        Ok((objects, folders))
    }

    /// Whether any object is under a folder, at any depth (one request: the first page of
    /// a listing, stopped at the first real object).
    pub(crate) async fn holds_objects(&self, dir: &str) -> CoreResult<bool> {
        let (store, path) = (self.store.clone(), self.path(dir));
        self.run(async move {
            let mut listing = store.list(Some(&path));
            while let Some(meta) = listing.try_next().await.map_err(store_error(&path))? {
                if meta.location != path && !(meta.size == 0 && meta.location.as_ref().ends_with('/')) {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .await
    }

    /// Whether the bucket answers a listing (of `.cms/`) through `store` (this bucket's,
    /// made with other retry settings), from a thread that may block: `Err(Ok(_))` is the
    /// store's failure as it is, for the caller to explain.
    pub(crate) fn check_with_blocking(
        &self,
        store: Arc<dyn ObjectStore>,
    ) -> Result<(), Result<object_store::Error, S3Error>> {
        let path = self.path(".cms");
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.io.handle().spawn(async move {
            let _ = tx.send(store.list_with_delimiter(Some(&path)).await.map(drop));
        });
        match rx.recv() {
            Ok(result) => result.map_err(Ok),
            Err(_) => Err(Err(S3Error::Stopped)),
        }
    }

    /// Every object under a folder, at any depth.
    pub(crate) async fn list_all(&self, dir: &str) -> CoreResult<Vec<ObjectMeta>> {
        let (store, path) = (self.store.clone(), self.path(dir));
        self.run(async move {
            let all: Vec<ObjectMeta> =
                store.list(Some(&path)).try_collect().await.map_err(store_error(&path))?;
            // A folder's own entry (`a/b/`, as consoles and some stores make them) comes
            // back as an object `a/b`; it is no file when other keys are inside it.
            let folders: std::collections::HashSet<&str> = all
                .iter()
                .flat_map(|meta| {
                    let key = meta.location.as_ref();
                    key.match_indices('/').map(move |(at, _)| &key[..at])
                })
                .collect();
            Ok(all.iter().filter(|meta| !folders.contains(meta.location.as_ref())).cloned().collect())
        })
        .await
    }

    /// The objects under a folder whose keys sort after `after` (a full site-relative key).
    pub(crate) async fn list_after(&self, dir: &str, after: &str) -> CoreResult<Vec<ObjectMeta>> {
        let (store, path, offset) = (self.store.clone(), self.path(dir), self.path(after));
        self.run(async move {
            store.list_with_offset(Some(&path), &offset).try_collect().await.map_err(store_error(&path))
        })
        .await
    }

    /// The same, at most `limit` of them.
    pub(crate) async fn list_after_at_most(
        &self,
        dir: &str,
        after: &str,
        limit: usize,
    ) -> CoreResult<Vec<ObjectMeta>> {
        let (store, path, offset) = (self.store.clone(), self.path(dir), self.path(after));
        self.run(async move {
            store
                .list_with_offset(Some(&path), &offset)
                .take(limit)
                .try_collect()
                .await
                .map_err(store_error(&path))
        })
        .await
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }
}

/// What a write stored.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub size: u64,
    pub e_tag: Option<String>,
}

impl Written {
    /// The stamp of an item file just written. The store's own time is only known from a
    /// HEAD; ours is close, and only shown to people as a modification time.
    pub(crate) fn stamp(&self, name: &str) -> FileStamp {
        let modified = time::OffsetDateTime::now_utc().unix_timestamp();
        let change_token = match &self.e_tag {
            Some(etag) => fnv1a(etag.as_bytes()),
            None => fnv1a(format!("{}:{modified}", self.size).as_bytes()),
        };
        FileStamp { name: name.to_owned(), size: self.size, modified, change_token }
    }
}

/// An item file's stamp from its object's metadata: the change token is a digest of the
/// ETag (S3 gives every write a new one), or of size and time where a store gives none.
pub(crate) fn stamp_of(name: &str, meta: &ObjectMeta) -> FileStamp {
    let change_token = match &meta.e_tag {
        Some(etag) => fnv1a(etag.as_bytes()),
        None => fnv1a(
            format!("{}:{}", meta.size, meta.last_modified.timestamp_nanos_opt().unwrap_or(0)).as_bytes(),
        ),
    };
    FileStamp {
        name: name.to_owned(),
        size: meta.size,
        modified: meta.last_modified.timestamp(),
        change_token,
    }
}

/// FNV-1a: stable across builds and processes (every node must compute the same token).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
