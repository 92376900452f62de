//! The site's event log: every announced item change as an event with a site-wide id,
//! kept for a while, followed live by streams (`GET /cms/events`, MCP subscriptions, the
//! editor) and carried in webhooks' bodies.
//!
//! The road: the change log's [`Announcer`] queues the event of
//! each change this process announces (under the change log's lock, so in its order);
//! [`EventLog::publish_pending`], awaited by every write before it answers, appends the
//! queue to the [`EventStore`] (which gives the ids: on a bucket site, the same sequence on
//! every node), keeps the newest events in memory, wakes the streams and hands each event,
//! with its id, to the webhooks. A crash between the write and its event is therefore
//! limited to a write that had not answered yet.
//!
//! Events other processes appended (another node of a bucket site, the command line on a
//! folder site) are read from the store: by [`EventLog::catch_up`] (a bucket site's
//! servers poll it), and whenever this process's own append shows ids it has not seen.
//! Ids have no gaps, so a stream knows it missed nothing; one that asks for events the
//! store no longer keeps is told to start again ([`Replay::Reset`]).

mod announcer;
mod cursor;
mod filter;
mod record;
pub mod streams;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use announcer::Announcer;
pub use cursor::{EventCursor, Next};
pub use filter::{EventFilter, ITEM_EVENTS};
pub use record::LoggedEvent;
use record::Pending;

use crate::error::CoreResult;
use crate::ports::{Clock, EventSink, EventStore};

/// Events kept in memory for streams that are a little behind (older ones are read from
/// the store).
const RECENT: usize = 4096;
/// Events read from the store at once.
const PAGE: usize = 256;
/// Events waiting for the store before the oldest are dropped (the store refused them
/// for that long: a full disk, a bucket away).
const MAX_PENDING: usize = 100_000;
/// Others' items marked as announced but perhaps not read ([`EventLog::take_unapplied`])
/// before the marks are dropped: the change feed reads them within a poll anyway.
const MAX_UNAPPLIED: usize = 4096;

/// What a stream gets when it asks for the events after an id.
#[derive(Debug)]
pub enum Replay {
    /// The next events, in order (none: it is up to date).
    Events(Vec<Arc<LoggedEvent>>),
    /// Events after that id are no longer kept (or the id was never given): the reader
    /// must fetch what it shows again, and follow from [`EventLog::last_id`].
    Reset,
}

/// How events name the collection of a change: its slug, the configured collection's
/// index (the spec's `folder`: a translation's events name its collection's), and the
/// language on a site with languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionName {
    pub slug: String,
    pub folder: usize,
    pub lang: Option<String>,
}

/// See the module doc.
pub struct EventLog {
    store: Arc<dyn EventStore>,
    webhooks: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    /// How long the store keeps events (`events.keep_hours`).
    keep: time::Duration,
    /// This process's events waiting for their ids, in the change log's order.
    pending: Mutex<VecDeque<Pending>>,
    /// One append (or catch-up) at a time, so that events are kept in the store's order.
    turn: futures_util::lock::Mutex<()>,
    recent: RwLock<Recent>,
    /// Whether `recent.last` was read from the store.
    started: AtomicBool,
    /// Notified when an event is added and when the log closes.
    moved: event_listener::Event,
    /// Notified when an event of that collection (by index) is added and when the log
    /// closes: a stream of one collection sleeps through the others' events (1,000 of them
    /// woken by every write cost 64 writers a third of their rate).
    moved_in: Vec<event_listener::Event>,
    closed: AtomicBool,
    /// The items of the events other processes appended and this one read, by folder,
    /// language and slug, with their files: this process's index may not have read those
    /// files yet ([`EventLog::take_unapplied`]).
    unapplied: RwLock<Unapplied>,
    /// How many marks `unapplied` holds: a read looks no further while it is 0.
    unapplied_count: AtomicUsize,
}

