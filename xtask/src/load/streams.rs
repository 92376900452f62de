//! Live event streams at 10,000 items (issue 47): 1,000 anonymous streams open on the
//! folder site. What an idle stream costs in memory; the default list and 64 writers while
//! 1,000 streams (of another collection) stay idle, against the same without them (the
//! writers in rounds, without and with the streams in turn); and how soon a write's event
//! reaches a stream when all 1,000 follow every event (write-to-event: from sending the
//! `PATCH` to the stream's frame).

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::cases::Case;
use super::client::Client;
use super::process::Server;
use super::sitegen::{BenchSite, COLLECTION, CONCURRENT_WRITERS, PLAIN_COLLECTION};
use super::writes::{TICKS_PER_SECOND, Writes, median, run_writers};
use super::{Ceiling, run_case, settle, wrk};

/// Streams held open.
pub const STREAMS: usize = 1000;
/// Writes whose event is timed.
const TIMED_WRITES: usize = 300;
/// How long the probe waits for one event before it gives up.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Rounds of the writers, each without the idle streams and then with them. One run with
/// the streams held to the write case's run minutes before followed the disk, whose speed
/// moves by half within an evening here (1,848/s then 1,393/s, 2026-12-01): each round's
/// pair is compared, and the median of the pairs decides.
const WRITE_ROUNDS: usize = 5;

/// One run of the writers, and the server's CPU time per successful write in it (µs;
/// `None` when it could not be read): unlike writes/s, it does not follow the disk.
pub struct WriterRun {
    pub writes: Writes,
    pub cpu_us_per_write: Option<f64>,
}

impl WriterRun {
    fn measure(server: &Server, site: &BenchSite, slugs: &[String]) -> Self {
        let before = server.cpu_ticks();
        let writes = run_writers(&server.base, &site.owner_key, COLLECTION, slugs);
        let used = before.zip(server.cpu_ticks()).map(|(before, after)| after.saturating_sub(before));
        let cpu_us_per_write = used
            .filter(|_| !writes.latencies.is_empty())
            .map(|ticks| ticks as f64 / TICKS_PER_SECOND * 1e6 / writes.latencies.len() as f64);
        Self { writes, cpu_us_per_write }
    }
}

pub struct StreamFigures {
    /// Resident memory added per idle stream, in KiB.
    pub kib_per_idle_stream: f64,
    /// The default list with the idle streams open: its share of the ceiling beside it (%).
    pub list_share_with_streams: Option<f64>,
    /// 64 writers without the idle streams, then with them, each round.
    pub write_rounds: Vec<(WriterRun, WriterRun)>,
    /// Sorted.
    pub write_to_event: Vec<Duration>,
}

impl StreamFigures {
    /// Writes/s with the idle streams as a share of without them (%): the median over the
    /// rounds of each round's pair.
    pub fn writes_share(&self) -> Option<f64> {
        let shares: Vec<f64> = self
            .write_rounds
            .iter()
            .filter(|(without, _)| without.writes.per_second() > 0.0)
            .map(|(without, with)| with.writes.per_second() / without.writes.per_second() * 100.0)
            .collect();
        median(&shares)
    }

    /// The median writes/s of the rounds without the streams and with them.
    pub fn writes_per_second(&self) -> (Option<f64>, Option<f64>) {
        self.medians(|run| Some(run.writes.per_second()))
    }

    /// The median server CPU per write (µs) of the rounds without the streams and with them.
    pub fn cpu_us_per_write(&self) -> (Option<f64>, Option<f64>) {
        self.medians(|run| run.cpu_us_per_write)
    }

    fn medians(&self, figure: impl Fn(&WriterRun) -> Option<f64>) -> (Option<f64>, Option<f64>) {
        let side = |pick: fn(&(WriterRun, WriterRun)) -> &WriterRun| {
            median(&self.write_rounds.iter().filter_map(|pair| figure(pick(pair))).collect::<Vec<_>>())
        };
        (side(|(without, _)| without), side(|(_, with)| with))
    }

    /// Failed writes in every round, with the streams and without.
    pub fn write_failures(&self) -> usize {
        self.write_rounds.iter().map(|(without, with)| without.writes.failures + with.writes.failures).sum()
    }

    /// Nearest-rank percentile of write-to-event.
    pub fn write_to_event_percentile(&self, percent: usize) -> Option<Duration> {
        let rank = (self.write_to_event.len() * percent).div_ceil(100);
        self.write_to_event.get(rank.max(1) - 1).copied()
    }
}

