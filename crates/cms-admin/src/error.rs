//! The editor's one error type, answered as an HTML page with the matching status.
//!
//! Every error page sits inside the editor's frame (the full layout for a signed-in user,
//! the site's name otherwise), says what happened in plain sentences and offers a way on:
//! the start page, the page it came from, and the sign-in form where signing in is the way
//! on (`401`, `429`, with how long to wait). A form that could not be acted on is shown
//! again whole (`resubmit.rs`). [`ResponseError`] draws a plain page without the request;
//! `error_pages.rs`, a middleware, draws it again with the request (session, cookies, the
//! page the user came from) and keeps status and headers (`Retry-After`).

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use askama::Template;
use cms_core::CoreError;

use crate::cookies::{SESSION_COOKIE, session_cookie};
use crate::resubmit::{ResubmitForm, SIGNIN_EMAIL, SIGNIN_PASSWORD, Why};

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
        "this form was refused: it came from another site, or without this page's security token, so \
         nothing was done"
    )]
    Csrf,
    /// Too many failed sign-ins for the account or the address.
    #[error("too many failed sign-ins; wait {0} seconds and try again")]
    Throttled(u64),
    #[error("{0}")]
    BadRequest(String),
    #[error("the page could not be drawn")]
    Template(#[from] askama::Error),
    /// A form not acted on, shown again with everything typed and a way to send it.
    #[error("nothing was saved yet: {}", resubmit_reason(&.0.why))]
    Resubmit(Box<ResubmitForm>),
}

fn resubmit_reason(why: &Why) -> &'static str {
    match why {
        Why::SessionEnded => "the session had ended",
        Why::SignInFailed => "wrong email or password",
        Why::SignInExpired => "the sign-in form had expired",
        Why::Throttled(_) => "signing in is paused",
        Why::TokenRefused => "the form's security token is not this session's",
    }
}

impl AdminError {
    pub fn bad_request(message: impl std::fmt::Display) -> Self {
        Self::BadRequest(message.to_string())
    }

    /// A form offered back whole (see [`crate::resubmit`]).
    pub fn resubmit(form: ResubmitForm) -> Self {
        Self::Resubmit(Box::new(form))
    }

    fn title(&self) -> &'static str {
        match self {
            Self::Resubmit(form) => match form.why {
                Why::TokenRefused => "Send your changes again",
                Why::Throttled(_) => "Too many sign-in attempts",
                _ => "Sign in to keep your work",
            },
            Self::Throttled(_) => "Too many sign-in attempts",
            Self::Csrf => "Not sent",
            _ => match self.status_code() {
                StatusCode::BAD_REQUEST => "That did not work",
                StatusCode::UNAUTHORIZED => "Sign in to continue",
                StatusCode::FORBIDDEN => "Not allowed",
                StatusCode::NOT_FOUND => "Page not found",
                StatusCode::CONFLICT => "Conflict",
                StatusCode::PRECONDITION_FAILED => "Changed meanwhile",
                StatusCode::PAYLOAD_TOO_LARGE => "Too large",
                StatusCode::TOO_MANY_REQUESTS => "Too many tries",
                StatusCode::PAYMENT_REQUIRED => "No license",
                _ => "Something went wrong",
            },
        }
    }

    /// What happened, in plain sentences.
    fn sentences(&self) -> Vec<String> {
        match self {
            Self::Core(error) => vec![sentence(&message_of(error))],
            Self::SignInRequired { .. } => {
                vec!["You are not signed in, or your session has ended. Sign in to go on.".into()]
            }
            Self::Csrf => vec![
                "This form came from another site, or without this page's security token, so nothing was done."
                    .into(),
                "Open the page in the editor and send the form from there.".into(),
            ],
            Self::Throttled(_) => vec![
                "After several failed tries, signing in to this account (or from this address) is paused for \
                 a while."
                    .into(),
            ],
            Self::BadRequest(message) => vec![sentence(message)],
            Self::Template(_) => vec!["This page could not be drawn; the server log has the details.".into()],
            Self::Resubmit(form) => {
                let kept_here = "What you typed is kept on this page.";
                match form.why {
                    Why::SessionEnded => vec![
                        "Your session ended before this form was sent, so nothing was saved yet.".into(),
                        format!("{kept_here} Sign in, and it is sent as it is."),
                    ],
                    Why::SignInFailed => vec![
                        "Wrong email or password (or no password is set for this account).".into(),
                        format!("{kept_here} Try again."),
                    ],
                    Why::SignInExpired => vec![
                        "This sign-in form had expired (another tab may have signed in first).".into(),
                        format!("{kept_here} Sign in again."),
                    ],
                    Why::Throttled(_) => vec![
                        "After several failed tries, signing in is paused for a while.".into(),
                        format!("{kept_here} Sign in once the wait is over."),
                    ],
                    Why::TokenRefused => vec![
                        "This form was opened before you last signed in, so it was not accepted and nothing \
                         was saved yet."
                            .into(),
                        format!("{kept_here} Send it again."),
                    ],
                }
            }
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::Throttled(seconds) => Some(*seconds),
            Self::Resubmit(form) => match form.why {
                Why::Throttled(seconds) => Some(seconds),
                _ => None,
            },
            _ => None,
        }
    }
}

