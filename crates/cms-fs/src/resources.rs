use std::fs;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use cms_core::ports::{ResourceReader, ResourceStat, ResourceStore, UploadSink};
use cms_core::resource::{FileName, ResourceFolder, Subpath};
use cms_core::{CoreError, CoreResult};
use rustix::fs::FileType;
use tempfile::NamedTempFile;

use crate::beneath::{Entry, Folder};
use crate::blocking;
use crate::error::io_error;
use crate::reader::FsReader;

/// How many numbered names (`-1`, `-2`, ...) an upload tries before giving up.
const MAX_NUMBERED: u32 = 10_000;

/// Resource folders on disk. Every folder is walked by descriptor, one segment at a time
/// (`openat` with `O_NOFOLLOW`, see `beneath.rs`), and everything in it is reached relative
/// to the open folder: no symlink inside a resource folder is ever followed, not even one
/// that replaces a folder after it was reached. The resource folder itself resolves
/// beneath the site folder (a symlink may point within the site, never out). Uploads are
/// staged in `.cms/uploads/` and linked into place without overwriting.
#[derive(Debug, Clone)]
pub struct FsResourceStore {
    site: PathBuf,
    staging: PathBuf,
}

impl FsResourceStore {
    pub fn new(site: impl Into<PathBuf>, state_dir: &Path) -> Self {
        Self { site: site.into(), staging: state_dir.join("uploads") }
    }

    /// The resource folder, open; `None` while it does not exist. `Forbidden` if it
    /// resolves outside the site.
    fn root(&self, folder: &ResourceFolder) -> CoreResult<Option<Folder>> {
        Folder::open_beneath(&self.site, &folder.path).map_err(|e| self.root_error(folder, e))
    }

    /// The resource folder, made if it does not exist yet (the first upload or subfolder).
    fn root_or_create(&self, folder: &ResourceFolder) -> CoreResult<Folder> {
        Folder::create_beneath(&self.site, &folder.path).map_err(|e| self.root_error(folder, e))
    }

    fn root_error(&self, folder: &ResourceFolder, error: io::Error) -> CoreError {
        if error.kind() == io::ErrorKind::PermissionDenied {
            CoreError::Forbidden(format!("resource folder {} resolves outside the site folder", folder.path))
        } else {
            io_error(&self.site.join(&folder.path))(error)
        }
    }

