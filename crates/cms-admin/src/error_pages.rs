//! Every error page of the editor drawn again with its request at hand: in the full layout
//! for a signed-in user, with the sign-in form and its token where signing in is the way
//! on, and a link back to the editor page the user came from. Status and headers
//! (`Retry-After`, cookies) stay those `AdminError` gave. Also puts the cookie of a session
//! an inline sign-in started (`auth::PostedForm`) on the answer.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::cookie::Cookie;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpRequest, web};
use askama::Template;

use crate::auth::StartedSession;
use crate::cookies::{SESSION_COOKIE, SIGNIN_COOKIE, session_cookie};
use crate::error::{AdminError, Content, Context, draw};
use crate::resubmit::Why;

#[derive(Template)]
#[template(path = "error_in_layout.html")]
struct ErrorInLayout {
    l: crate::view::Layout,
    c: Content,
}

/// Draws every error page of the editor in its frame, with the request at hand, and puts
/// the cookie of a session started on the way on the answer.
pub async fn pages(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let mut res = next.call(req).await?.map_into_boxed_body();
    let started = res.request().extensions().get::<StartedSession>().cloned();
    if let Some(StartedSession(cookie)) = started {
        let response = res.response_mut();
        let _ = response.add_cookie(&cookie);
        let _ = response.add_removal_cookie(&session_cookie(SIGNIN_COOKIE, String::new()));
    }
    let Some(error) = res.response().error().and_then(|e| e.as_error::<AdminError>()) else {
        return Ok(res);
    };
    if matches!(error, AdminError::SignInRequired { next: Some(_) }) {
        return Ok(res);
    }
    let request = res.request().clone();
    let (body, signin_cookie) = redraw(&request, error).await;
    let mut res = res.map_body(|_, _| BoxBody::new(body));
    let response = res.response_mut();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    if let Some(cookie) = signin_cookie {
        let _ = response.add_cookie(&cookie);
    }
    Ok(res)
}

/// The page of `error` for `req`, and the sign-in token's cookie when it has a sign-in form.
async fn redraw(req: &HttpRequest, error: &AdminError) -> (String, Option<Cookie<'static>>) {
    let Some(state) = req.app_data::<web::Data<crate::AdminState>>() else {
        return (draw(error, &plain_context(req), "the editor"), None);
    };
    let site_name = state.cms.site().name.clone();
    // Signed in (a 403 or 404 met on the way): the page in the full layout.
    let signed_in = match req.cookie(SESSION_COOKIE) {
        Some(cookie) if !matches!(error, AdminError::SignInRequired { .. }) => {
            match state.cms.resume_session(&state.sessions, cookie.value()).await {
                Ok(Some((principal, session))) => {
                    Some(crate::auth::SignedIn { principal, session, token: cookie.value().to_owned() })
                }
                _ => None,
            }
        }
        _ => None,
    };
    let mut context = plain_context(req);
    context.session_csrf = signed_in.as_ref().map(|user| user.session.csrf.clone());
    let wants_sign_in = match error {
        AdminError::SignInRequired { .. } | AdminError::Throttled(_) => true,
        AdminError::Resubmit(kept) => kept.why != Why::TokenRefused,
        AdminError::Csrf => context.path == "/admin/signin",
        _ => false,
    };
    let mut cookie = None;
    if wants_sign_in {
        // The token a sign-in page already set is used again, so that two tabs showing
        // a sign-in form can both send it.
        let existing = req.cookie(SIGNIN_COOKIE).map(|c| c.value().to_owned()).filter(|v| is_token(v));
        let token = match existing {
            Some(token) => Some(token),
            None => crate::auth::random::<{ cms_core::session::TOKEN_RANDOM_BYTES }>().ok().map(hex::encode),
        };
        if let Some(token) = &token {
            cookie = Some(crate::auth::for_request(req, session_cookie(SIGNIN_COOKIE, token.clone())));
        }
        context.signin_csrf = token;
    }
    let body = match &signed_in {
        Some(user) => {
            let mut l = crate::view::Layout::new(state, user, crate::view::Section::Home);
            for link in &mut l.nav {
                link.current = false;
            }
            let c = Content::of(error, &context);
            ErrorInLayout { l, c }.render().unwrap_or_else(|_| error.to_string())
        }
        None => draw(error, &context, &site_name),
    };
    (body, cookie)
}

fn plain_context(req: &HttpRequest) -> Context {
    Context {
        session_csrf: None,
        signin_csrf: None,
        back: crate::auth::referring_page(req),
        path: req.path().to_owned(),
    }
}

fn is_token(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())
}
