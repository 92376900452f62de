//! [`WebhookSink`]: the core's `EventSink`, delivering off the request path.
//!
//! `publish` only puts the event on a bounded queue (`std::sync::mpsc::sync_channel`) and
//! returns; it never waits for a delivery, a file or the network. Worker threads take
//! events, read the subscriptions (so CLI changes apply to the next event), ask the
//! [`DeliveryGate`] (the license's `webhooks` feature, as it is now), and deliver to each
//! enabled subscription that selected the event, logging every attempt. A failed attempt
//! is tried again after each of `webhooks.retry_delays_secs` in turn (none by default: the
//! spec's single attempt), with the same delivery id, by a timer thread that puts it back
//! on the queue when due; after `webhooks.disable_after` consecutive failed deliveries a
//! subscription is disabled.
//!
//! Nothing is dropped silently: an event that finds the queue full, or arrives after
//! shutdown began, is logged as not sent for each subscription that wanted it; on
//! [`WebhookSink::shutdown`] pending deliveries are finished within the deadline, and
//! whatever is still queued or unanswered then is logged as not sent.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use cms_core::CoreResult;
use cms_core::config::WebhooksConfig;
use cms_core::events::{Event, EventKind};
use cms_core::ports::EventSink;

use crate::deliver::{Deliverer, DeliveryConfig, SetupError};
use crate::gate::DeliveryGate;
use crate::model::{LogEntry, Subscription, delivery_id};
use crate::payload;
use crate::store::WebhookStore;

/// How the sink runs.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// The site's `.cms` folder (for the outbox, which is this process's own).
    pub state_dir: PathBuf,
    /// The subscriptions and the delivery log: in `state_dir`, or shared by several
    /// servers (a bucket site).
    pub store: WebhookStore,
    pub delivery: DeliveryConfig,
    /// Worker threads (deliveries in parallel).
    pub workers: usize,
    /// Events that may wait for a worker; more are logged as not sent.
    pub queue: usize,
    /// Delays before each retry of a failed delivery (empty: one attempt).
    pub retry_delays: Vec<Duration>,
    /// Consecutive failed deliveries after which a subscription is disabled.
    pub disable_after: Option<u32>,
    /// Keep a durable outbox (`.cms/webhook-outbox.log`, see [`crate::outbox`]): the
    /// server's sink does, so that pending deliveries resume after a restart.
    pub outbox: bool,
}

impl SinkConfig {
    pub const DEFAULT_WORKERS: usize = 4;
    pub const DEFAULT_QUEUE: usize = 1024;

    /// From `cms.yaml`'s `webhooks` section; `ca_file` is relative to the site folder.
    pub fn for_site(site: &Path, state_dir: &Path, config: &WebhooksConfig, store: WebhookStore) -> Self {
        Self {
            state_dir: state_dir.to_owned(),
            store,
            delivery: DeliveryConfig {
                timeout: Duration::from_secs(config.timeout_secs.max(1)),
                ca_file: config.ca_file.as_ref().map(|f| site.join(f)),
                user_agent: crate::USER_AGENT.to_owned(),
                allow_private_addresses: config.allow_private_addresses,
            },
            workers: Self::DEFAULT_WORKERS,
            queue: Self::DEFAULT_QUEUE,
            retry_delays: config.retry_delays_secs.iter().map(|s| Duration::from_secs(*s)).collect(),
            disable_after: config.disable_after,
            outbox: false,
        }
    }
}

/// What [`WebhookSink::shutdown`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Every pending delivery finished before the deadline.
    pub finished: bool,
    /// Deliveries logged as not sent because the deadline passed.
    pub abandoned: usize,
}

/// A delivery a worker has taken on and not yet logged.
struct Pending {
    subscription: Subscription,
    event: EventKind,
}

/// What the queue carries: a new event, or a delivery's next attempt.
enum Queued {
    /// With its outbox sequence number, when there is an outbox.
    /// (Boxed: a queue's error hands the message back, and an event is large.)
    Event(Box<Event>, Option<u64>),
    Retry(Retry),
}

/// A failed delivery waiting for its next attempt.
struct Retry {
    delivery: String,
    webhook: String,
    event: EventKind,
    body: Vec<u8>,
    /// The number of the attempt to make.
    attempt: u32,
    seq: Option<u64>,
}

/// One attempt a worker is to make.
struct Due {
    delivery: String,
    body: Vec<u8>,
    attempt: u32,
    seq: Option<u64>,
}