    /// The folder a subpath names, walked from the resource folder by descriptor: every
    /// segment must be a real folder (no symlinks). `None` when it does not exist.
    fn dir(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Option<Folder>> {
        let Some(mut open) = self.root(folder)? else { return Ok(None) };
        for segment in dir.segments() {
            match open.folder(segment) {
                Ok(Some(next)) => open = next,
                Ok(None) => return Ok(None),
                Err(e) => return Err(io_error(&open.path().join(segment))(e)),
            }
        }
        #[cfg(test)]
        tests::after_walk();
        Ok(Some(open))
    }

    fn existing_dir(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Folder> {
        self.dir(folder, dir)?.ok_or_else(|| no_folder(folder, dir))
    }

    /// Where new things go: an existing subfolder, or the resource folder itself (made if
    /// it does not exist yet).
    fn target_dir(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Folder> {
        if dir.is_root() {
            let root = self.root_or_create(folder)?;
            #[cfg(test)]
            tests::after_walk();
            return Ok(root);
        }
        self.existing_dir(folder, dir)
    }

    /// A file or folder (never a symlink) at `dir/name`, with the folder it is in.
    fn entry(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Folder, Entry)>> {
        let Some(dir) = self.dir(folder, dir)? else { return Ok(None) };
        match dir.entry(name.as_str()) {
            Ok(Some(entry)) if is_file_or_folder(&entry) => Ok(Some((dir, entry))),
            Ok(_) => Ok(None),
            Err(e) => Err(io_error(&dir.path().join(name.as_str()))(e)),
        }
    }
}

fn no_folder(folder: &ResourceFolder, dir: &Subpath) -> CoreError {
    CoreError::not_found(format!("no folder {:?} in resource folder {}", dir.as_str(), folder.index))
}

fn is_file_or_folder(entry: &Entry) -> bool {
    matches!(entry.kind, FileType::RegularFile | FileType::Directory)
}

fn stat(name: FileName, entry: &Entry) -> ResourceStat {
    let is_dir = entry.kind == FileType::Directory;
    ResourceStat { name, is_dir, size: if is_dir { 0 } else { entry.size }, modified: entry.modified }
}

impl FsResourceStore {
    fn list_blocking(&self, folder: &ResourceFolder, dir: &Subpath) -> CoreResult<Vec<ResourceStat>> {
        let open = match self.dir(folder, dir)? {
            Some(open) => open,
            // The resource folder before anything was uploaded.
            None if dir.is_root() => return Ok(Vec::new()),
            None => return Err(no_folder(folder, dir)),
        };
        let entries = open.entries().map_err(io_error(open.path()))?;
        // Hidden names and invalid names are not resources; symlinks are skipped.
        Ok(entries
            .into_iter()
            .filter(|(_, entry)| is_file_or_folder(entry))
            .filter_map(|(name, entry)| FileName::parse(&name).ok().map(|name| stat(name, &entry)))
            .collect())
    }

    fn stat_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<ResourceStat>> {
        Ok(self.entry(folder, dir, name)?.map(|(_, entry)| stat(name.clone(), &entry)))
    }

    fn read_head_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: usize,
    ) -> CoreResult<Vec<u8>> {
        let Some((file, _, _)) = self.open_blocking(folder, dir, name)? else {
            return Err(CoreError::not_found(format!("no file {name}")));
        };
        let mut head = Vec::with_capacity(max);
        file.take(max as u64)
            .read_to_end(&mut head)
            .map_err(|e| CoreError::internal("reading a resource", e))?;
        Ok(head)
    }

    fn read_all_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: u64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let Some((file, _, stat)) = self.open_blocking(folder, dir, name)? else { return Ok(None) };
        if stat.size > max {
            return Err(CoreError::TooLarge(format!("{name} is over {max} bytes")));
        }
        let mut bytes = Vec::with_capacity(stat.size as usize);
        // One more than allowed: a file that grew since the stat is refused too.
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CoreError::internal("reading a resource", e))?;
        if bytes.len() as u64 > max {
            return Err(CoreError::TooLarge(format!("{name} is over {max} bytes")));
        }
        Ok(Some(bytes))
    }

