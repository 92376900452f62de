//! Cross-cutting request handling, written once: the request log, request ids, CORS, and
//! the license gate that answers `402` on every route (ids, CORS and the gate in one
//! layer).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use cms_core::license::Feature;
use tracing::Instrument;

use crate::encoding::{self, Effort};
use crate::error::{ApiError, Shape};
use crate::request_id;
use crate::state;

const ALLOW_METHODS: &str = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
// The `Mcp-*` and `Last-Event-ID` headers are the MCP transport's (`/mcp`).
const ALLOW_HEADERS: &str = "Authorization, Content-Type, If-Match, If-None-Match, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-Request-Id";
const EXPOSE_HEADERS: &str = "ETag, Location, WWW-Authenticate, Mcp-Session-Id, X-Request-Id";
/// The header that names a request in the answer and in every log line of it.
pub const REQUEST_ID: &str = "x-request-id";

/// A request path as the log shows it: a preview link's token is a credential, so only
/// the route is kept.
fn logged_path(path: &str) -> &str {
    const PREVIEW: &str = "/cms/preview/";
    match path.strip_prefix(PREVIEW) {
        Some(token) if !token.is_empty() => "/cms/preview/…",
        _ => path,
    }
}

fn is_preflight(req: &ServiceRequest) -> bool {
    req.method() == Method::OPTIONS
        && req.headers().contains_key(header::ORIGIN)
        && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The request's id (and its span), its metrics, CORS, then the license gate, in one
/// layer (each layer costs every request a boxed future): see [`request_id`],
/// [`crate::metrics`], [`cors_origin`] and [`require_license`]; then what every answer
/// gets on its way out ([`finish`]), and its line in the access log ([`log_request`]).
pub async fn cors_and_license(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let id = request_id::of(req.headers().get(REQUEST_ID));
    let started = Instant::now();
    let method = req.method().clone();
    let shared = state::of(req.request());
    // Counted only when the metrics are read somewhere (`metrics:` in cms.yaml).
    let metrics = shared.counting.then(|| Arc::clone(&shared.metrics));
    let traces = shared.traces.clone();
    // Counted in flight until dropped: also when the client goes and the request with it.
    let _in_flight = metrics.as_ref().map(|metrics| metrics.in_flight());
    let mut response = match cors_origin(&req) {
        Err(preflight) => req.into_response(*preflight),
        Ok(allowed) => {
            // The lines logged on the way carry the request's id: with traces exported,
            // in the request's span (kept to record the answer on); otherwise the id is
            // the task's (see `request_id::scope`), much cheaper than a span.
            let traced = traces.as_ref().map(|traces| (traces, traces.request_span(req.request(), &id)));
            let mut response = match require_license(&req).await {
                Ok(()) => {
                    let handled = next.call(req);
                    match &traced {
                        Some((_, span)) => handled.instrument(span.clone()).await,
                        None => request_id::scope(id.clone(), handled).await,
                    }?
                    .map_into_boxed_body()
                }
                Err(refused) => req.into_response(refused),
            };
            if let Some((traces, span)) = traced {
                let route = crate::router::route_of(response.request().match_info().as_str());
                let route =
                    route.map(Cow::Borrowed).or_else(|| response.request().match_pattern().map(Cow::Owned));
                traces.answered(&span, method.as_str(), route.as_deref(), response.status().as_u16());
            }
            if let Some(origin) = allowed
                && let Ok(value) = HeaderValue::from_str(&origin)
            {
                let headers = response.headers_mut();
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
                headers
                    .insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
            }
            finish(response).await
        }
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(header::HeaderName::from_static(REQUEST_ID), value);
    }
    // Told to stop: the client's next request goes on a new connection, to a server
    // that is not stopping (`server.drain_secs`).
    if state::of(response.request()).cms.is_draining() {
        response.response_mut().head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    }
    if let Some(metrics) = metrics {
        metrics.answered(&method, &response, started.elapsed());
    }
    log_request(&response, &method, &id, started);
    Ok(response)
}

/// The request's line in the access log ([`crate::access_log`], when the server has one):
/// method, path without its query (it may carry `token=`; a preview link's token is left
/// out too, see [`logged_path`]), the route template, status, time, the request's id, and
/// who asked: the key's id, or the editor session's user (the `Principal` authentication
/// left in the request's extensions), never a secret.
fn log_request(response: &ServiceResponse<BoxBody>, method: &Method, id: &str, started: Instant) {
    let shared = state::of(response.request());
    let Some(log) = &shared.access_log else { return };
    if !log.wants(response.status().as_u16()) {
        return;
    }
    // The route template that answered (the router's tag), never the raw path (which may
    // name anything): `None` for the editor, the agent endpoint and files, whose paths
    // are their own. `/cms/%70review/TOKEN` is a preview too.
    let extensions = response.request().extensions();
    let route = extensions.get::<crate::metrics::MatchedRoute>().map(|matched| matched.0);
    let path = match route {
        Some(crate::routes::PREVIEW) => logged_path("/cms/preview/token"),
        _ => logged_path(response.request().path()),
    };
    let caller = extensions.get::<cms_core::service::Principal>();
    let key_id = caller.filter(|p| p.key_id != cms_core::service::SESSION_KEY_ID).map(|p| p.key_id.as_str());
    let user =
        caller.filter(|p| p.key_id == cms_core::service::SESSION_KEY_ID).map(|p| p.user.email.as_str());
    log.write(&crate::access_log::Line {
        method: method.as_str(),
        path,
        route,
        status: response.status().as_u16(),
        ms: started.elapsed().as_millis() as u64,
        request_id: id,
        key_id,
        user,
    });
}

/// Bodies at least this long are compressed when the client accepts a coding (below it,
/// the coding's own framing eats most of the gain).
const MIN_COMPRESSED_BYTES: usize = 1024;

/// What every answer gets on its way out:
/// - `Vary: Origin`: whether CORS headers are sent depends on it, for every answer (a
///   cached copy must not reach another origin without its own);
/// - `Cache-Control` ([`cache_control`]);
/// - a text body held in memory (not a kept answer, which is sent in its coding already,
///   nor a stream) in the coding the request accepts, with `Vary: Accept-Encoding`.
async fn finish(mut response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let cache_control = cache_control(&response);
    let success = response.status().is_success();
    let headers = response.headers_mut();
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(value) = cache_control {
        headers.insert(header::CACHE_CONTROL, value);
    }
    let text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let compressible = success
        && !headers.contains_key(header::CONTENT_ENCODING)
        && !headers.contains_key(header::CONTENT_RANGE)
        && text(header::CONTENT_TYPE).is_some_and(encoding::is_compressible)
        // BREACH: an HTML page that is never stored (the editor's) carries a form token
        // beside what the request put in it; its length must not tell the token.
        && !(text(header::CONTENT_TYPE).is_some_and(|t| t.starts_with("text/html"))
            && text(header::CACHE_CONTROL).is_some_and(|c| c.contains("no-store")));
    if !compressible {
        return response;
    }
    if !headers.get_all(header::VARY).any(|v| v.as_bytes().eq_ignore_ascii_case(b"Accept-Encoding")) {
        headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    let (req, res) = response.into_parts();
    let (mut res, body) = res.into_parts();
    let body = match body.try_into_bytes() {
        Ok(bytes) => bytes,
        // A stream (server-sent events) or a kept answer (sent in its coding already).
        Err(body) => return ServiceResponse::new(req, res.set_body(body)),
    };
    let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
    let coding = (body.len() >= MIN_COMPRESSED_BYTES).then(|| encoding::negotiate(accept_encoding)).flatten();
    let Some(coding) = coding else { return ServiceResponse::new(req, res.set_body(BoxBody::new(body))) };
    let compressed = if body.len() > encoding::INLINE_COMPRESSION_BYTES {
        // Off the async worker: a large body would hold every connection of the worker.
        let plain = body.clone(); // shared bytes, not a copy
        match actix_web::web::block(move || encoding::compress(coding, &plain, Effort::Dynamic)).await {
            Ok(compressed) => compressed,
            Err(_) => return ServiceResponse::new(req, res.set_body(BoxBody::new(body))),
        }
    } else {
        encoding::compress(coding, &body, Effort::Dynamic)
    };
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding.token()));
    headers.remove(header::CONTENT_LENGTH);
    // The compressed representation's own tag (see `encoding::coded_etag`).
    let coded = headers.get(header::ETAG).and_then(|etag| {
        HeaderValue::from_str(&encoding::coded_etag(etag.to_str().ok()?, Some(coding))).ok()
    });
    if let Some(coded) = coded {
        headers.insert(header::ETAG, coded);
    }
    ServiceResponse::new(req, res.set_body(BoxBody::new(compressed)))
}