struct Shared {
    store: WebhookStore,
    deliverer: Deliverer,
    gate: Arc<dyn DeliveryGate>,
    /// Taken by one worker at a time; a worker registers an event's deliveries in
    /// `pending` before it lets go, so that shutdown sees them.
    queue: Mutex<Receiver<Queued>>,
    /// The queue's only sender (`None` once shutdown began): `publish` and the retry
    /// timer send through it.
    sender: Mutex<Option<SyncSender<Queued>>>,
    retry_delays: Vec<Duration>,
    disable_after: Option<u32>,
    /// Retries not yet due, with when they are; the timer thread waits on `retry_due`.
    waiting: Mutex<Vec<(Instant, Retry)>>,
    retry_due: Condvar,
    /// Consecutive failed deliveries per subscription id.
    failures: Mutex<HashMap<String, u32>>,
    outbox: Option<crate::outbox::Outbox>,
    /// Per outbox sequence number, the deliveries of that event not yet finished.
    unfinished: Mutex<HashMap<u64, usize>>,
    /// Deliveries taken on and not yet logged, by delivery id. Whoever removes an entry
    /// (the worker after the attempt, or shutdown at its deadline) writes its log entry.
    pending: Mutex<HashMap<String, Pending>>,
    /// Events that could not be queued, with why. `publish` only pushes here (no disk on
    /// the request path); workers and shutdown write them to the log as not sent.
    overflow: Mutex<Vec<(Event, &'static str)>>,
    /// The subscriptions as last read: used while the store cannot be read (a bucket
    /// that does not answer for a moment), so that events are not dropped meanwhile.
    known_subscriptions: Mutex<Option<Vec<Subscription>>>,
    /// Set when the shutdown deadline passed: workers attempt nothing more.
    abandon: AtomicBool,
    /// Live worker threads.
    live: Mutex<usize>,
    stopped: Condvar,
    /// Attempts logged since the start, by [`ATTEMPT_OUTCOMES`].
    attempts: [AtomicU64; 3],
}

/// How a logged delivery attempt ended: the receiver said 2xx, it did not (or could not
/// be reached), or it was not sent (the license, the queue, a stop).
const ATTEMPT_OUTCOMES: [&str; 3] = ["delivered", "failed", "not_sent"];

/// The webhook adapter of the core's `EventSink` port.
pub struct WebhookSink {
    shared: Arc<Shared>,
}

impl WebhookSink {
    /// Starts the workers, which deliver only while `gate` allows. Fails when
    /// `webhooks.ca_file` cannot be used.
    pub fn start(config: SinkConfig, gate: Arc<dyn DeliveryGate>) -> Result<Self, SetupError> {
        let deliverer = Deliverer::new(&config.delivery, config.store.clock())?;
        Ok(Self::with_deliverer(config, deliverer, gate))
    }

    /// Like [`WebhookSink::start`], but broken delivery settings do not stop the caller:
    /// deliveries are then logged as not sent, and the problem is returned to report.
    pub fn start_or_log(config: SinkConfig, gate: Arc<dyn DeliveryGate>) -> (Self, Option<SetupError>) {
        match Deliverer::new(&config.delivery, config.store.clock()) {
            Ok(deliverer) => (Self::with_deliverer(config, deliverer, gate), None),
            Err(error) => {
                let deliverer = Deliverer::unusable(&config.delivery, &error, config.store.clock());
                (Self::with_deliverer(config, deliverer, gate), Some(error))
            }
        }
    }

