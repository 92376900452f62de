//! The `/cms/…` routes of [`ROUTES`], matched segment by segment.
//!
//! actix-web matches a path with a parameter by a regular expression, tried route by
//! route, with captures allocated for each try: an RSS feed's path went through four
//! before its own, about 5% of a kept feed's CPU. Here each path of the table is split
//! into segments once; a request's path is compared with them segment by segment, in the
//! table's order (the first match wins, as with actix's resources), with no regular
//! expression and no allocation but the values captured. The parameters go into the
//! request's match info, so handlers extract them with `web::Path` as before.
//!
//! actix registers this as one service at the prefix [`PREFIX`] (a plain string
//! comparison); paths outside it (`/`, `/status`) stay actix resources.

use std::ops::Range;
use std::sync::{Arc, LazyLock};

use actix_web::dev::{
    AppService, HttpServiceFactory, ResourceDef, Service, ServiceFactory, ServiceRequest, ServiceResponse,
};
use actix_web::http::Method;
use actix_web::{Error, HttpRequest, Route, web};
use futures_util::future::LocalBoxFuture;

use crate::handlers::{media, service};
use crate::routes::{ITEMS, ROUTES, RouteInfo};

/// Every path the router serves starts with this.
pub const PREFIX: &str = "/cms/";

/// The most parameters a path of the table has (a version: collection, slug, version).
const MAX_PARAMS: usize = 4;

#[derive(Debug, PartialEq, Eq)]
enum Segment {
    Literal(&'static str),
    /// A non-empty segment, captured under this name.
    Param(&'static str),
}

/// A path of the table, split into its segments.
#[derive(Debug)]
pub struct Pattern {
    pub path: &'static str,
    segments: Vec<Segment>,
    /// A value a parameter may not take: the list route's collection is never `items`,
    /// so that `/cms/collections/items/items` is the legacy read of slug `items`, though
    /// the list route comes first.
    refused: Option<(&'static str, &'static str)>,
}

impl Pattern {
    fn new(path: &'static str) -> Self {
        let segments = path
            .strip_prefix('/')
            .expect("the route table's paths start with /")
            .split('/')
            .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name),
                None => Segment::Literal(segment),
            })
            .collect();
        let refused = (path == ITEMS).then_some(("collection", "items"));
        Self { path, segments, refused }
    }

    /// The byte ranges of the parameters' values in `path`, if it matches.
    #[cfg(test)]
    fn captures(&self, path: &str) -> Option<Captures> {
        self.captures_in(&Parts::of(path)?)
    }

    fn captures_in(&self, parts: &Parts<'_>) -> Option<Captures> {
        if parts.len != self.segments.len() {
            return None;
        }
        let mut captured = Captures::default();
        for (segment, (part, start)) in self.segments.iter().zip(parts.iter()) {
            match segment {
                Segment::Literal(literal) if *literal == part => {}
                Segment::Literal(_) => return None,
                Segment::Param(_) if part.is_empty() => return None,
                Segment::Param(name) => {
                    if self.refused == Some((name, part)) {
                        return None;
                    }
                    captured.push(name, start..start + part.len());
                }
            }
        }
        Some(captured)
    }
}

/// The most segments a path of the table has (a restore: `cms/collections/{collection}/
/// items/{slug}/versions/{version}/restore`).
const MAX_SEGMENTS: usize = 8;

