//! The discovery routes (search index, tags, RSS, sitemap, related items) and the legacy
//! item routes: extract, one facade call, map. All are `Opt` and published-only.

use std::collections::HashMap;
use std::hash::Hash;

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::CoreResult;
use cms_core::answers::TagEntry;
use cms_core::collection::Collection;
use cms_core::service::{
    RelatedParams, RelatedText, RssParams, RssText, SearchIndexParams, SearchIndexText, SitemapParams,
    SitemapText, TagItemsParams, TagItemsText, TagsParams, TagsText,
};

use cms_core::CoreError;
use cms_core::query::{ListQuery, StatusFilter};
use cms_core::service::Viewer;
use cms_core::slug::ItemRef;

use crate::auth::Reader;
use crate::body::form_or_json_params;
use crate::documents::{self, site_version};
use crate::dto::{RelatedDto, SearchEntryDto};
use crate::error::{ApiError, Shape};
use crate::handlers::items::query_map;
use crate::languages;
use crate::reply::{Lookup, item_page, single_item};
use crate::state::AppState;

fn query(req: &HttpRequest) -> Result<HashMap<String, String>, ApiError> {
    query_map(req, Shape::Envelope)
}

/// The query parameters `names` of a route, in their order (`None` for one not sent);
/// the others, such as cache busters, are ignored.
fn named<const N: usize>(req: &HttpRequest, names: [&str; N]) -> [Option<String>; N] {
    crate::query::named(req.query_string(), names)
}

/// A document of one collection (its feed, its sitemap): kept by the collection's content
/// version and the parameters the route read, made by `render` when not kept.
async fn collection_document<R>(
    state: &AppState,
    req: &HttpRequest,
    collection: &Collection,
    (route, kind): (&str, documents::Kind),
    params: &impl Hash,
    render: impl FnOnce() -> R,
) -> Result<HttpResponse, ApiError>
where
    R: Future<Output = CoreResult<String>>,
{
    let version = || {
        let content = state.cms.content_version(Some(collection));
        documents::version_of(route, content, (collection.index, params))
    };
    collection_document_versioned(state, req, version, kind, render).await
}

/// [`collection_document`] of a document whose `version` the caller makes (a sitemap of
/// every language names every language's collection).
async fn collection_document_versioned<R>(
    state: &AppState,
    req: &HttpRequest,
    version: impl Fn() -> u64,
    kind: documents::Kind,
    render: impl FnOnce() -> R,
) -> Result<HttpResponse, ApiError>
where
    R: Future<Output = CoreResult<String>>,
{
    documents::answer(req, version, kind, || async {
        Ok(state.run(Shape::Envelope, render()).await?.into_bytes())
    })
    .await
}

/// `GET /cms/collections/search-index`: a bare JSON array.
pub async fn search_index(
    state: web::Data<AppState>,
    _caller: Reader,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let text = SearchIndexText::from_named(named(&req, SearchIndexText::NAMES));
    let params = SearchIndexParams::parse(text).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    // By the parameters the route reads (others, such as cache busters, are ignored).
    let version = || documents::version_of("search-index", site_version(&state), &params);
    documents::answer(&req, version, documents::JSON, || async {
        let entries = state.run(Shape::Envelope, state.cms.search_index(&params)).await?;
        let data: Vec<SearchEntryDto> = entries.into_iter().map(SearchEntryDto::from).collect();
        to_json(&data)
    })
    .await
}

/// `value` as JSON bytes, or a `500`.
fn to_json(value: &impl serde::Serialize) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(value).map_err(|e| {
        ApiError::from_core(cms_core::CoreError::internal("response serialization", e), Shape::Envelope)
    })
}

/// An envelope without its `timestamp` (the document's kept form): `data` and `count`.
fn counted_envelope<T: serde::Serialize>(data: &[T]) -> Result<Vec<u8>, ApiError> {
    #[derive(serde::Serialize)]
    struct Counted<'a, T> {
        success: bool,
        data: &'a [T],
        count: usize,
    }
    to_json(&Counted { success: true, data, count: data.len() })
}

