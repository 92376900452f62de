use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cms_core::license::License;
use cms_core::ports::{FileStamp, LicenseSource};
use cms_core::{CoreError, CoreResult};

use crate::atomic;
use crate::blocking;
use crate::error::io_error;
use crate::stamp;

pub const LICENSE_FILE: &str = "license.yaml";

/// `.cms/license.yaml`, re-read only when the file changes (one `stat` per call). Cheap
/// to clone (clones share the cache).
#[derive(Debug, Clone)]
pub struct FsLicense {
    path: PathBuf,
    cache: Arc<Mutex<Option<Cached>>>,
}

/// The license as last read, with the stamp of the file it was read from.
type Cached = (FileStamp, Option<License>);

impl FsLicense {
    pub fn new(state_dir: &Path) -> Self {
        Self { path: state_dir.join(LICENSE_FILE), cache: Arc::default() }
    }

    /// The license, read on the calling thread: for callers that may block, such as the
    /// webhook workers, which ask before each event's deliveries. One `stat` when the file
    /// has not changed.
    pub fn read_now(&self) -> CoreResult<Option<License>> {
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&self.path)(e)),
        };
        let stamp = stamp::from_metadata(LICENSE_FILE, &meta);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((cached, license)) = cache.as_ref()
            && *cached == stamp
        {
            return Ok(license.clone());
        }
        let text = fs::read_to_string(&self.path).map_err(io_error(&self.path))?;
        // An unreadable license counts as none; the reason goes to the operator's log.
        let license = match License::from_yaml(&text) {
            Ok(license) => Some(license),
            Err(e) => {
                tracing::error!(path = %self.path.display(), error = %e, "ignoring the license file");
                None
            }
        };
        *cache = Some((stamp, license.clone()));
        Ok(license)
    }

    fn install_blocking(&self, license_text: &str) -> CoreResult<()> {
        atomic::write_private(&self.path, license_text.as_bytes()).map_err(io_error(&self.path))
    }
}

#[async_trait]
impl LicenseSource for FsLicense {
    async fn current(&self) -> CoreResult<Option<License>> {
        let store = self.clone();
        blocking::run(move || store.read_now()).await
    }

    async fn install(&self, license_text: &str) -> CoreResult<()> {
        License::from_yaml(license_text).map_err(|e| CoreError::invalid(e.to_string()))?;
        let (store, text) = (self.clone(), license_text.to_owned());
        blocking::run(move || store.install_blocking(&text)).await
    }
}