/// A request's path split at its slashes once, for every pattern to compare with.
struct Parts<'a> {
    /// Each segment and where it starts in the path.
    segments: [(&'a str, usize); MAX_SEGMENTS],
    len: usize,
}

impl<'a> Parts<'a> {
    /// `None` for a path with more segments than any pattern has.
    fn of(path: &'a str) -> Option<Self> {
        if !path.starts_with('/') {
            return None;
        }
        let mut parts = Self { segments: [("", 0); MAX_SEGMENTS], len: 0 };
        let mut start = 1;
        // A byte loop: paths are short, and `str::split`'s searcher cost more than the
        // comparisons (a `/` byte is never inside a UTF-8 character).
        for (at, byte) in path.bytes().enumerate().skip(1).chain([(path.len(), b'/')]) {
            if byte == b'/' {
                *parts.segments.get_mut(parts.len)? = (&path[start..at], start);
                parts.len += 1;
                start = at + 1;
            }
        }
        Some(parts)
    }

    fn iter(&self) -> impl Iterator<Item = (&'a str, usize)> + '_ {
        self.segments[..self.len].iter().copied()
    }
}

/// The parameters of one match, without allocating.
#[derive(Default)]
struct Captures {
    values: [(&'static str, Range<usize>); MAX_PARAMS],
    len: usize,
}

impl Captures {
    fn push(&mut self, name: &'static str, range: Range<usize>) {
        self.values[self.len] = (name, range);
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &(&'static str, Range<usize>)> {
        self.values[..self.len].iter()
    }
}

/// The table's paths under [`PREFIX`], each once, in the order they first appear.
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let mut patterns: Vec<Pattern> = Vec::new();
    for info in ROUTES.iter().filter(|info| info.path.starts_with(PREFIX)) {
        if !patterns.iter().any(|pattern| pattern.path == info.path) {
            patterns.push(Pattern::new(info.path));
        }
    }
    patterns
});

/// The path of the table that `path` (as actix routes it: percent-decoded but for
/// reserved characters) matches, if any.
pub fn route_of(path: &str) -> Option<&'static str> {
    let parts = Parts::of(path)?;
    PATTERNS.iter().find(|pattern| pattern.captures_in(&parts).is_some()).map(|pattern| pattern.path)
}

/// The service factory registered at [`PREFIX`].
pub struct CmsRoutes;

impl HttpServiceFactory for CmsRoutes {
    fn register(self, config: &mut AppService) {
        let prefix = PREFIX.trim_end_matches('/');
        let rdef =
            if config.is_root() { ResourceDef::root_prefix(prefix) } else { ResourceDef::prefix(prefix) };
        config.register_service(rdef, None, self, None);
    }
}

type Handler = <Route as ServiceFactory<ServiceRequest>>::Service;

/// One path's handlers by method, and what a `405` says it allows.
struct Entry {
    methods: Vec<(Method, Handler)>,
    allow: Arc<str>,
}

pub struct CmsRouter {
    /// In the order of [`PATTERNS`].
    entries: Vec<Entry>,
    not_found: Handler,
}

impl ServiceFactory<ServiceRequest> for CmsRoutes {
    type Response = ServiceResponse;
    type Error = Error;
    type Config = ();
    type Service = CmsRouter;
    type InitError = ();
    type Future = LocalBoxFuture<'static, Result<CmsRouter, ()>>;

    fn new_service(&self, _: ()) -> Self::Future {
        Box::pin(async {
            let mut entries = Vec::with_capacity(PATTERNS.len());
            for pattern in PATTERNS.iter() {
                let routes: Vec<&RouteInfo> = ROUTES.iter().filter(|r| r.path == pattern.path).collect();
                let mut methods = Vec::with_capacity(routes.len());
                for info in routes {
                    let method =
                        Method::from_bytes(info.method.as_bytes()).expect("valid method in the route table");
                    methods.push((method, (info.attach)(web::route()).new_service(()).await?));
                }
                entries.push(Entry { allow: allow_header(&methods), methods });
            }
            let not_found = web::to(service::not_found).new_service(()).await?;
            Ok(CmsRouter { entries, not_found })
        })
    }
}

/// The methods of a path, `HEAD` wherever `GET` is.
fn allow_header(methods: &[(Method, Handler)]) -> Arc<str> {
    let mut allowed: Vec<&str> = methods.iter().map(|(method, _)| method.as_str()).collect();
    if allowed.contains(&"GET") {
        allowed.push("HEAD");
    }
    allowed.join(", ").into()
}

impl Service<ServiceRequest> for CmsRouter {
    type Response = ServiceResponse;
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<ServiceResponse, Error>>;

    actix_web::dev::always_ready!();

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        let found = Parts::of(req.match_info().as_str()).and_then(|parts| {
            let mut patterns = PATTERNS.iter().zip(&self.entries);
            patterns.find_map(|(pattern, entry)| Some((pattern.path, entry, pattern.captures_in(&parts)?)))
        });
        let Some((route, entry, captured)) = found else { return self.not_found.call(req) };
        // The template, for the metrics' labels and the access log (never the path), when
        // either is on.
        let shared = crate::state::of(req.request());
        if shared.counting || shared.access_log.is_some() {
            actix_web::HttpMessage::extensions_mut(&req).insert(crate::metrics::MatchedRoute(route));
        }
        let info = req.match_info_mut();
        for (name, range) in captured.iter() {
            let value = info.as_str()[range.clone()].to_owned();
            info.add_static(*name, value);
        }
        let method = req.method();
        let handler = entry.methods.iter().find(|(m, _)| m == method).or_else(|| {
            // `HEAD` wherever `GET` is (actix sends the head of the `GET` answer).
            let head = *method == Method::HEAD;
            head.then(|| entry.methods.iter().find(|(m, _)| *m == Method::GET)).flatten()
        });
        match handler {
            Some((_, handler)) => handler.call(req),
            None => {
                let response = service::method_not_allowed(req.request(), &entry.allow);
                Box::pin(std::future::ready(Ok(req.into_response(response))))
            }
        }
    }
}

/// Registers [`ROUTES`]: the paths under [`PREFIX`] as one service that matches
/// them by segments (this module), the others as actix resources; `HEAD` wherever `GET` is,
/// and a `405` (in the envelope, with `Allow`) for every other method.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let mut paths: Vec<&'static str> = Vec::new();
    for info in ROUTES.iter().filter(|info| !info.path.starts_with(PREFIX)) {
        if !paths.contains(&info.path) {
            paths.push(info.path);
        }
    }
    for path in paths {
        let routes: Vec<&RouteInfo> = ROUTES.iter().filter(|r| r.path == path).collect();
        let mut allowed: Vec<&str> = routes.iter().map(|r| r.method).collect();
        if allowed.contains(&"GET") {
            allowed.push("HEAD");
        }
        let allow: Arc<str> = allowed.join(", ").into();
        let mut resource = web::resource(path).default_service(web::to(move |req: HttpRequest| {
            let allow = Arc::clone(&allow);
            async move { service::method_not_allowed(&req, &allow) }
        }));
        for info in routes {
            let method = Method::from_bytes(info.method.as_bytes()).expect("valid method in the route table");
            if method == Method::GET {
                resource = resource.route((info.attach)(web::route().method(Method::HEAD)));
            }
            resource = resource.route((info.attach)(web::route().method(method)));
        }
        cfg.service(resource);
    }
    cfg.service(CmsRoutes);
}

