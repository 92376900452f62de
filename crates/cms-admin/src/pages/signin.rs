//! Signing in and out.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use cms_core::session::TOKEN_RANDOM_BYTES;

use super::query_param;
use crate::AdminState;
use crate::auth::{
    self, PostedForm, SESSION_COOKIE, SIGNIN_COOKIE, SignIn, for_request, random, safe_next, session_cookie,
};
use crate::error::{AdminError, AdminResult};
use crate::view;

/// Largest sign-in form body.
const SIGNIN_FORM_LIMIT: usize = 8 * 1024;

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    site_name: String,
    assets: &'static str,
    csrf: String,
    next: String,
    email: String,
    error: Option<String>,
    signed_out: bool,
}

/// `GET /admin/signin`: the form, with a fresh sign-in token in a cookie and the form.
pub async fn form(req: HttpRequest, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let next = safe_next(query_param(&req, "next").as_deref());
    if let Some(cookie) = req.cookie(SESSION_COOKIE)
        && state.cms.resume_session(&state.sessions, cookie.value()).await?.is_some()
    {
        return Ok(view::see_other(&next));
    }
    let signed_out = query_param(&req, "out").is_some();
    render(&req, &state, StatusCode::OK, next, String::new(), None, signed_out)
}

/// Draws the form with a new sign-in token (set in a cookie too: the post must carry both).
fn render(
    req: &HttpRequest,
    state: &AdminState,
    status: StatusCode,
    next: String,
    email: String,
    error: Option<String>,
    signed_out: bool,
) -> AdminResult<HttpResponse> {
    let csrf = hex::encode(random::<TOKEN_RANDOM_BYTES>()?);
    let page = SignInPage {
        site_name: state.cms.site().name.clone(),
        assets: crate::assets::VERSION.as_str(),
        csrf: csrf.clone(),
        next,
        email,
        error,
        signed_out,
    };
    let mut response = view::page(status, &page)?;
    response
        .add_cookie(&for_request(req, session_cookie(SIGNIN_COOKIE, csrf)))
        .map_err(|e| AdminError::bad_request(format!("cannot set the sign-in cookie: {e}")))?;
    Ok(response)
}

/// `POST /admin/signin` (`email`, `password`, `csrf`, `next`).
pub async fn submit(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    auth::require_same_origin(&req)?;
    let fields = auth::read_form(&req, payload.into_inner(), SIGNIN_FORM_LIMIT).await?;
    let expected = req.cookie(SIGNIN_COOKIE).map(|c| c.value().to_owned()).unwrap_or_default();
    auth::check_csrf(&fields, &expected)?;
    let next = safe_next(fields.get("next"));
    let email = fields.text("email").trim().to_ascii_lowercase();
    let password = fields.text("password").to_owned();

    match auth::sign_in(&req, &email, password).await? {
        SignIn::Started { cookie, .. } => {
            let mut response = view::see_other(&next);
            response.add_cookie(&cookie).map_err(|e| cookie_error(&e))?;
            response
                .add_removal_cookie(&session_cookie(SIGNIN_COOKIE, String::new()))
                .map_err(|e| cookie_error(&e))?;
            Ok(response)
        }
        SignIn::Refused => {
            let error = "Wrong email or password (or no password is set: `cms users passwd`).".to_owned();
            render(&req, &state, StatusCode::UNAUTHORIZED, next, email, Some(error), false)
        }
        SignIn::Locked(seconds) => Err(AdminError::Throttled(seconds)),
    }
}

/// `POST /admin/signout`: ends the session here and in the browser.
pub async fn sign_out(form: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    state.sessions.end(&form.user.token).await?;
    let mut response = view::see_other("/admin/signin?out=1");
    response
        .add_removal_cookie(&session_cookie(SESSION_COOKIE, String::new()))
        .map_err(|e| AdminError::bad_request(format!("cannot clear the cookie: {e}")))?;
    Ok(response)
}

fn cookie_error(error: &dyn std::fmt::Display) -> AdminError {
    AdminError::bad_request(format!("cannot set the cookie: {error}"))
}

#[cfg(test)]
mod tests {
    use crate::auth::safe_next;

    #[test]
    fn next_stays_in_the_editor() {
        assert_eq!(safe_next(Some("/admin/media?folder=0")), "/admin/media?folder=0");
        for bad in ["https://evil.example/", "//evil.example", "/admin//evil", "/cms/x", "/admin/\\x", ""] {
            assert_eq!(safe_next(Some(bad)), "/admin/", "{bad}");
        }
        assert_eq!(safe_next(None), "/admin/");
    }
}
