//! The editor's cookies: their names and how they are made (a leaf, so that the error
//! pages can end a session without depending on [`crate::auth`]).

use actix_web::cookie::{Cookie, SameSite};

/// The session cookie: the token only, never anything about the user.
pub const SESSION_COOKIE: &str = "cms_session";
/// The sign-in form's own CSRF token, set before there is a session.
pub const SIGNIN_COOKIE: &str = "cms_signin";
/// Where the editor lives; its cookies go nowhere else.
pub const COOKIE_PATH: &str = "/admin";

/// An editor cookie: `HttpOnly`, `SameSite=Lax`, sent to `/admin` only. See
/// [`crate::auth::for_request`] for `Secure`.
pub fn session_cookie(name: &'static str, value: String) -> Cookie<'static> {
    Cookie::build(name, value).path(COOKIE_PATH).http_only(true).same_site(SameSite::Lax).finish()
}
