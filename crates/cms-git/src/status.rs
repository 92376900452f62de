//! What the server's git work looks like now: for `/readyz`'s body, `/metrics`, the log,
//! and (through `.cms/git/status.json`, written after each push) `cms git status`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The file `cms git status` reads what the server last knew from.
pub(crate) const STATUS_FILE: &str = "status.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitStatus {
    /// The branch commits are made on.
    pub branch: String,
    /// The branch's newest commit (`None`: none yet).
    pub head: Option<String>,
    /// The remote commits are pushed to (`None`: they stay local).
    pub remote: Option<String>,
    /// Changes acknowledged and not committed yet.
    pub queued: usize,
    /// Commits not pushed yet (0 without a remote).
    pub unpushed: u64,
    /// Why the last commit failed, while commits fail.
    pub commit_error: Option<String>,
    /// When a push last succeeded (RFC 3339).
    pub pushed_at: Option<String>,
    /// Why the last push failed, while pushes fail.
    pub push_error: Option<String>,
    /// Since when pushes fail (RFC 3339).
    pub push_failing_since: Option<String>,
    /// When a pull last succeeded (RFC 3339).
    pub pulled_at: Option<String>,
    /// Why the last pull failed, while pulls fail.
    pub pull_error: Option<String>,
    /// Pulls that met a conflict (the remote's version kept, this site's on a
    /// `cms/conflict-…` branch), as recorded in `.cms/git/conflicts.json`.
    pub conflicts: usize,
}

impl GitStatus {
    /// In one line, without git's own words or the remote's address (for the editor's
    /// users who do not run the site): healthy, or what kind of thing is wrong.
    pub fn brief(&self) -> String {
        let waiting =
            |count: u64| format!("{count} commit{} waiting to be pushed", if count == 1 { "" } else { "s" });
        if self.commit_error.is_some() {
            return "commits fail".to_owned();
        }
        if self.pull_error.is_some() {
            return "pulls fail".to_owned();
        }
        match (&self.remote, &self.push_error) {
            (None, _) => "commits stay local".to_owned(),
            (Some(_), Some(_)) => format!("{}: pushes fail", waiting(self.unpushed)),
            (Some(_), None) if self.unpushed > 0 => waiting(self.unpushed),
            (Some(_), None) => "up to date with the remote".to_owned(),
        }
    }

    /// In one line, for `cms git status` and the log: healthy, or what is wrong.
    pub fn summary(&self) -> String {
        if let Some(error) = &self.commit_error {
            return format!("commits fail: {error}");
        }
        if let Some(error) = &self.pull_error {
            return format!("pulls fail: {error}");
        }
        match (&self.remote, &self.push_error) {
            (None, _) => "commits stay local (no git.remote)".to_owned(),
            (Some(remote), Some(error)) => format!(
                "{} commit{} waiting: pushes to {remote} fail since {}: {error}",
                self.unpushed,
                if self.unpushed == 1 { "" } else { "s" },
                self.push_failing_since.as_deref().unwrap_or("now")
            ),
            (Some(remote), None) if self.unpushed > 0 => {
                format!(
                    "{} commit{} waiting to be pushed to {remote}",
                    self.unpushed,
                    if self.unpushed == 1 { "" } else { "s" }
                )
            }
            (Some(remote), None) => format!("up to date with {remote}"),
        }
    }
}

/// A merge git could not make for some files: the remote's versions were taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    /// When (RFC 3339).
    pub at: String,
    /// The branch holding this site's side: `cms/conflict-20261129T101500Z`.
    pub branch: String,
    /// This site's commit before the merge (on `branch`), and the remote's.
    pub local: String,
    pub remote: String,
    /// The files both sides changed, in the repository.
    pub paths: Vec<String>,
}

/// The status shared by the committer, the pusher and whoever asks.
pub(crate) struct Shared {
    status: Mutex<GitStatus>,
    /// Held while `.cms/git/conflicts.json` is read and rewritten: a pull recording a
    /// conflict and a user resolving one must not undo each other.
    conflicts_file: Mutex<()>,
    /// `.cms/git/`.
    folder: PathBuf,
}

