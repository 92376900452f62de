//! Live event streams (`GET /cms/events` of the REST API, `/admin/events` of the editor):
//! the bounds on how many are open, and the body that follows the event log as
//! Server-Sent Events. Runtime-free: the adapter hands in its timer.
//!
//! A stream holds no queue of its own: it keeps its place in the event log (an
//! [`EventCursor`]) and writes the next page of events when the client has taken the
//! last one. So a reader that never reads costs the socket's buffers and nothing more,
//! and one that reads too slowly (a page not taken within [`SLOW_READER`]) is dropped;
//! it resumes with `Last-Event-ID` like any other client.

use core::net::IpAddr;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use futures_util::future::{Either, select};

use super::{EventCursor, Next};
use crate::config::EventsConfig;

/// What `retry:` tells clients to wait before reconnecting, in milliseconds.
pub const RETRY_MS: u64 = 3000;
/// A reader that takes longer than this to take one write is dropped.
pub const SLOW_READER: Duration = Duration::from_secs(30);
/// What a refused client is told to wait, in seconds.
pub const RETRY_AFTER_SECS: u64 = 10;

/// The headers of a stream's answer besides its status: the type, never cached, and not
/// held back by proxies such as nginx that would otherwise buffer it.
pub const RESPONSE_HEADERS: [(&str, &str); 3] =
    [("content-type", "text/event-stream"), ("cache-control", "no-store"), ("x-accel-buffering", "no")];

/// Where a stream resumes: `Last-Event-ID` (what `EventSource` sends when it reconnects),
/// else `?since=`; `None` for live events only.
pub fn resume_point(last_event_id: Option<&str>, since: Option<&str>) -> crate::CoreResult<Option<u64>> {
    let (text, name) = match (last_event_id.map(str::trim), since) {
        (Some(text), _) if !text.is_empty() => (text, "Last-Event-ID"),
        (_, Some(text)) => (text.trim(), "since"),
        _ => return Ok(None),
    };
    text.parse::<u64>().map(Some).map_err(|_| {
        crate::CoreError::Invalid(format!(
            "{name} must be an event id (a whole number, 0 for every kept event), got {text:?}"
        ))
    })
}

/// How many streams are open, in total, per key and per address.
pub struct StreamSlots {
    limits: EventsConfig,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    per_key: HashMap<String, usize>,
    per_address: HashMap<IpAddr, usize>,
}

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The server holds `events.max_streams` already.
    Full,
    /// This key holds `events.max_streams_per_key`.
    Key,
    /// This address holds `events.max_streams_per_address`.
    Address,
}

impl Refused {
    /// Whether the whole server is full (`503`) rather than the caller over its share
    /// (`429`).
    pub fn is_full(self) -> bool {
        self == Self::Full
    }

    /// What the refused client is told: which bound, and what to do.
    pub fn message(self, limits: &EventsConfig) -> String {
        match self {
            Self::Full => format!(
                "this server holds {} event streams, its limit (events.max_streams in cms.yaml); retry later or on another server",
                limits.max_streams
            ),
            Self::Key => format!(
                "this key holds {} event streams, the limit per key (events.max_streams_per_key); close one first",
                limits.max_streams_per_key
            ),
            Self::Address => format!(
                "this address holds {} event streams, the limit per address (events.max_streams_per_address); close one first",
                limits.max_streams_per_address
            ),
        }
    }
}

/// An open stream's place in the counts; given back when dropped.
pub struct Slot {
    slots: Arc<StreamSlots>,
    key: Option<String>,
    address: Option<IpAddr>,
}

impl StreamSlots {
    pub fn new(limits: &EventsConfig) -> Arc<Self> {
        Arc::new(Self { limits: limits.clone(), counts: Mutex::default() })
    }

    /// Takes a place for a stream of `key` (a key's id, or an editor session's user) from
    /// `address`.
    pub fn open(self: &Arc<Self>, key: Option<&str>, address: Option<IpAddr>) -> Result<Slot, Refused> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.total >= self.limits.max_streams {
            return Err(Refused::Full);
        }
        if let Some(key) = key
            && counts.per_key.get(key).is_some_and(|&n| n >= self.limits.max_streams_per_key)
        {
            return Err(Refused::Key);
        }
        if let Some(address) = address
            && counts.per_address.get(&address).is_some_and(|&n| n >= self.limits.max_streams_per_address)
        {
            return Err(Refused::Address);
        }
        counts.total += 1;
        if let Some(key) = key {
            *counts.per_key.entry(key.to_owned()).or_default() += 1;
        }
        if let Some(address) = address {
            *counts.per_address.entry(address).or_default() += 1;
        }
        Ok(Slot { slots: Arc::clone(self), key: key.map(str::to_owned), address })
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.slots.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total -= 1;
        if let Some(key) = &self.key
            && let Some(n) = counts.per_key.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                counts.per_key.remove(key);
            }
        }
        if let Some(address) = &self.address
            && let Some(n) = counts.per_address.get_mut(address)
        {
            *n -= 1;
            if *n == 0 {
                counts.per_address.remove(address);
            }
        }
    }
}

