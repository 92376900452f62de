//! The subscriptions and the delivery log: two YAML state documents, `webhooks.yaml` and
//! `webhook-log.yaml`, wherever the site's [`StateDocuments`] port keeps them (`.cms/` of
//! the folder, under its lock, or the bucket, shared by every server), so that every
//! process and server delivers to the same subscriptions and logs to the same log.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cms_core::codec::{self, YamlLimits};
use cms_core::events::EventKind;
use cms_core::ports::{Clock, StateDocuments, WebhookDelivery, WebhookDirectory, WebhookInfo};
use cms_core::{CoreError, CoreResult};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::model::{LogEntry, Subscription};

pub const SUBSCRIPTIONS_FILE: &str = "webhooks.yaml";
pub const LOG_FILE: &str = "webhook-log.yaml";
/// Entries kept in the delivery log; older ones go first.
pub const LOG_KEEP: usize = 200;

/// The subscriptions and the delivery log.
#[derive(Clone)]
pub struct WebhookStore {
    files: Arc<dyn StateDocuments>,
    /// When a subscription is created.
    clock: Arc<dyn Clock>,
    /// `webhooks.allow_private_addresses`: off, a URL whose host is an internal address
    /// written literally (or `localhost`) is refused when added.
    allow_private_addresses: bool,
}

impl fmt::Debug for WebhookStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookStore")
            .field("subscriptions", &self.files.describe(SUBSCRIPTIONS_FILE))
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscriptionRow {
    id: String,
    url: String,
    events: Vec<String>,
    enabled: bool,
    secret: String,
    created_at: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogRow {
    time: String,
    delivery: String,
    webhook: String,
    event: String,
    url: String,
    #[serde(default)]
    status: Option<u16>,
    success: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default = "first_attempt")]
    attempt: u32,
    #[serde(default)]
    body: Option<String>,
}

fn first_attempt() -> u32 {
    1
}

impl WebhookStore {
    /// The store wherever `files` keeps the two documents (the site's storage); `clock`
    /// dates new subscriptions.
    pub fn new(files: Arc<dyn StateDocuments>, clock: Arc<dyn Clock>) -> Self {
        Self { files, clock, allow_private_addresses: false }
    }

