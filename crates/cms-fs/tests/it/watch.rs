//! The change feed on a real disk, and the sweep of staging leftovers. No sleeps: each test
//! waits on the feed with an overall deadline (a hang guard), then asserts.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cms_fs::atomic::{self, Existing};
use cms_fs::{FolderWatcher, WatchEvent, sweep_staging};

const QUIET: Duration = Duration::from_millis(50);
const MAX_DELAY: Duration = Duration::from_millis(300);
const DEADLINE: Duration = Duration::from_secs(5);

/// Starts a watcher; its batches are forwarded (by a helper thread doing `blocking_recv`)
/// to a std channel, which has `recv_timeout`.
fn watch(folders: &[&Path]) -> (FolderWatcher, Receiver<Vec<WatchEvent>>) {
    let folders = folders.iter().map(|f| f.to_path_buf()).collect();
    let (watcher, mut feed) = FolderWatcher::start(folders, QUIET, MAX_DELAY).unwrap();
    let (forward, batches) = mpsc::channel();
    thread::spawn(move || {
        while let Some(batch) = feed.blocking_recv() {
            if forward.send(batch).is_err() {
                break;
            }
        }
    });
    (watcher, batches)
}

/// Collects batches until `done` holds for them, or the deadline passes.
fn collect_until(
    batches: &Receiver<Vec<WatchEvent>>,
    done: impl Fn(&[Vec<WatchEvent>]) -> bool,
) -> Vec<Vec<WatchEvent>> {
    let deadline = Instant::now() + DEADLINE;
    let mut seen = Vec::new();
    while !done(&seen) {
        match batches.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(batch) => seen.push(batch),
            Err(_) => break,
        }
    }
    seen
}

/// Every name reported as changed in `folder`.
fn names(batches: &[Vec<WatchEvent>], folder: usize) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for event in batches.iter().flatten() {
        if let WatchEvent::Changed { folder: f, names } = event
            && *f == folder
        {
            all.extend(names.iter().cloned());
        }
    }
    all
}

fn rescans(batches: &[Vec<WatchEvent>]) -> usize {
    batches.iter().flatten().filter(|e| matches!(e, WatchEvent::Rescan { .. })).count()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A site with `content/posts/a.md` and `b.md`.
fn site() -> (tempfile::TempDir, PathBuf) {
    let site = tempfile::tempdir().unwrap();
    let posts = site.path().join("content/posts");
    fs::create_dir_all(&posts).unwrap();
    fs::write(posts.join("a.md"), "---\ntitle: A\n---\n").unwrap();
    fs::write(posts.join("b.md"), "---\ntitle: B\n---\n").unwrap();
    (site, posts)
}

/// After a `Rescan` of folder 0, an edit in `folder` must be reported: the watch was
/// re-armed before the Rescan was sent. The structural change may take more than one
/// batch (each with a Rescan), so the edit is made again after each Rescan, under a new
/// name, until the latest one is reported.
fn assert_followed_after_rescan(batches: &Receiver<Vec<WatchEvent>>, folder: &Path) {
    let deadline = Instant::now() + DEADLINE;
    let mut probe: Option<String> = None;
    let mut rescans = 0;
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        let batch = batches.recv_timeout(wait).unwrap_or_else(|e| {
            panic!("{e:?} waiting for a Rescan ({rescans} so far) and then the probe {probe:?}")
        });
        if batch.contains(&WatchEvent::Rescan { folder: 0 }) {
            rescans += 1;
            let name = format!("after-{rescans}.md");
            fs::write(folder.join(&name), "x").unwrap();
            probe = Some(name);
        } else if let Some(name) = &probe
            && names(&[batch], 0).contains(name)
        {
            return;
        }
    }
}

