//! Pulling: the remote's branch fetched and merged on the committer's thread, between
//! commits, so that the two never interleave.
//!
//! The merge is made in the object store (`git merge-tree --write-tree`), never by `git
//! merge` in the folder, where the server writes at any time. Each item file the merge
//! changes is written through the facade (`Cms::apply_incoming`): under the item's lock,
//! only if the file is still what this site last committed, its old version kept in the
//! history, announced as an outside edit (index, webhooks, event stream). A write made
//! meanwhile wins in the folder and is committed on top of the merge. Other files the
//! merge changes (media, templates, `cms.yaml`) are written the same careful way, without
//! the facade; nothing is ever written under `.cms/`.
//!
//! When both sides changed a file and git cannot merge them, the remote's version is taken
//! and this site's stays reachable on a branch `cms/conflict-<time>` (pushed with the next
//! push) and in the item's history; the conflict is recorded in `.cms/git/conflicts.json`
//! for `cms git status` and `cms check`. The remote's history is never rewritten.

use std::path::{Component, Path};
use std::sync::Arc;
use std::time::Duration;

use cms_core::Cms;
use cms_core::collection::Collection;
use cms_core::policy::Caller;
use cms_core::service::Incoming;

use crate::error::{GitError, GitResult};
use crate::program::Run;
use crate::repo::{COMMITTER_EMAIL, COMMITTER_NAME, Head, Repo};
use crate::status::Conflict;

/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);

/// What a pull did.
#[derive(Debug, Default)]
pub(crate) struct Pulled {
    /// Files the merge changed.
    pub(crate) files: usize,
    /// Commits made (a merge commit), or the branch moved (a fast-forward).
    pub(crate) moved: bool,
    pub(crate) conflict: Option<Conflict>,
}

/// A collection's folder, to tell item files among the merge's.
pub(crate) struct ItemFolder {
    pub(crate) collection: Collection,
    /// In the repository: `content/posts`.
    pub(crate) in_repo: String,
}

/// One file the merge changes: its path, and its blob before and after (`None`: absent).
struct Changed {
    path: String,
    before: Option<String>,
    after: Option<(String, String)>,
}