/// See [`EventLog::take_unapplied`].
#[derive(Default)]
struct Unapplied {
    /// By the event's folder, language and slug: the file, and the catch-up that read it.
    marks: HashMap<(usize, Option<String>, String), (String, u64)>,
    /// Catch-ups so far: a mark two of them old is dropped (the change feed, which reads
    /// the store as often, has read the file since).
    catch_ups: u64,
}

#[derive(Default)]
struct Recent {
    /// The newest events, ids without gaps.
    events: VecDeque<Arc<LoggedEvent>>,
    /// The last id known to this process.
    last: u64,
    /// The id of each collection's newest event this process knows (by index).
    last_in: HashMap<usize, u64>,
    /// The id of each collection's newest event dropped from `events` (it is only in the
    /// store now).
    evicted_in: HashMap<usize, u64>,
    /// Every event from this id to `last` passed through this process in order (kept,
    /// perhaps dropped since): what `last_in` and `evicted_in` say holds from here on.
    whole_since: u64,
}

impl EventLog {
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        webhooks: Arc<dyn EventSink>,
        clock: Arc<dyn Clock>,
        keep: time::Duration,
        collections: usize,
    ) -> Self {
        Self {
            store,
            webhooks,
            clock,
            keep,
            pending: Mutex::default(),
            turn: futures_util::lock::Mutex::new(()),
            recent: RwLock::default(),
            started: AtomicBool::new(false),
            moved: event_listener::Event::new(),
            moved_in: (0..collections).map(|_| event_listener::Event::new()).collect(),
            closed: AtomicBool::new(false),
            unapplied: RwLock::default(),
            unapplied_count: AtomicUsize::new(0),
        }
    }

    /// The file of an item whose change another process announced and this one streamed:
    /// its index may not have read it yet (on a bucket site the other servers' writes are
    /// read at the next poll, their events perhaps before). A read of the item reads the
    /// file first, so that a client that fetches an item on its event gets what the event
    /// announced. Taken once; `None` (one atomic load) when nothing is marked.
    pub(crate) fn take_unapplied(&self, folder: usize, lang: Option<&str>, slug: &str) -> Option<String> {
        if self.unapplied_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let key = (folder, lang.map(str::to_owned), slug.to_owned());
        if !read(&self.unapplied).marks.contains_key(&key) {
            return None;
        }
        let mut unapplied = write(&self.unapplied);
        let (file, _) = unapplied.marks.remove(&key)?;
        self.unapplied_count.store(unapplied.marks.len(), Ordering::Release);
        Some(file)
    }

    fn mark_unapplied(&self, event: &LoggedEvent) {
        let Some(file) = event.file() else { return };
        let Some(slug) = &file.slug else { return };
        let mut unapplied = write(&self.unapplied);
        if unapplied.marks.len() >= MAX_UNAPPLIED {
            unapplied.marks.clear();
        }
        let read_at = unapplied.catch_ups;
        unapplied
            .marks
            .insert((file.folder, file.lang.clone(), slug.clone()), (file.filename.clone(), read_at));
        self.unapplied_count.store(unapplied.marks.len(), Ordering::Release);
    }

    /// Drops the marks of the catch-up before last, at each catch-up.
    fn age_unapplied(&self) {
        if self.unapplied_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut unapplied = write(&self.unapplied);
        unapplied.catch_ups += 1;
        let now = unapplied.catch_ups;
        unapplied.marks.retain(|_, (_, read_at)| *read_at + 2 > now);
        self.unapplied_count.store(unapplied.marks.len(), Ordering::Release);
    }

    /// The id of the newest event this process knows (0: none yet).
    pub fn last_id(&self) -> u64 {
        read(&self.recent).last
    }

    /// Where a reader of `collection` at `after` may move without reading, past events
    /// of other collections only: to the newest id when the collection has had none since
    /// `after`, or to just before the oldest event in memory when its events since are
    /// all there. So a stream of a quiet collection never reads the busy ones' events
    /// back from the store.
    pub(super) fn skip_others(&self, collection: usize, after: u64) -> u64 {
        let recent = read(&self.recent);
        // Before `whole_since` this process saw nothing, so knows nothing of collections.
        if after + 1 < recent.whole_since || after >= recent.last {
            return after;
        }
        if recent.evicted_in.get(&collection).is_some_and(|&id| id > after) {
            return after;
        }
        if recent.last_in.get(&collection).is_none_or(|&id| id <= after) {
            return recent.last;
        }
        let first_in_memory = recent.events.front().map_or(recent.last + 1, |first| first.id());
        after.max(first_in_memory - 1)
    }

    /// What wakes a reader of `collection` (`None`: of every collection).
    pub(super) fn listen(&self, collection: Option<usize>) -> event_listener::EventListener {
        match collection.and_then(|c| self.moved_in.get(c)) {
            Some(moved) => moved.listen(),
            None => self.moved.listen(),
        }
    }

    /// The id of the newest event (read from the store on first use): where a reader
    /// that wants live events only starts.
    pub async fn head(&self) -> CoreResult<u64> {
        if !self.started.load(Ordering::Acquire) {
            let _turn = self.turn.lock().await;
            self.start().await?;
        }
        Ok(self.last_id())
    }

    /// Follows the events after `after` (a stream's `Last-Event-ID`; [`Self::last_id`]
    /// for live events only) that `filter` admits.
    pub fn cursor(self: &Arc<Self>, after: u64, filter: EventFilter) -> EventCursor {
        EventCursor::new(Arc::clone(self), after, filter)
    }

    /// Queues a change's event (the change log's announcer, under its lock).
    pub(crate) fn queue(&self, change: &crate::changes::Change, collection: &CollectionName) {
        let mut pending = lock(&self.pending);
        if pending.len() >= MAX_PENDING {
            pending.pop_front();
            tracing::error!("the event log could not keep up with the store; dropped the oldest event");
        }
        pending.push_back(Pending::of_change(change, collection));
    }

    /// Gives the queued events their ids in the store, keeps them, wakes the streams and
    /// hands them to the webhooks. Awaited by each write before it answers; a failure of
    /// the store keeps them queued for the next call (and is logged).
    pub async fn publish_pending(&self) {
        if lock(&self.pending).is_empty() {
            return;
        }
        let _turn = self.turn.lock().await;
        if let Err(error) = self.start().await {
            tracing::warn!(%error, "cannot read the event log; events wait for the next write");
            return;
        }
        let batch: Vec<Pending> = lock(&self.pending).drain(..).collect();
        if batch.is_empty() {
            return;
        }
        let records: Vec<String> = batch.iter().map(Pending::record).collect();
        let ids = match self.store.append(self.clock.now(), &records).await {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, events = batch.len(), "cannot append to the event log; retrying with the next write");
                let mut pending = lock(&self.pending);
                for event in batch.into_iter().rev() {
                    pending.push_front(event);
                }
                return;
            }
        };
        let last = self.last_id();
        let contiguous = ids.iter().enumerate().all(|(n, &id)| id == last + 1 + n as u64);
        let mut ours: HashMap<u64, Pending> = ids.into_iter().zip(batch).collect();
        if contiguous {
            let mut ids: Vec<u64> = ours.keys().copied().collect();
            ids.sort_unstable();
            for id in ids {
                let pending = ours.remove(&id).expect("an id of ours");
                self.webhooks.publish(self.keep_event(LoggedEvent::new(id, pending.event, pending.public)));
            }
        } else if let Err(error) = self.read_store(&mut ours).await {
            tracing::warn!(%error, "cannot read others' events from the event log");
        }
    }

    /// Reads the events other processes appended since the last one this process knows
    /// (a bucket site's servers call it every poll).
    pub async fn catch_up(&self) -> CoreResult<()> {
        let _turn = self.turn.lock().await;
        self.start().await?;
        self.age_unapplied();
        self.read_store(&mut HashMap::new()).await
    }

    /// The events after `after`, at most a page of them, from memory when they are
    /// recent, else from the store.
    pub async fn after(&self, after: u64) -> CoreResult<Replay> {
        if after > self.head().await? {
            // Perhaps given by another server that is ahead of this one.
            self.catch_up().await?;
            if after > self.last_id() {
                return Ok(Replay::Reset);
            }
        }
        {
            let recent = read(&self.recent);
            if after == recent.last {
                return Ok(Replay::Events(Vec::new()));
            }
            if let Some(first) = recent.events.front()
                && after + 1 >= first.id()
            {
                let skip = (after + 1 - first.id()) as usize;
                return Ok(Replay::Events(recent.events.iter().skip(skip).take(PAGE).cloned().collect()));
            }
        }
        let stored = self.store.read_after(after, PAGE).await?;
        match stored.first() {
            Some(first) if first.id == after + 1 => Ok(Replay::Events(
                stored.iter().filter_map(|stored| LoggedEvent::decode(stored.id, &stored.record)).collect(),
            )),
            _ => Ok(Replay::Reset),
        }
    }

    /// Forgets the events older than `events.keep_hours` in the store.
    pub async fn forget_old(&self) -> CoreResult<()> {
        self.store.forget_before(self.clock.now() - self.keep).await
    }

    /// Ends every stream (the server is stopping); events are still logged.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.moved.notify(usize::MAX);
        for moved in &self.moved_in {
            moved.notify(usize::MAX);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Reads the last id from the store, once (under `turn`).
    async fn start(&self) -> CoreResult<()> {
        if self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        let last = self.store.last_id().await?;
        let mut recent = write(&self.recent);
        recent.last = last;
        recent.whole_since = last + 1;
        drop(recent);
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// Reads every event after the last known one from the store (under `turn`); those
    /// in `ours` are this process's and go to the webhooks too.
    async fn read_store(&self, ours: &mut HashMap<u64, Pending>) -> CoreResult<()> {
        loop {
            let last = self.last_id();
            let page = self.store.read_after(last, PAGE).await?;
            let Some(newest) = page.last().map(|stored| stored.id) else { return Ok(()) };
            for stored in page {
                let event = match ours.remove(&stored.id) {
                    Some(pending) => {
                        let event = LoggedEvent::new(stored.id, pending.event, pending.public);
                        self.webhooks.publish(self.keep_event(event));
                        continue;
                    }
                    None => {
                        let theirs = LoggedEvent::decode(stored.id, &stored.record);
                        if let Some(event) = &theirs {
                            self.mark_unapplied(event);
                        }
                        theirs
                    }
                };
                match event {
                    Some(event) => {
                        self.keep_event(event);
                    }
                    None => {
                        tracing::warn!(id = stored.id, "skipped an event this version cannot read");
                        self.skip_to(stored.id);
                    }
                }
            }
            if newest <= last {
                return Ok(());
            }
        }
    }

    /// Keeps an event among the recent ones and wakes the streams; returns it as the
    /// webhooks take it.
    fn keep_event(&self, event: Arc<LoggedEvent>) -> crate::events::Event {
        let collection = event.file().map(|file| file.folder);
        {
            let mut recent = write(&self.recent);
            if event.id() != recent.last + 1 {
                // Events between were forgotten by the store: the recent ones must have
                // no gaps (a stream in the gap is told to start again).
                recent.events.clear();
                recent.whole_since = event.id();
            }
            recent.last = event.id();
            if let Some(collection) = collection {
                recent.last_in.insert(collection, event.id());
            }
            if recent.events.len() == RECENT
                && let Some(dropped) = recent.events.pop_front()
                && let Some(file) = dropped.file()
            {
                recent.evicted_in.insert(file.folder, dropped.id());
            }
            recent.events.push_back(Arc::clone(&event));
        }
        self.moved.notify(usize::MAX);
        if let Some(moved) = collection.and_then(|c| self.moved_in.get(c)) {
            moved.notify(usize::MAX);
        }
        event.event.clone()
    }

    /// Moves past an event that cannot be read.
    fn skip_to(&self, id: u64) {
        let mut recent = write(&self.recent);
        recent.events.clear();
        recent.last = id;
        recent.whole_since = id + 1;
    }
}

// A panic while holding these locks leaves whole values behind (each change is one step).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
