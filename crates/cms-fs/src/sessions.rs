//! The web editor's sessions in `.cms/sessions/`: a file per session (mode 0600) named by
//! its token's SHA-256, holding the core's record. One server owns a site folder, so a
//! lock of this process makes a conditional replace atomic against a removal.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::ports::{SessionStore, StoredSession};
use ring::digest;

use crate::atomic;
use crate::blocking;
use crate::error::io_error;

pub const SESSIONS_DIR: &str = "sessions";

#[derive(Debug, Clone)]
pub struct FsSessionStore {
    dir: PathBuf,
    /// Held by every write, so that a replace that compared its version cannot write
    /// after a removal (which would bring a signed-out session back).
    writes: Arc<Mutex<()>>,
}

impl FsSessionStore {
    pub fn new(state_dir: &Path) -> Self {
        Self { dir: state_dir.join(SESSIONS_DIR), writes: Arc::default() }
    }

    /// The file of a record; `None` for a key that is not a SHA-256 in hex (it names none).
    fn path(&self, key: &str) -> Option<PathBuf> {
        is_key(key).then(|| self.dir.join(key))
    }

    fn read(&self, path: &Path) -> CoreResult<Option<StoredSession>> {
        match fs::read(path) {
            Ok(bytes) => Ok(Some(StoredSession {
                version: hex::encode(&digest::digest(&digest::SHA256, &bytes).as_ref()[..16]),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(path)(e)),
        }
    }

    fn write(&self, path: &Path, text: &str) -> CoreResult<()> {
        fs::create_dir_all(&self.dir).map_err(io_error(&self.dir))?;
        atomic::write_private(path, text.as_bytes()).map_err(io_error(path))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn list_blocking(&self) -> CoreResult<Vec<(String, i64)>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.dir)(e)),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Skips staging files of a write in progress.
            if !is_key(&name) {
                continue;
            }
            let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else { continue };
            let seconds = modified.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
            records.push((name, seconds));
        }
        Ok(records)
    }
}

fn is_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

#[async_trait]
impl SessionStore for FsSessionStore {
    async fn get(&self, key: &str) -> CoreResult<Option<StoredSession>> {
        let (store, Some(path)) = (self.clone(), self.path(key)) else { return Ok(None) };
        blocking::run(move || store.read(&path)).await
    }

    async fn put(&self, key: &str, text: &str) -> CoreResult<()> {
        let Some(path) = self.path(key) else {
            return Err(cms_core::CoreError::internal("a session", "its key is not a SHA-256"));
        };
        let (store, text) = (self.clone(), text.to_owned());
        blocking::run(move || {
            let _writing = store.lock();
            store.write(&path, &text)
        })
        .await
    }

    async fn replace(&self, key: &str, text: &str, version: &str) -> CoreResult<bool> {
        let Some(path) = self.path(key) else { return Ok(false) };
        let (store, text, version) = (self.clone(), text.to_owned(), version.to_owned());
        blocking::run(move || {
            let _writing = store.lock();
            match store.read(&path)? {
                Some(current) if current.version == version => store.write(&path, &text).map(|()| true),
                _ => Ok(false),
            }
        })
        .await
    }

    async fn remove(&self, key: &str) -> CoreResult<()> {
        let Some(path) = self.path(key) else { return Ok(()) };
        let store = self.clone();
        blocking::run(move || {
            let _writing = store.lock();
            match fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io_error(&path)(e)),
            }
        })
        .await
    }

    async fn list(&self) -> CoreResult<Vec<(String, i64)>> {
        let store = self.clone();
        blocking::run(move || store.list_blocking()).await
    }
}
