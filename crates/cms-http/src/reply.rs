//! Success responses in the envelope shape, and the `ETag`/`If-None-Match` handling of
//! reads.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::http::header;
use actix_web::http::{Method, StatusCode};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use cms_core::query::Page;
use cms_core::service::{ItemSummary, ItemVersion, ItemView, etag_of};
use serde::Serialize;
use serde_json::{Value, json};

use cms_core::answers::PageMeta;
use cms_core::ports::{KeptNow, RenderCache};

use crate::dto::{ItemDto, ItemEntryDto};
use crate::encoding::{self, Coding, Effort};
use crate::error::{ApiError, Shape};

pub use crate::timestamp::timestamp_now;

/// `{"success": true, "data": ..., "timestamp": ...}` plus any `extra` top-level fields.
pub fn envelope(data: impl Serialize, extra: Value) -> HttpResponse {
    let mut body = json!({ "success": true, "data": data });
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
        body.insert("timestamp".into(), timestamp_now().into());
    }
    HttpResponse::Ok().json(body)
}

/// `{"success": true, "data": ..., "timestamp": ...}` serialized straight from `data`
/// (no intermediate JSON value): the shape of the hot single-item and status answers.
pub fn envelope_of(data: impl Serialize) -> HttpResponse {
    #[derive(Serialize)]
    struct Envelope<T> {
        success: bool,
        data: T,
        timestamp: String,
    }
    json_response(&Envelope { success: true, data, timestamp: timestamp_now() })
}

/// `body` as `application/json`, or a `500` if it cannot be serialized.
pub fn json_response(body: &impl Serialize) -> HttpResponse {
    match serde_json::to_vec(body) {
        Ok(bytes) => HttpResponse::Ok().content_type("application/json").body(bytes),
        Err(e) => serialization_failed(e),
    }
}

fn serialization_failed(error: serde_json::Error) -> HttpResponse {
    ApiError::from_core(cms_core::CoreError::internal("response serialization", error), Shape::Envelope)
        .error_response()
}

/// The envelope of a page, up to (not including) its `timestamp`.
#[derive(Serialize)]
struct PageBody<'a> {
    success: bool,
    data: &'a [ItemEntryDto<'a>],
    meta: &'a PageMeta,
}

/// A page of item list entries: the envelope with `meta`, and a strong `ETag`: from the
/// index's version of the page when it has one, else of the body without its
/// `timestamp` (the only part that changes while the list does not). A request whose
/// `If-None-Match` names it gets `304` (see [`not_modified`]). Pages with a version are
/// served from the [`BodyCache`](crate::body_cache::BodyCache) once built.
pub fn item_page(req: &HttpRequest, page: Page<ItemSummary>, lookup: Lookup) -> HttpResponse {
    let state = crate::state::of(req);
    let Some(version) = page.version else {
        let body = match page_body(&page) {
            Ok(body) => body,
            Err(e) => return serialization_failed(e),
        };
        let etag = etag_of(&body);
        return not_modified(req, &etag, Shape::Envelope).unwrap_or_else(|| timestamped_owned(body, &etag));
    };
    // The version names the content without building the body, so a matching
    // `If-None-Match` costs no serialization.
    let coding = accepted_coding(req);
    let etag = page_etag(state, version);
    let etag = encoding::coded_etag(&etag, coding);
    if let Some(response) = not_modified(req, &etag, Shape::Envelope) {
        return response;
    }
    let store = Store::Memory(&state.bodies);
    if let Some(kept) = kept_answer(store, version, &etag, coding, lookup) {
        return kept;
    }
    match page_body(&page) {
        Ok(body) => new_answer(store, version, &etag, body, coding),
        Err(e) => serialization_failed(e),
    }
}

/// The answer to a list page of `version` (see `Cms::list_items_version`) from the
/// bodies kept, or `304`, before the page is selected; `None` when no body is kept.
pub fn kept_page(req: &HttpRequest, version: u64) -> Option<HttpResponse> {
    let state = crate::state::of(req);
    let coding = accepted_coding(req);
    let etag = page_etag(state, version);
    let etag = encoding::coded_etag(&etag, coding);
    if let Some(response) = not_modified(req, &etag, Shape::Envelope) {
        return Some(response);
    }
    kept_answer(Store::Memory(&state.bodies), version, &etag, coding, Lookup::First)
}

/// `"<seed><version>"`, each as 16 hex digits (written by hand: `format!` was 1% of a kept
/// page's CPU).
fn page_etag(state: &crate::state::AppState, version: u64) -> String {
    let mut etag = String::with_capacity(34);
    etag.push('"');
    crate::request_id::push_hex(&mut etag, state.etag_seed, 16);
    crate::request_id::push_hex(&mut etag, version, 16);
    etag.push('"');
    etag
}

