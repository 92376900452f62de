//! The server listens as soon as it starts, while the first indexing of a large site may
//! take seconds: until it is done every route but `/status` answers `503` with
//! `Retry-After` (rather than holding the request until the index is built), and
//! `/status` says `indexing` with a count (see [`crate::handlers::service::status`]).
//!
//! Once the facade is indexed, the gate costs a request one atomic load
//! ([`cms_core::Cms::indexing`]): no boxed future, no allocation.

use std::future::{Ready, ready};
use std::sync::Arc;

use actix_web::body::EitherBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform, forward_ready};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use cms_core::Cms;
use futures_util::future::{Either, MapOk, TryFutureExt};

use crate::error::{ApiError, Shape};

/// What a client is told to wait before it asks again, in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;

/// The paths that answer while the site is indexed: the status routes, the health probes
/// and the metrics.
fn answers_while_indexing(path: &str) -> bool {
    matches!(path, "/" | "/status" | crate::routes::LIVEZ | crate::routes::READYZ | crate::routes::METRICS)
}

/// The middleware: wrap the application with it (innermost, so that the `503` still has
/// its CORS headers and its line in the request log).
pub struct UntilIndexed {
    cms: Arc<Cms>,
}

impl UntilIndexed {
    pub fn new(cms: Arc<Cms>) -> Self {
        Self { cms }
    }
}

impl<S, B> Transform<S, ServiceRequest> for UntilIndexed
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Transform = UntilIndexedService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(UntilIndexedService { service, cms: self.cms.clone() }))
    }
}

pub struct UntilIndexedService<S> {
    service: S,
    cms: Arc<Cms>,
}

type Passed<B> = fn(ServiceResponse<B>) -> ServiceResponse<EitherBody<B>>;

impl<S, B> Service<ServiceRequest> for UntilIndexedService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Future = Either<MapOk<S::Future, Passed<B>>, Ready<Result<Self::Response, Self::Error>>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        match self.cms.indexing() {
            Some(progress) if !answers_while_indexing(req.path()) => {
                let response = not_yet(progress).map_into_right_body();
                Either::Right(ready(Ok(req.into_response(response))))
            }
            _ => {
                Either::Left(self.service.call(req).map_ok(ServiceResponse::map_into_left_body as Passed<B>))
            }
        }
    }
}

/// `503` with `Retry-After`, saying how far the indexing is.
fn not_yet(progress: cms_core::service::Indexing) -> HttpResponse {
    let message = format!(
        "the server is starting: {} of {} item files indexed so far; retry in a moment (GET /status says when it is ready)",
        progress.indexed, progress.found
    );
    let mut response =
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, Shape::Envelope, message).error_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}
