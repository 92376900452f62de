//! Image variants at the public media URLs (`?w=&h=&fit=&format=&q=&preset=`): served
//! like static files, with an `ETag` that names the source content and the parameters,
//! a long-lived `Cache-Control`, and `Vary: Accept` when the format was chosen from it.

use actix_web::body::SizedStream;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use cms_core::images::Transform;
use cms_core::service::VariantBody;

use super::files::{not_found, read_chunks};
use crate::error::{ApiError, Shape};
use crate::state::AppState;

/// A variant's URL names its source file, which uploads never overwrite (a clash gets a
/// new name); a year, without `immutable`, since the file can still be replaced in place.
const CACHE_CONTROL: &str = "public, max-age=31536000";

/// `GET`/`HEAD` `{folder url}/{tail}?<transform>`.
pub async fn serve(
    state: &AppState,
    req: &HttpRequest,
    tail: &str,
    folder: usize,
    transform: &Transform,
) -> HttpResponse {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let variant = match state.cms.open_variant(folder, tail, transform, accept).await {
        Ok(variant) => variant,
        Err(error) => {
            let error = ApiError::from_core(error, Shape::Envelope);
            return match error.status {
                StatusCode::NOT_FOUND => not_found(req.path()),
                StatusCode::SERVICE_UNAVAILABLE => {
                    let mut response = error.error_response();
                    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
                    response
                }
                _ => error.error_response(),
            };
        }
    };
    let mut response = HttpResponse::build(StatusCode::OK);
    response
        .insert_header((header::ETAG, variant.etag.as_str()))
        .insert_header((header::CACHE_CONTROL, CACHE_CONTROL))
        .insert_header((header::LAST_MODIFIED, last_modified(variant.modified)))
        .insert_header((header::ACCEPT_RANGES, "none"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if variant.vary_accept {
        response.insert_header((header::VARY, "Accept"));
    }
    let unchanged = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == variant.etag || t.trim() == "*"));
    if unchanged {
        return response.status(StatusCode::NOT_MODIFIED).finish();
    }
    response.insert_header((header::CONTENT_TYPE, variant.content_type));
    match variant.body {
        VariantBody::Fresh(bytes) => response.body(bytes),
        VariantBody::Stored(reader) => {
            response.body(SizedStream::new(variant.size, read_chunks(reader, 0, variant.size)))
        }
    }
}

/// The source's modification time as an HTTP date.
fn last_modified(unix: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64);
    header::HttpDate::from(at).to_string()
}
