//! The access log: one line per request, in the log's format (text or JSON), gathered per
//! worker thread and written in batches by a thread of its own (see [`AccessLog::new`]).
//!
//! Why not `tracing::info!` through the log's writer: on a server answering 70,000
//! requests a second, its formatter (field visitors, `Debug` through `fmt::Write`, a
//! timestamp made for every line) took about a tenth of the CPU, and the writer thread's
//! write for every line (each handed over with a wake-up) another eighth
//! (docs/performance.md). Here a line is made with the second's timestamp kept per thread
//! and appended to its thread's batch; the writer takes every batch at least ten times a
//! second, or sooner when one is full.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bytes a worker's batch gathers before it wakes the writer.
const FULL_BATCH_BYTES: usize = 64 * 1024;
/// Bytes a worker's batch may hold: past it (the writer is stuck on a slow disk or a full
/// pipe), lines are dropped and counted rather than a request made to wait or memory
/// spent without bound.
const MAX_BATCH_BYTES: usize = 1024 * 1024;
/// The longest a line waits in its batch.
const WRITE_EVERY: Duration = Duration::from_millis(100);

/// The log's format ([`AccessLog::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `tracing`'s text line: `2026-11-29T12:00:00.123456Z  INFO cms::access: request
    /// method=GET path="/status" status=200 ms=0 request_id="…"` (`ansi`: coloured as
    /// `tracing` colours it, for a terminal).
    Text { ansi: bool },
    /// `tracing`'s JSON object: `timestamp`, `level`, `message`, the fields, `target`.
    Json,
}

/// Where the lines go: called by the writer thread with whole lines (each ending in a
/// newline), a batch at a time. It may block (the batches fill meanwhile, then drop).
pub type Sink = Box<dyn FnMut(&[u8]) + Send>;

/// What one line says about a request.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub method: &'a str,
    /// Without its query, and a preview link's token left out (see the middleware).
    pub path: &'a str,
    /// The route template that answered, when one did.
    pub route: Option<&'a str>,
    pub status: u16,
    pub ms: u64,
    pub request_id: &'a str,
    /// Who asked: a key by its id, or an editor session by its user.
    pub key_id: Option<&'a str>,
    pub user: Option<&'a str>,
}

/// The access log of a server (`server.access_log`, `server.access_log_sample`).
pub struct AccessLog {
    format: Format,
    /// The share of answers below 400 that are logged (1: all); errors always are.
    sample: f64,
    batches: Arc<Batches>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// One worker thread's lines not yet written.
type Batch = Arc<Mutex<Vec<u8>>>;

/// Every worker thread's batch, and the writer that takes them.
struct Batches {
    /// Tells this log's batches from another's in a thread's list (tests make several).
    id: u64,
    threads: Mutex<Vec<Batch>>,
    dropped: AtomicU64,
    writer: OnceLock<std::thread::Thread>,
    stopping: AtomicBool,
}

/// The line's target, as `RUST_LOG` names it (`cms::access=off`).
pub const TARGET: &str = "cms::access";

impl AccessLog {
    /// Starts the writer thread, which hands the lines to `sink`. `sample` is clamped to
    /// 0..=1.
    pub fn new(format: Format, sample: f64, mut sink: Sink) -> std::io::Result<Self> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let sample = if sample.is_nan() { 1.0 } else { sample.clamp(0.0, 1.0) };
        let batches = Arc::new(Batches {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            threads: Mutex::default(),
            dropped: AtomicU64::new(0),
            writer: OnceLock::new(),
            stopping: AtomicBool::new(false),
        });
        let taken = batches.clone();
        let writer = std::thread::Builder::new().name("access-log".into()).spawn(move || {
            let mut spare = Vec::new();
            loop {
                let stopping = taken.stopping.load(Ordering::Acquire);
                taken.write_out(&mut sink, &mut spare);
                if stopping {
                    return;
                }
                std::thread::park_timeout(WRITE_EVERY);
            }
        })?;
        let _ = batches.writer.set(writer.thread().clone());
        Ok(Self { format, sample, batches, writer: Mutex::new(Some(writer)) })
    }

    /// Whether this answer's line is written: every error (400 and up); of the others, the
    /// configured share, spread evenly (each worker thread keeps its own count).
    pub fn wants(&self, status: u16) -> bool {
        if status >= 400 || self.sample >= 1.0 {
            return true;
        }
        thread_local! {
            static CREDIT: Cell<f64> = const { Cell::new(0.0) };
        }
        CREDIT.with(|credit| {
            let now = credit.get() + self.sample;
            let wanted = now >= 1.0;
            credit.set(if wanted { now - 1.0 } else { now });
            wanted
        })
    }

