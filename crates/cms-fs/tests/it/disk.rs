use cms_core::policy::Caller;
use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;

use cms_core::CoreError;
use cms_core::config::SiteConfig;
use cms_core::license::Feature;
use cms_core::ports::{ContentStore, LicenseSource};
use cms_core::query::ListQuery;
use cms_core::service::{Cms, ItemUpdate, UpdateMode, Viewer};
use cms_core::testing::fixtures::{item, item_name as name, posts};
use cms_core::testing::{FixedClock, RecordingEvents};
use cms_fs::{FsContentStore, FsLicense, load_config};
use serde_json::json;

#[tokio::test]
async fn symlinks_in_a_collection_are_never_followed() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "---\ntitle: Secret\n---\n").unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    symlink(outside.path().join("secret.md"), folder.join("leak.md")).unwrap();
    symlink(outside.path(), folder.join("dir.md")).unwrap();

    let store = FsContentStore::new(site.path());
    assert!(store.scan(&posts()).await.unwrap().is_empty(), "symlinks are not listed");
    assert!(store.read(&posts(), &name("leak.md")).await.unwrap().is_none(), "nor read");
}

#[tokio::test]
async fn a_collection_folder_linked_outside_the_site_is_refused() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("x.md"), "x").unwrap();
    fs::create_dir_all(site.path().join("content")).unwrap();
    symlink(outside.path(), site.path().join("content/posts")).unwrap();
    let store = FsContentStore::new(site.path());
    assert!(store.scan(&posts()).await.is_err());
    assert!(store.read(&posts(), &name("x.md")).await.is_err());
}

/// One collection that cannot be indexed (its folder links out of the site) does not
/// keep the server from indexing and serving the others, nor from rescanning them.
#[tokio::test]
async fn a_refused_collection_does_not_stop_the_others() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir_all(site.path().join("content/pages")).unwrap();
    symlink(outside.path(), site.path().join("content/posts")).unwrap();
    fs::write(site.path().join("content/pages/about.md"), "---\ntitle: About\n---\n").unwrap();
    let config = SiteConfig::from_yaml(
        "site: {name: S, url: 'https://e.com'}\ncollections:\n  - {label: Posts, path: content/posts}\n  - {label: Pages, path: content/pages}\n",
    )
    .unwrap();
    let ports = cms_fs::site_ports(
        site.path(),
        Arc::new(RecordingEvents::default()),
        Arc::new(FixedClock::at_unix(0)),
        Arc::new(cms_core::testing::MemoryWebhooks::default()),
    );
    let cms = Cms::builder(&config, ports).build();
    assert!(cms.upkeep().start().await.is_err(), "the refused collection is reported");
    let pages = cms.collection("pages").unwrap().clone();
    let list = cms.list_items(&pages, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(list.total_items, 1, "the other collection is served");
    fs::write(site.path().join("content/pages/contact.md"), "---\ntitle: Contact\n---\n").unwrap();
    assert!(cms.upkeep().rescan_all().await.is_err(), "still reported");
    let list = cms.list_items(&pages, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(list.total_items, 2, "and still rescanned");
    let posts = cms.collection("posts").unwrap().clone();
    assert!(cms.list_items(&posts, &ListQuery::default(), &Viewer::Anonymous).await.is_err());
}

#[tokio::test]
async fn scans_see_outside_edits_and_every_visible_file_but_no_folder() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(folder.join("sub.md")).unwrap();
    fs::write(folder.join("notes.txt"), "x").unwrap();
    fs::write(folder.join(".hidden.md"), "x").unwrap();
    fs::write(folder.join("a.md"), "one").unwrap();
    let store = FsContentStore::new(site.path());
    let scan = async || {
        let mut stamps = store.scan(&posts()).await.unwrap();
        stamps.sort_by(|a, b| a.name.cmp(&b.name));
        stamps
    };
    let first = scan().await;
    let names: Vec<&str> = first.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a.md", "notes.txt"], "the core reports notes.txt as skipped");
    fs::write(folder.join("a.md"), "two").unwrap();
    let second = scan().await;
    assert_ne!(
        first[0].change_token, second[0].change_token,
        "an in-place edit of the same size is a change"
    );
}

