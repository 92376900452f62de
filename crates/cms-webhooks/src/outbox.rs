//! The durable outbox: every event the server publishes is appended to
//! `.cms/webhook-outbox.log` before `publish` returns (one `write`, no fsync: the bytes
//! are in the kernel, so they survive the process being killed, `kill -9` included), and
//! a background thread fsyncs the file at most every [`SYNC_EVERY`] when it has new lines
//! (one fsync for a whole group of writes, never one per write). When every delivery of an
//! event has finished, a `done` line follows. At start, the events without one are read
//! back and delivered again: at least once.
//!
//! Lines: `E <seq> <payload JSON>` and `D <seq>`. The file is rewritten with only the
//! pending events when the sink starts, emptied whenever nothing is pending, and rewritten
//! with only the pending events when it has grown past [`COMPACT_AFTER`] bytes and holds
//! more than twice what they take (a receiver that stays down while new events keep
//! coming, with retries spread over hours, would otherwise grow it without end).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use cms_core::events::Event;

pub const OUTBOX_FILE: &str = "webhook-outbox.log";
/// How long a group of appended lines may wait for its fsync.
pub const SYNC_EVERY: Duration = Duration::from_millis(20);

/// Size past which the file is rewritten with only the pending events (see the module
/// documentation).
pub const COMPACT_AFTER: u64 = 1 << 20;

/// The staging file of a rewrite, in the outbox's folder. The prefix is the one every
/// staging file of `.cms/` has, so that the folder adapter's change feed passes it over
/// and its sweep removes what a crash left (a live rewrite holds a shared `flock`).
const STAGING_FILE: &str = ".cms-tmp-webhook-outbox";

/// Replaces the outbox file whole, mode 0600: the text goes to a staging file beside it,
/// fsynced, renamed over it, and the folder fsynced, so that a crash leaves the old file
/// or the new one, never a part. The outbox is this process's own file, so this crate
/// writes it itself.
fn rewrite(path: &Path, text: &[u8]) -> io::Result<()> {
    let folder = path.parent().ok_or_else(|| io::Error::other("the outbox needs a folder"))?;
    let staging = folder.join(STAGING_FILE);
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&staging)?;
    let _ = file.try_lock_shared();
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    file.write_all(text)?;
    file.sync_all()?;
    std::fs::rename(&staging, path)?;
    File::open(folder)?.sync_all()
}

pub struct Outbox {
    path: PathBuf,
    /// The append handle and what the file holds; locked for every change of either, so
    /// that a rewrite never loses a line appended beside it.
    file: Mutex<OutboxFile>,
    next_seq: AtomicU64,
    /// Lines appended since the last fsync.
    dirty: AtomicBool,
}

