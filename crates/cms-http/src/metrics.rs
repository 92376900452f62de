//! Prometheus metrics (`GET /metrics`, the Prometheus text format 0.0.4 that `promtool`
//! and every scraper read, written by `prometheus-client`):
//! requests by route template, method and status class with their latency, requests in
//! flight, and the site's state read at each scrape (items per collection, indexing,
//! readiness, live streams). No label takes a value a client chose: routes are the route
//! table's templates, the editor's and the agent endpoint's patterns, or `unmatched`.
//!
//! Who may read them is `metrics:` of `cms.yaml`: an address of their own
//! (`handlers::metrics::metrics_app`) or a bearer token on the main address; by default
//! nobody.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix_web::dev::ServiceResponse;
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpMessage, HttpRequest};
use cms_core::Cms;
use cms_core::readings::{Kind, Observed, Reading};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The route a request matched, set by the `/cms/` router (other routes are actix
/// resources, whose pattern actix keeps).
#[derive(Clone, Copy)]
pub struct MatchedRoute(pub &'static str);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Cow<'static, str>,
    method: &'static str,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    route: Cow<'static, str>,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IndexingLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CollectionLabels {
    collection: String,
    status: &'static str,
}

type LatencyFamily = Family<LatencyLabels, Histogram, fn() -> Histogram>;

/// The server's metrics (one per process, shared by its workers).
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    in_flight: Gauge,
    items: Family<CollectionLabels, Gauge>,
    indexing: Gauge,
    indexing_files: Family<IndexingLabels, Gauge>,
    ready: Gauge,
    streams: Gauge,
    /// The adapters' own measurements ([`Metrics::observe`]).
    sources: Sources,
    /// This one's number in the process, for the workers' kept series.
    id: u64,
}

/// Numbers the [`Metrics`] of a process.
static METRICS_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn latency_histogram() -> Histogram {
    // 0.1 ms to about 13 s, doubling.
    Histogram::new(exponential_buckets(0.000_1, 2.0, 18))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cms");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status class",
            requests.clone(),
        );
        let latency = LatencyFamily::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by route template and method",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register("http_requests_in_flight", "HTTP requests being answered now", in_flight.clone());
        let items = Family::<CollectionLabels, Gauge>::default();
        registry.register("index_items", "Items in each collection's index, by status", items.clone());
        let indexing = Gauge::default();
        registry.register("indexing", "1 while the server builds its first index", indexing.clone());
        let indexing_files = Family::<IndexingLabels, Gauge>::default();
        registry.register(
            "indexing_files",
            "While the first index is built: item files found so far, and indexed (0 once done)",
            indexing_files.clone(),
        );
        let ready = Gauge::default();
        registry.register("ready", "1 when /readyz answers 200", ready.clone());
        let streams = Gauge::default();
        registry.register("event_streams_open", "Live event streams open (REST and editor)", streams.clone());
        let sources = Sources::default();
        registry.register_collector(Box::new(sources.clone()));
        let id = METRICS_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            registry,
            requests,
            latency,
            in_flight,
            items,
            indexing,
            indexing_files,
            ready,
            streams,
            sources,
            id,
        }
    }
}

impl Metrics {
    /// A request begins: counted in flight until the guard is dropped.
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// A request was answered with `response` after `took`. Each worker thread keeps the
    /// series it has used, so that a request costs one lookup in its own map (no lock, no
    /// label set cloned) rather than two in the shared families.
    pub fn answered(&self, method: &Method, response: &ServiceResponse<impl Sized>, took: Duration) {
        let route = route_label(response.request());
        let method = method_label(method);
        let status = status_class(response.status());
        SERIES.with_borrow_mut(|series| {
            let key = SeriesKey { metrics: self.id, route, method, status };
            if let Some((requests, latency)) = series.get(&key) {
                requests.inc();
                latency.observe(took.as_secs_f64());
                return;
            }
            let requests = self.requests.get_or_create_owned(&RequestLabels {
                route: key.route.clone(),
                method,
                status,
            });
            let latency =
                self.latency.get_or_create_owned(&LatencyLabels { route: key.route.clone(), method });
            requests.inc();
            latency.observe(took.as_secs_f64());
            series.insert(key, (requests, latency));
        });
    }

    /// Reports `source`'s readings at every scrape from now on (an image pool, a webhook
    /// sink, a bucket: the composition root hands them over).
    pub fn observe(&self, source: Arc<dyn Observed>) {
        self.sources.observed.write().unwrap_or_else(PoisonError::into_inner).push(source);
    }

