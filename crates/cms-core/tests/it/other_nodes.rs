//! Several servers share one store: a write from another node between this node's read and
//! its write must be merged, never silently overwritten (`ContentStore::replace` is
//! conditional and `update_item` retries on `Stale`).

use cms_core::policy::Caller;
use cms_core::service::Precondition;
use cms_core::service::VersionId;
use cms_core::testing::fixtures::item;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use cms_core::collection::Collection;
use cms_core::config::SiteConfig;
use cms_core::document::ItemDocument;
use cms_core::ports::{ContentStore, FileStamp, StoredFile};
use cms_core::service::{Cms, ItemUpdate, NewItem, UpdateMode};
use cms_core::slug::ItemFilename;
use cms_core::testing::{MemoryContentStore, MemoryWorld, SITE_YAML};
use cms_core::{CoreError, CoreResult};
use serde_json::{Value, json};

/// When the other node writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Interference {
    /// Just before this node's first replace: it adds `other: 1` to the frontmatter.
    FirstReplace,
    /// Just before every replace: it writes the same bytes again (a new version of the
    /// object with the same content, so the facade's replace is always stale).
    EveryReplace,
}

/// A memory store with another node writing to it at the worst moment.
struct OtherNode {
    inner: Arc<MemoryContentStore>,
    interference: Interference,
    replaces: AtomicUsize,
}

impl OtherNode {
    async fn write_in_between(&self, collection: &Collection, name: &ItemFilename) {
        let current = self.inner.read(collection, name).await.unwrap().expect("the item exists");
        let bytes = match self.interference {
            Interference::FirstReplace => {
                let mut doc = ItemDocument::parse(std::str::from_utf8(&current.bytes).unwrap()).unwrap();
                doc.fm.insert("other".into(), json!(1));
                doc.to_file_text().unwrap().into_bytes()
            }
            Interference::EveryReplace => current.bytes.clone(),
        };
        self.inner.replace(collection, name, &bytes, &current.stamp).await.unwrap();
    }
}

#[async_trait]
impl ContentStore for OtherNode {
    async fn scan(&self, collection: &Collection) -> CoreResult<Vec<FileStamp>> {
        self.inner.scan(collection).await
    }

    async fn stat(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<FileStamp>> {
        self.inner.stat(collection, name).await
    }

    async fn read(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<Option<StoredFile>> {
        self.inner.read(collection, name).await
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> CoreResult<FileStamp> {
        self.inner.create(collection, name, bytes).await
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> CoreResult<FileStamp> {
        let attempt = self.replaces.fetch_add(1, Ordering::SeqCst) + 1;
        if attempt == 1 || self.interference == Interference::EveryReplace {
            self.write_in_between(collection, name).await;
        }
        self.inner.replace(collection, name, bytes, expected).await
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> CoreResult<()> {
        self.inner.delete(collection, name).await
    }
}

/// A facade whose content store has another node writing to it, with the item `one`
/// (`title: One`) created; returns the item's ETag as created.
async fn setup(world: &MemoryWorld, interference: Interference) -> (Cms, Arc<OtherNode>, Collection, String) {
    let store =
        Arc::new(OtherNode { inner: world.content.clone(), interference, replaces: AtomicUsize::new(0) });
    let mut ports = world.ports();
    ports.content = store.clone();
    let cms = Cms::builder(&SiteConfig::from_yaml(SITE_YAML).unwrap(), ports).build();
    let pages = cms.collection("pages").unwrap().clone();
    let created = cms
        .create_item(
            Caller::Operator,
            &pages,
            NewItem {
                slug: Some("one".into()),
                fm: json!({"title": "One"}).as_object().unwrap().clone(),
                body: "Body.".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    (cms, store, pages, created.etag.unwrap())
}

fn patch(value: Value) -> ItemUpdate {
    ItemUpdate { mode: UpdateMode::Patch, fm: value.as_object().unwrap().clone(), body: None }
}

#[tokio::test]
async fn a_write_by_another_node_in_between_is_merged_not_lost() {
    let world = MemoryWorld::new();
    let (cms, store, pages, _) = setup(&world, Interference::FirstReplace).await;

    let outcome = cms
        .update_item(Caller::Operator, &pages, &item("one"), patch(json!({"mine": 2})), None)
        .await
        .unwrap();
    assert_eq!(store.replaces.load(Ordering::SeqCst), 2, "one stale attempt, then the write");

    let raw = cms.read_item_source(Caller::Operator, &pages, &item("one")).await.unwrap();
    assert_eq!(raw.doc.fm.get("other"), Some(&json!(1)), "the other node's write was lost");
    assert_eq!(raw.doc.fm.get("mine"), Some(&json!(2)));
    assert_eq!(raw.doc.fm["title"], "One");
    assert_eq!(raw.etag, outcome.etag.unwrap());

    // History holds what each write replaced, once: the created file and the other node's.
    let versions = cms.list_versions(Caller::Operator, &pages, &item("one")).await.unwrap().versions;
    assert_eq!(versions.len(), 2, "{versions:?}");
    let oldest = cms
        .read_version(Caller::Operator, &pages, &item("one"), VersionId::new(versions[1].timestamp).unwrap())
        .await
        .unwrap();
    assert_eq!(oldest.doc.fm.get("other"), None);
    let newest = cms
        .read_version(Caller::Operator, &pages, &item("one"), VersionId::new(versions[0].timestamp).unwrap())
        .await
        .unwrap();
    assert_eq!(newest.doc.fm.get("other"), Some(&json!(1)));
    assert_eq!(newest.doc.fm.get("mine"), None);
}

#[tokio::test]
async fn a_clients_if_match_is_checked_again_after_a_write_in_between() {
    let world = MemoryWorld::new();
    let (cms, store, pages, etag) = setup(&world, Interference::FirstReplace).await;

    let refused = cms
        .update_item(
            Caller::Operator,
            &pages,
            &item("one"),
            patch(json!({"mine": 2})),
            Some(&Precondition::from_if_match(&etag)),
        )
        .await;
    assert!(matches!(refused, Err(CoreError::PreconditionFailed(_))), "{refused:?}");
    assert_eq!(store.replaces.load(Ordering::SeqCst), 1);
    let raw = cms.read_item_source(Caller::Operator, &pages, &item("one")).await.unwrap();
    assert_eq!(raw.doc.fm.get("other"), Some(&json!(1)));
    assert_eq!(raw.doc.fm.get("mine"), None, "nothing was written on the client's stale ETag");
}

#[tokio::test]
async fn an_item_that_keeps_changing_gives_up_with_stale_after_eight_attempts() {
    let world = MemoryWorld::new();
    let (cms, store, pages, etag) = setup(&world, Interference::EveryReplace).await;

    let result =
        cms.update_item(Caller::Operator, &pages, &item("one"), patch(json!({"mine": 2})), None).await;
    let Err(CoreError::Stale(message)) = result else { panic!("expected Stale, got {result:?}") };
    assert!(message.contains("retry"), "{message}");
    assert_eq!(store.replaces.load(Ordering::SeqCst), 8, "eight attempts, no more");

    let raw = cms.read_item_source(Caller::Operator, &pages, &item("one")).await.unwrap();
    assert_eq!(raw.etag, etag, "nothing of this update was written");
    assert_eq!(raw.doc.fm.get("mine"), None);
    let versions = cms.list_versions(Caller::Operator, &pages, &item("one")).await.unwrap().versions;
    assert_eq!(versions.len(), 1, "the same content is kept once in the history: {versions:?}");
}
