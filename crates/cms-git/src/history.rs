//! An item's history read from git: on a site kept in git, an item's versions are the
//! commits that touched its file (on every branch merged into the site's, so a pull's
//! conflict keeps this site's side in it), each with its commit and author. Read and
//! restore work on them; a restore is a write like any other, so it is a new commit.
//!
//! The server still keeps a copy of the content each write replaces (`.cms/versions/`),
//! as on any site: it is what a write can keep at once, before its commit is made. Those
//! copies are listed too when git has not got their bytes: content git never saw (an edit
//! made in the folder and overwritten before anyone committed it; a write that shared a
//! commit with a later one of the same item; history from before the site was in git).
//! So the list is every content the item had, newest first, each once.
//!
//! A version's id is its time (the commit's time, or the copy's): the list's `timestamp`,
//! unique per item (a clash takes the next free second, oldest first, so a new commit
//! never renumbers the older ones).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::ports::{SavedVersion, VersionStamp, VersionStore, VersionToSave};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};

use crate::error::GitError;
use crate::repo::{Repo, configured_in_site};

/// The versions of a site kept in git: git's history, and the copies `kept` holds of
/// content git has not got. Writes go to `kept` alone.
pub struct GitVersions {
    site: PathBuf,
    branch: String,
    kept: Arc<dyn VersionStore>,
    /// Opened at the first read that finds the repository (the server makes it at start).
    repo: Arc<Mutex<RepoSlot>>,
    /// Each collection folder's files removed on the branch, as of a commit: finding them
    /// walks the whole history once, then only the commits made since; kept in
    /// `.cms/git/removed.json` so that a restart does not walk it again.
    removed: Arc<Mutex<RemovedFiles>>,
    /// The commits of the items read lately, by path: reading one again costs a
    /// `rev-parse` while the branch stays, and only the new commits once it grew (a
    /// commit's diff is what costs: 45 ms in a folder of 100,000 items).
    known: Arc<Mutex<KnownCommits>>,
}

/// The items' commits [`GitVersions::known`] keeps: at most [`KNOWN_ITEMS`] items.
#[derive(Debug, Default)]
struct KnownCommits {
    items: HashMap<String, ItemCommits>,
    /// Counts reads and keeps, to find the least recently read item.
    reads: u64,
}

/// How many items' commits are kept.
const KNOWN_ITEMS: usize = 1024;

/// One item's commits (oldest first) as of the branch's commit `at`, and the file's blob
/// in that commit (`None`: not there).
#[derive(Debug, Clone, Default)]
struct ItemCommits {
    at: String,
    entries: Vec<Entry>,
    at_blob: Option<String>,
    read: u64,
}

impl KnownCommits {
    fn get(&mut self, path: &str) -> Option<ItemCommits> {
        self.reads += 1;
        let reads = self.reads;
        self.items.get_mut(path).map(|item| {
            item.read = reads;
            item.clone()
        })
    }

    fn keep(&mut self, path: String, commits: ItemCommits) {
        if self.items.len() >= KNOWN_ITEMS && !self.items.contains_key(&path) {
            let oldest = self.items.iter().min_by_key(|(_, item)| item.read).map(|(path, _)| path.clone());
            if let Some(oldest) = oldest {
                self.items.remove(&oldest);
            }
        }
        self.reads += 1;
        self.items.insert(path, ItemCommits { read: self.reads, ..commits });
    }
}

/// The repository once opened, or when opening it last failed (tried again after
/// [`REOPEN_AFTER`], not on every read).
#[derive(Default)]
struct RepoSlot {
    repo: Option<Arc<Repo>>,
    failed: Option<std::time::Instant>,
}

/// The file in `.cms/git/` that keeps the removed files found.
const REMOVED_FILE: &str = "removed.json";

/// How long a site found outside a repository is read from its copies alone before the
/// repository is looked for again.
const REOPEN_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// The files of one folder a commit of the branch removed, as of commit `at`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Removed {
    at: String,
    names: Vec<String>,
}

/// What the walks for removed files found, by folder, and the file that keeps it.
#[derive(Debug)]
struct RemovedFiles {
    file: PathBuf,
    /// `None` until the file was read.
    folders: Option<HashMap<String, Removed>>,
}

