//! The log's lines, as `tracing-subscriber` formats them, with the id of the request that
//! was being handled when a line was logged.
//!
//! The id is the request's task's (`cms_http::request_id::current`), not a span's: a span
//! per request cost every request about 2,700 instructions, a line logged or not. So the
//! id is written where the span was: `request{request_id=…}:` before the target in text,
//! `"span":{"request_id":…,"name":"request"}` in JSON. With traces exported, the request
//! has its span again (the exporter needs one), and it is shown as any span is.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, format};
use tracing_subscriber::registry::LookupSpan;

/// Text: `2026-11-30T10:16:27.220211Z  WARN request{request_id=…}: target: message`.
pub struct Text {
    /// Everything after the timestamp, the level and the request.
    rest: Format<Full, ()>,
}

impl Text {
    pub fn new() -> Self {
        Text { rest: format().without_time().with_level(false) }
    }
}

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // As `tracing-subscriber`'s own: the timestamp dimmed, the level coloured.
        let ansi = writer.has_ansi_escapes();
        if ansi {
            writer.write_str("\x1b[2m")?;
        }
        if SystemTime.format_time(&mut writer).is_err() {
            writer.write_str("<unknown time>")?;
        }
        if ansi {
            writer.write_str("\x1b[0m")?;
        }
        let (colour, level) = match *event.metadata().level() {
            Level::TRACE => (35, "TRACE"),
            Level::DEBUG => (34, "DEBUG"),
            Level::INFO => (32, " INFO"),
            Level::WARN => (33, " WARN"),
            Level::ERROR => (31, "ERROR"),
        };
        match ansi {
            true => write!(writer, " \x1b[{colour}m{level}\x1b[0m ")?,
            false => write!(writer, " {level} ")?,
        }
        // Other spans follow it without a space, as spans are written.
        let space = if ctx.event_scope().is_some() { "" } else { " " };
        cms_http::request_id::current(|id| match ansi {
            true => {
                write!(writer, "\x1b[1mrequest{{\x1b[0mrequest_id={id}\x1b[1m}}\x1b[0m\x1b[2m:\x1b[0m{space}")
            }
            false => write!(writer, "request{{request_id={id}}}:{space}"),
        })
        .unwrap_or(Ok(()))?;
        self.rest.format_event(ctx, writer, event)
    }
}

/// JSON, one object per line (`flatten_event`, the current span), with the request's id
/// as the current span when no other span is.
pub struct JsonLines {
    json: Format<Json>,
}

impl JsonLines {
    pub fn new() -> Self {
        JsonLines { json: format().json().flatten_event(true).with_current_span(true).with_span_list(false) }
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let request = match ctx.lookup_current() {
            Some(_) => None,
            None => cms_http::request_id::current(str::to_owned),
        };
        let Some(id) = request else { return self.json.format_event(ctx, writer, event) };
        let mut line = String::new();
        self.json.format_event(ctx, Writer::new(&mut line), event)?;
        // The object's closing brace, before the newline.
        let Some(end) = line.rfind('}') else { return writer.write_str(&line) };
        let id = serde_json::to_string(&id).map_err(|_| fmt::Error)?;
        line.insert_str(end, &format!(r#","span":{{"request_id":{id},"name":"request"}}"#));
        writer.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::fmt::format::JsonFields;
    use tracing_subscriber::prelude::*;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Logs a warning outside a request, one inside `probe-7`, and one inside a span
    /// within it, with the log `layer` writing to `out`.
    fn log_three(layer: impl tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync) {
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "cms::test", "outside");
            let inside = cms_http::request_id::scope("probe-7".into(), async {
                tracing::warn!(target: "cms::test", answer = 42, "inside");
                tracing::warn_span!("store", operation = "read").in_scope(|| {
                    tracing::warn!(target: "cms::test", "deeper");
                });
            });
            let polled =
                std::pin::pin!(inside).poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
            assert!(polled.is_ready());
        });
    }

    #[test]
    fn text_lines_name_the_request_as_its_span_did() {
        let out = Captured::default();
        log_three(
            tracing_subscriber::fmt::layer()
                .with_writer(out.clone())
                .with_ansi(false)
                .event_format(Text::new()),
        );
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        // The timestamp as tracing-subscriber writes it: RFC 3339 in UTC, microseconds.
        let (stamp, rest) = lines[0].split_once(' ').unwrap();
        assert!(stamp.ends_with('Z') && stamp.len() == 27, "{stamp}");
        assert_eq!(rest, " WARN cms::test: outside");
        assert!(
            lines[1].ends_with(" WARN request{request_id=probe-7}: cms::test: inside answer=42"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2]
                .ends_with(" WARN request{request_id=probe-7}:store{operation=\"read\"}: cms::test: deeper"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn json_lines_carry_the_request_as_their_span() {
        let out = Captured::default();
        log_three(
            tracing_subscriber::fmt::layer()
                .with_writer(out.clone())
                .with_ansi(false)
                .fmt_fields(JsonFields::new())
                .event_format(JsonLines::new()),
        );
        let lines: Vec<serde_json::Value> =
            out.text().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["message"], "outside");
        assert_eq!(lines[0].get("span"), None);
        assert_eq!(lines[1]["message"], "inside");
        assert_eq!(lines[1]["answer"], 42);
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["target"], "cms::test");
        assert_eq!(lines[1]["span"], serde_json::json!({"request_id": "probe-7", "name": "request"}));
        // Inside another span, that span is the current one, as before.
        assert_eq!(lines[2]["span"]["name"], "store", "{}", lines[2]);
    }
}
