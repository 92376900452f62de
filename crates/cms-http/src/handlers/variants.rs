//! Image variants at the public media URLs (`?w=&h=&fit=&format=&q=&preset=`): served
//! like static files, with an `ETag` that names the source content and the parameters,
//! and `Vary: Accept` when the format was chosen from it. A URL whose `v=` names the
//! source's current content is immutable (cached for a year); any other revalidates, so
//! that a file deleted and uploaded again under its name never shows old bytes for long.

use actix_web::body::SizedStream;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use cms_core::images::Transform;
use cms_core::resource::FilePath;
use cms_core::service::VariantBody;

use super::files::{not_found, read_chunks};
use crate::error::{ApiError, Shape};
use crate::state::AppState;

/// A URL that names the source's content (`v=`) always answers the same bytes.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// A URL without `v=`, or with an outdated one, answers whatever the file holds now.
const REVALIDATE: &str = "public, no-cache";

/// `GET`/`HEAD` `{folder url}/{tail}?<transform>`; `version` is the query's `v=`.
pub async fn serve(
    state: &AppState,
    req: &HttpRequest,
    tail: &str,
    folder: usize,
    transform: &Transform,
    version: Option<&str>,
) -> HttpResponse {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let opened = async {
        state.cms.open_variant(folder, &FilePath::from_url_tail(tail)?, transform, accept, version).await
    };
    let variant = match opened.await {
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
    let cache_control = if variant.names_current == Some(true) { IMMUTABLE } else { REVALIDATE };
    let mut response = HttpResponse::build(StatusCode::OK);
    response
        .insert_header((header::ETAG, variant.etag.as_str()))
        .insert_header((header::CACHE_CONTROL, cache_control))
        .insert_header((header::LAST_MODIFIED, last_modified(variant.modified)))
        .insert_header((header::ACCEPT_RANGES, "none"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if variant.vary_accept {
        response.insert_header((header::VARY, "Accept"));
    }
    let headers = req.headers();
    let unchanged = match headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(tags) => crate::reply::none_match_names(tags, &variant.etag),
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok()?.parse::<header::HttpDate>().ok())
            .and_then(|since| std::time::SystemTime::from(since).duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|since| since.as_secs() as i64 >= variant.modified),
    };
    if unchanged {
        return response.status(StatusCode::NOT_MODIFIED).finish();
    }
    response.insert_header((header::CONTENT_TYPE, variant.content_type));
    match variant.body {
        VariantBody::Fresh(bytes) => response.body(bytes),
        VariantBody::Stored(reader) => {
            response.body(SizedStream::new(variant.size, read_chunks(&*reader, 0, variant.size)))
        }
    }
}

/// The source's modification time as an HTTP date.
fn last_modified(unix: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64);
    header::HttpDate::from(at).to_string()
}
