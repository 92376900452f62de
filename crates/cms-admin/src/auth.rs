//! Who is signed in, and the checks every state-changing form goes through.

use std::time::Instant;

use actix_web::cookie::Cookie;
use actix_web::cookie::time::Duration as CookieDuration;
use actix_web::dev::Payload;
use actix_web::http::{Method, header};
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use cms_core::account::{self, Role};
use cms_core::host_policy::RequestOrigin;
use cms_core::service::Principal;
use cms_core::session::{Session, TOKEN_RANDOM_BYTES, same_secret};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;

use crate::AdminState;
use crate::error::{AdminError, AdminResult};
use crate::forms::Fields;
use crate::resubmit::{ResubmitForm, SIGNIN_EMAIL, SIGNIN_PASSWORD, Why};
use crate::throttle::Subject;

pub use crate::cookies::{COOKIE_PATH, SESSION_COOKIE, SIGNIN_COOKIE, session_cookie};

/// Marks a cookie `Secure` when the page was served over HTTPS (which only a proxy in
/// `server.trusted_proxies` can say, with `X-Forwarded-Proto` or `Forwarded`), so it is
/// never sent in clear afterwards; over plain HTTP (a local server) a `Secure` cookie would
/// not be stored.
pub fn for_request(req: &HttpRequest, mut cookie: Cookie<'static>) -> Cookie<'static> {
    let asked = request_origin(req);
    cookie.set_secure(state_of(req).cms.hosts().is_https(&asked));
    cookie
}

/// What the request says of where it came from, for `cms_core::host_policy`.
pub fn request_origin(req: &HttpRequest) -> RequestOrigin<'_> {
    RequestOrigin::read(req.peer_addr().map(|a| a.ip()), |name| {
        req.headers().get(name).and_then(|v| v.to_str().ok())
    })
}

/// The client's address (behind trusted proxies, the one they forwarded for). Every
/// `X-Forwarded-For` line counts, in order: a proxy may add its own line after the one
/// the client sent.
pub fn client_address(req: &HttpRequest) -> Option<std::net::IpAddr> {
    let lines: Vec<&str> = req.headers().get_all("x-forwarded-for").filter_map(|v| v.to_str().ok()).collect();
    let forwarded_for = (!lines.is_empty()).then(|| lines.join(","));
    state_of(req).cms.hosts().client_address(req.peer_addr().map(|a| a.ip()), forwarded_for.as_deref())
}

pub fn state_of(req: &HttpRequest) -> web::Data<AdminState> {
    req.app_data::<web::Data<AdminState>>().cloned().expect("the editor's state is registered by mount")
}

/// The signed-in user of a request, with their session. Every editor page takes it.
pub struct SignedIn {
    pub principal: Principal,
    pub session: Session,
    /// The session token from the cookie (to sign out).
    pub token: String,
}

impl SignedIn {
    pub fn role(&self) -> Role {
        self.principal.user.role
    }

    pub fn email(&self) -> &str {
        &self.principal.user.email
    }
}

impl FromRequest for SignedIn {
    type Error = AdminError;
    type Future = LocalBoxFuture<'static, Result<Self, AdminError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { signed_in(&req).await })
    }
}

async fn signed_in(req: &HttpRequest) -> AdminResult<SignedIn> {
    let state = state_of(req);
    // Pages asked for with GET send the browser to the sign-in page and back.
    let next = (req.method() == Method::GET).then(|| {
        req.uri().path_and_query().map_or_else(|| "/admin/".to_owned(), |pq| pq.as_str().to_owned())
    });
    let Some(cookie) = req.cookie(SESSION_COOKIE) else {
        return Err(AdminError::SignInRequired { next });
    };
    let token = cookie.value().to_owned();
    match state.cms.resume_session(&state.sessions, &token).await? {
        Some((principal, session)) => {
            // Who made the request, for the access log (cms-http's `log_request`).
            req.extensions_mut().insert(principal.clone());
            Ok(SignedIn { principal, session, token })
        }
        None => Err(AdminError::SignInRequired { next }),
    }
}

/// A submitted form of a signed-in user, read only after its CSRF token (the hidden
/// `csrf` field) matched the session's and the request came from this site. Every
/// state-changing urlencoded form goes through this.
///
/// A form from this site's own pages (its `Origin` or `Sec-Fetch-Site` says so, and it
/// carries a token as the editor's forms do) that cannot be acted on is never dropped: one whose session ended, or whose token is another
/// session's, is answered with everything it sent ([`AdminError::Kept`]), in a form that
/// sends it again, with an inline sign-in when there is no session. That sign-in comes
/// back here: checked like the sign-in page's (its own token and cookie, the throttle,
/// the password), it starts a session and the form is acted on at once.
pub struct PostedForm {
    pub user: SignedIn,
    pub fields: Fields,
}

