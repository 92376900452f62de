//! Who is signed in, and the checks every state-changing form goes through.

use actix_web::cookie::Cookie;
use actix_web::dev::Payload;
use actix_web::http::{Method, header};
use actix_web::{FromRequest, HttpRequest, web};
use cms_core::account::Role;
use cms_core::host_policy::RequestOrigin;
use cms_core::service::Principal;
use cms_core::session::{Session, same_secret};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;

use crate::AdminState;
use crate::error::{AdminError, AdminResult};
use crate::forms::Fields;

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
        Some((principal, session)) => Ok(SignedIn { principal, session, token }),
        None => Err(AdminError::SignInRequired { next }),
    }
}

/// A submitted form of a signed-in user, read only after its CSRF token (the hidden
/// `csrf` field) matched the session's and the request came from this site. Every
/// state-changing urlencoded form goes through this.
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
            let user = signed_in(&req).await?;
            require_same_origin(&req)?;
            let fields = read_form(&req, payload, state_of(&req).form_limit).await?;
            check_csrf(&fields, &user.session.csrf)?;
            Ok(Self { user, fields })
        })
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
