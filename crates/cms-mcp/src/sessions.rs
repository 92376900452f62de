//! The endpoint's MCP sessions: rmcp's in-memory sessions ([`LocalSessionManager`]), each
//! bound to the key that opened it, bounded per key and in total, and ended when idle.
//!
//! - **Bound to a key.** A session answers only the `mcp_` key that opened it: to any other
//!   key it does not exist (the transport's `404`).
//! - **Bounded.** A key holds at most `mcp.max_sessions_per_key` sessions, the server at
//!   most `mcp.max_sessions`. A new session over a bound ends the oldest idle one in its way
//!   (the key's own for the per-key bound, anyone's for the total); when none is idle, the
//!   new one is refused and the answer names the setting.
//! - **Idle.** A session is busy while a request of it is being answered or one of its
//!   event streams is open, idle otherwise; one idle for `mcp.session_idle_secs` ends.
//! - **Primed for 2025-11-25.** A client that negotiated 2025-11-25 or later gets the SSE
//!   priming event (an event id, `retry:` and empty data) first on each stream; older
//!   clients read every event's data as a JSON-RPC message, so they get none.
//!
//! rmcp's [`SessionManager`] calls carry no request, so the transport's middleware (see
//! `transport.rs`) runs rmcp's handling of each request inside [`CALLER`]: the key, and for
//! an `initialize` the [`Slot`] it reserved.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use cms_core::config::McpConfig;
use cms_core::ports::Clock;
use futures_util::{Stream, StreamExt, stream};
use rmcp::model::{ClientJsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};

/// How long a client waits before it reconnects a dropped stream (the priming event's
/// `retry:`), as rmcp's default.
const RETRY: Duration = Duration::from_secs(3);

tokio::task_local! {
    /// Who makes the request that rmcp is handling; set by the transport's middleware.
    pub(crate) static CALLER: Caller;
}

/// The key of a request, and for an `initialize` the room reserved for its session.
pub(crate) struct Caller {
    key: Arc<str>,
    slot: Mutex<Option<Slot>>,
}

impl Caller {
    pub(crate) fn new(key: Arc<str>, slot: Option<Slot>) -> Self {
        Self { key, slot: Mutex::new(slot) }
    }
}

/// Why a session cannot be opened or used: this crate's one error type.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "this key already has {limit} MCP sessions open and none is idle (mcp.max_sessions_per_key \
         is {limit}): end one (DELETE /mcp with its Mcp-Session-Id) or wait until one is idle"
    )]
    TooManyForKey { limit: usize },
    #[error(
        "the server already has {limit} MCP sessions open and none is idle (mcp.max_sessions is \
         {limit}); try again later"
    )]
    TooMany { limit: usize },
    #[error("no such MCP session for this key")]
    NotFound,
    /// A session rmcp wants to create without a slot: only an `initialize` that went through
    /// the middleware has one.
    #[error("no room was reserved for this session")]
    Unreserved,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// The session manager of `/mcp` (see the module's documentation).
pub struct Sessions {
    local: LocalSessionManager,
    book: Arc<Book>,
    limits: McpConfig,
    sweeping: AtomicBool,
}

/// Who holds which session, and how busy each is.
struct Book {
    table: Mutex<Table>,
    clock: Arc<dyn Clock>,
}

#[derive(Default)]
struct Table {
    open: HashMap<SessionId, Open>,
    /// Slots reserved by `initialize` requests still on their way, per key.
    reserved: HashMap<Arc<str>, usize>,
    /// Orders uses: the idle session with the smallest mark goes first.
    uses: u64,
}

struct Open {
    key: Arc<str>,
    /// Negotiated 2025-11-25 or later: its streams start with a priming event.
    primed: bool,
    /// Requests being answered and streams open.
    busy: usize,
    /// Unix seconds of the last time it became idle (or was used while idle).
    idle_since: i64,
    last_use: u64,
}

impl Table {
    /// The sessions of `key` (open and reserved), and of everyone.
    fn counts(&self, key: &str) -> (usize, usize) {
        let reserved = self.reserved.get(key).copied().unwrap_or(0);
        let mine = self.open.values().filter(|s| &*s.key == key).count() + reserved;
        (mine, self.open.len() + self.reserved.values().sum::<usize>())
    }

    /// The idle session (of `key`, or of anyone) used longest ago, leaving out `skip`.
    fn oldest_idle(&self, key: Option<&str>, skip: &[SessionId]) -> Option<SessionId> {
        self.open
            .iter()
            .filter(|(id, s)| s.busy == 0 && key.is_none_or(|k| &*s.key == k) && !skip.contains(id))
            .min_by_key(|(_, s)| s.last_use)
            .map(|(id, _)| id.clone())
    }

