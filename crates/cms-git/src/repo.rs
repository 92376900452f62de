//! The site's repository: found (or made) and checked when the site opens, and the one way
//! a commit is made (`Repo::commit`): the changes' blobs and removals written into the
//! index, `write-tree`, `commit-tree`, and the branch moved only if it is still where this
//! process last saw it, so that a commit made meanwhile in the folder by someone else is
//! kept (the commit is made again on top of it).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{GitError, GitResult};
use crate::journal::{Pending, Verb};
use crate::objects::{Format, Objects};
use crate::program::{Git, Run};

/// Who the history names as having made the commits themselves.
pub(crate) const COMMITTER_NAME: &str = "cms";
pub(crate) const COMMITTER_EMAIL: &str = "cms@localhost";

/// How many times a commit is made again when the branch moved under it.
const MOVED_RETRIES: usize = 5;

/// Given to the commands that write the folder's index: a split index writes only the
/// entries a commit changed, not the whole index (13 MB at 100,000 items; `update-index`
/// 67 → 31 ms, `write-tree` 274 → 158 ms there). Every git since 2.4 reads it; a `git`
/// run by hand may write the index whole again, which is fine.
pub(crate) const SPLIT_INDEX: [&str; 2] = ["-c", "core.splitIndex=true"];

/// One change to commit: what the journal says of it, and the bytes its write made (`None`
/// for a removal, or when the bytes were not kept: then the working tree's file is taken).
#[derive(Debug, Clone)]
pub(crate) struct ToCommit {
    pub(crate) pending: Pending,
    pub(crate) bytes: Option<Arc<[u8]>>,
}

/// The branch's commit and its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) commit: String,
    pub(crate) tree: String,
}

pub(crate) struct Repo {
    /// Runs in the top of the working tree: every path given to git is from there.
    git: Git,
    objects: Objects,
    git_dir: PathBuf,
    /// `refs/heads/<branch>`.
    branch_ref: String,
    /// The site folder's path from the top of the working tree (`""`, or `site/`).
    prefix: String,
    /// `None`: the branch has no commit yet.
    head: Option<Head>,
}

impl Repo {
    /// Opens the repository holding `site`, making one there when there is none (git init
    /// on `branch`, the site's files as the first commit). Refused: a folder on another
    /// branch or detached, a repository that tracks `.cms/` (private state would be
    /// pushed). Locks a stopped process left are removed, with a warning.
    pub(crate) fn open(site: &Path, branch: &str) -> GitResult<Self> {
        let at_site = Git::new(site);
        if at_site.ask(&["rev-parse", "--is-inside-work-tree"])?.as_deref() != Some("true") {
            if at_site.ask(&["rev-parse", "--git-dir"])?.is_some() {
                return Err(GitError::Refused(format!(
                    "{} is inside a git repository but not in a working tree (a bare repository or its .git folder); \
                     git: needs the site folder in a working tree",
                    site.display()
                )));
            }
            init(site, branch)?;
            tracing::info!(folder = %site.display(), branch, "git: made the site folder a git repository, its files the first commit");
        }
        let mut repo = Self::open_existing(site, branch)?;
        remove_stale_locks(&repo.git_dir, &repo.branch_ref, STALE_LOCK_AGE);
        if repo.head.is_none() {
            // A repository without a commit yet (`git init` alone): the site is its first.
            first_commit(site)?;
            repo.head = repo.read_head()?;
        }
        repo.keep_private_state_out(site)?;
        Ok(repo)
    }

    /// Opens the repository holding `site` as it is, changing nothing (`cms git status`).
    pub(crate) fn open_existing(site: &Path, branch: &str) -> GitResult<Self> {
        let at_site = Git::new(site);
        if at_site.ask(&["rev-parse", "--is-inside-work-tree"])?.as_deref() != Some("true") {
            return Err(GitError::Refused(format!(
                "{} is not in a git working tree yet: `cms serve` makes it one (git: is in cms.yaml)",
                site.display()
            )));
        }
        let top = PathBuf::from(at_site.run(&["rev-parse", "--show-toplevel"])?);
        let prefix = at_site.run(&["rev-parse", "--show-prefix"])?;
        let git = Git::new(&top);
        let branch_ref = format!("refs/heads/{branch}");
        git.ask(&["check-ref-format", &branch_ref])?.ok_or_else(|| {
            GitError::Refused(format!(
                "git.branch in cms.yaml, {branch:?}, is not a name git accepts for a branch"
            ))
        })?;
        let checked_out = git.ask(&["symbolic-ref", "-q", "HEAD"])?;
        if checked_out.as_deref() != Some(branch_ref.as_str()) {
            let now = match checked_out {
                Some(other) => format!("has {} checked out", other.trim_start_matches("refs/heads/")),
                None => "has no branch checked out (a detached HEAD)".to_owned(),
            };
            return Err(GitError::Refused(format!(
                "the site's repository {} {now}, but git.branch in cms.yaml is {branch}: \
                 run `git -C {} switch {branch}`, or set git.branch",
                top.display(),
                top.display()
            )));
        }
        let format = Format::parse(&git.run(&["rev-parse", "--show-object-format"])?)?;
        let objects_dir = absolute(&top, &git.run(&["rev-parse", "--git-path", "objects"])?);
        let git_dir = PathBuf::from(git.run(&["rev-parse", "--absolute-git-dir"])?);
        let mut repo = Self {
            git,
            objects: Objects::new(&objects_dir, format),
            git_dir,
            branch_ref,
            prefix,
            head: None,
        };
        repo.head = repo.read_head()?;
        Ok(repo)
    }

