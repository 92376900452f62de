//! `GET /admin/collections/{collection}/suggest?q=`: the items of a collection whose title,
//! tags or text match what is typed into a reference's input, for the script to offer
//! (the page's own list holds only the first page by title: a collection may hold
//! 100,000 items). The facade's full-text search answers, so a keystroke costs a lookup
//! in the search index, not a walk of the collection.

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::service::{SearchInput, SearchQuery, Viewer};
use serde::Serialize;

use super::query_param;
use crate::AdminState;
use crate::auth::SignedIn;
use crate::error::AdminResult;

/// Suggestions given at most.
const SUGGESTIONS: usize = 20;
/// Fewer characters than this suggest nothing (the search matches prefixes of two).
const SHORTEST: usize = 2;

/// One suggestion: the slug an input takes, and the title it is shown with.
#[derive(Serialize)]
struct Suggestion {
    value: String,
    label: String,
}

pub async fn suggest(
    user: SignedIn,
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let collection = super::collection_at(&state, &path)?;
    let typed = query_param(&req, "q").unwrap_or_default();
    let typed = typed.trim();
    let mut suggestions = Vec::new();
    if typed.chars().count() >= SHORTEST {
        let query = SearchQuery::from_input(&SearchInput {
            q: Some(typed.to_owned()),
            collection: Some(collection.index.to_string()),
            page: None,
            per_page: Some(SUGGESTIONS),
        })?;
        let hits = state.cms.search(&query, &Viewer::Key(user.principal.clone())).await?;
        suggestions.extend(hits.items.iter().map(|hit| Suggestion {
            value: hit.item.meta.slug.to_string(),
            label: hit.item.meta.title.to_string(),
        }));
    }
    // `Cache-Control: no-store`, as every answer of the editor (`security.rs`).
    Ok(HttpResponse::Ok().json(suggestions))
}
