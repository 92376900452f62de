//! History under `.cms/versions/<collection path>/<item filename>/<timestamp>.md`, as on a
//! site folder, each version's author in `<timestamp>.author` beside it (none for versions
//! kept before authors were recorded). The author is written after the version, best
//! effort: a failure leaves it unknown and does not fail the write.

use futures_util::future::try_join_all;

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{VersionStamp, VersionStore, author_line};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};

use crate::bucket::Bucket;

pub struct S3VersionStore {
    bucket: Bucket,
}

impl S3VersionStore {
    pub(crate) fn new(bucket: &Bucket) -> Self {
        Self { bucket: bucket.clone() }
    }

    fn collection_dir(collection: &Collection) -> String {
        format!(".cms/versions/{}", collection.path)
    }

    fn item_dir(collection: &Collection, name: &ItemFilename) -> String {
        format!("{}/{}", Self::collection_dir(collection), name.as_str())
    }

    fn key(collection: &Collection, name: &ItemFilename, timestamp: i64) -> String {
        format!("{}/{timestamp}.md", Self::item_dir(collection, name))
    }

    fn author_key(collection: &Collection, name: &ItemFilename, timestamp: i64) -> String {
        format!("{}/{timestamp}.author", Self::item_dir(collection, name))
    }

    async fn keep_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        author: Option<&str>,
    ) {
        let key = Self::author_key(collection, name, timestamp);
        let kept = match author.and_then(author_line) {
            Some(line) => self.bucket.put(&key, line.into_bytes()).await.map(|_| ()),
            // What a removed version of that timestamp may have left.
            None => self.bucket.delete(&key).await,
        };
        if let Err(error) = kept {
            tracing::warn!(key, %error, "a version's author was not kept");
        }
    }
}

fn timestamp_of(file_name: &str) -> Option<i64> {
    file_name.strip_suffix(".md")?.parse().ok()
}

#[async_trait]
impl VersionStore for S3VersionStore {
    async fn list_versions(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let (objects, _) = self.bucket.list_dir(&Self::item_dir(collection, name)).await?;
        let names: Vec<&str> = objects.iter().filter_map(|meta| meta.location.filename()).collect();
        let has_author = |timestamp: i64| names.contains(&format!("{timestamp}.author").as_str());
        // Only the authors the listing shows are read, all at once.
        let versions = objects.iter().filter_map(|meta| {
            let timestamp = timestamp_of(meta.location.filename()?)?;
            Some(async move {
                let author = match has_author(timestamp) {
                    true => self.version_author(collection, name, timestamp).await?,
                    false => None,
                };
                CoreResult::Ok(VersionStamp { timestamp, size: meta.size, author })
            })
        });
        try_join_all(versions).await
    }

    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>> {
        let stored = self.bucket.get(&Self::author_key(collection, name, timestamp)).await?;
        Ok(stored.and_then(|(bytes, _)| author_line(&String::from_utf8_lossy(&bytes))))
    }

    async fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>> {
        Ok(self.bucket.get(&Self::key(collection, name, timestamp)).await?.map(|(bytes, _)| bytes))
    }

    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        let key = Self::key(collection, name, timestamp);
        match self.bucket.put_new(&key, bytes.to_vec()).await? {
            Ok(_) => {
                self.keep_author(collection, name, timestamp, author).await;
                Ok(())
            }
            // Two nodes keeping the same version in the same second (each read the item
            // before one of them changed it): one snapshot is what both meant.
            Err(_) if self.bucket.get(&key).await?.is_some_and(|(stored, _)| stored == bytes) => Ok(()),
            Err(_) => Err(CoreError::Conflict(format!("version {timestamp} of {} exists", name.as_str()))),
        }
    }

    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        self.bucket.delete(&Self::key(collection, name, timestamp)).await?;
        self.bucket.delete(&Self::author_key(collection, name, timestamp)).await
    }

    /// Folders appear in a listing only while they hold objects, so every one listed has
    /// a history.
    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let (_, folders) = self.bucket.list_dir(&Self::collection_dir(collection)).await?;
        Ok(folders.into_iter().filter(|name| ItemFilename::parse(name).is_some()).collect())
    }
}
