//! The live event stream: `GET /cms/events` (Server-Sent Events, see `crate::streams` and
//! `docs/events.md`) and `POST /cms/events/tokens` (a stream token for browsers'
//! `EventSource`, which cannot send a key in a header).

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use cms_core::event_log::EventFilter;
use cms_core::service::{STREAM_TOKEN_PREFIX, Viewer};
use serde_json::json;
use time::format_description::well_known::Rfc3339;

use crate::auth::{EditorShape, KeyUser, Reader};
use crate::body::{Fields, json_object};
use crate::error::{ApiError, Shape};
use crate::state::AppState;
use crate::streams::{self, Refused};

/// The filters a stream or a token asks for (`collection`, `event`, `slug`).
struct Asked {
    collection: Option<String>,
    events: Option<String>,
    slug: Option<String>,
}

impl Asked {
    /// The filter they make for a reader who may (or may not) read drafts.
    fn filter(&self, state: &AppState, sees_drafts: bool, shape: Shape) -> Result<EventFilter, ApiError> {
        let cms = &state.cms;
        let collection = match &self.collection {
            Some(slug) => Some(cms.collection(slug).map_err(|e| ApiError::from_core(e, shape))?.index),
            None => None,
        };
        let kinds = match &self.events {
            Some(text) => EventFilter::parse_kinds(text).map_err(|e| ApiError::from_core(e, shape))?,
            None => Vec::new(),
        };
        let slug = self.slug.clone().filter(|slug| !slug.is_empty());
        Ok(EventFilter { collection, kinds, slug, sees_drafts })
    }
}

/// `GET /cms/events`: the site's item events as they happen, resumable with
/// `Last-Event-ID` (or `?since=`), filtered with `?collection=`, `?event=`, `?slug=`.
/// Anonymous readers see the events of live items only; a key sees what its role may
/// read; `?token=evt_...` opens a stream with a token's filters (narrowed, never widened).
pub async fn stream(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let shape = Shape::Envelope;
    let [collection, events, slug, since, token] =
        crate::query::named(req.query_string(), ["collection", "event", "slug", "since", "token"]);
    let asked = Asked { collection, events, slug };
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
    let since = resume_point(&req, since.as_deref())?;
    let address = state.cms.hosts().client_address(
        req.peer_addr().map(|a| a.ip()),
        req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok()),
    );
    let slot = state.streams.open(key_id.as_deref(), address).map_err(|refused| refusal(refused, &state))?;
    let log = state.cms.event_log();
    let start = match since {
        Some(since) => since,
        None => state.run(shape, log.head()).await?,
    };
    let cursor = log.cursor(start, filter);
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream")))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        // Proxies such as nginx would otherwise hold events back to fill a buffer.
        .insert_header(("X-Accel-Buffering", HeaderValue::from_static("no")))
        .streaming(streams::body(
            cursor,
            slot,
            std::time::Duration::from_secs(state.cms.events_config().keep_alive_secs),
        )))
}

/// Where a stream resumes: `Last-Event-ID` (what `EventSource` sends when it reconnects),
/// else `?since=`; `None` for live events only.
fn resume_point(req: &HttpRequest, since: Option<&str>) -> Result<Option<u64>, ApiError> {
    let header = req.headers().get("last-event-id").map(|v| v.to_str().unwrap_or("?").trim());
    let (text, name) = match (header, since) {
        (Some(text), _) if !text.is_empty() => (text, "Last-Event-ID"),
        (_, Some(text)) => (text.trim(), "since"),
        _ => return Ok(None),
    };
    text.parse::<u64>().map(Some).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            Shape::Envelope,
            format!("{name} must be an event id (a whole number, 0 for every kept event), got {text:?}"),
        )
    })
}

fn refusal(refused: Refused, state: &AppState) -> ApiError {
    let limits = state.cms.events_config();
    let (status, message) = match refused {
        Refused::Full => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "this server holds {} event streams, its limit (events.max_streams in cms.yaml); retry later or on another server",
                limits.max_streams
            ),
        ),
        Refused::Key => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this key holds {} event streams, the limit per key (events.max_streams_per_key); close one first",
                limits.max_streams_per_key
            ),
        ),
        Refused::Address => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this address holds {} event streams, the limit per address (events.max_streams_per_address); close one first",
                limits.max_streams_per_address
            ),
        ),
    };
    ApiError::new(status, Shape::Envelope, message).retry_after(streams::RETRY_AFTER_SECS)
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
        }
    } else {
        Asked { collection: None, events: None, slug: None }
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
