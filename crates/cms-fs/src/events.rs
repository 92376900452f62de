//! The site's event history in the site folder ([`EventStore`]):
//!
//! ```text
//! .cms/events/00000000000000000001.log    one line per event: "<id> <record>\n"
//! .cms/events/00000000000000004097.log    the next segment, named by its first id
//! .cms/events/lock                        held while a process appends
//! ```
//!
//! A segment is closed at [`SEGMENT_BYTES`]; whole segments are forgotten once their last
//! write is older than the retention (the newest never: it carries the count on). The
//! server and a command run on the same folder may both append: each append takes the
//! lock and reads the last id from the newest segment under it. A line cut short by a
//! crash was never answered to anyone: it is cut off before the next append. Lines are
//! written, not synced: the item files they describe are synced, and a power cut that
//! loses the last events' lines makes a stream that resumes past them start again.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cms_core::ports::{EventStore, StoredEvent};
use cms_core::{CoreError, CoreResult};
use time::OffsetDateTime;

use crate::blocking;

/// Where the segments are, under the state folder.
const EVENTS_DIR: &str = "events";
const LOCK_FILE: &str = "lock";
/// A segment closes past this size (about 15,000 events).
const SEGMENT_BYTES: u64 = 4 * 1024 * 1024;
/// How much of a segment's end is read to find its last line.
const TAIL_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone)]
pub struct FsEventStore {
    dir: PathBuf,
    /// Where this process's last append ended (see [`Tail`]).
    tail: Arc<Mutex<Option<Tail>>>,
}

/// The newest segment as this process's last append left it: the next append takes the
/// lock and, when the segment is the same file of the same length and not full (nobody
/// appended since, and nobody can have started a newer segment), goes on from here instead
/// of listing the folder and reading the segment's end (a 64 KiB read on every write).
#[derive(Debug)]
struct Tail {
    path: PathBuf,
    inode: u64,
    len: u64,
    last: u64,
}

impl FsEventStore {
    /// The history under the state folder `state` (`.cms/`).
    pub fn new(state: &Path) -> Self {
        Self { dir: state.join(EVENTS_DIR), tail: Arc::default() }
    }
}

#[async_trait]
impl EventStore for FsEventStore {
    async fn append(&self, _at: OffsetDateTime, records: &[String]) -> CoreResult<Vec<u64>> {
        let dir = self.dir.clone();
        let tail = Arc::clone(&self.tail);
        let records = records.to_vec();
        blocking::run(move || {
            let mut tail = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            append(&dir, &records, &mut tail).map_err(|e| failed("append to", &dir, e))
        })
        .await
    }

    async fn read_after(&self, after: u64, limit: usize) -> CoreResult<Vec<StoredEvent>> {
        let dir = self.dir.clone();
        blocking::run(move || read_after(&dir, after, limit).map_err(|e| failed("read", &dir, e))).await
    }

    async fn last_id(&self) -> CoreResult<u64> {
        let dir = self.dir.clone();
        blocking::run(move || {
            let segments = segments(&dir).map_err(|e| failed("read", &dir, e))?;
            match segments.last() {
                Some(&(first, ref path)) => {
                    Ok(tail(path).map_err(|e| failed("read", &dir, e))?.1.unwrap_or(first - 1))
                }
                None => Ok(0),
            }
        })
        .await
    }

    async fn forget_before(&self, cutoff: OffsetDateTime) -> CoreResult<()> {
        let dir = self.dir.clone();
        blocking::run(move || {
            forget_before(&dir, cutoff).map_err(|e| failed("forget old events in", &dir, e))
        })
        .await
    }
}

fn failed(what: &str, dir: &Path, error: std::io::Error) -> CoreError {
    CoreError::internal(format!("{what} the event log {}", dir.display()), error.to_string())
}

/// The segments, oldest first, by their first id.
fn segments(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(first) = name.to_str().and_then(|n| n.strip_suffix(".log")).and_then(|n| n.parse().ok())
        else {
            continue;
        };
        if first > 0 {
            segments.push((first, entry.path()));
        }
    }
    segments.sort_unstable();
    Ok(segments)
}

/// The length of a segment up to its last whole line, and that line's id.
fn tail(path: &Path) -> std::io::Result<(u64, Option<u64>)> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else { return Ok((start, None)) };
    let whole = start + end as u64 + 1;
    let line = &bytes[..end];
    let line = line.rsplit(|&b| b == b'\n').next().unwrap_or(line);
    let id =
        std::str::from_utf8(line).ok().and_then(|l| l.split_once(' ')).and_then(|(id, _)| id.parse().ok());
    Ok((whole, id))
}

/// Appends under the folder's lock; `known` is where this process's last append ended
/// (taken, and put back only when this one is whole).
fn append(dir: &Path, records: &[String], known: &mut Option<Tail>) -> std::io::Result<Vec<u64>> {
    let lock = match OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK_FILE)) {
        Ok(lock) => lock,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir)?;
            OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(LOCK_FILE))?
        }
        Err(error) => return Err(error),
    };
    lock.lock()?;
    let unchanged = known.take().filter(|known| {
        known.len < SEGMENT_BYTES
            && fs::metadata(&known.path)
                .is_ok_and(|meta| meta.ino() == known.inode && meta.len() == known.len)
    });
    let (path, mut last, len) = match unchanged {
        Some(known) => (known.path, known.last, known.len),
        None => match segments(dir)?.pop() {
            Some((first, path)) => {
                let (whole, id) = tail(&path)?;
                (path, id.unwrap_or(first - 1), whole)
            }
            None => (dir.join(segment_name(1)), 0, 0),
        },
    };
    let full = len >= SEGMENT_BYTES;
    let path = if full { dir.join(segment_name(last + 1)) } else { path };
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    let meta = file.metadata()?;
    let len = if full { meta.len() } else { len };
    if meta.len() > len {
        // A line cut short by a crash: never answered, cut off.
        file.set_len(len)?;
    }
    let mut text = String::new();
    let mut ids = Vec::with_capacity(records.len());
    for record in records {
        last += 1;
        ids.push(last);
        text.push_str(&format!("{last} {}\n", record.replace('\n', " ")));
    }
    file.write_all(text.as_bytes())?;
    *known = Some(Tail { path, inode: meta.ino(), len: len + text.len() as u64, last });
    Ok(ids)
}