    pub(crate) fn git(&self) -> &Git {
        &self.git
    }

    pub(crate) fn top(&self) -> &Path {
        self.git.dir()
    }

    pub(crate) fn branch_ref(&self) -> &str {
        &self.branch_ref
    }

    /// The path in the repository of a path in the site folder.
    pub(crate) fn path_of(&self, in_site: &str) -> String {
        format!("{}{in_site}", self.prefix)
    }

    /// The path in the repository of a folder `cms.yaml` names (`./content/posts/`).
    pub(crate) fn folder_of(&self, configured: &str) -> String {
        self.path_of(&configured_in_site(configured))
    }

    pub(crate) fn head(&self) -> Option<&Head> {
        self.head.as_ref()
    }

    /// After a pull moved the branch.
    pub(crate) fn set_head(&mut self, head: Head) {
        self.head = Some(head);
    }

    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The site folder's path from the top of the working tree (`""`, or `site/`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Packs loose objects once there are many, then brings the commit-graph up to date.
    /// Each commit leaves its trees loose, and a folder of N items has a tree of about 42 N
    /// bytes (250 KB compressed at 10,000 items): git's own threshold (6,700 loose objects,
    /// some 1,300 commits) would leave hundreds of megabytes loose, so it is lowered here
    /// to 1,000 objects (some 200 commits). `git gc --auto` does nothing below it.
    pub(crate) fn maintain(&self) {
        let started = Instant::now();
        match self.git.run(&[
            "-c",
            "gc.auto=1000",
            "-c",
            "gc.autoDetach=false",
            // Written next, with the changed paths.
            "-c",
            "gc.writeCommitGraph=false",
            "gc",
            "--auto",
            "--quiet",
        ]) {
            Ok(_) => tracing::debug!(ms = started.elapsed().as_millis() as u64, "git: gc --auto ran"),
            Err(error) => {
                tracing::warn!(%error, "git: gc --auto failed; loose objects stay until it succeeds")
            }
        }
        self.write_commit_graph();
    }

    /// Brings the commit-graph file up to date, with each commit's changed paths (Bloom
    /// filters): an item's history (`git log -- FILE`) then reads only the commits that
    /// may have changed it, not every tree of the branch (0.16 s instead of 1.6 s on 10,000
    /// commits). The filters already written are reused: 0.13 s there once written (5.9 s
    /// the first time). Best effort: without it, histories are slower, not wrong.
    fn write_commit_graph(&self) {
        let started = Instant::now();
        match self.git.run(&["commit-graph", "write", "--reachable", "--changed-paths"]) {
            Ok(_) => tracing::debug!(ms = started.elapsed().as_millis() as u64, "git: commit-graph written"),
            Err(error) => {
                tracing::debug!(%error, "git: cannot write the commit-graph; histories read slower")
            }
        }
    }

    /// The repository's object format.
    pub(crate) fn format(&self) -> crate::objects::Format {
        self.objects.format()
    }

