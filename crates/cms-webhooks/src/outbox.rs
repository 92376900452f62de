//! The durable outbox: every event the server publishes is appended to
//! `.cms/webhook-outbox.log` before `publish` returns (one `write`, no fsync: the bytes
//! are in the kernel, so they survive the process being killed, `kill -9` included), and
//! a background thread fsyncs the file at most every [`SYNC_EVERY`] when it has new lines
//! (one fsync for a whole group of writes, never one per write). When every delivery of an
//! event has finished, a `done` line follows. At start, the events without one are read
//! back and delivered again: at least once.
//!
//! Lines: `E <seq> <payload JSON>` and `D <seq>`. The file is rewritten with only the
//! pending events when the sink starts, and emptied whenever nothing is pending.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use cms_core::events::{Event, EventData, EventKind};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub const OUTBOX_FILE: &str = "webhook-outbox.log";
/// How long a group of appended lines may wait for its fsync.
pub const SYNC_EVERY: Duration = Duration::from_millis(20);

pub struct Outbox {
    path: PathBuf,
    file: Mutex<File>,
    next_seq: AtomicU64,
    /// Lines appended since the last fsync.
    dirty: AtomicBool,
    /// Events recorded and not yet done.
    open: Mutex<usize>,
}

impl Outbox {
    /// Opens the site's outbox; returns it with the events a previous process left
    /// undelivered (oldest first), which the caller delivers again.
    pub fn open(state_dir: &Path) -> io::Result<(Self, Vec<(u64, Event)>)> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join(OUTBOX_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let mut pending: BTreeMap<u64, (String, Event)> = BTreeMap::new();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("E", rest)) => {
                    let Some((seq, json)) = rest.split_once(' ') else { continue };
                    let (Ok(seq), Some(event)) = (seq.parse::<u64>(), event_of(json)) else {
                        tracing::warn!(line, "skipping an unreadable webhook outbox line");
                        continue;
                    };
                    pending.insert(seq, (line.to_owned(), event));
                }
                Some(("D", seq)) => {
                    if let Ok(seq) = seq.parse::<u64>() {
                        pending.remove(&seq);
                    }
                }
                // A line cut short by a crash: its event never reached a reply.
                _ => {}
            }
        }
        let kept: String = pending.values().map(|(line, _)| format!("{line}\n")).collect();
        cms_fs::atomic::write_private(&path, kept.as_bytes())?;
        let file = OpenOptions::new().append(true).mode(0o600).open(&path)?;
        let next_seq = pending.keys().next_back().map_or(1, |last| last + 1);
        let outbox = Self {
            path,
            file: Mutex::new(file),
            next_seq: AtomicU64::new(next_seq),
            dirty: AtomicBool::new(false),
            open: Mutex::new(pending.len()),
        };
        Ok((outbox, pending.into_iter().map(|(seq, (_, event))| (seq, event)).collect()))
    }

    /// Appends an event (one `write` to the kernel; the fsync comes with the next group).
    pub fn record(&self, event: &Event) -> u64 {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let body = String::from_utf8_lossy(&crate::payload::body(event)).into_owned();
        *lock(&self.open) += 1;
        self.append(&format!("E {seq} {body}\n"));
        seq
    }

    /// Records that every delivery of an event finished (logged); the file is emptied
    /// when nothing is pending any more.
    pub fn done(&self, seq: u64) {
        let mut open = lock(&self.open);
        *open = open.saturating_sub(1);
        if *open == 0 {
            let file = lock(&self.file);
            if file.set_len(0).is_ok() {
                return;
            }
        }
        drop(open);
        self.append(&format!("D {seq}\n"));
    }

    fn append(&self, line: &str) {
        let mut file = lock(&self.file);
        if let Err(error) = file.write_all(line.as_bytes()) {
            tracing::error!(%error, path = %self.path.display(), "cannot append to the webhook outbox");
        }
        self.dirty.store(true, Ordering::Release);
    }

    /// Fsyncs the appended lines, if any (the sync thread calls it every [`SYNC_EVERY`]).
    pub fn sync(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let file = lock(&self.file).try_clone();
            if let Err(error) = file.and_then(|f| f.sync_data()) {
                tracing::error!(%error, "cannot fsync the webhook outbox");
            }
        }
    }
}

/// An event back from its payload JSON.
fn event_of(json: &str) -> Option<Event> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let kind = EventKind::parse_logged(value["event"].as_str()?)?;
    let timestamp = OffsetDateTime::parse(value["timestamp"].as_str()?, &Rfc3339).ok()?;
    let data = &value["data"];
    let data = match data.get("filename") {
        Some(filename) => EventData::File {
            filename: filename.as_str()?.to_owned(),
            folder: usize::try_from(data["folder"].as_u64()?).ok()?,
        },
        None => EventData::User {
            email: data["email"].as_str()?.to_owned(),
            role: data.get("role").and_then(|r| r.as_str()?.parse().ok()),
        },
    };
    Some(Event { kind, timestamp, data })
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undone_events_come_back_and_done_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let event = |filename: &str| Event {
            kind: EventKind::FileCreated,
            timestamp: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
            data: EventData::File { filename: filename.into(), folder: 1 },
        };
        let (outbox, pending) = Outbox::open(dir.path()).unwrap();
        assert!(pending.is_empty());
        let a = outbox.record(&event("a.md"));
        outbox.record(&event("b.md"));
        outbox.done(a);
        outbox.sync();
        drop(outbox);
        let (outbox, pending) = Outbox::open(dir.path()).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].1, event("b.md"));
        outbox.done(pending[0].0);
        assert_eq!(std::fs::read_to_string(dir.path().join(OUTBOX_FILE)).unwrap(), "", "emptied");
        let (_, pending) = Outbox::open(dir.path()).unwrap();
        assert!(pending.is_empty());
    }
}