/// The caching policy (docs/api-conventions.md): answers to a request made with a key
/// (header or `?token=`) are `private, no-store`, whatever the handler said; errors are
/// `no-store`; other answers keep what their handler set (media, variants, the editor),
/// or get the site's public policy (`public, no-cache` by default).
fn cache_control(response: &ServiceResponse<BoxBody>) -> Option<HeaderValue> {
    let req = response.request();
    let keyed = req.headers().contains_key(header::AUTHORIZATION)
        || req.extensions().contains::<crate::auth::KeyedByQuery>();
    if keyed {
        return Some(HeaderValue::from_static("private, no-store"));
    }
    let set = response.headers().get(header::CACHE_CONTROL);
    if response.status().is_client_error() || response.status().is_server_error() {
        let stored = set.is_some_and(|v| v.to_str().is_ok_and(|v| v.contains("no-store")));
        return (!stored).then(|| HeaderValue::from_static("no-store"));
    }
    if set.is_some() {
        return None;
    }
    Some(state::of(req).public_cache_control.clone())
}

/// The request's origin when it is allowed (its answer then carries the CORS headers);
/// `Err` with the whole answer to a preflight: `204` for allowed origins, `403` otherwise.
fn cors_origin(req: &ServiceRequest) -> Result<Option<String>, Box<HttpResponse>> {
    let allowed = state::origin(req.request())
        .filter(|origin| state::of(req.request()).origin_allowed(origin))
        .map(str::to_owned);
    if !is_preflight(req) {
        return Ok(allowed);
    }
    Err(Box::new(match &allowed {
        Some(origin) => HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.as_str()))
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, ALLOW_METHODS))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOW_HEADERS))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"))
            .insert_header((header::VARY, "Origin"))
            .finish(),
        None => ApiError::new(
            StatusCode::FORBIDDEN,
            Shape::Envelope,
            format!(
                "origin {} is not allowed; add it to cors.allowed_origins in cms.yaml",
                state::origin(req.request()).unwrap_or("")
            ),
        )
        .error_response(),
    }))
}

/// Every route needs an active license with `json_api`; without one the answer is `402`
/// in the envelope shape. Preflights pass (the CORS layer has answered them already), and
/// so do the health probes and the metrics: an orchestrator must not restart a server for
/// its license, nor lose sight of it.
async fn require_license(req: &ServiceRequest) -> Result<(), HttpResponse> {
    if matches!(req.path(), crate::routes::LIVEZ | crate::routes::READYZ | crate::routes::METRICS) {
        return Ok(());
    }
    let state = state::of(req.request());
    state
        .run(Shape::Envelope, state.cms.require_feature(Feature::JsonApi))
        .await
        .map_err(|error| error.error_response())
}

#[cfg(test)]
mod tests {
    use super::logged_path;

    #[test]
    fn preview_tokens_stay_out_of_the_log() {
        assert_eq!(logged_path("/cms/preview/posts.1.hello.abcd"), "/cms/preview/…");
        assert_eq!(logged_path("/cms/preview/"), "/cms/preview/");
        assert_eq!(logged_path("/cms/collections/posts/items"), "/cms/collections/posts/items");
    }
}