    /// The object name that means none.
    pub(crate) fn zero(&self) -> &'static str {
        self.objects.format().zero()
    }

    fn read_head(&self) -> GitResult<Option<Head>> {
        let Some(commit) =
            self.git.ask(&["rev-parse", "-q", "--verify", &format!("{}^{{commit}}", self.branch_ref)])?
        else {
            return Ok(None);
        };
        let tree = self.git.run(&["rev-parse", &format!("{commit}^{{tree}}")])?;
        Ok(Some(Head { commit, tree }))
    }

    /// `.cms/` (users, keys, sessions, caches) must never be committed: refused when it is
    /// tracked; ignored through the site folder's `.gitignore` when it is not yet (that
    /// change committed on its own).
    fn keep_private_state_out(&mut self, site: &Path) -> GitResult<()> {
        let state = self.path_of(".cms");
        if !self.git.run(&["ls-files", "--", &state])?.is_empty() {
            return Err(GitError::Refused(format!(
                "the site's repository tracks {state}/, the site's private state (users, keys, sessions): \
                 it would be pushed. Run `git -C {} rm -r --cached {state}` and commit, then start again",
                self.top().display()
            )));
        }
        let probe = self.path_of(".cms/users.yaml");
        if self.git.ask(&["check-ignore", "-q", "--no-index", "--", &probe])?.is_some() {
            return Ok(());
        }
        let ignore = site.join(".gitignore");
        let mut text = std::fs::read_to_string(&ignore).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(
            "# The site's private state (users, keys, sessions, caches): never committed.\n/.cms/\n",
        );
        std::fs::write(&ignore, &text).map_err(GitError::io(&ignore))?;
        let change = ToCommit {
            pending: Pending {
                author: COMMITTER_NAME.into(),
                email: COMMITTER_EMAIL.into(),
                path: self.path_of(".gitignore"),
                item: ".gitignore".into(),
                verb: Verb::Update,
                at: time::OffsetDateTime::now_utc().unix_timestamp(),
            },
            bytes: Some(text.into_bytes().into()),
        };
        self.commit_with_message(&[change], "Keep the site's private state (.cms/) out of git")?;
        Ok(())
    }

    /// Commits `changes` (one author's) as one commit; `None` when they change nothing
    /// (the same bytes written again).
    pub(crate) fn commit(&mut self, changes: &[ToCommit]) -> GitResult<Option<String>> {
        self.commit_with_message(changes, &message(changes))
    }

    fn commit_with_message(&mut self, changes: &[ToCommit], message: &str) -> GitResult<Option<String>> {
        let Some(first) = changes.first() else { return Ok(None) };
        self.stage(changes)?;
        let author_name = identity_text(&first.pending.author);
        let author_email = identity_text(&first.pending.email);
        // The newest change's time: the commit holds the content as of then.
        let newest = changes.iter().map(|change| change.pending.at).max().unwrap_or(first.pending.at);
        let author_date = format!("@{newest} +0000");
        for _ in 0..MOVED_RETRIES {
            let tree = self.git.run(&[SPLIT_INDEX[0], SPLIT_INDEX[1], "write-tree"])?;
            if self.head.as_ref().is_some_and(|head| head.tree == tree) {
                return Ok(None);
            }
            let parent = self.head.as_ref().map(|head| head.commit.clone());
            let mut args = vec!["commit-tree", tree.as_str(), "-F", "-"];
            if let Some(parent) = &parent {
                args.extend(["-p", parent.as_str()]);
            }
            let commit = self.git.run_with(
                Run::new(&args)
                    .input(message.as_bytes())
                    .env("GIT_AUTHOR_NAME", &author_name)
                    .env("GIT_AUTHOR_EMAIL", &author_email)
                    .env("GIT_AUTHOR_DATE", &author_date)
                    .env("GIT_COMMITTER_NAME", COMMITTER_NAME)
                    .env("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
            )?;
            let subject = format!("cms: {}", message.lines().next().unwrap_or_default());
            let moved = self.git.ask(&[
                "update-ref",
                "-m",
                &subject,
                &self.branch_ref,
                &commit,
                parent.as_deref().unwrap_or(""),
            ])?;
            if moved.is_some() {
                self.head = Some(Head { commit: commit.clone(), tree });
                return Ok(Some(commit));
            }
            // Someone committed in the folder meanwhile: on top of theirs.
            self.head = self.read_head()?;
        }
        Err(GitError::Refused(format!(
            "the branch {} kept moving while a commit was made ({MOVED_RETRIES} tries): is another program committing in the site folder?",
            self.branch_ref
        )))
    }

    /// Writes the changes into the index: the blobs of the bytes each write made, the
    /// removals, and the working tree's file where the bytes were not kept.
    fn stage(&self, changes: &[ToCommit]) -> GitResult<()> {
        let mut info = String::new();
        let mut from_tree = Vec::new();
        // The last change of a path is its content in the commit.
        let mut seen = std::collections::HashSet::new();
        for change in changes.iter().rev() {
            let path = change.pending.path.as_str();
            if !seen.insert(path) {
                continue;
            }
            match (change.pending.verb, &change.bytes) {
                (Verb::Delete, _) => {
                    info.push_str(&format!("0 {}\t{path}\n", self.objects.format().zero()));
                }
                (_, Some(bytes)) => {
                    let blob = self.objects.write_blob(bytes)?;
                    info.push_str(&format!("100644 {blob}\t{path}\n"));
                }
                (_, None) => {
                    from_tree.extend_from_slice(path.as_bytes());
                    from_tree.push(0);
                }
            }
        }
        if !info.is_empty() {
            self.git.run_with(
                Run::new(&[SPLIT_INDEX[0], SPLIT_INDEX[1], "update-index", "--index-info"])
                    .input(info.as_bytes()),
            )?;
        }
        if !from_tree.is_empty() {
            self.git.run_with(
                Run::new(&[
                    SPLIT_INDEX[0],
                    SPLIT_INDEX[1],
                    "update-index",
                    "--add",
                    "--remove",
                    "-z",
                    "--stdin",
                ])
                .input(&from_tree),
            )?;
        }
        Ok(())
    }
}

