//! Group commit of folder fsyncs. Many writers renaming into one folder at once (64 API
//! writers on distinct items of one collection) each need that folder synced after their
//! rename; one fsync covers every rename made before it started, so concurrent writers
//! share syncs instead of queueing one each.
//!
//! The rule that keeps durability: a writer returns only after a sync of its folder that
//! STARTED after the writer asked (its rename had completed by then). A sync running when
//! it asks may have started before its rename, so it waits for the next one, which it
//! starts itself unless another waiter already has.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// Syncs `dir` (an fsync of the folder) for a rename already made in it, sharing the fsync
/// with the other writers of this process waiting on the same folder.
pub(crate) fn sync_dir_shared(dir: &Path) -> io::Result<()> {
    static GROUPS: OnceLock<Groups> = OnceLock::new();
    GROUPS.get_or_init(Groups::default).sync(dir, || super::atomic::sync_dir(dir))
}

/// One [`Group`] per folder being synced, dropped when nobody uses it.
#[derive(Default)]
struct Groups {
    by_dir: Mutex<HashMap<PathBuf, Arc<Group>>>,
}

impl Groups {
    fn sync(&self, dir: &Path, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let group = Arc::clone(lock(&self.by_dir).entry(dir.to_owned()).or_default());
        let result = group.sync(sync);
        let mut by_dir = lock(&self.by_dir);
        // Only the map and this writer hold it: nobody else syncs or waits on this folder.
        // New users clone under the map lock, which is held here.
        if Arc::strong_count(&group) == 2 {
            by_dir.remove(dir);
        }
        result
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.by_dir).len()
    }
}

/// The syncs of one folder, one at a time, numbered from 1.
#[derive(Default)]
struct Group {
    state: Mutex<State>,
    finished_one: Condvar,
}

#[derive(Default)]
struct State {
    started: u64,
    finished: u64,
    running: bool,
    /// The latest sync that failed, and its error.
    failed: Option<(u64, io::ErrorKind, String)>,
    #[cfg(test)]
    waiting: usize,
}

impl Group {
    /// Returns once a sync that started after this call has finished: `sync` run here, or
    /// another writer's. Its error is this writer's error.
    fn sync(&self, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mut state = lock(&self.state);
        // The first sync to start from now on covers this writer.
        let covering = state.started + 1;
        loop {
            if state.finished >= covering {
                return state.outcome(covering);
            }
            if !state.running {
                // No sync has started since this writer asked (one would still run or have
                // finished), so this is the covering one.
                state.running = true;
                state.started += 1;
                let mut finish = Finish {
                    group: self,
                    number: state.started,
                    failure: Some((io::ErrorKind::Other, "the folder sync panicked".to_owned())),
                };
                drop(state);
                let result = sync();
                finish.failure = result.as_ref().err().map(|error| (error.kind(), error.to_string()));
                return result;
            }
            #[cfg(test)]
            {
                state.waiting += 1;
            }
            state = self.finished_one.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
            #[cfg(test)]
            {
                state.waiting -= 1;
            }
        }
    }
}

/// Ends sync `number` when dropped, also when the sync panicked (then it failed), so that
/// the writers waiting for it are never left waiting.
struct Finish<'g> {
    group: &'g Group,
    number: u64,
    /// Starts as a failure: only a sync that returned replaces it.
    failure: Option<(io::ErrorKind, String)>,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.group.state);
        state.running = false;
        state.finished = self.number;
        if let Some((kind, message)) = self.failure.take() {
            state.failed = Some((self.number, kind, message));
        }
        self.group.finished_one.notify_all();
    }
}

impl State {
    /// The answer for a writer covered by sync `covering`, which has finished. A failure of
    /// a later sync fails it too: when fsync reports an error, what it covered is unknown.
    fn outcome(&self, covering: u64) -> io::Result<()> {
        match &self.failed {
            Some((number, kind, message)) if *number >= covering => {
                Err(io::Error::new(*kind, format!("syncing the folder failed: {message}")))
            }
            _ => Ok(()),
        }
    }
}