impl FromRequest for PostedForm {
    type Error = AdminError;
    type Future = LocalBoxFuture<'static, Result<Self, AdminError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let signed_in = signed_in(&req).await;
            require_same_origin(&req)?;
            let keeps = from_this_sites_page(&req) && crate::resubmit::keeps_forms_of(req.path());
            let limit = state_of(&req).form_limit;
            let user = match signed_in {
                Ok(user) => user,
                Err(AdminError::SignInRequired { next }) if keeps => {
                    let fields = read_form(&req, payload, limit).await?;
                    if !made_by_the_editor(&fields) {
                        return Err(AdminError::SignInRequired { next });
                    }
                    let user = sign_in_inline(&req, &fields).await?;
                    return Ok(Self { user, fields: fields.without(&[SIGNIN_EMAIL, SIGNIN_PASSWORD]) });
                }
                Err(error) => return Err(error),
            };
            let fields = read_form(&req, payload, limit).await?;
            match check_csrf(&fields, &user.session.csrf) {
                Ok(()) => Ok(Self { user, fields }),
                Err(_) if keeps && made_by_the_editor(&fields) => Err(AdminError::resubmit(
                    ResubmitForm::new(Why::TokenRefused, &action_of(&req), fields.pairs()),
                )),
                Err(error) => Err(error),
            }
        })
    }
}

