//! Index snapshots in `.cms/index/`, one file per collection folder. The facade encodes and
//! validates their content; this adapter adds one check of its own: a snapshot is used
//! only by the same program that wrote it (same executable size and modification time),
//! since how items are parsed changes with the program.

use std::fs;
use std::io::{self, BufRead, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::collection::Collection;
use cms_core::ports::IndexSnapshots;

use crate::atomic;
use crate::blocking;
use crate::error::io_error;

/// The folder under the state folder.
pub const SNAPSHOT_DIR: &str = "index";

#[derive(Debug, Clone)]
pub struct FsSnapshots {
    dir: PathBuf,
    /// Who wrote a snapshot; `None` when the running program cannot be identified (then no
    /// snapshot is read or written).
    program: Option<String>,
}

impl FsSnapshots {
    pub fn new(state_dir: &Path) -> Self {
        Self { dir: state_dir.join(SNAPSHOT_DIR), program: program_identity() }
    }

    /// A collection folder's snapshot file: the folder path with `%` and `/` escaped, so
    /// that every folder has a name of its own; a translation by file name, which shares
    /// its folder, adds `%lang-` and its language (a bare `%` no escaped path holds).
    /// The file of one kind of snapshot: `.snapshot` for the index, `.search` for the
    /// search index.
    fn path_of(&self, collection: &Collection, kind: Kind) -> PathBuf {
        let name = collection.path.replace('%', "%25").replace('/', "%2F");
        let extension = match kind {
            Kind::Index => "snapshot",
            Kind::Search => "search",
        };
        match collection.naming.suffix() {
            Some(lang) => self.dir.join(format!("{name}%lang-{lang}.{extension}")),
            None => self.dir.join(format!("{name}.{extension}")),
        }
    }

    /// The snapshot of one kind after its identity line, to be read, with the size of what
    /// follows that line; `None` when there is none, or another program wrote it.
    fn open_checked(
        &self,
        collection: &Collection,
        kind: Kind,
    ) -> CoreResult<Option<(io::BufReader<fs::File>, usize)>> {
        let Some(program) = &self.program else { return Ok(None) };
        let path = self.path_of(collection, kind);
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let size = file.metadata().map_err(io_error(&path))?.len();
        let header = format!("{program}\n");
        let mut reader = io::BufReader::new(file);
        let mut first_line = Vec::with_capacity(header.len());
        (&mut reader)
            .take(header.len() as u64)
            .read_until(b'\n', &mut first_line)
            .map_err(io_error(&path))?;
        if first_line != header.as_bytes() {
            return Ok(None);
        }
        let rest = usize::try_from(size).unwrap_or(0).saturating_sub(header.len());
        Ok(Some((reader, rest)))
    }

    /// The index snapshot after its identity line, to be read: a start decodes it as it
    /// reads.
    fn open_blocking(&self, collection: &Collection) -> CoreResult<Option<Box<dyn Read + Send>>> {
        let opened = self.open_checked(collection, Kind::Index)?;
        Ok(opened.map(|(reader, _)| Box::new(reader) as Box<dyn Read + Send>))
    }

    /// Reads the identity line first and the rest straight into the one buffer returned:
    /// a snapshot is tens of MB at 100,000 items, and a second copy of it would be the
    /// largest allocation of a restart.
    fn load_blocking(&self, collection: &Collection, kind: Kind) -> CoreResult<Option<Vec<u8>>> {
        let Some((mut reader, rest)) = self.open_checked(collection, kind)? else { return Ok(None) };
        let mut bytes = Vec::with_capacity(rest);
        reader.read_to_end(&mut bytes).map_err(io_error(&self.path_of(collection, kind)))?;
        Ok(Some(bytes))
    }

    fn save_blocking(&self, collection: &Collection, kind: Kind, bytes: &[u8]) -> CoreResult<()> {
        let Some(program) = &self.program else { return Ok(()) };
        let path = self.path_of(collection, kind);
        let header = format!("{program}\n");
        atomic::write_private_parts(&path, [header.as_bytes(), bytes]).map_err(io_error(&path))
    }

    /// [`Self::save_blocking`] of an index snapshot made part by part as it is written.
    fn save_parts_blocking(
        &self,
        collection: &Collection,
        parts: Box<dyn Iterator<Item = Vec<u8>> + Send>,
    ) -> CoreResult<()> {
        let Some(program) = &self.program else { return Ok(()) };
        let path = self.path_of(collection, Kind::Index);
        let header = format!("{program}\n").into_bytes();
        atomic::write_private_parts(&path, std::iter::once(header).chain(parts)).map_err(io_error(&path))
    }
}

/// `cms-index <version> <executable size>-<executable mtime in ns>`.
fn program_identity() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = fs::metadata(exe).ok()?;
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some(format!("cms-index {} {}-{mtime_ns}", env!("CARGO_PKG_VERSION"), meta.size()))
}

/// Which snapshot of a collection.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Index,
    Search,
}

#[async_trait]
impl IndexSnapshots for FsSnapshots {
    async fn load(&self, collection: &Collection) -> CoreResult<Option<Vec<u8>>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.load_blocking(&collection, Kind::Index)).await
    }

    async fn open(&self, collection: &Collection) -> CoreResult<Option<Box<dyn Read + Send>>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.open_blocking(&collection)).await
    }

    async fn save(&self, collection: &Collection, bytes: Vec<u8>) -> CoreResult<()> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.save_blocking(&collection, Kind::Index, &bytes)).await
    }

    async fn save_parts(
        &self,
        collection: &Collection,
        parts: Box<dyn Iterator<Item = Vec<u8>> + Send>,
    ) -> CoreResult<()> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.save_parts_blocking(&collection, parts)).await
    }

    async fn load_search(&self, collection: &Collection) -> CoreResult<Option<Vec<u8>>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.load_blocking(&collection, Kind::Search)).await
    }

    async fn save_search(&self, collection: &Collection, bytes: Vec<u8>) -> CoreResult<()> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.save_blocking(&collection, Kind::Search, &bytes)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collection(path: &str) -> Collection {
        let config = cms_core::config::CollectionConfig {
            label: "Posts".into(),
            path: path.into(),
            page_path: None,
            date_prefix: false,
            fields: None,
            extra_fields: Default::default(),
        };
        Collection::from_config(0, &config)
    }

    #[tokio::test]
    async fn keeps_bytes_per_folder_for_the_same_program_only() {
        let state = tempfile::tempdir().unwrap();
        let store = FsSnapshots::new(state.path());
        let (posts, nested) = (collection("content/posts"), collection("content%2Fposts"));
        assert_eq!(store.load(&posts).await.unwrap(), None);
        store.save(&posts, b"one".to_vec()).await.unwrap();
        store.save(&nested, b"two".to_vec()).await.unwrap();
        assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(store.load(&nested).await.unwrap().as_deref(), Some(&b"two"[..]));

        let other_program = FsSnapshots { program: Some("cms-index 0.0.0 1-2".into()), ..store.clone() };
        assert_eq!(other_program.load(&posts).await.unwrap(), None, "another build's snapshot is not read");

        assert_eq!(store.load_search(&posts).await.unwrap(), None, "a search snapshot is a file of its own");
        store.save_search(&posts, b"terms".to_vec()).await.unwrap();
        assert_eq!(store.load_search(&posts).await.unwrap().as_deref(), Some(&b"terms"[..]));
        assert_eq!(store.load(&posts).await.unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(other_program.load_search(&posts).await.unwrap(), None);
    }
}
