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

#[derive(Debug, Clone)]
pub struct FsPreviewKeys {
    path: PathBuf,
}

impl FsPreviewKeys {
    pub fn new(state_dir: &Path) -> Self {
        Self { path: state_dir.join(PREVIEW_KEY_FILE) }
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
}