struct OutboxFile {
    handle: File,
    /// Bytes in the file.
    len: u64,
    /// The `E` line (with its newline) of every event recorded and not yet done.
    pending: BTreeMap<u64, String>,
    /// Bytes of those lines.
    pending_len: u64,
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
        let lines: BTreeMap<u64, String> =
            pending.iter().map(|(seq, (line, _))| (*seq, format!("{line}\n"))).collect();
        let kept: String = lines.values().map(String::as_str).collect();
        rewrite(&path, kept.as_bytes())?;
        let handle = OpenOptions::new().append(true).mode(0o600).open(&path)?;
        let next_seq = pending.keys().next_back().map_or(1, |last| last + 1);
        let len = kept.len() as u64;
        let outbox = Self {
            path,
            file: Mutex::new(OutboxFile { handle, len, pending: lines, pending_len: len }),
            next_seq: AtomicU64::new(next_seq),
            dirty: AtomicBool::new(false),
        };
        Ok((outbox, pending.into_iter().map(|(seq, (_, event))| (seq, event)).collect()))
    }

    /// Appends an event (one `write` to the kernel; the fsync comes with the next group).
    pub fn record(&self, event: &Event) -> u64 {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let body = String::from_utf8_lossy(&crate::payload::body(event)).into_owned();
        let line = format!("E {seq} {body}\n");
        let mut file = lock(&self.file);
        self.append(&mut file, &line);
        file.pending_len += line.len() as u64;
        file.pending.insert(seq, line);
        seq
    }

    /// Records that every delivery of an event finished (logged); the file is emptied
    /// when nothing is pending any more, and rewritten when it has grown well past what is.
    pub fn done(&self, seq: u64) {
        let mut file = lock(&self.file);
        if let Some(line) = file.pending.remove(&seq) {
            file.pending_len -= line.len() as u64;
        }
        if file.pending.is_empty() && file.handle.set_len(0).is_ok() {
            file.len = 0;
            return;
        }
        self.append(&mut file, &format!("D {seq}\n"));
        if file.len > COMPACT_AFTER && file.len > 2 * file.pending_len {
            self.compact(&mut file);
        }
    }

    fn append(&self, file: &mut OutboxFile, line: &str) {
        match file.handle.write_all(line.as_bytes()) {
            Ok(()) => file.len += line.len() as u64,
            Err(error) => {
                tracing::error!(%error, path = %self.path.display(), "cannot append to the webhook outbox")
            }
        }
        self.dirty.store(true, Ordering::Release);
    }

    /// Replaces the file with the pending events only (written whole and fsynced, then
    /// renamed over it), and appends to the new file from then on.
    fn compact(&self, file: &mut OutboxFile) {
        let kept: String = file.pending.values().map(String::as_str).collect();
        let reopened = rewrite(&self.path, kept.as_bytes())
            .and_then(|()| OpenOptions::new().append(true).mode(0o600).open(&self.path));
        match reopened {
            Ok(handle) => {
                file.handle = handle;
                file.len = kept.len() as u64;
            }
            // The old file still holds every line: nothing is lost, it stays longer.
            Err(error) => {
                tracing::warn!(%error, path = %self.path.display(), "cannot compact the webhook outbox")
            }
        }
    }

    /// Fsyncs the appended lines, if any (the sync thread calls it every [`SYNC_EVERY`]).
    pub fn sync(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let file = lock(&self.file).handle.try_clone();
            if let Err(error) = file.and_then(|f| f.sync_data()) {
                tracing::error!(%error, "cannot fsync the webhook outbox");
            }
        }
    }
}

/// An event back from its payload JSON.
fn event_of(json: &str) -> Option<Event> {
    Event::from_body(json)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use cms_core::events::{EventData, EventKind, FileEvent};
    use time::OffsetDateTime;

    use super::*;

    #[test]
    fn undone_events_come_back_and_done_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let event = |filename: &str| Event {
            id: None,
            kind: EventKind::FileCreated,
            timestamp: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
            data: EventData::File(FileEvent::new(filename, 1)),
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

    #[test]
    fn a_file_that_grows_past_its_pending_events_is_rewritten_with_them_only() {
        let dir = tempfile::tempdir().unwrap();
        let event = |filename: String| Event {
            id: None,
            kind: EventKind::FileCreated,
            timestamp: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
            data: EventData::File(FileEvent::new(filename, 1)),
        };
        let (outbox, _) = Outbox::open(dir.path()).unwrap();
        // One event stays pending (its receiver is down) while many others come and go.
        let stuck = outbox.record(&event("stuck.md".into()));
        let path = dir.path().join(OUTBOX_FILE);
        let mut largest = 0;
        for i in 0..20_000 {
            let seq = outbox.record(&event(format!("{i}.md")));
            outbox.done(seq);
            largest = largest.max(std::fs::metadata(&path).unwrap().len());
        }
        assert!(largest <= COMPACT_AFTER + 4096, "bounded: {largest} bytes");
        let last = outbox.record(&event("last.md".into()));
        drop(outbox);
        let (outbox, pending) = Outbox::open(dir.path()).unwrap();
        assert_eq!(
            pending,
            [(stuck, event("stuck.md".into())), (last, event("last.md".into()))],
            "nothing pending lost, nothing done back"
        );
        drop(outbox);
    }
}
