//! One server per site folder. `cms serve` holds an exclusive lock on `.cms/serve.lock` for
//! as long as it runs (the kernel's `flock`, let go when the process ends, however it
//! ends), and a second server on the same folder stops at its start, naming the first.
//! Two servers on one folder would each keep their own index, item locks and version
//! numbers, and could lose each other's writes; the nodes of a bucket site share the
//! bucket, each with a folder of its own for its caches and webhook outbox. The file says
//! which process holds it and where it listens, for that message; only the kernel's lock
//! decides.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::FsError;

pub const SERVE_LOCK_FILE: &str = "serve.lock";

/// How long a start waits for the lock of a server that has ended. A child the server had
/// just forked holds the lock's descriptor until it runs its program (where the descriptor
/// is closed): a restart right after a crash or `kill -9` finds the lock held for that
/// moment, longer on a busy machine.
const HANDOVER: Duration = Duration::from_secs(5);
const HANDOVER_POLL: Duration = Duration::from_millis(20);

/// The lock of a site folder, held until dropped.
#[derive(Debug)]
pub struct ServeLock {
    file: File,
    path: PathBuf,
}

impl ServeLock {
    /// Takes the lock of the site whose state folder is `state_dir` (made if missing):
    /// [`FsError::Served`] when another server holds it.
    pub fn take(state_dir: &Path) -> Result<Self, FsError> {
        fs::create_dir_all(state_dir).map_err(|e| FsError::io(state_dir, e))?;
        let path = state_dir.join(SERVE_LOCK_FILE);
        let mut file = open(&path)?;
        // A lock file shared by a hard link with another folder's (`cp -al` of a site) is
        // that folder's lock: this folder gets one of its own.
        if file.metadata().map_err(|e| FsError::io(&path, e))?.nlink() > 1 {
            fs::remove_file(&path).map_err(|e| FsError::io(&path, e))?;
            file = open(&path)?;
        }
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) if started.elapsed() >= HANDOVER_POLL => {
                    tracing::info!(
                        waited_ms = started.elapsed().as_millis() as u64,
                        "the site folder's lock was let go by a process of the server that had ended"
                    );
                    break;
                }
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let mut said = String::new();
                    let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut said));
                    let holder = Holder::read(&said);
                    if holder.is_running() || started.elapsed() >= HANDOVER {
                        let site = state_dir.parent().unwrap_or(state_dir).to_owned();
                        return Err(FsError::Served { site, holder: holder.to_string() });
                    }
                    std::thread::sleep(HANDOVER_POLL);
                }
                Err(TryLockError::Error(e)) => return Err(FsError::io(&path, e)),
            }
        }
        let lock = Self { file, path };
        lock.say(&Holder { pid: Some(std::process::id()), listening: None })?;
        Ok(lock)
    }

    /// The server that holds the lock of the site whose state folder is `state_dir`, as
    /// the lock file names it (`process 4711, listening on http://...`); `None` when none
    /// does. Made nothing: for `cms check`.
    pub fn holder(state_dir: &Path) -> Result<Option<String>, FsError> {
        let path = state_dir.join(SERVE_LOCK_FILE);
        let mut file = match OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FsError::io(&path, e)),
        };
        match file.try_lock_shared() {
            Ok(()) => Ok(None),
            Err(TryLockError::WouldBlock) => {
                let mut said = String::new();
                file.read_to_string(&mut said).map_err(|e| FsError::io(&path, e))?;
                Ok(Some(Holder::read(&said).to_string()))
            }
            Err(TryLockError::Error(e)) => Err(FsError::io(&path, e)),
        }
    }

    /// Adds where the server listens (once bound), for the message of a second server.
    pub fn record_listening(&self, url: &str) -> Result<(), FsError> {
        self.say(&Holder { pid: Some(std::process::id()), listening: Some(url.to_owned()) })
    }

    fn say(&self, holder: &Holder) -> Result<(), FsError> {
        let mut file = &self.file;
        let text = holder.lines();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(text.as_bytes()))
            .map_err(|e| FsError::io(&self.path, e))
    }
}

/// Opened for reading and writing, never through a symlink.
fn open(path: &Path) -> Result<File, FsError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| FsError::io(path, e))
}

/// What the lock file says of the server holding it.
#[derive(Debug, Default, PartialEq)]
struct Holder {
    pid: Option<u32>,
    listening: Option<String>,
}

impl Holder {
    fn lines(&self) -> String {
        let mut text = String::new();
        if let Some(pid) = self.pid {
            text.push_str(&format!("pid: {pid}\n"));
        }
        if let Some(url) = &self.listening {
            text.push_str(&format!("listening: {url}\n"));
        }
        text
    }