impl RemovedFiles {
    fn folders(&mut self) -> &mut HashMap<String, Removed> {
        let file = &self.file;
        self.folders.get_or_insert_with(|| {
            std::fs::read(file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
        })
    }

    /// Keeps what was found (best effort: without it, a restart walks again).
    fn save(&self) {
        let Some(folders) = &self.folders else { return };
        let Some(dir) = self.file.parent() else { return };
        let saved = std::fs::create_dir_all(dir).and_then(|()| {
            let mut staged = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut staged, &serde_json::to_vec(folders).unwrap_or_default())?;
            staged.persist(&self.file).map(drop).map_err(|error| error.error)
        });
        if let Err(error) = saved {
            tracing::warn!(%error, file = %self.file.display(), "git: cannot keep the removed files found");
        }
    }
}

/// Where one version's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// In this commit, as this blob.
    Commit { commit: String, blob: String },
    /// A copy `kept` holds, under its own timestamp.
    Kept(i64),
}

/// One content the item had.
#[derive(Debug, Clone)]
struct Entry {
    /// When: the commit's author time (when its newest change was made; the server's
    /// commits take it from their changes), or the copy's timestamp (when it was replaced).
    time: i64,
    size: u64,
    author: Option<String>,
    /// Its blob's name (what tells two equal contents apart from two others).
    blob: String,
    source: Source,
}

/// An item's history with ids, oldest first.
#[derive(Debug, Default)]
struct History {
    /// Each entry with its id (the timestamp the list shows).
    versions: Vec<(i64, Entry)>,
    /// The id of the newest commit when it holds the item's current file: the current
    /// content, not a version of it.
    current: Option<i64>,
}

impl History {
    /// Ids for an item's `commits` (in git's order, oldest first) and `copies` (any order):
    ///
    /// - a commit's id is its time, or one past the previous commit's: it depends on the
    ///   commits before it alone, so a new commit never renumbers them (a commit equal to
    ///   the one before it is that content once);
    /// - a copy's id is its timestamp, or the latest free second before it (it is content
    ///   that was replaced then, so it comes before the commit of that second): copies are
    ///   numbered newest first, so the oldest, which `versions.keep` drops, move no other.
    ///
    /// When the file holds what the branch's last commit holds (`current_blob` is
    /// `committed_blob`), the newest commit with that content is the current content, not
    /// a version: the branch's own commit, or the one a merge took it from (a pull's
    /// conflict: the remote's). A file not committed yet hides nothing.
    fn of(
        commits: Vec<Entry>,
        mut copies: Vec<Entry>,
        current_blob: Option<&str>,
        committed_blob: Option<&str>,
    ) -> Self {
        let mut versions: Vec<(i64, Entry)> = Vec::with_capacity(commits.len() + copies.len());
        for entry in commits {
            if versions.last().is_some_and(|(_, previous)| previous.blob == entry.blob) {
                continue;
            }
            let id = versions.last().map_or(entry.time, |(previous, _)| entry.time.max(previous + 1));
            versions.push((id, entry));
        }
        let current = match (current_blob, committed_blob) {
            (Some(current), Some(committed)) if current == committed => {
                versions.iter().rev().find(|(_, entry)| entry.blob == current).map(|(id, _)| *id)
            }
            _ => None,
        };
        let mut taken: HashSet<i64> = versions.iter().map(|(id, _)| *id).collect();
        copies.sort_by_key(|copy| std::cmp::Reverse(copy.time));
        for copy in copies {
            let mut id = copy.time;
            while taken.contains(&id) && id > 0 {
                id -= 1;
            }
            if taken.insert(id) {
                versions.push((id, copy));
            }
        }
        versions.sort_by_key(|(id, _)| *id);
        Self { versions, current }
    }

    fn find(&self, id: i64) -> Option<&Entry> {
        self.versions.iter().find(|(at, _)| *at == id).map(|(_, entry)| entry)
    }
}

impl GitVersions {
    /// The history of the site in folder `site` (its private state in `state`, `.cms/`),
    /// kept in git on `branch`; `kept` is the site's own version store.
    pub fn new(site: &Path, state: &Path, branch: &str, kept: Arc<dyn VersionStore>) -> Self {
        let removed = RemovedFiles { file: state.join(crate::GIT_STATE).join(REMOVED_FILE), folders: None };
        Self {
            site: site.to_owned(),
            branch: branch.to_owned(),
            kept,
            repo: Arc::default(),
            removed: Arc::new(Mutex::new(removed)),
            known: Arc::default(),
        }
    }

