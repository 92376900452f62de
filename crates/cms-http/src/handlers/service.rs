//! Status, the API description, the collection list, and the fallbacks for unknown routes
//! and methods.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use cms_core::answers::CollectionInfo;
use serde::Serialize;
use serde_json::json;

use crate::auth::{EnvelopeShape, KeyUser, Reader};
use crate::error::{ApiError, Shape};
use crate::openapi;
use crate::reply::{envelope, json_response, timestamp_now};
use crate::state::AppState;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `GET /livez`: the process answers. Nothing else is checked (a restart would not mend
/// what `/readyz` reports).
pub async fn livez() -> HttpResponse {
    HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(json!({"live": true}))
}

/// `GET /readyz`: `200` when this server should be sent requests, `503` (with the reason)
/// while it builds its first index, once it was told to stop, or while its store does not
/// answer a read. The body also reports on the parts the binary composed (`git`), which
/// do not decide readiness.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let readiness = state.cms.readiness().await;
    let mut answer = if readiness.ready { HttpResponse::Ok() } else { HttpResponse::ServiceUnavailable() };
    answer.insert_header((header::CACHE_CONTROL, "no-store"));
    if !readiness.ready {
        answer.insert_header((header::RETRY_AFTER, "1"));
    }
    let mut body = serde_json::to_value(&readiness).unwrap_or_default();
    if let Some(fields) = body.as_object_mut() {
        for (name, report) in &state.reports {
            fields.insert((*name).to_owned(), report());
        }
    }
    answer.json(body)
}

#[derive(Serialize)]
struct StatusData<'a> {
    status: &'static str,
    version: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    indexing: Option<Indexing>,
}

#[derive(Serialize)]
struct Indexing {
    /// Item files indexed so far.
    indexed: usize,
    /// Item files found so far (each collection's are added as it is scanned).
    found: usize,
}

#[derive(Serialize)]
struct Status<'a> {
    success: bool,
    data: StatusData<'a>,
    message: &'static str,
    version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
}

/// The answer of `/status` once the site is indexed, without its `timestamp` and closing
/// brace: the same for the life of the process, so made once (kept in
/// [`AppState::running_status`]).
fn running_status_without_timestamp(site_name: &str) -> Vec<u8> {
    let status = Status {
        success: true,
        data: StatusData { status: "ok", version: VERSION, name: site_name, indexing: None },
        message: "CMS API running",
        version: VERSION,
        timestamp: None,
    };
    let mut body = serde_json::to_vec(&status).expect("strings and a bool serialize");
    body.pop(); // the closing brace: the timestamp's trailer brings its own
    body
}

/// `GET /` and `GET /status`, with validators: its answer (but the timestamp) is the same
/// while the process runs, once it has indexed the site, and is made once
/// ([`running_status_without_timestamp`]). While the first indexing runs (the other routes
/// answer `503`, see [`crate::warmup`]) it says `indexing`, with the count so far, and is
/// not to be kept.
pub async fn status(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    if let Some(progress) = state.cms.indexing() {
        let mut response = json_response(&Status {
            success: true,
            data: StatusData {
                status: "indexing",
                version: VERSION,
                name: &state.cms.site().name,
                indexing: Some(Indexing { indexed: progress.indexed, found: progress.found }),
            },
            message: "CMS API starting: indexing the site",
            version: VERSION,
            timestamp: Some(timestamp_now()),
        });
        response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
        return response;
    }
    let unchanged = match req.headers().get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(tags) => crate::reply::none_match_names(tags, state.status_etag.to_str().unwrap_or_default()),
        None => req
            .headers()
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok()?.parse::<header::HttpDate>().ok())
            .is_some_and(|since| std::time::SystemTime::from(since) >= state.started),
    };
    let mut response = if unchanged {
        HttpResponse::NotModified().finish()
    } else {
        let running =
            state.running_status.get_or_init(|| running_status_without_timestamp(&state.cms.site().name));
        let mut body = Vec::with_capacity(running.len() + 48);
        body.extend_from_slice(running);
        crate::reply::push_timestamp_trailer(&mut body);
        HttpResponse::Ok().content_type("application/json").body(body)
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, state.status_etag.clone());
    headers.insert(header::LAST_MODIFIED, state.started_header.clone());
    headers.insert(header::VARY, header::HeaderValue::from_static("Accept-Encoding"));
    response
}

