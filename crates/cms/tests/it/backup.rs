//! `cms backup`, `cms backup verify` and `cms restore` (issue 49): an archive taken while
//! 16 writers go on holds every write acknowledged before it began, restores into an empty
//! folder that `cms check` finds clean and that answers the same lists; a damaged archive
//! is refused and writes nothing; a bucket site goes into an archive and back into a
//! bucket (SeaweedFS, when installed).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::{BIN, Server, demo_site, stdout, user_with_key};

/// Runs `cms ARGS` with no site in the environment.
fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("CMS_SITE").output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(output: Output) -> String {
    assert!(output.status.success(), "{}\n{}", stdout(&output), stderr(&output));
    stdout(&output)
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every collection's first page of items, the tags and the status of `server`, as
/// a reader sees them.
fn lists(server: &Server) -> Vec<(String, Value)> {
    let (status, collections) = server.get("/cms/collections", None);
    assert_eq!(status, 200);
    let mut lists = Vec::new();
    for collection in collections["data"].as_array().unwrap() {
        let slug = collection["slug"].as_str().unwrap();
        let path = format!("/cms/collections/{slug}/items?per_page=100");
        let (status, mut body) = server.get(&path, None);
        assert_eq!(status, 200, "{path}");
        // When it was answered.
        body.as_object_mut().unwrap().remove("timestamp");
        lists.push((path, body));
    }
    let (_, mut tags) = server.get("/cms/tags", None);
    tags.as_object_mut().unwrap().remove("timestamp");
    lists.push(("/cms/tags".into(), tags));
    lists
}

#[test]
fn a_backup_under_writers_keeps_every_acknowledged_write_and_restores_whole() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    // A signed-in browser's session, which a restore does not bring back.
    fs::create_dir_all(site.path().join(".cms/sessions")).unwrap();
    fs::write(site.path().join(".cms/sessions/abc"), "session").unwrap();
    let server = Server::start(site.path());
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("site.tar.gz");

    let acknowledged = Mutex::new(Vec::<String>::new());
    let stop = AtomicBool::new(false);
    let (before, backup) = std::thread::scope(|scope| {
        for writer in 0..16 {
            let (acknowledged, stop, server, key) = (&acknowledged, &stop, &server, &key);
            scope.spawn(move || {
                let url = format!("{}/cms/collections/posts/items", server.base);
                for n in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let slug = format!("w{writer}-{n}");
                    let body = json!({"slug": slug, "date_prefix": false, "fm": {"title": slug}, "body": "Written."});
                    let response =
                        server.agent.post(&url).header("Authorization", format!("Bearer {key}")).send_json(body);
                    if response.is_ok_and(|r| r.status() == 200) {
                        acknowledged.lock().unwrap().push(slug);
                    }
                }
            });
        }
        crate::poll(|| acknowledged.lock().unwrap().len(), |count| *count >= 64);
        let before = acknowledged.lock().unwrap().clone();
        let backup = run(&["backup", "--site", path(site.path()), "--to", path(&archive)]);
        let during = acknowledged.lock().unwrap().len() - before.len();
        eprintln!("{during} writes acknowledged while the backup ran");
        stop.store(true, Ordering::Relaxed);
        (before, backup)
    });
    assert!(before.len() >= 64, "the writers wrote: {}", before.len());
    let said = ok(backup);
    assert!(said.starts_with(&format!("wrote {}: ", archive.display())), "{said}");
    assert!(said.contains("; sha256 "), "{said}");
    assert_eq!(
        fs::metadata(&archive).unwrap().permissions().mode() & 0o777,
        0o600,
        "the archive holds accounts: its owner's alone"
    );

    let verified = ok(run(&["backup", "verify", path(&archive)]));
    assert!(verified.contains("every checksum matches"), "{verified}");

    let restored = work.path().join("restored");
    let said = ok(run(&["restore", path(&archive), "--to", path(&restored)]));
    assert!(said.starts_with("restored "), "{said}");
    ok(Command::new(BIN).args(["check", "--site", path(&restored)]).output().unwrap());
    assert!(!restored.join(".cms/sessions/abc").exists(), "sessions stay out");
    assert!(!restored.join(".cms/index").exists(), "index snapshots stay out");
    assert!(restored.join(".cms/users.yaml").exists());
    assert_eq!(fs::metadata(restored.join(".cms/users.yaml")).unwrap().permissions().mode() & 0o777, 0o600);
    let seconds = |path: &Path| {
        let modified = fs::metadata(path).unwrap().modified().unwrap();
        modified.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    };
    assert_eq!(
        seconds(&restored.join("cms.yaml")),
        seconds(&site.path().join("cms.yaml")),
        "files keep their times"
    );

    // Every write acknowledged before the backup began is served by the restored site,
    // and the key made before it still works there.
    let again = Server::start(&restored);
    for slug in &before {
        let (status, body) = again.get(&format!("/cms/collections/posts/items/{slug}"), Some(&key));
        assert_eq!(status, 200, "{slug}: {body}");
        assert_eq!(body["data"]["title"], slug.as_str());
    }
}