// The state is a few counters, changed in one step each: still good after a panic elsewhere.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;

    use super::*;

    /// Waits (yielding, no sleep) until `count` writers wait on the group.
    fn until_waiting(group: &Group, count: usize) {
        while lock(&group.state).waiting != count {
            thread::yield_now();
        }
    }

    /// A fake sync that says when it starts and finishes only when released.
    fn held_sync(
        log: &Arc<Mutex<Vec<String>>>,
        name: &'static str,
    ) -> (impl FnOnce() -> io::Result<()> + Send + 'static, mpsc::Receiver<()>, mpsc::Sender<io::Result<()>>)
    {
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<io::Result<()>>();
        let log = Arc::clone(log);
        let sync = move || {
            log.lock().unwrap().push(format!("{name} starts"));
            started_tx.send(()).unwrap();
            let result = release_rx.recv().unwrap();
            log.lock().unwrap().push(format!("{name} ends"));
            result
        };
        (sync, started_rx, release_tx)
    }

    #[test]
    fn a_writer_waits_for_a_sync_that_started_after_it_asked() {
        let group = Arc::new(Group::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (first_sync, first_started, release_first) = held_sync(&log, "sync A");
        let first = thread::spawn({
            let group = Arc::clone(&group);
            move || group.sync(first_sync)
        });
        first_started.recv().unwrap();

        // B renamed while A's sync runs: A's sync may have started before that rename.
        let (second_sync, second_started, release_second) = held_sync(&log, "sync B");
        let second = thread::spawn({
            let (group, log) = (Arc::clone(&group), Arc::clone(&log));
            move || {
                let result = group.sync(second_sync);
                log.lock().unwrap().push("B returns".to_owned());
                result
            }
        });
        until_waiting(&group, 1);
        release_first.send(Ok(())).unwrap();
        first.join().unwrap().unwrap();
        // B is not done when A's sync is: it starts its own.
        second_started.recv().unwrap();
        assert_eq!(*log.lock().unwrap(), ["sync A starts", "sync A ends", "sync B starts"]);
        release_second.send(Ok(())).unwrap();
        second.join().unwrap().unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["sync A starts", "sync A ends", "sync B starts", "sync B ends", "B returns"]
        );
    }

    #[test]
    fn writers_waiting_together_share_one_sync() {
        let group = Arc::new(Group::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (first_sync, first_started, release_first) = held_sync(&log, "first");
        let first = thread::spawn({
            let group = Arc::clone(&group);
            move || group.sync(first_sync)
        });
        first_started.recv().unwrap();

        let syncs = Arc::new(Mutex::new(0));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (group, syncs) = (Arc::clone(&group), Arc::clone(&syncs));
                thread::spawn(move || {
                    group.sync(|| {
                        *syncs.lock().unwrap() += 1;
                        Ok(())
                    })
                })
            })
            .collect();
        until_waiting(&group, 3);
        release_first.send(Ok(())).unwrap();
        first.join().unwrap().unwrap();
        for waiter in waiters {
            waiter.join().unwrap().unwrap();
        }
        assert_eq!(*syncs.lock().unwrap(), 1, "three writers, one more sync");
        let state = lock(&group.state);
        assert_eq!((state.started, state.finished, state.running), (2, 2, false));
    }

    #[test]
    fn a_failed_sync_fails_the_writers_it_covered_and_the_next_writer_syncs_again() {
        let group = Arc::new(Group::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (first_sync, first_started, release_first) = held_sync(&log, "first");
        let first = thread::spawn({
            let group = Arc::clone(&group);
            move || group.sync(first_sync)
        });
        first_started.recv().unwrap();
        let (failing_sync, failing_started, release_failing) = held_sync(&log, "failing");
        // Whichever waiter starts the covering sync runs the failing one.
        let failing = Arc::new(Mutex::new(Some(failing_sync)));
        let covered: Vec<_> = (0..2)
            .map(|_| {
                let (group, failing) = (Arc::clone(&group), Arc::clone(&failing));
                thread::spawn(move || {
                    group.sync(|| failing.lock().unwrap().take().expect("one covering sync")())
                })
            })
            .collect();
        until_waiting(&group, 2);
        release_first.send(Ok(())).unwrap();
        first.join().unwrap().unwrap();
        failing_started.recv().unwrap();
        release_failing.send(Err(io::Error::other("disk gone"))).unwrap();
        for writer in covered {
            let error = writer.join().unwrap().unwrap_err();
            assert!(error.to_string().contains("disk gone"), "{error}");
        }
        // A writer after the failure is answered by its own sync.
        group.sync(|| Ok(())).unwrap();
    }

    #[test]
    fn a_sync_that_panics_fails_its_waiters_instead_of_leaving_them_waiting() {
        let group = Arc::new(Group::default());
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let panicking = thread::spawn({
            let group = Arc::clone(&group);
            move || {
                group.sync(move || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    panic!("fake sync panics")
                })
            }
        });
        started_rx.recv().unwrap();
        // This waiter starts the covering sync itself once the panicking one ends.
        let waiter = thread::spawn({
            let group = Arc::clone(&group);
            move || group.sync(|| Ok(()))
        });
        until_waiting(&group, 1);
        release_tx.send(()).unwrap();
        assert!(panicking.join().is_err());
        waiter.join().unwrap().unwrap();
        let state = lock(&group.state);
        assert_eq!((state.started, state.finished, state.running), (2, 2, false));
        assert!(state.outcome(1).is_err(), "the panicked sync counts as failed");
    }

    #[test]
    fn a_lone_writer_syncs_at_once_and_leaves_no_group_behind() {
        let groups = Groups::default();
        let mut ran = 0;
        groups
            .sync(Path::new("/some/folder"), || {
                ran += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(ran, 1);
        assert_eq!(groups.len(), 0);
        let error = groups.sync(Path::new("/some/folder"), || Err(io::Error::other("no"))).unwrap_err();
        assert_eq!(error.to_string(), "no");
        assert_eq!(groups.len(), 0);
    }
}