/// Whether a form looks like one of the editor's own: they all carry a token (`csrf`, 64
/// hex digits), if perhaps no longer the session's. One without is not offered back.
fn made_by_the_editor(fields: &Fields) -> bool {
    fields.get("csrf").is_some_and(|token| {
        token.len() == 2 * TOKEN_RANDOM_BYTES && token.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Where a form was posted (path and query): the form offered back goes there again.
fn action_of(req: &HttpRequest) -> String {
    req.uri().path_and_query().map_or_else(|| req.path().to_owned(), |pq| pq.as_str().to_owned())
}

/// The inline sign-in of a form offered back (no session): `Kept` again, with why, unless it
/// carries a good password with the sign-in's own token; then a new session, whose cookie
/// the answer gets (`error::pages`).
async fn sign_in_inline(req: &HttpRequest, fields: &Fields) -> AdminResult<SignedIn> {
    let keep = |why| AdminError::resubmit(ResubmitForm::new(why, &action_of(req), fields.pairs()));
    if fields.get(SIGNIN_PASSWORD).is_none() {
        return Err(keep(Why::SessionEnded));
    }
    let expected = req.cookie(SIGNIN_COOKIE).map(|c| c.value().to_owned()).unwrap_or_default();
    if check_csrf(fields, &expected).is_err() {
        return Err(keep(Why::SignInExpired));
    }
    let email = fields.text(SIGNIN_EMAIL).trim().to_ascii_lowercase();
    match sign_in(req, &email, fields.text(SIGNIN_PASSWORD).to_owned()).await? {
        SignIn::Started { user, cookie } => {
            req.extensions_mut().insert(StartedSession(cookie));
            Ok(*user)
        }
        SignIn::Refused => Err(keep(Why::SignInFailed)),
        SignIn::Locked(seconds) => Err(keep(Why::Throttled(seconds))),
    }
}

/// A session an inline sign-in started while the request was answered: its cookie goes
/// on the answer, whatever it is (`error_pages::pages` puts it there).
#[derive(Clone)]
pub struct StartedSession(pub Cookie<'static>);

/// What a sign-in came to.
pub enum SignIn {
    /// A new session, and its cookie for the answer.
    Started { user: Box<SignedIn>, cookie: Cookie<'static> },
    /// Wrong email or password (or none set).
    Refused,
    /// The account or address is locked for this many seconds.
    Locked(u64),
}

/// Checks a password and starts a session: the one way of signing in (the sign-in page
/// and a form offered back's inline sign-in). The attempt is counted before the password is
/// hashed, and an account has one check in flight at a time (see [`crate::throttle`]).
pub async fn sign_in(req: &HttpRequest, email: &str, password: String) -> AdminResult<SignIn> {
    let state = state_of(req);
    let address = Subject::address(client_address(req));
    let attempt = match state.throttle.begin(Subject::Account(email.to_owned()), address, Instant::now()) {
        Ok(attempt) => attempt,
        Err(wait) => return Ok(SignIn::Locked(wait.as_secs().max(1))),
    };
    let credentials = state.cms.user_credentials(email).await?;
    let stored = credentials.as_ref().and_then(|(_, hash)| hash.clone());
    // Argon2 takes tens of milliseconds: off the async worker. An unknown account is
    // checked against a decoy hash, so it answers as slowly.
    let matches = web::block(move || account::verify_password(stored.as_deref(), &password))
        .await
        .map_err(|e| cms_core::CoreError::internal("checking a password", e.to_string()))?;
    let (user, hash) = match credentials {
        Some(found) if matches => found,
        _ => {
            drop(attempt);
            tracing::info!(email, "a sign-in to the editor failed");
            return Ok(SignIn::Refused);
        }
    };
    attempt.succeeded();
    let started = state
        .cms
        .start_session(
            &state.sessions,
            &user,
            hash.as_deref(),
            random::<TOKEN_RANDOM_BYTES>()?,
            random::<TOKEN_RANDOM_BYTES>()?,
        )
        .await?;
    let lifetime = state.sessions.policy().absolute.whole_seconds();
    let mut cookie = for_request(req, session_cookie(SESSION_COOKIE, started.token.clone()));
    cookie.set_max_age(CookieDuration::seconds(lifetime));
    tracing::info!(email = user.email, "signed in to the editor");
    let user = SignedIn {
        principal: Principal { user, key_id: cms_core::service::SESSION_KEY_ID.to_owned(), key_name: None },
        session: started.session,
        token: started.token,
    };
    Ok(SignIn::Started { user: Box::new(user), cookie })
}

/// Whether the browser says the request comes from this site's own pages: an `Origin`
/// that is this server, or `Sec-Fetch-Site: same-origin`. (Without either, as from an old
/// browser or a script, a refused form is not offered back: a form it did not make could
/// otherwise be put before the user to send.)
fn from_this_sites_page(req: &HttpRequest) -> bool {
    let headers = req.headers();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if text("sec-fetch-site") == Some("same-origin") {
        return true;
    }
    text("origin").is_some_and(|origin| is_this_origin(req, origin.trim_end_matches('/')))
}

fn is_this_origin(req: &HttpRequest, origin: &str) -> bool {
    let cms = &state_of(req).cms;
    origin.eq_ignore_ascii_case(site_origin(&cms.site().url)) || cms.hosts().is_this_server(origin)
}

/// The editor page the request came from (`Referer`, when it is this server's), to offer
/// a way back.
pub fn referring_page(req: &HttpRequest) -> Option<String> {
    let referer = req.headers().get(header::REFERER)?.to_str().ok()?;
    let (scheme, rest) = referer.split_once("://")?;
    let at = rest.find('/')?;
    let origin = &referer[..scheme.len() + 3 + at];
    if !is_this_origin(req, origin) {
        return None;
    }
    let page = &rest[at..];
    let page = page.split('#').next().unwrap_or(page);
    (safe_next(Some(page)) == page).then(|| page.to_owned())
}

/// Where to go after signing in: a page of the editor, never another site.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(next)
            if next.starts_with("/admin/")
                && !next.contains("//")
                && !next.contains('\\')
                && !next.chars().any(char::is_control) =>
        {
            next.to_owned()
        }
        _ => "/admin/".to_owned(),
    }
}

/// `Csrf` unless the form's `csrf` field is `expected`.
pub fn check_csrf(fields: &Fields, expected: &str) -> AdminResult<()> {
    match fields.get("csrf") {
        Some(token) if !expected.is_empty() && same_secret(token, expected) => Ok(()),
        _ => Err(AdminError::Csrf),
    }
}

/// Refuses requests a browser says come from another site (`Sec-Fetch-Site`), or whose
/// `Origin` is not this server: a second line behind the CSRF token and `SameSite`. This
/// server is the configured `site.url` or one of the names `cms_core::host_policy` knows
/// (never the request's own `Host`, which DNS rebinding controls).
pub fn require_same_origin(req: &HttpRequest) -> AdminResult<()> {
    let headers = req.headers();
    let text = |name| headers.get(name).and_then(|v: &header::HeaderValue| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site"))
        && matches!(site, "cross-site" | "same-site")
    {
        return Err(AdminError::Csrf);
    }
    let Some(origin) = text(header::ORIGIN) else { return Ok(()) };
    let origin = origin.trim_end_matches('/');
    let cms = &state_of(req).cms;
    let this_server =
        origin.eq_ignore_ascii_case(site_origin(&cms.site().url)) || cms.hosts().is_this_server(origin);
    if this_server { Ok(()) } else { Err(AdminError::Csrf) }
}

/// `scheme://host[:port]` of the site's URL.
fn site_origin(url: &str) -> &str {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).map_or(url.len(), |at| scheme.len() + 3 + at);
            &url[..end]
        }
        None => url,
    }
}

/// An `application/x-www-form-urlencoded` body of at most `limit` bytes.
pub async fn read_form(req: &HttpRequest, mut payload: Payload, limit: usize) -> AdminResult<Fields> {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") {
        return Err(AdminError::bad_request(
            "send this form as application/x-www-form-urlencoded, as the editor's pages do",
        ));
    }
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| AdminError::bad_request(format!("the form was cut off: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(cms_core::CoreError::TooLarge(format!(
                "the form is over the limit of {limit} bytes (limits.json_bytes in cms.yaml)"
            ))
            .into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fields::parse(&body))
}

/// Random bytes from the system source (session and CSRF tokens, API keys).
pub fn random<const N: usize>() -> AdminResult<[u8; N]> {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut bytes = [0; N];
    SystemRandom::new().fill(&mut bytes).map_err(|_| {
        cms_core::CoreError::internal("drawing random bytes", "the system random source failed")
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn site_origins() {
        assert_eq!(super::site_origin("https://example.com/blog"), "https://example.com");
        assert_eq!(super::site_origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
