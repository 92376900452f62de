//! The seven item routes: extract, one facade call, map the result.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::answers::{Acknowledged, Done, ItemWritten};
use cms_core::query::ListQuery;
use cms_core::service::{ItemUpdate, NewItem, Precondition, UpdateMode, WriteOutcome};
use cms_core::slug::ItemRef;
use std::collections::HashMap;

use crate::auth::{EditorShape, KeyUser, Reader};
use crate::body::{Fields, bad_request, json_object};
use crate::dto::RawItemDto;
use crate::error::{ApiError, Shape};
use crate::languages;
use crate::reply::{Lookup, item_page, kept_item, kept_page, not_modified, single_item};
use crate::state::AppState;

/// Parses the query string into a map, or `400` in `shape`.
pub fn query_map(req: &HttpRequest, shape: Shape) -> Result<HashMap<String, String>, ApiError> {
    web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| bad_request(shape, format!("malformed query string: {e}")))
}

/// `If-Match`, each tag as the item's own (a compressed read's tag names the same item).
pub(crate) fn if_match(req: &HttpRequest) -> Option<Precondition> {
    let header = req.headers().get(header::IF_MATCH).and_then(|v| v.to_str().ok())?;
    Some(Precondition::from_if_match(&crate::encoding::uncoded_tags(header)))
}

/// `GET /cms/collections/{collection}/items`
///
/// The kept page's path (the usual one) awaits only the page's version; the selection's
/// future is boxed, so that a request's future stays small (see [`crate::documents::answer`]).
pub async fn list(
    state: web::Data<AppState>,
    caller: Reader,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let envelope = |e| ApiError::from_core(e, Shape::Envelope);
    let cms = &state.cms;
    let (collection, query, choice, filter) = {
        let query = crate::query::Pairs::of(req.query_string());
        let choice = languages::choice(cms, &req, &query).map_err(envelope)?;
        let filter = languages::translation_filter(cms, &query).map_err(envelope)?;
        let params = query.list_params();
        let collection = cms.list_in(cms.collection(&collection).map_err(envelope)?, choice);
        (
            collection,
            ListQuery::parse_owned_for(params, collection.model.as_deref()).map_err(envelope)?,
            choice,
            filter,
        )
    };
    let version =
        cms.list_items_version_where(collection, &query, &caller.viewer, filter).await.map_err(envelope)?;
    // A repeated page is answered from its kept body, without selecting it again.
    if let Some(kept) = kept_page(&req, version) {
        return Ok(languages::mark(kept, collection, choice));
    }
    let page =
        Box::pin(cms.list_items_where(collection, &query, &caller.viewer, filter)).await.map_err(envelope)?;
    Ok(languages::mark(item_page(&req, page, Lookup::Again), collection, choice))
}

/// `GET /cms/collections/{collection}/items/{slug}`
pub async fn read(
    state: web::Data<AppState>,
    caller: Reader,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let envelope = |e| ApiError::from_core(e, Shape::Envelope);
    let cms = &state.cms;
    let (collection, item) = {
        let (collection, slug) = path.into_inner();
        let collection = cms.collection(&collection).map_err(envelope)?;
        (collection, ItemRef::parse(&slug).map_err(envelope)?)
    };
    if cms.languages().is_some() {
        // Boxed: a site in one language never awaits the choice of a language.
        return Box::pin(read_in_language(cms, caller, collection, item, req)).await;
    }
    let version = cms.item_version(collection, &item, &caller.viewer).await.map_err(envelope)?;
    // A repeated read is answered from its kept body, without reading the item.
    let looked_up = version.is_some();
    if let Some(version) = version
        && let Some(kept) = kept_item(&req, &version).await
    {
        return Ok(kept);
    }
    // Boxed: only a read not kept needs the rendering's (large) future, and the answer's.
    let view = Box::pin(cms.read_item(collection, &item, &caller.viewer)).await.map_err(envelope)?;
    Ok(Box::pin(single_item(&req, view, if looked_up { Lookup::Again } else { Lookup::First })).await)
}

/// A single read on a site with languages: from the first language of the chain that has
/// the item, saying which one it is.
async fn read_in_language(
    cms: &cms_core::Cms,
    caller: Reader,
    collection: &cms_core::collection::Collection,
    item: ItemRef,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let envelope = |e| ApiError::from_core(e, Shape::Envelope);
    let choice = languages::choice_of(cms, &req).map_err(envelope)?;
    let (lane, item, version) =
        cms.item_version_in_language(collection, &item, choice, &caller.viewer).await.map_err(envelope)?;
    let requested = choice.map(|choice| choice.requested);
    let looked_up = version.is_some();
    if let Some(version) = version
        && let Some(kept) = kept_item(&req, &version).await
    {
        return Ok(languages::mark(kept, lane, choice));
    }
    let view = cms.read_item_in(lane, &item, &caller.viewer, requested).await.map_err(envelope)?;
    let lookup = if looked_up { Lookup::Again } else { Lookup::First };
    Ok(languages::mark(single_item(&req, view, lookup).await, lane, choice))
}