/// `no item x in posts` → `No item x in posts.`
fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let Some(first) = chars.next() else { return String::new() };
    let mut out: String = first.to_uppercase().chain(chars).collect();
    if !out.ends_with(['.', '!', '?', ')']) {
        out.push('.');
    }
    out
}

fn seconds_text(seconds: u64) -> String {
    match seconds {
        1 => "1 second".into(),
        s if s < 120 => format!("{s} seconds"),
        s => format!("{} minutes", s.div_ceil(60)),
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

/// The form on an error page: the inline sign-in, the sign-in page's form, or a kept
/// form to send again.
pub(crate) struct FormView {
    pub(crate) action: String,
    pub(crate) csrf: String,
    pub(crate) hidden: Vec<(String, String)>,
    /// With email and password inputs.
    pub(crate) sign_in: bool,
    pub(crate) email_name: &'static str,
    pub(crate) password_name: &'static str,
    pub(crate) email: String,
    pub(crate) button: &'static str,
}

/// What an error page says and offers.
pub(crate) struct Content {
    pub(crate) title: &'static str,
    pub(crate) message: Vec<String>,
    pub(crate) retry_after: Option<u64>,
    pub(crate) wait_text: String,
    pub(crate) form: Option<FormView>,
    pub(crate) typed: Vec<(String, String)>,
    /// `(href, label)`: the ways on.
    pub(crate) links: Vec<(String, &'static str)>,
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    site_name: &'a str,
    assets: &'a str,
    c: Content,
}

/// What the page knows of its request (none: the plain page of [`ResponseError`]).
pub(crate) struct Context {
    /// The session's CSRF token, when signed in.
    pub(crate) session_csrf: Option<String>,
    /// The sign-in form's token (also set in its cookie).
    pub(crate) signin_csrf: Option<String>,
    /// The editor page the request came from, if any.
    pub(crate) back: Option<String>,
    /// The path asked for.
    pub(crate) path: String,
}

impl Content {
    pub(crate) fn of(error: &AdminError, context: &Context) -> Self {
        let retry_after = error.retry_after();
        let mut content = Content {
            title: error.title(),
            message: error.sentences(),
            retry_after,
            wait_text: retry_after.map(seconds_text).unwrap_or_default(),
            form: None,
            typed: Vec::new(),
            links: Vec::new(),
        };
        let back = context.back.clone().filter(|back| *back != context.path);
        let sign_in_page = |csrf: &String, next: String| FormView {
            action: "/admin/signin".into(),
            csrf: csrf.clone(),
            hidden: vec![("next".into(), next)],
            sign_in: true,
            email_name: "email",
            password_name: "password",
            email: String::new(),
            button: "Sign in",
        };
        match error {
            AdminError::Resubmit(kept) => {
                content.typed = kept.typed();
                let csrf = match kept.why {
                    Why::TokenRefused => context.session_csrf.as_ref(),
                    _ => context.signin_csrf.as_ref(),
                };
                content.form = csrf.map(|csrf| FormView {
                    action: kept.action.clone(),
                    csrf: csrf.clone(),
                    hidden: kept.fields.clone(),
                    sign_in: kept.why != Why::TokenRefused,
                    email_name: SIGNIN_EMAIL,
                    password_name: SIGNIN_PASSWORD,
                    email: kept.email.clone(),
                    button: if kept.why == Why::TokenRefused { "Send again" } else { "Sign in and send" },
                });
            }
            AdminError::SignInRequired { .. } | AdminError::Throttled(_) => {
                let next = back.clone().unwrap_or_else(|| "/admin/".into());
                content.form = context.signin_csrf.as_ref().map(|csrf| sign_in_page(csrf, next));
            }
            // The sign-in form's own token was refused (a sign-in page left open too
            // long): the form again, with a fresh one.
            AdminError::Csrf if context.path == "/admin/signin" => {
                content.message = vec!["This sign-in form had expired. Sign in again below.".into()];
                content.form = context.signin_csrf.as_ref().map(|csrf| sign_in_page(csrf, "/admin/".into()));
            }
            _ => {}
        }
        if let Some(back) = back {
            content.links.push((back, "Back to the page you came from"));
        }
        content.links.push(("/admin/".into(), "Go to the start page"));
        content
    }
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
            Self::Resubmit(form) => match form.why {
                Why::TokenRefused => StatusCode::FORBIDDEN,
                Why::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
                Why::SessionEnded | Why::SignInFailed | Why::SignInExpired => StatusCode::UNAUTHORIZED,
            },
        }
    }

    /// The plain page (no request at hand); `error_pages::pages` draws it again in the
    /// frame.
    fn error_response(&self) -> HttpResponse {
        if let Self::SignInRequired { next: Some(next) } = self {
            let location = format!("/admin/signin?next={}", crate::escape::query_escape(next));
            let mut response = HttpResponse::SeeOther().insert_header((header::LOCATION, location)).finish();
            forget_session(&mut response);
            return response;
        }
        if self.status_code().is_server_error() {
            tracing::error!(error = %self, "an editor page failed");
        }
        let context = Context { session_csrf: None, signin_csrf: None, back: None, path: String::new() };
        let body = draw(self, &context, "the editor");
        let mut response =
            HttpResponse::build(self.status_code()).content_type("text/html; charset=utf-8").body(body);
        if let Some(seconds) = self.retry_after()
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        if matches!(self, Self::SignInRequired { .. } | Self::Resubmit(_))
            && !matches!(self, Self::Resubmit(form) if form.why == Why::TokenRefused)
        {
            forget_session(&mut response);
        }
        response
    }
}

/// The page of `error` in the frame of a visitor who is not signed in.
pub(crate) fn draw(error: &AdminError, context: &Context, site_name: &str) -> String {
    let c = Content::of(error, context);
    let page = ErrorPage { site_name, assets: crate::assets::VERSION.as_str(), c };
    page.render().unwrap_or_else(|_| error.to_string())
}

/// The cookie named no session that stands (or none at all): tell the browser to drop it.
fn forget_session(response: &mut HttpResponse) {
    let _ = response.add_removal_cookie(&session_cookie(SESSION_COOKIE, String::new()));
}

pub type AdminResult<T> = Result<T, AdminError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_sentences() {
        assert_eq!(sentence("no item x in posts"), "No item x in posts.");
        assert_eq!(sentence("Done."), "Done.");
        assert_eq!(seconds_text(1), "1 second");
        assert_eq!(seconds_text(30), "30 seconds");
        assert_eq!(seconds_text(900), "15 minutes");
    }
}