/// Opens `count` streams of `query`, each on its own connection, its head read.
fn open_streams(server: &Server, query: &str, count: usize) -> anyhow::Result<Vec<TcpStream>> {
    let address = server.base.strip_prefix("http://").context("the server's address")?;
    let request = format!("GET /cms/events{query} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    (0..count)
        .map(|n| {
            let mut stream = TcpStream::connect(address)?;
            stream.set_nodelay(true)?;
            stream.write_all(request.as_bytes())?;
            stream.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut head = Vec::new();
            let mut byte = [0; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if stream.read(&mut byte)? == 0 {
                    bail!("stream {n} ended in its head: {}", String::from_utf8_lossy(&head));
                }
                head.push(byte[0]);
            }
            if !head.starts_with(b"HTTP/1.1 200") {
                bail!("stream {n} was refused: {}", String::from_utf8_lossy(&head));
            }
            Ok(stream)
        })
        .collect()
}

/// Measures the streams; `list_share` is the default list's share without them (to
/// compare), the server is the 10,000-item one after its writes.
pub fn measure(
    server: &Server,
    site: &BenchSite,
    wrk: &wrk::Settings,
    ceiling: &Ceiling,
) -> anyhow::Result<StreamFigures> {
    settle(server);
    let before = server.rss_kib().context("the server's memory")?;
    // Idle: they follow the small collection without a model, which nothing writes here.
    let idle_query = format!("?collection={PLAIN_COLLECTION}");
    let idle = open_streams(server, &idle_query, STREAMS)?;
    settle(server);
    let after = server.rss_kib().context("the server's memory")?;
    let kib_per_idle_stream = after.saturating_sub(before) as f64 / STREAMS as f64;
    eprintln!("{STREAMS} idle streams: {} KiB more ({kib_per_idle_stream:.1} KiB each)", after - before);

    let list = run_case(Case::ListDefault, server, site, wrk).map_err(anyhow::Error::msg)?;
    let beside = ceiling.measure_beside(server, wrk);
    let list_share_with_streams = beside.map(|ceiling| list.requests_per_sec / ceiling * 100.0);
    // Closed by the client, a stream ends on the server at once (its read sees the end).
    drop(idle);

    let slugs = &site.published_slugs[1..=CONCURRENT_WRITERS];
    let mut write_rounds = Vec::with_capacity(WRITE_ROUNDS);
    for round in 1..=WRITE_ROUNDS {
        settle(server);
        let without = WriterRun::measure(server, site, slugs);
        let idle = open_streams(server, &idle_query, STREAMS)?;
        settle(server);
        let with = WriterRun::measure(server, site, slugs);
        drop(idle);
        eprintln!(
            "writers, round {round}: {:.0}/s ({:.0} µs of server CPU each) without the idle streams, {:.0}/s \
             ({:.0} µs) with them",
            without.writes.per_second(),
            without.cpu_us_per_write.unwrap_or(f64::NAN),
            with.writes.per_second(),
            with.cpu_us_per_write.unwrap_or(f64::NAN),
        );
        write_rounds.push((without, with));
    }

    settle(server);
    let write_to_event = write_to_event(server, site)?;
    Ok(StreamFigures { kib_per_idle_stream, list_share_with_streams, write_rounds, write_to_event })
}

/// With `STREAMS` streams following every event (all but one drained by one thread), one
/// writer `PATCH`es a published item `TIMED_WRITES` times; the last stream's reader notes
/// when each event's frame arrived.
fn write_to_event(server: &Server, site: &BenchSite) -> anyhow::Result<Vec<Duration>> {
    let mut streams = open_streams(server, "", STREAMS)?;
    let probe = streams.pop().context("no stream")?;
    // Ends the probe's reader when the writes are done (it would wait on keep-alives).
    let probe_end = probe.try_clone()?;
    let stop = AtomicBool::new(false);
    let slug = &site.published_slugs[CONCURRENT_WRITERS + 1];
    let url = format!("{}/cms/collections/{COLLECTION}/items/{slug}", server.base);
    let client = Client::new(Duration::from_secs(10));
    std::thread::scope(|scope| {
        let stop = &stop;
        scope.spawn(move || drain(streams, stop));
        let (arrived_tx, arrived) = mpsc::channel();
        scope.spawn(move || read_event_arrivals(probe, &arrived_tx));
        let mut latencies = Vec::with_capacity(TIMED_WRITES);
        let result = (|| {
            for n in 0..TIMED_WRITES {
                let sent = Instant::now();
                let body = format!(r#"{{"fm":{{"n":{n}}}}}"#);
                match client.patch_json(&url, &site.owner_key, &body) {
                    Ok((status, _)) if (200..300).contains(&status) => {}
                    Ok((status, body)) => bail!("PATCH {url} answered {status}: {body}"),
                    Err(error) => return Err(error),
                }
                let at: Instant = arrived.recv_timeout(EVENT_TIMEOUT).context("no event within 10 s")?;
                latencies.push(at.saturating_duration_since(sent));
            }
            Ok(())
        })();
        stop.store(true, Ordering::Relaxed);
        let _ = probe_end.shutdown(std::net::Shutdown::Both);
        result?;
        latencies.sort();
        Ok(latencies)
    })
}

/// Reads the streams without blocking, one pass after another, until told to stop: so
/// that they take their events as clients would.
fn drain(streams: Vec<TcpStream>, stop: &AtomicBool) {
    for stream in &streams {
        let _ = stream.set_nonblocking(true);
    }
    let mut buffer = vec![0; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let mut read_any = false;
        for mut stream in &streams {
            loop {
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(_) => read_any = true,
                    Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => break,
                }
            }
        }
        if !read_any {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Sends the instant each event frame (a line `event: ...`) arrived; ends with the stream.
fn read_event_arrivals(probe: TcpStream, arrived: &mpsc::Sender<Instant>) {
    let _ = probe.set_read_timeout(None);
    for line in BufReader::new(probe).lines() {
        let Ok(line) = line else { return };
        if line.starts_with("event: ") && arrived.send(Instant::now()).is_err() {
            return;
        }
    }
}
