//! Atomic file writes: readers and crashes see the old content or the new, never a part.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// What to do when the target exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Replace,
    /// Fail with `io::ErrorKind::AlreadyExists`.
    Keep,
}

/// Mode of new content files: readable by the web server or site generator (less the
/// process umask). Temporary files are created 0600, so without this every write would
/// make content private.
const PUBLIC_MODE: u32 = 0o644;

/// Names of the temporary files writes stage in the target's folder (hidden, so that
/// scans and the change feed skip them); a crash can leave them behind. A write holds a
/// shared `flock` on its staging file while it lives, so that the sweep knows it is live.
pub(crate) const STAGING_PREFIX: &str = ".cms-tmp-";

/// Writes a content file: `bytes` go to `path` through a temporary file in the same
/// folder (write, fsync, rename or hard-link for [`Existing::Keep`], fsync of the folder).
/// A replaced file keeps its mode; a new one gets 0644 less the umask.
pub fn write(path: &Path, bytes: &[u8], existing: Existing) -> io::Result<()> {
    let mode = match fs::metadata(path) {
        Ok(meta) => Mode::Exactly(meta.permissions()),
        Err(_) => Mode::Create(PUBLIC_MODE),
    };
    write_with_mode(path, bytes, existing, mode)
}

/// Like [`write`] replacing the target, but `check` runs once the new content is staged
/// and synced, just before the rename: if it says no, the target is left as it was (the
/// staged file is removed) and the answer is `false`. A conditional replace compares the
/// target's stamp there, so the window for an outside write is the rename alone.
pub fn replace_checked(
    path: &Path,
    bytes: &[u8],
    check: impl FnOnce() -> io::Result<bool>,
) -> io::Result<bool> {
    let mode = match fs::metadata(path) {
        Ok(meta) => Mode::Exactly(meta.permissions()),
        Err(_) => Mode::Create(PUBLIC_MODE),
    };
    let (dir, temp) = stage(path, [bytes], mode)?;
    if !check()? {
        return Ok(false);
    }
    persist(temp, path, Existing::Replace)?;
    sync_dir(dir)?;
    Ok(true)
}

/// Writes a private state file (keys, users, license, history) atomically, mode 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, Existing::Replace, Mode::Exactly(fs::Permissions::from_mode(0o600)))
}

/// Like [`write_private`], with the content given in parts, written one after the other as
/// they come: a large file is never copied only to put a header before it, nor held whole
/// when its parts are made as it is written.
pub fn write_private_parts<P: AsRef<[u8]>>(
    path: &Path,
    parts: impl IntoIterator<Item = P>,
) -> io::Result<()> {
    write_parts_with_mode(path, parts, Existing::Replace, Mode::Exactly(fs::Permissions::from_mode(0o600)))
}

/// Like [`write_private`], but fails if `path` exists.
pub fn create_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, Existing::Keep, Mode::Exactly(fs::Permissions::from_mode(0o600)))
}

enum Mode {
    /// Set exactly (fchmod, not subject to the umask).
    Exactly(fs::Permissions),
    /// Ask for this mode at creation; the umask applies.
    Create(u32),
}

fn write_with_mode(path: &Path, bytes: &[u8], existing: Existing, mode: Mode) -> io::Result<()> {
    write_parts_with_mode(path, [bytes], existing, mode)
}

fn write_parts_with_mode<P: AsRef<[u8]>>(
    path: &Path,
    parts: impl IntoIterator<Item = P>,
    existing: Existing,
    mode: Mode,
) -> io::Result<()> {
    let (dir, temp) = stage(path, parts, mode)?;
    persist(temp, path, existing)?;
    sync_dir(dir)
}