/// Registers the public file URLs of the resource folders ([`crate::routes::file_path`], `GET`/`HEAD`,
/// no key). They depend on the site's configuration, so they are not in [`ROUTES`]; the
/// document served for a site lists them ([`crate::openapi::document_for`]).
pub fn configure_files(cfg: &mut web::ServiceConfig, folders: &[(usize, String)]) {
    for (index, url) in folders {
        let index = *index;
        let serve = move |state, req, tail| media::serve(state, req, tail, index);
        cfg.service(
            web::resource(format!("{url}/{{path:.+}}"))
                .route(web::get().to(serve))
                .route(web::head().to(serve))
                .default_service(web::to(|req: HttpRequest| async move {
                    service::method_not_allowed(&req, "GET, HEAD")
                })),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_PARAMS, MAX_SEGMENTS, PATTERNS, Parts, Pattern, Segment, route_of};
    use crate::routes::{ITEM, ITEMS, LEGACY_ITEM, PREVIEW, RESTORE, RSS, SEARCH_INDEX};

    #[test]
    fn a_path_is_split_into_literals_and_parameters() {
        let pattern = Pattern::new(ITEM);
        assert_eq!(
            pattern.segments,
            [
                Segment::Literal("cms"),
                Segment::Literal("collections"),
                Segment::Param("collection"),
                Segment::Literal("items"),
                Segment::Param("slug"),
            ]
        );
        let path = "/cms/collections/posts/items/hello-world";
        let captured = pattern.captures(path).expect("matches");
        let values: Vec<(&str, &str)> =
            captured.iter().map(|(name, range)| (*name, &path[range.clone()])).collect();
        assert_eq!(values, [("collection", "posts"), ("slug", "hello-world")]);
    }

    #[test]
    fn every_path_of_the_table_fits_the_fixed_sizes() {
        assert!(PATTERNS.len() > 20, "the /cms/ paths of the table");
        for pattern in PATTERNS.iter() {
            assert!(pattern.segments.len() <= MAX_SEGMENTS, "{}", pattern.path);
            let params = pattern.segments.iter().filter(|s| matches!(s, Segment::Param(_))).count();
            assert!(params <= MAX_PARAMS, "{}", pattern.path);
        }
        assert_eq!(route_of("/cms/collections/a/items/b/versions/1/restore/x"), None, "too many segments");
    }

    #[test]
    fn a_path_splits_as_str_split_would() {
        for path in
            ["/", "/cms", "/cms/", "//", "/cms//x/", "/cms/collections/café/items/é-1", "/a/b/c/d/e/f/g/h"]
        {
            let parts = Parts::of(path).expect(path);
            let split: Vec<&str> = path[1..].split('/').collect();
            assert_eq!(parts.iter().map(|(part, _)| part).collect::<Vec<_>>(), split, "{path}");
            for (part, start) in parts.iter() {
                assert_eq!(&path[start..start + part.len()], part, "{path}");
            }
        }
        assert!(Parts::of("cms/").is_none() && Parts::of("").is_none());
        assert!(Parts::of("/a/b/c/d/e/f/g/h/i").is_none(), "more segments than any pattern");
    }

    #[test]
    fn segments_must_all_match_and_parameters_be_non_empty() {
        let pattern = Pattern::new(ITEM);
        for path in [
            "/cms/collections/posts/items",
            "/cms/collections/posts/items/",
            "/cms/collections//items/a",
            "/cms/collections/posts/items/a/",
            "/cms/collections/posts/items/a/b",
            "/cms/collections/posts/item/a",
            "cms/collections/posts/items/a",
            "",
        ] {
            assert!(pattern.captures(path).is_none(), "{path}");
        }
        assert!(Pattern::new("/cms/").captures("/cms/").is_some());
        assert!(Pattern::new("/cms/").captures("/cms").is_none());
    }

    #[test]
    fn the_list_route_matches_every_collection_segment_but_items() {
        let pattern = Pattern::new(ITEMS);
        for segment in ["posts", "i", "item", "itemss", "Items", "x-items", "0"] {
            let path = format!("/cms/collections/{segment}/items");
            assert!(pattern.captures(&path).is_some(), "{path}");
            assert_eq!(route_of(&path), Some(ITEMS), "{path}");
        }
        assert!(pattern.captures("/cms/collections/items/items").is_none());
    }

    #[test]
    fn the_first_path_of_the_table_that_matches_wins() {
        for (path, route) in [
            ("/cms/collections/items/items", Some(LEGACY_ITEM)),
            ("/cms/collections/items/rss", Some(LEGACY_ITEM)),
            ("/cms/collections/posts/rss", Some(RSS)),
            ("/cms/collections/search-index", Some(SEARCH_INDEX)),
            ("/cms/collections/items/items/a", Some(ITEM)),
            ("/cms/collections/a/items/b/versions/1/restore", Some(RESTORE)),
            ("/cms/preview/abc", Some(PREVIEW)),
            ("/cms/items/related", Some(crate::routes::RELATED)),
            ("/cms/items/related-post", Some(crate::routes::ITEM_ANYWHERE)),
            ("/cms/collections/posts", None),
            ("/cms", None),
        ] {
            assert_eq!(route_of(path), route, "{path}");
        }
    }
}