    /// A regular file, open, with its path (for messages); `None` if there is none.
    fn open_blocking(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(fs::File, PathBuf, ResourceStat)>> {
        let Some(dir) = self.dir(folder, dir)? else { return Ok(None) };
        let path = dir.path().join(name.as_str());
        let opened = dir.open_file(name.as_str()).map_err(io_error(&path))?;
        Ok(opened.map(|(file, entry)| (file, path, stat(name.clone(), &entry))))
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
        let source_dir = match self.entry(folder, from.0, from.1)? {
            Some((dir, entry)) if entry.kind == FileType::RegularFile => dir,
            _ => return Err(CoreError::not_found(format!("no file {} in {:?}", from.1, from.0.as_str()))),
        };
        let target_dir = self.existing_dir(folder, to.0)?;
        // link + unlink instead of rename: link fails if the target exists, atomically.
        match target_dir.link_from(&source_dir, from.1.as_str(), to.1.as_str()) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(CoreError::Conflict(format!("{} already exists in {:?}", to.1, to.0.as_str())));
            }
            other => other.map_err(io_error(&target_dir.path().join(to.1.as_str())))?,
        }
        source_dir
            .remove_file(from.1.as_str())
            .map_err(io_error(&source_dir.path().join(from.1.as_str())))?;
        target_dir.sync().map_err(io_error(target_dir.path()))?;
        source_dir.sync().map_err(io_error(source_dir.path()))
    }

    fn delete_blocking(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let Some((open, entry)) = self.entry(folder, dir, name)? else {
            return Err(CoreError::not_found(format!("no file or folder {name} in {:?}", dir.as_str())));
        };
        let result = if entry.kind == FileType::Directory {
            open.remove_folder(name.as_str())
        } else {
            open.remove_file(name.as_str())
        };
        match result {
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
                Err(CoreError::Conflict(format!("folder {name} is not empty; delete its files first")))
            }
            other => other.map_err(io_error(&open.path().join(name.as_str()))),
        }
    }

    fn create_dir_blocking(&self, folder: &ResourceFolder, dir: &Subpath, name: &FileName) -> CoreResult<()> {
        let parent = self.target_dir(folder, dir)?;
        match parent.create_folder(name.as_str()) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(CoreError::Conflict(format!("{name} already exists in {:?}", dir.as_str())))
            }
            other => other.map_err(io_error(&parent.path().join(name.as_str()))),
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

    async fn read_all(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
        max: u64,
    ) -> CoreResult<Option<Vec<u8>>> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        blocking::run(move || store.read_all_blocking(&folder, &dir, &name, max)).await
    }

    /// Opens the file on the blocking pool; its reads are positional chunks, each a short
    /// task there (see `reader.rs`).
    async fn open(
        &self,
        folder: &ResourceFolder,
        dir: &Subpath,
        name: &FileName,
    ) -> CoreResult<Option<(Box<dyn ResourceReader>, ResourceStat)>> {
        let (store, folder, dir, name) = (self.clone(), folder.clone(), dir.clone(), name.clone());
        let opened = blocking::run(move || store.open_blocking(&folder, &dir, &name)).await?;
        Ok(opened.map(|(file, path, stat)| (FsReader::boxed(file, path), stat)))
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

/// Moves a staged upload into `dir` under `name` or the first free numbered name: the
/// staged file is fsynced, then hard-linked into the open folder (never replacing
/// anything), then the folder is fsynced.
fn commit_blocking(
    store: &FsResourceStore,
    temp: NamedTempFile,
    folder: &ResourceFolder,
    dir: &Subpath,
    name: &FileName,
) -> CoreResult<ResourceStat> {
    let target = store.target_dir(folder, dir)?;
    temp.as_file().sync_all().map_err(|e| CoreError::internal("syncing an upload", e))?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(|e| CoreError::internal("upload permissions", e))?;
    let mut source = Staged::Path(temp.path().to_owned());
    let result = link_free_name(&target, &mut source, name);
    if let Staged::Local(local) = &source {
        let _ = target.remove_file(local);
    }
    let stored = result?;
    target.sync().map_err(io_error(target.path()))?;
    let entry = target.entry(stored.as_str()).map_err(io_error(target.path()))?;
    let entry = entry.ok_or_else(|| CoreError::internal("storing an upload", "the stored file vanished"))?;
    Ok(stat(stored, &entry))
}

/// Where a staged upload is linked from.
enum Staged {
    /// The file in `.cms/uploads/`.
    Path(PathBuf),
    /// A copy in the target folder (staging and target on different file systems).
    Local(String),
}

fn link_free_name(target: &Folder, source: &mut Staged, name: &FileName) -> CoreResult<FileName> {
    let mut n = 0;
    while n <= MAX_NUMBERED {
        let candidate = if n == 0 { name.clone() } else { name.numbered(n) };
        let linked = match source {
            Staged::Path(path) => target.link_path(path, candidate.as_str()),
            Staged::Local(local) => target.link_from(target, local, candidate.as_str()),
        };
        match linked {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
            // Copy once, then try the same name again from the copy.
            Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
                let Staged::Path(path) = source else { return Err(io_error(target.path())(e)) };
                *source = Staged::Local(copy_into(path, target)?);
            }
            Err(e) => return Err(io_error(&target.path().join(candidate.as_str()))(e)),
        }
    }
    Err(CoreError::Conflict(format!("no free name for {name} after {MAX_NUMBERED} tries")))
}