    /// The site's clock: it dates subscriptions, and the sink's attempts and log entries.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// The store with `webhooks.allow_private_addresses` as the site sets it (off by
    /// default): whether `add` accepts internal addresses.
    pub fn allowing_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private_addresses = allow;
        self
    }

    // ---- subscriptions -----------------------------------------------------------------

    /// Every subscription, oldest first.
    pub fn list(&self) -> CoreResult<Vec<Subscription>> {
        let text = self.files.read(SUBSCRIPTIONS_FILE)?;
        subscriptions_from_text(text.as_deref(), &self.files.describe(SUBSCRIPTIONS_FILE))
    }

    /// Adds a new subscription (see [`Subscription::create`] for the rules); nothing is
    /// written when it is refused. The result carries the secret, to be shown once.
    pub fn add(&self, url: &str, events: &str) -> CoreResult<Subscription> {
        let subscription = Subscription::create(url, events, self.allow_private_addresses, self.clock.now())?;
        let added = subscription.clone();
        self.change_subscriptions(move |subscriptions| {
            subscriptions.push(added.clone());
            Ok(())
        })?;
        Ok(subscription)
    }

    /// Enables or disables a subscription; `NotFound` for an unknown id.
    pub fn set_enabled(&self, id: &str, enabled: bool) -> CoreResult<Subscription> {
        let id = id.to_owned();
        self.change_subscriptions(move |subscriptions| {
            let subscription = subscriptions.iter_mut().find(|s| s.id == id).ok_or_else(|| unknown(&id))?;
            subscription.enabled = enabled;
            Ok(subscription.clone())
        })
    }

    /// Removes a subscription (its past log entries stay); `NotFound` for an unknown id.
    pub fn remove(&self, id: &str) -> CoreResult<Subscription> {
        let id = id.to_owned();
        self.change_subscriptions(move |subscriptions| {
            let at = subscriptions.iter().position(|s| s.id == id).ok_or_else(|| unknown(&id))?;
            Ok(subscriptions.remove(at))
        })
    }

    /// Applies `change` to the subscriptions read and writes them (nothing when it fails);
    /// returns what its last run answered.
    fn change_subscriptions<R: Send + 'static>(
        &self,
        mut change: impl FnMut(&mut Vec<Subscription>) -> CoreResult<R> + Send + 'static,
    ) -> CoreResult<R> {
        let name = self.files.describe(SUBSCRIPTIONS_FILE);
        let answer = Arc::new(Mutex::new(None));
        let answered = answer.clone();
        self.files.update(
            SUBSCRIPTIONS_FILE,
            Box::new(move |text| {
                let mut subscriptions = subscriptions_from_text(text, &name)?;
                let result = change(&mut subscriptions)?;
                *answered.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                let rows: Vec<SubscriptionRow> = subscriptions.iter().map(subscription_row).collect();
                rows_text(&rows).map(Some)
            }),
        )?;
        let answer = answer.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(answer.expect("set when the change succeeded"))
    }

    // ---- delivery log ------------------------------------------------------------------

    /// The delivery log, oldest first.
    pub fn log(&self) -> CoreResult<Vec<LogEntry>> {
        let text = self.files.read(LOG_FILE)?;
        log_from_text(text.as_deref(), &self.files.describe(LOG_FILE))
    }

    /// Appends entries, keeping the newest [`LOG_KEEP`]. A damaged log file is replaced
    /// (and the reason logged) rather than stopping every later entry from being kept.
    pub fn append_log(&self, entries: &[LogEntry]) -> CoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let name = self.files.describe(LOG_FILE);
        let entries = entries.to_vec();
        self.files.update(
            LOG_FILE,
            Box::new(move |text| {
                let mut log = match log_from_text(text, &name) {
                    Ok(log) => log,
                    Err(CoreError::Corrupt(reason)) => {
                        tracing::error!(%reason, "the webhook delivery log is damaged; starting a new one");
                        Vec::new()
                    }
                    Err(other) => return Err(other),
                };
                log.extend(entries.iter().cloned());
                let excess = log.len().saturating_sub(LOG_KEEP);
                log.drain(..excess);
                rows_text(&log.iter().map(log_row).collect::<Vec<_>>()).map(Some)
            }),
        )
    }

    /// Empties the delivery log; returns how many entries went.
    pub fn clear_log(&self) -> CoreResult<usize> {
        let name = self.files.describe(LOG_FILE);
        let count = Arc::new(Mutex::new(0));
        let counted = count.clone();
        self.files.update(
            LOG_FILE,
            Box::new(move |text| {
                *counted.lock().unwrap_or_else(|p| p.into_inner()) =
                    log_from_text(text, &name).map(|log| log.len()).unwrap_or(0);
                rows_text::<LogRow>(&[]).map(Some)
            }),
        )?;
        Ok(*count.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Runs `work` on a thread of its own and waits for it without blocking the async
    /// caller's thread: the files may be in a bucket, a network round trip away. This
    /// crate names no async runtime (`tests/it/invariants.rs`), so no runtime's blocking
    /// pool; a thread per call is cheap next to that round trip, and the callers (the
    /// webhook settings routes) are rare.
    async fn off_thread<T: Send + 'static>(
        &self,
        work: impl FnOnce(&WebhookStore) -> CoreResult<T> + Send + 'static,
    ) -> CoreResult<T> {
        let store = self.clone();
        let (sender, receiver) = futures_channel::oneshot::channel();
        std::thread::Builder::new()
            .name("webhook-settings".into())
            .spawn(move || {
                let _ = sender.send(work(&store));
            })
            .map_err(|e| CoreError::internal("starting a thread for the webhook settings", e))?;
        receiver.await.map_err(|_| CoreError::internal("the webhook settings", "the thread stopped"))?
    }
}

/// Each call runs on a thread of its own (see `WebhookStore::off_thread`).
#[async_trait]
impl WebhookDirectory for WebhookStore {
    async fn list_webhooks(&self) -> CoreResult<Vec<WebhookInfo>> {
        self.off_thread(|store| Ok(store.list()?.iter().map(Subscription::info).collect())).await
    }

    async fn add_webhook(&self, url: &str, events: &str) -> CoreResult<(WebhookInfo, String)> {
        let (url, events) = (url.to_owned(), events.to_owned());
        let added = self.off_thread(move |store| store.add(&url, &events)).await?;
        Ok((added.info(), added.secret))
    }

    async fn set_webhook_enabled(&self, id: &str, enabled: bool) -> CoreResult<()> {
        let id = id.to_owned();
        self.off_thread(move |store| store.set_enabled(&id, enabled).map(drop)).await
    }