fn segment_name(first: u64) -> String {
    format!("{first:020}.log")
}

fn read_after(dir: &Path, after: u64, limit: usize) -> std::io::Result<Vec<StoredEvent>> {
    let segments = segments(dir)?;
    // The last segment that starts at or before the wanted id, else the oldest.
    let from = segments.iter().rposition(|(first, _)| *first <= after + 1).unwrap_or(0);
    let mut found = Vec::new();
    for (_, path) in &segments[from..] {
        let file = match File::open(path) {
            Ok(file) => file,
            // Forgotten meanwhile.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let mut reader = BufReader::new(file);
        let mut line = String::new();
        while reader.read_line(&mut line)? > 0 {
            if !line.ends_with('\n') {
                break;
            }
            if let Some((id, record)) = line.trim_end_matches('\n').split_once(' ')
                && let Ok(id) = id.parse::<u64>()
                && id > after
            {
                found.push(StoredEvent { id, record: record.to_owned() });
                if found.len() == limit {
                    return Ok(found);
                }
            }
            line.clear();
        }
    }
    Ok(found)
}

fn forget_before(dir: &Path, cutoff: OffsetDateTime) -> std::io::Result<()> {
    let mut segments = segments(dir)?;
    segments.pop();
    for (_, path) in segments {
        let modified = fs::metadata(&path)?.modified()?;
        if OffsetDateTime::from(modified) < cutoff {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{{\"n\":{i}}}")).collect()
    }

    #[tokio::test]
    async fn ids_go_on_across_instances_and_a_cut_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsEventStore::new(dir.path());
        let now = OffsetDateTime::now_utc();
        assert_eq!(store.last_id().await.unwrap(), 0);
        assert_eq!(store.append(now, &records(3)).await.unwrap(), [1, 2, 3]);
        // Another process (the command line) appends to the same folder.
        let other = FsEventStore::new(dir.path());
        assert_eq!(other.append(now, &records(1)).await.unwrap(), [4]);
        assert_eq!(store.append(now, &records(1)).await.unwrap(), [5], "goes on after the other's line");
        assert_eq!(other.append(now, &records(1)).await.unwrap(), [6]);
        // A crash in the middle of a line.
        let segment = dir.path().join(EVENTS_DIR).join(segment_name(1));
        OpenOptions::new().append(true).open(&segment).unwrap().write_all(b"7 {\"cut").unwrap();
        assert_eq!(store.last_id().await.unwrap(), 6);
        assert_eq!(store.append(now, &records(1)).await.unwrap(), [7]);
        let read = store.read_after(2, 10).await.unwrap();
        assert_eq!(read.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4, 5, 6, 7]);
        assert_eq!(read[4].record, "{\"n\":0}");
        assert_eq!(store.read_after(0, 2).await.unwrap().len(), 2);
        assert!(store.read_after(7, 10).await.unwrap().is_empty());
        // The segment replaced by another file of the same length (its last id 9, not 7):
        // read again, not trusted.
        let text = String::from_utf8(fs::read(&segment).unwrap()).unwrap();
        let cut = text.trim_end().rfind('\n').unwrap() + 1;
        let replaced = format!("{}9{}", &text[..cut], &text[cut + 1..]);
        let copy = segment.with_extension("copy");
        fs::write(&copy, &replaced).unwrap();
        fs::rename(&copy, &segment).unwrap();
        assert_eq!(store.append(now, &records(1)).await.unwrap(), [10]);
        // The folder removed: made again, the ids start over.
        fs::remove_dir_all(dir.path().join(EVENTS_DIR)).unwrap();
        assert_eq!(store.append(now, &records(1)).await.unwrap(), [1]);
    }

    #[tokio::test]
    async fn old_segments_are_forgotten_but_never_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsEventStore::new(dir.path());
        let now = OffsetDateTime::now_utc();
        // A full first segment, as if written by appends.
        let events = dir.path().join(EVENTS_DIR);
        fs::create_dir_all(&events).unwrap();
        let first = events.join(segment_name(1));
        let mut text = String::new();
        let mut last = 0;
        while (text.len() as u64) < SEGMENT_BYTES {
            last += 1;
            text.push_str(&format!("{last} {{\"padding\":\"{:0>200}\"}}\n", ""));
        }
        fs::write(&first, text).unwrap();
        assert_eq!(store.append(now, &records(1)).await.unwrap(), [last + 1]);
        assert!(events.join(segment_name(last + 1)).exists(), "a new segment");
        store.forget_before(now + time::Duration::hours(1)).await.unwrap();
        assert!(!first.exists());
        let read = store.read_after(0, 10).await.unwrap();
        assert_eq!(read.iter().map(|e| e.id).collect::<Vec<_>>(), [last + 1], "the gap shows");
        store.forget_before(now + time::Duration::hours(1)).await.unwrap();
        assert_eq!(store.last_id().await.unwrap(), last + 1, "the newest segment stays");
    }
}