/// `git init` on `branch` in `site`, with `.cms/` ignored and the site's files as the first
/// commit (by `cms`).
pub(crate) fn init(site: &Path, branch: &str) -> GitResult<()> {
    Git::new(site).run(&["init", "-q", "-b", branch])?;
    first_commit(site)
}

/// The site folder's files (`.cms/` ignored) as a commit by `cms`.
fn first_commit(site: &Path) -> GitResult<()> {
    let git = Git::new(site);
    let ignore = site.join(".gitignore");
    let mut text = std::fs::read_to_string(&ignore).unwrap_or_default();
    if !text.lines().any(|line| line.trim() == "/.cms/") {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(
            "# The site's private state (users, keys, sessions, caches): never committed.\n/.cms/\n",
        );
        std::fs::write(&ignore, text).map_err(GitError::io(&ignore))?;
    }
    git.run(&["add", "-A", "."])?;
    git.run_with(
        Run::new(&["commit", "-q", "--no-verify", "--allow-empty", "-m", "Start keeping the site in git"])
            .env("GIT_AUTHOR_NAME", COMMITTER_NAME)
            .env("GIT_AUTHOR_EMAIL", COMMITTER_EMAIL)
            .env("GIT_COMMITTER_NAME", COMMITTER_NAME)
            .env("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
    )?;
    Ok(())
}

/// The commit message of one author's changes: `Update posts/hello-world`, or for several
/// a subject naming the first and a line per change.
pub(crate) fn message(changes: &[ToCommit]) -> String {
    let mut items: Vec<(Verb, &str)> = Vec::new();
    for change in changes {
        let entry = (change.pending.verb, change.pending.item.as_str());
        // One line per item and verb: saved five times is one "Update".
        if !items.contains(&entry) {
            items.push(entry);
        }
    }
    match items.as_slice() {
        [] => String::new(),
        [(verb, item)] => format!("{} {item}\n", verb.as_str()),
        [(verb, item), rest @ ..] => {
            let same = rest.iter().all(|(other, _)| other == verb);
            let verb_word = if same { verb.as_str() } else { "Change" };
            let mut text = format!("{verb_word} {item} and {} more\n\n", rest.len());
            for (verb, item) in &items {
                text.push_str(&format!("{} {item}\n", verb.as_str()));
            }
            text
        }
    }
}

/// A name or email as git takes it in an identity: no angle brackets or line breaks.
fn identity_text(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '<' | '>') && !c.is_control()).collect::<String>().trim().to_owned()
}

/// A folder `cms.yaml` names, as a path in the site folder: `content/posts`.
pub(crate) fn configured_in_site(configured: &str) -> String {
    cms_core::sitepath::display(&cms_core::sitepath::configured(configured))
}

fn absolute(top: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_owned() } else { top.join(path) }
}

/// How old a lock must be before it is taken for one a stopped process left. A server
/// killed with `kill -9` does not take its running `git` with it: that git finishes its
/// step (milliseconds; a second or two for a million-item index) and renames its lock
/// into place. Removing its lock meanwhile would let the two gits rename each other's
/// files (`Unable to write new index file`).
const STALE_LOCK_AGE: Duration = Duration::from_secs(10);

