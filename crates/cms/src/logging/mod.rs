//! The log: what is kept (`RUST_LOG`, else by command), its format (`--log-format`,
//! `CMS_LOG_FORMAT`: text or one JSON object per line), and, for the server, a writer
//! thread of its own, so that no request waits on standard error.

mod request_lines;

use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event (with colours on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, the event's fields
    /// (`message`, and for a request `method`, `route`, `status`, `ms`, `request_id`),
    /// and `span` with the request's id for lines logged while it is handled.
    Json,
}

/// Lines the server's log may hold before it drops new ones (and counts them) rather
/// than make a request wait for a slow disk or a full pipe.
const BUFFERED_LINES: usize = 64 * 1024;

/// Bytes the server's log writer gathers before a write call (it also writes whenever
/// no more lines are waiting).
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// The server's log writer: keep it until the process ends (dropping it writes what is
/// buffered).
pub struct ServerLog {
    guard: WorkerGuard,
    dropped: tracing_appender::non_blocking::ErrorCounter,
    /// The access log's format (its lines have a writer of their own).
    format: cms_http::access_log::Format,
}

/// Where the access log's lines go, and in which format ([`ServerLog::access_lines`]).
pub struct AccessLines {
    pub format: cms_http::access_log::Format,
    pub sink: cms_http::access_log::Sink,
}

impl ServerLog {
    /// Standard error, in the log's format, unless `RUST_LOG` leaves the request lines
    /// out (`warn`, `cms::access=off`). The access log's own thread writes them in
    /// batches (see [`cms_http::access_log`]), each batch in one call.
    pub fn access_lines(&self) -> Option<AccessLines> {
        if !tracing::enabled!(target: "cms::access", tracing::Level::INFO) {
            return None;
        }
        let sink: cms_http::access_log::Sink = Box::new(|batch: &[u8]| {
            use std::io::Write;
            // Locked for the whole batch: the log's other lines wait rather than
            // land inside it.
            let _ = std::io::stderr().lock().write_all(batch);
        });
        Some(AccessLines { format: self.format, sink })
    }

    /// Says on standard error how many lines were dropped, if any, then flushes.
    pub fn finish(self) {
        let dropped = self.dropped.dropped_lines();
        drop(self.guard);
        if dropped > 0 {
            eprintln!("warning: {dropped} log lines were dropped: standard error did not keep up");
        }
    }
}

/// Starts the log. `serving`: written by a thread of its own (see [`ServerLog`]);
/// otherwise straight to standard error, as a command's warnings go. `traces`: spans
/// exported as well (see [`crate::traces`]).
pub fn start(
    format: LogFormat,
    default_filter: &str,
    serving: bool,
    traces: Option<&crate::traces::Export>,
) -> Option<ServerLog> {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter.into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr()) && format == LogFormat::Text;
    if !serving {
        init(format, filter(), std::io::stderr, ansi, traces);
        return None;
    }
    // Buffered: the writer thread drains every line waiting, then flushes once, so a
    // busy server makes one write call per batch, not one per line (that cost 11% of the
    // CPU of a server answering 70,000 requests a second).
    let stderr = std::io::BufWriter::with_capacity(WRITE_BATCH_BYTES, std::io::stderr());
    let (writer, guard): (NonBlocking, WorkerGuard) =
        NonBlockingBuilder::default().lossy(true).buffered_lines_limit(BUFFERED_LINES).finish(stderr);
    let dropped = writer.error_counter();
    init(format, filter(), writer, ansi, traces);
    let format = match format {
        LogFormat::Text => cms_http::access_log::Format::Text { ansi },
        LogFormat::Json => cms_http::access_log::Format::Json,
    };
    Some(ServerLog { guard, dropped, format })
}

fn init<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
    ansi: bool,
    traces: Option<&crate::traces::Export>,
) where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::prelude::*;
    let lines = tracing_subscriber::fmt::layer().with_writer(writer);
    let lines = match format {
        LogFormat::Text => lines.with_ansi(ansi).event_format(request_lines::Text::new()).boxed(),
        LogFormat::Json => lines
            .with_ansi(false)
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(request_lines::JsonLines::new())
            .boxed(),
    };
    // Each layer filters for itself: the log keeps what RUST_LOG says, the traces our
    // spans (at any level), so a log at `info` does not lose them, nor they widen it.
    // No `Option` layer: an absent one says yes to every event, and `enabled!` then
    // answers yes for a target RUST_LOG turned off (`cms::access=off`).
    let log = tracing_subscriber::registry().with(lines.with_filter(filter));
    match traces {
        Some(traces) => log.with(traces.layer()).init(),
        None => log.init(),
    }
}