    /// The text format, with the site's state read now, and `readings` of the caller's
    /// (the kept answers', [`cache_readings`]).
    pub async fn scrape(&self, cms: &Cms, readings: Vec<Reading>) -> String {
        *self.sources.now.lock().unwrap_or_else(PoisonError::into_inner) = readings;
        let progress = cms.indexing();
        self.indexing.set(i64::from(progress.is_some()));
        let (indexed, found) = progress.map_or((0, 0), |p| (p.indexed, p.found));
        self.indexing_files.get_or_create(&IndexingLabels { state: "indexed" }).set(indexed as i64);
        self.indexing_files.get_or_create(&IndexingLabels { state: "found" }).set(found as i64);
        self.ready.set(i64::from(cms.readiness().await.ready));
        self.streams.set(cms.stream_slots().open_streams() as i64);
        if cms.indexing().is_none() {
            for collection in cms.collections() {
                // Every language's items on a site with languages.
                let (mut live, mut scheduled, mut drafts) = (0, 0, 0);
                for lane in cms.family_of(collection) {
                    let Ok(counts) = cms.status_counts(lane).await else { continue };
                    (live, scheduled, drafts) =
                        (live + counts.live, scheduled + counts.scheduled, drafts + counts.drafts);
                }
                for (status, count) in [("live", live), ("scheduled", scheduled), ("draft", drafts)] {
                    let labels = CollectionLabels { collection: collection.slug.clone(), status };
                    self.items.get_or_create(&labels).set(count as i64);
                }
            }
        }
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
            .expect("writing to a String");
        text
    }
}

/// A cache of kept answers as `/metrics` reports it: `answer_cache_lookups{cache,outcome}`,
/// `answer_cache_bytes{cache}`, `answer_cache_entries{cache}` (the answer file of single
/// items reports the same names with `cache="items"`).
pub fn cache_readings(cache: &'static str, stats: crate::body_cache::CacheStats) -> Vec<Reading> {
    let lookups =
        "Requests' first lookups of their kept answer, by cache (lists, documents, items) and outcome";
    vec![
        Reading::counter("answer_cache_lookups", lookups, stats.hits as f64)
            .with("cache", cache)
            .with("outcome", "hit"),
        Reading::counter("answer_cache_lookups", lookups, stats.misses as f64)
            .with("cache", cache)
            .with("outcome", "miss"),
        Reading::gauge("answer_cache_bytes", "Bytes of kept answers, by cache", stats.bytes as f64)
            .with("cache", cache),
        Reading::gauge("answer_cache_entries", "Kept answers, by cache", stats.entries as f64)
            .with("cache", cache),
    ]
}

/// The adapters' measurements, read at each scrape, and the scrape's own readings.
#[derive(Clone, Default)]
struct Sources {
    observed: Arc<RwLock<Vec<Arc<dyn Observed>>>>,
    now: Arc<std::sync::Mutex<Vec<Reading>>>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sources")
    }
}

impl Collector for Sources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sources = self.observed.read().unwrap_or_else(PoisonError::into_inner).clone();
        let mut readings: Vec<Reading> = sources.iter().flat_map(|source| source.readings()).collect();
        readings.extend(self.now.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned());
        // Each name's series together, in the order their source gave them.
        readings.sort_by_key(|reading| reading.name);
        for series in readings.chunk_by(|a, b| a.name == b.name) {
            let (name, help, kind) = (series[0].name, series[0].help, series[0].kind);
            let metric_type = match kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
            for reading in series {
                let labels: Vec<(&str, &str)> =
                    reading.labels.iter().map(|(k, v)| (*k, v.as_ref())).collect();
                let family = metric.encode_family(&labels)?;
                match kind {
                    Kind::Counter => ConstCounter::new(reading.value).encode(family)?,
                    Kind::Gauge => ConstGauge::new(reading.value).encode(family)?,
                }
            }
        }
        Ok(())
    }
}

thread_local! {
    /// The series a worker thread has counted into, by route, method and status class (at
    /// most the routes times the methods times five per thread: bounded as the labels are).
    static SERIES: std::cell::RefCell<std::collections::HashMap<SeriesKey, (Counter, Histogram)>> =
        std::cell::RefCell::default();
}

#[derive(Hash, PartialEq, Eq)]
struct SeriesKey {
    /// Which [`Metrics`] (one per server; tests make several in one process).
    metrics: u64,
    route: Cow<'static, str>,
    method: &'static str,
    status: &'static str,
}

/// A request in flight; dropping it (answered, failed, or dropped with its connection)
/// counts it out.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The route template a request matched, never its path.
fn route_label(req: &HttpRequest) -> Cow<'static, str> {
    if let Some(MatchedRoute(route)) = req.extensions().get::<MatchedRoute>() {
        return Cow::Borrowed(route);
    }
    match req.match_pattern() {
        Some(pattern) => Cow::Owned(pattern),
        None => Cow::Borrowed("unmatched"),
    }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// How `/metrics` may be read on the main address.
#[derive(Debug, Clone, Default)]
pub enum MainAddress {
    /// Not at all (the default; or they are served on an address of their own).
    #[default]
    Off,
    /// With `Authorization: Bearer <token>`.
    Token(String),
}
