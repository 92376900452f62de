//! The site folder as a git working tree (`git:` in `cms.yaml`; `docs/git.md`).
//!
//! Every write through the facade (REST, the editor, MCP) reaches the change log, whose
//! subscriber here ([`committer`]) journals it and queues it with the bytes it wrote; a
//! thread commits the queue, one author's consecutive changes per commit, authored by the
//! acting user (`Name <email>`; a key's name with its owner's email; `cms CLI`) and
//! committed by `cms`. A commit touches only its items' files: the blobs are written here
//! ([`objects`]), the tree, commit and branch by the `git` program ([`repo`]). A pusher
//! ([`pusher`]) sends the branch to `git.remote`. The core knows nothing of git: this crate
//! is one more change-log subscriber, composed by the binary for folder sites only.
//!
//! Why the `git` program and not a library: it is on every machine that has a repository,
//! builds nothing, reads the user's credentials, hooks and configuration as git does, and
//! talks every transport (SSH, smart HTTP, `git daemon`, a path). Writing blobs here keeps
//! a commit to four short processes whatever the number of changes it holds.

mod committer;
mod error;
mod history;
mod journal;
mod objects;
mod program;
mod pull;
mod pusher;
mod repo;
mod status;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use cms_core::Cms;
use cms_core::config::GitConfig;

pub use error::{GitError, GitResult};
pub use history::GitVersions;
pub use status::{Conflict, GitStatus};

use committer::{Queue, Subscriber};
use pusher::{PushSignal, Target};
use repo::Repo;
use status::Shared;

/// How much less CPU priority git's work gets than the server's requests (`nice`).
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority, and so that of the git processes it starts
/// (on Linux a thread's nice value is its own, and children inherit it): commits and
/// pushes are background work that may lag while requests keep the cores busy, since a
/// commit takes every write that waited.
fn run_in_background() {
    if let Err(error) = rustix::process::nice(BACKGROUND_NICE) {
        tracing::debug!(%error, "git: cannot lower the priority of its thread; it runs at the server's");
    }
}

/// The folder of the site's private state (`.cms/`) this crate keeps its files in: `git/`.
const GIT_STATE: &str = "git";

/// A server's git work: the committer and, with a remote, the pusher.
pub struct GitSite {
    /// Each collection's folder in the repository, by the collection's number.
    folders: Vec<String>,
    queue: Arc<Queue>,
    shared: Arc<Shared>,
    subscriber: Arc<Subscriber>,
    committer: Mutex<Option<JoinHandle<()>>>,
    pusher: Mutex<Option<(Arc<PushSignal>, JoinHandle<()>)>>,
}

