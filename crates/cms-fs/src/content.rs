use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::item::MAX_ITEM_BYTES;
use cms_core::ports::{ContentStore, FileStamp, StoredFile};
use cms_core::slug::ItemFilename;
use cms_core::{CoreError, CoreResult};
use rustix::fs::{self as rfs, Mode, OFlags};
use rustix::io::Errno;

use crate::atomic::{self, Existing};
use crate::blocking;
use crate::error::io_error;
use crate::site_root::SiteRoot;
use crate::stamp;

/// A folder listing with more entries than this has them looked at (`statx`) on several
/// threads: at 300,000 files the looks took most of a start-up's second of listing.
const PARALLEL_STAT_FROM: usize = 4096;
/// At most this many threads look at one listing's entries.
const MAX_STAT_THREADS: usize = 4;

/// At most this many blocking tasks read one `read_many` batch (a start-up's batches are
/// 2,048 files: 64 each). On a cold disk each file is a wait, and more of them in flight
/// keep the disk busier (with [`READ_AHEAD_FILES`] each, 256 reads in flight: the disk
/// queue's depth here); with the files cached, 16 readers start as fast as 4 did...
const MAX_READERS: usize = 32;
/// ...each with at least this many files (a small batch is one task).
const MIN_FILES_PER_READER: usize = 64;

/// Item files under the site folder. Cheap to clone (clones share the resolved site
/// folder).
#[derive(Debug, Clone)]
pub struct FsContentStore {
    site: SiteRoot,
}

impl FsContentStore {
    pub fn new(site: impl Into<PathBuf>) -> Self {
        Self { site: SiteRoot::new(site) }
    }

    /// The collection's folder, refused if it (or, while it does not exist yet, its nearest
    /// existing ancestor) resolves outside the site: a symlinked folder pointing elsewhere
    /// is never read or written through.
    pub(crate) fn folder(&self, collection: &Collection) -> CoreResult<PathBuf> {
        self.site.contained(&collection.path)?.ok_or_else(|| {
            CoreError::Forbidden(format!(
                "collection folder {} resolves outside the site folder",
                collection.path
            ))
        })
    }

