use std::io;
use std::path::{Path, PathBuf};

use cms_core::CoreError;

/// Failures of the file adapter, translated into domain errors at the port boundary.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    State { path: PathBuf, message: String },
    /// Another server holds the site folder's lock (`serve_lock.rs`).
    #[error("{site}: another server already serves this site folder ({holder})")]
    Served { site: PathBuf, holder: String },
}

impl FsError {
    pub fn io(path: &Path, source: io::Error) -> Self {
        Self::Io { path: path.to_owned(), source }
    }
}

impl From<FsError> for CoreError {
    fn from(error: FsError) -> Self {
        match error {
            FsError::State { .. } => CoreError::Corrupt(error.to_string()),
            other => CoreError::internal("site storage", other),
        }
    }
}

/// Shorthand for mapping an `io::Error` on `path` into a `CoreError`.
pub(crate) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> CoreError + '_ {
    move |source| FsError::io(path, source).into()
}