    /// Whether the process the file names still runs (a zombie has let go of its files).
    fn is_running(&self) -> bool {
        let Some(pid) = self.pid else { return false };
        fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()))
            .is_some_and(|state| state != 'Z' && state != 'X')
    }

    fn read(text: &str) -> Self {
        let mut holder = Self::default();
        for line in text.lines() {
            match line.split_once(": ") {
                Some(("pid", pid)) => holder.pid = pid.trim().parse().ok(),
                Some(("listening", url)) => holder.listening = Some(url.trim().to_owned()),
                _ => {}
            }
        }
        holder
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.pid, &self.listening) {
            (Some(pid), Some(url)) => write!(f, "process {pid}, listening on {url}"),
            (Some(pid), None) => write!(f, "process {pid}, starting"),
            (None, _) => write!(f, "a process that has not said which"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_a_folder_is_refused_naming_the_first_and_taken_once_it_is_let_go() {
        let site = tempfile::tempdir().unwrap();
        let state = site.path().join(".cms");
        let first = ServeLock::take(&state).unwrap();
        first.record_listening("http://127.0.0.1:8080").unwrap();

        let refused = ServeLock::take(&state).unwrap_err();
        let pid = std::process::id();
        match &refused {
            FsError::Served { site: folder, holder } => {
                assert_eq!(folder, site.path());
                assert_eq!(holder, &format!("process {pid}, listening on http://127.0.0.1:8080"));
            }
            other => panic!("{other:?}"),
        }
        let message = refused.to_string();
        assert!(message.contains(": another server already serves this site folder (process "), "{message}");

        assert_eq!(
            ServeLock::holder(&state).unwrap(),
            Some(format!("process {pid}, listening on http://127.0.0.1:8080"))
        );
        drop(first);
        assert_eq!(ServeLock::holder(&state).unwrap(), None);
        let second = ServeLock::take(&state).unwrap();
        assert_eq!(fs::read_to_string(state.join(SERVE_LOCK_FILE)).unwrap(), format!("pid: {pid}\n"));
        drop(second);
    }

    #[test]
    fn a_copy_by_hard_links_gets_its_own_lock_and_leaves_the_originals_alone() {
        let (original, copy) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let held = ServeLock::take(original.path()).unwrap();
        held.record_listening("http://127.0.0.1:1").unwrap();
        let said = fs::read_to_string(original.path().join(SERVE_LOCK_FILE)).unwrap();
        fs::hard_link(original.path().join(SERVE_LOCK_FILE), copy.path().join(SERVE_LOCK_FILE)).unwrap();

        let _copy_lock = ServeLock::take(copy.path()).unwrap();
        assert_eq!(fs::read_to_string(original.path().join(SERVE_LOCK_FILE)).unwrap(), said);
        assert!(matches!(ServeLock::take(original.path()), Err(FsError::Served { .. })));
    }

    #[test]
    fn a_lock_file_that_is_a_symlink_is_not_followed() {
        let site = tempfile::tempdir().unwrap();
        let elsewhere = site.path().join("elsewhere.txt");
        fs::write(&elsewhere, "not the server's\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, site.path().join(SERVE_LOCK_FILE)).unwrap();
        let refused = ServeLock::take(site.path()).unwrap_err();
        assert!(matches!(&refused, FsError::Io { .. }), "{refused:?}");
        assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "not the server's\n");
    }

    #[test]
    fn a_lock_held_for_a_process_that_has_ended_is_waited_for() {
        let site = tempfile::tempdir().unwrap();
        let held = ServeLock::take(site.path()).unwrap();
        // As if a process that has ended (here: one that never ran) held the lock, and a
        // child it forked still had the descriptor: the start waits until it is let go.
        let ended = Holder { pid: Some(u32::MAX), listening: None };
        held.say(&ended).unwrap();
        assert!(!ended.is_running());
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let started = Instant::now();
        let _taken = ServeLock::take(site.path()).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        letting_go.join().unwrap();
        assert!(Holder { pid: Some(std::process::id()), listening: None }.is_running());
    }

    #[test]
    fn what_the_file_says_is_read_back_and_shown() {
        let holder = Holder { pid: Some(7), listening: Some("http://[::1]:80".into()) };
        assert_eq!(Holder::read(&holder.lines()), holder);
        assert_eq!(Holder::read("pid: 7\n").to_string(), "process 7, starting");
        assert_eq!(Holder::read("").to_string(), "a process that has not said which");
    }
}
