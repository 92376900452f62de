//! Shareable draft previews: `POST .../items/{slug}/preview` makes a signed link (editor
//! or above); `GET /cms/preview/{token}` answers the one item it names, without a key,
//! whatever the item's status or schedule, never kept by caches or indexed by robots.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use cms_core::slug::ItemRef;
use serde_json::json;
use time::format_description::well_known::Rfc3339;

use crate::auth::{EditorShape, KeyUser};
use crate::body::{Fields, json_object};
use crate::dto::ItemDto;
use crate::error::{ApiError, Shape};
use crate::reply::envelope_of;
use crate::state::AppState;

/// `POST /cms/collections/{collection}/items/{slug}/preview`, body optional
/// `{"ttl_secs": N}`: `{"url", "token", "expires"}`.
pub async fn create(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug) = path.into_inner();
    let has_body = req.headers().contains_key(header::CONTENT_TYPE)
        || req.headers().get(header::CONTENT_LENGTH).is_some_and(|l| l != "0");
    let ttl_secs = if has_body {
        let body = json_object(&req, payload, state.json_limit, Shape::Editor).await?;
        let mut fields = Fields::new(body, &["ttl_secs"], Shape::Editor)?;
        fields.positive_integer("ttl_secs")?
    } else {
        None
    };
    let link = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = crate::languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            cms.create_preview(&user.principal, collection, &ItemRef::parse(&slug)?, ttl_secs).await
        })
        .await?;
    let origin = state.cms.hosts().public_origin(&crate::state::request_origin(&req));
    let url = format!("{origin}/cms/preview/{}", link.token);
    Ok(HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(json!({
        "url": url,
        "token": link.token,
        "expires": link.expires.format(&Rfc3339).unwrap_or_default(),
    })))
}

/// `GET /cms/preview/{token}`: the item, as the single-item route gives it; `401` for a
/// tampered, expired or revoked link.
pub async fn read(state: web::Data<AppState>, token: web::Path<String>) -> HttpResponse {
    let mut response = match state.run(Shape::Envelope, state.cms.read_preview(&token)).await {
        Ok(view) => envelope_of(ItemDto::from(view)),
        Err(error) => error.error_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    headers.insert(header::HeaderName::from_static("x-robots-tag"), HeaderValue::from_static("noindex"));
    response
}
