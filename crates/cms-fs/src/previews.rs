//! The preview-link key in `.cms/preview-key` (64 hex digits, mode 0600), made on first
//! use and read on every use, so that `cms previews revoke-all` (another process) ends
//! every link at once.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::ports::PreviewKeys;
use cms_core::{CoreError, CoreResult};
use ring::rand::{SecureRandom, SystemRandom};

use crate::atomic;
use crate::blocking;
use crate::error::io_error;

pub const PREVIEW_KEY_FILE: &str = "preview-key";
/// A file per deleted item (`PreviewKeys::end_item_links`), holding when its links ended.
pub const PREVIEW_ENDED_DIR: &str = "preview-ended";
/// How often ended-link records older than the longest link lifetime are forgotten.
const SWEEP_EVERY_MS: i64 = 3_600_000;

#[derive(Debug, Clone)]
pub struct FsPreviewKeys {
    path: PathBuf,
    ended: PathBuf,
    /// When old records were last forgotten (Unix ms): at most once an hour, so that a
    /// burst of deletes does not read the folder once each.
    last_sweep: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl FsPreviewKeys {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            path: state_dir.join(PREVIEW_KEY_FILE),
            ended: state_dir.join(PREVIEW_ENDED_DIR),
            last_sweep: std::sync::Arc::default(),
        }
    }

    /// Records when an item's links ended (never earlier than a record already there), and
    /// forgets records older than the longest link lifetime.
    fn end_item_links_blocking(&self, item: &str, at_ms: i64) -> CoreResult<()> {
        let path = self.ended.join(item);
        let earlier = self.item_links_ended_blocking(item)?;
        fs::create_dir_all(&self.ended).map_err(io_error(&self.ended))?;
        let at_ms = earlier.map_or(at_ms, |earlier| earlier.max(at_ms));
        atomic::write_private(&path, format!("{at_ms}\n").as_bytes()).map_err(io_error(&path))?;
        self.forget_old(at_ms);
        Ok(())
    }

    fn item_links_ended_blocking(&self, item: &str) -> CoreResult<Option<i64>> {
        let path = self.ended.join(item);
        match fs::read_to_string(&path) {
            // A damaged record counts as "ended now": refusing a link is the safe side.
            Ok(text) => Ok(Some(text.trim().parse().unwrap_or(i64::MAX))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    /// Removes the records no live link can predate (best effort: a record left behind
    /// only refuses links that have expired anyway).
    fn forget_old(&self, now_ms: i64) {
        use std::sync::atomic::Ordering;
        let last = self.last_sweep.load(Ordering::Relaxed);
        if last != 0 && now_ms - last < SWEEP_EVERY_MS {
            return;
        }
        self.last_sweep.store(now_ms, Ordering::Relaxed);
        let oldest_ms = now_ms - (cms_core::config::MAX_PREVIEW_TTL_SECS as i64 + 60) * 1000;
        let Ok(entries) = fs::read_dir(&self.ended) else { return };
        for entry in entries.flatten() {
            let ended = fs::read_to_string(entry.path()).ok().and_then(|t| t.trim().parse::<i64>().ok());
            if ended.is_some_and(|ended| ended < oldest_ms) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    fn fresh() -> CoreResult<String> {
        let mut bytes = [0u8; 32];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| CoreError::internal("a new preview key", "the system random source failed"))?;
        Ok(format!("{}\n", hex::encode(bytes)))
    }

    /// The key as stored: 64 hex digits. Anything else (an emptied or cut file) is refused
    /// rather than used, since a short key would let anyone make valid links.
    fn checked(&self, text: &str) -> CoreResult<Vec<u8>> {
        let key = text.trim();
        if key.len() != 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CoreError::internal(
                "the preview key",
                format!(
                    "{} does not hold 64 hex digits; run `cms previews revoke-all` to make a new key",
                    self.path.display()
                ),
            ));
        }
        Ok(key.as_bytes().to_vec())
    }

    fn current_blocking(&self) -> CoreResult<Vec<u8>> {
        match fs::read_to_string(&self.path) {
            Ok(text) => return self.checked(&text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&self.path)(e)),
        }
        // First use; when two make it at once, the first one written wins.
        match atomic::create_private(&self.path, Self::fresh()?.as_bytes()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(&self.path)(e)),
        }
        let text = fs::read_to_string(&self.path).map_err(io_error(&self.path))?;
        self.checked(&text)
    }

    /// Replaces the key (what `cms previews revoke-all` does).
    pub fn rotate_blocking(&self) -> CoreResult<()> {
        atomic::write_private(&self.path, Self::fresh()?.as_bytes()).map_err(io_error(&self.path))
    }
}

#[async_trait]
impl PreviewKeys for FsPreviewKeys {
    async fn current(&self) -> CoreResult<Vec<u8>> {
        let keys = self.clone();
        blocking::run(move || keys.current_blocking()).await
    }

    async fn rotate(&self) -> CoreResult<()> {
        let keys = self.clone();
        blocking::run(move || keys.rotate_blocking()).await
    }

    async fn end_item_links(&self, item: &str, at_ms: i64) -> CoreResult<()> {
        let (keys, item) = (self.clone(), item.to_owned());
        blocking::run(move || keys.end_item_links_blocking(&item, at_ms)).await
    }

    async fn item_links_ended(&self, item: &str) -> CoreResult<Option<i64>> {
        let (keys, item) = (self.clone(), item.to_owned());
        blocking::run(move || keys.item_links_ended_blocking(&item)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_key_is_refused_and_revoke_all_makes_a_good_one() {
        let state = tempfile::tempdir().unwrap();
        let keys = FsPreviewKeys::new(state.path());
        let first = keys.current_blocking().unwrap();
        assert_eq!(first.len(), 64, "made on first use");
        assert_eq!(keys.current_blocking().unwrap(), first, "then read back");
        for damaged in ["", "\n", "abc\n", &"zz".repeat(32)] {
            fs::write(state.path().join(PREVIEW_KEY_FILE), damaged).unwrap();
            let error = keys.current_blocking().unwrap_err().to_string();
            assert!(error.contains("revoke-all"), "{damaged:?}: {error}");
        }
        keys.rotate_blocking().unwrap();
        assert_ne!(keys.current_blocking().unwrap(), first);
    }

    #[test]
    fn ended_links_are_recorded_never_moved_back_and_forgotten_after_a_week() {
        let state = tempfile::tempdir().unwrap();
        let keys = FsPreviewKeys::new(state.path());
        assert_eq!(keys.item_links_ended_blocking("ab12").unwrap(), None);
        keys.end_item_links_blocking("ab12", 5_000).unwrap();
        keys.end_item_links_blocking("ab12", 4_000).unwrap();
        assert_eq!(keys.item_links_ended_blocking("ab12").unwrap(), Some(5_000));
        let week_ms = (cms_core::config::MAX_PREVIEW_TTL_SECS as i64 + 61) * 1000;
        keys.end_item_links_blocking("cd34", 5_000 + SWEEP_EVERY_MS - 1).unwrap();
        assert_eq!(keys.item_links_ended_blocking("ab12").unwrap(), Some(5_000), "not swept twice an hour");
        keys.end_item_links_blocking("cd34", 5_000 + week_ms).unwrap();
        assert_eq!(keys.item_links_ended_blocking("ab12").unwrap(), None, "forgotten");
        assert_eq!(keys.item_links_ended_blocking("cd34").unwrap(), Some(5_000 + week_ms));
    }
}
