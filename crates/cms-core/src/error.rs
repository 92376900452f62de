//! The one error type of the domain. Adapters translate their technology errors into it;
//! `cms-http` maps its kinds to status codes at the edge.

use std::fmt;

/// What went wrong, in domain terms.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The request is malformed or violates a rule (a bad slug, a wrong type in `fm`).
    #[error("{0}")]
    Invalid(String),
    /// Something addressed by the request does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The write would clash with something that exists (an item with that slug).
    #[error("{0}")]
    Conflict(String),
    /// An `If-Match` precondition did not hold.
    #[error("{0}")]
    PreconditionFailed(String),
    /// A conditional write found the stored file changed (or gone) since it was read: another
    /// server sharing the storage, or an outside editor, wrote in between. Nothing was
    /// written; reading again and retrying is safe (the facade retries item updates itself).
    #[error("{0}")]
    Stale(String),
    /// An input is over a configured limit (size, nesting, aliases).
    #[error("{0}")]
    TooLarge(String),
    /// Authentication failed (no key, unknown key, wrong key family).
    #[error("{0}")]
    Unauthorized(String),
    /// The caller is known but lacks the role or plan feature.
    #[error("{0}")]
    Forbidden(String),
    /// No active license with the feature the route needs.
    #[error("{0}")]
    PaymentRequired(String),
    /// A stored file is damaged (e.g. an item whose frontmatter is not valid YAML).
    #[error("{0}")]
    Corrupt(String),
    /// A stored file cannot be processed as asked (an image too large to decode, corrupt,
    /// or animated).
    #[error("{0}")]
    Unprocessable(String),
    /// The work is refused for now because the workers are saturated; try again.
    #[error("{0}")]
    Busy(String),
    /// A storage or other internal failure; the source is kept for the log.
    #[error("{context}: {source}")]
    Internal {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl CoreError {
    pub fn invalid(message: impl fmt::Display) -> Self {
        Self::Invalid(message.to_string())
    }

    pub fn not_found(message: impl fmt::Display) -> Self {
        Self::NotFound(message.to_string())
    }

    pub fn internal(
        context: impl fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Internal { context: context.to_string(), source: source.into() }
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