/// A lock a stopped process left (`kill -9` during `update-index` or `update-ref`) would
/// refuse every later commit; the server is the folder's committer, so it removes them:
/// at once when older than `stale_after`, else once the git still holding it is done or
/// the lock has waited that long.
fn remove_stale_locks(git_dir: &Path, branch_ref: &str, stale_after: Duration) {
    let graphs = git_dir.join("objects/info");
    for lock in [
        git_dir.join("index.lock"),
        git_dir.join(format!("{branch_ref}.lock")),
        git_dir.join("HEAD.lock"),
        graphs.join("commit-graph.lock"),
        graphs.join("commit-graphs/commit-graph-chain.lock"),
    ] {
        let waiting_since = Instant::now();
        while let Ok(meta) = std::fs::symlink_metadata(&lock) {
            let age = meta.modified().ok().and_then(|at| at.elapsed().ok()).unwrap_or_default();
            if age >= stale_after || waiting_since.elapsed() >= stale_after {
                tracing::warn!(lock = %lock.display(), "git: removing a lock left by a process that stopped during a commit");
                let _ = std::fs::remove_file(&lock);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(verb: Verb, item: &str) -> ToCommit {
        ToCommit {
            pending: Pending {
                author: "a".into(),
                email: String::new(),
                path: format!("content/{item}.md"),
                item: item.into(),
                verb,
                at: 0,
            },
            bytes: None,
        }
    }

    #[test]
    fn a_message_says_what_changed() {
        assert_eq!(message(&[change(Verb::Update, "posts/hello")]), "Update posts/hello\n");
        assert_eq!(
            message(&[change(Verb::Update, "posts/a"), change(Verb::Update, "posts/a")]),
            "Update posts/a\n"
        );
        assert_eq!(
            message(&[change(Verb::Create, "posts/a"), change(Verb::Create, "posts/b")]),
            "Create posts/a and 1 more\n\nCreate posts/a\nCreate posts/b\n"
        );
        assert_eq!(
            message(&[change(Verb::Create, "posts/a"), change(Verb::Delete, "posts/b")]),
            "Change posts/a and 1 more\n\nCreate posts/a\nDelete posts/b\n"
        );
    }

    /// Many loose objects are packed, and the commit-graph (with changed paths) written.
    #[test]
    fn upkeep_packs_loose_objects_and_writes_the_commit_graph() {
        let site = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(site.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "Dev")
                .env("GIT_AUTHOR_EMAIL", "dev@example.com")
                .env("GIT_COMMITTER_NAME", "Dev")
                .env("GIT_COMMITTER_EMAIL", "dev@example.com")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::create_dir(site.path().join("posts")).unwrap();
        // gc estimates from one of the 256 object folders: enough for it to see past 1,000.
        for i in 0..3000 {
            std::fs::write(site.path().join(format!("posts/{i}.md")), format!("item {i}\n")).unwrap();
        }
        git(&["add", "posts"]);
        git(&["commit", "-q", "-m", "many"]);
        let loose = |text: String| -> u64 {
            text.lines().find_map(|line| line.strip_prefix("count: ")).unwrap().parse().unwrap()
        };
        assert!(loose(git(&["count-objects", "-v"])) > 3000);
        Repo::open_existing(site.path(), "main").unwrap().maintain();
        assert_eq!(loose(git(&["count-objects", "-v"])), 0, "packed");
        let graph = site.path().join(".git/objects/info/commit-graph");
        assert!(graph.is_file(), "the commit-graph is written");
        git(&["fsck", "--strict"]);
    }

    /// A lock a running git holds (the one a killed server left running) is left to it:
    /// removing it would make that git's rename fail, or move another's lock into place.
    #[test]
    fn a_lock_a_running_git_holds_is_waited_for_and_an_old_one_removed() {
        let git_dir = tempfile::tempdir().unwrap();
        let lock = git_dir.path().join("index.lock");
        std::fs::write(&lock, "the index a running git writes").unwrap();
        let finishing = {
            let (lock, index) = (lock.clone(), git_dir.path().join("index"));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                std::fs::rename(lock, index)
            })
        };
        remove_stale_locks(git_dir.path(), "refs/heads/main", Duration::from_secs(60));
        finishing.join().unwrap().expect("the running git's lock was still there to rename");
        let index = std::fs::read_to_string(git_dir.path().join("index")).unwrap();
        assert_eq!(index, "the index a running git writes");

        let left = git_dir.path().join("refs/heads/main.lock");
        std::fs::create_dir_all(left.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&left).unwrap();
        file.set_modified(std::time::SystemTime::now() - Duration::from_secs(3600)).unwrap();
        let started = Instant::now();
        remove_stale_locks(git_dir.path(), "refs/heads/main", Duration::from_secs(60));
        assert!(!left.exists(), "an hour-old lock is removed");
        assert!(started.elapsed() < Duration::from_secs(30), "at once, not after waiting");
    }

    #[test]
    fn identities_lose_what_git_would_refuse() {
        assert_eq!(identity_text("bot <x>\n"), "bot x");
        assert_eq!(identity_text("ann@example.com"), "ann@example.com");
    }
}
