//! History under `.cms/versions/<collection path>/<item filename>/<timestamp>.md`, as on a
//! site folder, with who made each version in the history's `authors` object, in the same
//! form ([`cms_core::version_authors`]). Keeping an author reads that object and writes it
//! back only if it is still the one read (a few tries, then it is left unknown): best
//! effort, after the version, so a failure never fails the write.

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{VersionStamp, VersionStore};
use cms_core::slug::ItemFilename;
use cms_core::version_authors::{self, AUTHORS_FILE};
use cms_core::{CoreError, CoreResult};

use crate::bucket::Bucket;

/// Tries of keeping an author while other nodes change the same `authors` object.
const AUTHOR_TRIES: usize = 3;
/// Size past which the `authors` object is written back without the lines of removed
/// versions (as on a folder).
const AUTHORS_COMPACT_BYTES: usize = 32 * 1024;

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

    fn authors_key(collection: &Collection, name: &ItemFilename) -> String {
        format!("{}/{AUTHORS_FILE}", Self::item_dir(collection, name))
    }

    /// What the history's `authors` object records (nothing when there is none).
    async fn authors(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<std::collections::BTreeMap<i64, Option<String>>> {
        let stored = self.bucket.get(&Self::authors_key(collection, name)).await?;
        Ok(stored
            .map(|(bytes, _)| version_authors::parse(&String::from_utf8_lossy(&bytes)))
            .unwrap_or_default())
    }

    /// Records who kept the version at `timestamp` (an unknown one only where the object
    /// exists: it may hold a line of a removed version of that timestamp).
    async fn keep_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        author: Option<&str>,
    ) {
        let key = Self::authors_key(collection, name);
        let known = author.and_then(version_authors::author_line).is_some();
        let line = version_authors::record(timestamp, author);
        for _ in 0..AUTHOR_TRIES {
            let written = match self.bucket.get(&key).await {
                Ok(None) if !known => return,
                Ok(None) => self.bucket.put_new(&key, line.clone().into_bytes()).await,
                Ok(Some((bytes, meta))) => {
                    let mut text = String::from_utf8_lossy(&bytes).into_owned() + &line;
                    if text.len() > AUTHORS_COMPACT_BYTES {
                        match self.version_timestamps(collection, name).await {
                            Ok(kept) => text = version_authors::compact(&text, &kept),
                            Err(error) => {
                                tracing::warn!(key, %error, "a version's author was not kept");
                                return;
                            }
                        }
                    }
                    match meta.e_tag {
                        Some(etag) => self.bucket.put_if(&key, text.into_bytes(), &etag).await,
                        None => self.bucket.put(&key, text.into_bytes()).await.map(Ok),
                    }
                }
                Err(error) => Err(error),
            };
            match written {
                Ok(Ok(_)) => return,
                // Another node changed it meanwhile: read it again.
                Ok(Err(_)) => continue,
                Err(error) => {
                    tracing::warn!(key, %error, "a version's author was not kept");
                    return;
                }
            }
        }
        tracing::warn!(key, "a version's author was not kept: the authors object kept changing");
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
        let has_authors = objects.iter().any(|meta| meta.location.filename() == Some(AUTHORS_FILE));
        let authors = if has_authors { self.authors(collection, name).await? } else { Default::default() };
        Ok(objects
            .iter()
            .filter_map(|meta| {
                let timestamp = timestamp_of(meta.location.filename()?)?;
                let author = authors.get(&timestamp).cloned().flatten();
                Some(VersionStamp { timestamp, size: meta.size, author, commit: None })
            })
            .collect())
    }

    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>> {
        Ok(self.authors(collection, name).await?.remove(&timestamp).flatten())
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
        self.bucket.delete(&Self::key(collection, name, timestamp)).await
    }

    /// Folders appear in a listing only while they hold objects, so every one listed has
    /// a history.
    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let (_, folders) = self.bucket.list_dir(&Self::collection_dir(collection)).await?;
        Ok(folders.into_iter().filter(|name| ItemFilename::parse(name).is_some()).collect())
    }
}