impl Shared {
    pub(crate) fn new(status: GitStatus, folder: &Path) -> Self {
        Self { status: Mutex::new(status), conflicts_file: Mutex::new(()), folder: folder.to_owned() }
    }

    /// The newest conflict recorded for a file of the repository. Read from
    /// `.cms/git/conflicts.json` each time (a few entries), so that `cms git resolve`
    /// shows at once.
    pub(crate) fn conflict_of(&self, path: &str) -> Option<Conflict> {
        conflicts(&self.folder).into_iter().rev().find(|conflict| conflict.paths.iter().any(|p| p == path))
    }

    /// Forgets the conflicts recorded for `path` (see [`forget_conflicts`]).
    pub(crate) fn forget_conflicts(&self, path: &str) -> std::io::Result<bool> {
        let _file = self.conflicts_file.lock().unwrap_or_else(PoisonError::into_inner);
        forget_conflicts(&self.folder, path)
    }

    /// The status, with the conflicts recorded now.
    pub(crate) fn get(&self) -> GitStatus {
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner).clone();
        status.conflicts = conflicts(&self.folder).len();
        status
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut GitStatus)) {
        change(&mut self.status.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Writes the status for `cms git status` (best effort: a failure is logged).
    pub(crate) fn save(&self) {
        let text = serde_json::to_vec_pretty(&self.get()).unwrap_or_default();
        let saved = tempfile::NamedTempFile::new_in(&self.folder).and_then(|mut file| {
            std::io::Write::write_all(&mut file, &text)?;
            file.persist(self.folder.join(STATUS_FILE)).map_err(|e| e.error)
        });
        if let Err(error) = saved {
            tracing::warn!(%error, "git: cannot save the status for `cms git status`");
        }
    }
}

/// The conflicts the pulls met, oldest first.
pub(crate) const CONFLICTS_FILE: &str = "conflicts.json";

/// Adds a conflict to `.cms/git/conflicts.json`.
pub(crate) fn record_conflict(shared: &Shared, conflict: &Conflict) {
    let _file = shared.conflicts_file.lock().unwrap_or_else(PoisonError::into_inner);
    let mut all = conflicts(&shared.folder);
    all.push(conflict.clone());
    if let Err(error) = save_conflicts(&shared.folder, &all) {
        tracing::warn!(%error, "git: cannot record a conflict in .cms/git/conflicts.json");
    }
}

/// Replaces `.cms/git/conflicts.json` (in `folder`) with `all`, atomically.
pub(crate) fn save_conflicts(folder: &Path, all: &[Conflict]) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(all).unwrap_or_default();
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    std::io::Write::write_all(&mut file, &text)?;
    file.persist(folder.join(CONFLICTS_FILE)).map(drop).map_err(|e| e.error)
}

/// Forgets the conflicts recorded in `folder` (`.cms/git/`) for `path` (in the
/// repository), once its two versions were looked at; whether any was recorded.
pub(crate) fn forget_conflicts(folder: &Path, path: &str) -> std::io::Result<bool> {
    let mut all = conflicts(folder);
    if !all.iter().any(|conflict| conflict.paths.iter().any(|p| p == path)) {
        return Ok(false);
    }
    for conflict in &mut all {
        conflict.paths.retain(|p| p != path);
    }
    all.retain(|conflict| !conflict.paths.is_empty());
    save_conflicts(folder, &all)?;
    Ok(true)
}

/// The conflicts recorded in `folder` (`.cms/git/`).
pub(crate) fn conflicts(folder: &Path) -> Vec<Conflict> {
    std::fs::read(folder.join(CONFLICTS_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The status a server last saved in `folder` (`.cms/git/`), if any.
pub(crate) fn saved(folder: &Path) -> Option<GitStatus> {
    serde_json::from_slice(&std::fs::read(folder.join(STATUS_FILE)).ok()?).ok()
}

pub(crate) fn now_text() -> String {
    OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