    fn mark(&mut self) -> u64 {
        self.uses += 1;
        self.uses
    }

    fn release(&mut self, key: &Arc<str>) {
        if let Some(count) = self.reserved.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                self.reserved.remove(key);
            }
        }
    }
}

impl Book {
    fn table(&self) -> MutexGuard<'_, Table> {
        // A panic while holding the lock leaves counts that are still counts.
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now(&self) -> i64 {
        self.clock.now().unix_timestamp()
    }

    /// Marks `id` busy until the returned guard is dropped.
    fn busy(self: &Arc<Self>, id: &SessionId) -> Busy {
        let mut table = self.table();
        let mark = table.mark();
        if let Some(session) = table.open.get_mut(id) {
            session.busy += 1;
            session.last_use = mark;
        }
        Busy { book: Arc::clone(self), id: id.clone() }
    }

    fn idle(&self, id: &SessionId) {
        let now = self.now();
        let mut table = self.table();
        let mark = table.mark();
        if let Some(session) = table.open.get_mut(id) {
            session.busy = session.busy.saturating_sub(1);
            session.last_use = mark;
            if session.busy == 0 {
                session.idle_since = now;
            }
        }
    }
}

/// Room for one session of a key, reserved before rmcp creates it; given back if no
/// session comes of it.
pub(crate) struct Slot {
    book: Arc<Book>,
    key: Arc<str>,
    redeemed: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.redeemed {
            self.book.table().release(&self.key);
        }
    }
}

/// A session marked busy while this lives (a request being answered, a stream open).
struct Busy {
    book: Arc<Book>,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.book.idle(&self.id);
    }
}

/// A session's stream, which keeps the session busy while it is open.
struct Held {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    _busy: Busy,
}

impl Stream for Held {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Sessions {
    pub fn new(limits: McpConfig, clock: Arc<dyn Clock>) -> Self {
        let mut local = LocalSessionManager::default();
        // Idle sessions are ended here, where an open stream counts as use; rmcp's own
        // timer counts only messages, and would end a session that is listening.
        local.session_config.keep_alive = None;
        local.session_config.sse_retry = Some(RETRY);
        Self {
            local,
            book: Arc::new(Book { table: Mutex::default(), clock }),
            limits,
            sweeping: AtomicBool::new(false),
        }
    }

    /// Whether `id` is an open session of `key`.
    pub fn is_held_by(&self, id: &str, key: &str) -> bool {
        self.book.table().open.get(id).is_some_and(|s| &*s.key == key)
    }

    /// How many sessions are open (for tests and logs).
    pub fn open_count(&self) -> usize {
        self.book.table().open.len()
    }

    /// Room for a new session of `key`: within the bounds, after ending the oldest idle
    /// session in the way, or refused naming the bound.
    pub(crate) async fn reserve(self: &Arc<Self>, key: Arc<str>) -> Result<Slot, SessionError> {
        self.start_sweeping();
        let ended = {
            let mut table = self.book.table();
            let (mine, all) = table.counts(&key);
            let mut ended = Vec::new();
            if mine >= self.limits.max_sessions_per_key {
                let oldest = table.oldest_idle(Some(&key), &ended);
                ended.push(
                    oldest.ok_or(SessionError::TooManyForKey { limit: self.limits.max_sessions_per_key })?,
                );
            }
            if all - ended.len() >= self.limits.max_sessions {
                let oldest = table.oldest_idle(None, &ended);
                ended.push(oldest.ok_or(SessionError::TooMany { limit: self.limits.max_sessions })?);
            }
            for id in &ended {
                table.open.remove(id);
            }
            *table.reserved.entry(Arc::clone(&key)).or_default() += 1;
            ended
        };
        for id in ended {
            tracing::info!(session = %id, "ended the oldest idle MCP session to make room for a new one");
            self.close_locally(&id).await;
        }
        Ok(Slot { book: Arc::clone(&self.book), key, redeemed: false })
    }

    /// Ends the sessions idle for `mcp.session_idle_secs`; the timer calls it.
    pub async fn end_idle(&self) {
        let now = self.book.now();
        let idle = i64::try_from(self.limits.session_idle_secs).unwrap_or(i64::MAX);
        let ended: Vec<SessionId> = {
            let mut table = self.book.table();
            let ended: Vec<SessionId> = table
                .open
                .iter()
                .filter(|(_, s)| s.busy == 0 && now.saturating_sub(s.idle_since) >= idle)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ended {
                table.open.remove(id);
            }
            ended
        };
        for id in ended {
            tracing::debug!(session = %id, "ended an idle MCP session");
            self.close_locally(&id).await;
        }
    }