    /// Formats the line into this thread's batch.
    pub fn write(&self, line: &Line<'_>) {
        thread_local! {
            static LINE: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(256));
        }
        LINE.with(|text| {
            let mut text = text.borrow_mut();
            text.clear();
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            match self.format {
                Format::Text { ansi } => text_line(&mut text, now, ansi, line),
                Format::Json => json_line(&mut text, now, line),
            }
            self.batches.append(&text);
        });
    }

    /// Writes out what the batches hold and stops the writer; lines written afterwards
    /// are not written out. Returns how many lines were dropped because the writer did
    /// not keep up.
    pub fn finish(&self) -> u64 {
        self.batches.stopping.store(true, Ordering::Release);
        if let Some(writer) = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            writer.thread().unpark();
            let _ = writer.join();
        }
        self.batches.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Batches {
    fn append(self: &Arc<Self>, line: &[u8]) {
        let batch = self.this_threads_batch();
        let mut batch = batch.lock().unwrap_or_else(|e| e.into_inner());
        if batch.len() + line.len() > MAX_BATCH_BYTES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let was_full = batch.len() >= FULL_BATCH_BYTES;
        batch.extend_from_slice(line);
        if !was_full
            && batch.len() >= FULL_BATCH_BYTES
            && let Some(writer) = self.writer.get()
        {
            writer.unpark();
        }
    }

    /// This thread's batch in this log, made and registered on its first line.
    fn this_threads_batch(self: &Arc<Self>) -> Batch {
        thread_local! {
            static MINE: RefCell<Vec<(u64, Batch)>> = const { RefCell::new(Vec::new()) };
        }
        MINE.with(|mine| {
            let mut mine = mine.borrow_mut();
            if let Some((_, batch)) = mine.iter().find(|(id, _)| *id == self.id) {
                return batch.clone();
            }
            let batch = Arc::new(Mutex::new(Vec::with_capacity(FULL_BATCH_BYTES)));
            self.threads.lock().unwrap_or_else(|e| e.into_inner()).push(batch.clone());
            mine.push((self.id, batch.clone()));
            batch
        })
    }

    /// Takes each thread's lines (swapping in an empty buffer, so a worker waits only for
    /// the swap) and hands them to the sink.
    fn write_out(&self, sink: &mut Sink, spare: &mut Vec<u8>) {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for batch in threads {
            {
                let mut batch = batch.lock().unwrap_or_else(|e| e.into_inner());
                if batch.is_empty() {
                    continue;
                }
                std::mem::swap(&mut *batch, spare);
            }
            sink(spare);
            spare.clear();
        }
    }
}

/// `2026-11-29T12:00:00.123456Z`: the second's part made once per second per thread.
fn push_timestamp(out: &mut Vec<u8>, now: std::time::Duration) {
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let secs = now.as_secs();
    SECOND.with(|second| {
        let mut second = second.borrow_mut();
        if second.0 != secs {
            let at = time::OffsetDateTime::from_unix_timestamp(secs as i64)
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            second.1.clear();
            let _ = write!(
                second.1,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                at.year(),
                u8::from(at.month()),
                at.day(),
                at.hour(),
                at.minute(),
                at.second()
            );
            second.0 = secs;
        }
        out.extend_from_slice(second.1.as_bytes());
    });
    // Six digits, zero-padded.
    let micros = u64::from(now.subsec_micros()) + 1_000_000;
    out.push(b'.');
    let start = out.len();
    push_number(out, micros);
    out.remove(start);
    out.push(b'Z');
}

fn text_line(out: &mut Vec<u8>, now: std::time::Duration, ansi: bool, line: &Line<'_>) {
    // tracing-subscriber's colours: the time dimmed, INFO green, the target dimmed, field
    // names italic.
    let (dim, green, italic, reset) =
        if ansi { ("\x1b[2m", "\x1b[32m", "\x1b[3m", "\x1b[0m") } else { ("", "", "", "") };
    out.extend_from_slice(dim.as_bytes());
    push_timestamp(out, now);
    for part in [reset, " ", green, " INFO", reset, " ", dim, TARGET, reset, ": request"] {
        out.extend_from_slice(part.as_bytes());
    }
    // ` name=`, each field's start, in one copy without a terminal.
    let field = |out: &mut Vec<u8>, plain: &str| {
        if ansi {
            let name = &plain[1..plain.len() - 1];
            for part in [" ", italic, name, reset, dim, "=", reset] {
                out.extend_from_slice(part.as_bytes());
            }
        } else {
            out.extend_from_slice(plain.as_bytes());
        }
    };
    field(out, " method=");
    out.extend_from_slice(line.method.as_bytes());
    // Strings quoted as `Debug` quotes them, a control character escaped, so that a path
    // cannot forge a line of its own.
    field(out, " path=");
    push_quoted(out, line.path);
    if let Some(route) = line.route {
        field(out, " route=");
        push_quoted(out, route);
    }
    field(out, " status=");
    push_number(out, u64::from(line.status));
    field(out, " ms=");
    push_number(out, line.ms);
    field(out, " request_id=");
    push_quoted(out, line.request_id);
    if let Some(key_id) = line.key_id {
        field(out, " key_id=");
        push_quoted(out, key_id);
    }
    if let Some(user) = line.user {
        field(out, " user=");
        push_quoted(out, user);
    }
    out.push(b'\n');
}