/// The new content in a synced temporary file beside `path` (and that folder).
fn stage<P: AsRef<[u8]>>(
    path: &Path,
    parts: impl IntoIterator<Item = P>,
    mode: Mode,
) -> io::Result<(&Path, NamedTempFile)> {
    let dir = path.parent().ok_or_else(|| io::Error::other("a file path needs a parent folder"))?;
    create_dirs_durably(dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(STAGING_PREFIX);
    if let Mode::Create(bits) = mode {
        builder.permissions(fs::Permissions::from_mode(bits));
    }
    let mut temp = builder.tempfile_in(dir)?;
    // Held until the file is renamed and closed: the staging sweep leaves a locked file
    // alone, however long an fsync stalls (see `sweep.rs`). Best effort: on a file system
    // without `flock` the write goes on, guarded by the sweep's grace period alone.
    let _ = temp.as_file().try_lock_shared();
    if let Mode::Exactly(permissions) = mode {
        temp.as_file().set_permissions(permissions)?;
    }
    for part in parts {
        temp.write_all(part.as_ref())?;
    }
    temp.as_file().sync_all()?;
    Ok((dir, temp))
}

/// Creates `dir` and any missing folders above it, each made durable by an fsync of the
/// folder that holds it (a file fsynced into a folder whose own entry was lost in a crash
/// would be lost with it: the first history version of an item makes its folder). Answers
/// the folders synced, top down; none when `dir` exists, the usual case.
fn create_dirs_durably(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|folder| !folder.is_dir()).collect();
    let mut synced = Vec::new();
    for folder in missing.into_iter().rev() {
        match fs::create_dir(folder) {
            Ok(()) => {
                let parent = folder.parent().unwrap_or(Path::new("."));
                let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
                sync_dir(parent)?;
                synced.push(parent.to_owned());
            }
            // Made by another writer meanwhile: theirs to sync.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && folder.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(synced)
}

fn persist(temp: NamedTempFile, path: &Path, existing: Existing) -> io::Result<()> {
    let result = match existing {
        Existing::Replace => temp.persist(path),
        Existing::Keep => temp.persist_noclobber(path),
    };
    let file = result.map_err(|e| e.error)?;
    // Synced in `stage`; its state once renamed (a rename changes the change time).
    if let Ok(meta) = file.metadata() {
        durable::remember(&meta);
    }
    Ok(())
}

/// Gives the file at `existing` the second name `new` (a hard link: the same file, no
/// copy) when it holds exactly `bytes`, made durable: missing folders made durably, the
/// file and `new`'s folder fsynced. Answers the file's metadata after the link (a link
/// changes the file's change time), or `None`, with nothing left behind, when the file is
/// missing, holds other bytes, is no regular file (a symlink is linked as itself, then
/// refused) or cannot be linked (another file system, one without hard links, a file not
/// ours to link). `AlreadyExists` when `new` exists.
pub fn link_if_holds(existing: &Path, new: &Path, bytes: &[u8]) -> io::Result<Option<fs::Metadata>> {
    let dir = new.parent().ok_or_else(|| io::Error::other("a file path needs a parent folder"))?;
    create_dirs_durably(dir)?;
    // Before the link, which changes the file's change time.
    let durable_before = fs::symlink_metadata(existing).ok().filter(durable::holds).map(|m| durable::id(&m));
    match fs::hard_link(existing, new) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => return Ok(None),
    }
    // Checked through the new name, after the link: these are the bytes it keeps.
    match holding(new, bytes) {
        Ok(Some((file, meta))) => {
            match durable::sync_unless(&file, &meta, durable_before).and_then(|()| sync_dir(dir)) {
                Ok(()) => Ok(Some(meta)),
                Err(e) => {
                    let _ = fs::remove_file(new);
                    Err(e)
                }
            }
        }
        Ok(None) => fs::remove_file(new).map(|()| None),
        Err(e) => {
            // The error that stopped the check is the one to report.
            let _ = fs::remove_file(new);
            Err(e)
        }
    }
}

/// The regular file at `path` (never through a symlink), open, with its metadata, when it
/// holds exactly `bytes`. The metadata is taken before the bytes are read and must be the
/// same after: a change in between (an in-place write) is a file that may not hold them.
fn holding(path: &Path, bytes: &[u8]) -> io::Result<Option<(File, fs::Metadata)>> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut file = match fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(file) => file,
        Err(_) => return Ok(None),
    };
    let before = file.metadata()?;
    if !before.is_file() || before.len() != bytes.len() as u64 {
        return Ok(None);
    }
    let mut held = Vec::with_capacity(bytes.len());
    (&mut file).take(bytes.len() as u64 + 1).read_to_end(&mut held)?;
    let after = file.metadata()?;
    let times = |m: &fs::Metadata| (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec(), m.size());
    Ok((held == bytes && times(&before) == times(&after)).then_some((file, before)))
}