    /// Starts the timer that ends idle sessions (once, on the runtime of the first request).
    fn start_sweeping(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let sessions = Arc::downgrade(self);
        let every = Duration::from_secs((self.limits.session_idle_secs / 4).clamp(1, 30));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                ticks.tick().await;
                let Some(sessions) = sessions.upgrade() else { break };
                sessions.end_idle().await;
            }
        });
    }

    async fn close_locally(&self, id: &SessionId) {
        if let Err(error) = self.local.close_session(id).await {
            tracing::warn!(session = %id, %error, "cannot end an MCP session");
        }
    }

    /// `id` if the caller holds it: the caller's key (no caller, as for rmcp's own clean-up
    /// after a session ended, passes).
    fn check_holder(&self, id: &SessionId) -> Result<(), SessionError> {
        let holder = self.book.table().open.get(id).map(|s| Arc::clone(&s.key));
        let allowed = match CALLER.try_with(|c| Arc::clone(&c.key)) {
            Ok(caller) => holder.is_some_and(|h| h == caller),
            Err(_) => true,
        };
        if allowed { Ok(()) } else { Err(SessionError::NotFound) }
    }

    fn primed(&self, id: &SessionId) -> bool {
        self.book.table().open.get(id).is_some_and(|s| s.primed)
    }

    /// `stream` as the session's client should see it, keeping the session busy while open.
    fn hold(
        &self,
        id: &SessionId,
        busy: Busy,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Held {
        let inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>> = if self.primed(id) {
            Box::pin(stream)
        } else {
            // Priming events carry no message: older clients would parse their empty data.
            Box::pin(stream.filter(|event| std::future::ready(event.message.is_some())))
        };
        Held { inner, _busy: busy }
    }
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let slot = CALLER.try_with(|c| c.slot.lock().ok().and_then(|mut s| s.take())).ok().flatten();
        let Some(mut slot) = slot else {
            return Err(SessionError::Unreserved);
        };
        let (id, transport) = self.local.create_session().await?;
        let now = self.book.now();
        let mut table = self.book.table();
        table.release(&slot.key);
        slot.redeemed = true;
        let last_use = table.mark();
        // Busy until its `initialize` is answered.
        let key = Arc::clone(&slot.key);
        table.open.insert(id.clone(), Open { key, primed: false, busy: 1, idle_since: now, last_use });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.local.initialize_session(id, message).await;
        let primed = matches!(
            &answer,
            Ok(ServerJsonRpcMessage::Response(response))
                if matches!(&response.result, ServerResult::InitializeResult(result)
                    if result.protocol_version >= ProtocolVersion::V_2025_11_25)
        );
        if let Some(session) = self.book.table().open.get_mut(id) {
            session.primed = primed;
        }
        self.book.idle(id);
        Ok(answer?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.check_holder(id).is_ok() && self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.check_holder(id)?;
        self.book.table().open.remove(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.check_holder(id)?;
        let busy = self.book.busy(id);
        let stream = self.local.create_stream(id, message).await?;
        Ok(self.hold(id, busy, stream))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.check_holder(id)?;
        let _busy = self.book.busy(id);
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.check_holder(id)?;
        let busy = self.book.busy(id);
        let stream = self.local.create_standalone_stream(id).await?;
        // The standalone stream's first event, as rmcp's transport would send it to all.
        let priming = self.primed(id).then(|| ServerSseMessage::priming("0", RETRY));
        Ok(self.hold(id, busy, stream::iter(priming).chain(stream)))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.check_holder(id)?;
        let busy = self.book.busy(id);
        let stream = self.local.resume(id, last_event_id).await?;
        Ok(self.hold(id, busy, stream))
    }
}

/// For `/metrics`: `mcp_sessions` open now.
impl cms_core::readings::Observed for Sessions {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        let open = self.open_count() as f64;
        vec![cms_core::readings::Reading::gauge("mcp_sessions", "AI-agent (MCP) sessions open", open)]
    }
}

#[cfg(test)]
mod tests {
    use cms_core::testing::FixedClock;

    use super::*;

    const START: i64 = 1_767_225_600;

