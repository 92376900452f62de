//! Where a request's span comes from. Without [`Traces`] (the default) it is a plain
//! `request` span carrying the request id; with it (the binary's OpenTelemetry export,
//! when `OTEL_EXPORTER_OTLP_ENDPOINT` is set), the exporter makes the span, continuing the
//! trace of the request's `traceparent`, and records the answer on it. This crate knows
//! nothing of OpenTelemetry.

use actix_web::HttpRequest;
use tracing::Span;

pub trait Traces: Send + Sync {
    /// The span of a request, before it is handled.
    fn request_span(&self, req: &HttpRequest, request_id: &str) -> Span;
    /// Records the answer: the route template (`None`: the editor's, the agent's and
    /// files' paths, which are their own) and the status.
    fn answered(&self, span: &Span, method: &str, route: Option<&str>, status: u16);
}
