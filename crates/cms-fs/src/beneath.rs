//! Folders held open by descriptor. Everything inside one is reached relative to the open
//! folder (`openat`, `statat`, `linkat`...), one name at a time, never through a symlink:
//! a folder that is replaced by a symlink after it was reached cannot lead elsewhere, as
//! a check of a path followed by an open of the same path could.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// Opening a folder: read-only, and a symlink in the last place is refused.
const FOLDER: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// An open folder, with the path it was opened as (for messages only).
#[derive(Debug)]
pub(crate) struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

/// What a name in a folder is, without following a symlink.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub kind: FileType,
    pub size: u64,
    pub modified: i64,
}

impl From<Stat> for Entry {
    // `st_mtime` is `i64` here but a C `long` on some targets.
    #[allow(clippy::useless_conversion)]
    fn from(stat: Stat) -> Self {
        Self {
            kind: FileType::from_raw_mode(stat.st_mode),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified: i64::from(stat.st_mtime),
        }
    }
}

/// A name that is not there, or is not what was asked for (a symlink, a file where a
/// folder was wanted): `None` rather than an error.
fn absent<T>(result: rustix::io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(Errno::NOENT | Errno::LOOP | Errno::NOTDIR) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

impl Folder {
    /// The folder `relative` (a configured folder, such as `media/uploads`) in `site`,
    /// resolved beneath the site folder: a symlink on the way may point elsewhere inside
    /// the site, never out (`openat2` with `RESOLVE_BENEATH`, which the kernel checks as it
    /// walks). `Err` with `io::ErrorKind::PermissionDenied` when it would leave the site;
    /// `None` when it does not exist.
    pub(crate) fn open_beneath(site: &Path, relative: &str) -> io::Result<Option<Self>> {
        let site = Self::open_site(site)?;
        let relative = clean(relative);
        if relative.as_os_str().is_empty() {
            return Ok(Some(site));
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let folder_flags = FOLDER.difference(OFlags::NOFOLLOW);
        match rfs::openat2(&site.fd, &relative, folder_flags, Mode::empty(), resolve) {
            Ok(fd) => Ok(Some(Self { fd, path: site.path.join(&relative) })),
            Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
            Err(Errno::XDEV) => Err(outside(&relative)),
            // Kernels before 5.6 (or a filter that refuses the call): every folder on the
            // way must then be a real folder.
            Err(Errno::NOSYS | Errno::PERM) => {
                let mut folder = site;
                for segment in relative.iter() {
                    match rfs::openat(&folder.fd, segment, FOLDER, Mode::empty()) {
                        Ok(fd) => folder = Self { fd, path: folder.path.join(segment) },
                        Err(Errno::NOENT) => return Ok(None),
                        Err(Errno::LOOP | Errno::NOTDIR) => return Err(outside(&relative)),
                        Err(errno) => return Err(errno.into()),
                    }
                }
                Ok(Some(folder))
            }
            Err(errno) => Err(errno.into()),
        }
    }

    /// Like [`Folder::open_beneath`], but makes the folders that are missing, each inside
    /// its open parent.
    pub(crate) fn create_beneath(site: &Path, relative: &str) -> io::Result<Self> {
        if let Some(folder) = Self::open_beneath(site, relative)? {
            return Ok(folder);
        }
        let relative = clean(relative);
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the site folder is missing"));
        };
        let parent = Self::create_beneath(site, &parent.to_string_lossy())?;
        match rfs::mkdirat(&parent.fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(errno) => return Err(errno.into()),
        }
        Self::open_beneath(site, &relative.to_string_lossy())?.ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{} vanished", relative.display()))
        })
    }

    /// The site folder itself, as configured (it may be a symlink: the operator chose it).
    fn open_site(site: &Path) -> io::Result<Self> {
        let fd = rfs::open(site, FOLDER.difference(OFlags::NOFOLLOW), Mode::empty())?;
        Ok(Self { fd, path: site.to_owned() })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The folder `name` in this one; `None` if there is none, or it is a symlink or a file.
    pub(crate) fn folder(&self, name: &str) -> io::Result<Option<Self>> {
        let opened = absent(rfs::openat(&self.fd, name, FOLDER, Mode::empty()))?;
        Ok(opened.map(|fd| Self { fd, path: self.path.join(name) }))
    }

    /// The regular file `name`, opened for reading; `None` if there is none, or it is a
    /// symlink or anything but a regular file. Opened non-blocking, so that a FIFO planted
    /// here cannot hold the thread (a regular file's reads are not affected).
    pub(crate) fn open_file(&self, name: &str) -> io::Result<Option<(File, Entry)>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let Some(fd) = absent(rfs::openat(&self.fd, name, flags, Mode::empty()))? else { return Ok(None) };
        let entry = Entry::from(rfs::fstat(&fd)?);
        Ok((entry.kind == FileType::RegularFile).then(|| (File::from(fd), entry)))
    }

    /// What `name` is, without following a symlink.
    pub(crate) fn entry(&self, name: &str) -> io::Result<Option<Entry>> {
        Ok(absent(rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW))?.map(Entry::from))
    }

    /// The names in this folder (not `.` and `..`), each with what it is (symlinks not
    /// followed). A name removed while listing is left out.
    pub(crate) fn entries(&self) -> io::Result<Vec<(String, Entry)>> {
        let mut entries = Vec::new();
        for item in Dir::read_from(&self.fd)? {
            let item = item?;
            let name = OsStr::from_bytes(item.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let Some(name) = name.to_str() else { continue };
            if let Some(entry) = self.entry(name)? {
                entries.push((name.to_owned(), entry));
            }
        }
        Ok(entries)
    }

    /// Links `from_name` in `from` as `name` here; fails with `AlreadyExists` rather than
    /// replace anything. A symlink is linked as itself, never followed.
    pub(crate) fn link_from(&self, from: &Folder, from_name: &str, name: &str) -> io::Result<()> {
        Ok(rfs::linkat(&from.fd, from_name, &self.fd, name, AtFlags::empty())?)
    }

    /// Links the file at `source` (a trusted path, such as a staged upload) as `name` here,
    /// without replacing anything.
    pub(crate) fn link_path(&self, source: &Path, name: &str) -> io::Result<()> {
        Ok(rfs::linkat(rfs::CWD, source, &self.fd, name, AtFlags::empty())?)
    }

    /// Creates the file `name` here (not if anything has that name), for writing.
    pub(crate) fn create_file(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))?))
    }

    pub(crate) fn create_folder(&self, name: &str) -> io::Result<()> {
        Ok(rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755))?)
    }

    pub(crate) fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    pub(crate) fn remove_folder(&self, name: &str) -> io::Result<()> {
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// Makes the links made or removed here durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(rfs::fsync(&self.fd)?)
    }
}

