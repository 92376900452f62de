//! The one error type of the domain. Adapters translate their technology errors into it.
//! [`CoreError::status`] and [`CoreError::public_message`] are the one table of how each
//! kind is answered: the REST API, the web editor and the MCP tools all go by it.

use std::fmt;

/// What went wrong, in domain terms.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The request is malformed or violates a rule (a bad slug, a wrong type in `fm`).
    #[error("{0}")]
    Invalid(String),
    /// A frontmatter breaks its collection's content model: every failing field, named.
    #[error("{message}")]
    InvalidFields { message: String, fields: Vec<FieldError> },
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

    /// The fields that break a collection's model, in one sentence and one by one.
    pub fn fields(fields: Vec<FieldError>) -> Self {
        let message = match fields.as_slice() {
            [one] => format!("{} {} (the collection's model)", one.field, one.message),
            many => format!(
                "{} fields break the collection's model: {}",
                many.len(),
                many.iter().map(|f| f.field.as_str()).collect::<Vec<_>>().join(", ")
            ),
        };
        Self::InvalidFields { message, fields }
    }

    /// The failing fields of an [`CoreError::InvalidFields`]; empty for any other error.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            Self::InvalidFields { fields, .. } => fields,
            _ => &[],
        }
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

impl CoreError {
    /// The HTTP status the web surfaces (REST, the editor) answer this error with; MCP
    /// reports the same error with the same words.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid(_) | Self::InvalidFields { .. } => 400,
            Self::Unauthorized(_) => 401,
            Self::PaymentRequired(_) => 402,
            Self::Forbidden(_) => 403,
            Self::NotFound(_) => 404,
            Self::Conflict(_) | Self::Stale(_) => 409,
            Self::PreconditionFailed(_) => 412,
            Self::TooLarge(_) => 413,
            Self::Unprocessable(_) => 422,
            Self::Busy(_) => 503,
            Self::Corrupt(_) | Self::Internal { .. } => 500,
        }
    }

    /// The words a client is shown: the error's own message, but for an internal failure,
    /// whose details go to the log (logged here, with the source) instead. A damaged file
    /// is logged too, and named: its owner can mend it.
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal { .. } => {
                tracing::error!(error = %self, source = ?std::error::Error::source(self), "internal error");
                "internal server error; the server log has the details".to_owned()
            }
            Self::Corrupt(_) => {
                tracing::error!(error = %self, "damaged file");
                self.to_string()
            }
            _ => self.to_string(),
        }
    }
}

pub type CoreResult<T> = Result<T, CoreError>;

/// One field of an item that breaks its collection's content model (`crate::model`);
/// here, below every module that may raise it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    /// Its path in the item: `fm.price`, `fm.links[2]`, `fm.seo.title`.
    pub field: String,
    /// What is wrong, as the end of a sentence starting with the field: "must be a
    /// number ≥ 0".
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::CoreError;

    #[test]
    fn every_kind_has_its_status_and_internal_details_stay_in_the_log() {
        let cases = [
            (CoreError::Invalid("x".into()), 400),
            (CoreError::Unauthorized("x".into()), 401),
            (CoreError::PaymentRequired("x".into()), 402),
            (CoreError::Forbidden("x".into()), 403),
            (CoreError::NotFound("x".into()), 404),
            (CoreError::Conflict("x".into()), 409),
            (CoreError::Stale("x".into()), 409),
            (CoreError::PreconditionFailed("x".into()), 412),
            (CoreError::TooLarge("x".into()), 413),
            (CoreError::Unprocessable("x".into()), 422),
            (CoreError::Busy("x".into()), 503),
            (CoreError::Corrupt("x".into()), 500),
        ];
        for (error, status) in cases {
            assert_eq!((error.status(), error.public_message()), (status, "x".to_owned()), "{error:?}");
        }
        let internal = CoreError::internal("reading a/b.md", "disk on fire");
        assert_eq!(internal.status(), 500);
        assert!(!internal.public_message().contains("disk"), "the cause is not shown");
    }
}