/// The files this process wrote and synced ([`persist`]), by device and inode, with their
/// state then, so that a snapshot linked to one of them unchanged ([`link_if_holds`])
/// needs no fsync of the file: its bytes are on the disk already, and the new name is
/// made durable by the fsync of its folder (the link count goes with the name in the same
/// metadata update on a journalling file system; without a journal, the check after a
/// crash counts the names). On a disk without a journal each fsync is a cache flush and a
/// few synchronous writes: one fsync of four per write, measured in docs/performance.md.
/// A file written by anyone else, or changed since, is synced as before. ("Changed" is
/// told by the times and size: an in-place change within the same tick of the kernel's
/// file clock that keeps the size would pass for unchanged.)
mod durable {
    use std::collections::HashMap;
    use std::fs::{File, Metadata};
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::sync::{LazyLock, Mutex};

    /// Files remembered at most; past it the memo starts over (a forgotten file is synced).
    const MAX_REMEMBERED: usize = 65_536;

    /// Modification and change times, size: what an in-place change of the file moves.
    type State = (i64, i64, i64, i64, u64);

    static SYNCED: LazyLock<Mutex<HashMap<(u64, u64), State>>> = LazyLock::new(Mutex::default);

    fn state(meta: &Metadata) -> State {
        (meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec(), meta.size())
    }

    fn synced() -> std::sync::MutexGuard<'static, HashMap<(u64, u64), State>> {
        SYNCED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `meta` is a file this process has just synced.
    pub(super) fn remember(meta: &Metadata) {
        let mut synced = synced();
        if synced.len() >= MAX_REMEMBERED {
            synced.clear();
        }
        synced.insert(id(meta), state(meta));
    }

    /// Whether `meta` is a file this process synced, unchanged since.
    pub(super) fn holds(meta: &Metadata) -> bool {
        meta.is_file() && synced().get(&id(meta)) == Some(&state(meta))
    }

    /// A file's device and inode.
    pub(super) fn id(meta: &Metadata) -> (u64, u64) {
        (meta.dev(), meta.ino())
    }

    /// Fsyncs the linked `file` (`linked`: its metadata, read through the new name) unless
    /// it is the file found durable just before the link (`durable_before`, by [`id`]).
    pub(super) fn sync_unless(
        file: &File,
        linked: &Metadata,
        durable_before: Option<(u64, u64)>,
    ) -> io::Result<()> {
        if durable_before == Some(id(linked)) {
            #[cfg(test)]
            SKIPPED.with(|skipped| skipped.set(skipped.get() + 1));
            return Ok(());
        }
        file.sync_all()
    }

    #[cfg(test)]
    thread_local! {
        /// File syncs left out on this thread (for the tests).
        pub(super) static SKIPPED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
}

/// Makes a rename durable: fsync of the folder that holds the entry. Each writer makes its
/// own: concurrent fsyncs of one folder already overlap in the kernel and share the disk's
/// cache flushes, and a user-space group commit (one sync at a time per folder, commit
/// 4a71aa2) measured about 5% fewer writes/s at 64 writers on ext4.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replaces_and_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/a.md");
        write(&path, b"one", Existing::Keep).unwrap();
        let err = write(&path, b"two", Existing::Keep).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write(&path, b"three", Existing::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files are left behind");
    }

