//! The public file URLs of the resource folders: the file as stored ([`files`]), or one of
//! its image variants when the query asks for a transform ([`variants`], which streams
//! with `files`' readers: so the choice is made here, above both).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use super::{files, variants};
use crate::error::{ApiError, Shape};
use crate::state::AppState;

/// `GET`/`HEAD` `{folder url}/{tail}`.
pub async fn serve(
    state: web::Data<AppState>,
    req: HttpRequest,
    tail: web::Path<String>,
    folder: usize,
) -> Result<HttpResponse, ApiError> {
    if !req.query_string().is_empty() {
        let query = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
            .map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    Shape::Envelope,
                    format!("malformed query string: {e}"),
                )
            })?
            .into_inner();
        let transform =
            state.cms.image_transform(&query).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
        if let Some(transform) = transform {
            let version = query.iter().find(|(k, _)| k == "v").map(|(_, v)| v.as_str());
            return Ok(variants::serve(&state, &req, &tail, folder, &transform, version).await);
        }
    }
    files::serve(state, req, tail, folder).await
}