    /// The repository; `None` while the site is not in one (its history is then `kept`'s).
    /// Opening it runs a few `git` processes: on the blocking pool, once.
    async fn repo(&self) -> CoreResult<Option<Arc<Repo>>> {
        if let Some(repo) = &self.repo.lock().unwrap_or_else(PoisonError::into_inner).repo {
            return Ok(Some(repo.clone()));
        }
        let (slot, site, branch) = (self.repo.clone(), self.site.clone(), self.branch.clone());
        blocking(move || {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.repo.is_none() && slot.failed.is_none_or(|at| at.elapsed() > REOPEN_AFTER) {
                match Repo::open_existing(&site, &branch) {
                    Ok(opened) => slot.repo = Some(Arc::new(opened)),
                    Err(error) => {
                        tracing::debug!(%error, "git: history read from the site's own copies only");
                        slot.failed = Some(std::time::Instant::now());
                    }
                }
            }
            Ok(slot.repo.clone())
        })
        .await
    }

    /// The item's history: git's commits of its file, and `kept`'s copies of content git
    /// has not got; `None` while the site is not in a repository (then `kept` is all).
    async fn history(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<History>> {
        let Some(repo) = self.repo().await? else { return Ok(None) };
        let kept = self.kept.list_versions(collection, name).await?;
        let mut copies = Vec::with_capacity(kept.len());
        for stamp in kept {
            // Removed meanwhile (a write past `versions.keep`): not a version any more.
            if let Some(bytes) = self.kept.read_version(collection, name, stamp.timestamp).await? {
                copies.push((stamp, bytes));
            }
        }
        let site = self.site.clone();
        let folder = collection.path.clone();
        let file = name.as_str().to_owned();
        let known = self.known.clone();
        blocking(move || {
            let path = format!("{}/{file}", repo.folder_of(&folder));
            let ItemCommits { entries: commits, at_blob, .. } =
                item_commits(&repo, &known, path).map_err(failed)?;
            let in_git: HashSet<&str> = commits.iter().map(|entry| entry.blob.as_str()).collect();
            let format = repo.format();
            let mut only_copies = Vec::new();
            for (stamp, bytes) in copies {
                let blob = format.blob_name(&bytes);
                if !in_git.contains(blob.as_str()) {
                    only_copies.push(Entry {
                        time: stamp.timestamp,
                        size: stamp.size,
                        author: stamp.author,
                        blob,
                        source: Source::Kept(stamp.timestamp),
                    });
                }
            }
            let on_disk = site.join(configured_in_site(&folder)).join(&file);
            let current = std::fs::read(&on_disk).ok().map(|bytes| format.blob_name(&bytes));
            Ok(Some(History::of(commits, only_copies, current.as_deref(), at_blob.as_deref())))
        })
        .await
    }
}

/// The commits of the branch (and of the branches merged into it) that changed `path`,
/// each with the file's blob there, oldest first (a commit that removed it is none), and
/// its blob in the branch's last commit. What `known` holds of the item is reused: as it
/// is while the branch has not moved, with only the new commits read once it grew.
fn item_commits(repo: &Repo, known: &Mutex<KnownCommits>, path: String) -> Result<ItemCommits, GitError> {
    // No commit on the branch yet: no history.
    let Some(head) = repo.git().ask(&["rev-parse", "-q", "--verify", repo.branch_ref()])? else {
        return Ok(ItemCommits::default());
    };
    let before = known.lock().unwrap_or_else(PoisonError::into_inner).get(&path);
    let entries = match before {
        Some(before) if before.at == head => return Ok(before),
        Some(before) if repo.git().ask(&["merge-base", "--is-ancestor", &before.at, &head])?.is_some() => {
            let mut entries = before.entries;
            entries.extend(commits_of(repo, &path, &format!("{}..{head}", before.at))?);
            entries
        }
        _ => commits_of(repo, &path, &head)?,
    };
    let at_blob = repo.git().object_info()?.blob(&format!("{head}:{path}"))?.map(|(blob, _)| blob);
    let commits = ItemCommits { at: head, entries, at_blob, read: 0 };
    known.lock().unwrap_or_else(PoisonError::into_inner).keep(path, commits.clone());
    Ok(commits)
}

/// The commits of `range` that changed `path`, each with the file's blob there, oldest
/// first; a commit that removed it is none.
fn commits_of(repo: &Repo, path: &str, range: &str) -> Result<Vec<Entry>, GitError> {
    let log = repo.git().run(&[
        "--literal-pathspecs",
        "log",
        "--full-history",
        "--format=%H%x09%at%x09%an",
        range,
        "--",
        path,
    ])?;
    let mut info = None;
    let mut entries = Vec::new();
    for line in log.lines() {
        let mut fields = line.splitn(3, '\t');
        let (Some(commit), Some(time), author) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let Ok(time) = time.parse::<i64>() else { continue };
        let info = match &mut info {
            Some(info) => info,
            None => info.insert(repo.git().object_info()?),
        };
        if let Some((blob, size)) = info.blob(&format!("{commit}:{path}"))? {
            entries.push(Entry {
                time,
                size,
                author: author.filter(|author| !author.is_empty()).map(str::to_owned),
                blob: blob.clone(),
                source: Source::Commit { commit: commit.to_owned(), blob },
            });
        }
    }
    // `git log` lists the newest first, also among commits of one second.
    entries.reverse();
    Ok(entries)
}

/// The item files of `folder` (in the repository) that a commit of the branch removed:
/// deleted items git still has. `known` is what an earlier call found: only the commits
/// made since are read when the branch grew from there (a diff per commit is what costs).
fn removed_from(repo: &Repo, folder: &str, known: Option<Removed>) -> Result<Removed, GitError> {
    let Some(head) = repo.git().ask(&["rev-parse", "-q", "--verify", repo.branch_ref()])? else {
        return Ok(Removed::default());
    };
    let (range, mut names) = match known {
        Some(known) if known.at == head => return Ok(known),
        Some(known) if repo.git().ask(&["merge-base", "--is-ancestor", &known.at, &head])?.is_some() => {
            (format!("{}..{head}", known.at), known.names)
        }
        _ => (head.clone(), Vec::new()),
    };
    let log = repo.git().run(&[
        "--literal-pathspecs",
        "log",
        "--diff-filter=D",
        "--name-only",
        // Names as they are, not quoted (`"caf\303\251.md"`).
        "-z",
        "--format=",
        &range,
        "--",
        folder,
    ])?;
    let prefix = format!("{folder}/");
    names.extend(
        log.split('\0')
            .map(|name| name.trim_matches('\n'))
            .filter_map(|name| name.strip_prefix(&prefix))
            .filter(|name| !name.contains('/') && ItemFilename::parse(name).is_some())
            .map(str::to_owned),
    );
    names.sort();
    names.dedup();
    Ok(Removed { at: head, names })
}

fn failed(error: GitError) -> CoreError {
    CoreError::internal("reading the item's history from git", error)
}

/// Runs `f` on tokio's blocking pool (git is a process to wait for), or right here
/// outside a runtime (a command's plain `block_on`).
async fn blocking<T, F>(f: F) -> CoreResult<T>
where
    F: FnOnce() -> CoreResult<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime
            .spawn_blocking(f)
            .await
            .map_err(|error| CoreError::internal("reading the item's history from git", error))?,
        Err(_) => f(),
    }
}

