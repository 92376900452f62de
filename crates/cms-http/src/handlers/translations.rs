//! A translation written from its source in one call, and the source's changes since a
//! translation was made (docs/translations.md).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::answers::{Done, ItemWritten};
use cms_core::service::SourceDiff;
use cms_core::slug::ItemRef;
use serde::Serialize;

use crate::auth::{EditorShape, KeyUser};
use crate::body::{Fields, json_object};
use crate::error::{ApiError, Shape};
use crate::state::AppState;

/// `POST /cms/collections/{collection}/items/{slug}/translations/{lang}`: creates the
/// translation from its source, or updates it (`fm`, `body`), and records that it is made
/// from the source as it is now.
pub async fn translate(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug, lang) = path.into_inner();
    let body = json_object(&req, payload, state.json_limit, Shape::Editor).await?;
    let mut fields = Fields::new(body, &["fm", "body"], Shape::Editor)?;
    let (fm, text) = (fields.object("fm")?.unwrap_or_default(), fields.string("body")?);
    let ((outcome, created), location) = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = cms.collection(&collection)?;
            let at = language_at(cms, &lang)?;
            let written = cms
                .translate_item(&user.principal, collection, &ItemRef::parse(&slug)?, at, fm, text)
                .await?;
            let code = &cms.languages().map(|l| l.get(at).code.to_string()).unwrap_or_default();
            let location =
                format!("/cms/collections/{}/items/{}?lang={code}", collection.slug, written.0.slug);
            Ok((written, location))
        })
        .await?;
    let mut response = HttpResponse::Ok();
    if let Some(etag) = &outcome.etag {
        response.insert_header((header::ETAG, etag.as_str()));
    }
    if created {
        response.insert_header((header::LOCATION, location));
    }
    let done = if created { Done::FileCreated } else { Done::FileSaved };
    Ok(response.json(ItemWritten::new(&outcome, done)))
}

/// `GET /cms/collections/{collection}/items/{slug}/source-diff?lang=fr`
pub async fn source_diff(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug) = path.into_inner();
    let query = crate::handlers::items::query_map(&req, Shape::Editor)?;
    let diff = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = cms.collection(&collection)?;
            let lang = query.get("lang").ok_or_else(|| {
                cms_core::CoreError::invalid("lang= is required: the language of the translation")
            })?;
            let at = language_at(cms, lang)?;
            cms.source_diff(&user.principal, collection, &ItemRef::parse(&slug)?, at).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(SourceDiffDto::from(diff)))
}

/// A language of the site by its code, or a `400` naming them (or saying there are none).
fn language_at(cms: &cms_core::Cms, code: &str) -> cms_core::CoreResult<usize> {
    match cms.languages() {
        Some(languages) => languages.parse(code),
        None => Err(cms_core::CoreError::not_found(
            "this site has no languages: (see docs/translations.md), so it has no translations",
        )),
    }
}

/// The answer of `source-diff`.
#[derive(Serialize)]
struct SourceDiffDto {
    lang: String,
    source_lang: String,
    source: String,
    outdated: bool,
    translated_from: Option<String>,
    from_version: Option<i64>,
    diff: Option<String>,
}

impl From<SourceDiff> for SourceDiffDto {
    fn from(d: SourceDiff) -> Self {
        Self {
            lang: d.lang.to_string(),
            source_lang: d.source_lang.to_string(),
            source: d.source,
            outdated: d.outdated,
            translated_from: d.translated_from,
            from_version: d.from_version,
            diff: d.diff,
        }
    }
}
