//! What can go wrong keeping the site in git, each message naming its cause and the fix.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The `git` program could not be started.
    #[error(
        "cannot run the git program ({0}): install git (Debian: apt install git), or remove git: from cms.yaml"
    )]
    Missing(#[source] std::io::Error),
    /// A git command answered with an error.
    #[error("`git {command}` failed: {message}")]
    Failed { command: String, message: String },
    /// A git command took too long and was stopped.
    #[error("`git {command}` took longer than {secs} s and was stopped")]
    TimedOut { command: String, secs: u64 },
    /// The repository is not one the site can be kept in, as it is.
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GitError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}

pub type GitResult<T> = Result<T, GitError>;