    async fn remove_webhook(&self, id: &str) -> CoreResult<()> {
        let id = id.to_owned();
        self.off_thread(move |store| store.remove(&id).map(drop)).await
    }

    async fn webhook_log(&self) -> CoreResult<Vec<WebhookDelivery>> {
        self.off_thread(|store| Ok(store.log()?.into_iter().map(LogEntry::delivery).collect())).await
    }

    async fn clear_webhook_log(&self) -> CoreResult<usize> {
        self.off_thread(WebhookStore::clear_log).await
    }
}

/// The rows of a state file's text; no file or an empty one has none. A damaged file is
/// `Corrupt`, naming it (`name`).
fn rows_from_text<T: DeserializeOwned>(text: Option<&str>, name: &str) -> CoreResult<Vec<T>> {
    match text {
        None => Ok(Vec::new()),
        Some(text) if text.trim().is_empty() => Ok(Vec::new()),
        Some(text) => codec::from_yaml(text, YamlLimits::STATE).map_err(|e| corrupt(name, e.to_string())),
    }
}

/// The text of a state file holding `rows`.
fn rows_text<T: Serialize>(rows: &[T]) -> CoreResult<String> {
    if rows.is_empty() { Ok("[]\n".to_owned()) } else { codec::to_yaml(&rows) }
}

fn subscriptions_from_text(text: Option<&str>, name: &str) -> CoreResult<Vec<Subscription>> {
    rows_from_text::<SubscriptionRow>(text, name)?
        .into_iter()
        .map(|row| subscription_from_row(row).map_err(|e| corrupt(name, e)))
        .collect()
}

fn log_from_text(text: Option<&str>, name: &str) -> CoreResult<Vec<LogEntry>> {
    rows_from_text::<LogRow>(text, name)?
        .into_iter()
        .map(|row| log_entry_from_row(row).map_err(|e| corrupt(name, e)))
        .collect()
}

fn corrupt(name: &str, reason: String) -> CoreError {
    CoreError::Corrupt(format!("{name}: {reason}"))
}

fn unknown(id: &str) -> CoreError {
    CoreError::not_found(format!("no webhook with id {id}; `cms webhooks list` shows the ids"))
}

fn format_time(time: OffsetDateTime) -> String {
    time.format(&Rfc3339).unwrap_or_default()
}

fn parse_time(text: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(text, &Rfc3339).map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))
}

fn parse_event(name: &str) -> Result<EventKind, String> {
    EventKind::parse_logged(name)
        .ok_or_else(|| format!("unknown event {name:?}; the events are {}", EventKind::names()))
}

fn subscription_row(s: &Subscription) -> SubscriptionRow {
    SubscriptionRow {
        id: s.id.clone(),
        url: s.url.clone(),
        events: s.events.iter().map(|e| e.as_str().to_owned()).collect(),
        enabled: s.enabled,
        secret: s.secret.clone(),
        created_at: format_time(s.created_at),
    }
}

fn subscription_from_row(row: SubscriptionRow) -> Result<Subscription, String> {
    let events = row.events.iter().map(|e| parse_event(e)).collect::<Result<Vec<_>, _>>()?;
    Ok(Subscription {
        events: EventKind::ALL.into_iter().filter(|k| events.contains(k)).collect(),
        created_at: parse_time(&row.created_at)?,
        id: row.id,
        url: row.url,
        enabled: row.enabled,
        secret: row.secret,
    })
}

fn log_row(e: &LogEntry) -> LogRow {
    LogRow {
        time: format_time(e.time),
        delivery: e.delivery.clone(),
        webhook: e.webhook.clone(),
        event: e.event.as_str().to_owned(),
        url: e.url.clone(),
        status: e.status,
        success: e.success,
        error: e.error.clone(),
        duration_ms: e.duration_ms,
        attempt: e.attempt,
        body: e.body.clone(),
    }
}

fn log_entry_from_row(row: LogRow) -> Result<LogEntry, String> {
    Ok(LogEntry {
        time: parse_time(&row.time)?,
        event: parse_event(&row.event)?,
        delivery: row.delivery,
        webhook: row.webhook,
        url: row.url,
        status: row.status,
        success: row.success,
        error: row.error,
        duration_ms: row.duration_ms,
        attempt: row.attempt,
        body: row.body,
    })
}
