//! The sweep of staging files a crash left: again once the grace period has passed after
//! a start, and every few minutes, driven here by an injected clock (no waiting); never a
//! staging file a live write holds, however old it looks.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cms_fs::StagingSweep;
use cms_fs::atomic;
use cms_fs::sweep::{AFTER_START, MIN_AGE, SWEEP_EVERY, sweep_staging_at};

fn folder() -> (tempfile::TempDir, PathBuf) {
    let site = tempfile::tempdir().unwrap();
    let posts = site.path().join("content/posts");
    fs::create_dir_all(&posts).unwrap();
    fs::write(posts.join("a.md"), "---\ntitle: A\n---\n").unwrap();
    (site, posts)
}

/// A staging file as a crash leaves it, last modified at `modified`.
fn leftover(folder: &Path, name: &str, modified: SystemTime) -> PathBuf {
    let path = folder.join(format!(".cms-tmp-{name}"));
    fs::write(&path, "half a write").unwrap();
    File::options().write(true).open(&path).unwrap().set_modified(modified).unwrap();
    path
}

/// Review finding: a server restarted at once after a crash found its crash's staging
/// files younger than the grace period and left them for its next start. Now the pass
/// after the grace period removes them, within the server's first minute, and later
/// passes what other crashes leave.
#[test]
fn leftovers_young_at_start_go_once_the_grace_has_passed_and_later_ones_on_the_next_pass() {
    let (_site, posts) = folder();
    let start = SystemTime::now();
    let crashed = leftover(&posts, "crashed-just-now", start - Duration::from_secs(2));
    let sweep = StagingSweep::new(vec![posts.clone()]);

    assert_eq!(sweep.sweep_at(start), 0, "at the start it is within the grace period");
    assert!(crashed.exists());

    // The clock the passes see, moved on by each wait; a second crash happens while the
    // server runs, just before the third pass.
    let clock = std::cell::Cell::new(start);
    let mut waits = Vec::new();
    let mut later = None;
    sweep.run(
        |delay| {
            waits.push(delay);
            clock.set(clock.get() + delay);
            match waits.len() {
                1 => true,
                2 => {
                    assert!(!crashed.exists(), "gone on the pass after the grace period");
                    later = Some(leftover(&posts, "crashed-later", clock.get() - MIN_AGE));
                    true
                }
                _ => false,
            }
        },
        || clock.get(),
    );

    assert_eq!(waits, [AFTER_START, SWEEP_EVERY, SWEEP_EVERY]);
    assert!(AFTER_START >= MIN_AGE && AFTER_START < Duration::from_secs(60), "within the first minute");
    assert!(!later.unwrap().exists(), "the next periodic pass removed the later leftover");
    assert!(posts.join("a.md").exists(), "items are never touched");
}

/// The grace period is not the only guard: a write holds a lock on its staging file, and
/// the sweep leaves a held file alone however old it looks (an fsync stalled for minutes).
#[test]
fn a_staging_file_a_live_write_holds_is_never_swept() {
    let (_site, posts) = folder();
    let now = SystemTime::now();
    let hour_ago = now - Duration::from_secs(3600);
    let held = leftover(&posts, "held", hour_ago);
    // Another process's write would hold its own open file; a second open file of this
    // process locks the same way.
    let writer = File::open(&held).unwrap();
    writer.lock_shared().unwrap();
    assert_eq!(sweep_staging_at(&posts, now).unwrap(), 0);
    assert!(held.exists(), "a held staging file stays");
    drop(writer); // The write crashed: its lock went with it.
    assert_eq!(sweep_staging_at(&posts, now).unwrap(), 1);
    assert!(!held.exists());
}

/// The real writer: while a write is staged (between its fsync and its rename), a sweep
/// that takes the staged file for an old one (its time moved back an hour) still leaves
/// it, and the write lands.
#[test]
fn a_write_in_progress_keeps_its_staging_file_through_a_sweep() {
    let (_site, posts) = folder();
    let target = posts.join("a.md");
    let landed = atomic::replace_checked(&target, b"---\ntitle: New\n---\n", || {
        let staged: Vec<PathBuf> = fs::read_dir(&posts)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".cms-tmp-"))
            .collect();
        assert_eq!(staged.len(), 1, "{staged:?}");
        let old = SystemTime::now() - Duration::from_secs(3600);
        File::options().write(true).open(&staged[0]).unwrap().set_modified(old).unwrap();
        assert_eq!(sweep_staging_at(&posts, SystemTime::now()).unwrap(), 0, "the live write's file is held");
        Ok(true)
    })
    .unwrap();
    assert!(landed);
    assert_eq!(fs::read_to_string(&target).unwrap(), "---\ntitle: New\n---\n");
    assert_eq!(fs::read_dir(&posts).unwrap().count(), 1, "nothing left behind");
}