impl GitSite {
    /// Opens the repository of `site` (making one when there is none), commits what a
    /// stopped server left uncommitted (`state` is the site's `.cms/` folder), and starts
    /// the committer (which also pulls, with `git.remote`) and, with `git.remote`, the
    /// pusher. Pulled items are written through `cms`.
    pub fn open(site: &Path, state: &Path, config: &GitConfig, cms: Arc<Cms>) -> GitResult<Self> {
        // Every language's collection: changes name theirs by index.
        let collections = cms.all_collections().to_vec();
        let mut repo = Repo::open(site, &config.branch)?;
        let folder = state.join(GIT_STATE);
        let (mut journal, left) = journal::Journal::open(&folder)?;
        if !left.is_empty() {
            let count = left.len();
            let made = committer::recover(&mut repo, left)?;
            journal.keep_only(std::iter::empty())?;
            tracing::info!(
                changes = count,
                commits = made,
                "git: committed the changes a stopped server left uncommitted"
            );
        }
        let remote = match &config.remote {
            Some(remote) => Some(check_remote(&repo, remote)?),
            None => None,
        };
        let unpushed = match &remote {
            Some(remote) => unpushed(&repo, remote)?,
            None => 0,
        };
        let shared = Arc::new(Shared::new(
            GitStatus {
                branch: config.branch.clone(),
                head: repo.head().map(|head| head.commit.clone()),
                remote: remote.clone(),
                unpushed,
                ..GitStatus::default()
            },
            &folder,
        ));
        let queue = Arc::new(Queue::new(journal));
        let subscriber =
            Arc::new(Subscriber::new(queue.clone(), &repo, site, &collections, cms.resource_folders()));
        let pusher = match remote {
            Some(remote) => {
                let signal = Arc::new(PushSignal::default());
                if unpushed > 0 {
                    signal.commit_made();
                }
                let target = Target {
                    remote,
                    branch_ref: repo.branch_ref().to_owned(),
                    every: Duration::from_secs(config.push_every_secs),
                };
                let (git, thread_signal, thread_shared) =
                    (repo.git().clone(), signal.clone(), shared.clone());
                let thread = std::thread::Builder::new()
                    .name("git-push".into())
                    .spawn(move || {
                        run_in_background();
                        pusher::push_commits(thread_signal, git, target, thread_shared)
                    })
                    .map_err(GitError::io(&folder))?;
                Some((signal, thread))
            }
            None => None,
        };
        let folders: Vec<String> =
            collections.iter().map(|collection| repo.folder_of(&collection.path)).collect();
        let pull = config.remote.as_ref().map(|remote| committer::PullFrom {
            remote: remote.clone(),
            every: (config.pull_every_secs > 0).then(|| Duration::from_secs(config.pull_every_secs)),
            folders: collections
                .iter()
                .map(|collection| pull::ItemFolder {
                    in_repo: repo.folder_of(&collection.path),
                    collection: collection.clone(),
                })
                .collect(),
            cms,
            site: site.to_owned(),
        });
        let committer = committer::Committer {
            queue: queue.clone(),
            repo,
            window: Duration::from_millis(config.group_window_ms),
            shared: shared.clone(),
            pushes: pusher.as_ref().map(|(signal, _)| signal.clone()),
            pull,
        };
        let committer = std::thread::Builder::new()
            .name("git-commit".into())
            .spawn(move || {
                run_in_background();
                committer.run()
            })
            .map_err(GitError::io(&folder))?;
        shared.save();
        Ok(Self {
            folders,
            queue,
            shared,
            subscriber,
            committer: Mutex::new(Some(committer)),
            pusher: Mutex::new(pusher),
        })
    }

    /// Follows the change log's item and resource changes from now on.
    pub fn follow(&self, cms: &Cms) {
        cms.change_log().subscribe(self.subscriber.clone());
        cms.change_log().subscribe_resources(self.subscriber.clone());
    }

    /// Pulls as soon as the committer is free (`POST /cms/git/pull`); nothing without a
    /// remote.
    pub fn ask_pull(&self) {
        self.queue.ask_pull();
    }

    /// The newest conflict a pull met on item file `filename` of `collection`, while it is
    /// recorded (`cms check` tells how to forget it).
    pub fn conflict_of(
        &self,
        collection: &cms_core::collection::Collection,
        filename: &str,
    ) -> Option<Conflict> {
        let folder = self.folders.get(collection.index)?;
        self.shared.conflict_of(&format!("{folder}/{filename}"))
    }

    /// Forgets the conflicts recorded for item file `filename` of `collection` (the editor's
    /// "Mark as resolved"); whether any was recorded.
    pub fn resolve_conflict(
        &self,
        collection: &cms_core::collection::Collection,
        filename: &str,
    ) -> GitResult<bool> {
        let Some(folder) = self.folders.get(collection.index) else { return Ok(false) };
        let path = format!("{folder}/{filename}");
        self.shared.forget_conflicts(&path).map_err(|source| GitError::Io {
            path: std::path::PathBuf::from(".cms/git").join(status::CONFLICTS_FILE),
            source,
        })
    }

    /// The committer's and pusher's state now.
    pub fn status(&self) -> GitStatus {
        let mut status = self.shared.get();
        status.queued = self.queue.len();
        status
    }

