use cms_core::collection::Collection;
use cms_core::document::Frontmatter;
use cms_core::events::EventKind;
use cms_core::policy::Caller;
use cms_core::ports::{FileStamp, SavedVersion, VersionStamp, VersionStore, VersionToSave};
use cms_core::service::Precondition;
use cms_core::service::VersionId;
use cms_core::service::{Cms, ItemUpdate, NewItem, UpdateMode};
use cms_core::slug::ItemFilename;
use cms_core::testing::MemoryWorld;
use cms_core::testing::fixtures::item;
use cms_core::{CoreError, CoreResult};
use serde_json::{Value, json};

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

async fn patch(cms: &Cms, body: &str) {
    let pages = cms.collection("pages").unwrap();
    let update = ItemUpdate { mode: UpdateMode::Patch, fm: Frontmatter::new(), body: Some(body.into()) };
    cms.update_item(Caller::Operator, pages, &item("about"), update, None).await.unwrap();
}

async fn setup() -> (MemoryWorld, Cms) {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    let new = NewItem {
        slug: Some("about".into()),
        fm: fm(json!({"title": "About"})),
        body: "v1".into(),
        ..Default::default()
    };
    cms.create_item(Caller::Operator, &pages, new).await.unwrap();
    (world, cms)
}

async fn bodies(cms: &Cms) -> Vec<String> {
    let pages = cms.collection("pages").unwrap();
    let list = cms.list_versions(Caller::Operator, pages, &item("about")).await.unwrap();
    let mut bodies = Vec::new();
    for v in &list.versions {
        bodies.push(
            cms.read_version(Caller::Operator, pages, &item("about"), VersionId::new(v.timestamp).unwrap())
                .await
                .unwrap()
                .doc
                .body,
        );
    }
    bodies
}