/// Copies a staged upload into a new hidden file in `target` (the same file system as its
/// final name), fsynced; returns its name.
fn copy_into(staged: &Path, target: &Folder) -> CoreResult<String> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let fail = io_error(target.path());
    let mut from = fs::File::open(staged).map_err(io_error(staged))?;
    loop {
        let local = format!(".upload-{}-{}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed));
        let mut copy = match target.create_file(&local, 0o644) {
            Ok(copy) => copy,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(e)),
        };
        let copied =
            from.rewind().and_then(|()| io::copy(&mut from, &mut copy)).and_then(|_| copy.sync_all());
        if let Err(e) = copied {
            let _ = target.remove_file(&local);
            return Err(fail(e));
        }
        return Ok(local);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::os::unix::fs::symlink;

    use super::*;

    thread_local! {
        /// Run once, right after a later walk of a subpath (the first `.0` walks are let
        /// by) and before anything in it is touched: the moment a swapped folder would be
        /// followed.
        static AFTER_WALK: RefCell<Option<(usize, Hook)>> = RefCell::new(None);
    }

    type Hook = Box<dyn FnOnce()>;

    pub(super) fn after_walk() {
        let due = AFTER_WALK.with(|h| {
            let mut hook = h.borrow_mut();
            match hook.as_mut() {
                Some((0, _)) => hook.take().map(|(_, run)| run),
                Some((skip, _)) => {
                    *skip -= 1;
                    None
                }
                None => None,
            }
        });
        if let Some(run) = due {
            run();
        }
    }

    fn name(n: &str) -> FileName {
        FileName::parse(n).unwrap()
    }

    /// `media/uploads/2026/a.txt` inside, a `secret.txt` and an `a.txt` outside, and a way
    /// to swap `2026` for a symlink to the outside folder right after the next walk.
    struct Race {
        site: tempfile::TempDir,
        outside: tempfile::TempDir,
        store: FsResourceStore,
        folder: ResourceFolder,
        year: Subpath,
    }

    impl Race {
        fn new() -> Self {
            let site = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            fs::write(outside.path().join("a.txt"), "secret").unwrap();
            let store = FsResourceStore::new(site.path(), &site.path().join(".cms"));
            let folder = ResourceFolder {
                index: 0,
                label: "U".into(),
                path: "media/uploads".into(),
                url: "/m".into(),
            };
            let race = Self { site, outside, store, folder, year: Subpath::parse("2026").unwrap() };
            race.restore();
            race
        }

        fn year_path(&self) -> PathBuf {
            self.site.path().join("media/uploads/2026")
        }

        /// A real `2026` folder with `a.txt` in it.
        fn restore(&self) {
            let year = self.year_path();
            if fs::symlink_metadata(&year).is_ok_and(|m| m.file_type().is_symlink()) {
                fs::remove_file(&year).unwrap();
            }
            fs::create_dir_all(&year).unwrap();
            fs::write(year.join("a.txt"), "inside").unwrap();
        }

        /// After the walk that follows `skip` others, `2026` is gone and a symlink out of
        /// the site stands in its place.
        fn swap_after_walk(&self, skip: usize) {
            self.restore();
            let (year, outside) = (self.year_path(), self.outside.path().to_owned());
            let swap = move || {
                fs::remove_dir_all(&year).unwrap();
                symlink(&outside, &year).unwrap();
            };
            AFTER_WALK.with(|h| *h.borrow_mut() = Some((skip, Box::new(swap))));
        }

        fn outside_is_untouched(&self) {
            let names: Vec<_> =
                fs::read_dir(self.outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, ["a.txt"], "nothing was written outside");
            assert_eq!(fs::read_to_string(self.outside.path().join("a.txt")).unwrap(), "secret");
        }
    }

    /// The folder on the path is checked, then replaced by a symlink out of the resource
    /// folder before the file in it is opened: the open must not follow it.
    #[test]
    fn a_folder_swapped_for_a_symlink_after_the_walk_leads_nowhere() {
        let race = Race::new();
        let (store, folder, year) = (&race.store, &race.folder, &race.year);

        race.swap_after_walk(0);
        let opened = store.open_blocking(folder, year, &name("a.txt")).unwrap();
        assert!(opened.is_none(), "the open is refused");

        race.swap_after_walk(0);
        assert!(store.read_head_blocking(folder, year, &name("a.txt"), 64).is_err());

        race.swap_after_walk(0);
        assert!(store.stat_blocking(folder, year, &name("a.txt")).unwrap().is_none());

        race.swap_after_walk(0);
        let listed = store.list_blocking(folder, year);
        assert!(listed.is_err() || listed.unwrap().is_empty(), "the outside folder is not listed");

        race.swap_after_walk(0);
        assert!(store.delete_blocking(folder, year, &name("a.txt")).is_err());

        race.swap_after_walk(0);
        assert!(store.create_dir_blocking(folder, year, &name("new")).is_err());

        race.swap_after_walk(0);
        let moved = store.rename_blocking(folder, (year, &name("a.txt")), (&Subpath::root(), &name("b.txt")));
        assert!(moved.is_err());

        race.restore();
        fs::write(race.site.path().join("media/uploads/c.txt"), "c").unwrap();
        race.swap_after_walk(1); // the walk to the source comes first, then the target's
        let moved = store.rename_blocking(folder, (&Subpath::root(), &name("c.txt")), (year, &name("c.txt")));
        assert!(moved.is_err());

        race.swap_after_walk(0);
        fs::create_dir_all(&store.staging).unwrap();
        let mut temp = tempfile::Builder::new().tempfile_in(&store.staging).unwrap();
        temp.write_all(b"planted").unwrap();
        assert!(commit_blocking(store, temp, folder, year, &name("planted.txt")).is_err());

        race.outside_is_untouched();
    }

    /// Staging and the resource folder on different file systems: the upload is copied
    /// into the open folder under a hidden name, linked into place, and the copy removed.
    #[test]
    fn an_upload_staged_on_another_file_system_is_copied_in() {
        use std::os::unix::fs::MetadataExt;
        let (Ok(state), site) = (tempfile::tempdir_in("/dev/shm"), tempfile::tempdir().unwrap()) else {
            return; // no tmpfs here
        };
        let device = |p: &Path| fs::metadata(p).unwrap().dev();
        if device(state.path()) == device(site.path()) {
            return;
        }
        let store = FsResourceStore::new(site.path(), state.path());
        let folder =
            ResourceFolder { index: 0, label: "U".into(), path: "media/uploads".into(), url: "/m".into() };
        let uploads = site.path().join("media/uploads");
        fs::create_dir_all(&uploads).unwrap();
        fs::write(uploads.join("a.txt"), "taken").unwrap();
        fs::create_dir_all(&store.staging).unwrap();
        let mut temp = tempfile::Builder::new().tempfile_in(&store.staging).unwrap();
        temp.write_all(b"new").unwrap();

        let stored = commit_blocking(&store, temp, &folder, &Subpath::root(), &name("a.txt")).unwrap();
        assert_eq!((stored.name.as_str(), stored.size), ("a-1.txt", 3));
        assert_eq!(fs::read_to_string(uploads.join("a-1.txt")).unwrap(), "new");
        let mut names: Vec<_> = fs::read_dir(&uploads).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["a-1.txt", "a.txt"], "no copy is left behind");
        assert_eq!(fs::read_dir(&store.staging).unwrap().count(), 0, "the staged file is gone");
    }
}
