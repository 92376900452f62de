//! JSON request bodies: content type, size limit and parsing, with errors in the route's
//! shape (actix's own JSON extractor answers in its own format).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, web};
use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::error::{ApiError, Shape};

/// Reads the whole body as a JSON object within `limit` bytes.
pub async fn json_object(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
    shape: Shape,
) -> Result<Map<String, Value>, ApiError> {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mime = content_type.split(';').next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("application/json") {
        return Err(ApiError::unsupported_media_type(
            shape,
            format!("send the body as JSON with Content-Type: application/json (got {content_type:?})"),
            "application/json",
            req.method() == actix_web::http::Method::PATCH,
        ));
    }
    let bytes = read_limited(req, payload, limit, shape).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(bad_request(
            shape,
            format!("the body must be a JSON object, got {}", cms_core::codec::json_type_name(&other)),
        )),
        Err(e) => Err(bad_request(shape, format!("malformed JSON body: {e}"))),
    }
}

/// Reads the whole body, refusing more than `limit` bytes (`413`) whether or not the
/// client declared a `Content-Length`.
async fn read_limited(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
    shape: Shape,
) -> Result<web::BytesMut, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            shape,
            format!("the body is over the limit of {limit} bytes"),
        )
    };
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut bytes = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, shape, format!("cannot read the body: {e}"))
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Request parameters sent as a body: a JSON object of scalars or a urlencoded form. An
/// empty body without a content type gives no parameters. Values become strings, as if
/// they had come in the query string.
pub async fn form_or_json_params(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
    shape: Shape,
) -> Result<HashMap<String, String>, ApiError> {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match mime.as_str() {
        "application/json" => {
            let mut params = HashMap::new();
            for (key, value) in json_object(req, payload, limit, shape).await? {
                let text = match value {
                    Value::Null => continue,
                    Value::String(s) => s,
                    Value::Number(n) => number_text(&n),
                    Value::Bool(b) => b.to_string(),
                    other => {
                        return Err(bad_request(
                            shape,
                            format!(
                                "{key} must be a string or a number, got {}",
                                cms_core::codec::json_type_name(&other)
                            ),
                        ));
                    }
                };
                params.insert(key, text);
            }
            Ok(params)
        }
        "application/x-www-form-urlencoded" | "" => {
            let bytes = read_limited(req, payload, limit, shape).await?;
            if mime.is_empty() && !bytes.is_empty() {
                return Err(unsupported(shape, content_type));
            }
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| bad_request(shape, "the form body is not UTF-8 text"))?;
            web::Query::<HashMap<String, String>>::from_query(text)
                .map(web::Query::into_inner)
                .map_err(|e| bad_request(shape, format!("malformed form body: {e}")))
        }
        _ => Err(unsupported(shape, content_type)),
    }
}

/// A JSON number as a query string would carry it: a whole number written with a zero
/// fraction (`2.0`, `1e3`) as the integer it is (JSON Schema counts it an `integer` too),
/// anything else as written.
fn number_text(n: &serde_json::Number) -> String {
    match whole_number(n) {
        Some(whole) => whole.to_string(),
        None => n.to_string(),
    }
}

/// The value of a JSON number that is a whole number, whether written `2` or `2.0`.
fn whole_number(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    // Within ±2^64 an f64 with no fraction converts exactly.
    n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 18_446_744_073_709_551_616.0).map(|f| f as i128)
}

fn unsupported(shape: Shape, content_type: &str) -> ApiError {
    ApiError::unsupported_media_type(
        shape,
        format!(
            "send the parameters as JSON (Content-Type: application/json) or as a form (application/x-www-form-urlencoded), got {content_type:?}"
        ),
        "application/json, application/x-www-form-urlencoded",
        false,
    )
}

pub fn bad_request(shape: Shape, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, shape, message)
}

/// Typed access to the fields of a JSON object body, with messages that name the field.
pub struct Fields {
    map: Map<String, Value>,
    shape: Shape,
}

impl Fields {
    /// Refuses fields outside `allowed`, so that a misspelt field is not silently ignored.
    pub fn new(map: Map<String, Value>, allowed: &[&str], shape: Shape) -> Result<Self, ApiError> {
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(bad_request(
                shape,
                format!("unknown field {unknown:?}; the fields are {}", allowed.join(", ")),
            ));
        }
        Ok(Self { map, shape })
    }

    fn wrong(&self, field: &str, wanted: &str, got: &Value) -> ApiError {
        bad_request(
            self.shape,
            format!("{field} must be {wanted}, got {}", cms_core::codec::json_type_name(got)),
        )
    }

    pub fn string(&mut self, field: &str) -> Result<Option<String>, ApiError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(field, "a string", &other)),
        }
    }

    pub fn boolean(&mut self, field: &str) -> Result<Option<bool>, ApiError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.wrong(field, "true or false", &other)),
        }
    }

    /// A non-negative integer index (a resource folder), as its decimal text.
    pub fn index(&mut self, field: &str) -> Result<Option<String>, ApiError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if whole_number(&n).is_some_and(|w| u64::try_from(w).is_ok()) => {
                Ok(whole_number(&n).map(|w| w.to_string()))
            }
            Some(other) => Err(self.wrong(field, "a whole number of 0 or more", &other)),
        }
    }

    /// A whole number of 1 or more.
    pub fn positive_integer(&mut self, field: &str) -> Result<Option<u64>, ApiError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            // 4712.0 is a whole number too (JSON does not tell them apart).
            Some(Value::Number(n))
                if whole_number(&n).is_some_and(|w| w >= 1 && u64::try_from(w).is_ok()) =>
            {
                Ok(whole_number(&n).and_then(|w| u64::try_from(w).ok()))
            }
            Some(other) => Err(self.wrong(field, "a whole number of 1 or more", &other)),
        }
    }

    /// A string field that must be present.
    pub fn required_string(&mut self, field: &str) -> Result<String, ApiError> {
        self.string(field)?.ok_or_else(|| bad_request(self.shape, format!("{field} is required")))
    }

    pub fn object(&mut self, field: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(self.wrong(field, "an object", &other)),
        }
    }
}
