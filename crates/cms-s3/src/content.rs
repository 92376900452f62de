//! Item files as objects: `content/posts/2026-01-12-hello.md` is the key of the file
//! `content/posts/2026-01-12-hello.md` of a site folder.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::item::MAX_ITEM_BYTES;
use cms_core::ports::{ContentStore, FileStamp, StoredFile};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};
use futures_util::StreamExt;

use crate::bucket::{Bucket, WriteRefused, Written, stamp_of};
use crate::changes::Journal;

/// Reads of one `read_many` batch in flight at once.
const PARALLEL_READS: usize = 16;
/// ETags remembered for conditional replaces, at most (then forgotten all at once: a
/// forgotten one costs one HEAD).
const MAX_REMEMBERED: usize = 8192;

/// Item files in the bucket. Cheap to clone.
#[derive(Debug, Clone)]
pub struct S3ContentStore {
    bucket: Bucket,
    journal: Arc<Journal>,
    /// The ETag behind each change token this node read or wrote last, per item: a replace
    /// names the version it read by its stamp, and the store wants the ETag.
    etags: Arc<Mutex<RememberedEtags>>,
}

/// (collection index, item filename) → (change token, ETag).
type RememberedEtags = HashMap<(usize, String), (u64, String)>;

impl S3ContentStore {
    pub(crate) fn new(bucket: Bucket, journal: Arc<Journal>) -> Self {
        Self { bucket, journal, etags: Arc::default() }
    }

    fn key(collection: &Collection, name: &str) -> String {
        format!("{}/{name}", collection.path)
    }

    fn remember(&self, collection: &Collection, name: &str, token: u64, etag: Option<&String>) {
        let mut etags = self.etags.lock().unwrap_or_else(|p| p.into_inner());
        let key = (collection.index, name.to_owned());
        match etag {
            Some(etag) => {
                if etags.len() >= MAX_REMEMBERED {
                    etags.clear();
                }
                etags.insert(key, (token, etag.clone()));
            }
            None => {
                etags.remove(&key);
            }
        }
    }

    fn remembered(&self, collection: &Collection, name: &str, token: u64) -> Option<String> {
        let etags = self.etags.lock().unwrap_or_else(|p| p.into_inner());
        etags
            .get(&(collection.index, name.to_owned()))
            .filter(|(t, _)| *t == token)
            .map(|(_, etag)| etag.clone())
    }

    async fn read_one(&self, collection: &Collection, name: &str) -> CoreResult<Option<StoredFile>> {
        let found = self.bucket.get_at_most(&Self::key(collection, name), MAX_ITEM_BYTES).await?;
        match found {
            None => Ok(None),
            Some(Err(size)) => Err(CoreError::Corrupt(format!(
                "item file {name} is {size} bytes, over the limit of {MAX_ITEM_BYTES}"
            ))),
            Some(Ok((bytes, meta))) => {
                let stamp = stamp_of(name, &meta);
                self.remember(collection, name, stamp.change_token, meta.e_tag.as_ref());
                Ok(Some(StoredFile { bytes, stamp }))
            }
        }
    }

    /// After a write: remembers its ETag, tells the other nodes, and gives the stamp a
    /// listing will show (the store's own modification time, from a HEAD).
    async fn written(
        &self,
        collection: &Collection,
        name: &str,
        key: &str,
        written: Written,
    ) -> CoreResult<FileStamp> {
        self.remember(collection, name, written.stamp(name).change_token, written.e_tag.as_ref());
        match self.bucket.head(key).await {
            Ok(Some(meta)) if meta.e_tag == written.e_tag => Ok(stamp_of(name, &meta)),
            // Written over since (by another node), or the HEAD failed: the write is
            // stored all the same, so its own stamp (a listing may show another time,
            // which costs one read at the next comparison).
            _ => Ok(written.stamp(name)),
        }
    }

