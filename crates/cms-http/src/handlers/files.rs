//! Serving resource files at their public URLs, like any static media: no key needed.
//! `ETag`/`Last-Modified` with `304`s, single `Range` requests, `nosniff`, SVG served
//! sandboxed so it cannot run script in the site's origin, and HTML and XML documents as
//! downloads.

use std::time::{Duration, UNIX_EPOCH};

use actix_web::body::SizedStream;
use actix_web::http::StatusCode;
use actix_web::http::header::{
    self, Charset, ContentDisposition, DispositionParam, DispositionType, ExtendedValue, HttpDate,
};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use cms_core::ports::ResourceReader;
use cms_core::resource::{Disposition, FilePath};
use futures_util::TryStreamExt;

use crate::encoding::{self, Effort};
use crate::error::{ApiError, Shape};
use crate::reply;
use crate::state::AppState;

/// The largest text media file sent compressed (larger ones are sent as they are, in
/// chunks, with ranges).
const MAX_COMPRESSED_MEDIA: u64 = 1 << 20;

/// The part of a file a `Range` header asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeRequest {
    Full,
    /// Inclusive byte positions.
    Part(u64, u64),
    Unsatisfiable,
}

/// Parses `bytes=a-b`, `bytes=a-` and `bytes=-n`. Several ranges, other units or a
/// malformed header are answered with the whole file, as RFC 9110 allows.
pub fn parse_range(header: Option<&str>, size: u64) -> RangeRequest {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else { return RangeRequest::Full };
    if spec.contains(',') {
        return RangeRequest::Full;
    }
    let Some((start, end)) = spec.trim().split_once('-') else { return RangeRequest::Full };
    let (start, end) = (start.trim(), end.trim());
    let parsed = match (start.parse::<u64>(), end.parse::<u64>()) {
        (Ok(s), Ok(e)) if s <= e => Some((s, e.min(size.saturating_sub(1)))),
        (Ok(s), Err(_)) if end.is_empty() => Some((s, size.saturating_sub(1))),
        (Err(_), Ok(n)) if start.is_empty() && n > 0 => {
            Some((size.saturating_sub(n), size.saturating_sub(1)))
        }
        (Err(_), Ok(0)) if start.is_empty() => return RangeRequest::Unsatisfiable,
        _ => return RangeRequest::Full,
    };
    match parsed {
        Some((s, e)) if size > 0 && s < size => RangeRequest::Part(s, e),
        _ => RangeRequest::Unsatisfiable,
    }
}

pub(super) fn not_found(path: &str) -> HttpResponse {
    ApiError::new(StatusCode::NOT_FOUND, Shape::Envelope, format!("no file at {path}")).error_response()
}

/// `GET`/`HEAD` `{folder url}/{tail}` asking for the file as stored (see [`super::media`]).
pub(super) async fn serve(
    state: web::Data<AppState>,
    req: HttpRequest,
    tail: web::Path<String>,
    folder: usize,
) -> Result<HttpResponse, ApiError> {
    let opened = state
        .run(Shape::Envelope, async {
            state.cms.open_resource(folder, &FilePath::from_url_tail(&tail)?).await
        })
        .await;
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.status == StatusCode::NOT_FOUND => return Ok(not_found(req.path())),
        Err(e) => return Err(e),
    };
    let size = file.stat.size;
    let modified = UNIX_EPOCH + Duration::from_secs(file.stat.modified.max(0) as u64);
    let last_modified = HttpDate::from(modified);
    // Text media (SVG, CSS, a JSON file) is sent compressed when the client accepts it and
    // asks for no range: a representation of its own, with its own ETag (ranges and
    // If-Range stay on the identity body).
    let compressible = encoding::is_compressible(file.content_type);
    let coding = (compressible && size <= MAX_COMPRESSED_MEDIA && !req.headers().contains_key(header::RANGE))
        .then(|| reply::accepted_coding(&req))
        .flatten();
    let etag = match coding {
        Some(coding) => format!("\"{:x}-{:x}-{}\"", size, file.stat.modified, coding.token()),
        None => format!("\"{:x}-{:x}\"", size, file.stat.modified),
    };

    let mut response = HttpResponse::build(StatusCode::OK);
    response
        .insert_header((header::CONTENT_TYPE, file.content_type))
        .insert_header((header::ETAG, etag.as_str()))
        .insert_header((header::LAST_MODIFIED, last_modified.to_string()))
        .insert_header((header::ACCEPT_RANGES, if coding.is_some() { "none" } else { "bytes" }))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if compressible {
        response.insert_header((header::VARY, "Accept-Encoding"));
    }
    if file.disposition != Disposition::Inline {
        // Shown inline, HTML or SVG could run script with the site's cookies: sandbox it.
        response.insert_header((
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:",
        ));
    }
    match file.disposition {
        Disposition::Inline => {}
        Disposition::Sandboxed => {
            response.insert_header((header::CONTENT_DISPOSITION, "inline"));
        }
        Disposition::Attachment => {
            response.insert_header(attachment(file.name.as_str()));
        }
    }

    let headers = req.headers();
    let if_none_match = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok());
    let unchanged = match if_none_match {
        Some(tags) => crate::reply::none_match_names(tags, &etag),
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok()?.parse::<HttpDate>().ok())
            .is_some_and(|since| std::time::SystemTime::from(since) >= modified),
    };
    if unchanged {
        return Ok(response.status(StatusCode::NOT_MODIFIED).finish());
    }

    if let Some(coding) = coding {
        response.insert_header((header::CONTENT_ENCODING, coding.token()));
        // At most MAX_COMPRESSED_MEDIA, read whole, then compressed on the blocking pool.
        let compressed = match file.reader.range(0..size).try_collect::<Vec<_>>().await {
            Ok(chunks) => {
                web::block(move || encoding::compress(coding, &chunks.concat(), Effort::Dynamic)).await.ok()
            }
            Err(_) => None,
        };
        return match compressed {
            Some(compressed) => Ok(response.body(compressed)),
            None => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                Shape::Envelope,
                "the file could not be read",
            )),
        };
    }
    let range_header = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    // If-Range: serve the range only if the client's copy is still current, named by its
    // strong ETag or by exactly the Last-Modified date sent (RFC 9110, 13.1.5).
    let if_range_ok = headers
        .get(header::IF_RANGE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| if_range_holds(v.trim(), &etag, &last_modified));
    let range = if if_range_ok { parse_range(range_header, size) } else { RangeRequest::Full };
    let (start, length) = match range {
        RangeRequest::Full => (0, size),
        RangeRequest::Part(start, end) => {
            response
                .status(StatusCode::PARTIAL_CONTENT)
                .insert_header((header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}")));
            (start, end - start + 1)
        }
        RangeRequest::Unsatisfiable => {
            return Ok(response
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .insert_header((header::CONTENT_RANGE, format!("bytes */{size}")))
                .finish());
        }
    };
    Ok(response.body(SizedStream::new(length, read_chunks(&*file.reader, start, length))))
}