/// `GET /cms/tags`
pub async fn tags(
    state: web::Data<AppState>,
    _caller: Reader,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let text = TagsText::from_named(named(&req, TagsText::NAMES));
    let params = TagsParams::parse(text).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    // On a site with languages: one language's tags (`lang=`, else Accept-Language).
    let choice =
        languages::choice_of(&state.cms, &req).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let choice = languages::of_folder(&state.cms, choice);
    let lang = choice.map(|choice| choice.requested);
    let version = || documents::version_of("tags", site_version(&state), (&params, lang));
    let answer = documents::answer(&req, version, documents::ENVELOPE, || async {
        let tags = state.run(Shape::Envelope, state.cms.tags_in(&params, lang)).await?;
        counted_envelope(&tags.into_iter().map(TagEntry::from).collect::<Vec<_>>())
    })
    .await?;
    Ok(languages::mark_code(answer, &state.cms, choice))
}

/// `GET /cms/tags/{tag}/items`
pub async fn tag_items(
    state: web::Data<AppState>,
    _caller: Reader,
    tag: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let text = TagItemsText::from_named(named(&req, TagItemsText::NAMES));
    let choice =
        languages::choice_of(&state.cms, &req).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let choice = languages::of_folder(&state.cms, choice);
    let page = state
        .run(Shape::Envelope, async {
            let params = TagItemsParams::parse(text)?;
            state.cms.tag_items_in(&tag, &params, choice.map(|choice| choice.requested)).await
        })
        .await?;
    Ok(languages::mark_code(item_page(&req, page, Lookup::First), &state.cms, choice))
}

/// `GET /cms/collections/{collection}/rss`
pub async fn rss(
    state: web::Data<AppState>,
    _caller: Reader,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let envelope = |e| ApiError::from_core(e, Shape::Envelope);
    let collection = state.cms.collection(&collection).map_err(envelope)?;
    // On a site with languages: the feed of the language asked for.
    let choice = languages::choice_of(&state.cms, &req).map_err(envelope)?;
    let collection = state.cms.list_in(collection, choice);
    let text = RssText::from_named(named(&req, RssText::NAMES));
    let params = RssParams::parse(text).map_err(envelope)?;
    let render = || state.cms.rss(collection, &params);
    let answer =
        collection_document(&state, &req, collection, ("rss", documents::RSS), &params, render).await?;
    Ok(languages::mark(answer, collection, choice))
}

/// `GET /cms/collections/{collection}/sitemap`
pub async fn sitemap(
    state: web::Data<AppState>,
    _caller: Reader,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let envelope = |e| ApiError::from_core(e, Shape::Envelope);
    let cms = &state.cms;
    let collection = cms.collection(&collection).map_err(envelope)?;
    let text = SitemapText::from_named(named(&req, SitemapText::NAMES));
    let params = SitemapParams::parse(text).map_err(envelope)?;
    // On a site with languages: `lang=` names one language's; without it, every language's
    // (a sitemap is for crawlers: it is not negotiated).
    let choice = languages::choice_of(cms, &req).map_err(envelope)?.filter(|choice| choice.explicit);
    match (cms.languages(), choice) {
        (Some(_), None) => {
            let version = || {
                let lanes = cms.all_collections().iter().filter(|c| c.family() == collection.index);
                let content: Vec<u64> = lanes.map(|lane| cms.content_version(Some(lane))).collect();
                documents::version_of("sitemap-languages", content, (collection.index, &params))
            };
            let render = || cms.sitemap_of_languages(collection, &params);
            collection_document_versioned(&state, &req, version, documents::XML, render).await
        }
        (Some(_), Some(choice)) => {
            // One language's pages, each with its alternates in every language.
            let version = || {
                let lanes = cms.all_collections().iter().filter(|c| c.family() == collection.index);
                let content: Vec<u64> = lanes.map(|lane| cms.content_version(Some(lane))).collect();
                documents::version_of(
                    "sitemap-language",
                    content,
                    (collection.index, choice.requested, &params),
                )
            };
            let lane = cms.list_in(collection, Some(choice));
            let render = || cms.sitemap(lane, &params);
            collection_document_versioned(&state, &req, version, documents::XML, render).await
        }
        (None, _) => {
            let render = || cms.sitemap(collection, &params);
            collection_document(&state, &req, collection, ("sitemap", documents::XML), &params, render).await
        }
    }
}