    fn with_deliverer(config: SinkConfig, deliverer: Deliverer, gate: Arc<dyn DeliveryGate>) -> Self {
        let (outbox, resumed) = if config.outbox {
            match crate::outbox::Outbox::open(&config.state_dir) {
                Ok((outbox, resumed)) => (Some(outbox), resumed),
                Err(error) => {
                    tracing::error!(%error, "cannot open the webhook outbox; deliveries will not survive a restart");
                    (None, Vec::new())
                }
            }
        } else {
            (None, Vec::new())
        };
        let (sender, receiver) = sync_channel(config.queue.max(1).max(resumed.len()));
        if !resumed.is_empty() {
            tracing::info!(
                events = resumed.len(),
                "resuming webhook deliveries left pending by the last run"
            );
        }
        for (seq, event) in resumed {
            let _ = sender.try_send(Queued::Event(Box::new(event), Some(seq)));
        }
        let workers = config.workers.max(1);
        let shared = Arc::new(Shared {
            store: config.store.clone(),
            deliverer,
            gate,
            queue: Mutex::new(receiver),
            sender: Mutex::new(Some(sender)),
            retry_delays: config.retry_delays.clone(),
            disable_after: config.disable_after,
            waiting: Mutex::default(),
            retry_due: Condvar::new(),
            failures: Mutex::default(),
            outbox,
            unfinished: Mutex::default(),
            pending: Mutex::default(),
            overflow: Mutex::default(),
            known_subscriptions: Mutex::default(),
            abandon: AtomicBool::new(false),
            live: Mutex::new(workers),
            stopped: Condvar::new(),
            attempts: Default::default(),
        });
        for n in 0..workers {
            let shared = shared.clone();
            thread::Builder::new()
                .name(format!("webhooks-{n}"))
                .spawn(move || shared.work())
                .expect("spawn a webhook worker");
        }
        if shared.outbox.is_some() {
            let syncing = shared.clone();
            thread::Builder::new()
                .name("webhook-outbox".into())
                .spawn(move || {
                    // Group fsync: one per interval for every line appended meanwhile.
                    while lock(&syncing.sender).is_some() {
                        thread::sleep(crate::outbox::SYNC_EVERY);
                        if let Some(outbox) = &syncing.outbox {
                            outbox.sync();
                        }
                    }
                })
                .expect("spawn the webhook outbox thread");
        }
        if !config.retry_delays.is_empty() {
            let timer = shared.clone();
            thread::Builder::new()
                .name("webhook-retries".into())
                .spawn(move || timer.release_retries())
                .expect("spawn the webhook retry timer");
        }
        Self { shared }
    }

    /// The store the sink reads subscriptions from and logs to.
    pub fn store(&self) -> &WebhookStore {
        &self.shared.store
    }

    /// Stops taking events, lets the workers finish what is queued and in flight, and
    /// waits for them up to `deadline`. Whatever has not finished then is logged as not
    /// sent (a delivery in flight may still have reached its receiver). Call it once,
    /// after the last event was published; later events are logged as not sent.
    pub fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        let until = Instant::now() + deadline;
        drop(lock(&self.shared.sender).take());
        self.shared.retry_due.notify_all();
        let mut live = lock(&self.shared.live);
        while *live > 0 {
            let Some(left) = until.checked_duration_since(Instant::now()) else { break };
            live = self.shared.stopped.wait_timeout(live, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        let finished = *live == 0;
        drop(live);
        let abandoned = if finished { 0 } else { self.shared.abandon_pending() };
        let abandoned = abandoned + self.shared.abandon_waiting();
        self.shared.log_overflow();
        if let Some(outbox) = &self.shared.outbox {
            outbox.sync();
        }
        ShutdownReport { finished, abandoned }
    }
}

impl EventSink for WebhookSink {
    /// Never blocks and never touches the disk: an event that cannot be queued is kept in
    /// memory and logged as not sent by a worker (or at shutdown).
    fn publish(&self, event: Event) {
        let sender = lock(&self.shared.sender);
        let Some(queue) = sender.as_ref() else {
            drop(sender);
            // After shutdown no worker is left; the caller is a stopping process.
            self.shared.log_not_sent(&event, "the process was stopping");
            return;
        };
        // Before the caller's reply: the event is in the kernel's hands (see `outbox`).
        let seq = self.shared.outbox.as_ref().map(|outbox| outbox.record(&event));
        let refused = match queue.try_send(Queued::Event(Box::new(event), seq)) {
            Ok(()) => return,
            Err(TrySendError::Full(Queued::Event(event, _))) => (*event, "the delivery queue was full"),
            Err(TrySendError::Disconnected(Queued::Event(event, _))) => {
                (*event, "no delivery worker was running")
            }
            Err(_) => unreachable!("an event was sent"),
        };
        drop(sender);
        lock(&self.shared.overflow).push(refused);
    }
}

impl Shared {
    fn work(&self) {
        while let Some(deliveries) = self.next() {
            self.log_overflow();
            // Asked when the deliveries are due: the license may have changed since the
            // sink started or the event was published.
            let allowed = if deliveries.is_empty() { Ok(()) } else { self.gate.check() };
            for Due { delivery: id, body, attempt, seq } in deliveries {
                if self.abandon.load(Ordering::SeqCst) {
                    // Shutdown claimed (and logged) what was pending.
                    break;
                }
                let Some(entry) = lock(&self.pending).get(&id).map(|p| (p.subscription.clone(), p.event))
                else {
                    continue;
                };
                let (subscription, event) = entry;
                let logged = match &allowed {
                    Ok(()) => self.deliverer.deliver(&subscription, event, &body, &id, attempt),
                    Err(why) => LogEntry::not_sent(&subscription, event, why, self.store.clock().now()),
                };
                if lock(&self.pending).remove(&id).is_some() {
                    let attempted = logged.duration_ms.is_some();
                    let success = logged.success;
                    self.append(&[logged]);
                    if !success
                        && attempted
                        && let Some(delay) = self.retry_delays.get(attempt as usize - 1)
                    {
                        let retry = Retry {
                            delivery: id,
                            webhook: subscription.id.clone(),
                            event,
                            body,
                            attempt: attempt + 1,
                            seq,
                        };
                        lock(&self.waiting).push((Instant::now() + jittered(*delay), retry));
                        self.retry_due.notify_all();
                    } else {
                        if attempted {
                            self.count_outcome(&subscription, success);
                        }
                        self.finished(seq);
                    }
                }
                self.log_overflow();
            }
        }
        let mut live = lock(&self.live);
        *live -= 1;
        self.stopped.notify_all();
    }

