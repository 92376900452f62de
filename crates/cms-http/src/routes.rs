//! The route table: the one list of every route ([`crate::router`] registers it and
//! answers `405` with the right `Allow`). A test in [`crate::openapi`] holds it, and the public file URLs, to the
//! OpenAPI document, which describes the API at `GET /cms/` and `GET /cms/openapi.json`.

use actix_web::Route;

use crate::handlers::{
    discovery, events, git, items, metrics, previews, resources, search, service, settings, translations,
    versions,
};

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

/// One route: what clients see of it, and how its handler is attached.
#[derive(Clone, Copy)]
pub struct RouteInfo {
    pub method: &'static str,
    pub path: &'static str,
    pub auth: Auth,
    pub(crate) attach: fn(Route) -> Route,
}

const fn route(
    method: &'static str,
    path: &'static str,
    auth: Auth,
    attach: fn(Route) -> Route,
) -> RouteInfo {
    RouteInfo { method, path, auth, attach }
}

pub const SEARCH_INDEX: &str = "/cms/collections/search-index";
pub const SEARCH: &str = "/cms/search";
pub const LEGACY_ITEMS: &str = "/cms/collections/items";
pub const LEGACY_ITEM: &str = "/cms/collections/items/{slug}";
pub const TAGS: &str = "/cms/tags";
pub const TAG_ITEMS: &str = "/cms/tags/{tag}/items";
pub const RSS: &str = "/cms/collections/{collection}/rss";
pub const SITEMAP: &str = "/cms/collections/{collection}/sitemap";
pub const SCHEMA: &str = "/cms/collections/{collection}/schema";
pub const RELATED: &str = "/cms/items/related";
pub const ITEM_ANYWHERE: &str = "/cms/items/{slug}";
pub const ITEMS: &str = "/cms/collections/{collection}/items";
pub const ITEM: &str = "/cms/collections/{collection}/items/{slug}";
pub const ITEM_RAW: &str = "/cms/collections/{collection}/items/{slug}/raw";
pub const ITEM_TRANSLATION: &str = "/cms/collections/{collection}/items/{slug}/translations/{lang}";
pub const ITEM_SOURCE_DIFF: &str = "/cms/collections/{collection}/items/{slug}/source-diff";
pub const ITEM_PREVIEW: &str = "/cms/collections/{collection}/items/{slug}/preview";
pub const PREVIEW: &str = "/cms/preview/{token}";
pub const VERSIONS: &str = "/cms/collections/{collection}/items/{slug}/versions";
pub const VERSION: &str = "/cms/collections/{collection}/items/{slug}/versions/{version}";
pub const RESTORE: &str = "/cms/collections/{collection}/items/{slug}/versions/{version}/restore";
pub const RESOURCES: &str = "/cms/resources";
pub const RESOURCE_FOLDERS: &str = "/cms/resources/folders";
pub const EVENTS: &str = "/cms/events";
pub const EVENT_TOKENS: &str = "/cms/events/tokens";
/// A site kept in git pulls now (a forge's push webhook, with the secret of `cms.yaml`).
pub const GIT_PULL: &str = "/cms/git/pull";
/// Health probes: they answer without a license and while the site is indexed.
pub const LIVEZ: &str = "/livez";
pub const READYZ: &str = "/readyz";
/// Prometheus metrics: off unless `metrics:` of `cms.yaml` says who may read them.
pub const METRICS: &str = "/metrics";

