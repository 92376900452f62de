use std::fs;
use std::os::unix::fs::symlink;
use std::sync::Arc;

use cms_core::collection::Collection;
use cms_core::config::{CollectionConfig, SiteConfig};
use cms_core::license::Feature;
use cms_core::ports::{ContentStore, LicenseSource};
use cms_core::query::ListQuery;
use cms_core::service::{Cms, ItemUpdate, UpdateMode, Viewer};
use cms_core::slug::ItemFilename;
use cms_core::testing::{FixedClock, RecordingEvents};
use cms_fs::{FsContentStore, FsLicense, load_config};
use serde_json::json;

fn posts() -> Collection {
    Collection::from_config(
        0,
        &CollectionConfig {
            label: "Posts".into(),
            path: "content/posts".into(),
            page_path: None,
            date_prefix: false,
        },
    )
}

fn name(n: &str) -> ItemFilename {
    ItemFilename::parse(n).unwrap()
}

#[test]
fn symlinks_in_a_collection_are_never_followed() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "---\ntitle: Secret\n---\n").unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    symlink(outside.path().join("secret.md"), folder.join("leak.md")).unwrap();
    symlink(outside.path(), folder.join("dir.md")).unwrap();

    let store = FsContentStore::new(site.path());
    assert!(store.scan(&posts()).unwrap().is_empty(), "symlinks are not listed");
    assert!(store.read(&posts(), &name("leak.md")).unwrap().is_none(), "nor read");
}

#[test]
fn a_collection_folder_linked_outside_the_site_is_refused() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("x.md"), "x").unwrap();
    fs::create_dir_all(site.path().join("content")).unwrap();
    symlink(outside.path(), site.path().join("content/posts")).unwrap();
    let store = FsContentStore::new(site.path());
    assert!(store.scan(&posts()).is_err());
    assert!(store.read(&posts(), &name("x.md")).is_err());
}

#[test]
fn scans_see_outside_edits_and_ignore_other_files() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(folder.join("sub.md")).unwrap();
    fs::write(folder.join("notes.txt"), "x").unwrap();
    fs::write(folder.join("a.md"), "one").unwrap();
    let store = FsContentStore::new(site.path());
    let first = store.scan(&posts()).unwrap();
    assert_eq!(first.len(), 1);
    fs::write(folder.join("a.md"), "two").unwrap();
    let second = store.scan(&posts()).unwrap();
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

#[test]
fn the_license_is_reread_when_the_file_changes() {
    let site = tempfile::tempdir().unwrap();
    let state = site.path().join(".cms");
    let license = FsLicense::new(&state);
    assert!(license.current().unwrap().is_none());
    license.install("licensee: A\nfeatures: [json_api]\n").unwrap();
    assert_eq!(license.current().unwrap().unwrap().features, ["json_api"]);
    fs::write(state.join("license.yaml"), "licensee: A\nfeatures: [json_api, webhooks]\n").unwrap();
    assert_eq!(license.current().unwrap().unwrap().features.len(), 2);
    fs::write(state.join("license.yaml"), "not: [valid\n").unwrap();
    assert!(license.current().unwrap().is_none(), "a broken license counts as none");
    assert!(license.install("licensee: A\n").is_err());
}

/// Many threads PATCH different keys of one item at once; none is lost.
#[test]
fn concurrent_patches_to_one_item_lose_nothing() {
    let site = tempfile::tempdir().unwrap();
    let cms = Arc::new(fs_cms(site.path()));
    FsLicense::new(&site.path().join(".cms")).install("licensee: A\nfeatures: [json_api]\n").unwrap();
    assert!(cms.require_feature(Feature::JsonApi).is_ok());
    fs::create_dir_all(site.path().join("content/posts")).unwrap();
    fs::write(site.path().join("content/posts/item.md"), "---\ntitle: T\n---\n\nbody").unwrap();
    let collection = cms.collection("posts").unwrap().clone();
    std::thread::scope(|scope| {
        for i in 0..16 {
            let (cms, collection) = (&cms, &collection);
            scope.spawn(move || {
                let fm = json!({ format!("k{i}"): i }).as_object().unwrap().clone();
                let update = ItemUpdate { mode: UpdateMode::Patch, fm, body: None };
                cms.update_item(collection, "item", update, None).unwrap();
            });
        }
    });
    let raw = cms.read_raw(&collection, "item").unwrap();
    assert_eq!(raw.doc.fm.len(), 17, "{:?}", raw.doc.fm);
    assert_eq!(raw.doc.body, "body");
    let listed = cms.list_items(&collection, &ListQuery::default(), &Viewer::Anonymous).unwrap();
    assert_eq!(listed.total_items, 1);
    let leftovers = fs::read_dir(site.path().join("content/posts")).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary files left");
}

/// An item file the store refuses to read (here: over 16 MiB, made sparse so it costs no
/// disk) is left out of lists; the rest of the collection still lists.
#[test]
fn an_oversized_item_file_does_not_break_the_list() {
    let site = tempfile::tempdir().unwrap();
    let folder = site.path().join("content/posts");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("ok.md"), "---\ntitle: OK\n---\n").unwrap();
    let huge = fs::File::create(folder.join("huge.md")).unwrap();
    huge.set_len(17 * 1024 * 1024).unwrap();
    let cms = fs_cms(site.path());
    let posts = cms.collection("posts").unwrap().clone();
    for _ in 0..2 {
        let page = cms.list_items(&posts, &ListQuery::default(), &Viewer::Anonymous).unwrap();
        assert_eq!(page.total_items, 1);
    }
    assert!(cms.read_raw(&posts, "huge").is_err());
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
    Cms::new(&config, ports)
}

/// The collection folder does not exist yet, and its parent is a symlink out of the site:
/// a create must not write through it.
#[test]
fn a_missing_collection_folder_under_a_symlinked_parent_is_refused() {
    let site = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), site.path().join("content")).unwrap();
    let store = FsContentStore::new(site.path());
    assert!(store.create(&posts(), &name("x.md"), b"x").is_err());
    assert!(!outside.path().join("posts").exists(), "nothing was written outside the site");
}
