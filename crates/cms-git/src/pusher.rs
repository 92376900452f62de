//! The pusher: a thread that pushes the branch to `git.remote` after commits (a burst of
//! commits once, at least every second while it lasts; at most every
//! `git.push_every_secs`), never forced, with the machine's own git credentials (an SSH
//! agent or key, a credential helper). A failed push is tried again with a growing delay
//! (up to five minutes) and reported in the status, the log and `/readyz`'s body; commits
//! go on locally meanwhile.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::GitError;
use crate::program::{Git, Run};
use crate::status::{Shared, now_text};

/// How long one push may take.
const PUSH_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the last push, at the server's stop, may take: a service manager kills a
/// server that takes long to stop (systemd after 90 s), and the commits wait for the next
/// start anyway.
const STOP_PUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait between failed pushes.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);
/// A burst of commits is pushed once: after this long without a new commit...
const BURST_QUIET: Duration = Duration::from_millis(100);
/// ...or this long after its first commit, while commits keep coming (a push is a pack
/// made and sent: one per commit would cost more than the commits under a write load).
const BURST_LONGEST: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct PushSignal {
    state: Mutex<PushState>,
    changed: Condvar,
}

#[derive(Default)]
struct PushState {
    /// Commits were made since the last push began.
    wanted: bool,
    /// When the first of those and the last of them were made.
    first: Option<Instant>,
    last: Option<Instant>,
    /// A pull merged the remote's commits: a push that was refused for lacking them goes
    /// now, not after its backoff.
    retry_now: bool,
    stopping: bool,
}

impl PushSignal {
    fn lock(&self) -> MutexGuard<'_, PushState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn commit_made(&self) {
        let mut state = self.lock();
        let now = Instant::now();
        state.wanted = true;
        state.first.get_or_insert(now);
        state.last = Some(now);
        drop(state);
        self.changed.notify_all();
    }

    /// A pull merged the remote's branch: push at once, whatever the backoff.
    pub(crate) fn pulled(&self) {
        self.lock().retry_now = true;
        self.commit_made();
    }

    /// One last push of what is waiting, then the thread ends.
    pub(crate) fn stop(&self) {
        self.lock().stopping = true;
        self.changed.notify_all();
    }

    /// Waits until a push is wanted, its burst of commits is over (or has lasted
    /// [`BURST_LONGEST`]) and `not_before` passed, or the pusher is to stop; `(push,
    /// stopping)`.
    fn wait(&self, not_before: Instant) -> (bool, bool) {
        let mut state = self.lock();
        loop {
            if state.stopping {
                let push = std::mem::take(&mut state.wanted);
                return (push, true);
            }
            if state.wanted {
                let now = Instant::now();
                let burst_over = match (state.first, state.last) {
                    (Some(first), Some(last)) => (last + BURST_QUIET).min(first + BURST_LONGEST),
                    _ => now,
                };
                let due = if state.retry_now { burst_over } else { burst_over.max(not_before) };
                if now >= due {
                    state.wanted = false;
                    state.first = None;
                    state.last = None;
                    state.retry_now = false;
                    return (true, false);
                }
                state = self.changed.wait_timeout(state, due - now).unwrap_or_else(PoisonError::into_inner).0;
            } else {
                state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

/// Where and how often to push.
pub(crate) struct Target {
    pub(crate) remote: String,
    pub(crate) branch_ref: String,
    pub(crate) every: Duration,
}

pub(crate) fn push_commits(signal: Arc<PushSignal>, git: Git, target: Target, shared: Arc<Shared>) {
    let mut not_before = Instant::now();
    let mut failures = 0u32;
    loop {
        let (push, stopping) = signal.wait(not_before);
        if push {
            let waiting = shared.get().unpushed;
            let limit = if stopping { STOP_PUSH_TIMEOUT } else { PUSH_TIMEOUT };
            match push_once(&git, &target, limit) {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(remote = %target.remote, "git: pushed again after {failures} failed tries");
                    }
                    failures = 0;
                    not_before = Instant::now() + target.every;
                    shared.update(|status| {
                        status.unpushed = status.unpushed.saturating_sub(waiting);
                        status.pushed_at = Some(now_text());
                        status.push_error = None;
                        status.push_failing_since = None;
                    });
                }
                Err(error) => {
                    failures += 1;
                    let why = explain(&error, &target.remote);
                    let delay = Duration::from_secs(1 << failures.min(9)).min(MAX_RETRY_DELAY);
                    tracing::warn!(
                        remote = %target.remote,
                        waiting,
                        retry_in_secs = delay.as_secs(),
                        "git: cannot push: {why}"
                    );
                    not_before = Instant::now() + delay;
                    signal.commit_made();
                    shared.update(|status| {
                        status.push_error = Some(why);
                        status.push_failing_since.get_or_insert_with(now_text);
                    });
                }
            }
            shared.save();
        }
        if stopping {
            return;
        }
    }
}

fn push_once(git: &Git, target: &Target, limit: Duration) -> Result<(), GitError> {
    let refspec = format!("{0}:{0}", target.branch_ref);
    // The branches that keep this site's side of a conflict go along (a glob that matches
    // nothing pushes nothing).
    let conflicts = "refs/heads/cms/conflict-*:refs/heads/cms/conflict-*";
    git.run_with(Run::new(&["push", &target.remote, &refspec, conflicts]).timeout(limit)).map(drop)
}

/// A failed push in words: its cause as far as git's message tells, and the fix.
pub(crate) fn explain(error: &GitError, remote: &str) -> String {
    let GitError::Failed { message, .. } = error else { return error.to_string() };
    let said: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("hint:"))
        .collect();
    let said = said.join(" / ");
    let cause = if message.contains("[rejected]")
        || message.contains("non-fast-forward")
        || message.contains("fetch first")
    {
        "the remote's branch has commits this site does not have (someone else pushed); they are merged \
         at the next pull, then the push goes through"
    } else if message.contains("Authentication failed")
        || message.contains("Permission denied")
        || message.contains("could not read Username")
        || message.contains("403")
    {
        "the remote refused the credentials: check the SSH key or agent, or the credential helper, of the user \
         the server runs as"
    } else if message.contains("[remote rejected]") {
        "the remote refused the push (a protected branch, or a hook)"
    } else if message.contains("does not appear to be a git repository")
        || message.contains("Could not resolve host")
        || message.contains("Connection refused")
        || message.contains("unable to access")
        || message.contains("Could not read from remote repository")
    {
        "the remote cannot be reached: check its address (`git remote -v`) and the network"
    } else {
        "git could not push"
    };
    format!("{cause} (to {remote}; git said: {said})")
}
