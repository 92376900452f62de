//! The bucket for tools that are not ports: whole objects by site-relative key (for
//! `cms storage copy`), and shared state files with atomic read-modify-write cycles (for
//! what several nodes must agree on: webhook subscriptions, the scheduled-change mark).
//! Every call here waits on the calling thread: callers are CLI commands and the webhook
//! workers' threads, never an async worker.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use cms_core::{CoreError, CoreResult};
use object_store::{ObjectStoreExt, WriteMultipart};

use crate::S3Site;
use crate::error::store_error;
use crate::state::StateObject;

/// One object as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Site-relative (`content/posts/a.md`).
    pub key: String,
    pub size: u64,
    /// When it was last written (Unix seconds).
    pub modified: i64,
}

/// Files read in parts of this size when copied into the bucket.
const COPY_PART: usize = 8 * 1024 * 1024;

impl S3Site {
    /// Every object of the site (under its prefix), at any depth, with its size.
    pub fn list_objects_blocking(&self) -> CoreResult<Vec<ObjectInfo>> {
        let bucket = self.bucket.clone();
        let all = self.bucket.run_blocking(async move { bucket.list_all("").await })?;
        Ok(all
            .iter()
            .filter_map(|meta| {
                let key = self.bucket.key_of(&meta.location)?;
                Some(ObjectInfo {
                    key: key.trim_start_matches('/').to_owned(),
                    size: meta.size,
                    modified: meta.last_modified.timestamp(),
                })
            })
            .collect())
    }

    /// An object's bytes; `None` if absent.
    pub fn get_object_blocking(&self, key: &str) -> CoreResult<Option<Vec<u8>>> {
        let (bucket, key) = (self.bucket.clone(), key.to_owned());
        self.bucket.run_blocking(async move { Ok(bucket.get(&key).await?.map(|(bytes, _)| bytes)) })
    }

    /// Stores a local file as an object, in parts when it is large (never whole in
    /// memory). The file is read on the I/O runtime (this is for CLI commands).
    pub fn put_file_blocking(&self, key: &str, file: &Path) -> CoreResult<u64> {
        let (bucket, key, file) = (self.bucket.clone(), key.to_owned(), file.to_owned());
        self.bucket.run_blocking(async move {
            let unreadable = |e: std::io::Error| CoreError::internal(file.display(), e);
            let mut source = std::fs::File::open(&file).map_err(unreadable)?;
            let mut first = vec![0; COPY_PART];
            let filled = read_full(&mut source, &mut first).map_err(unreadable)?;
            first.truncate(filled);
            if filled < COPY_PART {
                return bucket.put(&key, first).await.map(|written| written.size);
            }
            let (store, path) = (bucket.store().clone(), bucket.path(&key));
            let upload = store.put_multipart(&path).await.map_err(store_error(&path))?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, COPY_PART);
            let mut size = first.len() as u64;
            writer.put(first.into());
            loop {
                let mut part = vec![0; COPY_PART];
                let filled = read_full(&mut source, &mut part).map_err(unreadable)?;
                if filled == 0 {
                    break;
                }
                part.truncate(filled);
                size += filled as u64;
                // At most a few parts in flight.
                writer.wait_for_capacity(2).await.map_err(store_error(&path))?;
                writer.put(part.into());
            }
            writer.finish().await.map_err(store_error(&path))?;
            Ok(size)
        })
    }

    /// Stores bytes as an object (overwriting).
    pub fn put_object_blocking(&self, key: &str, bytes: Vec<u8>) -> CoreResult<()> {
        let (bucket, key) = (self.bucket.clone(), key.to_owned());
        self.bucket.run_blocking(async move { bucket.put(&key, bytes).await.map(drop) })
    }

    /// A small state file shared by every node (`.cms/<name>`).
    pub fn shared_state(&self, name: &str) -> SharedState {
        SharedState {
            writers: Arc::default(),
            object: Arc::new(StateObject::new(
                self.bucket.clone(),
                format!(".cms/{name}"),
                self.state_max_age,
                keep_bytes,
            )),
            site_bucket: self.bucket.clone(),
        }
    }
}

fn read_full(source: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match source.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn keep_bytes(_key: &str, bytes: Option<&[u8]>) -> CoreResult<Option<Vec<u8>>> {
    Ok(bytes.map(<[u8]>::to_vec))
}

/// A state file several nodes read and change: reads are kept for `state_max_age`;
/// changes are conditional writes, repeated when another node wrote in between.
#[derive(Clone)]
pub struct SharedState {
    /// This process's writers take turns (the delivery workers append to one log), so
    /// that only other nodes' writes can make a conditional write lose.
    writers: Arc<std::sync::Mutex<()>>,
    object: Arc<StateObject<Option<Vec<u8>>>>,
    site_bucket: crate::Bucket,
}

impl SharedState {
    /// The file's text (`None`: no such file), at most `state_max_age` old.
    pub fn read_blocking(&self) -> CoreResult<Option<String>> {
        let object = self.object.clone();
        let bytes = self.site_bucket.run_blocking(async move { Ok(object.get().await?.as_ref().clone()) })?;
        bytes
            .map(|bytes| {
                String::from_utf8(bytes)
                    .map_err(|_| CoreError::Corrupt(format!("{} is not UTF-8 text", self.object.key())))
            })
            .transpose()
    }

    /// Applies `change` to the current text (`None`: no file yet) and writes what it
    /// returns (`None`: write nothing), atomically against every other node; returns what
    /// `change` answered last.
    pub fn update_blocking<R: Send + 'static>(
        &self,
        change: impl FnMut(Option<&str>) -> CoreResult<(Option<String>, R)> + Send + 'static,
    ) -> CoreResult<R> {
        let _turn = self.writers.lock().unwrap_or_else(|p| p.into_inner());
        let object = self.object.clone();
        self.site_bucket.run_blocking(async move {
            let mut change = change;
            object
                .update(|bytes| {
                    let text = bytes
                        .map(|b| {
                            std::str::from_utf8(b).map_err(|_| {
                                CoreError::Corrupt(format!("{} is not UTF-8 text", object.key()))
                            })
                        })
                        .transpose()?;
                    let (new, answer) = change(text)?;
                    Ok((new.map(String::into_bytes), answer))
                })
                .await
        })
    }
}
