//! The headers of every editor answer.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;

/// Scripts, styles and everything else from this server only: no inline script or style
/// (the pages carry none), no plugins, no framing, forms posted only here. Images may also
/// come from `https:` (an item's Markdown may show them in the preview) and `data:`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: https:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// Adds the security headers; pages are never cached (they show keys once, and drafts),
/// assets are (they are versioned by their URL).
pub async fn headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let is_asset = req.path().starts_with("/admin/assets/");
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    let set = |headers: &mut header::HeaderMap, name: HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(headers, HeaderName::from_static("cross-origin-opener-policy"), "same-origin");
    if !is_asset {
        set(headers, header::CACHE_CONTROL, "no-store");
    }
    Ok(response)
}