    #[test]
    fn missing_folders_are_made_and_each_one_synced_into_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("versions/posts/hello");
        write(&deep.join("1.md"), b"v1", Existing::Keep).unwrap();
        assert_eq!(fs::read(deep.join("1.md")).unwrap(), b"v1");
        let deeper = deep.join("a/b");
        let synced = create_dirs_durably(&deeper).unwrap();
        assert_eq!(synced, [deep.clone(), deep.join("a")], "the parents of the folders made, top down");
        assert!(deeper.is_dir());
        assert!(create_dirs_durably(&deeper).unwrap().is_empty(), "nothing made, nothing synced");
        fs::write(dir.path().join("file"), b"x").unwrap();
        assert!(create_dirs_durably(&dir.path().join("file/sub")).is_err(), "a file in the way");
    }

    #[test]
    fn concurrent_replaces_in_one_folder_all_land() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|scope| {
            for writer in 0..16 {
                let path = dir.path().join(format!("{writer}.md"));
                scope.spawn(move || {
                    for round in 0..4 {
                        write(&path, format!("{writer} {round}").as_bytes(), Existing::Replace).unwrap();
                    }
                });
            }
        });
        for writer in 0..16 {
            assert_eq!(
                fs::read_to_string(dir.path().join(format!("{writer}.md"))).unwrap(),
                format!("{writer} 3")
            );
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 16, "no temporary files are left behind");
    }

    #[test]
    fn a_file_holding_the_bytes_is_linked_and_nothing_else_is() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let item = dir.path().join("item.md");
        fs::write(&item, b"current").unwrap();
        let kept = dir.path().join("history/item.md/1.md");

        let meta = link_if_holds(&item, &kept, b"current").unwrap().expect("linked");
        assert_eq!(meta.ino(), fs::metadata(&item).unwrap().ino(), "the same file, under a second name");
        assert_eq!(meta.nlink(), 2);
        assert_eq!(meta.ctime_nsec(), fs::metadata(&item).unwrap().ctime_nsec(), "the stamp after the link");
        let again = link_if_holds(&item, &kept, b"current").unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists, "an existing snapshot is never replaced");

        let other = dir.path().join("history/item.md/2.md");
        assert!(link_if_holds(&item, &other, b"what the caller read before").unwrap().is_none());
        assert!(link_if_holds(&item, &other, b"curren").unwrap().is_none(), "a prefix is not the bytes");
        assert!(link_if_holds(&dir.path().join("gone.md"), &other, b"current").unwrap().is_none());
        std::os::unix::fs::symlink(&item, dir.path().join("link.md")).unwrap();
        assert!(link_if_holds(&dir.path().join("link.md"), &other, b"current").unwrap().is_none());
        assert!(!other.exists() && fs::symlink_metadata(&other).is_err(), "nothing is left behind");
        assert_eq!(fs::read(&kept).unwrap(), b"current");
    }

    #[test]
    fn a_snapshot_of_a_file_written_here_unchanged_skips_only_the_files_fsync() {
        let skipped = || durable::SKIPPED.with(std::cell::Cell::get);
        let dir = tempfile::tempdir().unwrap();
        let item = dir.path().join("item.md");
        write(&item, b"ours", Existing::Keep).unwrap();
        let before = skipped();
        let first = dir.path().join("history/item.md/1.md");
        assert!(link_if_holds(&item, &first, b"ours").unwrap().is_some());
        assert_eq!(skipped(), before + 1, "written and synced here, unchanged: its bytes are on the disk");
        assert_eq!(fs::read(&first).unwrap(), b"ours");

        // Changed in place by someone else (same inode, same length): synced again.
        fs::OpenOptions::new().write(true).open(&item).unwrap().write_all(b"THEIRS").unwrap();
        let second = dir.path().join("history/item.md/2.md");
        assert!(link_if_holds(&item, &second, b"THEIRS").unwrap().is_some());
        assert_eq!(skipped(), before + 1, "a file changed since it was synced here is synced");

        // Replaced by a file written elsewhere.
        let outside = dir.path().join("outside.md");
        fs::write(&outside, b"new").unwrap();
        fs::rename(&outside, &item).unwrap();
        assert!(link_if_holds(&item, &dir.path().join("history/item.md/3.md"), b"new").unwrap().is_some());
        assert_eq!(skipped(), before + 1, "a file this process never synced is synced");

        // Written here again, through a replace: remembered again.
        write(&item, b"ours again", Existing::Replace).unwrap();
        assert!(
            link_if_holds(&item, &dir.path().join("history/item.md/4.md"), b"ours again").unwrap().is_some()
        );
        assert_eq!(skipped(), before + 2);
    }

    #[test]
    fn content_files_are_readable_by_others_and_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.md");
        write(&new, b"x", Existing::Keep).unwrap();
        assert_eq!(mode(&new) & 0o044, 0o044, "a new content file is world-readable (less the umask)");

        let shared = dir.path().join("shared.md");
        fs::write(&shared, b"old").unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o664)).unwrap();
        write(&shared, b"new", Existing::Replace).unwrap();
        assert_eq!(mode(&shared), 0o664, "a replaced file keeps its mode");

        let secret = dir.path().join("keys.yaml");
        write_private(&secret, b"k").unwrap();
        assert_eq!(mode(&secret), 0o600, "state files are private");
    }
}
