//! Item version history: list, read one, restore. `{version}` is the integer timestamp
//! the list returns.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::answers::{Done, ItemWritten, VersionListing, VersionText};
use cms_core::service::VersionId;
use cms_core::slug::ItemRef;

use crate::auth::{EditorShape, KeyUser};
use crate::error::{ApiError, Shape};
use crate::languages;
use crate::state::AppState;

/// `GET .../items/{slug}/versions`
pub async fn list(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug) = path.into_inner();
    let list = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            cms.list_versions(&user.principal, collection, &ItemRef::parse(&slug)?).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(VersionListing::from(list)))
}

/// `GET .../items/{slug}/versions/{version}`
pub async fn read(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug, version) = path.into_inner();
    let content = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            // The version is read first, as before the item was typed: its error wins.
            let version = VersionId::parse(&version)?;
            cms.read_version(&user.principal, collection, &ItemRef::parse(&slug)?, version).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(VersionText::from(content)))
}

/// `POST .../items/{slug}/versions/{version}/restore`
pub async fn restore(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug, version) = path.into_inner();
    let if_match = crate::handlers::items::if_match(&req);
    let (outcome, restored) = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            let version = VersionId::parse(&version)?;
            cms.restore_version(
                &user.principal,
                collection,
                &ItemRef::parse(&slug)?,
                version,
                if_match.as_ref(),
            )
            .await
        })
        .await?;

    let mut response = HttpResponse::Ok();
    if let Some(etag) = &outcome.etag {
        response.insert_header((header::ETAG, etag.as_str()));
    }
    Ok(response
        .json(ItemWritten { restored: Some(restored), ..ItemWritten::new(&outcome, Done::VersionRestored) }))
}
