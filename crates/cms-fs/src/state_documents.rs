//! [`StateDocuments`] in a site's `.cms/` folder: files written the one way state files
//! are (temp file, fsync, rename, mode 0600). The server's webhook workers and CLI
//! commands may write at the same time, so every read-modify-write holds an exclusive
//! lock on `.cms/webhooks.lock` (the name of the days when only webhook state lived here,
//! kept so that an older command and a newer server still exclude each other). Reads take
//! no lock: a rename is atomic, so they see the old file or the new one.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cms_core::ports::{StateDocuments, TextChange};
use cms_core::{CoreError, CoreResult};

use crate::atomic;

const LOCK_FILE: &str = "webhooks.lock";

/// The state documents of a site folder.
#[derive(Debug, Clone)]
pub struct FsStateDocuments {
    dir: PathBuf,
}

impl FsStateDocuments {
    /// `state_dir` is the site's `.cms` folder.
    pub fn new(state_dir: &Path) -> Self {
        Self { dir: state_dir.to_owned() }
    }

    /// An exclusive lock on `.cms/webhooks.lock`, released when the file is dropped.
    fn lock(&self) -> CoreResult<File> {
        let lock = self.dir.join(LOCK_FILE);
        let io = |e: io::Error| CoreError::internal(format!("locking {}", lock.display()), e);
        fs::create_dir_all(&self.dir).map_err(io)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }
}

impl StateDocuments for FsStateDocuments {
    fn read(&self, name: &str) -> CoreResult<Option<String>> {
        let path = self.dir.join(name);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CoreError::internal(path.display(), e)),
        }
    }

    fn update(&self, name: &str, mut change: TextChange) -> CoreResult<()> {
        let _lock = self.lock()?;
        let current = self.read(name)?;
        let Some(text) = change(current.as_deref())? else { return Ok(()) };
        let path = self.dir.join(name);
        atomic::write_private(&path, text.as_bytes()).map_err(|e| CoreError::internal(path.display(), e))
    }

    fn describe(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}