#[async_trait]
impl VersionStore for GitVersions {
    async fn list_versions(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> CoreResult<Vec<VersionStamp>> {
        let Some(history) = self.history(collection, name).await? else {
            return self.kept.list_versions(collection, name).await;
        };
        Ok(history
            .versions
            .into_iter()
            .filter(|(id, _)| Some(*id) != history.current)
            .map(|(id, entry)| VersionStamp {
                timestamp: id,
                size: entry.size,
                author: entry.author,
                commit: match entry.source {
                    Source::Commit { commit, .. } => Some(commit),
                    Source::Kept(_) => None,
                },
            })
            .collect())
    }

    async fn read_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let Some(history) = self.history(collection, name).await? else {
            return self.kept.read_version(collection, name, timestamp).await;
        };
        match history.find(timestamp).map(|entry| entry.source.clone()) {
            None => Ok(None),
            Some(Source::Kept(at)) => self.kept.read_version(collection, name, at).await,
            Some(Source::Commit { blob, .. }) => {
                let Some(repo) = self.repo().await? else { return Ok(None) };
                blocking(move || {
                    repo.git().blobs().and_then(|mut blobs| blobs.read(&blob)).map(Some).map_err(failed)
                })
                .await
            }
        }
    }

    async fn version_author(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<Option<String>> {
        let Some(history) = self.history(collection, name).await? else {
            return self.kept.version_author(collection, name, timestamp).await;
        };
        Ok(history.find(timestamp).and_then(|entry| entry.author.clone()))
    }

    async fn save_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        self.kept.save_version(collection, name, timestamp, bytes, author).await
    }

