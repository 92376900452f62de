//! The change feed of collection folders: which names changed in which folder, or which
//! folder must be rescanned whole, in debounced batches.
//!
//! One `notify` watcher (inotify on Linux) watches each folder non-recursively, and also
//! its parent, or while the folder is missing its nearest existing ancestor, so that a
//! folder created, removed or replaced later is followed. notify calls us back on its own
//! thread, where calling into the watcher would deadlock, so that callback only forwards;
//! a thread of ours owns the watcher, re-arms it, and batches.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// What the watcher saw in one debounced batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// Entries with these names in watched folder number `folder` (index into the list given
    /// to [`FolderWatcher::start`]) were created, modified, renamed to/from, or removed.
    /// Names only (no paths), sorted and deduplicated, without hidden names (starting with
    /// '.'): the `.cms-tmp-*` staging files are never reported. Names that are not UTF-8
    /// are left out too: they can never be items.
    Changed { folder: usize, names: Vec<String> },
    /// Folder number `folder` must be rescanned whole: the kernel queue overflowed, the
    /// watch was lost, or the folder (or a folder above it) was created, removed, or
    /// replaced (`mv new-posts posts`, `rm -rf posts`, a `git checkout` replacing it).
    /// It is sent once the folder is watched again (if that fails, it is retried every
    /// second and another Rescan follows when it works), so a scan made after receiving
    /// it misses nothing.
    Rescan { folder: usize },
}

/// Watches folders (non-recursively: only the entries directly in each) and sends
/// debounced batches. Dropping it stops watching and closes the channel.
pub struct FolderWatcher {
    inbox: mpsc::Sender<Message>,
    thread: Option<JoinHandle<()>>,
}

impl FolderWatcher {
    /// Starts watching `folders` (absolute paths; they need not exist yet). Batches go to
    /// the returned receiver. A batch is sent once events have been quiet for `quiet` (e.g.
    /// 50 ms) or at the latest `max_delay` (e.g. 300 ms) after the first event of the batch,
    /// so that a burst of changes (git pull) is one or a few batches and a single edit shows
    /// up well within a second. Changes made after `start` returns are reported.
    ///
    /// Fails if a path is relative (or has `..` or no parent), or if a watch cannot be
    /// set up (e.g. the inotify watch limit is reached).
    pub fn start(
        folders: Vec<PathBuf>,
        quiet: Duration,
        max_delay: Duration,
    ) -> io::Result<(FolderWatcher, UnboundedReceiver<Vec<WatchEvent>>)> {
        if let Some(bad) = folders.iter().find(|f| !is_plain_absolute(f)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a watched folder must be an absolute path without `..`: {}", bad.display()),
            ));
        }
        let (inbox, messages) = mpsc::channel();
        let mut watches = Watches::new(folders, inbox.clone()).map_err(into_io)?;
        for folder in 0..watches.folders.len() {
            watches.arm(folder).map_err(into_io)?;
        }
        let (out, receiver) = tokio::sync::mpsc::unbounded_channel();
        let thread = thread::Builder::new()
            .name("cms-watch".into())
            .spawn(move || run(watches, &messages, &out, quiet, max_delay))?;
        Ok((FolderWatcher { inbox, thread: Some(thread) }, receiver))
    }
}

impl Drop for FolderWatcher {
    fn drop(&mut self) {
        // The thread drops the notify watcher and the sender, which closes the channel.
        let _ = self.inbox.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark(); // It may be parked with a batch pending.
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for FolderWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderWatcher").finish_non_exhaustive()
    }
}

enum Message {
    /// An event, and when notify's thread saw it.
    Notify(notify::Result<Event>, Instant),
    Stop,
}

/// How long a folder whose watch could not be set up waits before the next try.
const RETRY: Duration = Duration::from_secs(1);