#[tokio::test]
async fn each_write_snapshots_what_it_replaces_with_unique_timestamps_newest_first() {
    let (world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    assert!(
        cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap().versions.is_empty(),
        "a create replaces nothing"
    );
    patch(&cms, "v2").await;
    let put = ItemUpdate { mode: UpdateMode::Put, fm: Frontmatter::new(), body: Some("v3".into()) };
    cms.update_item(Caller::Operator, &pages, &item("about"), put, None).await.unwrap();
    assert_eq!(bodies(&cms).await, ["v2", "v1"]);

    let list = cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap();
    let stamps: Vec<i64> = list.versions.iter().map(|v| v.timestamp).collect();
    let now = world.clock.now_unix();
    assert_eq!(stamps, [now + 1, now], "same-second writes take the next free second");
    let current = list.current.unwrap();
    assert_eq!(current.1, world.content.get_raw("content/pages", "about.md").unwrap().len() as u64);

    world.clock.advance(100);
    patch(&cms, "v4").await;
    assert_eq!(
        cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap().versions[0].timestamp,
        now + 100
    );
}

#[tokio::test]
async fn identical_consecutive_snapshots_are_stored_once() {
    let (_world, cms) = setup().await;
    patch(&cms, "v2").await;
    patch(&cms, "v2").await;
    patch(&cms, "v2").await;
    assert_eq!(bodies(&cms).await, ["v2", "v1"]);
}

#[tokio::test]
async fn history_keeps_the_newest_versions_keep_snapshots() {
    let (_world, cms) = setup().await;
    for i in 2..=9 {
        patch(&cms, &format!("v{i}")).await;
    }
    assert_eq!(bodies(&cms).await, ["v8", "v7", "v6", "v5", "v4"], "keep: 5 in the test site");
}

#[tokio::test]
async fn restore_makes_a_version_current_and_is_itself_undoable() {
    let (world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    patch(&cms, "v2").await;
    let v1 = cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap().versions[0].timestamp;
    world.events.take();

    let (outcome, restored) = cms
        .restore_version(Caller::Operator, &pages, &item("about"), VersionId::new(v1).unwrap(), None)
        .await
        .unwrap();
    assert_eq!((outcome.filename.as_str(), outcome.folder, restored), ("about.md", 1, v1));
    assert_eq!(cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().doc.body, "v1");
    assert_eq!(bodies(&cms).await, ["v2", "v1"], "the replaced content is a version on top");
    assert_eq!(world.events.take()[0].kind, EventKind::FileUpdated);

    let undo =
        cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap().versions[0].timestamp;
    cms.restore_version(Caller::Operator, &pages, &item("about"), VersionId::new(undo).unwrap(), None)
        .await
        .unwrap();
    assert_eq!(cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().doc.body, "v2");
}

#[tokio::test]
async fn a_deleted_item_keeps_its_history_and_comes_back_on_restore() {
    let (_world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    cms.delete_item(Caller::Operator, &pages, &item("about"), None).await.unwrap();
    let list = cms.list_versions(Caller::Operator, &pages, &item("about.md")).await.unwrap();
    assert!(list.current.is_none());
    assert_eq!(list.versions.len(), 1);
    assert!(matches!(
        cms.read_item_source(Caller::Operator, &pages, &item("about")).await,
        Err(CoreError::NotFound(_))
    ));

    let version = VersionId::new(list.versions[0].timestamp).unwrap();
    assert_eq!(
        cms.read_version(Caller::Operator, &pages, &item("about"), version).await.unwrap().doc.fm["title"],
        "About"
    );
    cms.restore_version(Caller::Operator, &pages, &item("about"), version, None).await.unwrap();
    assert_eq!(cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().doc.body, "v1");
}

#[tokio::test]
async fn history_errors() {
    let (_world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    assert!(matches!(
        cms.list_versions(Caller::Operator, &pages, &item("nope")).await,
        Err(CoreError::NotFound(_))
    ));
    assert!(matches!(
        cms.read_version(Caller::Operator, &pages, &item("about"), VersionId::new(12345).unwrap()).await,
        Err(CoreError::NotFound(_))
    ));
    assert!(matches!(
        cms.restore_version(Caller::Operator, &pages, &item("about"), VersionId::new(12345).unwrap(), None)
            .await,
        Err(CoreError::NotFound(_))
    ));
    assert!(matches!(VersionId::parse("latest"), Err(CoreError::Invalid(_))));
    assert!(matches!(VersionId::parse("-5"), Err(CoreError::Invalid(_))));
    // A reference out of the folder is refused by its parse, before any facade call.
    assert!(matches!(cms_core::slug::ItemRef::parse("../x"), Err(CoreError::Invalid(_))));
}

#[tokio::test]
async fn restore_honours_if_match() {
    let (world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    patch(&cms, "v2").await;
    let version =
        cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap().versions[0].timestamp;
    let version = VersionId::new(version).unwrap();
    let stale = cms
        .restore_version(
            Caller::Operator,
            &pages,
            &item("about"),
            version,
            Some(&Precondition::from_if_match("\"stale\"")),
        )
        .await;
    assert!(matches!(stale, Err(CoreError::PreconditionFailed(_))));
    assert_eq!(
        cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().doc.body,
        "v2",
        "nothing changed"
    );
    let current = cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().etag;
    cms.restore_version(
        Caller::Operator,
        &pages,
        &item("about"),
        version,
        Some(&Precondition::from_if_match(&current)),
    )
    .await
    .unwrap();
    assert_eq!(cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap().doc.body, "v1");
    drop(world);
}

#[tokio::test]
async fn restoring_a_deleted_item_refuses_a_slug_that_another_file_now_uses() {
    let (_world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    cms.delete_item(Caller::Operator, &pages, &item("about"), None).await.unwrap();
    let version =
        cms.list_versions(Caller::Operator, &pages, &item("about.md")).await.unwrap().versions[0].timestamp;
    let version = VersionId::new(version).unwrap();
    let dated = NewItem { slug: Some("about".into()), date_prefix: Some(true), ..Default::default() };
    let live = cms.create_item(Caller::Operator, &pages, dated).await.unwrap();
    assert_ne!(live.filename, "about.md");
    let clash = cms.restore_version(Caller::Operator, &pages, &item("about.md"), version, None).await;
    assert!(matches!(clash, Err(CoreError::Conflict(_))), "{clash:?}");
}

/// A version store that keeps the first snapshot "through the item's file" and answers a
/// stamp the file does not have (as if a program rewrote it right after), then behaves
/// like the memory store; it records what it is asked to unshare.
struct SharingOnce {
    inner: std::sync::Arc<cms_core::testing::MemoryVersions>,
    shared: std::sync::atomic::AtomicBool,
    unshared: std::sync::Mutex<Vec<(i64, Vec<u8>)>>,
}

#[async_trait::async_trait]
impl VersionStore for SharingOnce {
    async fn list_versions(&self, c: &Collection, n: &ItemFilename) -> CoreResult<Vec<VersionStamp>> {
        self.inner.list_versions(c, n).await
    }
    async fn read_version(&self, c: &Collection, n: &ItemFilename, t: i64) -> CoreResult<Option<Vec<u8>>> {
        self.inner.read_version(c, n, t).await
    }
    async fn version_author(&self, c: &Collection, n: &ItemFilename, t: i64) -> CoreResult<Option<String>> {
        self.inner.version_author(c, n, t).await
    }
    async fn save_version(
        &self,
        c: &Collection,
        n: &ItemFilename,
        t: i64,
        bytes: &[u8],
        author: Option<&str>,
    ) -> CoreResult<()> {
        self.inner.save_version(c, n, t, bytes, author).await
    }
    async fn remove_version(&self, c: &Collection, n: &ItemFilename, t: i64) -> CoreResult<()> {
        self.inner.remove_version(c, n, t).await
    }
    async fn items_with_history(&self, c: &Collection) -> CoreResult<Vec<String>> {
        self.inner.items_with_history(c).await
    }
    async fn save_current(
        &self,
        c: &Collection,
        n: &ItemFilename,
        snapshot: VersionToSave<'_>,
    ) -> CoreResult<SavedVersion> {
        self.inner.save_current(c, n, snapshot).await?;
        if self.shared.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let stamp = FileStamp { name: n.as_str().into(), size: 0, modified: 0, change_token: 7 };
            return Ok(SavedVersion { item_stamp: Some(stamp), timestamp: Some(snapshot.now) });
        }
        Ok(SavedVersion::default())
    }
    async fn write_failed(
        &self,
        _: &Collection,
        _: &ItemFilename,
        kept: &SavedVersion,
        bytes: &[u8],
    ) -> CoreResult<()> {
        self.unshared.lock().unwrap().push((kept.timestamp.unwrap(), bytes.to_vec()));
        Ok(())
    }
}

#[tokio::test]
async fn a_write_expects_the_stamp_its_snapshot_answered_and_unshares_it_when_the_write_fails() {
    let world = MemoryWorld::new();
    let versions = std::sync::Arc::new(SharingOnce {
        inner: world.versions.clone(),
        shared: false.into(),
        unshared: Default::default(),
    });
    let mut ports = world.ports();
    ports.versions = versions.clone();
    let config = cms_core::config::SiteConfig::from_yaml(cms_core::testing::SITE_YAML).unwrap();
    let cms = Cms::builder(&config, ports).build();
    let pages = cms.collection("pages").unwrap().clone();
    let new = NewItem { slug: Some("about".into()), body: "v1".into(), ..Default::default() };
    cms.create_item(Caller::Operator, &pages, new).await.unwrap();
    let v1 = world.content.get_raw("content/pages", "about.md").unwrap();

    // The first attempt's replace expects the answered stamp, which the file does not
    // have: stale, so the snapshot is unshared (holding what the attempt read) and the
    // write runs again.
    versions.shared.store(true, std::sync::atomic::Ordering::SeqCst);
    patch(&cms, "v2").await;
    let now = world.clock.now_unix();
    assert_eq!(*versions.unshared.lock().unwrap(), [(now, v1)]);
    assert_eq!(bodies(&cms).await, ["v1"], "one snapshot: the retry's is a repeat");
    let read = cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap();
    assert_eq!(read.doc.body, "v2");
}

fn principal(email: &str, key_name: Option<&str>) -> cms_core::policy::Principal {
    let user =
        cms_core::account::User { email: email.into(), role: cms_core::account::Role::Editor, created: 0 };
    cms_core::policy::Principal { user, key_id: "k".into(), key_name: key_name.map(str::to_owned) }
}

#[tokio::test]
async fn each_version_names_who_made_the_change_that_kept_it() {
    let (_world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    let update =
        |body: &str| ItemUpdate { mode: UpdateMode::Patch, fm: Frontmatter::new(), body: Some(body.into()) };
    let session = principal("ed@example.com", None);
    let key = principal("ann@example.com", Some("Deploy bot"));
    cms.update_item(&session, &pages, &item("about"), update("v2"), None).await.unwrap();
    cms.update_item(&key, &pages, &item("about"), update("v3"), None).await.unwrap();
    cms.delete_item(Caller::Operator, &pages, &item("about"), None).await.unwrap();
    let list = cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap();
    let authors: Vec<Option<&str>> = list.versions.iter().map(|v| v.author.as_deref()).collect();
    assert_eq!(authors, [Some("cms CLI"), Some("Deploy bot"), Some("ed@example.com")], "newest first");
    let newest = VersionId::new(list.versions[0].timestamp).unwrap();
    let read = cms.read_version(Caller::Operator, &pages, &item("about"), newest).await.unwrap();
    assert_eq!((read.doc.body.as_str(), read.stamp.author.as_deref()), ("v3", Some("cms CLI")));
    cms.restore_version(&session, &pages, &item("about"), newest, None).await.unwrap();
    // Replacing the restored text keeps nothing new (the newest version holds it already);
    // replacing that change keeps it, with its author.
    cms.update_item(&session, &pages, &item("about"), update("v4"), None).await.unwrap();
    cms.update_item(&session, &pages, &item("about"), update("v5"), None).await.unwrap();
    let list = cms.list_versions(Caller::Operator, &pages, &item("about")).await.unwrap();
    assert_eq!(list.versions[0].author.as_deref(), Some("ed@example.com"));
}

#[tokio::test]
async fn deleted_items_are_listed_by_name_a_page_at_a_time_with_their_newest_version() {
    let (_world, cms) = setup().await;
    let pages = cms.collection("pages").unwrap().clone();
    for slug in ["b-gone", "a-gone", "kept"] {
        let new = NewItem {
            slug: Some(slug.into()),
            fm: fm(json!({"title": format!("Title of {slug}")})),
            ..Default::default()
        };
        cms.create_item(Caller::Operator, &pages, new).await.unwrap();
    }
    patch(&cms, "v2").await;
    let editor = principal("ed@example.com", None);
    cms.delete_item(&editor, &pages, &item("b-gone"), None).await.unwrap();
    cms.delete_item(&editor, &pages, &item("a-gone"), None).await.unwrap();
    let first = cms.deleted_items(Caller::Operator, &pages, 1, 1).await.unwrap();
    assert_eq!(first.total, 2, "an item with a history and a file is not deleted");
    let deleted = &first.items[0];
    assert_eq!((deleted.filename.as_str(), deleted.title.as_str()), ("a-gone.md", "Title of a-gone"));
    assert_eq!(deleted.newest.author.as_deref(), Some("ed@example.com"));
    let second = cms.deleted_items(Caller::Operator, &pages, 2, 1).await.unwrap();
    assert_eq!(second.items[0].filename, "b-gone.md");
    assert!(cms.deleted_items(Caller::Operator, &pages, 3, 1).await.unwrap().items.is_empty());
    // Restored, it is no longer deleted.
    let version = VersionId::new(deleted.newest.timestamp).unwrap();
    cms.restore_version(&editor, &pages, &item("a-gone.md"), version, None).await.unwrap();
    assert_eq!(cms.deleted_items(Caller::Operator, &pages, 1, 20).await.unwrap().total, 1);
}
