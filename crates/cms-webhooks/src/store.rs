//! The subscriptions and the delivery log on disk, under the site's `.cms/`.
//!
//! Both files are YAML state files of [`cms_fs::state_file`] (temp file, fsync,
//! rename, mode 0600). The server's delivery workers and CLI commands may write at the same
//! time, so every read-modify-write holds an exclusive lock on `.cms/webhooks.lock`.
//! Reads take no lock: a rename is atomic, so they see the old file or the new one.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::events::EventKind;
use cms_core::ports::{WebhookDelivery, WebhookDirectory, WebhookInfo};
use cms_core::{CoreError, CoreResult};
use cms_fs::state_file::{read_rows, write_rows};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::model::{LogEntry, Subscription};

pub const SUBSCRIPTIONS_FILE: &str = "webhooks.yaml";
pub const LOG_FILE: &str = "webhook-log.yaml";
const LOCK_FILE: &str = "webhooks.lock";
/// Entries kept in the delivery log; older ones go first.
pub const LOG_KEEP: usize = 200;

/// `.cms/webhooks.yaml` and `.cms/webhook-log.yaml`.
#[derive(Debug, Clone)]
pub struct WebhookStore {
    subscriptions: PathBuf,
    log: PathBuf,
    lock: PathBuf,
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
    /// The store in a site's state folder (`<site>/.cms`).
    pub fn new(state_dir: &Path) -> Self {
        Self {
            subscriptions: state_dir.join(SUBSCRIPTIONS_FILE),
            log: state_dir.join(LOG_FILE),
            lock: state_dir.join(LOCK_FILE),
        }
    }

    // ---- subscriptions -----------------------------------------------------------------

    /// Every subscription, oldest first.
    pub fn list(&self) -> CoreResult<Vec<Subscription>> {
        read_rows::<SubscriptionRow>(&self.subscriptions)?
            .into_iter()
            .map(|row| subscription_from_row(row).map_err(|e| self.corrupt(&self.subscriptions, e)))
            .collect()
    }

    /// Adds a new subscription (see [`Subscription::create`] for the rules); nothing is
    /// written when it is refused. The result carries the secret, to be shown once.
    pub fn add(&self, url: &str, events: &str) -> CoreResult<Subscription> {
        let subscription = Subscription::create(url, events, OffsetDateTime::now_utc())?;
        self.change_subscriptions(|subscriptions| {
            subscriptions.push(subscription.clone());
            Ok(())
        })?;
        Ok(subscription)
    }

    /// Enables or disables a subscription; `NotFound` for an unknown id.
    pub fn set_enabled(&self, id: &str, enabled: bool) -> CoreResult<Subscription> {
        let mut changed = None;
        self.change_subscriptions(|subscriptions| {
            let subscription = subscriptions.iter_mut().find(|s| s.id == id).ok_or_else(|| unknown(id))?;
            subscription.enabled = enabled;
            changed = Some(subscription.clone());
            Ok(())
        })?;
        Ok(changed.expect("set when the change succeeded"))
    }

    /// Removes a subscription (its past log entries stay); `NotFound` for an unknown id.
    pub fn remove(&self, id: &str) -> CoreResult<Subscription> {
        let mut removed = None;
        self.change_subscriptions(|subscriptions| {
            let at = subscriptions.iter().position(|s| s.id == id).ok_or_else(|| unknown(id))?;
            removed = Some(subscriptions.remove(at));
            Ok(())
        })?;
        Ok(removed.expect("set when the change succeeded"))
    }

    fn change_subscriptions(
        &self,
        change: impl FnOnce(&mut Vec<Subscription>) -> CoreResult<()>,
    ) -> CoreResult<()> {
        let _lock = self.lock()?;
        let mut subscriptions = self.list()?;
        change(&mut subscriptions)?;
        let rows: Vec<SubscriptionRow> = subscriptions.iter().map(subscription_row).collect();
        write_rows(&self.subscriptions, &rows)
    }

    // ---- delivery log ------------------------------------------------------------------

    /// The delivery log, oldest first.
    pub fn log(&self) -> CoreResult<Vec<LogEntry>> {
        read_rows::<LogRow>(&self.log)?
            .into_iter()
            .map(|row| log_entry_from_row(row).map_err(|e| self.corrupt(&self.log, e)))
            .collect()
    }

    /// Appends entries, keeping the newest [`LOG_KEEP`]. A damaged log file is replaced
    /// (and the reason logged) rather than stopping every later entry from being kept.
    pub fn append_log(&self, entries: &[LogEntry]) -> CoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let _lock = self.lock()?;
        let mut log = match self.log() {
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
        write_rows(&self.log, &log.iter().map(log_row).collect::<Vec<_>>())
    }

    /// Empties the delivery log; returns how many entries went.
    pub fn clear_log(&self) -> CoreResult<usize> {
        let _lock = self.lock()?;
        let count = self.log().map(|log| log.len()).unwrap_or(0);
        write_rows::<LogRow>(&self.log, &[])?;
        Ok(count)
    }

    // ---- helpers -----------------------------------------------------------------------

    /// An exclusive lock on `.cms/webhooks.lock`, released when the file is dropped.
    fn lock(&self) -> CoreResult<File> {
        let io = |e: io::Error| CoreError::internal(format!("locking {}", self.lock.display()), e);
        if let Some(dir) = self.lock.parent() {
            fs::create_dir_all(dir).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&self.lock)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    fn corrupt(&self, path: &Path, reason: String) -> CoreError {
        CoreError::Corrupt(format!("{}: {reason}", path.display()))
    }
}

/// Reads the small `.cms/webhooks.yaml` inline rather than on a runtime's blocking pool:
/// this crate names no async runtime (see `tests/it/invariants.rs`), and the only caller
/// is the rare webhook settings route.
#[async_trait]
impl WebhookDirectory for WebhookStore {
    async fn list_webhooks(&self) -> CoreResult<Vec<WebhookInfo>> {
        Ok(self.list()?.iter().map(Subscription::info).collect())
    }

    async fn add_webhook(&self, url: &str, events: &str) -> CoreResult<(WebhookInfo, String)> {
        let added = self.add(url, events)?;
        Ok((added.info(), added.secret))
    }

    async fn set_webhook_enabled(&self, id: &str, enabled: bool) -> CoreResult<()> {
        self.set_enabled(id, enabled).map(drop)
    }

    async fn remove_webhook(&self, id: &str) -> CoreResult<()> {
        self.remove(id).map(drop)
    }

    async fn webhook_log(&self) -> CoreResult<Vec<WebhookDelivery>> {
        Ok(self.log()?.into_iter().map(LogEntry::delivery).collect())
    }

    async fn clear_webhook_log(&self) -> CoreResult<usize> {
        self.clear_log()
    }
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