    /// Writes the object and, in the same task, the journal entry that tells the other
    /// nodes: the task runs on even if the request that started it is dropped, so a
    /// stored write is never left unannounced.
    async fn put_announced(
        &self,
        collection: &Collection,
        name: &str,
        bytes: &[u8],
        if_match: Option<String>,
    ) -> CoreResult<Result<Written, WriteRefused>> {
        let (bucket, journal) = (self.bucket.clone(), self.journal.clone());
        let (key, slug, name, bytes) =
            (Self::key(collection, name), collection.slug.clone(), name.to_owned(), bytes.to_vec());
        self.bucket
            .run(async move {
                let written = match if_match {
                    Some(etag) => bucket.put_if(&key, bytes, &etag).await?,
                    None => bucket.put_new(&key, bytes).await?,
                };
                if written.is_ok() {
                    journal.item_changed_in(&slug, &name).await;
                }
                Ok(written)
            })
            .await
    }

    /// The ETag of the version `expected` describes, if that is still the stored one.
    async fn current_etag(
        &self,
        collection: &Collection,
        name: &str,
        expected: &FileStamp,
    ) -> CoreResult<Option<String>> {
        if let Some(etag) = self.remembered(collection, name, expected.change_token) {
            return Ok(Some(etag));
        }
        let Some(meta) = self.bucket.head(&Self::key(collection, name)).await? else { return Ok(None) };
        if stamp_of(name, &meta).change_token != expected.change_token {
            return Ok(None);
        }
        Ok(meta.e_tag)
    }
}

fn stale(name: &str) -> CoreError {
    CoreError::Stale(format!("{name} changed while it was being written"))
}

#[async_trait]
impl ContentStore for S3ContentStore {
    async fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        let (objects, _folders) = self.bucket.list_dir(&collection.path).await?;
        Ok(objects
            .iter()
            .filter_map(|meta| {
                let name = meta.location.filename()?;
                // Hidden objects are not content, as hidden files in a folder are not.
                (!name.starts_with('.')).then(|| stamp_of(name, meta))
            })
            .collect())
    }

    async fn stat(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>> {
        let meta = self.bucket.head(&Self::key(collection, name.as_str())).await?;
        Ok(meta.map(|meta| stamp_of(name.as_str(), &meta)))
    }

    async fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        self.read_one(collection, name.as_str()).await
    }

    /// Reads the batch with up to [`PARALLEL_READS`] requests in flight, in the order of
    /// `names`.
    async fn read_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<StoredFile>>> {
        let reads: Vec<_> = names
            .iter()
            .map(|name| {
                let (store, collection, name) = (self.clone(), collection.clone(), name.as_str().to_owned());
                async move { store.read_one(&collection, &name).await }
            })
            .collect();
        futures_util::stream::iter(reads).buffered(PARALLEL_READS).collect().await
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp> {
        let key = Self::key(collection, name.as_str());
        let written = match self.put_announced(collection, name.as_str(), bytes, None).await? {
            Ok(written) => written,
            Err(_) => return Err(CoreError::Conflict(format!("{} already exists", name.as_str()))),
        };
        self.written(collection, name.as_str(), &key, written).await
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp> {
        let key = Self::key(collection, name.as_str());
        let Some(etag) = self.current_etag(collection, name.as_str(), expected).await? else {
            return Err(stale(name.as_str()));
        };
        let written = match self.put_announced(collection, name.as_str(), bytes, Some(etag)).await? {
            Ok(written) => written,
            Err(WriteRefused::Changed | WriteRefused::Exists) => {
                self.remember(collection, name.as_str(), 0, None);
                return Err(stale(name.as_str()));
            }
        };
        self.written(collection, name.as_str(), &key, written).await
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        let key = Self::key(collection, name.as_str());
        if self.bucket.head(&key).await?.is_none() {
            return Err(CoreError::not_found(format!("{} does not exist", name.as_str())));
        }
        self.bucket.delete(&key).await?;
        self.remember(collection, name.as_str(), 0, None);
        self.journal.item_changed(collection, name.as_str()).await;
        Ok(())
    }
}
