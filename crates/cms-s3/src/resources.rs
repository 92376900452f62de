//! Resource folders as keys (`media/uploads/2026/a.png`). A bucket has no folders: one
//! exists while some key starts with its path, and an empty one made through the API
//! holds a hidden marker object, [`FOLDER_MARKER`]. Hidden names are never listed.
//!
//! Uploads are buffered up to [`PART_SIZE`] and stored with one conditional PUT under the
//! first free name (`a.png`, `a-1.png`, ...); larger ones go to `.cms/uploads/` as a
//! multipart upload, part by part, and are copied into place at commit.
//!
//! Not atomic here, unlike on a site folder: a rename is a copy then a delete, and a large
//! upload's free name is checked before its copy, so two nodes storing the same name at
//! the same instant can both pick it (the last copy wins).

use std::ops::Range;

use async_trait::async_trait;
use cms_core::ports::{ByteStream, ResourceReader, ResourceStat, ResourceStore, UploadSink};
use cms_core::resource::{FileName, ResourceFolder, Subpath};
use cms_core::{CoreError, CoreResult};
use object_store::{MultipartUpload, ObjectMeta, ObjectStoreExt, PutPayload};
use ring::rand::{SecureRandom, SystemRandom};

use crate::bucket::{Bucket, WriteRefused};
use crate::error::store_error;

/// What makes an empty folder exist.
pub const FOLDER_MARKER: &str = ".keep";
/// Uploads up to this size are one PUT; larger ones are multipart uploads of such parts
/// (S3 wants at least 5 MiB a part).
const PART_SIZE: usize = 8 * 1024 * 1024;
/// How many numbered names (`-1`, `-2`, ...) an upload tries before giving up.
const MAX_NUMBERED: u32 = 10_000;

#[derive(Debug, Clone)]
pub struct S3ResourceStore {
    bucket: Bucket,
}

impl S3ResourceStore {
    pub(crate) fn new(bucket: &Bucket) -> Self {
        Self { bucket: bucket.clone() }
    }
}

fn dir_key(folder: &ResourceFolder, dir: &Subpath) -> String {
    if dir.is_root() { folder.path.clone() } else { format!("{}/{}", folder.path, dir.as_str()) }
}

