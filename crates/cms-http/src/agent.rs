//! The HTTP side of the AI-agent endpoint `/mcp`: where it is mounted, and the gate in
//! front of it (license feature `mcp`, origin, `mcp_` key). The MCP protocol itself is
//! `cms-mcp`'s; the gate hands it the key's [`Principal`] in the request's extensions.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{HttpServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpMessage, ResponseError, web};
use cms_core::license::Feature;
use cms_core::service::Principal;

use crate::error::{ApiError, Shape};
use crate::state;

/// Where the endpoint is mounted.
pub const PATH: &str = "/mcp";

/// Mounts the endpoint (the MCP transport's service, for the path `""`) at [`PATH`]
/// behind [`gate`]; for [`crate::app_with`].
pub fn mount<F: HttpServiceFactory + 'static>(endpoint: F) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.service(web::scope(PATH).wrap(from_fn(gate)).service(endpoint));
    }
}

/// In this order: the license must have `mcp` (`402`); a browser `Origin` must be an
/// allowed one (`403`: cross-site pages); the `Host` must be one of this server's names
/// (`403`: DNS rebinding); the request must carry an
/// `mcp_` key in `Authorization: Bearer` (`401` with `WWW-Authenticate: Bearer`; an
/// `api_` key is told that it belongs to the REST API). Keys are checked on every
/// request, so a revoked key stops working at once, even inside a session.
pub async fn gate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = state::of(req.request());
    let refuse = |req: ServiceRequest, error: ApiError| Ok(req.into_response(error.error_response()));
    if let Err(error) = state.run(Shape::Envelope, state.cms.require_feature(Feature::Mcp)).await {
        return refuse(req, error);
    }
    if let Some(origin) = state::origin(req.request())
        && !state.origin_allowed(origin)
    {
        let message = format!(
            "origin {origin} is not allowed to call /mcp; add it to cors.allowed_origins in cms.yaml \
             (its host to server.allowed_hosts if it is this server's own name)"
        );
        return refuse(req, ApiError::new(StatusCode::FORBIDDEN, Shape::Envelope, message));
    }
    // DNS rebinding: a name that resolves here but that the site does not name is refused,
    // with or without an `Origin` (behind a proxy too: it passes the client's name on, or
    // its own upstream address, a loopback name on the bound port).
    let asked = state::request_origin(req.request());
    if let Some(host) = asked.host
        && !state.cms.hosts().is_this_server(&format!("http://{host}"))
    {
        let message = format!(
            "/mcp was asked for as {host}, which is not one of this server's names; \
             add it to server.allowed_hosts in cms.yaml"
        );
        return refuse(req, ApiError::new(StatusCode::FORBIDDEN, Shape::Envelope, message));
    }
    // Only the header: MCP clients never put tokens in the URL.
    let key = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim())
        .map(|v| {
            v.split_once(' ').filter(|(s, _)| s.eq_ignore_ascii_case("bearer")).map_or(v, |(_, t)| t.trim())
        })
        .filter(|k| !k.is_empty())
        .map(str::to_owned);
    let Some(key) = key else {
        let message = "/mcp needs an mcp_ key: send Authorization: Bearer mcp_... \
                       (cms keys create --user EMAIL --mcp)";
        return refuse(req, ApiError::new(StatusCode::UNAUTHORIZED, Shape::Envelope, message));
    };
    let principal: Principal = match state.run(Shape::Envelope, state.cms.authenticate_agent(&key)).await {
        Ok(principal) => principal,
        Err(error) => return refuse(req, error),
    };
    req.extensions_mut().insert(principal);
    Ok(next.call(req).await?.map_into_boxed_body())
}