/// `{"success":true,"data":[...],"meta":{...}}`, the page without its timestamp.
fn page_body(page: &Page<ItemSummary>) -> serde_json::Result<Vec<u8>> {
    let meta = PageMeta::from(page);
    let data: Vec<ItemEntryDto> = page.items.iter().map(ItemEntryDto::from).collect();
    serde_json::to_vec(&PageBody { success: true, data: &data, meta: &meta })
}

/// `200` with `body` (a JSON object) and `"timestamp"` added as its last field, and the
/// ETag, which was taken of the body without it. The timestamp is added in place.
fn timestamped_owned(mut body: Vec<u8>, etag: &str) -> HttpResponse {
    if body.last() == Some(&b'}') {
        body.pop();
    }
    push_timestamp_trailer(&mut body);
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .insert_header((header::VARY, "Accept-Encoding"))
        .body(body)
}

/// Where a kept answer lives: single items in the server's answer store on disk when it
/// has one, everything else in the memory cache.
#[derive(Clone, Copy)]
enum Store<'a> {
    Disk(&'a dyn RenderCache),
    Memory(&'a crate::body_cache::BodyCache),
}

/// A kept answer that must be read from the disk first ([`KeptNow::OnDisk`]).
struct OnDisk;

impl Store<'_> {
    /// The body kept under `key`; from the disk it may wait for it.
    fn get(self, key: u64) -> Option<Bytes> {
        match self {
            Self::Disk(answers) => answers.get(key),
            Self::Memory(bodies) => bodies.get(key),
        }
    }

    /// The body kept under `key` if it can be had without waiting for the disk.
    fn get_now(self, key: u64) -> Result<Option<Bytes>, OnDisk> {
        match self {
            Self::Disk(answers) => match answers.get_now(key) {
                KeptNow::Found(body) => Ok(Some(body)),
                KeptNow::Missing => Ok(None),
                KeptNow::OnDisk => Err(OnDisk),
            },
            Self::Memory(bodies) => Ok(bodies.get(key)),
        }
    }

    fn put(self, key: u64, body: Bytes) {
        match self {
            Self::Disk(answers) => answers.put(key, &body),
            Self::Memory(bodies) => bodies.put(key, body),
        }
    }

    fn note(self, found: bool) {
        match self {
            Self::Disk(answers) => answers.note(found),
            Self::Memory(bodies) => bodies.note(found),
        }
    }
}

/// Whether a request looks up its kept answer for the first time (counted for
/// `/metrics`: one per request) or again, after its first lookup missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    First,
    Again,
}

/// The coding a request accepts, from its `Accept-Encoding`.
pub fn accepted_coding(req: &HttpRequest) -> Option<Coding> {
    encoding::negotiate(req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()))
}

/// The answer kept under `key` (the body without its timestamp), in `coding` (the one the
/// request accepts; `etag` is that representation's): that coding's kept form, or the plain
/// body (whose coded form is then made and kept); `None` when nothing is kept under `key`.
fn kept_answer(
    store: Store<'_>,
    key: u64,
    etag: &str,
    coding: Option<Coding>,
    lookup: Lookup,
) -> Option<HttpResponse> {
    kept_answer_from(store, key, etag, coding, lookup, |key| Ok(store.get(key))).unwrap_or(None)
}

/// [`kept_answer`] with the bodies that `get` finds: `Err` as soon as one of them is on
/// the disk (nothing is counted then: the lookup is made again, once it is read).
fn kept_answer_from(
    store: Store<'_>,
    key: u64,
    etag: &str,
    coding: Option<Coding>,
    lookup: Lookup,
    mut get: impl FnMut(u64) -> Result<Option<Bytes>, OnDisk>,
) -> Result<Option<HttpResponse>, OnDisk> {
    if let Some(coding) = coding
        && let Some(open) = get(coding.key_of(key))?
    {
        if lookup == Lookup::First {
            store.note(true);
        }
        return Ok(Some(coded_answer(coding, &open, etag)));
    }
    let plain = get(key)?;
    if lookup == Lookup::First {
        store.note(plain.is_some());
    }
    Ok(plain.map(|plain| answer(store, key, etag, plain, coding)))
}

/// Keeps a body just made under `key` and answers it as [`kept_answer`] would.
fn new_answer(store: Store<'_>, key: u64, etag: &str, body: Vec<u8>, coding: Option<Coding>) -> HttpResponse {
    let plain = kept_bytes(body);
    store.put(key, plain.clone());
    answer(store, key, etag, plain, coding)
}