    /// Takes the next event (or retry) and registers its deliveries as pending, while
    /// holding the queue; `None` once the queue is closed and empty. Events that go to no
    /// one are finished here, queue still held: the usual case of a site without
    /// subscriptions then wakes one worker per event, not a second one to take over the
    /// queue as well.
    fn next(&self) -> Option<Vec<Due>> {
        let queue = lock(&self.queue);
        loop {
            let (event, seq) = match queue.recv().ok()? {
                Queued::Event(event, seq) => (*event, seq),
                Queued::Retry(retry) => {
                    // Read again: a subscription disabled or removed meanwhile gets no more.
                    let current = self
                        .subscriptions()
                        .ok()
                        .and_then(|all| all.into_iter().find(|s| s.id == retry.webhook));
                    let Some(subscription) = current.filter(|s| s.enabled) else {
                        tracing::info!(delivery = %retry.delivery, webhook = %retry.webhook, "webhook retry dropped: the subscription is disabled or removed");
                        self.finished(retry.seq);
                        continue;
                    };
                    lock(&self.pending)
                        .insert(retry.delivery.clone(), Pending { subscription, event: retry.event });
                    drop(queue);
                    return Some(vec![Due {
                        delivery: retry.delivery,
                        body: retry.body,
                        attempt: retry.attempt,
                        seq: retry.seq,
                    }]);
                }
            };
            // Unreadable with none read before: the event stays pending in the outbox (the
            // next start delivers it) rather than being marked done.
            let Some(targets) = self.targets(&event) else { return Some(Vec::new()) };
            if targets.is_empty() {
                if let (Some(outbox), Some(seq)) = (&self.outbox, seq) {
                    outbox.done(seq);
                }
                // Refused events are logged by `work`, with the queue let go: that log
                // reads and writes files.
                if !lock(&self.overflow).is_empty() {
                    return Some(Vec::new());
                }
                continue;
            }
            if let Some(seq) = seq {
                lock(&self.unfinished).insert(seq, targets.len());
            }
            let body = payload::body(&event);
            let mut pending = lock(&self.pending);
            let mut deliveries = Vec::with_capacity(targets.len());
            for subscription in targets {
                let id = delivery_id();
                pending.insert(id.clone(), Pending { subscription, event: event.kind });
                deliveries.push(Due { delivery: id, body: body.clone(), attempt: 1, seq });
            }
            drop(queue);
            return Some(deliveries);
        }
    }

    /// The subscriptions that want this event (enabled, selected).
    /// The subscriptions event `event` goes to; `None` when they cannot be read.
    fn targets(&self, event: &Event) -> Option<Vec<Subscription>> {
        match self.subscriptions() {
            Ok(all) => Some(all.into_iter().filter(|s| s.wants(event.kind)).collect()),
            Err(error) => {
                tracing::error!(event = event.kind.as_str(), %error, "cannot read the webhook subscriptions; the event is not delivered now");
                None
            }
        }
    }

    /// The subscriptions, or the last list read while the store cannot be read.
    fn subscriptions(&self) -> CoreResult<Vec<Subscription>> {
        match self.store.list() {
            Ok(all) => {
                *lock(&self.known_subscriptions) = Some(all.clone());
                Ok(all)
            }
            Err(error) => match lock(&self.known_subscriptions).clone() {
                Some(known) => {
                    tracing::warn!(%error, "cannot read the webhook subscriptions; using the list read last");
                    Ok(known)
                }
                None => Err(error),
            },
        }
    }