#[test]
fn an_in_place_edit_is_reported_within_a_second() {
    let (_site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    let edited = Instant::now();
    OpenOptions::new().append(true).open(posts.join("a.md")).unwrap().write_all(b"more\n").unwrap();
    let seen = collect_until(&batches, |b| names(b, 0).contains("a.md"));
    assert!(edited.elapsed() < Duration::from_secs(1), "took {:?}", edited.elapsed());
    assert_eq!(names(&seen, 0), set(&["a.md"]));
    assert_eq!(rescans(&seen), 0);
}

#[test]
fn a_save_through_a_hidden_temporary_reports_only_the_target() {
    let (_site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    // An editor: write a swap file, rename it over the item.
    fs::write(posts.join(".a.md.swp"), "---\ntitle: A2\n---\n").unwrap();
    fs::rename(posts.join(".a.md.swp"), posts.join("a.md")).unwrap();
    // The CMS itself: a `.cms-tmp-*` file renamed into place.
    atomic::write(&posts.join("c.md"), b"---\ntitle: C\n---\n", Existing::Keep).unwrap();
    let seen = collect_until(&batches, |b| names(b, 0).is_superset(&set(&["a.md", "c.md"])));
    assert_eq!(names(&seen, 0), set(&["a.md", "c.md"]), "no hidden names, nothing else");
    assert_eq!(rescans(&seen), 0);
}

#[test]
fn a_removal_is_reported() {
    let (_site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    fs::remove_file(posts.join("b.md")).unwrap();
    let seen = collect_until(&batches, |b| names(b, 0).contains("b.md"));
    assert_eq!(names(&seen, 0), set(&["b.md"]));
}

#[test]
fn a_burst_of_a_thousand_files_comes_in_few_batches() {
    let (_site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    let expected: BTreeSet<String> = (0..1000).map(|i| format!("n{i:04}.md")).collect();
    for name in &expected {
        fs::write(posts.join(name), "x").unwrap();
    }
    let seen = collect_until(&batches, |b| names(b, 0).len() >= expected.len());
    assert_eq!(names(&seen, 0), expected);
    assert!(seen.len() < 50, "{} batches", seen.len());
    assert_eq!(rescans(&seen), 0);
}

#[test]
fn a_folder_replaced_wholesale_is_rescanned_and_still_followed() {
    let (site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    let new = site.path().join("content/posts.new");
    fs::create_dir(&new).unwrap();
    fs::write(new.join("c.md"), "x").unwrap();
    fs::remove_dir_all(&posts).unwrap();
    fs::rename(&new, &posts).unwrap();
    assert_followed_after_rescan(&batches, &posts);
}

#[test]
fn a_replaced_parent_is_followed_and_the_old_folder_forgotten() {
    let (site, posts) = site();
    let (_watcher, batches) = watch(&[&posts]);
    fs::rename(site.path().join("content"), site.path().join("content.old")).unwrap();
    fs::create_dir_all(&posts).unwrap();
    assert_followed_after_rescan(&batches, &posts);
    fs::write(site.path().join("content.old/posts/old.md"), "x").unwrap();
    fs::write(posts.join("new.md"), "x").unwrap();
    let seen = collect_until(&batches, |b| names(b, 0).contains("new.md"));
    assert_eq!(names(&seen, 0), set(&["new.md"]), "the moved-away folder is not watched any more");
}

#[test]
fn a_folder_created_after_the_start_is_rescanned_and_followed() {
    let site = tempfile::tempdir().unwrap();
    // Neither the folder nor its parent exist yet.
    let posts = site.path().join("content/posts");
    let (_watcher, batches) = watch(&[&posts]);
    fs::create_dir_all(&posts).unwrap();
    fs::write(posts.join("a.md"), "x").unwrap();
    assert_followed_after_rescan(&batches, &posts);
}

#[test]
fn events_go_to_the_right_folder() {
    let (site, posts) = site();
    let pages = site.path().join("content/pages");
    fs::create_dir(&pages).unwrap();
    let (_watcher, batches) = watch(&[&posts, &pages]);
    fs::write(pages.join("about.md"), "x").unwrap();
    fs::remove_file(posts.join("a.md")).unwrap();
    // A symlink is reported as any entry.
    symlink(posts.join("b.md"), pages.join("link.md")).unwrap();
    let seen = collect_until(&batches, |b| names(b, 0).contains("a.md") && names(b, 1).len() >= 2);
    assert_eq!(names(&seen, 0), set(&["a.md"]));
    assert_eq!(names(&seen, 1), set(&["about.md", "link.md"]));
    assert_eq!(rescans(&seen), 0);
}

#[test]
fn dropping_the_watcher_closes_the_feed() {
    let (_site, posts) = site();
    let (watcher, batches) = watch(&[&posts]);
    drop(watcher);
    assert_eq!(batches.recv_timeout(DEADLINE), Err(RecvTimeoutError::Disconnected));
}

#[test]
fn relative_folders_are_refused() {
    let err = FolderWatcher::start(vec![PathBuf::from("content/posts")], QUIET, MAX_DELAY).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn the_sweep_removes_only_old_staging_files() {
    let (_site, posts) = site();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for name in [".cms-tmp-crashed1", ".cms-tmp-crashed2", ".other-hidden", "a.md"] {
        fs::write(posts.join(name), "x").unwrap();
        File::options().write(true).open(posts.join(name)).unwrap().set_modified(hour_ago).unwrap();
    }
    fs::write(posts.join(".cms-tmp-inflight"), "x").unwrap(); // Another process is writing it.
    fs::create_dir(posts.join(".cms-tmp-folder")).unwrap();
    File::open(posts.join(".cms-tmp-folder")).unwrap().set_modified(hour_ago).unwrap();
    // (Symlinks, whose own time std cannot set, are checked in the unit test of sweep.rs.)

    assert_eq!(sweep_staging(&posts).unwrap(), 2);
    let mut left: Vec<_> = fs::read_dir(&posts).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, [".cms-tmp-folder", ".cms-tmp-inflight", ".other-hidden", "a.md", "b.md"]);
    assert_eq!(sweep_staging(&posts.join("missing")).unwrap(), 0);
}