    async fn remove_version(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        timestamp: i64,
    ) -> CoreResult<()> {
        self.kept.remove_version(collection, name, timestamp).await
    }

    async fn items_with_history(&self, collection: &Collection) -> CoreResult<Vec<String>> {
        let mut names = self.kept.items_with_history(collection).await?;
        if let Some(repo) = self.repo().await? {
            let folder = repo.folder_of(&collection.path);
            let memo = self.removed.clone();
            let removed = blocking(move || {
                // Held during the walk: requests that come meanwhile wait for it and reuse
                // what it found, rather than each walking the history again.
                let mut memo = memo.lock().unwrap_or_else(PoisonError::into_inner);
                let known = memo.folders().remove(&folder);
                let before = known.as_ref().map(|known| known.at.clone());
                let removed = removed_from(&repo, &folder, known).map_err(failed)?;
                let moved = before.as_deref() != Some(removed.at.as_str());
                memo.folders().insert(folder, removed.clone());
                if moved {
                    memo.save();
                }
                Ok(removed.names)
            })
            .await?;
            names.extend(removed);
            names.sort();
            names.dedup();
        }
        Ok(names)
    }

    async fn save_current(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        snapshot: VersionToSave<'_>,
    ) -> CoreResult<SavedVersion> {
        self.kept.save_current(collection, name, snapshot).await
    }