/// `text` as `{:?}` writes it, without the formatting machinery when nothing in it needs
/// escaping (printable ASCII other than `"` and `\\`: every route, most paths).
fn push_quoted(out: &mut Vec<u8>, text: &str) {
    if is_plain(text) {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        let _ = write!(out, "{text:?}");
    }
}

/// Printable ASCII other than `"` and `\\`: written as it is, in text and in JSON. Every
/// byte is looked at (no early exit), which the compiler turns into a few vector
/// instructions: a third of the access log's cost was this check, byte by byte.
fn is_plain(text: &str) -> bool {
    !text.bytes().fold(false, |escaped, b| escaped | !(0x20..0x7f).contains(&b) | (b == b'"') | (b == b'\\'))
}

/// A number in decimal, without the formatting machinery.
fn push_number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn json_line(out: &mut Vec<u8>, now: std::time::Duration, line: &Line<'_>) {
    out.extend_from_slice("{\"timestamp\":\"".as_bytes());
    push_timestamp(out, now);
    out.extend_from_slice("\",\"level\":\"INFO\",\"message\":\"request\",\"method\":".as_bytes());
    push_json_string(out, line.method);
    out.extend_from_slice(",\"path\":".as_bytes());
    push_json_string(out, line.path);
    if let Some(route) = line.route {
        out.extend_from_slice(",\"route\":".as_bytes());
        push_json_string(out, route);
    }
    out.extend_from_slice(",\"status\":".as_bytes());
    push_number(out, u64::from(line.status));
    out.extend_from_slice(",\"ms\":".as_bytes());
    push_number(out, line.ms);
    out.extend_from_slice(",\"request_id\":".as_bytes());
    push_json_string(out, line.request_id);
    if let Some(key_id) = line.key_id {
        out.extend_from_slice(",\"key_id\":".as_bytes());
        push_json_string(out, key_id);
    }
    if let Some(user) = line.user {
        out.extend_from_slice(",\"user\":".as_bytes());
        push_json_string(out, user);
    }
    out.extend_from_slice(",\"target\":\"".as_bytes());
    out.extend_from_slice(TARGET.as_bytes());
    out.extend_from_slice("\"}\n".as_bytes());
}

