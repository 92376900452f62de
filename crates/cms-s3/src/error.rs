use cms_core::CoreError;

/// Failures of the S3 adapter, translated into domain errors at the port boundary.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// A request to the store failed (network, credentials, the store's own error).
    #[error("object store, {key}: {source}")]
    Store {
        key: String,
        #[source]
        source: object_store::Error,
    },
    /// The adapter's I/O runtime is gone (the process is shutting down).
    #[error("object store I/O runtime stopped")]
    Stopped,
    /// A setting under `storage:` is missing or wrong; names the setting.
    #[error("storage.{setting}: {message}")]
    Setting { setting: &'static str, message: String },
    /// A state object (`.cms/users.yaml`...) that cannot be read.
    #[error("{key}: {message}")]
    State { key: String, message: String },
}

impl From<S3Error> for CoreError {
    fn from(error: S3Error) -> Self {
        match error {
            S3Error::State { .. } => CoreError::Corrupt(error.to_string()),
            other => CoreError::internal("bucket storage", other),
        }
    }
}

/// Shorthand for mapping a store error on `key` into a `CoreError`.
pub(crate) fn store_error(key: &impl std::fmt::Display) -> impl FnOnce(object_store::Error) -> CoreError {
    let key = key.to_string();
    move |source| S3Error::Store { key, source }.into()
}
