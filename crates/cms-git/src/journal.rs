//! `.cms/git/pending`: the changes acknowledged but not yet committed, one JSON line each,
//! appended before the write answers. A server stopped before it committed them (`kill -9`)
//! commits them at its next start, from the working tree, so that no acknowledged write is
//! left out of the history. The file is emptied, or rewritten with what is still pending,
//! after each commit.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{GitError, GitResult};

/// What the history will say of one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// `Caller::author`: a key's name, an editor's email, `cms CLI`.
    pub(crate) author: String,
    /// The acting user's email; empty for the operator.
    pub(crate) email: String,
    /// The item file's path in the repository.
    pub(crate) path: String,
    /// How messages name the item: `posts/hello-world`.
    pub(crate) item: String,
    pub(crate) verb: Verb,
    /// Unix seconds of the change: the commit's author date.
    pub(crate) at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Verb {
    Create,
    Update,
    Delete,
}

impl Verb {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Create => "Create",
            Self::Update => "Update",
            Self::Delete => "Delete",
        }
    }
}

pub(crate) struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Opens the journal in `folder` (made if missing), with the changes a stopped server
    /// left in it. A line cut short by a crash is skipped: its write was not acknowledged.
    pub(crate) fn open(folder: &Path) -> GitResult<(Self, Vec<Pending>)> {
        std::fs::create_dir_all(folder).map_err(GitError::io(folder))?;
        let path = folder.join("pending");
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(GitError::io(&path))?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(GitError::io(&path))?;
        Ok((Self { path, file }, parse(&text)))
    }

    /// The changes pending in the journal in `folder`, without opening it to write.
    pub(crate) fn read(folder: &Path) -> GitResult<Vec<Pending>> {
        let path = folder.join("pending");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(GitError::Io { path, source: error }),
        };
        Ok(parse(&text))
    }

    /// The line [`Self::append`] writes for a change.
    pub(crate) fn line(pending: &Pending) -> String {
        let mut line = serde_json::to_string(pending).unwrap_or_default();
        line.push('\n');
        line
    }

    /// Appends one line, in one write (the file is opened to append).
    pub(crate) fn append(&mut self, line: &str) -> GitResult<()> {
        self.file.write_all(line.as_bytes()).map_err(GitError::io(&self.path))
    }

    /// Keeps only `lines`: emptied when there are none, else replaced whole.
    pub(crate) fn keep_only<'a>(&mut self, lines: impl Iterator<Item = &'a str>) -> GitResult<()> {
        let mut text = String::new();
        lines.for_each(|line| text.push_str(line));
        if text.is_empty() {
            self.file.set_len(0).map_err(GitError::io(&self.path))?;
            return self.file.rewind().map_err(GitError::io(&self.path));
        }
        let folder = self.path.parent().unwrap_or(Path::new("."));
        let mut staged = tempfile::NamedTempFile::new_in(folder).map_err(GitError::io(folder))?;
        staged.write_all(text.as_bytes()).map_err(GitError::io(&self.path))?;
        staged.persist(&self.path).map_err(|e| GitError::Io { path: self.path.clone(), source: e.error })?;
        self.file =
            OpenOptions::new().append(true).read(true).open(&self.path).map_err(GitError::io(&self.path))?;
        Ok(())
    }
}

/// The journal's lines; one cut short by a crash is skipped.
fn parse(text: &str) -> Vec<Pending> {
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(item: &str) -> Pending {
        Pending {
            author: "ann@example.com".into(),
            email: "ann@example.com".into(),
            path: format!("content/posts/{item}.md"),
            item: format!("posts/{item}"),
            verb: Verb::Update,
            at: 1_700_000_000,
        }
    }

    #[test]
    fn pending_changes_survive_a_reopen_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (mut journal, found) = Journal::open(dir.path()).unwrap();
        assert!(found.is_empty());
        journal.append(&Journal::line(&change("a"))).unwrap();
        journal.append(&Journal::line(&change("b"))).unwrap();
        journal.append("{\"author\":\"cut sho").unwrap();
        drop(journal);
        let (mut journal, found) = Journal::open(dir.path()).unwrap();
        assert_eq!(found, [change("a"), change("b")]);
        let kept = Journal::line(&change("b"));
        journal.keep_only([kept.as_str()].into_iter()).unwrap();
        journal.append(&Journal::line(&change("c"))).unwrap();
        assert_eq!(Journal::open(dir.path()).unwrap().1, [change("b"), change("c")]);
        let (mut journal, _) = Journal::open(dir.path()).unwrap();
        journal.keep_only(std::iter::empty()).unwrap();
        journal.append(&Journal::line(&change("d"))).unwrap();
        assert_eq!(Journal::open(dir.path()).unwrap().1, [change("d")]);
    }
}
