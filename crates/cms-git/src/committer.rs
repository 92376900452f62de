//! The committer: the change log's subscriber queues each write (journaled first, with the
//! bytes it wrote), and a thread of its own commits the queue, one author's consecutive
//! changes per commit. With `git.group_window_ms: 0` it commits as soon as it is free, so
//! the writes an author made while it was busy share the next commit and the history keeps
//! up with any write rate; with a window it waits that long after a change for more.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cms_core::changes::{Cause, Change, ChangeKind, ChangeSubscriber};
use cms_core::collection::Collection;
use cms_core::slug::ItemFilename;

use crate::journal::{Journal, Pending, Verb};
use crate::pusher::PushSignal;
use crate::repo::{Repo, ToCommit};
use crate::status::Shared;

/// Bytes of written files the queue holds at most; past it a change is committed from the
/// working tree's file (what it holds when the commit is made).
const KEPT_BYTES: usize = 64 << 20;

/// The longest wait before a failed commit is tried again.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

pub(crate) struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    changes: VecDeque<Queued>,
    journal: Journal,
    kept_bytes: usize,
    stopping: bool,
}

struct Queued {
    change: ToCommit,
    /// Its journal line, written again while it is pending when the journal is rewritten.
    line: String,
    arrived: Instant,
}

impl Queue {
    pub(crate) fn new(journal: Journal) -> Self {
        let state = QueueState { changes: VecDeque::new(), journal, kept_bytes: 0, stopping: false };
        Self { state: Mutex::new(state), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes not committed yet.
    pub(crate) fn len(&self) -> usize {
        self.lock().changes.len()
    }

    fn push(&self, pending: Pending, bytes: Option<Arc<[u8]>>) {
        let line = Journal::line(&pending);
        let mut state = self.lock();
        if let Err(error) = state.journal.append(&line) {
            // The write is made; only a crash before its commit would leave it out.
            tracing::warn!(%error, "git: cannot journal a change; a crash before its commit would leave it uncommitted");
        }
        let bytes = bytes.filter(|bytes| state.kept_bytes + bytes.len() <= KEPT_BYTES);
        state.kept_bytes += bytes.as_ref().map_or(0, |bytes| bytes.len());
        state.changes.push_back(Queued {
            change: ToCommit { pending, bytes },
            line,
            arrived: Instant::now(),
        });
        drop(state);
        self.changed.notify_one();
    }

    /// Tells the committer to commit what is queued, then stop.
    pub(crate) fn stop(&self) {
        self.lock().stopping = true;
        self.changed.notify_all();
    }

    /// Waits for the next commit's changes: the first author's consecutive changes, once
    /// the window after the oldest passed; `None` once stopping with nothing left.
    fn next_batch(&self, window: Duration) -> Option<Vec<ToCommit>> {
        let mut state = self.lock();
        loop {
            let Some(oldest) = state.changes.front() else {
                if state.stopping {
                    return None;
                }
                state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let due = oldest.arrived + window;
            let now = Instant::now();
            if state.stopping || now >= due {
                break;
            }
            state = self.changed.wait_timeout(state, due - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        let first = &state.changes[0].change.pending;
        let author = (first.author.clone(), first.email.clone());
        Some(
            state
                .changes
                .iter()
                .take_while(|queued| {
                    (&queued.change.pending.author, &queued.change.pending.email) == (&author.0, &author.1)
                })
                .map(|queued| queued.change.clone())
                .collect(),
        )
    }

    /// Drops the first `count` changes, committed, and rewrites the journal with the rest.
    fn committed(&self, count: usize) {
        let mut state = self.lock();
        let state = &mut *state;
        for queued in state.changes.drain(..count) {
            state.kept_bytes -= queued.change.bytes.as_ref().map_or(0, |bytes| bytes.len());
        }
        if let Err(error) = state.journal.keep_only(state.changes.iter().map(|queued| queued.line.as_str())) {
            tracing::warn!(%error, "git: cannot rewrite the journal of pending changes");
        }
    }

    /// Sleeps `delay`, or less when told to stop; whether stopping.
    fn pause(&self, delay: Duration) -> bool {
        let state = self.lock();
        if state.stopping {
            return true;
        }
        self.changed.wait_timeout(state, delay).unwrap_or_else(PoisonError::into_inner).0.stopping
    }
}

/// Where a collection's items are, for the subscriber.
struct Folder {
    slug: String,
    /// In the site folder, on disk.
    on_disk: PathBuf,
    /// In the repository: `content/posts`.
    in_repo: String,
}

/// The change log's subscriber: writes through the facade, queued for the committer.
/// Outside edits are left to whoever made them (a developer commits their own), another
/// node's writes do not happen on a folder site, and the schedule changes no file.
pub(crate) struct Subscriber {
    queue: Arc<Queue>,
    folders: Vec<Folder>,
}

impl Subscriber {
    pub(crate) fn new(
        queue: Arc<Queue>,
        repo: &Repo,
        site: &std::path::Path,
        collections: &[Collection],
    ) -> Self {
        let folders = collections
            .iter()
            .map(|collection| {
                let in_site = cms_core::sitepath::display(&cms_core::sitepath::configured(&collection.path));
                Folder {
                    slug: collection.slug.clone(),
                    on_disk: site.join(&in_site),
                    in_repo: repo.path_of(&in_site),
                }
            })
            .collect();
        Self { queue, folders }
    }
}

impl ChangeSubscriber for Subscriber {
    fn changed(&self, change: &Change) {
        let Cause::Write { author, email } = &change.cause else { return };
        let verb = match change.kind {
            ChangeKind::Created => Verb::Create,
            ChangeKind::Updated => Verb::Update,
            ChangeKind::Deleted => Verb::Delete,
            ChangeKind::Published | ChangeKind::Unpublished => return,
        };
        let Some(folder) = self.folders.get(change.collection) else { return };
        let filename = &*change.filename;
        // The bytes this write made: the file cannot change before this call returns (the
        // item's write lock is held), so the commit holds exactly this write.
        let bytes = match verb {
            Verb::Delete => None,
            _ => std::fs::read(folder.on_disk.join(filename)).ok().map(Arc::from),
        };
        let slug =
            ItemFilename::parse(filename).map_or_else(|| filename.to_owned(), |name| name.slug().to_owned());
        let pending = Pending {
            author: author.clone(),
            email: email.clone().unwrap_or_default(),
            path: format!("{}/{filename}", folder.in_repo),
            item: format!("{}/{slug}", folder.slug),
            verb,
            at: change.at.unix_timestamp(),
        };
        self.queue.push(pending, bytes);
    }
}

/// The committer's thread: commits until told to stop with nothing left queued. A failed
/// commit stays queued (and journaled) and is tried again, sooner when the server stops.
pub(crate) fn commit_queue(
    queue: Arc<Queue>,
    mut repo: Repo,
    window: Duration,
    shared: Arc<Shared>,
    pushes: Option<Arc<PushSignal>>,
) {
    let mut failures = 0u32;
    while let Some(batch) = queue.next_batch(window) {
        match repo.commit(&batch) {
            Ok(made) => {
                failures = 0;
                queue.committed(batch.len());
                shared.update(|status| {
                    status.commit_error = None;
                    if let Some(commit) = &made {
                        status.head = Some(commit.clone());
                        if status.remote.is_some() {
                            status.unpushed += 1;
                        }
                    }
                });
                if let (Some(_), Some(pushes)) = (made, &pushes) {
                    pushes.commit_made();
                }
            }
            Err(error) => {
                failures += 1;
                tracing::error!(
                    %error,
                    changes = batch.len(),
                    "git: cannot commit; the changes stay queued (and in .cms/git/pending) and are tried again"
                );
                shared.update(|status| status.commit_error = Some(error.to_string()));
                let delay = Duration::from_secs(1 << failures.min(6)).min(MAX_RETRY_DELAY);
                if queue.pause(delay) && failures >= 3 {
                    tracing::error!(
                        queued = queue.len(),
                        "git: stopping with changes not committed; the next start commits them from .cms/git/pending"
                    );
                    return;
                }
            }
        }
    }
}

/// Commits what a stopped server left in the journal, from the working tree, one author's
/// consecutive changes per commit.
pub(crate) fn recover(repo: &mut Repo, pending: Vec<Pending>) -> crate::error::GitResult<usize> {
    let changes: Vec<ToCommit> =
        pending.into_iter().map(|pending| ToCommit { pending, bytes: None }).collect();
    let mut made = 0;
    let mut rest = changes.as_slice();
    while let Some(first) = rest.first() {
        let run = rest
            .iter()
            .take_while(|c| {
                (&c.pending.author, &c.pending.email) == (&first.pending.author, &first.pending.email)
            })
            .count();
        if repo.commit(&rest[..run])?.is_some() {
            made += 1;
        }
        rest = &rest[run..];
    }
    Ok(made)
}