    fn sessions(max: usize, per_key: usize, idle_secs: u64) -> (Arc<Sessions>, Arc<FixedClock>) {
        let clock = Arc::new(FixedClock::at_unix(START));
        let limits =
            McpConfig { max_sessions: max, max_sessions_per_key: per_key, session_idle_secs: idle_secs };
        (Arc::new(Sessions::new(limits, clock.clone())), clock)
    }

    /// A session of `key`, as an `initialize` through the middleware makes it.
    async fn open(sessions: &Arc<Sessions>, key: &str) -> Result<SessionId, SessionError> {
        let key: Arc<str> = key.into();
        let slot = sessions.reserve(Arc::clone(&key)).await?;
        let caller = Caller::new(key, Some(slot));
        let (id, _transport) = CALLER.scope(caller, sessions.create_session()).await?;
        sessions.book.idle(&id);
        Ok(id)
    }

    #[tokio::test]
    async fn a_session_idle_for_the_setting_ends_and_a_busy_one_does_not() {
        let (sessions, clock) = sessions(10, 5, 120);
        let idle = open(&sessions, "k1").await.unwrap();
        let busy = open(&sessions, "k1").await.unwrap();
        let _stream = sessions.book.busy(&busy);
        clock.advance(119);
        sessions.end_idle().await;
        assert!(sessions.is_held_by(&idle, "k1"), "not yet idle for 120 s");
        clock.advance(1);
        sessions.end_idle().await;
        assert!(!sessions.is_held_by(&idle, "k1"), "idle for 120 s: ended");
        assert!(sessions.is_held_by(&busy, "k1"), "a session with an open stream is not idle");
        assert!(!sessions.local.has_session(&idle).await.unwrap(), "rmcp's session is gone too");
    }

    #[tokio::test]
    async fn use_restarts_the_idle_time() {
        let (sessions, clock) = sessions(10, 5, 60);
        let id = open(&sessions, "k1").await.unwrap();
        clock.advance(50);
        drop(sessions.book.busy(&id));
        clock.advance(50);
        sessions.end_idle().await;
        assert!(sessions.is_held_by(&id, "k1"), "used 50 s ago");
    }

    #[tokio::test]
    async fn the_bounds_end_the_oldest_idle_session_or_refuse() {
        let (sessions, _clock) = sessions(3, 2, 120);
        let first = open(&sessions, "k1").await.unwrap();
        let second = open(&sessions, "k1").await.unwrap();
        drop(sessions.book.busy(&first)); // used after the second: the second is older now
        let third = open(&sessions, "k1").await.unwrap();
        assert!(!sessions.is_held_by(&second, "k1"), "the key's oldest idle session made room");
        assert!(sessions.is_held_by(&first, "k1") && sessions.is_held_by(&third, "k1"));

        let _busy = (sessions.book.busy(&first), sessions.book.busy(&third));
        let refused = open(&sessions, "k1").await.unwrap_err();
        assert!(matches!(refused, SessionError::TooManyForKey { limit: 2 }), "{refused}");
        assert!(refused.to_string().contains("mcp.max_sessions_per_key is 2"), "{refused}");

        let other = open(&sessions, "k2").await.unwrap();
        let _other_busy = sessions.book.busy(&other);
        let refused = open(&sessions, "k2").await.unwrap_err();
        assert!(matches!(refused, SessionError::TooMany { limit: 3 }), "{refused}");
        assert_eq!(sessions.open_count(), 3);
    }

    #[tokio::test]
    async fn a_slot_that_makes_no_session_is_given_back() {
        let (sessions, _clock) = sessions(1, 1, 120);
        drop(sessions.reserve("k1".into()).await.unwrap());
        let id = open(&sessions, "k1").await.unwrap();
        assert!(sessions.is_held_by(&id, "k1"));
    }

    #[tokio::test]
    async fn a_session_is_not_there_for_another_key() {
        let (sessions, _clock) = sessions(10, 5, 120);
        let id = open(&sessions, "k1").await.unwrap();
        let as_key = |key: &str| Caller::new(key.into(), None);
        assert!(CALLER.scope(as_key("k1"), sessions.has_session(&id)).await.unwrap());
        assert!(!CALLER.scope(as_key("k2"), sessions.has_session(&id)).await.unwrap());
        let closed = CALLER.scope(as_key("k2"), sessions.close_session(&id)).await;
        assert!(matches!(closed, Err(SessionError::NotFound)));
        assert!(sessions.is_held_by(&id, "k1"), "another key cannot end it");
        let refused = CALLER.scope(as_key("k1"), sessions.create_session()).await.err();
        assert!(matches!(refused, Some(SessionError::Unreserved)), "no session without a slot");
    }
}
