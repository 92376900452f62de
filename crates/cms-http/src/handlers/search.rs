//! `GET /cms/search`: ranked full-text search, the same search as the MCP `search` tool.

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::service::SearchParams;
use serde_json::json;

use crate::auth::Caller;
use crate::dto::{PageMetaDto, SearchHitDto};
use crate::error::{ApiError, Shape};
use crate::handlers::items::query_map;
use crate::reply::envelope;
use crate::state::AppState;

/// `GET /cms/search?q=...&collection=...&page=&per_page=`: published items only without
/// a key.
pub async fn search(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut q = query_map(&req, Shape::Envelope)?;
    let params = SearchParams {
        q: q.remove("q"),
        collection: q.remove("collection"),
        page: q.remove("page"),
        per_page: q.remove("per_page"),
    };
    let page = state.run(Shape::Envelope, state.cms.search(&params, &caller.viewer)).await?;
    let meta = PageMetaDto::from(&page);
    let data: Vec<SearchHitDto> = page.items.into_iter().map(SearchHitDto::from).collect();
    Ok(envelope(data, json!({ "meta": meta })))
}