#[test]
fn config_errors_name_the_file_line_and_key() {
    let site = tempfile::tempdir().unwrap();
    fs::write(site.path().join("cms.yaml"), "site:\n  name: S\n  url: https://e.com\n  colour: red\n")
        .unwrap();
    let message = load_config(site.path()).unwrap_err().to_string();
    assert!(
        message.contains("cms.yaml") && message.contains("colour") && message.contains("line 4"),
        "{message}"
    );
    let missing = tempfile::tempdir().unwrap();
    assert!(load_config(missing.path()).unwrap_err().to_string().contains("cms.yaml"));
}

#[tokio::test]
async fn the_license_is_reread_when_the_file_changes() {
    let site = tempfile::tempdir().unwrap();
    let state = site.path().join(".cms");
    let license = FsLicense::new(&state);
    assert!(license.current().await.unwrap().is_none());
    license.install("licensee: A\nfeatures: [json_api]\n").await.unwrap();
    assert_eq!(license.current().await.unwrap().unwrap().features, ["json_api"]);
    fs::write(state.join("license.yaml"), "licensee: A\nfeatures: [json_api, webhooks]\n").unwrap();
    assert_eq!(license.current().await.unwrap().unwrap().features.len(), 2);
    fs::write(state.join("license.yaml"), "not: [valid\n").unwrap();
    assert!(license.current().await.unwrap().is_none(), "a broken license counts as none");
    assert!(license.install("licensee: A\n").await.is_err());
}

/// Many tasks PATCH different keys of one item at once, on two worker threads; none is
/// lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_to_one_item_lose_nothing() {
    let site = tempfile::tempdir().unwrap();
    let cms = Arc::new(fs_cms(site.path()));
    FsLicense::new(&site.path().join(".cms")).install("licensee: A\nfeatures: [json_api]\n").await.unwrap();
    assert!(cms.require_feature(Feature::JsonApi).await.is_ok());
    fs::create_dir_all(site.path().join("content/posts")).unwrap();
    fs::write(site.path().join("content/posts/item.md"), "---\ntitle: T\n---\n\nbody").unwrap();
    let collection = cms.collection("posts").unwrap().clone();
    // Written behind the facade's back: in the server the inotify feed applies this within
    // 1 s; here the test applies it.
    cms.upkeep().rescan(&collection).await.unwrap();
    let patches: Vec<_> = (0..16)
        .map(|i| {
            let (cms, collection) = (cms.clone(), collection.clone());
            tokio::spawn(async move {
                let fm = json!({ format!("k{i}"): i }).as_object().unwrap().clone();
                let update = ItemUpdate { mode: UpdateMode::Patch, fm, body: None };
                cms.update_item(Caller::Operator, &collection, &item("item"), update, None).await.unwrap();
            })
        })
        .collect();
    for patch in patches {
        patch.await.unwrap();
    }
    let raw = cms.read_item_source(Caller::Operator, &collection, &item("item")).await.unwrap();
    assert_eq!(raw.doc.fm.len(), 17, "{:?}", raw.doc.fm);
    assert_eq!(raw.doc.body, "body");
    let listed = cms.list_items(&collection, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(listed.total_items, 1);
    let leftovers = fs::read_dir(site.path().join("content/posts")).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary files left");
}

/// An item file the store refuses to read (here: over 16 MiB, made sparse so it costs no
/// disk) is left out of lists; the rest of the collection still lists.
#[tokio::test]
async fn an_oversized_item_file_does_not_break_the_list() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("ok.md"), "---\ntitle: OK\n---\n").unwrap();
    let huge = fs::File::create(folder.join("huge.md")).unwrap();
    huge.set_len(17 * 1024 * 1024).unwrap();
    let cms = fs_cms(site.path());
    let posts = cms.collection("posts").unwrap().clone();
    for _ in 0..2 {
        let page = cms.list_items(&posts, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
        assert_eq!(page.total_items, 1);
    }
    assert!(cms.read_item_source(Caller::Operator, &posts, &item("huge")).await.is_err());
}