#[test]
fn a_restored_site_answers_the_same_lists() {
    let site = demo_site();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("site.tar.gz");
    ok(run(&["backup", "--site", path(site.path()), "--to", path(&archive)]));
    // An existing archive is not replaced unless asked.
    let again = run(&["backup", "--site", path(site.path()), "--to", path(&archive)]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("exists; name a new file"), "{}", stderr(&again));
    ok(run(&["backup", "--site", path(site.path()), "--to", path(&archive), "--overwrite"]));

    // An empty folder is a fine target.
    let restored = work.path().join("restored");
    fs::create_dir(&restored).unwrap();
    ok(run(&["restore", path(&archive), "--to", path(&restored)]));
    let original = Server::start(site.path());
    let copy = Server::start(&restored);
    let (from, to) = (lists(&original), lists(&copy));
    assert!(from.len() >= 4, "{from:?}");
    assert_eq!(from, to);
}

#[test]
fn a_damaged_archive_or_a_full_target_is_refused_and_nothing_is_written() {
    let site = demo_site();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("site.tar.gz");
    ok(run(&["backup", "--site", path(site.path()), "--to", path(&archive)]));
    let bytes = fs::read(&archive).unwrap();

    let cut = work.path().join("cut.tar.gz");
    fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    let altered = work.path().join("altered.tar.gz");
    fs::write(&altered, &flipped).unwrap();
    let plain = work.path().join("plain.txt");
    fs::write(&plain, "not an archive").unwrap();

    for damaged in [&cut, &altered, &plain] {
        let verified = run(&["backup", "verify", path(damaged)]);
        assert!(!verified.status.success(), "{}", damaged.display());
        let said = stderr(&verified);
        assert!(said.contains(&format!("{} is refused", damaged.display())), "{said}");
        assert!(said.contains("damaged") || said.contains("cut short"), "{said}");

        let target = work.path().join("target");
        let restored = run(&["restore", path(damaged), "--to", path(&target)]);
        assert!(!restored.status.success());
        assert!(!target.exists(), "a refused archive writes nothing");
    }
    let leftovers: Vec<_> = fs::read_dir(work.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with(".cms-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A folder with something in it is never restored into.
    let full = work.path().join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("keep.txt"), "mine").unwrap();
    let refused = run(&["restore", path(&archive), "--to", path(&full)]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("is not empty; restore into a new or empty folder"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(fs::read_dir(&full).unwrap().count(), 1);
}

/// A bucket site's archive holds the bucket's files and the node's `cms.yaml`; it goes
/// back into an empty bucket prefix, and into a folder that then serves itself.
#[test]
fn a_bucket_site_is_backed_up_and_restored_into_a_bucket_or_a_folder() {
    let Some(bucket) = crate::nodes::bucket_site(1) else { return };
    let node = bucket.nodes[0].path();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("bucket.tar.gz");
    let said = stdout(&crate::nodes::cms(node, &["backup", "--to", path(&archive)]));
    assert!(said.starts_with(&format!("wrote {}", archive.display())), "{said}");

    let folder = work.path().join("folder");
    let said = ok(run(&["restore", path(&archive), "--to", path(&folder)]));
    assert!(said.contains("the storage: section was removed"), "{said}");
    assert!(!fs::read_to_string(folder.join("cms.yaml")).unwrap().contains("kind: s3"));
    ok(Command::new(BIN).args(["check", "--site", path(&folder)]).output().unwrap());

    let target = cms_s3::testing::fresh_bucket().unwrap();
    let url = format!("s3://{}/{}", target.bucket, target.prefix);
    let endpoint = target.endpoint.clone().unwrap();
    let restore = |to: &str| {
        let mut command = Command::new(BIN);
        command.args(["restore", path(&archive), "--to", to, "--endpoint", &endpoint]);
        crate::nodes::with_credentials(&mut command).output().unwrap()
    };
    let said = ok(restore(&url));
    assert!(said.contains("restored "), "{said}");
    // The prefix now holds a site: a second restore into it is refused.
    let refused = restore(&url);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("is not empty"), "{}", stderr(&refused));

    // A node on the restored prefix answers what the folder restored from the same archive does.
    let config = fs::read_to_string(folder.join("cms.yaml")).unwrap();
    let restored_node = tempfile::tempdir().unwrap();
    let section = format!(
        "storage:\n  kind: s3\n  bucket: {}\n  endpoint: {endpoint}\n  prefix: {}\n",
        target.bucket, target.prefix
    );
    fs::write(restored_node.path().join("cms.yaml"), format!("{config}{section}")).unwrap();
    let from_bucket = crate::nodes::serve(restored_node.path());
    let from_folder = Server::start(&folder);
    // But for the items' `modified`: a bucket gives each object the time it was put (the
    // restore's), where the folder keeps the archive's times.
    assert_eq!(without_modified(lists(&from_bucket)), without_modified(lists(&from_folder)));
}

fn without_modified(mut lists: Vec<(String, Value)>) -> Vec<(String, Value)> {
    for (_, body) in &mut lists {
        if let Some(items) = body["data"].as_array_mut() {
            for item in items {
                item.as_object_mut().unwrap().remove("modified");
            }
        }
    }
    lists
}

/// A file moved after the backup listed the site (a resource renamed while it runs) is in
/// the archive under its new name: the site is listed again.
#[test]
fn a_file_moved_while_the_backup_runs_is_in_it_under_its_new_name() {
    let site = demo_site();
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("site.tar.gz");
    let hold = work.path().join("hold");
    assert!(Command::new("mkfifo").arg(&hold).status().unwrap().success());
    let backup = Command::new(BIN)
        .args(["backup", "--site", path(site.path()), "--to", path(&archive)])
        .env("CMS_TEST_HOLD_BACKUP", &hold)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the FIFO waits for the backup to open it: after its first listing.
    let mut held = fs::OpenOptions::new().write(true).open(&hold).unwrap();
    let uploads = site.path().join("media/uploads");
    fs::rename(uploads.join("logo.png"), uploads.join("logo-moved.png")).unwrap();
    std::io::Write::write_all(&mut held, b"go").unwrap();
    drop(held);
    let said = ok(backup.wait_with_output().unwrap());
    assert!(said.contains("(1 moved or deleted while it ran)"), "{said}");

    let restored = work.path().join("restored");
    ok(run(&["restore", path(&archive), "--to", path(&restored)]));
    assert_eq!(
        fs::read(restored.join("media/uploads/logo-moved.png")).unwrap(),
        fs::read(uploads.join("logo-moved.png")).unwrap()
    );
    assert!(!restored.join("media/uploads/logo.png").exists());
}
