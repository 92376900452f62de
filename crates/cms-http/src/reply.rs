//! Success responses in the envelope shape.

use actix_web::HttpResponse;
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

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