/// `stat` reports what `scan` and `read` report for a regular item file, and nothing for a
/// symlink (not followed), a folder or a missing file.
#[tokio::test]
async fn stat_agrees_with_scan_and_read_and_never_follows_links() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "secret").unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(folder.join("dir.md")).unwrap();
    fs::write(folder.join("a.md"), "one").unwrap();
    symlink(outside.path().join("secret.md"), folder.join("leak.md")).unwrap();
    let store = FsContentStore::new(site.path());

    let stat = store.stat(&posts(), &name("a.md")).await.unwrap().unwrap();
    assert_eq!(store.scan(&posts()).await.unwrap(), std::slice::from_ref(&stat));
    assert_eq!(store.read(&posts(), &name("a.md")).await.unwrap().unwrap().stamp, stat);
    let written = store.replace(&posts(), &name("a.md"), b"two", &stat).await.unwrap();
    assert_ne!(written.change_token, stat.change_token);
    assert_eq!(store.stat(&posts(), &name("a.md")).await.unwrap(), Some(written));
    for absent in ["leak.md", "dir.md", "missing.md"] {
        assert!(store.stat(&posts(), &name(absent)).await.unwrap().is_none(), "{absent}");
    }
}

/// A replace is conditional on the stamp read: an editor's save (in place or by rename)
/// after the read makes it stale and keeps the editor's content; a file turned into a
/// symlink is stale too, and is not written through.
#[tokio::test]
async fn a_replace_after_an_outside_edit_is_stale_and_keeps_the_edit() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("a.md"), "one").unwrap();
    let store = FsContentStore::new(site.path());

    let read = store.read(&posts(), &name("a.md")).await.unwrap().unwrap();
    fs::write(folder.join("a.md"), "edited").unwrap();
    let stale = store.replace(&posts(), &name("a.md"), b"mine", &read.stamp).await;
    assert!(matches!(stale, Err(CoreError::Stale(_))), "{stale:?}");
    assert_eq!(fs::read(folder.join("a.md")).unwrap(), b"edited");
    assert_eq!(staging_leftovers(&folder), 0, "the staged file is removed");

    let read = store.read(&posts(), &name("a.md")).await.unwrap().unwrap();
    fs::remove_file(folder.join("a.md")).unwrap();
    fs::write(outside.path().join("x.md"), "x").unwrap();
    symlink(outside.path().join("x.md"), folder.join("a.md")).unwrap();
    let stale = store.replace(&posts(), &name("a.md"), b"mine", &read.stamp).await;
    assert!(matches!(stale, Err(CoreError::Stale(_))), "{stale:?}");
    assert_eq!(fs::read(outside.path().join("x.md")).unwrap(), b"x");
}

fn staging_leftovers(folder: &std::path::Path) -> usize {
    fs::read_dir(folder)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".cms-tmp-"))
        .count()
}