/// Whether an `If-Range` value names the current file: its ETag (compared strongly: a weak
/// tag never holds), or an HTTP date equal to its `Last-Modified`.
pub(super) fn if_range_holds(value: &str, etag: &str, last_modified: &HttpDate) -> bool {
    if value.starts_with('"') || value.starts_with("W/") {
        return value == etag;
    }
    value.parse::<HttpDate>().is_ok_and(|date| date == *last_modified)
}

/// `attachment` with the file's name: as UTF-8 (`filename*`), and in ASCII for old clients.
fn attachment(name: &str) -> ContentDisposition {
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '_' }).collect();
    ContentDisposition {
        disposition: DispositionType::Attachment,
        parameters: vec![
            DispositionParam::Filename(ascii),
            DispositionParam::FilenameExt(ExtendedValue {
                charset: Charset::Ext("UTF-8".into()),
                language_tag: None,
                value: name.as_bytes().to_vec(),
            }),
        ],
    }
}

/// The bytes `start..start + length` of a file, streamed as the store reads them. Nothing
/// is read before the body is polled (a `HEAD` reads nothing); a failed read ends the
/// body early, which closes the connection (the status was already sent).
pub(super) fn read_chunks(
    reader: &dyn ResourceReader,
    start: u64,
    length: u64,
) -> impl futures_util::Stream<Item = Result<web::Bytes, actix_web::Error>> + use<> {
    reader.range(start..start + length).map_err(actix_web::error::ErrorInternalServerError)
}

#[cfg(test)]
mod tests {
    use super::{RangeRequest::*, parse_range};

    #[test]
    fn if_range_by_tag_or_exact_date() {
        use actix_web::http::header::HttpDate;
        let modified: HttpDate = "Wed, 21 Oct 2026 07:28:00 GMT".parse().unwrap();
        let holds = |value| super::if_range_holds(value, "\"a-1\"", &modified);
        assert!(holds("\"a-1\""));
        assert!(holds("Wed, 21 Oct 2026 07:28:00 GMT"));
        for stale in
            ["W/\"a-1\"", "\"a-2\"", "Wed, 21 Oct 2026 07:28:01 GMT", "Tue, 20 Oct 2026 07:28:00 GMT", "soon"]
        {
            assert!(!holds(stale), "{stale}");
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range(None, 10), Full);
        assert_eq!(parse_range(Some("bytes=0-3"), 10), Part(0, 3));
        assert_eq!(parse_range(Some("bytes=5-"), 10), Part(5, 9));
        assert_eq!(parse_range(Some("bytes=-4"), 10), Part(6, 9));
        assert_eq!(parse_range(Some("bytes=-40"), 10), Part(0, 9));
        assert_eq!(parse_range(Some("bytes=8-100"), 10), Part(8, 9));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=-0"), 10), Unsatisfiable);
        assert_eq!(parse_range(Some("bytes=0-1,4-5"), 10), Full);
        assert_eq!(parse_range(Some("items=0-1"), 10), Full);
        assert_eq!(parse_range(Some("bytes=5-2"), 10), Full);
        assert_eq!(parse_range(Some("bytes=0-0"), 0), Unsatisfiable);
    }
}