/// Every route of the server, grouped by path. Paths are matched in the order they first
/// appear here ([`crate::router`]), so fixed paths come before patterns that could capture
/// them (`/cms/items/related` before `/cms/items/{slug}`). The list route's collection is
/// never `items`, which leaves `/cms/collections/items/items` to the legacy read of slug
/// `items`; the feeds come after the legacy read, so that `/cms/collections/items/rss`
/// stays the read of slug `rss`.
pub const ROUTES: &[RouteInfo] = &[
    route("GET", "/", Auth::None, |r| r.to(service::status)),
    route("GET", "/status", Auth::None, |r| r.to(service::status)),
    route("GET", LIVEZ, Auth::None, |r| r.to(service::livez)),
    route("GET", READYZ, Auth::None, |r| r.to(service::readyz)),
    route("GET", METRICS, Auth::None, |r| r.to(metrics::scrape_with_token)),
    route("GET", "/cms/", Auth::Required, |r| r.to(service::describe)),
    route("GET", "/cms/openapi.json", Auth::None, |r| r.to(service::openapi_json)),
    route("GET", "/cms/collections", Auth::Optional, |r| r.to(service::collections)),
    route("GET", SEARCH_INDEX, Auth::Optional, |r| r.to(discovery::search_index)),
    route("GET", LEGACY_ITEMS, Auth::Optional, |r| r.to(discovery::legacy_list_get)),
    route("POST", LEGACY_ITEMS, Auth::Optional, |r| r.to(discovery::legacy_list_post)),
    route("GET", ITEM, Auth::Optional, |r| r.to(items::read)),
    route("PUT", ITEM, Auth::Required, |r| r.to(items::put)),
    route("PATCH", ITEM, Auth::Required, |r| r.to(items::patch)),
    route("DELETE", ITEM, Auth::Required, |r| r.to(items::delete)),
    route("GET", ITEMS, Auth::Optional, |r| r.to(items::list)),
    route("POST", ITEMS, Auth::Required, |r| r.to(items::create)),
    route("GET", LEGACY_ITEM, Auth::Optional, |r| r.to(discovery::legacy_read)),
    route("GET", RSS, Auth::Optional, |r| r.to(discovery::rss)),
    route("GET", SITEMAP, Auth::Optional, |r| r.to(discovery::sitemap)),
    route("GET", SCHEMA, Auth::Optional, |r| r.to(service::collection_schema)),
    route("GET", SEARCH, Auth::Optional, |r| r.to(search::search)),
    route("GET", TAGS, Auth::Optional, |r| r.to(discovery::tags)),
    route("GET", TAG_ITEMS, Auth::Optional, |r| r.to(discovery::tag_items)),
    route("GET", RELATED, Auth::Optional, |r| r.to(discovery::related)),
    route("GET", ITEM_ANYWHERE, Auth::Optional, |r| r.to(discovery::read_anywhere)),
    route("GET", ITEM_RAW, Auth::Required, |r| r.to(items::raw)),
    route("POST", ITEM_TRANSLATION, Auth::Required, |r| r.to(translations::translate)),
    route("GET", ITEM_SOURCE_DIFF, Auth::Required, |r| r.to(translations::source_diff)),
    route("POST", ITEM_PREVIEW, Auth::Required, |r| r.to(previews::create)),
    route("GET", PREVIEW, Auth::None, |r| r.to(previews::read)),
    route("GET", VERSIONS, Auth::Required, |r| r.to(versions::list)),
    route("GET", VERSION, Auth::Required, |r| r.to(versions::read)),
    route("POST", RESTORE, Auth::Required, |r| r.to(versions::restore)),
    route("GET", RESOURCES, Auth::Required, |r| r.to(resources::list)),
    route("POST", RESOURCES, Auth::Required, |r| r.to(resources::upload)),
    route("PATCH", RESOURCES, Auth::Required, |r| r.to(resources::rename_or_move)),
    route("DELETE", RESOURCES, Auth::Required, |r| r.to(resources::delete)),
    route("POST", RESOURCE_FOLDERS, Auth::Required, |r| r.to(resources::create_folder)),
    route("GET", EVENTS, Auth::Optional, |r| r.to(events::stream)),
    route("POST", EVENT_TOKENS, Auth::Required, |r| r.to(events::create_token)),
    route("POST", GIT_PULL, Auth::None, |r| r.to(git::pull)),
    route("GET", "/cms/settings/theme", Auth::Required, |r| r.to(settings::theme)),
    route("PUT", "/cms/settings/theme", Auth::Required, |r| r.to(settings::update_theme)),
    route("GET", "/cms/settings/users", Auth::Required, |r| r.to(settings::users)),
    route("GET", "/cms/settings/webhooks", Auth::Required, |r| r.to(settings::webhooks)),
];

/// The method of the public file URLs (`HEAD` comes with it, as everywhere).
pub const FILE_ROUTE_METHOD: &str = "GET";

pub use crate::openapi::file_path;
