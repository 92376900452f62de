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

/// Commits made between two maintenances of the repository (see [`Repo::maintain`]).
const COMMITS_PER_UPKEEP: usize = 256;

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
    /// A pull was asked for (`POST /cms/git/pull`).
    pull_asked: bool,
}

/// What the committer does next.
pub(crate) enum Work {
    /// Commit these changes (one author's consecutive ones).
    Commit(Vec<ToCommit>),
    /// Commit the first `queued` changes, then pull.
    Pull {
        queued: usize,
    },
    Stop,
}

struct Queued {
    change: ToCommit,
    /// Its journal line, written again while it is pending when the journal is rewritten.
    line: String,
    arrived: Instant,
}

impl Queue {
    pub(crate) fn new(journal: Journal) -> Self {
        let state = QueueState {
            changes: VecDeque::new(),
            journal,
            kept_bytes: 0,
            stopping: false,
            pull_asked: false,
        };
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

    /// Asks for a pull as soon as the committer is free.
    pub(crate) fn ask_pull(&self) {
        self.lock().pull_asked = true;
        self.changed.notify_all();
    }

    /// Waits for the next work: a pull once asked for or `pull_due`, else the first
    /// author's consecutive changes once the window after the oldest passed; `Stop` once
    /// stopping with nothing left.
    pub(crate) fn next_work(&self, window: Duration, pull_due: Option<Instant>) -> Work {
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            if !state.stopping && (state.pull_asked || pull_due.is_some_and(|due| now >= due)) {
                state.pull_asked = false;
                return Work::Pull { queued: state.changes.len() };
            }
            let wake = match state.changes.front() {
                None if state.stopping => return Work::Stop,
                None => pull_due,
                Some(oldest) => {
                    let due = oldest.arrived + window;
                    if state.stopping || now >= due {
                        break;
                    }
                    Some(pull_due.map_or(due, |pull| pull.min(due)))
                }
            };
            state = match wake {
                Some(at) => {
                    self.changed
                        .wait_timeout(state, at.saturating_duration_since(now))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(PoisonError::into_inner),
            };
        }
        Work::Commit(first_run(&state.changes, usize::MAX))
    }

    /// The first author's consecutive changes among the first `limit` queued.
    pub(crate) fn first_run(&self, limit: usize) -> Vec<ToCommit> {
        first_run(&self.lock().changes, limit)
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

/// The first author's consecutive changes among the first `limit` of `changes`.
fn first_run(changes: &VecDeque<Queued>, limit: usize) -> Vec<ToCommit> {
    let Some(first) = changes.front() else { return Vec::new() };
    let author = (&first.change.pending.author, &first.change.pending.email);
    changes
        .iter()
        .take(limit)
        .take_while(|queued| (&queued.change.pending.author, &queued.change.pending.email) == author)
        .map(|queued| queued.change.clone())
        .collect()
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
    /// Each resource folder's label slug and its path in the repository.
    media: Vec<(String, String)>,
}

impl Subscriber {
    pub(crate) fn new(
        queue: Arc<Queue>,
        repo: &Repo,
        site: &std::path::Path,
        collections: &[Collection],
        media: &[cms_core::resource::ResourceFolder],
    ) -> Self {
        let media = media
            .iter()
            .map(|folder| (cms_core::slug::slugify(&folder.label), repo.folder_of(&folder.path)))
            .collect();
        let folders = collections
            .iter()
            .map(|collection| Folder {
                slug: collection.slug.clone(),
                on_disk: site.join(crate::repo::configured_in_site(&collection.path)),
                in_repo: repo.folder_of(&collection.path),
            })
            .collect();
        Self { queue, folders, media }
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

/// What the committer needs to pull: the remote, how often, and the facade the pulled
/// items are written through.
pub(crate) struct PullFrom {
    pub(crate) remote: String,
    /// `None`: only when asked (`git.pull_every_secs: 0`).
    pub(crate) every: Option<Duration>,
    pub(crate) cms: Arc<cms_core::Cms>,
    pub(crate) folders: Vec<crate::pull::ItemFolder>,
    pub(crate) site: PathBuf,
}

impl cms_core::changes::ResourceSubscriber for Subscriber {
    /// Uploads, renames, moves and removals of media: committed from the working tree
    /// (a file may be large; it is not kept in memory), one author's like their items.
    fn resources_changed(&self, change: &cms_core::changes::ResourceChange) {
        let Some((slug, in_repo)) = self.media.get(change.folder) else { return };
        for (path, there) in &change.files {
            let pending = Pending {
                author: change.author.clone(),
                email: change.email.clone().unwrap_or_default(),
                path: format!("{in_repo}/{path}"),
                item: format!("{slug}/{path}"),
                verb: if *there { Verb::Create } else { Verb::Delete },
                at: change.at.unix_timestamp(),
            };
            // A file that is there is committed as the working tree holds it: `Create`
            // with no bytes reads it at commit time.
            self.queue.push(pending, None);
        }
    }
}

/// The committer's thread: commits (and pulls) until told to stop with nothing left
/// queued. A failed commit stays queued (and journaled) and is tried again, sooner when
/// the server stops.
pub(crate) struct Committer {
    pub(crate) queue: Arc<Queue>,
    pub(crate) repo: Repo,
    pub(crate) window: Duration,
    pub(crate) shared: Arc<Shared>,
    pub(crate) pushes: Option<Arc<PushSignal>>,
    pub(crate) pull: Option<PullFrom>,
}

impl Committer {
    pub(crate) fn run(mut self) {
        self.repo.maintain();
        let mut commits_since_upkeep = 0;
        let mut failures = 0u32;
        let mut pull_due = self.pull.as_ref().and_then(|pull| pull.every).map(|every| Instant::now() + every);
        loop {
            match self.queue.next_work(self.window, pull_due.filter(|_| self.pull.is_some())) {
                Work::Stop => return,
                Work::Commit(batch) => {
                    if self.commit(&batch) {
                        failures = 0;
                        commits_since_upkeep += 1;
                        if commits_since_upkeep >= COMMITS_PER_UPKEEP {
                            self.repo.maintain();
                            commits_since_upkeep = 0;
                        }
                        continue;
                    }
                    failures += 1;
                    let delay = Duration::from_secs(1 << failures.min(6)).min(MAX_RETRY_DELAY);
                    if self.queue.pause(delay) && failures >= 3 {
                        tracing::error!(
                            queued = self.queue.len(),
                            "git: stopping with changes not committed; the next start commits them from .cms/git/pending"
                        );
                        return;
                    }
                }
                Work::Pull { queued } => {
                    // What was acknowledged before the pull is committed first.
                    let mut left = queued;
                    while left > 0 {
                        let batch = self.queue.first_run(left);
                        if batch.is_empty() || !self.commit(&batch) {
                            break;
                        }
                        left -= batch.len();
                    }
                    if self.pull_now() {
                        self.repo.maintain();
                        commits_since_upkeep = 0;
                    }
                    pull_due =
                        self.pull.as_ref().and_then(|pull| pull.every).map(|every| Instant::now() + every);
                }
            }
        }
    }

    /// Commits one batch; whether it went through (a failure is logged and reported).
    fn commit(&mut self, batch: &[ToCommit]) -> bool {
        match self.repo.commit(batch) {
            Ok(made) => {
                self.queue.committed(batch.len());
                self.shared.update(|status| {
                    status.commit_error = None;
                    if let Some(commit) = &made {
                        status.head = Some(commit.clone());
                        if status.remote.is_some() {
                            status.unpushed += 1;
                        }
                    }
                });
                if let (Some(_), Some(pushes)) = (made, &self.pushes) {
                    pushes.commit_made();
                }
                true
            }
            Err(error) => {
                tracing::error!(
                    %error,
                    changes = batch.len(),
                    "git: cannot commit; the changes stay queued (and in .cms/git/pending) and are tried again"
                );
                self.shared.update(|status| status.commit_error = Some(error.to_string()));
                false
            }
        }
    }

    /// Pulls; whether the branch moved.
    fn pull_now(&mut self) -> bool {
        let Some(from) = &self.pull else { return false };
        let mut moved = false;
        let pulled = crate::pull::pull(&mut self.repo, &from.cms, &from.remote, &from.folders, &from.site);
        match pulled {
            Ok(pulled) => {
                moved = pulled.moved;
                if pulled.moved {
                    tracing::info!(remote = %from.remote, files = pulled.files, "git: pulled");
                }
                let unpushed = crate::unpushed(&self.repo, &from.remote).unwrap_or(0);
                if let Some(conflict) = &pulled.conflict {
                    tracing::warn!(
                        files = ?conflict.paths,
                        branch = %conflict.branch,
                        "git pull: both sides changed these files; the remote's version is current, this site's is kept on the branch"
                    );
                    crate::status::record_conflict(&self.shared, conflict);
                }
                self.shared.update(|status| {
                    status.head = self.repo.head().map(|head| head.commit.clone());
                    status.unpushed = unpushed;
                    status.pulled_at = Some(crate::status::now_text());
                    status.pull_error = None;
                });
                if let Some(pushes) = &self.pushes
                    && (unpushed > 0 || pulled.conflict.is_some())
                {
                    pushes.pulled();
                }
            }
            Err(error) => {
                tracing::warn!(remote = %from.remote, %error, "git: cannot pull; trying again at the next interval");
                self.shared.update(|status| status.pull_error = Some(error.to_string()));
            }
        }
        self.shared.save();
        moved
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
