//! `GET /cms/search`: ranked full-text search, the same search as the MCP `search` tool.

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::answers::{PageMeta, SearchResultEntry};
use cms_core::service::{SearchParams, SearchQuery};

use crate::auth::Reader;
use crate::documents;
use crate::error::{ApiError, Shape};
use crate::handlers::items::query_map;
use crate::languages;
use crate::state::AppState;

/// `GET /cms/search?q=...&collection=...&page=&per_page=`: published items only without
/// a key.
pub async fn search(
    state: web::Data<AppState>,
    caller: Reader,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut q = query_map(&req, Shape::Envelope)?;
    // On a site with languages: one language's items (`lang=`, else Accept-Language).
    let choice =
        languages::choice(&state.cms, &req, &q).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    let lang = choice.map(|choice| choice.requested);
    let params = SearchParams {
        q: q.remove("q"),
        collection: q.remove("collection"),
        page: q.remove("page"),
        per_page: q.remove("per_page"),
    };
    // Parsed before the answer is looked up: the kept documents are keyed by the query
    // as read (so `page=01` and `page=1` share one), never by a query that is refused.
    let query = SearchQuery::parse(&params).map_err(|e| ApiError::from_core(e, Shape::Envelope))?;
    // The tag names the search indexes as built: a search that arrives while the build
    // started at start-up still runs waits for it here (one flag per collection once
    // done), so that its tag is the one the next read compares.
    state.run(Shape::Envelope, state.cms.prepare_search()).await?;
    // Search reads the search indexes, updated just after the item indexes: both count.
    let has_key = caller.viewer.has_key();
    let version = || {
        let content = (documents::site_version(&state), state.cms.search_version());
        documents::version_of("search", content, (has_key, &query, lang))
    };
    let answer = documents::answer(&req, version, documents::ENVELOPE, || async {
        #[derive(serde::Serialize)]
        struct Results {
            success: bool,
            data: Vec<SearchResultEntry>,
            meta: PageMeta,
        }
        let page = state.run(Shape::Envelope, state.cms.search_in(&query, &caller.viewer, lang)).await?;
        let meta = PageMeta::from(&page);
        let data = page.items.into_iter().map(SearchResultEntry::from).collect();
        serde_json::to_vec(&Results { success: true, data, meta }).map_err(|e| {
            ApiError::from_core(cms_core::CoreError::internal("response serialization", e), Shape::Envelope)
        })
    })
    .await?;
    Ok(languages::mark_code(answer, &state.cms, choice))
}