fn answer(store: Store<'_>, key: u64, etag: &str, plain: Bytes, coding: Option<Coding>) -> HttpResponse {
    let Some(coding) = coding else { return timestamped_shared(plain, etag) };
    // Made once per version and coding: the body up to its closing brace, left open.
    let open = Bytes::from(encoding::open_stream(coding, without_last_brace(&plain), Effort::Kept));
    store.put(coding.key_of(key), open.clone());
    coded_answer(coding, &open, etag)
}

/// A kept form closed with the timestamp and its `}`.
fn coded_answer(coding: Coding, open: &Bytes, etag: &str) -> HttpResponse {
    let (sent, tail) = encoding::close_shared(coding, open, &timestamp_trailer());
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .insert_header((header::VARY, "Accept-Encoding"))
        .insert_header((header::CONTENT_ENCODING, coding.token()))
        .body(Concatenated { parts: [sent, tail], next: 0 })
}

fn without_last_brace(body: &[u8]) -> &[u8] {
    body.strip_suffix(b"}").unwrap_or(body)
}

/// [`timestamped_owned`] on a kept body that other answers share: it is sent as it is kept,
/// followed by the timestamp, so it is not copied (the response writer copies each part
/// into its buffer anyway).
fn timestamped_shared(body: Bytes, etag: &str) -> HttpResponse {
    let kept = body.slice(..without_last_brace(&body).len());
    let body = Concatenated { parts: [kept, Bytes::from(timestamp_trailer())], next: 0 };
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .insert_header((header::VARY, "Accept-Encoding"))
        .body(body)
}

/// A body to keep: exactly its bytes (`serde_json` leaves spare capacity, which `Bytes`
/// would keep too, past what the cache's budget counts).
fn kept_bytes(body: Vec<u8>) -> Bytes {
    Bytes::from(body.into_boxed_slice())
}

/// `,"timestamp":"<now>"}`: what ends every kept answer.
pub(crate) fn timestamp_trailer() -> Vec<u8> {
    let mut trailer = Vec::with_capacity(48);
    push_timestamp_trailer(&mut trailer);
    trailer
}

/// [`timestamp_trailer`], added to `out`.
pub(crate) fn push_timestamp_trailer(out: &mut Vec<u8>) {
    let stamp = timestamp_now(); // RFC 3339: nothing to escape
    out.extend_from_slice(b",\"timestamp\":\"");
    out.extend_from_slice(stamp.as_bytes());
    out.extend_from_slice(b"\"}");
}

/// A body sent as its parts, one after the other, with their sum as its length.
pub(crate) struct Concatenated {
    parts: [Bytes; 2],
    next: usize,
}

impl Concatenated {
    pub(crate) fn new((first, second): (Bytes, Bytes)) -> Self {
        Self { parts: [first, second], next: 0 }
    }
}

impl MessageBody for Concatenated {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.parts.iter().map(|part| part.len() as u64).sum())
    }

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let next = self.next;
        let Some(part) = self.parts.get_mut(next) else { return Poll::Ready(None) };
        let part = std::mem::take(part);
        self.next += 1;
        Poll::Ready(Some(Ok(part)))
    }
}

/// A rendered item in the envelope, with its `ETag`, or `304` when the request's
/// `If-None-Match` names it. The body is kept by the item's version (file content and
/// stamp): in the finished answers on disk when the server has them, else in memory.
pub async fn single_item(req: &HttpRequest, view: ItemView, lookup: Lookup) -> HttpResponse {
    let coding = accepted_coding(req);
    let etag = encoding::coded_etag(&view.etag, coding).into_owned();
    if let Some(response) = not_modified(req, &etag, Shape::Envelope) {
        return response;
    }
    let state = crate::state::of(req);
    let key = view.version;
    // Routes that do not ask for the kept answer first (`/cms/items/{slug}`, the legacy
    // read) find it here: an answer is serialized and kept once per version.
    if let Some(kept) = kept_item_answer(state, key, &etag, coding, lookup).await {
        return kept;
    }
    let store = item_store(state);
    match item_body(view) {
        Ok(body) => new_answer(store, key, &etag, body, coding),
        Err(e) => serialization_failed(e),
    }
}

fn item_store(state: &crate::state::AppState) -> Store<'_> {
    match &state.answers {
        Some(answers) => Store::Disk(answers.as_ref()),
        None => Store::Memory(&state.bodies),
    }
}

/// `{"success":true,"data":{...}}`, a single item's answer without its timestamp.
pub(crate) fn item_body(view: ItemView) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Body {
        success: bool,
        data: ItemDto,
    }
    serde_json::to_vec(&Body { success: true, data: ItemDto::from(view) })
}

