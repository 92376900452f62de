//! The editor's one error type, answered as an HTML page with the matching status.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use askama::Template;
use cms_core::CoreError;

use crate::cookies::{SESSION_COOKIE, session_cookie};

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// A facade call failed; its kind gives the status, as on the REST API.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// No session (or it ended). A page asked for with `GET` is sent to the sign-in page,
    /// which brings the user back to `next`.
    #[error("sign in to use the editor")]
    SignInRequired { next: Option<String> },
    /// A state-changing request without the session's CSRF token, or from another site.
    #[error(
        "this form was refused: it did not carry this session's security token (CSRF) or came from \
         another site; reload the page and try again"
    )]
    Csrf,
    /// Too many failed sign-ins for the account or the address.
    #[error("too many failed sign-ins; wait {0} seconds and try again")]
    Throttled(u64),
    #[error("{0}")]
    BadRequest(String),
    #[error("the page could not be drawn")]
    Template(#[from] askama::Error),
}

impl AdminError {
    pub fn bad_request(message: impl std::fmt::Display) -> Self {
        Self::BadRequest(message.to_string())
    }

    fn title(&self) -> &'static str {
        match self.status_code() {
            StatusCode::BAD_REQUEST => "That did not work",
            StatusCode::UNAUTHORIZED => "Sign in first",
            StatusCode::FORBIDDEN => "Not allowed",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::CONFLICT => "Conflict",
            StatusCode::PRECONDITION_FAILED => "Changed meanwhile",
            StatusCode::PAYLOAD_TOO_LARGE => "Too large",
            StatusCode::TOO_MANY_REQUESTS => "Too many tries",
            StatusCode::PAYMENT_REQUIRED => "No license",
            _ => "Something went wrong",
        }
    }
}

/// The status of each domain error kind: the one table in core, as on the REST API.
pub fn core_status(error: &CoreError) -> StatusCode {
    StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A refused form is shown again with its error: bad input is `422`, other refusals
/// keep their status.
pub fn form_error_status(error: &CoreError) -> StatusCode {
    match error {
        CoreError::Invalid(_) | CoreError::InvalidFields { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        other => core_status(other),
    }
}

/// The words shown for an error, as on every surface (see `CoreError::public_message`).
pub fn message_of(error: &CoreError) -> String {
    error.public_message()
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    assets: &'a str,
    title: &'a str,
    message: &'a str,
    status: u16,
}

impl ResponseError for AdminError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Core(error) => core_status(error),
            Self::SignInRequired { next: Some(_) } => StatusCode::SEE_OTHER,
            Self::SignInRequired { next: None } => StatusCode::UNAUTHORIZED,
            Self::Csrf => StatusCode::FORBIDDEN,
            Self::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Template(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let Self::SignInRequired { next: Some(next) } = self {
            let location = format!("/admin/signin?next={}", crate::escape::query_escape(next));
            let mut response = HttpResponse::SeeOther().insert_header((header::LOCATION, location)).finish();
            forget_session(&mut response);
            return response;
        }
        let message = match self {
            Self::Core(error) => message_of(error),
            other => other.to_string(),
        };
        if self.status_code().is_server_error() {
            tracing::error!(error = %self, "an editor page failed");
        }
        let page = ErrorPage {
            assets: crate::assets::VERSION.as_str(),
            title: self.title(),
            message: &message,
            status: self.status_code().as_u16(),
        };
        let body = page.render().unwrap_or_else(|_| message.clone());
        let mut response =
            HttpResponse::build(self.status_code()).content_type("text/html; charset=utf-8").body(body);
        if let Self::Throttled(seconds) = self
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if matches!(self, Self::SignInRequired { .. }) {
            forget_session(&mut response);
        }
        response
    }
}

/// The cookie named no session that stands (or none at all): tell the browser to drop it.
fn forget_session(response: &mut HttpResponse) {
    let _ = response.add_removal_cookie(&session_cookie(SESSION_COOKIE, String::new()));
}

pub type AdminResult<T> = Result<T, AdminError>;
