use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cms_core::collection::Collection;
use cms_core::ports::{ContentStore, FileStamp, StoredFile};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};

use crate::atomic::{self, Existing};
use crate::error::io_error;
use crate::stamp;

/// Largest item file the server reads (frontmatter and body together).
pub const MAX_ITEM_BYTES: u64 = 16 * 1024 * 1024;

/// Item files under the site folder.
#[derive(Debug, Clone)]
pub struct FsContentStore {
    site: PathBuf,
}

impl FsContentStore {
    pub fn new(site: impl Into<PathBuf>) -> Self {
        Self { site: site.into() }
    }

    /// The collection's folder, refused if it (or, while it does not exist yet, its nearest
    /// existing ancestor) resolves outside the site: a symlinked folder pointing elsewhere
    /// is never read or written through.
    fn folder(&self, collection: &Collection) -> CoreResult<PathBuf> {
        let folder = self.site.join(&collection.path);
        let site = self.site.canonicalize().map_err(io_error(&self.site))?;
        let existing = folder.ancestors().find_map(|p| p.canonicalize().ok());
        match existing {
            Some(real) if real.starts_with(&site) => Ok(folder),
            _ => Err(CoreError::Forbidden(format!(
                "collection folder {} resolves outside the site folder",
                collection.path
            ))),
        }
    }
}

impl ContentStore for FsContentStore {
    fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        let folder = self.folder(collection)?;
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&folder)(e)),
        };
        let mut stamps = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(&folder))?;
            // DirEntry::metadata does not follow symlinks: a symlink is never an item.
            let Ok(meta) = entry.metadata() else { continue };
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if meta.is_file() && name.ends_with(".md") && !name.starts_with('.') {
                stamps.push(stamp::from_metadata(name, &meta));
            }
        }
        Ok(stamps)
    }

    fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        let path = self.folder(collection)?.join(name.as_str());
        let file = match open_no_follow(&path) {
            Ok(file) => file,
            Err(e) if is_missing_or_link(&e) => return Ok(None),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let meta = file.metadata().map_err(io_error(&path))?;
        if !meta.is_file() {
            return Ok(None);
        }
        if meta.len() > MAX_ITEM_BYTES {
            return Err(CoreError::Corrupt(format!(
                "item file {} is {} bytes, over the limit of {MAX_ITEM_BYTES}",
                name.as_str(),
                meta.len()
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_ITEM_BYTES + 1).read_to_end(&mut bytes).map_err(io_error(&path))?;
        Ok(Some(StoredFile { bytes, stamp: stamp::from_metadata(name.as_str(), &meta) }))
    }

    fn create(&self, collection: &Collection, name: &ItemFilename, bytes: &[u8]) -> CoreResult<FileStamp> {
        let path = self.folder(collection)?.join(name.as_str());
        match atomic::write(&path, bytes, Existing::Keep) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(CoreError::Conflict(format!("{} already exists", name.as_str())));
            }
            other => other.map_err(io_error(&path))?,
        }
        stamp_of(&path, name)
    }

    fn replace(&self, collection: &Collection, name: &ItemFilename, bytes: &[u8]) -> CoreResult<FileStamp> {
        let path = self.folder(collection)?.join(name.as_str());
        atomic::write(&path, bytes, Existing::Replace).map_err(io_error(&path))?;
        stamp_of(&path, name)
    }

    fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        let folder = self.folder(collection)?;
        let path = folder.join(name.as_str());
        match fs::remove_file(&path) {
            Ok(()) => atomic::sync_dir(&folder).map_err(io_error(&folder)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(CoreError::not_found(format!("{} does not exist", name.as_str())))
            }
            Err(e) => Err(io_error(&path)(e)),
        }
    }
}

fn stamp_of(path: &Path, name: &ItemFilename) -> CoreResult<FileStamp> {
    let meta = fs::symlink_metadata(path).map_err(io_error(path))?;
    Ok(stamp::from_metadata(name.as_str(), &meta))
}

/// Opens a file for reading without following a final symlink.
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

pub(crate) fn is_missing_or_link(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound || error.raw_os_error() == Some(libc::ELOOP)
}
