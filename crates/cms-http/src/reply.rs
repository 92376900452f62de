//! Success responses in the envelope shape.

use actix_web::HttpResponse;
use actix_web::http::header;
use cms_core::query::Page;
use cms_core::service::{ItemSummary, ItemView};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::dto::{ItemDto, ItemEntryDto, PageMetaDto};

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

/// A page of item list entries: the envelope with `meta`.
pub fn item_page(page: Page<ItemSummary>) -> HttpResponse {
    let meta = PageMetaDto::from(&page);
    let data: Vec<ItemEntryDto> = page.items.into_iter().map(ItemEntryDto::from).collect();
    envelope(data, json!({ "meta": meta }))
}

/// A rendered item in the envelope, with its `ETag`.
pub fn single_item(view: ItemView) -> HttpResponse {
    let etag = view.etag.clone();
    let mut response = envelope(ItemDto::from(view), json!({}));
    if let Ok(value) = header::HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}