/// The answer to a single read of `version` (see `Cms::item_version`) from the bodies
/// kept, or `304`, before the item is read; `None` when no body is kept.
///
/// A body that is not in memory (on a large site the answers are in a file, and the
/// page cache may have let its pages go) is read on the blocking pool: the async worker
/// answers other requests meanwhile instead of waiting for the disk.
pub async fn kept_item(req: &HttpRequest, version: &ItemVersion) -> Option<HttpResponse> {
    let coding = accepted_coding(req);
    let etag = encoding::coded_etag(&version.etag, coding);
    if let Some(response) = not_modified(req, &etag, Shape::Envelope) {
        return Some(response);
    }
    kept_item_answer(crate::state::of(req), version.version, &etag, coding, Lookup::First).await
}

/// [`kept_answer`] of a single item: a body on the disk is read on the blocking pool.
async fn kept_item_answer(
    state: &crate::state::AppState,
    key: u64,
    etag: &str,
    coding: Option<Coding>,
    lookup: Lookup,
) -> Option<HttpResponse> {
    let store = item_store(state);
    match kept_answer_from(store, key, etag, coding, lookup, |key| store.get_now(key)) {
        Ok(kept) => kept,
        // Boxed: only an answer on the disk needs the blocking pool's future.
        Err(OnDisk) => Box::pin(kept_item_from_disk(state, key, etag, coding, lookup)).await,
    }
}

/// [`kept_item_answer`] of a body on the disk: read on the blocking pool.
async fn kept_item_from_disk(
    state: &crate::state::AppState,
    key: u64,
    etag: &str,
    coding: Option<Coding>,
    lookup: Lookup,
) -> Option<HttpResponse> {
    let answers = state.answers.clone()?;
    let coded_key = coding.map(|coding| coding.key_of(key));
    let (mut coded, mut plain) = actix_web::web::block(move || {
        let coded = coded_key.and_then(|coded_key| answers.get(coded_key));
        let plain = if coded.is_none() { answers.get(key) } else { None };
        (coded, plain)
    })
    .await
    .ok()?;
    let read = |wanted| Ok(if Some(wanted) == coded_key { coded.take() } else { plain.take() });
    kept_answer_from(item_store(state), key, etag, coding, lookup, read).unwrap_or(None)
}

/// When the request's `If-None-Match` names `etag` (or is `*`): `304` with the ETag (and
/// the `Vary` of the answer it stands for) for `GET`/`HEAD`, and `412` in `shape` for any
/// other method (RFC 9110, 13.1.2). The comparison is weak, as the RFC asks: `W/"x"`
/// matches `"x"` (a proxy that compressed our answer weakened its tag).
pub fn not_modified(req: &HttpRequest, etag: &str, shape: Shape) -> Option<HttpResponse> {
    let header = req.headers().get(header::IF_NONE_MATCH)?.to_str().ok()?;
    if !none_match_names(header, etag) {
        return None;
    }
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return Some(
            HttpResponse::NotModified()
                .insert_header((header::ETAG, etag))
                .insert_header((header::VARY, "Accept-Encoding"))
                .finish(),
        );
    }
    let error = ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        shape,
        format!("If-None-Match {header} matches the current ETag {etag}"),
    );
    Some(error.error_response())
}

/// Whether an `If-None-Match` list names `etag` by weak comparison, or is `*`.
pub fn none_match_names(header: &str, etag: &str) -> bool {
    let ours = opaque_tag(etag);
    header.split(',').any(|tag| tag.trim() == "*" || opaque_tag(tag) == ours)
}

/// An entity tag without its weakness mark.
fn opaque_tag(tag: &str) -> &str {
    let tag = tag.trim();
    tag.strip_prefix("W/").unwrap_or(tag)
}

#[cfg(test)]
mod tests {
    use actix_web::body::{self, MessageBody};
    use actix_web::http::header;
    use actix_web::web::Bytes;

    use super::{timestamped_owned, timestamped_shared};

    #[actix_web::test]
    async fn a_kept_body_is_sent_with_its_timestamp_last_and_its_full_length() {
        let kept = Bytes::from_static(br#"{"success":true,"data":[1,2]}"#);
        for response in [timestamped_shared(kept.clone(), "\"e\""), timestamped_owned(kept.to_vec(), "\"e\"")]
        {
            assert_eq!(response.headers().get(header::ETAG).unwrap(), "\"e\"");
            let announced = response.body().size();
            let sent = body::to_bytes(response.into_body()).await.unwrap();
            assert_eq!(announced, body::BodySize::Sized(sent.len() as u64));
            let value: serde_json::Value = serde_json::from_slice(&sent).unwrap();
            assert_eq!(value["data"], serde_json::json!([1, 2]));
            assert!(value["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{value}");
            let (head, tail) = sent.split_at(kept.len() - 1);
            assert_eq!(head, &kept[..kept.len() - 1], "the kept part is sent as kept");
            assert!(tail.starts_with(br#","timestamp":""#), "the timestamp comes last");
        }
    }
}