/// `read_many` answers in the order asked (across its parallel readers), and one file's
/// failure (here: over the size limit) or absence does not fail the others. A symlink, a
/// folder or a FIFO under an item's name is no item, and the FIFO does not hold the read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_keeps_the_order_and_isolates_failures() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    let mut names = Vec::new();
    for i in 0..300 {
        fs::write(folder.join(format!("p{i}.md")), format!("item {i}")).unwrap();
        names.push(name(&format!("p{i}.md")));
    }
    fs::File::create(folder.join("huge.md")).unwrap().set_len(17 * 1024 * 1024).unwrap();
    names.insert(150, name("huge.md"));
    names.insert(10, name("missing.md"));
    // At the edges of a reader's files opened ahead, too.
    names.insert(0, name("missing.md"));
    names.push(name("missing.md"));
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "secret").unwrap();
    symlink(outside.path().join("secret.md"), folder.join("leak.md")).unwrap();
    fs::create_dir(folder.join("dir.md")).unwrap();
    let fifo = folder.join("pipe.md");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (at, odd) in [(20, "leak.md"), (200, "dir.md"), (250, "pipe.md")] {
        names.insert(at, name(odd));
    }
    let store = FsContentStore::new(site.path());

    let files = store.read_many(&posts(), &names).await;
    assert_eq!(files.len(), names.len());
    for (name, file) in names.iter().zip(&files) {
        match name.as_str() {
            "missing.md" | "leak.md" | "dir.md" | "pipe.md" => assert!(matches!(file, Ok(None)), "{name:?}"),
            "huge.md" => assert!(file.is_err()),
            other => {
                let file = file.as_ref().unwrap().as_ref().unwrap();
                assert_eq!(file.stamp.name, other);
                assert_eq!(
                    file.bytes,
                    format!("item {}", other.trim_start_matches('p').trim_end_matches(".md")).as_bytes()
                );
            }
        }
    }
    assert!(store.read_many(&posts(), &[]).await.is_empty());
}

/// The facade keeps an index: an edit made behind its back shows in lists once the change
/// is applied (in the server the inotify feed does this within 1 s; here the test calls
/// `rescan`), and its own writes show at once.
#[tokio::test]
async fn outside_edits_show_after_a_rescan_and_own_writes_at_once() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("a.md"), "---\ntitle: A\n---\n").unwrap();
    let cms = fs_cms(site.path());
    let posts = cms.collection("posts").unwrap().clone();
    let titles = async |cms: &Cms| -> Vec<String> {
        let page = cms.list_items(&posts, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
        page.items.iter().map(|s| s.item.meta.title.to_string()).collect()
    };
    assert_eq!(titles(&cms).await, ["A"]);

    fs::write(folder.join("a.md"), "---\ntitle: A2\n---\n").unwrap();
    fs::write(folder.join("b.md"), "---\ntitle: B\n---\n").unwrap();
    cms.upkeep().rescan(&posts).await.unwrap();
    let mut seen = titles(&cms).await;
    seen.sort();
    assert_eq!(seen, ["A2", "B"]);

    fs::remove_file(folder.join("b.md")).unwrap();
    cms.upkeep().rescan_all().await.unwrap();
    assert_eq!(titles(&cms).await, ["A2"]);

    let fm = json!({"title": "A3"}).as_object().unwrap().clone();
    cms.update_item(
        Caller::Operator,
        &posts,
        &item("a"),
        ItemUpdate { mode: UpdateMode::Patch, fm, body: None },
        None,
    )
    .await
    .unwrap();
    assert_eq!(titles(&cms).await, ["A3"], "no rescan needed for the facade's own write");
}

/// The facade over the file adapters on `site`, with a collection `posts`.
fn fs_cms(site: &std::path::Path) -> Cms {
    let config = SiteConfig::from_yaml(
        "site: {name: S, url: 'https://e.com'}\ncollections:\n  - {label: Posts, path: content/posts}\n",
    )
    .unwrap();
    let ports = cms_fs::site_ports(
        site,
        Arc::new(RecordingEvents::default()),
        Arc::new(FixedClock::at_unix(0)),
        Arc::new(cms_core::testing::MemoryWebhooks::default()),
    );
    Cms::builder(&config, ports).build()
}

/// The collection folder does not exist yet, and its parent is a symlink out of the site:
/// a create must not write through it.
#[tokio::test]
async fn a_missing_collection_folder_under_a_symlinked_parent_is_refused() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), site.path().join("content")).unwrap();
    let store = FsContentStore::new(site.path());
    assert!(store.create(&posts(), &name("x.md"), b"x").await.is_err());
    assert!(!outside.path().join("posts").exists(), "nothing was written outside the site");
}
