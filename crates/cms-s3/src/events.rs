//! The site's event history in the bucket ([`EventStore`]): one object per event,
//!
//! ```text
//! .cms/events/<id, 20 digits>     the record
//! .cms/events-head                a recent last id (a hint for a node that starts)
//! ```
//!
//! A node appends at the id after the last it knows with a conditional create
//! (`If-None-Match: *`); when another node took that id first, it lists what it missed and
//! tries the next one. So ids have no gaps and every node reads the same sequence, and a
//! stream resumes on any node. On a store that ignores conditional writes (Garage) two
//! nodes writing at the same instant may overwrite each other's event: `cms check` says
//! whether the store enforces them (`docs/deploying.md`).

use std::sync::Mutex;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::ports::{EventStore, StoredEvent};
use futures_util::{StreamExt, TryStreamExt, stream};
use time::OffsetDateTime;

use crate::bucket::{Bucket, WriteRefused};

const EVENTS_DIR: &str = ".cms/events";
const HEAD_KEY: &str = ".cms/events-head";
/// The head hint is rewritten every this many ids.
const HEAD_EVERY: u64 = 64;
/// Objects listed at once.
const LIST_PAGE: usize = 1000;
/// Records read at once.
const READS_IN_FLIGHT: usize = 16;

pub struct S3EventStore {
    bucket: Bucket,
    /// The last id this node knows the store holds.
    last: Mutex<u64>,
}

impl S3EventStore {
    pub(crate) fn new(bucket: Bucket) -> Self {
        Self { bucket, last: Mutex::new(0) }
    }

    fn known(&self) -> u64 {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn learn(&self, id: u64) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        *last = (*last).max(id);
    }

    /// The newest id at or after `from` (which exists, or is 0).
    async fn newest_from(&self, mut from: u64) -> CoreResult<u64> {
        loop {
            let listed = self.bucket.list_after_at_most(EVENTS_DIR, &key(from), LIST_PAGE).await?;
            let Some(newest) = listed.iter().filter_map(|meta| id_of(meta.location.filename()?)).max() else {
                return Ok(from);
            };
            from = newest;
            if listed.len() < LIST_PAGE {
                return Ok(from);
            }
        }
    }
}

fn key(id: u64) -> String {
    format!("{EVENTS_DIR}/{id:020}")
}

fn id_of(file_name: &str) -> Option<u64> {
    (file_name.len() == 20).then(|| file_name.parse().ok()).flatten()
}

#[async_trait]
impl EventStore for S3EventStore {
    async fn append(&self, _at: OffsetDateTime, records: &[String]) -> CoreResult<Vec<u64>> {
        let mut ids = Vec::with_capacity(records.len());
        for record in records {
            loop {
                let id = self.known() + 1;
                match self.bucket.put_new(&key(id), record.clone().into_bytes()).await? {
                    Ok(_) => {
                        self.learn(id);
                        ids.push(id);
                        if id.is_multiple_of(HEAD_EVERY)
                            && let Err(error) = self.bucket.put(HEAD_KEY, id.to_string().into_bytes()).await
                        {
                            tracing::warn!(%error, "cannot update the event log's head hint");
                        }
                        break;
                    }
                    // Another node took it: learn how far the log is, and try after that.
                    Err(WriteRefused::Exists | WriteRefused::Changed) => {
                        let newest = self.newest_from(id).await?;
                        self.learn(newest.max(id));
                    }
                }
            }
        }
        Ok(ids)
    }

    async fn read_after(&self, after: u64, limit: usize) -> CoreResult<Vec<StoredEvent>> {
        let listed = self.bucket.list_after_at_most(EVENTS_DIR, &key(after), limit).await?;
        let ids: Vec<u64> = listed.iter().filter_map(|meta| id_of(meta.location.filename()?)).collect();
        let bucket = &self.bucket;
        let read: Vec<Option<StoredEvent>> = stream::iter(ids)
            .map(|id| async move {
                let record = bucket.get(&key(id)).await?;
                Ok::<_, cms_core::CoreError>(record.map(|(bytes, _)| StoredEvent {
                    id,
                    record: String::from_utf8_lossy(&bytes).into_owned(),
                }))
            })
            .buffered(READS_IN_FLIGHT)
            .try_collect()
            .await?;
        if let Some(newest) = read.iter().flatten().map(|stored| stored.id).max() {
            self.learn(newest);
        }
        // One forgotten meanwhile is left out (a gap the reader sees).
        Ok(read.into_iter().flatten().collect())
    }

    async fn last_id(&self) -> CoreResult<u64> {
        let hint = match self.bucket.get(HEAD_KEY).await? {
            Some((bytes, _)) => String::from_utf8_lossy(&bytes).trim().parse().unwrap_or(0),
            None => 0,
        };
        let newest = self.newest_from(hint.max(self.known())).await?;
        self.learn(newest);
        Ok(newest)
    }

    async fn forget_before(&self, cutoff: OffsetDateTime) -> CoreResult<()> {
        let cutoff = cutoff.unix_timestamp();
        let mut after = 0;
        loop {
            let listed = self.bucket.list_after_at_most(EVENTS_DIR, &key(after), LIST_PAGE).await?;
            let last = self.known();
            let mut old = Vec::new();
            let mut done = listed.len() < LIST_PAGE;
            for meta in &listed {
                let Some(id) = meta.location.filename().and_then(id_of) else { continue };
                after = id;
                if meta.last_modified.timestamp() >= cutoff || id >= last {
                    done = true;
                    break;
                }
                old.push(id);
            }
            for id in old {
                self.bucket.delete(&key(id)).await?;
            }
            if done || listed.is_empty() {
                return Ok(());
            }
        }
    }
}
