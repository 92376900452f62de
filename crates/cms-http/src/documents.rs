//! Documents kept by version: feeds, sitemaps, search indexes and results, tag lists and
//! the API description. Each is made once per version (a hash of the content it shows and
//! of the request's query), kept with the time it was made, and answered with its
//! validators (`ETag`, `Last-Modified`, `304` to `If-None-Match` or `If-Modified-Since`)
//! and in the coding the request accepts, from a compressed form kept beside it (see
//! [`crate::encoding`]).

use std::hash::{Hash, Hasher};
use std::time::{Duration, UNIX_EPOCH};

use actix_web::http::header::{self, HttpDate};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};

use crate::encoding::{self, Coding, Effort};
use crate::error::ApiError;
use crate::reply::{self, Concatenated};
use crate::state::{self, AppState};

/// What kind of document, which decides how it is sent.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub content_type: &'static str,
    /// An envelope (a JSON object) whose `timestamp` is added when sent, as the last field.
    pub envelope: bool,
}

pub const RSS: Kind = Kind { content_type: "application/rss+xml; charset=utf-8", envelope: false };
pub const XML: Kind = Kind { content_type: "application/xml; charset=utf-8", envelope: false };
pub const JSON: Kind = Kind { content_type: "application/json", envelope: false };
pub const JSON_SCHEMA: Kind = Kind { content_type: "application/schema+json", envelope: false };
pub const ENVELOPE: Kind = Kind { content_type: "application/json", envelope: true };

/// The version of a route's document: the content it shows (`Cms::content_version`) and
/// everything of the request that shapes it.
pub fn version_of(route: &str, content: impl Hash, shape: impl Hash) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    (route, content, shape).hash(&mut hasher);
    hasher.finish()
}

/// The document of the version `version` gives now: kept, or made by `make` (its body; an
/// envelope without its `timestamp`) and kept, unless the version moved while it was made
/// (the body might show the newer content: it is sent, not kept).
pub async fn answer<F, Fut>(
    req: &HttpRequest,
    version: impl Fn() -> u64,
    kind: Kind,
    make: F,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Vec<u8>, ApiError>>,
{
    let state = state::of(req);
    let (version_fn, version) = (&version, version());
    let coding = reply::accepted_coding(req);
    let etag = etag_of(state.etag_seed, version, coding);
    let key = coding.map_or(version, |coding| coding.key_of(version));
    let kept = state.documents.get(key);
    state.documents.note(kept.is_some());
    if let Some(record) = kept {
        return Ok(send(req, kind, &etag, coding, &record));
    }
    // Not kept in this coding: one request makes it, the others wait for it and find it
    // kept (a burst after a change would otherwise make it once per request).
    let _making = state.document_builds.one_at_a_time(version).await;
    if let Some(record) = state.documents.get(key) {
        return Ok(send(req, kind, &etag, coding, &record));
    }
    let plain = match state.documents.get(version) {
        Some(record) => record,
        None => {
            // Boxed, as below: a kept answer's request then holds a small future (each
            // request allocates its future at its full size).
            let body = Box::pin(make()).await?;
            let made_at = time::OffsetDateTime::now_utc().unix_timestamp();
            let record = Bytes::from([&made_at.to_le_bytes()[..], &body].concat());
            if version_fn() != version {
                return Ok(send(req, kind, &etag, None, &record));
            }
            state.documents.put(version, record.clone());
            record
        }
    };
    let Some(coding) = coding else { return Ok(send(req, kind, &etag, None, &plain)) };
    let record = Box::pin(coded_record(state, &plain, kind, coding)).await;
    state.documents.put(coding.key_of(version), record.clone());
    Ok(send(req, kind, &etag, Some(coding), &record))
}

/// The kept record of a plain one (when it was made, then the body) in `coding`: its open
/// compressed form. A body that will not be kept is compressed with the per-request effort
/// (it is compressed again by the next request); a large one off the async worker.
async fn coded_record(state: &AppState, plain: &Bytes, kind: Kind, coding: Coding) -> Bytes {
    let effort = if state.documents.keeps(plain.len()) { Effort::Kept } else { Effort::Dynamic };
    let compress = {
        let plain = plain.clone();
        move || {
            let (made_at, body) = plain.split_at(8);
            let sent = if kind.envelope { body.strip_suffix(b"}").unwrap_or(body) } else { body };
            Bytes::from([made_at, &encoding::open_stream(coding, sent, effort)].concat())
        }
    };
    if plain.len() <= crate::encoding::INLINE_COMPRESSION_BYTES {
        return compress();
    }
    let fallback = compress.clone();
    actix_web::web::block(compress).await.unwrap_or_else(|_| fallback())
}

/// The document's entity tag: the server's seed and the version, with the coding's suffix
/// (see [`encoding::coded_etag`]), written once into a string of the right size.
fn etag_of(seed: u64, version: u64, coding: Option<Coding>) -> String {
    let mut etag = String::with_capacity(48);
    etag.push('"');
    crate::request_id::push_hex(&mut etag, seed, 16);
    crate::request_id::push_hex(&mut etag, version, 16);
    if let Some(coding) = coding {
        etag.push('-');
        etag.push_str(coding.token());
    }
    etag.push('"');
    etag
}

/// A kept record (when it was made, then the body or its open compressed form) as the
/// answer, or `304`.
fn send(req: &HttpRequest, kind: Kind, etag: &str, coding: Option<Coding>, record: &Bytes) -> HttpResponse {
    let made_at = i64::from_le_bytes(record[..8].try_into().expect("eight bytes"));
    let last_modified = HttpDate::from(UNIX_EPOCH + Duration::from_secs(made_at.max(0) as u64));
    if is_unchanged(req, etag, made_at) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header((header::LAST_MODIFIED, last_modified.to_string()))
            .insert_header((header::VARY, "Accept-Encoding"))
            .finish();
    }
    let body = record.slice(8..);
    let trailer = if kind.envelope { reply::timestamp_trailer() } else { Vec::new() };
    let mut response = HttpResponse::Ok();
    response
        .content_type(kind.content_type)
        .insert_header((header::ETAG, etag))
        .insert_header((header::LAST_MODIFIED, last_modified.to_string()))
        .insert_header((header::VARY, "Accept-Encoding"));
    let parts = match coding {
        Some(coding) => {
            response.insert_header((header::CONTENT_ENCODING, coding.token()));
            encoding::close_shared(coding, &body, &trailer)
        }
        None if kind.envelope => {
            (body.slice(..body.len() - usize::from(body.ends_with(b"}"))), Bytes::from(trailer))
        }
        None => (body, Bytes::new()),
    };
    response.body(Concatenated::new(parts))
}