/// `GET /cms/collections/{collection}/items/{slug}/raw`
pub async fn raw(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug) = path.into_inner();
    let raw = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            cms.read_item_source(&user.principal, collection, &ItemRef::parse(&slug)?).await
        })
        .await?;
    if let Some(response) = not_modified(&req, &raw.etag, Shape::Editor) {
        return Ok(response);
    }
    Ok(HttpResponse::Ok().insert_header((header::ETAG, raw.etag.clone())).json(RawItemDto::from(raw)))
}

fn write_response(outcome: &WriteOutcome) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    if let Some(etag) = &outcome.etag {
        response.insert_header((header::ETAG, etag.as_str()));
    }
    response
}

/// `POST /cms/collections/{collection}/items`
pub async fn create(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = json_object(&req, payload, state.json_limit, Shape::Editor).await?;
    let mut fields = Fields::new(body, &["slug", "date_prefix", "fm", "body"], Shape::Editor)?;
    let new = NewItem {
        slug: fields.string("slug")?,
        date_prefix: fields.boolean("date_prefix")?,
        fm: fields.object("fm")?.unwrap_or_default(),
        body: fields.string("body")?.unwrap_or_default(),
    };
    let (outcome, collection_slug) = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            Ok((cms.create_item(&user.principal, collection, new).await?, collection))
        })
        .await?;
    let location = match &collection_slug.language {
        Some(language) if language.at > 0 => {
            format!("/cms/collections/{}/items/{}?lang={}", collection_slug.slug, outcome.slug, language.code)
        }
        _ => format!("/cms/collections/{}/items/{}", collection_slug.slug, outcome.slug),
    };
    Ok(write_response(&outcome)
        .insert_header((header::LOCATION, location))
        .json(ItemWritten::new(&outcome, Done::FileCreated)))
}

async fn update(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
    mode: UpdateMode,
) -> Result<HttpResponse, ApiError> {
    let body = json_object(&req, payload, state.json_limit, Shape::Editor).await?;
    let mut fields = Fields::new(body, &["fm", "body"], Shape::Editor)?;
    let update =
        ItemUpdate { mode, fm: fields.object("fm")?.unwrap_or_default(), body: fields.string("body")? };
    let (collection, slug) = path.into_inner();
    let if_match = if_match(&req);
    let outcome = state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            cms.update_item(&user.principal, collection, &ItemRef::parse(&slug)?, update, if_match.as_ref())
                .await
        })
        .await?;
    Ok(write_response(&outcome).json(ItemWritten::new(&outcome, Done::FileSaved)))
}

/// `PUT /cms/collections/{collection}/items/{slug}`: an omitted `body` saves an empty body.
pub async fn put(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    update(state, user, path, req, payload, UpdateMode::Put).await
}

/// `PATCH /cms/collections/{collection}/items/{slug}`: an omitted `body` keeps the body.
pub async fn patch(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    update(state, user, path, req, payload, UpdateMode::Patch).await
}

/// `DELETE /cms/collections/{collection}/items/{slug}`
pub async fn delete(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, slug) = path.into_inner();
    let if_match = if_match(&req);
    state
        .run(Shape::Editor, async {
            let cms = &state.cms;
            let collection = languages::write_collection(cms, cms.collection(&collection)?, &req)?;
            cms.delete_item(&user.principal, collection, &ItemRef::parse(&slug)?, if_match.as_ref()).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(Acknowledged::new(Done::FileDeleted)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use actix_web::test::TestRequest;
    use cms_core::service::Viewer;
    use cms_core::testing::{MemoryWorld, SITE_YAML};

    use super::*;
    use crate::handlers::{discovery, service};

    /// Every request boxes its handler's future, an allocation of its full size, so the
    /// busiest routes keep theirs under about 1 KB (the size glibc served from a
    /// per-thread cache when this was measured; the server now uses mimalloc): their rare
    /// paths (a page, a rendering or a document not kept, an index not built) are boxed
    /// on their own. Before, a feed's future was 3,976 bytes and a list's 2,976.
    #[actix_web::test]
    async fn the_busiest_routes_futures_stay_under_a_kilobyte() {
        let cms = Arc::new(MemoryWorld::new().cms_with(SITE_YAML));
        let state = web::Data::new(AppState::new(cms, Vec::new(), 1 << 16, 1 << 16));
        let req = TestRequest::get().app_data(state.clone()).to_http_request();
        let caller = || Reader { viewer: Viewer::Anonymous };
        let collection = || web::Path::from("posts".to_owned());
        let sizes = [
            (
                "read",
                size_of_val(&read(
                    state.clone(),
                    caller(),
                    web::Path::from(("posts".into(), "a".into())),
                    req.clone(),
                )),
            ),
            ("list", size_of_val(&list(state.clone(), caller(), collection(), req.clone()))),
            ("rss", size_of_val(&discovery::rss(state.clone(), caller(), collection(), req.clone()))),
            ("sitemap", size_of_val(&discovery::sitemap(state.clone(), caller(), collection(), req.clone()))),
            ("openapi.json", size_of_val(&service::openapi_json(state.clone(), req.clone()))),
        ];
        for (route, size) in sizes {
            assert!(size < 1024, "{route}'s future is {size} bytes");
        }
    }
}