    /// Commits what is queued and pushes once (within the push's time limit), then stops
    /// both threads. For the server's stop, after the last write.
    pub fn finish(&self) {
        self.queue.stop();
        if let Some(thread) = self.committer.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = thread.join();
        }
        if let Some((signal, thread)) = self.pusher.lock().unwrap_or_else(PoisonError::into_inner).take() {
            signal.stop();
            let _ = thread.join();
        }
        self.shared.save();
    }
}

/// Makes `site` a git repository on `branch` (for `cms init --git`): `.cms/` ignored, the
/// site's files the first commit.
pub fn init(site: &Path, branch: &str) -> GitResult<()> {
    repo::init(site, branch)
}

/// `cms git status`: the repository as it is, and what the server last knew.
pub fn report(site: &Path, state: &Path, config: &GitConfig) -> GitResult<Report> {
    let repo = Repo::open_existing(site, &config.branch)?;
    let pending = journal::Journal::read(&state.join(GIT_STATE))?;
    let remote = config.remote.as_deref().map(|remote| check_remote(&repo, remote)).transpose()?;
    let unpushed = match &remote {
        Some(remote) => Some(unpushed(&repo, remote)?),
        None => None,
    };
    Ok(Report {
        top: repo.top().to_owned(),
        branch: config.branch.clone(),
        head: repo.head().map(|head| head.commit.clone()),
        remote,
        unpushed,
        uncommitted: pending.len(),
        server: status::saved(&state.join(GIT_STATE)),
        conflicts: status::conflicts(&state.join(GIT_STATE)),
    })
}

/// `cms git resolve FILE`: forgets the conflicts recorded for `file` (a path in the site
/// folder), once its two versions were looked at; whether any was recorded.
pub fn resolve(site: &Path, state: &Path, config: &GitConfig, file: &str) -> GitResult<bool> {
    let repo = Repo::open_existing(site, &config.branch)?;
    let path = repo.path_of(file.trim_start_matches("./"));
    let folder = state.join(GIT_STATE);
    status::forget_conflicts(&folder, &path).map_err(GitError::io(&folder))
}

/// What `cms git status` prints.
#[derive(Debug)]
pub struct Report {
    /// The top of the working tree.
    pub top: std::path::PathBuf,
    pub branch: String,
    pub head: Option<String>,
    pub remote: Option<String>,
    /// Commits the remote's branch (as last fetched or pushed) lacks.
    pub unpushed: Option<u64>,
    /// Acknowledged changes a server has not committed yet.
    pub uncommitted: usize,
    /// What the server saved after its last push or pull.
    pub server: Option<GitStatus>,
    /// The conflicts pulls met, oldest first.
    pub conflicts: Vec<Conflict>,
}

/// The remote, checked to be one the repository knows.
fn check_remote(repo: &Repo, remote: &str) -> GitResult<String> {
    match repo.git().ask(&["remote", "get-url", remote])? {
        Some(_) => Ok(remote.to_owned()),
        None => Err(GitError::Refused(format!(
            "git.remote in cms.yaml is {remote}, which the site's repository does not know: \
             `git -C {} remote add {remote} URL`, or remove git.remote to keep commits local",
            repo.top().display()
        ))),
    }
}

/// Commits of the branch the remote's branch lacks, as far as this repository last saw the
/// remote (its remote-tracking branch; without one, every commit).
pub(crate) fn unpushed(repo: &Repo, remote: &str) -> GitResult<u64> {
    let branch = repo.branch_ref().trim_start_matches("refs/heads/");
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let range = if repo.git().ask(&["rev-parse", "-q", "--verify", &tracking])?.is_some() {
        format!("{tracking}..{}", repo.branch_ref())
    } else {
        repo.branch_ref().to_owned()
    };
    if repo.head().is_none() {
        return Ok(0);
    }
    let count = repo.git().run(&["rev-list", "--count", &range])?;
    Ok(count.parse().unwrap_or(0))
}
