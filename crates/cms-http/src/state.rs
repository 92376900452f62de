use std::sync::Arc;

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};

use cms_core::Cms;
use cms_core::error::CoreResult;
use cms_core::host_policy::RequestOrigin;
use cms_core::ports::RenderCache;

use crate::error::{ApiError, Shape};

/// Budget of the serialized-answer cache: about 3,000 list pages (or 10,000 items when a
/// server keeps no answers on disk). Kept answers are found before anything else is done
/// (`reply::kept_page`, `kept_item`).
const BODY_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Budget of the documents' cache (feeds, sitemaps, search indexes, `openapi.json`), and
/// the share of it one document may take: up to 16 MiB is kept, so that the default
/// sitemap of 50,000 URLs (about 7 MB) is made and compressed once per change, not per
/// request.
const DOCUMENT_CACHE_BYTES: usize = 64 * 1024 * 1024;
const DOCUMENT_SHARE: usize = 4;

/// Public answers may be stored by any cache, which asks again (cheaply, with the ETag)
/// before each use.
const PUBLIC_NO_CACHE: &str = "public, no-cache";

/// What every handler can reach: the facade and the web-only settings.
pub struct AppState {
    pub cms: Arc<Cms>,
    /// Origins allowed for CORS and for key-less `Opt` calls (besides the site's own).
    pub allowed_origins: Vec<String>,
    /// The site's own origin, e.g. `https://example.com`.
    pub site_origin: String,
    /// Largest JSON request body, in bytes.
    pub json_limit: usize,
    /// Largest upload, in bytes.
    pub upload_limit: u64,
    /// Mixed into list ETags made from the index's version, so that a restart (perhaps
    /// with another `cms.yaml`) never answers `304` to an ETag of the previous process.
    pub etag_seed: u64,
    /// Serialized list pages (and single items without `answers`) by version (see
    /// [`crate::body_cache`]).
    pub bodies: crate::body_cache::BodyCache,
    /// Documents (feeds, search, tags, `openapi.json`) by version, in a budget of their own:
    /// a flood of distinct queries must not push the list pages out (see
    /// [`crate::documents`]).
    pub documents: crate::body_cache::BodyCache,
    /// One making of a document at a time per slot ([`crate::body_cache::Builds`]).
    pub document_builds: crate::body_cache::Builds,
    /// Serialized single items by version, on disk (a server's local file, held in memory
    /// too while the server is small, see
    /// [`AppState::with_answers`]); rendered ahead by [`crate::ahead::render_ahead`].
    pub answers: Option<Arc<dyn RenderCache>>,
    /// How far [`crate::ahead::render_ahead`] has come.
    pub ahead: Arc<crate::ahead_progress::AheadProgress>,
    /// `Cache-Control` of public answers (see [`AppState::with_public_max_age`]).
    pub public_cache_control: HeaderValue,
    /// The validators of `/status`, whose answer does not change while the process runs:
    /// an ETag of this process, and when it started.
    pub status_etag: HeaderValue,
    /// `/status`'s answer once the site is indexed, but its timestamp: made by its
    /// handler on the first such answer.
    pub running_status: std::sync::OnceLock<Vec<u8>>,
    pub started: std::time::SystemTime,
    pub started_header: HeaderValue,
    /// Prometheus metrics, counted by the request layer (`crate::metrics`).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Whether `/metrics` answers on this address (see [`AppState::with_metrics_token`]).
    pub metrics_access: crate::metrics::MainAddress,
    /// Whether requests are counted ([`AppState::counting_requests`]): only when someone
    /// may read the metrics, so that a server without them pays nothing per request.
    pub counting: bool,
    /// Requests' spans made by an exporter of traces (see [`crate::traces`]); `None`:
    /// plain spans, nothing exported.
    pub traces: Option<Arc<dyn crate::traces::Traces>>,
    /// One line per request ([`crate::access_log`]); `None`: no access log.
    pub access_log: Option<Arc<crate::access_log::AccessLog>>,
    /// Parts the binary composed that `/readyz`'s body reports on by name (the site's git
    /// work), without making the server unready ([`AppState::with_report`]).
    pub reports: Vec<(&'static str, Report)>,
    /// What `POST /cms/git/pull` calls, and the secret it must be sent with
    /// ([`AppState::with_pull_trigger`]); `None`: the route answers 404.
    pub pull_trigger: Option<PullTrigger>,
}

/// A pull asked for over HTTP (a site kept in git).
pub struct PullTrigger {
    pub secret: String,
    pub ask: Arc<dyn Fn() + Send + Sync>,
}

/// What one part of the server says of itself in `/readyz`'s body, asked at each probe.
pub type Report = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

impl AppState {
    pub fn new(cms: Arc<Cms>, allowed_origins: Vec<String>, json_limit: usize, upload_limit: u64) -> Self {
        let site_origin = origin_of(&cms.site().url);
        let etag_seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Whole seconds: what `Last-Modified` can say.
        let started = std::time::UNIX_EPOCH
            + std::time::Duration::from_secs(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            );
        Self {
            cms,
            allowed_origins: allowed_origins.iter().map(|o| o.trim_end_matches('/').to_owned()).collect(),
            site_origin,
            json_limit,
            upload_limit,
            etag_seed,
            status_etag: HeaderValue::from_str(&format!("\"{etag_seed:016x}-status\"")).expect("hex digits"),
            running_status: std::sync::OnceLock::new(),
            started,
            started_header: HeaderValue::from_str(&header::HttpDate::from(started).to_string())
                .expect("an HTTP date"),
            bodies: crate::body_cache::BodyCache::new(BODY_CACHE_BYTES, 8),
            documents: crate::body_cache::BodyCache::new(DOCUMENT_CACHE_BYTES, DOCUMENT_SHARE),
            document_builds: crate::body_cache::Builds::default(),
            answers: None,
            ahead: Arc::default(),
            public_cache_control: HeaderValue::from_static(PUBLIC_NO_CACHE),
            metrics: Arc::default(),
            metrics_access: crate::metrics::MainAddress::Off,
            counting: false,
            traces: None,
            access_log: None,
            reports: Vec::new(),
            pull_trigger: None,
        }
    }

