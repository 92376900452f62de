//! The live event stream: `GET /cms/events` (Server-Sent Events, see `crate::streams` and
//! `docs/events.md`) and `POST /cms/events/tokens` (a stream token for browsers'
//! `EventSource`, which cannot send a key in a header).

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use cms_core::event_log::EventFilter;
use cms_core::service::{STREAM_TOKEN_PREFIX, Viewer};
use serde_json::json;
use time::format_description::well_known::Rfc3339;

use crate::auth::{EditorShape, KeyUser, Reader};
use crate::body::{Fields, json_object};
use crate::error::{ApiError, Shape};
use crate::state::AppState;
use cms_core::event_log::streams::{self, Refused};

/// The filters a stream or a token asks for (`collection`, `event`, `slug`).
struct Asked {
    collection: Option<String>,
    events: Option<String>,
    slug: Option<String>,
    /// On a site with languages: one language's events (`?lang=`, a stream's filter).
    lang: Option<String>,
}

impl Asked {
    /// The filter they make for a reader who may (or may not) read drafts. An empty
    /// value filters nothing, as a missing one.
    fn filter(&self, state: &AppState, sees_drafts: bool, shape: Shape) -> Result<EventFilter, ApiError> {
        let cms = &state.cms;
        let given = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
        let collection = match given(&self.collection) {
            Some(slug) => Some(cms.collection(&slug).map_err(|e| ApiError::from_core(e, shape))?.index),
            None => None,
        };
        let kinds = match given(&self.events) {
            Some(text) => EventFilter::parse_kinds(&text).map_err(|e| ApiError::from_core(e, shape))?,
            None => Vec::new(),
        };
        let slug = self.slug.clone().filter(|slug| !slug.is_empty());
        // A site without languages ignores it, as it ignores any other parameter.
        let lang = match (cms.languages(), given(&self.lang)) {
            (Some(languages), Some(code)) => {
                let at = languages.parse(&code).map_err(|e| ApiError::from_core(e, shape))?;
                Some(languages.get(at).code.to_string())
            }
            _ => None,
        };
        Ok(EventFilter { collection, kinds, slug, lang, sees_drafts })
    }
}

/// `GET /cms/events`: the site's item events as they happen, resumable with
/// `Last-Event-ID` (or `?since=`), filtered with `?collection=`, `?event=`, `?slug=`
/// (and `?lang=` on a site with languages).
/// Anonymous readers see the events of live items only; a key sees what its role may
/// read; `?token=evt_...` opens a stream with a token's filters (narrowed, never widened).
pub async fn stream(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let shape = Shape::Envelope;
    let [collection, events, slug, since, token, lang] =
        crate::query::named(req.query_string(), ["collection", "event", "slug", "since", "token", "lang"]);
    let asked = Asked { collection, events, slug, lang };
    let (key_id, filter) = match token.filter(|t| t.starts_with(STREAM_TOKEN_PREFIX)) {
        Some(token) => {
            let (principal, allowed) = state.run(shape, state.cms.open_stream_token(&token)).await?;
            let mut filter = asked.filter(&state, allowed.sees_drafts, shape)?;
            filter.collection = filter.collection.or(allowed.collection);
            if filter.kinds.is_empty() {
                filter.kinds.clone_from(&allowed.kinds);
            }
            filter.slug = filter.slug.or_else(|| allowed.slug.clone());
            if !filter.within(&allowed) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    shape,
                    "this stream token allows fewer events than asked: its query may narrow the token's \
                     collection, event and slug, not widen them; make a token with the filters you need",
                ));
            }
            (Some(principal.key_id), filter)
        }
        None => {
            let reader = Reader::extract(&req).await?;
            match reader.viewer {
                Viewer::Key(principal) => {
                    let sees_drafts = Viewer::Key(principal.clone()).has_key();
                    (Some(principal.key_id), asked.filter(&state, sees_drafts, shape)?)
                }
                Viewer::Anonymous | Viewer::Preview => (None, asked.filter(&state, false, shape)?),
            }
        }
    };
    let last_event_id = req.headers().get("last-event-id").map(|v| v.to_str().unwrap_or("?"));
    let since =
        streams::resume_point(last_event_id, since.as_deref()).map_err(|e| ApiError::from_core(e, shape))?;
    let address = state.cms.hosts().client_address(
        req.peer_addr().map(|a| a.ip()),
        req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok()),
    );
    let slot = state
        .cms
        .stream_slots()
        .open(key_id.as_deref(), address)
        .map_err(|refused| refusal(refused, &state))?;
    let log = state.cms.event_log();
    let start = match since {
        Some(since) => since,
        None => state.run(shape, log.head()).await?,
    };
    let cursor = log.cursor(start, filter);
    let mut answer = HttpResponse::Ok();
    for header in streams::RESPONSE_HEADERS {
        answer.insert_header(header);
    }
    Ok(answer.streaming(streams::body(
        cursor,
        slot,
        std::time::Duration::from_secs(state.cms.events_config().keep_alive_secs),
        actix_web::rt::time::sleep,
    )))
}

fn refusal(refused: Refused, state: &AppState) -> ApiError {
    let status =
        if refused.is_full() { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::TOO_MANY_REQUESTS };
    ApiError::new(status, Shape::Envelope, refused.message(state.cms.events_config()))
        .retry_after(streams::RETRY_AFTER_SECS)
}

/// `POST /cms/events/tokens`, body optional `{"collection", "event", "slug"}`: a stream
/// token bound to those filters, `{"token", "url", "expires"}`.
pub async fn create_token(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let shape = Shape::Editor;
    let has_body = req.headers().contains_key(header::CONTENT_TYPE)
        || req.headers().get(header::CONTENT_LENGTH).is_some_and(|l| l != "0");
    let asked = if has_body {
        let body = json_object(&req, payload, state.json_limit, shape).await?;
        let mut fields = Fields::new(body, &["collection", "event", "slug"], shape)?;
        Asked {
            collection: fields.string("collection")?,
            events: fields.string("event")?,
            slug: fields.string("slug")?,
            lang: None,
        }
    } else {
        Asked { collection: None, events: None, slug: None, lang: None }
    };
    let sees_drafts = Viewer::Key(user.principal.clone()).has_key();
    let filter = asked.filter(&state, sees_drafts, shape)?;
    let token = state.run(shape, state.cms.create_stream_token(&user.principal, &filter)).await?;
    let origin = state.cms.hosts().public_origin(&crate::state::request_origin(&req));
    Ok(HttpResponse::Created().insert_header((header::CACHE_CONTROL, "no-store")).json(json!({
        "token": token.token,
        "url": format!("{origin}/cms/events?token={}", token.token),
        "expires": token.expires.format(&Rfc3339).unwrap_or_default(),
    })))
}