/// `GET /cms/items/related`
pub async fn related(
    state: web::Data<AppState>,
    _caller: Reader,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let text = RelatedText::from_named(named(&req, RelatedText::NAMES));
    let params = RelatedParams::parse(text).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    // Related by content walks the search index's postings: its version counts too.
    let version =
        || documents::version_of("related", (site_version(&state), state.cms.search_version()), &params);
    documents::answer(&req, version, documents::ENVELOPE, || async {
        let related = state.run(Shape::Envelope, state.cms.related(&params)).await?;
        counted_envelope(&related.into_iter().map(RelatedDto::from).collect::<Vec<_>>())
    })
    .await
}

async fn legacy_list(
    state: web::Data<AppState>,
    req: &HttpRequest,
    mut q: HashMap<String, String>,
) -> Result<HttpResponse, ApiError> {
    let collection_path = q.remove("collectionPath");
    let choice =
        languages::choice(&state.cms, req, &q).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let choice = languages::of_folder(&state.cms, choice);
    let params = crate::query::list_params(q.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    let (page, served) = state
        .run(Shape::Envelope, async {
            let cms = &state.cms;
            let query = ListQuery::parse(&params)?;
            if query.status != StatusFilter::Published {
                return Err(CoreError::invalid(
                    "this route lists published items only; list drafts with GET /cms/collections/{collection}/items?status=draft and an API key",
                ));
            }
            let collection = cms.collection_at_path("collectionPath", collection_path.as_deref())?;
            // A folder of translations by folder is its language's; `lang=` names another.
            let collection = match choice {
                Some(choice) => cms.list_in(collection, Some(choice)),
                None => collection,
            };
            Ok((cms.list_items(collection, &query, &Viewer::Anonymous).await?, collection))
        })
        .await?;
    Ok(languages::mark(item_page(req, page, Lookup::First), served, choice))
}

/// `GET /cms/collections/items` (legacy): the list parameters plus `collectionPath`.
pub async fn legacy_list_get(
    state: web::Data<AppState>,
    _caller: Reader,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query(&req)?;
    legacy_list(state, &req, q).await
}

/// `POST /cms/collections/items` (legacy): the same parameters as a JSON object or a form
/// body; they win over any in the query string.
pub async fn legacy_list_post(
    state: web::Data<AppState>,
    _caller: Reader,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut q = query(&req)?;
    q.extend(form_or_json_params(&req, payload, state.json_limit, Shape::Envelope).await?);
    legacy_list(state, &req, q).await
}

/// `GET /cms/collections/items/{slug}` (legacy): one published item of `collectionPath`.
pub async fn legacy_read(
    state: web::Data<AppState>,
    _caller: Reader,
    slug: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = query(&req)?;
    let choice =
        languages::choice(&state.cms, &req, &q).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let choice = languages::of_folder(&state.cms, choice);
    let collection_path = q.get("collectionPath").cloned();
    let view = state
        .run(Shape::Envelope, async {
            let cms = &state.cms;
            let collection = cms.collection_at_path("collectionPath", collection_path.as_deref())?;
            let item = ItemRef::parse(&slug)?;
            let found = match choice {
                // The first language of the chain that has it published.
                Some(choice) => {
                    let (lane, named) =
                        cms.item_in(collection, &item, Some(choice), &Viewer::Anonymous).await?;
                    cms.read_published_in(lane, &named, Some(choice.requested)).await?
                }
                None => cms.read_published(collection, &item).await?,
            };
            found.ok_or_else(|| {
                CoreError::not_found(format!(
                    "no published item {:?} in collection {:?}",
                    *slug, collection.slug
                ))
            })
        })
        .await?;
    let lang = view.language.as_ref().map(|language| language.lang.clone());
    Ok(languages::mark_lang(single_item(&req, view, Lookup::First).await, lang.as_deref(), choice))
}

/// `GET /cms/items/{slug}`: the first published item with this slug, collections in
/// configuration order.
pub async fn read_anywhere(
    state: web::Data<AppState>,
    _caller: Reader,
    slug: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let choice =
        languages::choice_of(&state.cms, &req).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let view = state
        .run(Shape::Envelope, async {
            state.cms.read_item_anywhere_in(&ItemRef::parse(&slug)?, choice).await
        })
        .await?;
    let lang = view.language.as_ref().map(|language| language.lang.clone());
    Ok(languages::mark_lang(single_item(&req, view, Lookup::First).await, lang.as_deref(), choice))
}
