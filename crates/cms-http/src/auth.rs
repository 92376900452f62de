//! Authentication as extractors, written once: [`KeyUser`] for `Req` routes, [`Reader`] for
//! `Opt` routes. Handlers never look at headers themselves.

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use actix_web::HttpMessage;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, dev::Payload};
use cms_core::service::{Principal, Viewer};
use futures_util::future::{Either, Ready, ready};

use crate::error::{ApiError, Shape};
use crate::state;

/// Which response shape an extractor's errors take (a marker type, not a role: the
/// facade checks roles).
pub trait ErrorShape {
    const SHAPE: Shape;
}

/// Errors in the envelope (`{status, message, ...}`) of the service routes.
pub struct EnvelopeShape;
/// Errors in the editor API's shape (`{error}`).
pub struct EditorShape;

impl ErrorShape for EnvelopeShape {
    const SHAPE: Shape = Shape::Envelope;
}
impl ErrorShape for EditorShape {
    const SHAPE: Shape = Shape::Editor;
}

/// The user behind a required, valid key.
pub struct KeyUser<S: ErrorShape> {
    pub principal: Principal,
    _shape: PhantomData<S>,
}

/// Who reads through an `Opt` route: anonymous (origin-checked) or a valid key's user.
/// (Not `cms_core::policy::Caller`, which a privileged facade call takes.)
pub struct Reader {
    pub viewer: Viewer,
}

/// The key a request presents: `Authorization: Bearer <key>`, else `?token=<key>`.
fn presented_key(req: &HttpRequest) -> Option<String> {
    if let Some(value) = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let value = value.trim();
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .unwrap_or(value);
        return Some(token.to_owned());
    }
    let query = req.query_string();
    if query.is_empty() {
        return None;
    }
    let token = crate::query::value(query, "token").filter(|t| !t.is_empty()).map(Cow::into_owned);
    if token.is_some() {
        // However the name was spelled (`%74oken`), the answer is the key's own.
        req.extensions_mut().insert(KeyedByQuery);
    }
    token
}

/// Keeps who made the request in its extensions, for the access log
/// ([`crate::middleware::log_request`]); the agent endpoint's gate and the editor's
/// sessions do the same.
fn note_caller(req: &HttpRequest, principal: &Principal) {
    req.extensions_mut().insert(principal.clone());
}

/// Marks a request that presented a key in its query string (see
/// `middleware::cache_control`: its answer is private).
#[derive(Debug, Clone, Copy)]
pub struct KeyedByQuery;

type Boxed<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

impl<S: ErrorShape + 'static> FromRequest for KeyUser<S> {
    type Error = ApiError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let key = presented_key(req);
        let req = req.clone();
        Box::pin(async move {
            let key = key.ok_or_else(|| {
                ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    S::SHAPE,
                    "this route needs an API key: send Authorization: Bearer <key>",
                )
            })?;
            let state = state::shared(&req);
            let principal = state.run(S::SHAPE, state.cms.authenticate(&key)).await?;
            note_caller(&req, &principal);
            Ok(Self { principal, _shape: PhantomData })
        })
    }
}

impl FromRequest for Reader {
    type Error = ApiError;
    type Future = Either<Ready<Result<Self, ApiError>>, Boxed<Self>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(key) = presented_key(req) {
            let req = req.clone();
            return Either::Right(Box::pin(async move {
                let state = state::shared(&req);
                let principal = state.run(Shape::Envelope, state.cms.authenticate(&key)).await?;
                note_caller(&req, &principal);
                Ok(Self { viewer: Viewer::Key(principal) })
            }));
        }
        // No key: decided here, without a future to wait on (the busiest case).
        Either::Left(ready(match state::origin(req) {
            Some(origin) if !state::of(req).origin_allowed(origin) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                Shape::Envelope,
                format!(
                    "origin {origin} is not allowed to call this route without a key; send an API key, \
                     or add the origin to cors.allowed_origins in cms.yaml (its host to \
                     server.allowed_hosts if it is this server's own name)"
                ),
            )),
            _ => Ok(Self { viewer: Viewer::Anonymous }),
        }))
    }
}
