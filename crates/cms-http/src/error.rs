//! The one error type of the web layer, and the table from domain error kinds to status
//! codes. Each error is rendered in the shape of the route that raised it.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use cms_core::CoreError;
use serde_json::json;

use crate::timestamp::timestamp_now;

/// The two response shapes of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{"success": false, "error", "code", "timestamp"}`: public reads and status routes.
    Envelope,
    /// `{"error"}`: authenticated writes, raw reads and settings.
    Editor,
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub shape: Shape,
    /// For a `415`: the media types the route takes, sent as `Accept` (and as
    /// `Accept-Patch` too when the request was a `PATCH`).
    pub accepts: Option<(&'static str, bool)>,
    /// For a write that breaks its collection's model: every failing field, sent as
    /// `fields` beside `error`.
    pub fields: Vec<cms_core::model::FieldError>,
    /// For a `429` or `503`: seconds to wait before trying again, sent as `Retry-After`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, shape: Shape, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), shape, accepts: None, fields: Vec::new(), retry_after: None }
    }

    /// The same error, telling the client when to try again (`Retry-After`).
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// `415`: the body's media type is not one the route takes (`accepts`, a list for
    /// `Accept`); `patch` when the request was a `PATCH` (RFC 5789's `Accept-Patch`).
    pub fn unsupported_media_type(
        shape: Shape,
        message: impl Into<String>,
        accepts: &'static str,
        patch: bool,
    ) -> Self {
        Self {
            accepts: Some((accepts, patch)),
            ..Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, shape, message)
        }
    }

    /// A domain error as the one table in core answers it ([`CoreError::status`],
    /// [`CoreError::public_message`]: internal causes are logged, not sent).
    pub fn from_core(error: CoreError, shape: Shape) -> Self {
        let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let fields = error.field_errors().to_vec();
        Self { status, message: error.public_message(), shape, accepts: None, fields, retry_after: None }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        }
        if let Some(secs) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, secs));
        }
        if let Some((accepts, patch)) = self.accepts {
            response.insert_header((header::ACCEPT, HeaderValue::from_static(accepts)));
            if patch {
                response.insert_header((
                    header::HeaderName::from_static("accept-patch"),
                    HeaderValue::from_static(accepts),
                ));
            }
        }
        let mut body = match self.shape {
            Shape::Envelope => json!({
                "success": false,
                "error": self.message,
                "code": self.status.as_u16(),
                "timestamp": timestamp_now(),
            }),
            Shape::Editor => json!({ "error": self.message }),
        };
        if !self.fields.is_empty() {
            body["fields"] = json!(self.fields);
        }
        response.json(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_kept_finding_the_item_changed_is_a_conflict_with_the_reason() {
        let message = "item \"one\" changed while it was being written; read it again and retry";
        let error = ApiError::from_core(CoreError::Stale(message.into()), Shape::Editor);
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert_eq!(error.message, message);
    }
}