fn file_key(folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> String {
    format!("{}/{}", dir_key(folder, dir), name.as_str())
}

fn file_stat(name: FileName, meta: &ObjectMeta) -> ResourceStat {
    ResourceStat { name, is_dir: false, size: meta.size, modified: meta.last_modified.timestamp() }
}

fn no_folder(folder: &ResourceFolder, dir: &Subpath) -> CoreError {
    CoreError::not_found(format!("no folder {:?} in resource folder {}", dir.as_str(), folder.index))
}

impl S3ResourceStore {
    /// Whether a folder exists: the resource folder always does; a subfolder while any key
    /// is in it.
    async fn dir_exists(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<bool> {
        if dir.is_root() {
            return Ok(true);
        }
        self.bucket.holds_objects(&dir_key(folder, dir)).await
    }

    /// A name's first free numbered form in `dir` (checked by HEAD, for large uploads).
    async fn free_name(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<FileName> {
        for n in 0..=MAX_NUMBERED {
            let candidate = if n == 0 { name.clone() } else { name.numbered(n) };
            let key = file_key(folder, dir, &candidate);
            if self.bucket.head(&key).await?.is_none()
                && !self.dir_exists(folder, &dir.join(&candidate)).await?
            {
                return Ok(candidate);
            }
        }
        Err(CoreError::Conflict(format!("no free name like {name} in {:?}", dir.as_str())))
    }
}

#[async_trait]
impl ResourceStore for S3ResourceStore {
    async fn list(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>> {
        let (objects, folders) = self.bucket.list_dir(&dir_key(folder, dir)).await?;
        let mut entries: Vec<ResourceStat> = objects
            .iter()
            .filter_map(|meta| {
                let name = FileName::parse(meta.location.filename()?).ok()?;
                Some(file_stat(name, meta))
            })
            .collect();
        for name in folders {
            let Ok(name) = FileName::parse(&name) else { continue };
            // A store may list a folder whose last object went; it is gone.
            if self.dir_exists(folder, &dir.join(&name)).await? {
                entries.push(ResourceStat { name, is_dir: true, size: 0, modified: 0 });
            }
        }
        if entries.is_empty() && !dir.is_root() && !self.dir_exists(folder, dir).await? {
            return Err(no_folder(folder, dir));
        }
        Ok(entries)
    }

    async fn stat(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>> {
        if let Some(meta) = self.bucket.head(&file_key(folder, dir, name)).await? {
            return Ok(Some(file_stat(name.clone(), &meta)));
        }
        if self.dir_exists(folder, &dir.join(name)).await? {
            return Ok(Some(ResourceStat { name: name.clone(), is_dir: true, size: 0, modified: 0 }));
        }
        Ok(None)
    }

    async fn read_head(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>> {
        let key = file_key(folder, dir, name);
        match self.bucket.get_at_most(&key, max as u64).await? {
            None => Err(CoreError::not_found(format!("no file {name}"))),
            Some(Ok((bytes, _))) => Ok(bytes),
            Some(Err(size)) => match (max as u64).min(size) {
                0 => Ok(Vec::new()),
                end => self.bucket.get_range(&key, 0..end).await,
            },
        }
    }

    async fn read_all(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: u64,
    ) -> CoreResult<Option<Vec<u8>>> {
        match self.bucket.get_at_most(&file_key(folder, dir, name), max).await? {
            None => Ok(None),
            Some(Ok((bytes, _))) => Ok(Some(bytes)),
            Some(Err(_)) => Err(CoreError::TooLarge(format!("{name} is over {max} bytes"))),
        }
    }

    async fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>> {
        let key = file_key(folder, dir, name);
        let Some(meta) = self.bucket.head(&key).await? else { return Ok(None) };
        let reader =
            S3Reader { bucket: self.bucket.clone(), key, size: meta.size, version: meta.e_tag.clone() };
        Ok(Some((Box::new(reader), file_stat(name.clone(), &meta))))
    }

    async fn begin_upload(&self) -> CoreResult<Box<dyn UploadSink>> {
        Ok(Box::new(S3Upload { store: self.clone(), buffer: Vec::new(), multipart: None }))
    }

    async fn rename(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()> {
        let (source, target) = (file_key(folder, from.0, from.1), file_key(folder, to.0, to.1));
        if self.bucket.head(&source).await?.is_none() {
            return Err(CoreError::not_found(format!("no file {} in {:?}", from.1, from.0.as_str())));
        }
        if !self.dir_exists(folder, to.0).await? {
            return Err(no_folder(folder, to.0));
        }
        if self.stat(folder, to.0, to.1).await?.is_some() {
            return Err(CoreError::Conflict(format!("{} already exists in {:?}", to.1, to.0.as_str())));
        }
        self.bucket.copy(&source, &target).await?;
        self.bucket.delete(&source).await
    }

    async fn delete(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let key = file_key(folder, dir, name);
        if self.bucket.head(&key).await?.is_some() {
            return self.bucket.delete(&key).await;
        }
        let inside = self.bucket.list_all(&key).await?;
        // Only its own marker: an empty subfolder inside (its marker) makes it not empty.
        let marker = self.bucket.path(&format!("{key}/{FOLDER_MARKER}"));
        let only_marker = inside.iter().all(|meta| meta.location == marker);
        match (inside.is_empty(), only_marker) {
            (true, _) => Err(CoreError::not_found(format!("no file or folder {name} in {:?}", dir.as_str()))),
            (false, true) => self.bucket.delete(&format!("{key}/{FOLDER_MARKER}")).await,
            (false, false) => {
                Err(CoreError::Conflict(format!("folder {name} is not empty; delete its files first")))
            }
        }
    }

    async fn create_dir(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        if !self.dir_exists(folder, dir).await? {
            return Err(no_folder(folder, dir));
        }
        if self.stat(folder, dir, name).await?.is_some() {
            return Err(CoreError::Conflict(format!("{name} already exists in {:?}", dir.as_str())));
        }
        self.bucket.put(&format!("{}/{FOLDER_MARKER}", file_key(folder, dir, name)), Vec::new()).await?;
        Ok(())
    }
}

/// A resource object, each read by range one ranged GET streamed as it arrives (see
/// [`Bucket::get_range_stream`]), of the version opened: each GET names its ETag.
struct S3Reader {
    bucket: Bucket,
    key: String,
    /// As the object was when it was opened.
    size: u64,
    /// Its ETag then (stores that give none are read as they are).
    version: Option<String>,
}

impl ResourceReader for S3Reader {
    fn range(&self, range: Range<u64>) -> ByteStream {
        let end = range.end.min(self.size);
        if range.start >= end {
            // A ranged GET must name at least one byte of the object.
            return Box::pin(futures_util::stream::empty());
        }
        self.bucket.get_range_stream(&self.key, range.start..end, self.version.clone())
    }
}

/// An upload being received: in memory up to [`PART_SIZE`], then as a multipart upload.
struct S3Upload {
    store: S3ResourceStore,
    buffer: Vec<u8>,
    multipart: Option<Multipart>,
}

struct Multipart {
    staging_key: String,
    upload: Option<PendingParts>,
}

/// A multipart upload that is aborted (its parts deleted) when dropped before it was
/// completed, wherever that happens: with the upload, inside a part's task whose request
/// was dropped, or after an error.
struct PendingParts {
    upload: Option<Box<dyn MultipartUpload>>,
    bucket: Bucket,
}

impl PendingParts {
    async fn put_part(&mut self, part: PutPayload) -> object_store::Result<()> {
        self.upload.as_mut().expect("present until completed").put_part(part).await
    }

    async fn complete(mut self) -> object_store::Result<()> {
        let mut upload = self.upload.take().expect("present until completed");
        match upload.complete().await {
            Ok(_) => Ok(()),
            Err(error) => {
                let _ = upload.abort().await;
                Err(error)
            }
        }
    }
}

impl Drop for PendingParts {
    fn drop(&mut self) {
        if let Some(mut upload) = self.upload.take() {
            self.bucket.spawn_detached(async move {
                let _ = upload.abort().await;
            });
        }
    }
}

impl S3Upload {
    /// Sends the buffered bytes as the next part, starting the multipart upload first.
    async fn send_part(&mut self) -> CoreResult<()> {
        let bucket = self.store.bucket.clone();
        if self.multipart.is_none() {
            let staging_key = format!(".cms/uploads/.upload-{}", random_id()?);
            let (store, path) = (bucket.store().clone(), bucket.path(&staging_key));
            let upload = bucket
                .run(async move { store.put_multipart(&path).await.map_err(store_error(&path)) })
                .await?;
            let upload = PendingParts { upload: Some(upload), bucket: bucket.clone() };
            self.multipart = Some(Multipart { staging_key, upload: Some(upload) });
        }
        let multipart = self.multipart.as_mut().expect("started above");
        let mut upload = multipart
            .upload
            .take()
            .ok_or_else(|| CoreError::internal("an upload", "an earlier part was interrupted"))?;
        let part = PutPayload::from(std::mem::take(&mut self.buffer));
        let key = multipart.staging_key.clone();
        let upload = bucket
            .run(async move {
                upload.put_part(part).await.map_err(store_error(&key))?;
                Ok(upload)
            })
            .await?;
        multipart.upload = Some(upload);
        Ok(())
    }
}

fn random_id() -> CoreResult<String> {
    let mut id = [0u8; 12];
    SystemRandom::new()
        .fill(&mut id)
        .map_err(|_| CoreError::internal("an upload id", "the system random source failed"))?;
    Ok(hex::encode(id))
}

#[async_trait]
impl UploadSink for S3Upload {
    async fn write(&mut self, chunk: &[u8]) -> CoreResult<()> {
        self.buffer.extend_from_slice(chunk);
        if self.buffer.len() >= PART_SIZE {
            self.send_part().await?;
        }
        Ok(())
    }

    async fn commit(
        mut self: Box<Self>,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<ResourceStat> {
        let store = self.store.clone();
        if !store.dir_exists(folder, dir).await? {
            return Err(no_folder(folder, dir));
        }
        let bucket = store.bucket.clone();
        if self.multipart.is_none() {
            // Small: one conditional PUT per candidate name, so no other upload is ever
            // overwritten.
            let bytes = std::mem::take(&mut self.buffer);
            for n in 0..=MAX_NUMBERED {
                let candidate = if n == 0 { name.clone() } else { name.numbered(n) };
                if store.dir_exists(folder, &dir.join(&candidate)).await? {
                    continue;
                }
                match bucket.put_new(&file_key(folder, dir, &candidate), bytes.clone()).await? {
                    Ok(written) => {
                        let modified = time::OffsetDateTime::now_utc().unix_timestamp();
                        return Ok(ResourceStat {
                            name: candidate,
                            is_dir: false,
                            size: written.size,
                            modified,
                        });
                    }
                    Err(WriteRefused::Exists | WriteRefused::Changed) => continue,
                }
            }
            return Err(CoreError::Conflict(format!("no free name like {name} in {:?}", dir.as_str())));
        }
        if !self.buffer.is_empty() {
            self.send_part().await?;
        }
        let mut multipart = self.multipart.take().expect("checked above");
        let upload = multipart
            .upload
            .take()
            .ok_or_else(|| CoreError::internal("an upload", "an earlier part was interrupted"))?;
        let staging_key = multipart.staging_key.clone();
        let key = staging_key.clone();
        bucket.run(async move { upload.complete().await.map_err(store_error(&key)) }).await?;
        // From here the staged object exists: it goes whatever happens next.
        let placed = async {
            let stored = store.free_name(folder, dir, name).await?;
            let target = file_key(folder, dir, &stored);
            bucket.copy(&staging_key, &target).await?;
            Ok::<_, CoreError>((stored, target))
        }
        .await;
        bucket.delete(&staging_key).await?;
        let (stored, target) = placed?;
        let meta = bucket
            .head(&target)
            .await?
            .ok_or_else(|| CoreError::internal("storing an upload", "the stored file vanished"))?;
        Ok(file_stat(stored, &meta))
    }
}
