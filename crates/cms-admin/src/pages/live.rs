//! The editor's live stream: `GET /admin/events?collection=&slug=&since=`, the site's
//! event stream (docs/events.md) opened with the session cookie, which `EventSource`
//! sends where it cannot send a key. The pages' script follows it: the item list fetches
//! itself again, the edit page says that someone else saved before a save would conflict.
//! Same events, visibility and bounds as `GET /cms/events` (`event_log::streams`); a
//! session's streams count against its user.

use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::CoreError;
use cms_core::collection::Collection;
use cms_core::event_log::EventFilter;
use cms_core::event_log::streams;
use cms_core::policy::{self, Operation};

use super::query_param;
use crate::AdminState;
use crate::auth::{SignedIn, client_address};
use crate::error::AdminResult;
use crate::view::query_escape;

/// `GET /admin/events`: Server-Sent Events of `collection` (its slug), or of one item
/// (`slug`), after `since` (or `Last-Event-ID`), as the signed-in user may read them.
pub async fn stream(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    // Events name a configured collection (`folder`); a translation's page listens to its
    // language's.
    let (collection, lang) = match query_param(&req, "collection").filter(|c| !c.is_empty()) {
        Some(slug) => {
            let collection = super::collection_at(&state, &slug)?;
            (Some(collection.family()), collection.language.as_ref().map(|l| l.code.to_string()))
        }
        None => (None, None),
    };
    let filter = EventFilter {
        collection,
        kinds: Vec::new(),
        lang,
        slug: query_param(&req, "slug").filter(|s| !s.is_empty()),
        sees_drafts: policy::may(&user.principal, Operation::ReadDrafts),
    };
    let last_event_id = req.headers().get("last-event-id").map(|v| v.to_str().unwrap_or("?"));
    let since = streams::resume_point(last_event_id, query_param(&req, "since").as_deref())?;
    let owner = format!("session:{}", user.principal.user.email);
    let slot = state
        .cms
        .stream_slots()
        .open(Some(&owner), client_address(&req))
        .map_err(|refused| CoreError::Busy(refused.message(state.cms.events_config())))?;
    let log = state.cms.event_log();
    let start = match since {
        Some(since) => since,
        None => log.head().await?,
    };
    let keep_alive = std::time::Duration::from_secs(state.cms.events_config().keep_alive_secs);
    let mut answer = HttpResponse::Ok();
    for header in streams::RESPONSE_HEADERS {
        answer.insert_header(header);
    }
    Ok(answer.streaming(streams::body(
        log.cursor(start, filter),
        slot,
        keep_alive,
        actix_web::rt::time::sleep,
    )))
}

/// Where the site's events stand, read before a page reads what it shows: the page's
/// stream starts there, so nothing between the page's reads and the script's connection
/// is missed. `None` when the event log cannot say (the page then works as without the
/// script).
pub async fn since(state: &AdminState) -> Option<u64> {
    state
        .cms
        .event_log()
        .head()
        .await
        .inspect_err(|error| {
            tracing::warn!(%error, "an editor page follows no live changes: the event log is unreadable");
        })
        .ok()
}

/// The stream a page follows: `collection`'s events (one item's with `slug`) after `since`.
pub fn url(since: Option<u64>, collection: &Collection, slug: Option<&str>) -> Option<String> {
    let item = slug.map(|slug| format!("&slug={}", query_escape(slug))).unwrap_or_default();
    since.map(|since| {
        format!(
            "/admin/events?collection={}{item}&since={since}",
            query_escape(&super::links::segment(collection))
        )
    })
}