/// The watcher thread: events in, batches out, until stopped or nobody listens.
///
/// With no batch pending it waits on the channel (until a retry is due, if one is), so
/// the first event of a batch wakes it at once. With a batch pending it parks until the
/// batch (or a retry) is due and then takes every event that came meanwhile: each `send`
/// would otherwise wake it, and a busy server's own writes bring events every
/// millisecond. Events carry the time they were seen, so the batch's quiet period is
/// measured as if each had been taken at once.
fn run(
    mut watches: Watches,
    messages: &mpsc::Receiver<Message>,
    out: &UnboundedSender<Vec<WatchEvent>>,
    quiet: Duration,
    max_delay: Duration,
) {
    let mut batch = Batch::default();
    loop {
        let due = batch.due(quiet, max_delay);
        let wake = [due, watches.retry_at].into_iter().flatten().min();
        let first = match (due, wake) {
            (Some(_), Some(at)) => {
                // Woken early only by `FolderWatcher::drop` (or spuriously): fine either way.
                thread::park_timeout(at.saturating_duration_since(Instant::now()));
                Ok(None)
            }
            (_, None) => messages.recv().map(Some).map_err(|_| RecvTimeoutError::Disconnected),
            (None, Some(at)) => messages.recv_timeout(at.saturating_duration_since(Instant::now())).map(Some),
        };
        let stop = match first {
            Ok(first) => {
                first.is_some_and(|message| watches.take(message, &mut batch))
                    || watches.take_waiting(messages, &mut batch)
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if stop {
            return;
        }
        let now = Instant::now();
        if watches.retry_at.is_some_and(|at| at <= now) {
            watches.retry_broken(now, &mut batch);
        }
        if batch.due(quiet, max_delay).is_some_and(|at| at <= now) && out.send(batch.take()).is_err() {
            return; // The receiver is gone: stop watching.
        }
    }
}

/// The notify watcher and what is watched for each folder.
struct Watches {
    watcher: RecommendedWatcher,
    folders: Vec<PathBuf>,
    /// Per folder, the paths watched for it: its nearest existing ancestor (its parent,
    /// when it exists) and the folder itself when it exists. A path is unwatched once no
    /// folder lists it.
    armed: Vec<Vec<PathBuf>>,
    /// Folders whose watch could not be set up, retried at `retry_at`.
    broken: BTreeSet<usize>,
    retry_at: Option<Instant>,
}

impl Watches {
    fn new(folders: Vec<PathBuf>, inbox: mpsc::Sender<Message>) -> notify::Result<Self> {
        // Runs on notify's thread: forward only (calling the watcher from here would deadlock),
        // and only what `handle` would act on: every forward wakes our thread, and a write
        // of the server's own makes about ten events, most of them opens and staging files.
        let watched = folders.clone();
        let watcher = notify::recommended_watcher(move |event| {
            if worth_forwarding(&event, &watched) {
                let _ = inbox.send(Message::Notify(event, Instant::now()));
            }
        })?;
        let armed = vec![Vec::new(); folders.len()];
        Ok(Watches { watcher, folders, armed, broken: BTreeSet::new(), retry_at: None })
    }

    /// Handles one message; `true` when it says to stop.
    fn take(&mut self, message: Message, batch: &mut Batch) -> bool {
        match message {
            Message::Notify(event, at) => {
                self.handle(event, at, batch);
                false
            }
            Message::Stop => true,
        }
    }

    /// Handles every message waiting in the channel; `true` when one says to stop or the
    /// channel is closed.
    fn take_waiting(&mut self, messages: &mpsc::Receiver<Message>, batch: &mut Batch) -> bool {
        loop {
            match messages.try_recv() {
                Ok(message) => {
                    if self.take(message, batch) {
                        return true;
                    }
                }
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    fn handle(&mut self, event: notify::Result<Event>, at: Instant, batch: &mut Batch) {
        let event = match event {
            // A lapse in the events (inotify's IN_Q_OVERFLOW): anything may have happened.
            Ok(event) if event.need_rescan() => return self.rearm_all(at, batch),
            Ok(event) => event,
            Err(error) => {
                tracing::warn!("folder watch error, rescanning every folder: {error}");
                return self.rearm_all(at, batch);
            }
        };
        if is_read(&event.kind) {
            return;
        }
        for path in &event.paths {
            // An entry directly inside watched folders.
            if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
                let visible = name.to_str().filter(|n| !n.starts_with('.'));
                for folder in (0..self.folders.len()).filter(|&i| self.folders[i] == parent) {
                    if let Some(name) = visible {
                        batch.changed(folder, name, at);
                    }
                }
            }
            // A watched folder itself, or a folder above it, was created, removed, renamed
            // or changed: it may be another folder now.
            if self.folders.iter().any(|f| f.starts_with(path)) {
                self.refresh(path, at, batch);
            }
        }
    }

    /// Re-arms every folder at or below `path`, which changed, and has them rescanned.
    fn refresh(&mut self, path: &Path, at: Instant, batch: &mut Batch) {
        // The watches on `path` and below, if any, may be on the folders that were there
        // before (renamed away, replaced): drop them so that the old folders' events are
        // not taken for the new ones'. They all belong to the folders re-armed and
        // rescanned below, which covers any gap this opens.
        let stale: BTreeSet<PathBuf> =
            self.armed.iter().flatten().filter(|p| p.starts_with(path)).cloned().collect();
        for old in stale.iter().map(PathBuf::as_path).chain([path]) {
            let _ = self.watcher.unwatch(old);
        }
        for folder in 0..self.folders.len() {
            if self.folders[folder].starts_with(path) {
                self.arm_or_retry(folder);
                batch.rescan(folder, at);
            }
        }
    }

    fn rearm_all(&mut self, at: Instant, batch: &mut Batch) {
        for folder in 0..self.folders.len() {
            self.arm_or_retry(folder);
            batch.rescan(folder, at);
        }
    }

    /// Arms a folder, or if that fails (e.g. the inotify watch limit), notes it for a retry.
    /// Returns whether it is armed.
    fn arm_or_retry(&mut self, folder: usize) -> bool {
        match self.arm(folder) {
            Ok(()) => {
                self.broken.remove(&folder);
                true
            }
            Err(error) => {
                tracing::warn!(
                    "cannot watch {} (retrying every {RETRY:?}): {error}",
                    self.folders[folder].display()
                );
                self.broken.insert(folder);
                self.retry_at.get_or_insert_with(|| Instant::now() + RETRY);
                false
            }
        }
    }

    /// Retries the folders that could not be armed. Only those armed now are rescanned
    /// (their rescan covers the time they were not watched): a folder that stays broken is
    /// not rescanned over and over.
    fn retry_broken(&mut self, now: Instant, batch: &mut Batch) {
        self.retry_at = None;
        for folder in std::mem::take(&mut self.broken) {
            if self.arm_or_retry(folder) {
                batch.rescan(folder, now);
            }
        }
    }

    /// Watches folder number `folder` as it is now, and unwatches what it no longer needs.
    fn arm(&mut self, folder: usize) -> notify::Result<()> {
        let path = self.folders[folder].clone();
        let mut added = Vec::new();
        let result = self.watch_down(&path, &mut added);
        let keep = match &result {
            Ok(keep) => keep.clone(),
            Err(_) => added.clone(),
        };
        let old = std::mem::replace(&mut self.armed[folder], keep);
        for path in old.into_iter().chain(added) {
            if !self.armed.iter().flatten().any(|p| *p == path) {
                let _ = self.watcher.unwatch(&path); // Already gone if its folder was removed.
            }
        }
        result.map(drop)
    }

    /// Watches the nearest existing ancestor of `folder`, then steps down toward it while
    /// the next folder exists, ending with the folder itself. Top-down, so that a folder
    /// created meanwhile is seen either by the watch above it or by the look that follows.
    /// Returns what to keep watching: the deepest ancestor reached and, when it exists, the
    /// folder. `added` gets every path watched on the way.
    fn watch_down(&mut self, folder: &Path, added: &mut Vec<PathBuf>) -> notify::Result<Vec<PathBuf>> {
        let root = Path::new("/");
        let mut anchor = folder.ancestors().skip(1).find(|p| p.is_dir()).unwrap_or(root).to_path_buf();
        loop {
            match self.watch(&anchor) {
                Ok(()) => added.push(anchor.clone()),
                // Removed since we looked: start again one level up.
                Err(e) if is_not_found(&e) && anchor != root => {
                    anchor.pop();
                    continue;
                }
                Err(e) => return Err(e),
            }
            let next = next_step(&anchor, folder);
            if !next.is_dir() {
                return Ok(vec![anchor]);
            }
            if next != folder {
                anchor = next;
                continue;
            }
            return match self.watch(folder) {
                Ok(()) => {
                    added.push(folder.to_path_buf());
                    Ok(vec![anchor, folder.to_path_buf()])
                }
                // Removed since we looked: the watch on its parent reports that.
                Err(e) if is_not_found(&e) => Ok(vec![anchor]),
                Err(e) => Err(e),
            };
        }
    }

    /// Watches one folder, not its subfolders. Watching a path again is harmless (the
    /// kernel merges it into the existing watch), so folders can share a parent.
    fn watch(&mut self, path: &Path) -> notify::Result<()> {
        self.watcher.watch(path, RecursiveMode::NonRecursive)
    }
}

/// The pending batch: per folder, the changed names or a rescan (which makes names
/// unnecessary).
#[derive(Default)]
struct Batch {
    folders: BTreeMap<usize, Pending>,
    first: Option<Instant>,
    last: Option<Instant>,
}

enum Pending {
    Names(BTreeSet<String>),
    Rescan,
}

impl Batch {
    fn changed(&mut self, folder: usize, name: &str, at: Instant) {
        self.touch(at);
        if let Pending::Names(names) = self.folders.entry(folder).or_insert(Pending::Names(BTreeSet::new())) {
            names.insert(name.to_owned());
        }
    }

    fn rescan(&mut self, folder: usize, at: Instant) {
        self.touch(at);
        self.folders.insert(folder, Pending::Rescan);
    }

    /// Notes activity: the batch waits for `quiet` after the last.
    fn touch(&mut self, at: Instant) {
        self.first = Some(self.first.map_or(at, |first| first.min(at)));
        self.last = Some(self.last.map_or(at, |last| last.max(at)));
    }

    /// When the batch should go: `quiet` after the last event, at most `max_delay` after
    /// the first. None while there is nothing to send.
    fn due(&self, quiet: Duration, max_delay: Duration) -> Option<Instant> {
        if self.folders.is_empty() {
            return None;
        }
        Some((self.last? + quiet).min(self.first? + max_delay))
    }

    fn take(&mut self) -> Vec<WatchEvent> {
        let folders = std::mem::take(&mut self.folders);
        *self = Batch::default();
        folders
            .into_iter()
            .map(|(folder, pending)| match pending {
                Pending::Names(names) => WatchEvent::Changed { folder, names: names.into_iter().collect() },
                Pending::Rescan => WatchEvent::Rescan { folder },
            })
            .collect()
    }
}

/// Whether [`Watches::handle`] could act on this event: not when it is a read, nor when
/// every path it names is a hidden entry (a staging file) that is not a watched folder or
/// above one. Lapses and errors always are.
fn worth_forwarding(event: &notify::Result<Event>, folders: &[PathBuf]) -> bool {
    let Ok(event) = event else { return true };
    if event.need_rescan() {
        return true;
    }
    if is_read(&event.kind) {
        return false;
    }
    let ignored = |path: &PathBuf| {
        let hidden = path.file_name().is_some_and(|name| name.as_encoded_bytes().starts_with(b"."));
        hidden && !folders.iter().any(|folder| folder.starts_with(path))
    };
    !event.paths.iter().all(ignored)
}

/// Reads (opens, closes without writing, including the server's own) change nothing.
fn is_read(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(mode)) => !matches!(mode, AccessMode::Write | AccessMode::Any),
        EventKind::Access(_) => true,
        _ => false,
    }
}

/// The child of `anchor` (an ancestor of `folder`) on the way down to `folder`.
fn next_step(anchor: &Path, folder: &Path) -> PathBuf {
    let rest = folder.strip_prefix(anchor).expect("an ancestor of the folder");
    anchor.join(rest.components().next().expect("a proper ancestor"))
}

fn is_plain_absolute(path: &Path) -> bool {
    path.is_absolute() && path.parent().is_some() && !path.components().any(|c| c == Component::ParentDir)
}

fn is_not_found(error: &notify::Error) -> bool {
    match &error.kind {
        notify::ErrorKind::PathNotFound => true,
        notify::ErrorKind::Io(e) => {
            matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
        }
        _ => false,
    }
}

fn into_io(error: notify::Error) -> io::Error {
    let kind = match &error.kind {
        notify::ErrorKind::Io(e) => e.kind(),
        notify::ErrorKind::PathNotFound => io::ErrorKind::NotFound,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::Flag;

    fn watches(folders: &[&Path]) -> (Watches, mpsc::Receiver<Message>) {
        let (inbox, messages) = mpsc::channel();
        let mut watches = Watches::new(folders.iter().map(|f| f.to_path_buf()).collect(), inbox).unwrap();
        for folder in 0..folders.len() {
            watches.arm(folder).unwrap();
        }
        (watches, messages)
    }

    #[test]
    fn a_rescan_replaces_the_names_of_its_folder() {
        let mut batch = Batch::default();
        let now = Instant::now();
        batch.changed(0, "a.md", now);
        batch.changed(1, "b.md", now);
        batch.changed(1, "b.md", now);
        batch.rescan(0, now);
        batch.changed(0, "c.md", now);
        assert_eq!(
            batch.take(),
            [WatchEvent::Rescan { folder: 0 }, WatchEvent::Changed { folder: 1, names: vec!["b.md".into()] }]
        );
        assert!(batch.due(Duration::ZERO, Duration::ZERO).is_none(), "taking empties the batch");
    }

    #[test]
    fn a_batch_is_due_by_the_times_its_events_were_seen() {
        let start = Instant::now();
        let (quiet, max_delay) = (Duration::from_millis(50), Duration::from_millis(300));
        let mut batch = Batch::default();
        batch.changed(0, "b.md", start + Duration::from_millis(20));
        batch.changed(0, "a.md", start);
        assert_eq!(
            batch.due(quiet, max_delay),
            Some(start + Duration::from_millis(70)),
            "quiet after the last"
        );
        batch.changed(0, "c.md", start + Duration::from_millis(290));
        assert_eq!(batch.due(quiet, max_delay), Some(start + max_delay), "at most max_delay after the first");
    }

    #[test]
    fn a_lapse_or_an_error_rescans_every_folder() {
        let site = tempfile::tempdir().unwrap();
        let (posts, pages) = (site.path().join("posts"), site.path().join("pages"));
        std::fs::create_dir(&posts).unwrap();
        let (mut watches, _messages) = watches(&[&posts, &pages]);
        let everything = [WatchEvent::Rescan { folder: 0 }, WatchEvent::Rescan { folder: 1 }];

        let mut batch = Batch::default();
        watches.handle(Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan)), Instant::now(), &mut batch);
        assert_eq!(batch.take(), everything, "queue overflow");

        let mut batch = Batch::default();
        watches.handle(Err(notify::Error::generic("lost")), Instant::now(), &mut batch);
        assert_eq!(batch.take(), everything, "an error");
    }

    #[test]
    fn only_events_that_can_matter_cross_threads() {
        use notify::event::{CreateKind, ModifyKind, RenameMode};
        let folders = [PathBuf::from("/site/.hidden/posts")];
        let event = |kind, paths: &[&str]| -> notify::Result<Event> {
            Ok(paths.iter().fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p))))
        };
        let staged = "/site/.hidden/posts/.cms-tmp-x1";
        let item = "/site/.hidden/posts/2024-05-01-a.md";
        let dropped = [
            event(EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)), &[item]),
            event(EventKind::Access(AccessKind::Close(AccessMode::Read)), &[item]),
            event(EventKind::Create(CreateKind::File), &[staged]),
            event(EventKind::Modify(ModifyKind::Any), &[staged]),
        ];
        for dropped in &dropped {
            assert!(!worth_forwarding(dropped, &folders), "{dropped:?}");
        }
        let kept = [
            event(EventKind::Access(AccessKind::Close(AccessMode::Write)), &[item]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::Both)), &[staged, item]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::From)), &["/site/.hidden"]),
            event(EventKind::Remove(notify::event::RemoveKind::Folder), &["/site/.hidden/posts"]),
            Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan)),
            Err(notify::Error::generic("lost")),
        ];
        for kept in &kept {
            assert!(worth_forwarding(kept, &folders), "{kept:?}");
        }

        // What is dropped is what `handle` would ignore anyway.
        let site = tempfile::tempdir().unwrap();
        let posts = site.path().join("posts");
        std::fs::create_dir(&posts).unwrap();
        let (mut watches, _messages) = watches(&[&posts]);
        let mut batch = Batch::default();
        let staged = posts.join(".cms-tmp-x1").to_string_lossy().into_owned();
        let item = posts.join("a.md").to_string_lossy().into_owned();
        for event in [
            event(EventKind::Create(CreateKind::File), &[&staged]),
            event(EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)), &[&item]),
            event(
                EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                &[&posts.to_string_lossy()],
            ),
        ] {
            assert!(!worth_forwarding(&event, std::slice::from_ref(&posts)));
            watches.handle(event, Instant::now(), &mut batch);
        }
        assert!(batch.take().is_empty());
    }

    #[test]
    fn folders_are_watched_with_their_parent_or_nearest_ancestor() {
        let site = tempfile::tempdir().unwrap();
        let posts = site.path().join("content/posts");
        let missing = site.path().join("media/a/b");
        std::fs::create_dir_all(&posts).unwrap();
        let (watches, _messages) = watches(&[&posts, &missing]);
        assert_eq!(
            watches.armed,
            [vec![site.path().join("content"), posts], vec![site.path().to_path_buf()]]
        );
    }
}