fn push_json_string(out: &mut Vec<u8>, text: &str) {
    // Nothing to escape in printable ASCII but `"` and `\\`; else serde_json's escaping.
    if is_plain(text) {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        let escaped = serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned());
        out.extend_from_slice(escaped.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// The log, and what it wrote once finished (one line per entry).
    fn captured(format: Format, sample: f64) -> (AccessLog, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink_lines = lines.clone();
        let sink: Sink = Box::new(move |batch: &[u8]| {
            let text = std::str::from_utf8(batch).unwrap();
            sink_lines.lock().unwrap().extend(text.split_inclusive('\n').map(str::to_owned));
        });
        (AccessLog::new(format, sample, sink).unwrap(), lines)
    }

    fn line<'a>(path: &'a str, status: u16) -> Line<'a> {
        Line {
            method: "GET",
            path,
            route: Some("/cms/collections/{collection}/items"),
            status,
            ms: 3,
            request_id: "probe-1",
            key_id: Some("key_ab12"),
            user: None,
        }
    }

    #[test]
    fn a_json_line_is_one_object_with_the_fields_of_the_request() {
        let (log, lines) = captured(Format::Json, 1.0);
        log.write(&line("/cms/collections/posts/items/\"x\n", 200));
        assert_eq!(log.finish(), 0);
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with('\n') && lines[0].matches('\n').count() == 1, "{:?}", lines[0]);
        let value: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(value["target"], TARGET);
        assert_eq!(value["level"], "INFO");
        assert_eq!(value["message"], "request");
        assert_eq!(value["path"], "/cms/collections/posts/items/\"x\n");
        assert_eq!(value["route"], "/cms/collections/{collection}/items");
        assert_eq!((value["status"].as_u64(), value["ms"].as_u64()), (Some(200), Some(3)));
        assert_eq!(
            (value["request_id"].as_str(), value["key_id"].as_str()),
            (Some("probe-1"), Some("key_ab12"))
        );
        assert_eq!(value.get("user"), None);
        let stamp = value["timestamp"].as_str().unwrap();
        assert!(
            time::OffsetDateTime::parse(stamp, &time::format_description::well_known::Rfc3339).is_ok(),
            "{stamp}"
        );
    }

    #[test]
    fn a_text_line_quotes_what_the_client_chose_so_it_cannot_forge_a_line() {
        let (log, lines) = captured(Format::Text { ansi: false }, 1.0);
        log.write(&line("/a\nforged INFO line", 404));
        log.finish();
        let lines = lines.lock().unwrap();
        let text = &lines[0];
        assert_eq!(text.matches('\n').count(), 1, "{text:?}");
        let (stamp, rest) = text.split_once("  INFO cms::access: request ").unwrap();
        assert!(
            time::OffsetDateTime::parse(stamp, &time::format_description::well_known::Rfc3339).is_ok(),
            "{stamp}"
        );
        assert_eq!(
            rest,
            "method=GET path=\"/a\\nforged INFO line\" route=\"/cms/collections/{collection}/items\" status=404 \
             ms=3 request_id=\"probe-1\" key_id=\"key_ab12\"\n"
        );
    }

    #[test]
    fn on_a_terminal_the_fields_are_coloured_as_tracing_colours_them() {
        let (log, lines) = captured(Format::Text { ansi: true }, 1.0);
        log.write(&line("/status", 200));
        log.finish();
        let lines = lines.lock().unwrap();
        let field = |name: &str| format!(" \x1b[3m{name}\x1b[0m\x1b[2m=\x1b[0m");
        let expected = format!(
            "\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mcms::access\x1b[0m: request{}GET{}\"/status\"",
            field("method"),
            field("path")
        );
        assert!(lines[0].starts_with("\x1b[2m") && lines[0].contains(&expected), "{:?}", lines[0]);
        assert!(lines[0].ends_with(&format!("{}\"key_ab12\"\n", field("key_id"))), "{:?}", lines[0]);
    }

    #[test]
    fn lines_from_many_threads_are_all_written_whole_and_a_full_batch_drops_rather_than_waits() {
        let (log, lines) = captured(Format::Json, 1.0);
        let log = Arc::new(log);
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let path = format!("/t{t}/{i}");
                        log.write(&line(&path, 200));
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let dropped = log.finish();
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len() as u64 + dropped, 8000);
        assert_eq!(dropped, 0, "the writer keeps up with 8,000 lines");
        for text in lines.iter() {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(value["status"], 200);
        }

        // A sink that never returns: a batch fills to its bound, then lines are counted.
        let (stuck_tx, stuck_rx) = std::sync::mpsc::channel::<()>();
        let stuck: Sink = Box::new(move |_batch: &[u8]| {
            let _ = stuck_rx.recv();
        });
        let log = AccessLog::new(Format::Json, 1.0, stuck).unwrap();
        let long = "x".repeat(1000);
        for _ in 0..3000 {
            log.write(&line(&long, 200));
        }
        drop(stuck_tx);
        assert!(log.finish() > 0, "3 MB of lines do not fit while the sink is stuck");
    }

    #[test]
    fn quoting_and_numbers_write_what_debug_and_display_write() {
        let long = "/cms/collections/blog-posts/items/a-long-slug-of-sixty-four-bytes-or-so";
        let late_quote = format!("{long}/\"");
        let late_control = format!("{long}{long}\n");
        for text in [
            "/status",
            "",
            "/a b/\"q\"",
            "back\\slash",
            "tab\tand\u{7f}",
            "é/日本",
            "\u{1b}[31m",
            long,
            &late_quote,
            &late_control,
        ] {
            let mut out = Vec::new();
            push_quoted(&mut out, text);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{text:?}"));
            let mut json = Vec::new();
            push_json_string(&mut json, text);
            assert_eq!(String::from_utf8(json).unwrap(), serde_json::to_string(text).unwrap());
        }
        for n in [0, 7, 10, 404, 1_000_000, u64::MAX] {
            let mut out = Vec::new();
            push_number(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
        let mut stamp = Vec::new();
        push_timestamp(&mut stamp, std::time::Duration::new(1_764_417_600, 42_000));
        assert_eq!(String::from_utf8(stamp).unwrap(), "2025-11-29T12:00:00.000042Z");
    }

    #[test]
    fn sampling_keeps_its_share_of_successes_and_every_error() {
        let (log, _) = captured(Format::Json, 0.25);
        let kept = (0..1000).filter(|_| log.wants(200)).count();
        assert_eq!(kept, 250);
        assert!((0..100).all(|_| log.wants(404) && log.wants(503)));
        let (none, _) = captured(Format::Json, 0.0);
        assert!(!(0..100).any(|_| none.wants(304)));
        assert!(none.wants(500));
    }
}