pub(crate) fn pull(
    repo: &mut Repo,
    cms: &Arc<Cms>,
    remote: &str,
    folders: &[ItemFolder],
    site: &Path,
) -> GitResult<Pulled> {
    let branch_ref = repo.branch_ref().to_owned();
    let branch = branch_ref.trim_start_matches("refs/heads/").to_owned();
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let refspec = format!("+{branch_ref}:{tracking}");
    let fetched =
        repo.git().run_with(Run::new(&["fetch", "-q", "--no-tags", remote, &refspec]).timeout(FETCH_TIMEOUT));
    if let Err(GitError::Failed { message, .. }) = &fetched
        && message.contains("couldn't find remote ref")
    {
        // The remote has no such branch yet: the first push makes it.
        return Ok(Pulled::default());
    }
    fetched?;
    let Some(theirs) = repo.git().ask(&["rev-parse", "-q", "--verify", &format!("{tracking}^{{commit}}")])?
    else {
        return Ok(Pulled::default());
    };
    let Some(ours) = repo.head().cloned() else { return Ok(Pulled::default()) };
    let is_ancestor = |a: &str, b: &str| -> GitResult<bool> {
        Ok(repo.git().ask(&["merge-base", "--is-ancestor", a, b])?.is_some())
    };
    if theirs == ours.commit || is_ancestor(&theirs, &ours.commit)? {
        return Ok(Pulled::default());
    }
    let fast_forward = is_ancestor(&ours.commit, &theirs)?;
    let (tree, conflicted) = if fast_forward {
        (repo.git().run(&["rev-parse", &format!("{theirs}^{{tree}}")])?, Vec::new())
    } else {
        merged_tree(repo, &ours.commit, &theirs)?
    };
    let conflict = if conflicted.is_empty() {
        None
    } else {
        let at = crate::status::now_text();
        // `cms/conflict-20261129T101500Z-4b0f0c2d`: when, and which of this site's commits.
        let stamp: String = at.chars().take(19).filter(|c| c.is_ascii_digit() || *c == 'T').collect();
        let branch = format!("cms/conflict-{stamp}Z-{}", &ours.commit[..8]);
        repo.git().run(&["update-ref", &format!("refs/heads/{branch}"), &ours.commit, ""])?;
        Some(Conflict { at, branch, local: ours.commit.clone(), remote: theirs.clone(), paths: conflicted })
    };
    let tree = match &conflict {
        Some(conflict) => theirs_where_conflicted(repo, &tree, &theirs, &conflict.paths)?,
        None => tree,
    };
    let changes = changed(repo, &ours.tree, &tree)?;
    let author = format!("git pull from {remote}");
    let mut blobs = repo.git().blobs()?;
    for change in &changes {
        apply(repo, &mut blobs, cms, folders, site, change, &author)?;
    }
    drop(blobs);
    let new_head = if fast_forward {
        theirs.clone()
    } else {
        let mut message = format!("Merge {remote}/{branch}\n");
        if let Some(conflict) = &conflict {
            message.push_str(&format!(
                "\nBoth sides changed these files; the remote's version was kept, this site's is on {}:\n",
                conflict.branch
            ));
            for path in &conflict.paths {
                message.push_str(&format!("  {path}\n"));
            }
        }
        repo.git().run_with(
            Run::new(&["commit-tree", &tree, "-p", &ours.commit, "-p", &theirs, "-F", "-"])
                .input(message.as_bytes())
                .env("GIT_AUTHOR_NAME", COMMITTER_NAME)
                .env("GIT_AUTHOR_EMAIL", COMMITTER_EMAIL)
                .env("GIT_COMMITTER_NAME", COMMITTER_NAME)
                .env("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
        )?
    };
    repo.git().run(&[
        "update-ref",
        "-m",
        &format!("cms: pull from {remote}"),
        &branch_ref,
        &new_head,
        &ours.commit,
    ])?;
    // The folder's index follows the new commit for the files it changed.
    let mut info = String::new();
    let zero = repo.zero();
    for change in &changes {
        match &change.after {
            Some((mode, blob)) => info.push_str(&format!("{mode} {blob}\t{}\n", change.path)),
            None => info.push_str(&format!("0 {zero}\t{}\n", change.path)),
        }
    }
    if !info.is_empty() {
        let [config, split] = crate::repo::SPLIT_INDEX;
        repo.git()
            .run_with(Run::new(&[config, split, "update-index", "--index-info"]).input(info.as_bytes()))?;
    }
    repo.set_head(Head { commit: new_head, tree });
    Ok(Pulled { files: changes.len(), moved: true, conflict })
}

/// The merge of the two commits as a tree, and the files git could not merge.
fn merged_tree(repo: &Repo, ours: &str, theirs: &str) -> GitResult<(String, Vec<String>)> {
    // Exit 1 means conflicts, with the same output: asked as a question.
    let output = repo.git().run_with(
        Run::new(&["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs])
            .allow_exit(1),
    )?;
    let mut parts = output.split('\0');
    let tree = parts.next().unwrap_or_default().trim().to_owned();
    let conflicted: Vec<String> = parts.take_while(|p| !p.is_empty()).map(str::to_owned).collect();
    if tree.is_empty() {
        return Err(GitError::Failed {
            command: "merge-tree".into(),
            message: "no tree in its answer".into(),
        });
    }
    Ok((tree, conflicted))
}

/// `tree` with the remote's version (or absence) of each of `paths`.
fn theirs_where_conflicted(repo: &Repo, tree: &str, theirs: &str, paths: &[String]) -> GitResult<String> {
    let index = repo.git_dir().join("cms-merge-index");
    let index_text = index.to_string_lossy().into_owned();
    let _ = std::fs::remove_file(&index);
    let with_index = |args: &[&str], input: Option<&[u8]>| {
        let mut run = Run::new(args).env("GIT_INDEX_FILE", &index_text);
        if let Some(input) = input {
            run = run.input(input);
        }
        repo.git().run_with(run)
    };
    with_index(&["read-tree", tree], None)?;
    let mut info = String::new();
    for path in paths {
        let entry = repo.git().run(&["ls-tree", theirs, "--", path])?;
        match entry.split_once('\t') {
            Some((mode_type_blob, _)) => {
                let mut fields = mode_type_blob.split(' ');
                let (mode, _, blob) =
                    (fields.next().unwrap_or(""), fields.next(), fields.next().unwrap_or(""));
                info.push_str(&format!("{mode} {blob}\t{path}\n"));
            }
            None => info.push_str(&format!("0 {}\t{path}\n", repo.zero())),
        }
    }
    // Conflicted entries sit at stages 1-3: `--index-info` with stage 0 replaces them all.
    with_index(&["update-index", "--index-info"], Some(info.as_bytes()))?;
    let resolved = with_index(&["write-tree"], None);
    let _ = std::fs::remove_file(&index);
    resolved
}

/// The files that differ between two trees.
fn changed(repo: &Repo, from: &str, to: &str) -> GitResult<Vec<Changed>> {
    let output = repo.git().run(&["diff-tree", "-r", "-z", "--no-renames", from, to])?;
    let mut fields = output.split('\0');
    let mut changes = Vec::new();
    let zero = repo.zero();
    while let Some(meta) = fields.next() {
        let Some(path) = fields.next() else { break };
        // `:100644 100644 <old> <new> M`
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, new_mode, old, new, _status] = parts.as_slice() else { continue };
        changes.push(Changed {
            path: path.to_owned(),
            before: (*old != zero).then(|| (*old).to_owned()),
            after: (*new != zero).then(|| ((*new_mode).to_owned(), (*new).to_owned())),
        });
    }
    Ok(changes)
}

/// Writes one file the merge changed into the folder: an item through the facade, another
/// file directly, each only if it still holds what this site last committed.
fn apply(
    repo: &Repo,
    blobs: &mut crate::program::Blobs,
    cms: &Arc<Cms>,
    folders: &[ItemFolder],
    site: &Path,
    change: &Changed,
    author: &str,
) -> GitResult<()> {
    let before = change.before.as_deref().map(|oid| blobs.read(oid)).transpose()?;
    let after = match &change.after {
        Some((mode, oid)) if mode == "100644" || mode == "100755" => Some(blobs.read(oid)?),
        Some((mode, _)) => {
            tracing::warn!(path = %change.path, mode, "git pull: left a link or submodule out of the folder");
            return Ok(());
        }
        None => None,
    };
    let item = folders.iter().find_map(|folder| {
        let name = change.path.strip_prefix(&folder.in_repo)?.strip_prefix('/')?;
        // Translations by file name share a folder: the name says whose it is.
        (!name.contains('/') && folder.collection.naming.classify(name).is_ok()).then_some((folder, name))
    });
    if let Some((folder, name)) = item {
        let applied = futures_executor::block_on(cms.apply_incoming(
            Caller::Operator,
            &folder.collection,
            name,
            before.as_deref(),
            after.as_deref(),
            author,
        ))
        .map_err(|error| GitError::Refused(format!("git pull: cannot write {}: {error}", change.path)))?;
        if applied == Incoming::Diverged {
            tracing::info!(path = %change.path, "git pull: the file was written meanwhile; that write is committed on top");
        }
        return Ok(());
    }
    let Some(in_site) = change.path.strip_prefix(repo.prefix()) else { return Ok(()) };
    write_other(site, in_site, before.as_deref(), after.as_deref())
}

/// A file of the merge that is not an item, written into the site folder if it still holds
/// `before`; never under `.cms/`, never through a link.
fn write_other(site: &Path, in_site: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> GitResult<()> {
    let relative = Path::new(in_site);
    let safe = relative.components().all(|c| matches!(c, Component::Normal(_)))
        && relative.components().next().is_some_and(|first| first.as_os_str() != ".cms");
    if !safe {
        tracing::warn!(
            path = in_site,
            "git pull: left a file out of the folder (private state, or not a plain path)"
        );
        return Ok(());
    }
    let mut folder = site.to_owned();
    let parents: Vec<_> = relative.parent().map(|p| p.components().collect()).unwrap_or_default();
    for part in parents {
        folder.push(part);
        match std::fs::symlink_metadata(&folder) {
            Ok(meta) if meta.file_type().is_symlink() => {
                tracing::warn!(path = in_site, "git pull: left a file out: its folder is a link");
                return Ok(());
            }
            _ => {}
        }
    }
    let path = site.join(relative);
    let current = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(GitError::Io { path, source: error }),
    };
    if current.as_deref() != before {
        tracing::info!(path = in_site, "git pull: the file was changed here meanwhile; kept as it is");
        return Ok(());
    }
    match after {
        Some(bytes) => {
            std::fs::create_dir_all(&folder).map_err(GitError::io(&folder))?;
            let mut staged = tempfile::NamedTempFile::new_in(&folder).map_err(GitError::io(&folder))?;
            std::io::Write::write_all(&mut staged, bytes).map_err(GitError::io(&path))?;
            staged.as_file().sync_all().map_err(GitError::io(&path))?;
            staged.persist(&path).map_err(|e| GitError::Io { path: path.clone(), source: e.error })?;
        }
        None => match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(GitError::Io { path, source: error }),
        },
    }
    Ok(())
}
