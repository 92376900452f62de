use std::fs::{self, Metadata};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cms_core::ports::{ResourceReader, ResourceStat, ResourceStore, UploadSink};
use cms_core::resource::{FileName, ResourceFolder, Subpath};
use cms_core::{CoreError, CoreResult};
use tempfile::NamedTempFile;

use crate::atomic;
use crate::blocking;
use crate::content::{is_missing_or_link, open_no_follow};
use crate::error::io_error;
use crate::site_root::SiteRoot;

/// How many numbered names (`-1`, `-2`, ...) an upload tries before giving up.
const MAX_NUMBERED: u32 = 10_000;

/// Resource folders on disk. No symlink inside a resource folder is ever followed: every
/// folder on a path must be a real folder, and files are opened with `O_NOFOLLOW`.
/// Uploads are staged in `.cms/uploads/` and linked into place without overwriting.
/// Cheap to clone (clones share the resolved site folder).
#[derive(Debug, Clone)]
pub struct FsResourceStore {
    site: SiteRoot,
    staging: PathBuf,
}

impl FsResourceStore {
    pub fn new(site: impl Into<PathBuf>, state_dir: &Path) -> Self {
        Self { site: SiteRoot::new(site), staging: state_dir.join("uploads") }
    }

    /// The resource folder's root, refused if it resolves outside the site.
    fn root(&self, folder: &ResourceFolder) -> CoreResult<PathBuf> {
        self.site.contained(&folder.path)?.ok_or_else(|| {
            CoreError::Forbidden(format!("resource folder {} resolves outside the site folder", folder.path))
        })
    }

    /// The folder a subpath names, when every segment is a real folder (no symlinks).
    /// The root counts as existing even before anything was uploaded.
    fn dir(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Option<PathBuf>> {
        let mut path = self.root(folder)?;
        for segment in dir.segments() {
            path.push(segment);
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => {}
                _ => return Ok(None),
            }
        }
        Ok(Some(path))
    }

    fn existing_dir(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<PathBuf> {
        self.dir(folder, dir)?.ok_or_else(|| {
            CoreError::not_found(format!("no folder {:?} in resource folder {}", dir.as_str(), folder.index))
        })
    }

    /// A file or folder (never a symlink) at `dir/name`.
    fn entry(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(PathBuf, Metadata)>> {
        let Some(dir) = self.dir(folder, dir)? else { return Ok(None) };
        let path = dir.join(name.as_str());
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() || meta.is_dir() => Ok(Some((path, meta))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path)(e)),
        }
    }
}

fn stat(name: FileName, meta: &Metadata) -> ResourceStat {
    ResourceStat {
        name,
        is_dir: meta.is_dir(),
        size: if meta.is_dir() { 0 } else { meta.len() },
        modified: meta.mtime(),
    }
}

impl FsResourceStore {
    fn list_blocking(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>> {
        let path = self.existing_dir(folder, dir)?;
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir.is_root() => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let mut stats = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(&path))?;
            // Hidden names and invalid names are not resources; symlinks are skipped
            // (DirEntry::metadata does not follow them).
            let Some(name) = entry.file_name().to_str().and_then(|n| FileName::parse(n).ok()) else {
                continue;
            };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_file() || meta.is_dir() {
                stats.push(stat(name, &meta));
            }
        }
        Ok(stats)
    }

    fn stat_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>> {
        Ok(self.entry(folder, dir, name)?.map(|(_, meta)| stat(name.clone(), &meta)))
    }

    fn read_head_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>> {
        let Some((file, _)) = self.open_blocking(folder, dir, name)? else {
            return Err(CoreError::not_found(format!("no file {name}")));
        };
        let mut head = Vec::with_capacity(max);
        file.take(max as u64)
            .read_to_end(&mut head)
            .map_err(|e| CoreError::internal("reading a resource", e))?;
        Ok(head)
    }

    fn open_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>> {
        let Some(dir) = self.dir(folder, dir)? else { return Ok(None) };
        let path = dir.join(name.as_str());
        let file = match open_no_follow(&path) {
            Ok(file) => file,
            Err(e) if is_missing_or_link(&e) => return Ok(None),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let meta = file.metadata().map_err(io_error(&path))?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some((Box::new(file), stat(name.clone(), &meta))))
    }

    fn begin_upload_blocking(&self) -> CoreResult<Box<dyn UploadSink>> {
        fs::create_dir_all(&self.staging).map_err(io_error(&self.staging))?;
        let temp = tempfile::Builder::new()
            .prefix(".upload-")
            .tempfile_in(&self.staging)
            .map_err(io_error(&self.staging))?;
        Ok(Box::new(FsUpload { store: self.clone(), temp: Some(temp) }))
    }

    fn rename_blocking(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()> {
        let source = match self.entry(folder, from.0, from.1)? {
            Some((path, meta)) if meta.is_file() => path,
            _ => return Err(CoreError::not_found(format!("no file {} in {:?}", from.1, from.0.as_str()))),
        };
        let target_dir = self.existing_dir(folder, to.0)?;
        let target = target_dir.join(to.1.as_str());
        // link + unlink instead of rename: link fails if the target exists, atomically.
        match fs::hard_link(&source, &target) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(CoreError::Conflict(format!("{} already exists in {:?}", to.1, to.0.as_str())));
            }
            other => other.map_err(io_error(&target))?,
        }
        fs::remove_file(&source).map_err(io_error(&source))?;
        atomic::sync_dir(&target_dir).map_err(io_error(&target_dir))?;
        if let Some(parent) = source.parent() {
            atomic::sync_dir(parent).map_err(io_error(parent))?;
        }
        Ok(())
    }

    fn delete_blocking(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let Some((path, meta)) = self.entry(folder, dir, name)? else {
            return Err(CoreError::not_found(format!("no file or folder {name} in {:?}", dir.as_str())));
        };
        let result = if meta.is_dir() { fs::remove_dir(&path) } else { fs::remove_file(&path) };
        match result {
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
                Err(CoreError::Conflict(format!("folder {name} is not empty; delete its files first")))
            }
            other => other.map_err(io_error(&path)),
        }
    }

    fn create_dir_blocking(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let parent = self.existing_dir(folder, dir)?;
        fs::create_dir_all(&parent).map_err(io_error(&parent))?;
        let path = parent.join(name.as_str());
        match fs::create_dir(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(CoreError::Conflict(format!("{name} already exists in {:?}", dir.as_str())))
            }
            other => other.map_err(io_error(&path)),
        }
    }
}

