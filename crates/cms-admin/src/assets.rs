//! The stylesheet, the script and the icon, embedded in the binary.

use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use ring::digest;

const STYLESHEET: &str = include_str!("../assets/admin.css");
const SCRIPT: &str = include_str!("../assets/admin.js");
const ICON: &str = include_str!("../assets/icon.svg");

/// A digest of the assets, put in their URLs (`?v=`), so a new build is fetched at once
/// while an unchanged one is cached.
pub static VERSION: LazyLock<String> = LazyLock::new(|| {
    let mut context = digest::Context::new(&digest::SHA256);
    for asset in [STYLESHEET, SCRIPT, ICON] {
        context.update(asset.as_bytes());
    }
    hex::encode(&context.finish().as_ref()[..6])
});

/// `GET /admin/assets/{name}`
pub async fn serve(name: web::Path<String>) -> HttpResponse {
    let (body, content_type) = match name.as_str() {
        "admin.css" => (STYLESHEET, "text/css; charset=utf-8"),
        "admin.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "icon.svg" => (ICON, "image/svg+xml"),
        _ => return HttpResponse::NotFound().content_type("text/plain").body("no such asset"),
    };
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .body(body)
}
