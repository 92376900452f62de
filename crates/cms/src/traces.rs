//! OpenTelemetry traces, exported over OTLP (HTTP with protobuf, the port 4318 of a
//! collector) when the standard variables ask for them: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`,
//! `OTEL_BSP_*` as usual; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn
//! them off. Without them nothing here runs: no layer, no spans beyond the log's.
//!
//! Exported: a span per request (`GET /cms/collections/{collection}/items`, continuing the
//! trace of a W3C `traceparent`), a span per facade call (`list_items`...) and per store
//! operation (a file's read, a bucket's request) beneath it.

use std::sync::Arc;

use actix_web::HttpRequest;
use actix_web::http::header::HeaderMap;
use anyhow::{Context, bail};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterFn, Filtered};
use tracing_subscriber::registry::LookupSpan;

/// Our crates' spans, and no events: a log line may name what a client typed (the email
/// of a failed sign-in), which the log keeps on this machine and a collector must not get.
fn ours(meta: &tracing::Metadata<'_>) -> bool {
    let crate_name = meta.target().split("::").next().unwrap_or_default();
    meta.is_span() && OUR_TARGETS.contains(&crate_name)
}

/// Our crates, whose spans are exported (never a dependency's: the exporter's own HTTP
/// client would trace its exports).
const OUR_TARGETS: [&str; 9] =
    ["cms", "cms_core", "cms_http", "cms_fs", "cms_s3", "cms_admin", "cms_mcp", "cms_images", "cms_webhooks"];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Whether the environment asks for traces.
pub fn wanted() -> bool {
    let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let none = env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    endpoint.is_some() && !disabled && !none
}

/// The exporter, running (a thread of its own sends batches of spans).
pub struct Export {
    provider: SdkTracerProvider,
}

impl Export {
    /// Starts the exporter the environment describes; errors name the variable to fix.
    pub fn start() -> anyhow::Result<Self> {
        let protocol =
            env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol.filter(|p| p != "http/protobuf") {
            bail!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported: this server exports traces over \
                 http/protobuf (a collector's port 4318); unset the variable or set it to http/protobuf"
            );
        }
        // HTTPS collectors: rustls on ring, as the bucket's client (a second install is a no-op).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = SpanExporter::builder()
            .with_http()
            .build()
            .context("cannot export traces to OTEL_EXPORTER_OTLP_ENDPOINT")?;
        let mut resource = Resource::builder();
        let named = env("OTEL_SERVICE_NAME").is_some()
            || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| {
                attributes.split(',').any(|pair| pair.trim_start().starts_with("service.name="))
            });
        if !named {
            resource = resource.with_service_name("cms");
        }
        let resource = resource
            .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider =
            SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        Ok(Self { provider })
    }

    /// The layer that turns our crates' spans into exported ones.
    pub fn layer<S>(&self) -> Filtered<impl Layer<S>, FilterFn, S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("cms"))
            .with_filter(FilterFn::new(ours))
    }

    /// Sends what is still buffered (at the stop).
    pub fn finish(self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("warning: the last traces were not exported: {error}");
        }
    }
}

/// Requests' spans for `cms-http`, continuing the trace a `traceparent` names.
pub struct RequestTraces;

impl RequestTraces {
    pub fn shared() -> Arc<dyn cms_http::traces::Traces> {
        Arc::new(Self)
    }
}

impl cms_http::traces::Traces for RequestTraces {
    fn request_span(&self, req: &HttpRequest, request_id: &str) -> Span {
        // No path or query: they may carry a preview's or a stream's token.
        let span = tracing::info_span!(
            target: "cms::http",
            "request",
            otel.name = %req.method(),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            http.request.method = %req.method(),
            http.route = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
            request_id = %request_id,
        );
        let parent = TraceContextPropagator::new().extract(&Headers(req.headers()));
        let _ = span.set_parent(parent);
        span
    }

    fn answered(&self, span: &Span, method: &str, route: Option<&str>, status: u16) {
        if let Some(route) = route {
            // The span is started by now: its name is changed on the exported span itself
            // (recording `otel.name` only renames a span not yet started).
            span.context().span().update_name(format!("{method} {route}"));
            span.record("http.route", route);
        }
        span.record("http.response.status_code", i64::from(status));
        if status >= 500 {
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// A request's headers as the propagator reads them.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}
