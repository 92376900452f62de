//! Success responses in the envelope shape, and the `ETag`/`If-None-Match` handling of
//! reads.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use cms_core::query::Page;
use cms_core::service::{ItemSummary, ItemView, etag_of};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::dto::{ItemDto, ItemEntryDto, PageMetaDto};
use crate::error::{ApiError, Shape};

/// The current time as ISO 8601 (RFC 3339, UTC).
pub fn timestamp_now() -> String {
    OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
}

/// `{"success": true, "data": ..., "timestamp": ...}` plus any `extra` top-level fields.
pub fn envelope(data: impl Serialize, extra: Value) -> HttpResponse {
    let mut body = json!({ "success": true, "data": data });
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
        body.insert("timestamp".into(), timestamp_now().into());
    }
    HttpResponse::Ok().json(body)
}

/// The envelope of a page, up to (not including) its `timestamp`.
#[derive(Serialize)]
struct PageBody<'a> {
    success: bool,
    data: &'a [ItemEntryDto],
    meta: &'a PageMetaDto,
}

/// A page of item list entries: the envelope with `meta`, and a strong `ETag` of the body
/// without its `timestamp` (the only part that changes while the list does not). A
/// request whose `If-None-Match` names it gets `304` (see [`not_modified`]).
pub fn item_page(req: &HttpRequest, page: Page<ItemSummary>) -> HttpResponse {
    let meta = PageMetaDto::from(&page);
    let data: Vec<ItemEntryDto> = page.items.into_iter().map(ItemEntryDto::from).collect();
    let mut body = match serde_json::to_vec(&PageBody { success: true, data: &data, meta: &meta }) {
        Ok(body) => body,
        Err(e) => {
            return ApiError::from_core(
                cms_core::CoreError::internal("list serialization", e),
                Shape::Envelope,
            )
            .error_response();
        }
    };
    let etag = etag_of(&body);
    if let Some(response) = not_modified(req, &etag, Shape::Envelope) {
        return response;
    }
    // `{...}` becomes `{..., "timestamp": "..."}`: the same bytes the ETag was taken of.
    body.pop();
    body.extend_from_slice(b",\"timestamp\":");
    body.extend_from_slice(Value::from(timestamp_now()).to_string().as_bytes());
    body.push(b'}');
    HttpResponse::Ok().content_type("application/json").insert_header((header::ETAG, etag)).body(body)
}

/// A rendered item in the envelope, with its `ETag`.
pub fn single_item(view: ItemView) -> HttpResponse {
    let etag = view.etag.clone();
    let mut response = envelope(ItemDto::from(view), json!({}));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// When the request's `If-None-Match` names `etag` (or is `*`): `304` with the ETag for
/// `GET`/`HEAD`, and `412` in `shape` for any other method (RFC 9110, 13.1.2).
pub fn not_modified(req: &HttpRequest, etag: &str, shape: Shape) -> Option<HttpResponse> {
    let header = req.headers().get(header::IF_NONE_MATCH)?.to_str().ok()?;
    if !header.split(',').any(|tag| tag.trim() == etag || tag.trim() == "*") {
        return None;
    }
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return Some(HttpResponse::NotModified().insert_header((header::ETAG, etag)).finish());
    }
    let error = ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        shape,
        format!("If-None-Match {header} matches the current ETag {etag}"),
    );
    Some(error.error_response())
}