/// `If-None-Match` naming the ETag (weakly), or, without one, `If-Modified-Since` at or
/// after when the document was made.
fn is_unchanged(req: &HttpRequest, etag: &str, made_at: i64) -> bool {
    let headers = req.headers();
    if let Some(tags) = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        return reply::none_match_names(tags, etag);
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok()?.parse::<HttpDate>().ok())
        .and_then(|since| std::time::SystemTime::from(since).duration_since(UNIX_EPOCH).ok())
        .is_some_and(|since| since.as_secs() as i64 >= made_at)
}

/// The content version of `state`'s whole site.
pub fn site_version(state: &AppState) -> u64 {
    state.cms.content_version(None)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::Arc;

    use actix_web::http::header;
    use actix_web::test::TestRequest;
    use actix_web::{body, web};
    use cms_core::testing::{MemoryWorld, SITE_YAML};

    use super::{RSS, answer};
    use crate::AppState;

    #[test]
    fn a_documents_etag_is_the_plain_one_with_the_codings_suffix() {
        let plain = format!("\"{:016x}{:016x}\"", 7_u64, u64::MAX);
        assert_eq!(super::etag_of(7, u64::MAX, None), plain);
        for coding in crate::encoding::Coding::ALL {
            assert_eq!(
                super::etag_of(7, u64::MAX, Some(coding)),
                crate::encoding::coded_etag(&plain, Some(coding))
            );
        }
    }

    #[actix_web::test]
    async fn a_burst_of_requests_makes_a_document_once() {
        let cms = Arc::new(MemoryWorld::new().cms_with(SITE_YAML));
        let state = web::Data::new(AppState::new(cms, Vec::new(), 1 << 16, 1 << 16));
        let made = Cell::new(0);
        let body = "<rss>".to_owned() + &"<item>a feed's item</item>".repeat(200) + "</rss>";
        let requests: Vec<_> = (0..8)
            .map(|_| {
                TestRequest::get()
                    .app_data(state.clone())
                    .insert_header((header::ACCEPT_ENCODING, "gzip"))
                    .to_http_request()
            })
            .collect();
        let answers = futures_util::future::join_all(requests.iter().map(|req| {
            answer(
                req,
                || 7,
                RSS,
                || async {
                    made.set(made.get() + 1);
                    // Let the other requests come in while this one makes it.
                    actix_web::rt::task::yield_now().await;
                    Ok(body.clone().into_bytes())
                },
            )
        }))
        .await;
        assert_eq!(made.get(), 1, "made once, then found kept by the others");
        let mut bodies = Vec::new();
        for answer in answers {
            let answer = answer.unwrap();
            assert_eq!(answer.status(), 200);
            assert_eq!(answer.headers().get(header::CONTENT_ENCODING).unwrap(), "gzip");
            bodies.push(body::to_bytes(answer.into_body()).await.unwrap());
        }
        assert!(bodies.windows(2).all(|pair| pair[0] == pair[1]), "the same bytes for every request");
    }
}