/// `relative` without `.` segments and empty ones.
fn clean(relative: &str) -> PathBuf {
    relative.split('/').filter(|s| !s.is_empty() && *s != ".").collect()
}

fn outside(relative: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} resolves outside the site folder (or through a symlink)", relative.display()),
    )
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn configured_folders_resolve_beneath_the_site_only() {
        let site = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(site.path().join("media/real")).unwrap();
        symlink("real", site.path().join("media/inside")).unwrap();
        symlink(outside.path(), site.path().join("media/out")).unwrap();
        let open = |rel: &str| Folder::open_beneath(site.path(), rel);
        assert!(open("media/real").unwrap().is_some());
        assert!(open("./media//real/").unwrap().is_some());
        assert!(open("media/inside").unwrap().is_some(), "a symlink within the site is fine");
        assert!(open("media/missing").unwrap().is_none());
        assert_eq!(open("media/out").unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(open("../x").unwrap_err().kind(), io::ErrorKind::PermissionDenied);

        let made = Folder::create_beneath(site.path(), "media/new/deeper").unwrap();
        assert!(made.path().ends_with("media/new/deeper") && site.path().join("media/new/deeper").is_dir());
        assert!(Folder::create_beneath(site.path(), "media/out/x").is_err());
        assert!(!outside.path().join("x").exists(), "nothing made outside");
    }
}