    fn scan_blocking(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        let folder = self.folder(collection)?;
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&folder)(e)),
        };
        let mut listed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(&folder))?;
            // Every visible file: the core tells items from the rest and reports the rest
            // as skipped. Hidden files (editor swap files, our own staging files) are not
            // the site's content.
            if !entry.file_name().as_encoded_bytes().starts_with(b".") {
                listed.push(entry);
            }
        }
        Ok(stamp_all(&listed))
    }

    fn stat_blocking(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>> {
        let path = self.folder(collection)?.join(name.as_str());
        // symlink_metadata does not follow a final symlink: a symlink is never an item.
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(Some(stamp::from_metadata(name.as_str(), &meta))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        }
    }

    fn read_blocking(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        read_in(&self.folder(collection)?, name)
    }

    /// Reads `names` one after the other (one task of a parallel `read_many`).
    fn read_each_blocking(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<StoredFile>>> {
        match self.folder(collection) {
            // Each file opened in the folder held open, not by its whole path: a start-up
            // reads every file, and walking the path was most of an open's cost.
            Ok(folder) => {
                match rfs::open(&folder, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                {
                    Ok(open_folder) => read_ahead_at(&open_folder, &folder, names),
                    // The folder cannot be opened: each file gets its own answer by path.
                    Err(_) => names.iter().map(|name| read_in(&folder, name)).collect(),
                }
            }
            // Refused folder: every file gets the error.
            Err(_) => names.iter().map(|name| self.read_blocking(collection, name)).collect(),
        }
    }

    fn create_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp> {
        let path = self.folder(collection)?.join(name.as_str());
        match atomic::write(&path, bytes, Existing::Keep) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(CoreError::Conflict(format!("{} already exists", name.as_str())));
            }
            other => other.map_err(io_error(&path))?,
        }
        stamp_of(&path, name)
    }

    /// Replaces the file if it is still the one `expected` describes. The check is a stat
    /// just before the rename, not a lock: an outside editor saving between that stat and
    /// the rename (microseconds) is still overwritten, as before this check existed. This
    /// server's own writes to one item never race here: the facade's per-item lock
    /// serializes them.
    fn replace_blocking(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp> {
        let path = self.folder(collection)?.join(name.as_str());
        // Gone, or no longer a regular file (a symlink is never written through): stale too.
        let unchanged = || match fs::symlink_metadata(&path) {
            Ok(meta) => Ok(meta.is_file()
                && stamp::from_metadata(name.as_str(), &meta).change_token == expected.change_token),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        };
        if !atomic::replace_checked(&path, bytes, unchanged).map_err(io_error(&path))? {
            return Err(CoreError::Stale(format!(
                "item file {} changed on disk while it was being written; read it again and retry",
                name.as_str()
            )));
        }
        stamp_of(&path, name)
    }

    fn delete_blocking(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
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

#[async_trait]
impl ContentStore for FsContentStore {
    async fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || store.scan_blocking(&collection)).await
    }

    /// The folder's own times, inode and device: adding, removing or renaming a file in
    /// it sets its modification and change times (to the kernel's clock tick, a few
    /// milliseconds, so two changes within one tick look like one; the start's check of
    /// every file's stamp behind the first answers covers that too).
    async fn folder_stamp(&self, collection: &Collection) -> CoreResult<Option<u64>> {
        let (store, collection) = (self.clone(), collection.clone());
        blocking::run(move || {
            let folder = store.folder(&collection)?;
            match fs::metadata(&folder) {
                Ok(meta) if meta.is_dir() => Ok(Some(stamp::of_folder(&meta))),
                Ok(_) => Ok(None),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io_error(&folder)(e)),
            }
        })
        .await
    }

    async fn stat(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.stat_blocking(&collection, &name)).await
    }

    /// One trip to the blocking pool for the whole batch.
    async fn stat_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<FileStamp>>> {
        let (store, collection, names) = (self.clone(), collection.clone(), names.to_vec());
        let count = names.len();
        let task = blocking::run(move || {
            Ok(names.iter().map(|name| store.stat_blocking(&collection, name)).collect::<Vec<_>>())
        });
        match task.await {
            Ok(stamps) => stamps,
            // The task itself failed (a panic): each file gets the error.
            Err(error) => {
                let message = error.to_string();
                (0..count).map(|_| Err(CoreError::internal("checking item files", message.clone()))).collect()
            }
        }
    }

    async fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.read_blocking(&collection, &name)).await
    }

    /// Reads the batch in parallel: up to [`MAX_READERS`] blocking tasks, each reading a
    /// consecutive part of `names`, so the results come back in the order of `names`.
    async fn read_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<CoreResult<Option<StoredFile>>> {
        if names.is_empty() {
            return Vec::new();
        }
        let readers = names.len().div_ceil(MIN_FILES_PER_READER).clamp(1, MAX_READERS);
        let part = names.len().div_ceil(readers);
        let tasks: Vec<_> = names
            .chunks(part)
            .map(|part| {
                let (store, collection, part) = (self.clone(), collection.clone(), part.to_vec());
                let len = part.len();
                (len, blocking::spawn(move || Ok(store.read_each_blocking(&collection, &part))))
            })
            .collect();
        let mut files = Vec::with_capacity(names.len());
        for (len, task) in tasks {
            match task.wait().await {
                Ok(part) => files.extend(part),
                // The task itself failed (a panic): each of its files gets the error.
                Err(error) => {
                    let message = error.to_string();
                    files.extend(
                        (0..len).map(|_| Err(CoreError::internal("reading item files", message.clone()))),
                    );
                }
            }
        }
        files
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp> {
        let (store, collection, name, bytes) =
            (self.clone(), collection.clone(), name.clone(), bytes.to_vec());
        blocking::run(move || store.create_blocking(&collection, &name, &bytes)).await
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp> {
        let (store, collection, name, bytes, expected) =
            (self.clone(), collection.clone(), name.clone(), bytes.to_vec(), expected.clone());
        blocking::run(move || store.replace_blocking(&collection, &name, &bytes, &expected)).await
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        let (store, collection, name) = (self.clone(), collection.clone(), name.clone());
        blocking::run(move || store.delete_blocking(&collection, &name)).await
    }
}

/// Reads an item file in `folder` (already checked) without following a symlink.
fn read_in(folder: &Path, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
    let path = folder.join(name.as_str());
    match open_no_follow(&path) {
        Ok(file) => read_opened(file, folder, name),
        Err(e) if is_missing_or_link(&e) => Ok(None),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// Files a reader has opened, and asked the kernel to read, ahead of the one it reads
/// (see [`read_ahead_at`]).
const READ_AHEAD_FILES: usize = 8;

/// [`read_in`] for each of `names`, with the folder held open (`folder` names it in
/// messages). Each file is opened [`READ_AHEAD_FILES`] files before it is read and its
/// reading started then (`posix_fadvise(WILLNEED)`, which returns at once): on a cold
/// disk the reads of a start-up's readers are in flight together, not one wait per file
/// and thread. Opened non-blocking, so that a FIFO planted there cannot hold the thread;
/// it is then no regular file, and no item.
fn read_ahead_at(
    open_folder: &OwnedFd,
    folder: &Path,
    names: &[ItemFilename],
) -> Vec<CoreResult<Option<StoredFile>>> {
    let open = |name: &ItemFilename| -> CoreResult<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        match rfs::openat(open_folder, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => {
                // Advice only: a file system without it reads when asked.
                let _ = rfs::fadvise(&fd, 0, None, rfs::Advice::WillNeed);
                Ok(Some(File::from(fd)))
            }
            Err(Errno::NOENT | Errno::LOOP) => Ok(None),
            Err(errno) => Err(io_error(&folder.join(name.as_str()))(errno.into())),
        }
    };
    let mut ahead: std::collections::VecDeque<CoreResult<Option<File>>> =
        names.iter().take(READ_AHEAD_FILES).map(open).collect();
    let mut files = Vec::with_capacity(names.len());
    for (at, name) in names.iter().enumerate() {
        if let Some(next) = names.get(at + READ_AHEAD_FILES) {
            ahead.push_back(open(next));
        }
        files.push(match ahead.pop_front().expect("each name opened ahead") {
            Ok(Some(file)) => read_opened(file, folder, name),
            Ok(None) => Ok(None),
            Err(error) => Err(error),
        });
    }
    files
}

/// The item file `name` of `folder`, opened: `None` if it is not a regular file.
fn read_opened(file: File, folder: &Path, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
    let failed = |e| io_error(&folder.join(name.as_str()))(e);
    let meta = file.metadata().map_err(failed)?;
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
    file.take(MAX_ITEM_BYTES + 1).read_to_end(&mut bytes).map_err(failed)?;
    Ok(Some(StoredFile { bytes, stamp: stamp::from_metadata(name.as_str(), &meta) }))
}

fn stamp_of(path: &Path, name: &ItemFilename) -> CoreResult<FileStamp> {
    let meta = fs::symlink_metadata(path).map_err(io_error(path))?;
    Ok(stamp::from_metadata(name.as_str(), &meta))
}

/// Opens a file for reading without following a final symlink. Non-blocking, so that a
/// FIFO under an item's name cannot hold the thread (a regular file's reads are not
/// affected).
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

pub(crate) fn is_missing_or_link(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound || error.raw_os_error() == Some(libc::ELOOP)
}

/// The stamps of the regular files among `listed` (symlinks, folders and names that are
/// not UTF-8 are left out), in the listing's order; a large listing is looked at on
/// several threads (see [`PARALLEL_STAT_FROM`]).
fn stamp_all(listed: &[fs::DirEntry]) -> Vec<FileStamp> {
    let stamp_each = |entries: &[fs::DirEntry]| -> Vec<FileStamp> {
        let stamp_of = |entry: &fs::DirEntry| {
            // DirEntry::metadata does not follow symlinks: a symlink is never an item.
            let meta = entry.metadata().ok().filter(fs::Metadata::is_file)?;
            Some(stamp::from_metadata(entry.file_name().to_str()?, &meta))
        };
        entries.iter().filter_map(stamp_of).collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(MAX_STAT_THREADS);
    if listed.len() < PARALLEL_STAT_FROM || threads < 2 {
        return stamp_each(listed);
    }
    std::thread::scope(|scope| {
        let mut stamps = Vec::with_capacity(listed.len());
        let mut looks = Vec::with_capacity(threads);
        for part in listed.chunks(listed.len().div_ceil(threads)) {
            // A thread that cannot be made leaves its part to this one.
            match std::thread::Builder::new().spawn_scoped(scope, move || stamp_each(part)) {
                Ok(look) => looks.push(look),
                Err(_) => stamps.extend(stamp_each(part)),
            }
        }
        for look in looks {
            stamps.extend(look.join().expect("a folder listing's look panicked"));
        }
        stamps
    })
}
