//! History under `.cms/versions/<collection path>/<item filename>/<timestamp>.md`, as on a
//! site folder.

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{VersionStamp, VersionStore};
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
        Ok(objects
            .iter()
            .filter_map(|meta| {
                let timestamp = timestamp_of(meta.location.filename()?)?;
                Some(VersionStamp { timestamp, size: meta.size })
            })
            .collect())
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
    ) -> CoreResult<()> {
        let key = Self::key(collection, name, timestamp);
        match self.bucket.put_new(&key, bytes.to_vec()).await? {
            Ok(_) => Ok(()),
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
        self.bucket.delete(&Self::key(collection, name, timestamp)).await
    }

    /// Folders appear in a listing only while they hold objects, so every one listed has
    /// a history.
    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let (_, folders) = self.bucket.list_dir(&Self::collection_dir(collection)).await?;
        Ok(folders.into_iter().filter(|name| ItemFilename::parse(name).is_some()).collect())
    }
}