/// One stream's state between two writes.
struct Streaming {
    cursor: EventCursor,
    _slot: Slot,
    /// Written before anything else (`retry:` and the reader's place).
    first: Option<Bytes>,
    /// When the last write was handed over (the next poll means the client took it).
    written: Option<Instant>,
    /// Between two comment lines on an idle stream (`events.keep_alive_secs`): they keep
    /// the connection open through proxies that end silent ones.
    keep_alive: Duration,
}

/// The body of a stream: `retry:` and the reader's place (an `id:` line, which sets the
/// client's last event id without an event), then each page of events, a `reset` event
/// when the reader's place is no longer kept, and a comment every `keep_alive`. Ends
/// when the event log closes (the server stops) or the reader is too slow. `sleep` is the
/// adapter's timer (the core names no runtime).
pub fn body<Sleep, Tick>(
    cursor: EventCursor,
    slot: Slot,
    keep_alive: Duration,
    sleep: Sleep,
) -> impl Stream<Item = Result<Bytes, Infallible>>
where
    Sleep: Fn(Duration) -> Tick,
    Tick: Future<Output = ()>,
{
    let first = Bytes::from(format!("retry: {RETRY_MS}\nid: {}\n\n", cursor.position()));
    let state = Streaming { cursor, _slot: slot, first: Some(first), written: None, keep_alive };
    let sleep = Arc::new(sleep);
    futures_util::stream::unfold(state, move |mut state| {
        let sleep = Arc::clone(&sleep);
        async move {
            if state.written.take().is_some_and(|at| at.elapsed() > SLOW_READER) {
                tracing::info!("ended an event stream whose reader was too slow; it may resume");
                return None;
            }
            let chunk = match state.first.take() {
                Some(first) => first,
                None => {
                    let found = {
                        let next = std::pin::pin!(state.cursor.next());
                        let tick = std::pin::pin!(sleep(state.keep_alive));
                        match select(next, tick).await {
                            Either::Left((next, _)) => Some(next),
                            Either::Right(((), _)) => None,
                        }
                    };
                    match found {
                        Some(Next::Events(events)) => {
                            let mut chunk = BytesMut::new();
                            for event in events {
                                chunk.extend_from_slice(&event.frame);
                            }
                            chunk.freeze()
                        }
                        Some(Next::Reset) => Bytes::from(reset_frame(state.cursor.position())),
                        Some(Next::Closed) => return None,
                        None => Bytes::from_static(b": keep-alive\n\n"),
                    }
                }
            };
            state.written = Some(Instant::now());
            Some((Ok(chunk), state))
        }
    })
}

/// The event that tells a reader its place is no longer kept: fetch again, then follow.
fn reset_frame(position: u64) -> String {
    format!(
        "id: {position}\nevent: reset\ndata: {{\"event\":\"reset\",\"last_id\":{position},\"reason\":\"the events after \
         the given id are no longer kept (events.keep_hours) or were never sent; fetch again, then follow\"}}\n\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_in_total_per_key_and_per_address_and_come_back() {
        let limits = EventsConfig {
            max_streams: 3,
            max_streams_per_key: 2,
            max_streams_per_address: 2,
            ..EventsConfig::default()
        };
        let slots = StreamSlots::new(&limits);
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        let there: IpAddr = "127.0.0.2".parse().unwrap();
        let a = slots.open(Some("key_a"), Some(here)).unwrap();
        let _b = slots.open(Some("key_a"), Some(there)).unwrap();
        assert_eq!(slots.open(Some("key_a"), Some(there)).err(), Some(Refused::Key));
        let _c = slots.open(None, Some(here)).unwrap();
        assert_eq!(slots.open(None, None).err(), Some(Refused::Full));
        drop(a);
        let _d = slots.open(None, Some(here)).unwrap();
        drop(_b);
        assert_eq!(slots.open(None, Some(here)).err(), Some(Refused::Address));
        let _e = slots.open(Some("key_a"), Some(there)).unwrap();
        assert_eq!(slots.open_streams(), 3);
    }
}
