//! The preview-link key in `.cms/preview-key` (64 hex digits), made on first use by
//! whichever node gets there first (`If-None-Match: *`), re-validated at most every
//! `state_max_age`, so that a rotation on one node ends every link on all of them.

use std::time::Duration;

use async_trait::async_trait;
use cms_core::ports::PreviewKeys;
use cms_core::{CoreError, CoreResult};
use ring::rand::{SecureRandom, SystemRandom};

use crate::bucket::Bucket;
use crate::state::StateObject;

pub struct S3PreviewKeys {
    object: StateObject<Option<Vec<u8>>>,
    bucket: Bucket,
    /// When old ended-link records were last forgotten (Unix ms): at most once an hour.
    last_sweep: std::sync::atomic::AtomicI64,
}

impl S3PreviewKeys {
    pub(crate) fn new(bucket: &Bucket, max_age: Duration) -> Self {
        Self {
            object: StateObject::new(bucket.clone(), ".cms/preview-key".into(), max_age, decode),
            bucket: bucket.clone(),
            last_sweep: std::sync::atomic::AtomicI64::new(0),
        }
    }
}

fn fresh() -> CoreResult<Vec<u8>> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CoreError::internal("a new preview key", "the system random source failed"))?;
    Ok(format!("{}\n", hex::encode(bytes)).into_bytes())
}

/// The key as stored; anything but 64 hex digits is refused rather than used, since a
/// short key would let anyone make valid links.
fn decode(key: &str, bytes: Option<&[u8]>) -> CoreResult<Option<Vec<u8>>> {
    let Some(bytes) = bytes else { return Ok(None) };
    let text = String::from_utf8_lossy(bytes);
    let hex_key = text.trim();
    if hex_key.len() != 64 || !hex_key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CoreError::internal(
            "the preview key",
            format!("{key} does not hold 64 hex digits; run `cms previews revoke-all` to make a new key"),
        ));
    }
    Ok(Some(hex_key.as_bytes().to_vec()))
}

#[async_trait]
impl PreviewKeys for S3PreviewKeys {
    async fn current(&self) -> CoreResult<Vec<u8>> {
        if let Some(key) = self.object.get().await?.as_ref() {
            return Ok(key.clone());
        }
        // First use; when two nodes make it at once, the first one written wins.
        self.object.update(|current| Ok((if current.is_none() { Some(fresh()?) } else { None }, ()))).await?;
        self.object
            .get()
            .await?
            .as_ref()
            .clone()
            .ok_or_else(|| CoreError::internal("the preview key", "not stored"))
    }

    async fn rotate(&self) -> CoreResult<()> {
        self.bucket.put(self.object.key(), fresh()?).await?;
        self.object.expire();
        Ok(())
    }

    /// `.cms/preview-ended/<item>` holds when the item's links ended (never moved back);
    /// records older than the longest link lifetime are removed on the way.
    async fn end_item_links(&self, item: &str, at_ms: i64) -> CoreResult<()> {
        let at_ms = self.item_links_ended(item).await?.map_or(at_ms, |earlier| earlier.max(at_ms));
        self.bucket.put(&format!("{ENDED_DIR}/{item}"), format!("{at_ms}\n").into_bytes()).await?;
        use std::sync::atomic::Ordering;
        let last = self.last_sweep.load(Ordering::Relaxed);
        if last != 0 && at_ms - last < 3_600_000 {
            return Ok(());
        }
        self.last_sweep.store(at_ms, Ordering::Relaxed);
        let oldest_ms = at_ms - (cms_core::config::MAX_PREVIEW_TTL_SECS as i64 + 60) * 1000;
        let (objects, _) = self.bucket.list_dir(ENDED_DIR).await?;
        for old in objects.iter().filter(|meta| meta.last_modified.timestamp_millis() < oldest_ms) {
            if let Some(name) = old.location.filename() {
                // Best effort: a record left behind only refuses links that expired anyway.
                let _ = self.bucket.delete(&format!("{ENDED_DIR}/{name}")).await;
            }
        }
        Ok(())
    }

    async fn item_links_ended(&self, item: &str) -> CoreResult<Option<i64>> {
        let Some((bytes, _)) = self.bucket.get(&format!("{ENDED_DIR}/{item}")).await? else {
            return Ok(None);
        };
        // A damaged record counts as "ended now": refusing a link is the safe side.
        Ok(Some(String::from_utf8_lossy(&bytes).trim().parse().unwrap_or(i64::MAX)))
    }
}

/// A record per deleted item (see `PreviewKeys::end_item_links`).
const ENDED_DIR: &str = ".cms/preview-ended";