    async fn write_failed(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        kept: &SavedVersion,
        bytes: &[u8],
    ) -> CoreResult<()> {
        self.kept.write_failed(collection, name, kept, bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(time: i64, blob: &str) -> Entry {
        Entry {
            time,
            size: 1,
            author: None,
            blob: blob.into(),
            source: Source::Commit { commit: format!("c-{blob}"), blob: blob.into() },
        }
    }

    fn copy(time: i64, blob: &str) -> Entry {
        Entry { time, size: 1, author: None, blob: blob.into(), source: Source::Kept(time) }
    }

    fn ids(history: &History) -> Vec<(i64, &str)> {
        history.versions.iter().map(|(id, entry)| (*id, entry.blob.as_str())).collect()
    }

    #[test]
    fn commit_ids_are_times_made_unique_in_gits_order() {
        let history =
            History::of(vec![commit(5, "a"), commit(10, "c"), commit(10, "b")], Vec::new(), None, None);
        assert_eq!(ids(&history), [(5, "a"), (10, "c"), (11, "b")]);
        // A newer commit leaves the older ids as they were, even with an earlier time.
        let commits = vec![commit(5, "a"), commit(10, "c"), commit(10, "b"), commit(9, "d")];
        assert_eq!(
            ids(&History::of(commits, Vec::new(), None, None)),
            [(5, "a"), (10, "c"), (11, "b"), (12, "d")]
        );
        // A commit equal to the one before it is that content once.
        let merged = vec![commit(5, "a"), commit(6, "b"), commit(7, "b")];
        assert_eq!(ids(&History::of(merged, Vec::new(), None, None)), [(5, "a"), (6, "b")]);
    }

    #[test]
    fn a_copy_takes_its_time_or_the_latest_free_second_before_it() {
        let commits = vec![commit(10, "a"), commit(20, "b")];
        let copies = vec![copy(20, "x"), copy(30, "y"), copy(19, "z")];
        let history = History::of(commits.clone(), copies, None, None);
        // `x` was replaced at 20 by `b`'s commit: it comes just before it.
        assert_eq!(ids(&history), [(10, "a"), (18, "z"), (19, "x"), (20, "b"), (30, "y")]);
        // The oldest copy dropped (`versions.keep`): the others keep their ids.
        let fewer = History::of(commits, vec![copy(20, "x"), copy(30, "y")], None, None);
        assert_eq!(ids(&fewer), [(10, "a"), (19, "x"), (20, "b"), (30, "y")]);
    }

    /// The version store's contract holds on a site in git (versions that git has not
    /// got are the site's own copies).
    #[test]
    fn the_version_contract_holds_on_a_site_in_git() {
        let site = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .current_dir(site.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "Dev")
                .env("GIT_AUTHOR_EMAIL", "dev@example.com")
                .env("GIT_COMMITTER_NAME", "Dev")
                .env("GIT_COMMITTER_EMAIL", "dev@example.com")
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(site.path().join("README.md"), "A site.\n").unwrap();
        git(&["add", "README.md"]);
        git(&["commit", "-q", "-m", "Start"]);
        let kept = Arc::new(cms_core::testing::MemoryVersions::default());
        let versions = GitVersions::new(site.path(), &site.path().join(".cms"), "main", kept);
        futures_executor::block_on(cms_core::testing::contract::version_store(&versions));
        let repo = futures_executor::block_on(versions.repo()).unwrap();
        assert!(repo.is_some(), "the history was read from the repository");
    }

    /// Deleted items are found in git's history once, and what was found is kept for
    /// the next server (it reads the kept file instead of walking the history again).
    #[test]
    fn removed_files_are_found_once_and_kept_across_restarts() {
        let site = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .current_dir(site.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "Dev")
                .env("GIT_AUTHOR_EMAIL", "dev@example.com")
                .env("GIT_COMMITTER_NAME", "Dev")
                .env("GIT_COMMITTER_EMAIL", "dev@example.com")
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        let posts = cms_core::testing::contract::posts_collection();
        let folder = site.path().join(&posts.path);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("2024-01-02-gone.md"), "---\ntitle: Gone\n---\n").unwrap();
        std::fs::write(folder.join("2024-01-03-kept.md"), "---\ntitle: Kept\n---\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "two"]);
        git(&["rm", "-q", &format!("{}/2024-01-02-gone.md", posts.path)]);
        git(&["commit", "-q", "-m", "one gone"]);
        let state = site.path().join(".cms");
        let open = || {
            GitVersions::new(
                site.path(),
                &state,
                "main",
                Arc::new(cms_core::testing::MemoryVersions::default()),
            )
        };
        let found = futures_executor::block_on(open().items_with_history(&posts)).unwrap();
        assert_eq!(found, ["2024-01-02-gone.md"]);
        // The next server reads what was found: a name only the file holds shows it.
        let file = state.join("git/removed.json");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("2024-01-02-gone.md", "2024-01-01-from-the-file.md")).unwrap();
        let found = futures_executor::block_on(open().items_with_history(&posts)).unwrap();
        assert_eq!(found, ["2024-01-01-from-the-file.md"]);
    }

    #[test]
    fn the_least_recently_read_items_commits_go_first() {
        let mut known = KnownCommits::default();
        for i in 0..KNOWN_ITEMS {
            known.keep(
                format!("posts/{i}.md"),
                ItemCommits { entries: vec![commit(1, "a")], ..ItemCommits::default() },
            );
        }
        assert!(known.get("posts/0.md").is_some());
        known.keep("posts/new.md".into(), ItemCommits::default());
        assert_eq!(known.items.len(), KNOWN_ITEMS);
        assert!(known.get("posts/0.md").is_some(), "read lately: kept");
        assert!(known.get("posts/1.md").is_none(), "the least recently read went");
    }

    #[test]
    fn the_newest_commit_is_the_current_content_when_the_file_holds_it() {
        let entries = vec![commit(10, "a"), commit(20, "b")];
        let current = |entries: Vec<Entry>, file: Option<&str>, committed: Option<&str>| {
            History::of(entries, Vec::new(), file, committed).current
        };
        assert_eq!(current(entries.clone(), Some("b"), Some("b")), Some(20));
        // Written again, not committed yet: the newest commit is a version.
        assert_eq!(current(entries.clone(), Some("c"), Some("b")), None);
        // Restored to `a`, not committed yet: nothing is hidden either.
        assert_eq!(current(entries.clone(), Some("a"), Some("b")), None);
        // Deleted.
        assert_eq!(current(entries.clone(), None, None), None);
        // Restored to `a` and committed: the restore's commit is the current content.
        let restored = vec![commit(10, "a"), commit(20, "b"), commit(30, "a")];
        assert_eq!(current(restored, Some("a"), Some("a")), Some(30));
        // A pull's conflict: the merge (not listed) took the remote's `r`, older than this
        // site's `l`: the remote's commit is the current content, this site's a version.
        let conflict = vec![commit(10, "a"), commit(20, "r"), commit(30, "l")];
        assert_eq!(current(conflict, Some("r"), Some("r")), Some(20));
    }
}
