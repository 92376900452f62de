use cms_core::CoreError;
use cms_core::document::Frontmatter;
use cms_core::events::EventKind;
use cms_core::service::{Cms, ItemUpdate, NewItem, UpdateMode};
use cms_core::testing::MemoryWorld;
use serde_json::{Value, json};

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

fn patch(cms: &Cms, body: &str) {
    let pages = cms.collection("pages").unwrap();
    let update = ItemUpdate { mode: UpdateMode::Patch, fm: Frontmatter::new(), body: Some(body.into()) };
    cms.update_item(pages, "about", update, None).unwrap();
}

fn setup() -> (MemoryWorld, Cms) {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    let new = NewItem {
        slug: Some("about".into()),
        fm: fm(json!({"title": "About"})),
        body: "v1".into(),
        ..Default::default()
    };
    cms.create_item(&pages, new).unwrap();
    (world, cms)
}

fn bodies(cms: &Cms) -> Vec<String> {
    let pages = cms.collection("pages").unwrap();
    let list = cms.list_versions(pages, "about").unwrap();
    list.versions
        .iter()
        .map(|v| cms.read_version(pages, "about", &v.timestamp.to_string()).unwrap().doc.body)
        .collect()
}

#[test]
fn each_write_snapshots_what_it_replaces_with_unique_timestamps_newest_first() {
    let (world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    assert!(cms.list_versions(&pages, "about").unwrap().versions.is_empty(), "a create replaces nothing");
    patch(&cms, "v2");
    let put = ItemUpdate { mode: UpdateMode::Put, fm: Frontmatter::new(), body: Some("v3".into()) };
    cms.update_item(&pages, "about", put, None).unwrap();
    assert_eq!(bodies(&cms), ["v2", "v1"]);

    let list = cms.list_versions(&pages, "about").unwrap();
    let stamps: Vec<i64> = list.versions.iter().map(|v| v.timestamp).collect();
    let now = world.clock.now_unix();
    assert_eq!(stamps, [now + 1, now], "same-second writes take the next free second");
    let current = list.current.unwrap();
    assert_eq!(current.1, world.content.get_raw("content/pages", "about.md").unwrap().len() as u64);

    world.clock.advance(100);
    patch(&cms, "v4");
    assert_eq!(cms.list_versions(&pages, "about").unwrap().versions[0].timestamp, now + 100);
}

#[test]
fn identical_consecutive_snapshots_are_stored_once() {
    let (_world, cms) = setup();
    patch(&cms, "v2");
    patch(&cms, "v2");
    patch(&cms, "v2");
    assert_eq!(bodies(&cms), ["v2", "v1"]);
}

#[test]
fn history_keeps_the_newest_versions_keep_snapshots() {
    let (_world, cms) = setup();
    for i in 2..=9 {
        patch(&cms, &format!("v{i}"));
    }
    assert_eq!(bodies(&cms), ["v8", "v7", "v6", "v5", "v4"], "keep: 5 in the test site");
}

#[test]
fn restore_makes_a_version_current_and_is_itself_undoable() {
    let (world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    patch(&cms, "v2");
    let v1 = cms.list_versions(&pages, "about").unwrap().versions[0].timestamp;
    world.events.take();

    let (outcome, restored) = cms.restore_version(&pages, "about", &v1.to_string(), None).unwrap();
    assert_eq!((outcome.filename.as_str(), outcome.folder, restored), ("about.md", 1, v1));
    assert_eq!(cms.read_raw(&pages, "about").unwrap().doc.body, "v1");
    assert_eq!(bodies(&cms), ["v2", "v1"], "the replaced content is a version on top");
    assert_eq!(world.events.take()[0].kind, EventKind::FileUpdated);

    let undo = cms.list_versions(&pages, "about").unwrap().versions[0].timestamp;
    cms.restore_version(&pages, "about", &undo.to_string(), None).unwrap();
    assert_eq!(cms.read_raw(&pages, "about").unwrap().doc.body, "v2");
}

#[test]
fn a_deleted_item_keeps_its_history_and_comes_back_on_restore() {
    let (_world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    cms.delete_item(&pages, "about", None).unwrap();
    let list = cms.list_versions(&pages, "about.md").unwrap();
    assert!(list.current.is_none());
    assert_eq!(list.versions.len(), 1);
    assert!(matches!(cms.read_raw(&pages, "about"), Err(CoreError::NotFound(_))));

    let version = list.versions[0].timestamp.to_string();
    assert_eq!(cms.read_version(&pages, "about", &version).unwrap().doc.fm["title"], "About");
    cms.restore_version(&pages, "about", &version, None).unwrap();
    assert_eq!(cms.read_raw(&pages, "about").unwrap().doc.body, "v1");
}

#[test]
fn history_errors() {
    let (_world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    assert!(matches!(cms.list_versions(&pages, "nope"), Err(CoreError::NotFound(_))));
    assert!(matches!(cms.read_version(&pages, "about", "12345"), Err(CoreError::NotFound(_))));
    assert!(matches!(cms.restore_version(&pages, "about", "12345", None), Err(CoreError::NotFound(_))));
    assert!(matches!(cms.read_version(&pages, "about", "latest"), Err(CoreError::Invalid(_))));
    assert!(matches!(cms.restore_version(&pages, "about", "-5", None), Err(CoreError::Invalid(_))));
    assert!(matches!(cms.list_versions(&pages, "../x"), Err(CoreError::Invalid(_))));
}

#[test]
fn restore_honours_if_match() {
    let (world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    patch(&cms, "v2");
    let version = cms.list_versions(&pages, "about").unwrap().versions[0].timestamp.to_string();
    let stale = cms.restore_version(&pages, "about", &version, Some("\"stale\""));
    assert!(matches!(stale, Err(CoreError::PreconditionFailed(_))));
    assert_eq!(cms.read_raw(&pages, "about").unwrap().doc.body, "v2", "nothing changed");
    let current = cms.read_raw(&pages, "about").unwrap().etag;
    cms.restore_version(&pages, "about", &version, Some(&current)).unwrap();
    assert_eq!(cms.read_raw(&pages, "about").unwrap().doc.body, "v1");
    drop(world);
}

#[test]
fn restoring_a_deleted_item_refuses_a_slug_that_another_file_now_uses() {
    let (_world, cms) = setup();
    let pages = cms.collection("pages").unwrap().clone();
    cms.delete_item(&pages, "about", None).unwrap();
    let version = cms.list_versions(&pages, "about.md").unwrap().versions[0].timestamp.to_string();
    let dated = NewItem { slug: Some("about".into()), date_prefix: Some(true), ..Default::default() };
    let live = cms.create_item(&pages, dated).unwrap();
    assert_ne!(live.filename, "about.md");
    let clash = cms.restore_version(&pages, "about.md", &version, None);
    assert!(matches!(clash, Err(CoreError::Conflict(_))), "{clash:?}");
}