    /// Writes the events `publish` could not queue to the log, as not sent.
    fn log_overflow(&self) {
        let refused = std::mem::take(&mut *lock(&self.overflow));
        for (event, why) in refused {
            self.log_not_sent(&event, why);
        }
    }

    fn log_not_sent(&self, event: &Event, why: &str) {
        let now = self.store.clock().now();
        let entries: Vec<LogEntry> = self
            .targets(event)
            .unwrap_or_default()
            .iter()
            .map(|s| LogEntry::not_sent(s, event.kind, why, now))
            .collect();
        if !entries.is_empty() {
            tracing::warn!(
                event = event.kind.as_str(),
                webhooks = entries.len(),
                why,
                "webhook event not sent"
            );
        }
        self.append(&entries);
    }

    /// At the shutdown deadline: stops the workers' further attempts, and logs as not sent
    /// every delivery still pending and every event still queued.
    fn abandon_pending(&self) -> usize {
        self.abandon.store(true, Ordering::SeqCst);
        // Holding the queue, no worker is half-way through registering an event.
        let queue = lock(&self.queue);
        let why = "the process stopped before this delivery finished (it may have reached the receiver)";
        let now = self.store.clock().now();
        let mut entries: Vec<LogEntry> = lock(&self.pending)
            .drain()
            .map(|(_, p)| LogEntry::not_sent(&p.subscription, p.event, why, now))
            .collect();
        while let Ok(queued) = queue.try_recv() {
            let why = "the process stopped before this event was delivered";
            match queued {
                Queued::Event(event, _) => {
                    entries.extend(
                        self.targets(&event)
                            .unwrap_or_default()
                            .iter()
                            .map(|s| LogEntry::not_sent(s, event.kind, why, now)),
                    );
                }
                Queued::Retry(retry) => lock(&self.waiting).push((Instant::now(), retry)),
            }
        }
        drop(queue);
        if !entries.is_empty() {
            tracing::warn!(deliveries = entries.len(), "webhook deliveries not finished at shutdown");
        }
        self.append(&entries);
        entries.len()
    }