    /// `POST /cms/git/pull` with `Authorization: Bearer <secret>` calls `ask`.
    pub fn with_pull_trigger(mut self, secret: String, ask: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.pull_trigger = Some(PullTrigger { secret, ask });
        self
    }

    /// `/readyz`'s body carries `report()` under `name`: a part that does not decide
    /// readiness, such as commits waiting to be pushed (writes go on without the remote).
    pub fn with_report(mut self, name: &'static str, report: Report) -> Self {
        self.reports.push((name, report));
        self
    }

    /// Requests' spans come from `traces` (an exporter of traces).
    pub fn with_traces(mut self, traces: Arc<dyn crate::traces::Traces>) -> Self {
        self.traces = Some(traces);
        self
    }

    /// Each request gets a line in `log` (the server's access log).
    pub fn with_access_log(mut self, log: crate::access_log::AccessLog) -> Self {
        self.access_log = Some(Arc::new(log));
        self
    }

    /// `/metrics` answers here to `Authorization: Bearer <token>` (`metrics.token_env`).
    pub fn with_metrics_token(mut self, token: String) -> Self {
        self.metrics_access = crate::metrics::MainAddress::Token(token);
        self.counting = true;
        self
    }

    /// Requests are counted by route, method and status (the metrics are read somewhere:
    /// `metrics.listen`, or [`AppState::with_metrics_token`]).
    pub fn counting_requests(mut self) -> Self {
        self.counting = true;
        self
    }

    /// How long caches may keep public answers without revalidating
    /// (`server.public_max_age_secs`): 0 means revalidate every time.
    pub fn with_public_max_age(mut self, secs: u32) -> Self {
        self.public_cache_control = match secs {
            0 => HeaderValue::from_static(PUBLIC_NO_CACHE),
            secs => HeaderValue::from_str(&format!("public, max-age={secs}, must-revalidate"))
                .expect("digits and ASCII"),
        };
        self
    }

    /// Keeps single items' answers in `answers` (e.g. `cms_fs::FsRenderCache`, on disk)
    /// instead of the memory cache of list pages.
    pub fn with_answers(mut self, answers: Arc<dyn RenderCache>) -> Self {
        self.answers = Some(answers);
        self
    }

    /// Awaits a facade call and maps its error into `shape`. The facade never blocks a
    /// worker: its adapters move their blocking I/O off the async workers themselves.
    pub async fn run<T>(
        &self,
        shape: Shape,
        call: impl Future<Output = CoreResult<T>>,
    ) -> Result<T, ApiError> {
        call.await.map_err(|e| ApiError::from_core(e, shape))
    }

    /// Whether a browser origin may call key-less `Opt` routes and read CORS responses:
    /// the site's own, one of `cors.allowed_origins`, or one of this server's names (never
    /// decided by the request's `Host`: see `cms_core::host_policy`).
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/');
        origin == self.site_origin
            || self.allowed_origins.iter().any(|o| o == origin)
            || self.cms.hosts().is_this_server(origin)
    }
}

/// The request's `Origin`, when it has one (a browser's cross-origin or same-server call).
pub fn origin(req: &HttpRequest) -> Option<&str> {
    req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok())
}

/// What the request says of where it came from, for `cms_core::host_policy`.
pub fn request_origin(req: &HttpRequest) -> RequestOrigin<'_> {
    RequestOrigin::read(req.peer_addr().map(|a| a.ip()), |name| {
        req.headers().get(name).and_then(|v| v.to_str().ok())
    })
}

/// The application state (always registered by [`crate::app`]), borrowed: both workers
/// share its reference count, so the hot path does not touch it.
pub fn of(req: &HttpRequest) -> &AppState {
    shared(req)
}

/// The application state as a handle that outlives the request's borrow (for a future
/// that must own what it uses).
pub fn shared(req: &HttpRequest) -> &actix_web::web::Data<AppState> {
    req.app_data::<actix_web::web::Data<AppState>>().expect("AppState is registered")
}

/// `scheme://host[:port]` of an absolute URL.
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
            format!("{scheme}://{authority}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn origins() {
        assert_eq!(origin_of("https://example.com/blog/"), "https://example.com");
        assert_eq!(origin_of("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