#[async_trait]
impl ResourceStore for FsResourceStore {
    async fn list(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>> {
        let (store, folder, dir) = (self.clone(), folder.clone(), dir.clone());
        blocking::run(move || store.list_blocking(&folder, &dir)).await
    }

    async fn stat(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.stat_blocking(&folder, &dir, &name)).await
    }

    async fn read_head(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.read_head_blocking(&folder, &dir, &name, max)).await
    }

    /// Opens the file on the blocking pool; the reader it returns is synchronous (the web
    /// layer streams it from its own blocking tasks).
    async fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.open_blocking(&folder, &dir, &name)).await
    }

    async fn begin_upload(&self) -> CoreResult<Box<dyn UploadSink>> {
        let store = self.clone();
        blocking::run(move || store.begin_upload_blocking()).await
    }

    async fn rename(
        &self,
        folder: &ResourceFolder,
        from: (&Subpath, &FileName),
        to: (&Subpath, &FileName),
    ) -> CoreResult<()> {
        let (store, folder) = (self.clone(), folder.clone());
        let (from, to) = ((from.0.clone(), from.1.clone()), (to.0.clone(), to.1.clone()));
        blocking::run(move || store.rename_blocking(&folder, (&from.0, &from.1), (&to.0, &to.1))).await
    }

    async fn delete(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.delete_blocking(&folder, &dir, &name)).await
    }

    async fn create_dir(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.create_dir_blocking(&folder, &dir, &name)).await
    }
}

/// An upload streaming into a temporary file under `.cms/uploads/`.
struct FsUpload {
    store: FsResourceStore,
    /// Lent to the blocking task of each write and given back after it; `None` if a write
    /// never came back (its future was dropped, or it panicked): the upload is then lost.
    temp: Option<NamedTempFile>,
}

impl FsUpload {
    fn take_temp(&mut self) -> CoreResult<NamedTempFile> {
        self.temp
            .take()
            .ok_or_else(|| CoreError::internal("writing an upload", "an earlier write was interrupted"))
    }
}

#[async_trait]
impl UploadSink for FsUpload {
    async fn write(&mut self, chunk: &[u8]) -> CoreResult<()> {
        let (mut temp, chunk) = (self.take_temp()?, chunk.to_vec());
        let (temp, written) = blocking::run(move || {
            let written = temp.write_all(&chunk).map_err(|e| CoreError::internal("writing an upload", e));
            Ok((temp, written))
        })
        .await?;
        self.temp = Some(temp);
        written
    }

    async fn commit(
        mut self: Box<Self>,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<ResourceStat> {
        let (store, temp) = (self.store.clone(), self.take_temp()?);
        let (folder, dir, name) = (folder.clone(), dir.clone(), name.clone());
        blocking::run(move || commit_blocking(&store, temp, &folder, &dir, &name)).await
    }
}

/// Moves a staged upload into `dir` under `name` or the first free numbered name.
fn commit_blocking(
    store: &FsResourceStore,
    mut temp: NamedTempFile,
    folder: &ResourceFolder,
    dir: &Subpath,
    name: &FileName,
) -> CoreResult<ResourceStat> {
    let target_dir = store.existing_dir(folder, dir)?;
    fs::create_dir_all(&target_dir).map_err(io_error(&target_dir))?;
    temp.as_file().sync_all().map_err(|e| CoreError::internal("syncing an upload", e))?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(|e| CoreError::internal("upload permissions", e))?;
    for n in 0..=MAX_NUMBERED {
        let candidate = if n == 0 { name.clone() } else { name.numbered(n) };
        let path = target_dir.join(candidate.as_str());
        match temp.persist_noclobber(&path) {
            Ok(file) => {
                atomic::sync_dir(&target_dir).map_err(io_error(&target_dir))?;
                let meta = file.metadata().map_err(io_error(&path))?;
                return Ok(stat(candidate, &meta));
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => temp = e.file,
            // Staging and target on different file systems: copy into the target folder.
            Err(e) if e.error.raw_os_error() == Some(libc::EXDEV) => temp = copy_to(e.file, &target_dir)?,
            Err(e) => return Err(io_error(&path)(e.error)),
        }
    }
    Err(CoreError::Conflict(format!("no free name for {name} after {MAX_NUMBERED} tries")))
}

/// Copies a staged upload into a new temporary file in `dir` (same file system as the target).
fn copy_to(mut staged: NamedTempFile, dir: &Path) -> CoreResult<NamedTempFile> {
    let mut local = tempfile::Builder::new().prefix(".upload-").tempfile_in(dir).map_err(io_error(dir))?;
    staged.as_file_mut().rewind().map_err(|e| CoreError::internal("rewinding an upload", e))?;
    io::copy(staged.as_file_mut(), local.as_file_mut()).map_err(io_error(dir))?;
    local.as_file().sync_all().map_err(io_error(dir))?;
    local.as_file().set_permissions(fs::Permissions::from_mode(0o644)).map_err(io_error(dir))?;
    Ok(local)
}
