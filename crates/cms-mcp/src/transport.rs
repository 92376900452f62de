//! The door of rmcp's Streamable HTTP transport: what `/mcp` checks and answers around it.
//!
//! Before rmcp sees a request: a `Mcp-Session-Id` must name a session of the request's key
//! (else `404`, as for a session that never was); a `POST` body must be JSON (`400` with
//! JSON-RPC's parse error `-32700`) and a JSON-RPC message (`400`, `-32600`) within
//! `limits.json_bytes` (`413`); an `initialize` gets room for its session first, or a
//! refusal naming the bound (`429` per key, `503` in total). rmcp's handling then runs as
//! the request's [`Caller`]. After: rmcp's plain-text refusals become JSON-RPC error
//! objects, and a session's `DELETE` answers `204` (rmcp's `202` reads as a failure to the
//! Python SDK).

use std::sync::Arc;

use actix_web::body::BoxBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{HttpMessage, HttpResponse};
use cms_core::service::Principal;
use futures_util::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};
use serde_json::{Value, json};

use crate::sessions::{CALLER, Caller, SessionError, Sessions};

/// JSON-RPC error codes of the transport's answers.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INTERNAL_ERROR: i32 = -32603;
/// Implementation-defined (the TypeScript SDK's codes): the server cannot take a session
/// now; the session does not exist.
const SESSION_REFUSED: i32 = -32000;
const SESSION_NOT_FOUND: i32 = -32001;

/// The most of a plain-text refusal of rmcp's that is read to quote it.
const REFUSAL_BYTES: usize = 64 * 1024;

/// What the door needs: the sessions and the body limit.
pub(crate) struct Door {
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) json_limit: usize,
}

/// The middleware (see the module's documentation).
pub(crate) async fn door(
    door: Arc<Door>,
    mut req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(key) = req.extensions().get::<Principal>().map(|p| Arc::<str>::from(p.key_id.as_str())) else {
        // The gate in front of /mcp puts it there; without the gate nothing passes.
        let answer = refusal(StatusCode::UNAUTHORIZED, None, INVALID_REQUEST, "/mcp needs an mcp_ key");
        return Ok(req.into_response(answer));
    };
    let session = req.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(session) = &session
        && !door.sessions.is_held_by(session, &key)
    {
        return Ok(req.into_response(session_not_found(None)));
    }

    let method = req.method().clone();
    let mut request_id = None;
    let mut slot = None;
    if method == Method::POST && is_json(&req) {
        let body = match read_body(&mut req, door.json_limit).await {
            Ok(body) => body,
            Err(answer) => return Ok(req.into_response(answer)),
        };
        match serde_json::from_slice::<ClientJsonRpcMessage>(&body) {
            Ok(message) => {
                if let ClientJsonRpcMessage::Request(request) = &message {
                    request_id = Some(request.id.clone());
                    if session.is_none() && matches!(request.request, ClientRequest::InitializeRequest(_)) {
                        match door.sessions.reserve(Arc::clone(&key)).await {
                            Ok(reserved) => slot = Some(reserved),
                            Err(error) => return Ok(req.into_response(session_refused(&request.id, &error))),
                        }
                    }
                }
            }
            Err(error) => {
                let answer = if serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
                    let message = format!("parse error: the body is not JSON: {error}");
                    refusal(StatusCode::BAD_REQUEST, None, PARSE_ERROR, &message)
                } else {
                    let message =
                        format!("invalid request: the body is not an MCP JSON-RPC message: {error}");
                    refusal(StatusCode::BAD_REQUEST, None, INVALID_REQUEST, &message)
                };
                return Ok(req.into_response(answer));
            }
        }
        req.set_payload(Payload::from(body));
    }

    let response = CALLER.scope(Caller::new(key, slot), next.call(req)).await?;
    Ok(shape(response, &method, request_id.as_ref()).await)
}

fn is_json(req: &ServiceRequest) -> bool {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// The request body, at most `limit` bytes.
async fn read_body(req: &mut ServiceRequest, limit: usize) -> Result<Bytes, HttpResponse> {
    let too_large = || {
        let message = format!("the request body is larger than {limit} bytes (limits.json_bytes)");
        refusal(StatusCode::PAYLOAD_TOO_LARGE, None, INVALID_REQUEST, &message)
    };
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large());
    }
    let mut payload = req.take_payload();
    let mut body = BytesMut::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|error| {
            let message = format!("cannot read the request body: {error}");
            refusal(StatusCode::BAD_REQUEST, None, INVALID_REQUEST, &message)
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// rmcp's answer as the client should get it.
async fn shape(
    response: ServiceResponse<BoxBody>,
    method: &Method,
    request_id: Option<&RequestId>,
) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if *method == Method::DELETE && status == StatusCode::ACCEPTED {
        // The session is ended: nothing to say, and 202 ("accepted, pending") it is not.
        let (req, _) = response.into_parts();
        return ServiceResponse::new(req, HttpResponse::NoContent().finish());
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.is_success() || json {
        return response;
    }
    // One of rmcp's own refusals, in plain text: the same words in a JSON-RPC error object.
    let (req, res) = response.into_parts();
    let (head, body) = res.into_parts();
    let text = match actix_web::body::to_bytes_limited(body, REFUSAL_BYTES).await {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        _ => String::new(),
    };
    let text = if text.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { text };
    let mut answer = if status == StatusCode::NOT_FOUND {
        session_not_found(request_id)
    } else {
        let code = if status.is_server_error() { INTERNAL_ERROR } else { INVALID_REQUEST };
        refusal(status, request_id, code, &text)
    };
    for (name, value) in head.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(req, answer)
}

fn session_not_found(request_id: Option<&RequestId>) -> HttpResponse {
    let message = "session not found: no session with this Mcp-Session-Id for this key (it ended, was \
                   ended to make room, or belongs to another key); start a new one with initialize";
    refusal(StatusCode::NOT_FOUND, request_id, SESSION_NOT_FOUND, message)
}

fn session_refused(request_id: &RequestId, error: &SessionError) -> HttpResponse {
    let status = match error {
        SessionError::TooManyForKey { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    refusal(status, Some(request_id), SESSION_REFUSED, &error.to_string())
}

/// A JSON-RPC error object as the whole answer.
fn refusal(status: StatusCode, request_id: Option<&RequestId>, code: i32, message: &str) -> HttpResponse {
    let id = request_id.map_or(Value::Null, |id| serde_json::to_value(id).unwrap_or(Value::Null));
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    HttpResponse::build(status).content_type("application/json").body(body.to_string())
}
