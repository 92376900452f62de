//! Blobs written as loose objects, from the bytes a write made: a commit holds what its
//! author wrote even when the file changed again before the commit was made. The format
//! is git's own (`blob <size>\0<bytes>`, zlib, named by its hash); trees, commits and refs
//! are left to the `git` program.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;
use ring::digest;

use crate::error::{GitError, GitResult};

/// The repository's object format (`git rev-parse --show-object-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Sha1,
    Sha256,
}

impl Format {
    pub(crate) fn parse(name: &str) -> GitResult<Self> {
        match name {
            "sha1" => Ok(Self::Sha1),
            "sha256" => Ok(Self::Sha256),
            other => Err(GitError::Refused(format!("the repository's object format {other:?} is not known"))),
        }
    }

    /// The object name that means "none" (`update-index --index-info` removes with it).
    pub(crate) fn zero(self) -> &'static str {
        match self {
            Self::Sha1 => "0000000000000000000000000000000000000000",
            Self::Sha256 => "0000000000000000000000000000000000000000000000000000000000000000",
        }
    }

    /// The name git gives a blob of `bytes` (`git hash-object`), without writing it.
    pub(crate) fn blob_name(self, bytes: &[u8]) -> String {
        let mut hash = digest::Context::new(self.algorithm());
        hash.update(format!("blob {}\0", bytes.len()).as_bytes());
        hash.update(bytes);
        hex::encode(hash.finish())
    }

    fn algorithm(self) -> &'static digest::Algorithm {
        match self {
            Self::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => &digest::SHA256,
        }
    }
}

/// The object folder of one repository.
#[derive(Debug, Clone)]
pub(crate) struct Objects {
    dir: PathBuf,
    format: Format,
}

impl Objects {
    pub(crate) fn new(dir: &Path, format: Format) -> Self {
        Self { dir: dir.to_owned(), format }
    }

    pub(crate) fn format(&self) -> Format {
        self.format
    }

    /// The blob's name, after writing it unless the repository has it already loose.
    pub(crate) fn write_blob(&self, bytes: &[u8]) -> GitResult<String> {
        let header = format!("blob {}\0", bytes.len());
        let name = self.format.blob_name(bytes);
        let folder = self.dir.join(&name[..2]);
        let path = folder.join(&name[2..]);
        if path.exists() {
            return Ok(name);
        }
        std::fs::create_dir_all(&folder).map_err(GitError::io(&folder))?;
        let mut staged = tempfile::Builder::new()
            .prefix("tmp_obj_")
            .tempfile_in(&folder)
            .map_err(GitError::io(&folder))?;
        let mut encoder = ZlibEncoder::new(Vec::with_capacity(bytes.len() / 2 + 64), Compression::default());
        encoder
            .write_all(header.as_bytes())
            .and_then(|()| encoder.write_all(bytes))
            .map_err(GitError::io(&path))?;
        let compressed = encoder.finish().map_err(GitError::io(&path))?;
        staged.write_all(&compressed).map_err(GitError::io(staged.path().to_owned()))?;
        set_read_only(staged.as_file()).map_err(GitError::io(&path))?;
        match staged.persist_noclobber(&path) {
            Ok(_) => Ok(name),
            // Another writer (git itself) made it meanwhile: same name, same bytes.
            Err(error) if error.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(name),
            Err(error) => Err(GitError::Io { path, source: error.error }),
        }
    }
}

/// Objects are read-only, as git makes them.
fn set_read_only(file: &std::fs::File) -> std::io::Result<()> {
    let mut permissions = file.metadata()?.permissions();
    permissions.set_readonly(true);
    file.set_permissions(permissions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_named_as_git_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path(), Format::Sha1);
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(objects.write_blob(b"hello\n").unwrap(), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert!(dir.path().join("ce/013625030ba8dba906f756967f9e9ca394464a").is_file());
        // Written again: found, not rewritten.
        assert_eq!(objects.write_blob(b"hello\n").unwrap(), "ce013625030ba8dba906f756967f9e9ca394464a");
        let sha256 = Objects::new(dir.path(), Format::Sha256);
        // The same in a repository made with `git init --object-format=sha256`.
        assert_eq!(
            sha256.write_blob(b"hello\n").unwrap(),
            "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
        );
    }
}