    /// The retry timer: puts each waiting retry on the queue when it is due, until
    /// shutdown takes the sender.
    fn release_retries(&self) {
        let mut waiting = lock(&self.waiting);
        loop {
            if lock(&self.sender).is_none() {
                return;
            }
            let now = Instant::now();
            let (due, later): (Vec<_>, Vec<_>) =
                std::mem::take(&mut *waiting).into_iter().partition(|(at, _)| *at <= now);
            *waiting = later;
            for (_, retry) in due {
                let sent = lock(&self.sender).as_ref().map(|queue| queue.try_send(Queued::Retry(retry)));
                match sent {
                    Some(Ok(())) => {}
                    // Full: try again shortly. Closed: shutdown logs what is waiting.
                    Some(Err(
                        TrySendError::Full(Queued::Retry(retry))
                        | TrySendError::Disconnected(Queued::Retry(retry)),
                    )) => {
                        waiting.push((now + Duration::from_millis(100), retry));
                    }
                    _ => {}
                }
            }
            let next = waiting.iter().map(|(at, _)| *at).min();
            let wait =
                next.map_or(Duration::from_secs(3600), |at| at.saturating_duration_since(Instant::now()));
            waiting = self.retry_due.wait_timeout(waiting, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// One delivery of an outbox event finished (logged for good): the event is done
    /// when its last one is.
    fn finished(&self, seq: Option<u64>) {
        let (Some(outbox), Some(seq)) = (&self.outbox, seq) else { return };
        let mut unfinished = lock(&self.unfinished);
        let left = unfinished.entry(seq).or_insert(1);
        *left = left.saturating_sub(1);
        if *left == 0 {
            unfinished.remove(&seq);
            drop(unfinished);
            outbox.done(seq);
        }
    }

    /// At shutdown: the retries not yet due are logged as not sent (an outbox keeps
    /// their events for the next start).
    fn abandon_waiting(&self) -> usize {
        let waiting = std::mem::take(&mut *lock(&self.waiting));
        let subscriptions = self.store.list().unwrap_or_default();
        let now = self.store.clock().now();
        let entries: Vec<LogEntry> = waiting
            .into_iter()
            .filter_map(|(_, retry)| {
                let subscription = subscriptions.iter().find(|s| s.id == retry.webhook)?;
                let why = format!("the process stopped before attempt {} was due", retry.attempt);
                let mut entry = LogEntry::not_sent(subscription, retry.event, &why, now);
                entry.delivery = retry.delivery;
                entry.attempt = retry.attempt;
                Some(entry)
            })
            .collect();
        self.append(&entries);
        entries.len()
    }

    /// Counts a finished delivery (its last attempt made): a success resets the
    /// subscription's run of failures; `disable_after` failures in a row disable it.
    fn count_outcome(&self, subscription: &Subscription, success: bool) {
        let mut failures = lock(&self.failures);
        if success {
            failures.remove(&subscription.id);
            return;
        }
        let run = failures.entry(subscription.id.clone()).or_default();
        *run += 1;
        let Some(limit) = self.disable_after.filter(|limit| *run >= *limit) else { return };
        failures.remove(&subscription.id);
        drop(failures);
        match self.store.set_enabled(&subscription.id, false) {
            Ok(_) => tracing::warn!(
                webhook = %subscription.id,
                url = %subscription.url,
                "disabled the webhook after {limit} failed deliveries in a row (webhooks.disable_after); `cms webhooks enable {}` turns it back on",
                subscription.id
            ),
            Err(error) => {
                tracing::error!(webhook = %subscription.id, %error, "cannot disable the failing webhook")
            }
        }
    }

    fn append(&self, entries: &[LogEntry]) {
        for entry in entries {
            let outcome = match (entry.success, entry.duration_ms) {
                (true, _) => 0,
                (false, Some(_)) => 1,
                (false, None) => 2,
            };
            self.attempts[outcome].fetch_add(1, Ordering::Relaxed);
            if entry.success {
                tracing::debug!(delivery = %entry.delivery, attempt = entry.attempt, webhook = %entry.webhook, event = entry.event.as_str(), status = entry.status, "webhook delivered");
            } else {
                tracing::warn!(delivery = %entry.delivery, attempt = entry.attempt, webhook = %entry.webhook, event = entry.event.as_str(), url = %entry.url, status = entry.status, error = entry.error.as_deref().unwrap_or(""), "webhook delivery failed");
            }
        }
        if let Err(error) = self.store.append_log(entries) {
            tracing::error!(%error, entries = entries.len(), "cannot write the webhook delivery log");
        }
    }
}

/// A delay give or take a tenth, so that retries of many deliveries spread out.
fn jittered(delay: Duration) -> Duration {
    let mut byte = [0u8; 1];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut byte);
    delay.mul_f64(0.9 + f64::from(byte[0]) / 255.0 * 0.2)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// For `/metrics`: `webhook_deliveries{outcome}`, `webhook_outbox_events`,
/// `webhook_retries_waiting`, `webhook_subscriptions{state}` (as last read).
impl cms_core::readings::Observed for WebhookSink {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        use cms_core::readings::Reading;
        let shared = &self.shared;
        let mut readings: Vec<Reading> = ATTEMPT_OUTCOMES
            .iter()
            .zip(&shared.attempts)
            .map(|(outcome, count)| {
                let help = "Webhook delivery attempts logged, by outcome (not_sent: the license, a full queue or a stop)";
                Reading::counter("webhook_deliveries", help, count.load(Ordering::Relaxed) as f64).with("outcome", *outcome)
            })
            .collect();
        let unfinished = lock(&shared.unfinished).len() as f64;
        readings.push(Reading::gauge(
            "webhook_outbox_events",
            "Events in the outbox whose deliveries are not all finished",
            unfinished,
        ));
        let waiting = lock(&shared.waiting).len() as f64;
        readings.push(Reading::gauge(
            "webhook_retries_waiting",
            "Failed deliveries waiting for their next attempt",
            waiting,
        ));
        if let Some(subscriptions) = lock(&shared.known_subscriptions).as_ref() {
            let enabled = subscriptions.iter().filter(|s| s.enabled).count();
            let help = "Webhook subscriptions as last read, enabled or disabled (by hand or after failures)";
            readings
                .push(Reading::gauge("webhook_subscriptions", help, enabled as f64).with("state", "enabled"));
            let disabled = (subscriptions.len() - enabled) as f64;
            readings.push(Reading::gauge("webhook_subscriptions", help, disabled).with("state", "disabled"));
        }
        readings
    }
}