/// The OpenAPI document for this site: its resource folders' file URLs included.
fn site_document(state: &AppState) -> serde_json::Value {
    openapi::document_for(state.cms.resource_folders().iter().map(|f| f.url.as_str()))
}

/// `GET /cms/`: name, version, every route with its method, path and auth (taken from the
/// OpenAPI document), the AI-agent endpoint `/mcp`, and the files of the collection folders that are not listed, with
/// the reason, so that an owner sees what the server skipped.
pub async fn describe(state: web::Data<AppState>, _user: KeyUser<EnvelopeShape>) -> HttpResponse {
    let routes: Vec<_> = openapi::operations(&site_document(&state))
        .into_iter()
        .map(|o| json!({ "method": o.method, "path": o.path, "auth": o.auth }))
        .collect();
    let skipped: Vec<_> = state
        .cms
        .skipped_files()
        .await
        .into_iter()
        .map(|s| json!({ "collection": s.collection, "filename": s.filename, "reason": s.reason }))
        .collect();
    let data = json!({
        "name": state.cms.site().name,
        "product": "cms",
        "version": VERSION,
        "routes": routes,
        // Not a REST route (and not in the OpenAPI document): the MCP endpoint beside it.
        "agent_endpoint": {
            "path": crate::agent::PATH,
            "protocol": "mcp",
            "transport": "streamable-http",
            "auth": "mcp_key",
            "license_feature": "mcp",
        },
        "skipped_files": { "count": skipped.len(), "files": skipped },
    });
    envelope(data, json!({}))
}

/// `GET /cms/openapi.json`: the API reference, with this site's file URLs; made once,
/// then kept with its compressed forms like any document.
pub async fn openapi_json(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let version = || crate::documents::version_of("openapi.json", 0, ());
    crate::documents::answer(&req, version, crate::documents::JSON, || async {
        serde_json::to_vec(&site_document(&state)).map_err(|e| {
            ApiError::from_core(cms_core::CoreError::internal("response serialization", e), Shape::Envelope)
        })
    })
    .await
}

/// `GET /cms/collections/{collection}/schema`: the JSON Schema of its frontmatter (it
/// changes only with `cms.yaml`, so it is kept like the OpenAPI document).
pub async fn collection_schema(
    state: web::Data<AppState>,
    _caller: Reader,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let collection =
        state.cms.collection(&collection).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let version = || crate::documents::version_of("schema", 0, collection.index);
    crate::documents::answer(&req, version, crate::documents::JSON_SCHEMA, || async {
        serde_json::to_vec(&state.cms.collection_schema(collection)).map_err(|e| {
            ApiError::from_core(cms_core::CoreError::internal("response serialization", e), Shape::Envelope)
        })
    })
    .await
}

/// `GET /cms/collections`.
pub async fn collections(state: web::Data<AppState>, _caller: Reader) -> HttpResponse {
    let all = state.cms.collections();
    let data: Vec<CollectionInfo> = all
        .iter()
        .map(|c| CollectionInfo {
            // Every language's items on a site with languages.
            invalid_items: state
                .cms
                .family_of(c)
                .map(|lane| state.cms.items_breaking_model_count(lane))
                .sum(),
            ..CollectionInfo::from(c)
        })
        .collect();
    envelope(data, json!({ "count": all.len() }))
}

/// Any path no route matches.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    ApiError::new(StatusCode::NOT_FOUND, Shape::Envelope, format!("no route {} {}", req.method(), req.path()))
        .error_response()
}

/// A known path with a method it does not take.
pub fn method_not_allowed(req: &HttpRequest, allow: &str) -> HttpResponse {
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        Shape::Envelope,
        format!("{} is not allowed on {}; allowed: {allow}", req.method(), req.path()),
    )
    .error_response();
    if let Ok(value) = header::HeaderValue::from_str(allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}
