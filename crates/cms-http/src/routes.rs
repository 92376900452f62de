//! The route table: one list that registers the routes and describes them (`GET /cms/`).

use actix_web::{HttpRequest, web};

use crate::handlers::{items, service, versions};

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// No key needed.
    None,
    /// Key optional for same-server calls; cross-origin clients send one.
    Optional,
    /// A valid key is required.
    Required,
}

impl Auth {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// One route as clients see it.
#[derive(Debug, Clone, Copy)]
pub struct RouteInfo {
    pub method: &'static str,
    pub path: &'static str,
    pub auth: Auth,
}

const fn route(method: &'static str, path: &'static str, auth: Auth) -> RouteInfo {
    RouteInfo { method, path, auth }
}

pub const ITEMS: &str = "/cms/collections/{collection}/items";
pub const ITEM: &str = "/cms/collections/{collection}/items/{slug}";
pub const ITEM_RAW: &str = "/cms/collections/{collection}/items/{slug}/raw";
pub const VERSIONS: &str = "/cms/collections/{collection}/items/{slug}/versions";
pub const VERSION: &str = "/cms/collections/{collection}/items/{slug}/versions/{version}";
pub const RESTORE: &str = "/cms/collections/{collection}/items/{slug}/versions/{version}/restore";

/// Every route of the server. [`configure`] registers exactly these (a test checks it).
pub const ROUTES: &[RouteInfo] = &[
    route("GET", "/", Auth::None),
    route("GET", "/status", Auth::None),
    route("GET", "/cms/", Auth::Required),
    route("GET", "/cms/collections", Auth::Optional),
    route("GET", ITEMS, Auth::Optional),
    route("POST", ITEMS, Auth::Required),
    route("GET", ITEM, Auth::Optional),
    route("PUT", ITEM, Auth::Required),
    route("PATCH", ITEM, Auth::Required),
    route("DELETE", ITEM, Auth::Required),
    route("GET", ITEM_RAW, Auth::Required),
    route("GET", VERSIONS, Auth::Required),
    route("GET", VERSION, Auth::Required),
    route("POST", RESTORE, Auth::Required),
];

/// Methods allowed on a path, for `Allow` headers of `405` answers.
fn allow(path: &str) -> &'static str {
    match path {
        ITEMS => "GET, POST",
        ITEM => "GET, PUT, PATCH, DELETE",
        RESTORE => "POST",
        _ => "GET",
    }
}

/// A resource whose unmatched methods answer `405` in the envelope.
fn resource(path: &'static str) -> actix_web::Resource {
    let allowed = allow(path);
    web::resource(path).default_service(web::to(move |req: HttpRequest| async move {
        service::method_not_allowed(&req, allowed)
    }))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/").route(web::get().to(service::status)))
        .service(resource("/status").route(web::get().to(service::status)))
        .service(resource("/cms/").route(web::get().to(service::describe)))
        .service(resource("/cms/collections").route(web::get().to(service::collections)))
        .service(resource(ITEMS).route(web::get().to(items::list)).route(web::post().to(items::create)))
        .service(
            resource(ITEM)
                .route(web::get().to(items::read))
                .route(web::put().to(items::put))
                .route(web::patch().to(items::patch))
                .route(web::delete().to(items::delete)),
        )
        .service(resource(ITEM_RAW).route(web::get().to(items::raw)))
        .service(resource(VERSIONS).route(web::get().to(versions::list)))
        .service(resource(VERSION).route(web::get().to(versions::read)))
        .service(resource(RESTORE).route(web::post().to(versions::restore)));
}
