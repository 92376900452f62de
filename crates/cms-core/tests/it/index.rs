//! The kept index through the facade: read-your-writes, outside edits delivered by the
//! change feed, per-item write serialization, ETags, and futures that can be spawned.

use cms_core::policy::Caller;
use cms_core::service::Precondition;
use cms_core::service::VersionId;
use cms_core::testing::fixtures::item;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::collection::Collection;
use cms_core::config::SiteConfig;
use cms_core::document::Frontmatter;
use cms_core::ports::{ChangeFeed, ContentStore, FileStamp, StorageChange, StoredFile};
use cms_core::query::{ListParams, ListQuery};
use cms_core::service::{
    Cms, Indexing, ItemUpdate, NewItem, RelatedParams, SearchIndexParams, TagsParams, UpdateMode, Viewer,
    etag_of,
};
use cms_core::slug::ItemFilename;
use cms_core::testing::{MemoryContentStore, MemoryWorld, SITE_YAML};
use futures_util::future::join_all;
use serde_json::{Value, json};

const POSTS: &str = "content/posts";

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

fn patch(value: Value) -> ItemUpdate {
    ItemUpdate { mode: UpdateMode::Patch, fm: fm(value), body: None }
}

fn query(pairs: &[(&str, &str)]) -> ListQuery {
    ListQuery::parse(&ListParams::from_pairs(pairs.iter().copied())).unwrap()
}

/// One list page as (filename, title, etag) rows, with the number of matches.
type Listed = (Vec<(String, String, String)>, usize);

async fn list(cms: &Cms, pairs: &[(&str, &str)], viewer: &Viewer) -> Listed {
    let posts = cms.collection("posts").unwrap();
    let page = cms.list_items(posts, &query(pairs), viewer).await.unwrap();
    let rows = page
        .items
        .iter()
        .map(|s| (s.item.meta.filename.to_string(), s.item.meta.title.to_string(), s.item.etag()))
        .collect();
    (rows, page.total_items)
}

async fn slugs(cms: &Cms, pairs: &[(&str, &str)], viewer: &Viewer) -> Vec<String> {
    let posts = cms.collection("posts").unwrap();
    let page = cms.list_items(posts, &query(pairs), viewer).await.unwrap();
    page.items.iter().map(|s| s.item.meta.slug.to_string()).collect()
}

async fn tag_slugs(cms: &Cms) -> Vec<String> {
    let params = TagsParams { content_path: Some(POSTS.into()), ..Default::default() };
    let mut tags: Vec<String> = cms.tags(&params).await.unwrap().into_iter().map(|t| t.slug).collect();
    tags.sort();
    tags
}

/// A viewer with a key (drafts visible), made through `cms`.
async fn editor(cms: &Cms) -> Viewer {
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [7; 32]).await.unwrap();
    Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap())
}

fn new_post(slug: &str, value: Value) -> NewItem {
    NewItem { slug: Some(slug.into()), fm: fm(value), body: format!("About {slug}."), ..Default::default() }
}

#[tokio::test]
async fn the_facades_own_writes_are_seen_by_the_very_next_request() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let viewer = editor(&cms).await;
    let anon = Viewer::Anonymous;
    let posts = cms.collection("posts").unwrap().clone();
    let by_title = [("orderBy", "title"), ("direction", "asc")];
    assert!(slugs(&cms, &[], &anon).await.is_empty(), "the index is built before the first write");

    let published = |title: &str, tags: Value, date: &str| {
        let fields = json!({"title": title, "status": "published", "tags": tags, "date": date});
        let mut fields = fm(fields);
        fields.insert("keep".into(), "me".into());
        Value::Object(fields)
    };
    cms.create_item(Caller::Operator, &posts, new_post("b", published("Bravo", json!(["x"]), "2024-01-02")))
        .await
        .unwrap();
    assert_eq!(slugs(&cms, &[], &anon).await, ["b"], "a create is listed at once");
    cms.create_item(Caller::Operator, &posts, new_post("a", published("Alpha", json!(["y"]), "2024-01-01")))
        .await
        .unwrap();
    cms.create_item(Caller::Operator, &posts, new_post("c", json!({"title": "Charlie", "tags": ["x"]})))
        .await
        .unwrap();
    assert_eq!(slugs(&cms, &[], &anon).await, ["b", "a"], "newest first; the draft is not public");
    assert_eq!(slugs(&cms, &by_title, &anon).await, ["a", "b"]);
    assert_eq!(slugs(&cms, &[("status", "all"), ("orderBy", "title")], &viewer).await, ["c", "b", "a"]);
    assert_eq!(slugs(&cms, &[("tags", "x")], &anon).await, ["b"]);
    assert_eq!(slugs(&cms, &[("tags", "x"), ("status", "all")], &viewer).await, ["c", "b"]);
    assert_eq!(tag_slugs(&cms).await, ["x", "y"]);

    // PATCH: a new title moves the item in title order, the tags are replaced, and the
    // keys the patch does not name stay.
    let out = cms
        .update_item(
            Caller::Operator,
            &posts,
            &item("b"),
            patch(json!({"title": "Aardvark", "tags": ["z"]})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(slugs(&cms, &by_title, &anon).await, ["b", "a"], "the new title is sorted at once");
    assert!(slugs(&cms, &[("tags", "x")], &anon).await.is_empty(), "a removed tag no longer matches");
    assert_eq!(slugs(&cms, &[("tags", "z")], &anon).await, ["b"], "a new tag matches");
    assert!(slugs(&cms, &[("tags", "x"), ("orderBy", "title")], &viewer).await.is_empty());
    assert_eq!(slugs(&cms, &[("tags", "x"), ("status", "all")], &viewer).await, ["c"]);
    assert_eq!(tag_slugs(&cms).await, ["y", "z"], "x is gone from the tag list, z is in it");
    let view = cms.read_item(&posts, &item("b"), &anon).await.unwrap();
    assert_eq!((view.meta.title.as_ref(), view.meta.tags.to_strings()), ("Aardvark", vec!["z".to_owned()]));
    assert_eq!(view.fm["keep"], "me", "PATCH merged the frontmatter");
    assert_eq!(Some(view.etag), out.etag);
    let raw = cms.read_item_source(Caller::Operator, &posts, &item("b")).await.unwrap();
    assert_eq!((raw.doc.fm["title"].as_str(), raw.doc.fm["keep"].as_str()), (Some("Aardvark"), Some("me")));

    // Publishing a draft makes it public at once; a null removes a key.
    cms.update_item(
        Caller::Operator,
        &posts,
        &item("c"),
        patch(json!({"status": "published", "tags": null})),
        None,
    )
    .await
    .unwrap();
    assert_eq!(slugs(&cms, &by_title, &anon).await, ["b", "a", "c"]);
    assert_eq!(&*cms.read_item(&posts, &item("c"), &anon).await.unwrap().meta.title, "Charlie");
    assert!(slugs(&cms, &[("tags", "x"), ("status", "all")], &viewer).await.is_empty());

    // Delete: gone from lists, tags and single reads at once; the slug is free again.
    cms.delete_item(Caller::Operator, &posts, &item("a"), None).await.unwrap();
    assert_eq!(slugs(&cms, &by_title, &anon).await, ["b", "c"]);
    assert!(slugs(&cms, &[("tags", "y")], &anon).await.is_empty());
    assert_eq!(tag_slugs(&cms).await, ["z"]);
    assert!(matches!(cms.read_item(&posts, &item("a"), &anon).await, Err(CoreError::NotFound(_))));
    assert!(matches!(
        cms.read_item_source(Caller::Operator, &posts, &item("a")).await,
        Err(CoreError::NotFound(_))
    ));
    cms.create_item(Caller::Operator, &posts, new_post("a", published("Again", json!(["y"]), "2024-03-01")))
        .await
        .unwrap();
    assert_eq!(slugs(&cms, &[("tags", "y")], &anon).await, ["a"]);
    assert_eq!(&*cms.read_item(&posts, &item("a"), &anon).await.unwrap().meta.title, "Again");

    // Restore: a deleted item comes back, an existing one goes back, both at once.
    cms.delete_item(Caller::Operator, &posts, &item("b"), None).await.unwrap();
    assert!(slugs(&cms, &[("tags", "z")], &anon).await.is_empty());
    let history = cms.list_versions(Caller::Operator, &posts, &item("2024-01-02-b.md")).await.unwrap();
    let newest = VersionId::new(history.versions[0].timestamp).unwrap();
    cms.restore_version(Caller::Operator, &posts, &item("2024-01-02-b.md"), newest, None).await.unwrap();
    assert_eq!(slugs(&cms, &[("tags", "z")], &anon).await, ["b"], "a restored item is listed at once");
    assert_eq!(tag_slugs(&cms).await, ["y", "z"]);
    let oldest = VersionId::new(history.versions.last().unwrap().timestamp).unwrap();
    cms.restore_version(Caller::Operator, &posts, &item("b"), oldest, None).await.unwrap();
    assert_eq!(&*cms.read_item(&posts, &item("b"), &anon).await.unwrap().meta.title, "Bravo");
    assert_eq!(slugs(&cms, &[("tags", "x")], &anon).await, ["b"], "the restored version's tags");
    assert_eq!(tag_slugs(&cms).await, ["x", "y"]);
}

#[tokio::test]
async fn outside_edits_are_seen_after_the_change_feed_delivers_them_as_a_fresh_build_sees_them() {
    let world = MemoryWorld::new();
    for (name, text) in [
        ("2024-01-01-a.md", "title: Delta\ntags: [x]\nauthor: ann"),
        ("2024-01-02-b.md", "title: Alpha\ntags: [y]"),
        ("2024-01-03-c.md", "title: Charlie\nstatus: draft\ntags: [x]"),
        ("2024-01-04-d.md", "title: Bravo\ntags: [x, y]\nauthor: ann"),
        ("2024-01-05-e.md", "title: Echo"),
    ] {
        world.content.put_raw(POSTS, name, format!("---\n{text}\n---\nBody of {name}.\n").as_bytes());
    }
    let cms = world.cms();
    let viewer = editor(&cms).await;
    let anon = Viewer::Anonymous;
    let queries: [(&[(&str, &str)], &Viewer); 8] = [
        (&[], &anon),
        (&[("status", "all")], &viewer),
        (&[("status", "draft")], &viewer),
        (&[("orderBy", "title")], &anon),
        (&[("tags", "x")], &anon),
        (&[("tags", "x,y"), ("orderBy", "title"), ("status", "all")], &viewer),
        (&[("author", "ann")], &anon),
        (&[("per_page", "2"), ("page", "2")], &anon),
    ];
    let mut before = Vec::new();
    for (pairs, viewer) in queries {
        before.push(list(&cms, pairs, viewer).await);
    }
    let tags_before = tag_slugs(&cms).await;

    world.content.put_raw(POSTS, "2024-01-06-f.md", b"---\ntitle: Aaron\ntags: [x]\n---\nNew.\n");
    world.content.put_raw(
        POSTS,
        "2024-01-02-b.md",
        b"---\ntitle: Zulu\ntags: [x]\nauthor: Ann\n---\nChanged.\n",
    );
    world.content.remove_raw(POSTS, "2024-01-04-d.md");
    for ((pairs, viewer), before) in queries.iter().zip(&before) {
        assert_eq!(&list(&cms, pairs, viewer).await, before, "{pairs:?} before the feed delivers");
    }
    assert_eq!(tag_slugs(&cms).await, tags_before);

    world.settle(&cms).await;
    let fresh = world.cms();
    for ((pairs, viewer), before) in queries.iter().zip(&before) {
        let got = list(&cms, pairs, viewer).await;
        assert_eq!(got, list(&fresh, pairs, viewer).await, "{pairs:?} after the feed delivered");
        if pairs.is_empty() {
            assert_ne!(&got, before, "the edits changed the default list");
        }
    }
    let titles: Vec<String> = list(&cms, &[], &anon).await.0.into_iter().map(|row| row.1).collect();
    assert_eq!(titles, ["Aaron", "Echo", "Zulu", "Delta"]);
    assert_eq!(tag_slugs(&cms).await, tag_slugs(&fresh).await);
    let search = SearchIndexParams { collection_path: Some(POSTS.into()), ..Default::default() };
    let search_slugs = async |cms: &Cms| -> Vec<String> {
        cms.search_index(&search).await.unwrap().into_iter().map(|e| e.item.meta.slug.to_string()).collect()
    };
    assert_eq!(search_slugs(&cms).await, search_slugs(&fresh).await);
    let posts = cms.collection("posts").unwrap();
    assert!(matches!(cms.read_item(posts, &item("d"), &anon).await, Err(CoreError::NotFound(_))));
    assert_eq!(cms.read_item(posts, &item("b"), &anon).await.unwrap().html, "<p>Changed.</p>\n");
}

#[tokio::test]
async fn follow_changes_applies_each_batch_of_a_feed() {
    struct Batches(Vec<Vec<StorageChange>>);

    #[async_trait]
    impl ChangeFeed for Batches {
        async fn next_batch(&mut self) -> Option<Vec<StorageChange>> {
            (!self.0.is_empty()).then(|| self.0.remove(0))
        }
    }

    let world = MemoryWorld::new();
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\n---\n");
    let cms = world.cms();
    assert_eq!(slugs(&cms, &[], &Viewer::Anonymous).await, ["a"]);
    world.content.put_raw(POSTS, "b.md", b"---\ntitle: B\n---\n");
    world.content.remove_raw(POSTS, "a.md");
    world.content.put_raw(POSTS, "c.md", b"---\ntitle: C\n---\n");
    let changes = world.content.take_changes();
    let (first, second) = changes.split_at(2);
    let rescan = vec![StorageChange::Rescan { collection: 0 }];
    cms.upkeep().follow_changes(Box::new(Batches(vec![first.to_vec(), second.to_vec(), rescan]))).await;
    let mut listed = slugs(&cms, &[("orderBy", "slug"), ("direction", "asc")], &Viewer::Anonymous).await;
    listed.sort();
    assert_eq!(listed, ["b", "c"]);

    // A rescan alone finds what no report named.
    world.content.put_raw(POSTS, "d.md", b"---\ntitle: D\n---\n");
    world.content.take_changes();
    cms.upkeep().follow_changes(Box::new(Batches(vec![vec![StorageChange::Rescan { collection: 0 }]]))).await;
    assert_eq!(
        slugs(&cms, &[("orderBy", "slug"), ("direction", "asc")], &Viewer::Anonymous).await,
        ["b", "c", "d"]
    );
}

#[tokio::test]
async fn a_read_answers_the_etag_the_write_returned() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let viewer = editor(&cms).await;
    let pages = cms.collection("pages").unwrap().clone();
    let stored_etag = || etag_of(&world.content.get_raw("content/pages", "e.md").unwrap());
    let listed_etag = async || -> String {
        let all = query(&[("status", "all")]);
        cms.list_items(&pages, &all, &viewer).await.unwrap().items[0].item.etag()
    };

    let created =
        cms.create_item(Caller::Operator, &pages, new_post("e", json!({"title": "E"}))).await.unwrap();
    let mut etag = created.etag.clone().unwrap();
    assert_eq!(cms.read_item(&pages, &item("e"), &viewer).await.unwrap().etag, etag);
    assert_eq!(cms.read_item_source(Caller::Operator, &pages, &item("e")).await.unwrap().etag, etag);
    assert_eq!(listed_etag().await, etag);
    assert_eq!(stored_etag(), etag, "the ETag is the stored bytes'");

    let put = ItemUpdate { mode: UpdateMode::Put, fm: fm(json!({"t": "x"})), body: Some("B".into()) };
    for (i, update) in [patch(json!({"n": 1})), put].into_iter().enumerate() {
        // Read first, so that a stale cached rendering would show.
        cms.read_item(&pages, &item("e"), &viewer).await.unwrap();
        let out = cms
            .update_item(
                Caller::Operator,
                &pages,
                &item("e"),
                update,
                Some(&Precondition::from_if_match(&etag)),
            )
            .await
            .unwrap();
        etag = out.etag.unwrap();
        assert_eq!(cms.read_item(&pages, &item("e"), &viewer).await.unwrap().etag, etag, "update {i}");
        assert_eq!(
            cms.read_item_source(Caller::Operator, &pages, &item("e")).await.unwrap().etag,
            etag,
            "update {i}"
        );
        assert_eq!(listed_etag().await, etag, "update {i}");
        assert_eq!(stored_etag(), etag, "update {i}");
    }

    let version = cms
        .list_versions(Caller::Operator, &pages, &item("e"))
        .await
        .unwrap()
        .versions
        .last()
        .unwrap()
        .timestamp;
    let (restored, _) = cms
        .restore_version(Caller::Operator, &pages, &item("e"), VersionId::new(version).unwrap(), None)
        .await
        .unwrap();
    let etag = restored.etag.unwrap();
    assert_eq!(etag, created.etag.unwrap(), "the oldest version is the created bytes");
    assert_eq!(cms.read_item(&pages, &item("e"), &viewer).await.unwrap().etag, etag);
    assert_eq!(listed_etag().await, etag);
}

/// A content store whose calls yield to the runtime, so that concurrent requests really
/// interleave, and that counts how many creates and replaces are in flight at once.
struct Interleaving {
    inner: Arc<MemoryContentStore>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl Interleaving {
    async fn counted<T>(&self, call: impl Future<Output = T>) -> T {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let out = call.await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

#[async_trait]
impl ContentStore for Interleaving {
    async fn scan(&self, collection: &Collection) -> cms_core::CoreResult<Vec<FileStamp>> {
        self.inner.scan(collection).await
    }

    async fn stat(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> cms_core::CoreResult<Option<FileStamp>> {
        tokio::task::yield_now().await;
        self.inner.stat(collection, name).await
    }

    async fn read(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> cms_core::CoreResult<Option<StoredFile>> {
        tokio::task::yield_now().await;
        self.inner.read(collection, name).await
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> cms_core::CoreResult<FileStamp> {
        self.counted(self.inner.create(collection, name, bytes)).await
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> cms_core::CoreResult<FileStamp> {
        self.counted(self.inner.replace(collection, name, bytes, expected)).await
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> cms_core::CoreResult<()> {
        tokio::task::yield_now().await;
        self.inner.delete(collection, name).await
    }
}

fn interleaving(world: &MemoryWorld) -> (Cms, Arc<Interleaving>) {
    let store = Arc::new(Interleaving {
        inner: world.content.clone(),
        in_flight: AtomicUsize::new(0),
        most_in_flight: AtomicUsize::new(0),
    });
    let mut ports = world.ports();
    ports.content = store.clone();
    (Cms::builder(&SiteConfig::from_yaml(SITE_YAML).unwrap(), ports).build(), store)
}

#[tokio::test]
async fn concurrent_patches_of_one_item_serialize_and_lose_nothing() {
    let world = MemoryWorld::new();
    let (cms, store) = interleaving(&world);
    let pages = cms.collection("pages").unwrap().clone();
    cms.create_item(Caller::Operator, &pages, new_post("one", json!({"title": "One"}))).await.unwrap();
    store.most_in_flight.store(0, Ordering::SeqCst);

    let one = item("one");
    let patches = (0..20)
        .map(|i| cms.update_item(Caller::Operator, &pages, &one, patch(json!({format!("k{i}"): i})), None));
    let outcomes: Vec<_> = join_all(patches).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(store.most_in_flight.load(Ordering::SeqCst), 1, "writes to one item never overlap");

    let raw = cms.read_item_source(Caller::Operator, &pages, &item("one")).await.unwrap();
    for i in 0..20 {
        assert_eq!(raw.doc.fm.get(&format!("k{i}")), Some(&json!(i)), "the PATCH adding k{i} was lost");
    }
    assert_eq!(raw.doc.fm["title"], "One");
    let mut etags: Vec<_> = outcomes.iter().map(|o| o.etag.clone().unwrap()).collect();
    assert!(etags.contains(&raw.etag), "the stored bytes are the last write's");
    etags.sort();
    etags.dedup();
    assert_eq!(etags.len(), 20, "each PATCH wrote on top of the previous one");
    let listed = cms.indexed_items(&pages).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].etag(), raw.etag, "the index holds the last write");
}

#[tokio::test]
async fn concurrent_writes_to_different_items_run_in_parallel() {
    let world = MemoryWorld::new();
    let (cms, store) = interleaving(&world);
    let posts = cms.collection("posts").unwrap().clone();

    let creates = (0..20).map(|i| {
        let date = format!("2024-02-{:02}", i + 1);
        cms.create_item(
            Caller::Operator,
            &posts,
            new_post(
                &format!("p{i}"),
                json!({"title": format!("P{i}"), "date": date, "status": "published"}),
            ),
        )
    });
    for outcome in join_all(creates).await {
        outcome.unwrap();
    }
    assert!(store.most_in_flight.load(Ordering::SeqCst) > 1, "creates of different items overlapped");
    let page = cms.list_items(&posts, &query(&[("per_page", "50")]), &Viewer::Anonymous).await.unwrap();
    assert_eq!(page.total_items, 20);
    assert_eq!(&*page.items[0].item.meta.slug, "p19");
    assert_eq!(world.content.file_count(), 20);

    store.most_in_flight.store(0, Ordering::SeqCst);
    let names: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let refs: Vec<_> = names.iter().map(|name| item(name)).collect();
    let patches = names.iter().zip(&refs).map(|(name, item_ref)| {
        cms.update_item(Caller::Operator, &posts, item_ref, patch(json!({"n": name})), None)
    });
    for outcome in join_all(patches).await {
        outcome.unwrap();
    }
    assert!(store.most_in_flight.load(Ordering::SeqCst) > 1, "updates of different items overlapped");

    // One slug is one item, whatever the date prefix: only one of these creates wins.
    let same = (1..=5).map(|day| {
        cms.create_item(
            Caller::Operator,
            &posts,
            new_post("same", json!({"title": "Same", "date": format!("2024-03-0{day}")})),
        )
    });
    let results = join_all(same).await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    assert!(results.iter().filter(|r| r.is_err()).all(|r| matches!(r, Err(CoreError::Conflict(_)))));
    assert_eq!(world.content.file_count(), 21);
}

fn assert_send<T: Send>(_: &T) {}

/// Compile-time: the facade's futures can be `tokio::spawn`ed (the server runs them on a
/// multi-threaded runtime). The futures are made and dropped, never polled.
#[test]
fn the_facades_futures_are_send() {
    struct NoFeed;

    #[async_trait]
    impl ChangeFeed for NoFeed {
        async fn next_batch(&mut self) -> Option<Vec<StorageChange>> {
            None
        }
    }

    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap();
    let anon = Viewer::Anonymous;
    let q = ListQuery::default();
    assert_send(&cms);
    assert_send(&cms.upkeep().start());
    assert_send(&cms.list_items(posts, &q, &anon));
    assert_send(&cms.read_item(posts, &item("a"), &anon));
    assert_send(&cms.read_item_source(Caller::Operator, posts, &item("a")));
    assert_send(&cms.create_item(Caller::Operator, posts, NewItem::default()));
    assert_send(&cms.update_item(Caller::Operator, posts, &item("a"), patch(json!({})), None));
    assert_send(&cms.delete_item(Caller::Operator, posts, &item("a"), None));
    assert_send(&cms.list_versions(Caller::Operator, posts, &item("a")));
    assert_send(&cms.restore_version(Caller::Operator, posts, &item("a"), VersionId::new(1).unwrap(), None));
    assert_send(&cms.indexed_items(posts));
    assert_send(&cms.upkeep().rescan_all());
    assert_send(&cms.upkeep().rescan(posts));
    assert_send(&cms.upkeep().apply_changes(vec![]));
    assert_send(&cms.upkeep().follow_changes(Box::new(NoFeed)));
    assert_send(&cms.search_index(&SearchIndexParams::default()));
    assert_send(&cms.tags(&TagsParams::default()));
    assert_send(&cms.related(&RelatedParams::default()));
    assert_send(&cms.authenticate("api_x"));
    assert_send(&cms.license_state());
    assert_send(&cms.begin_upload(Caller::Operator, 10));
}

#[tokio::test]
async fn facade_calls_run_in_spawned_tasks() {
    let world = MemoryWorld::new();
    let cms = Arc::new(world.cms());
    let task = {
        let cms = Arc::clone(&cms);
        tokio::spawn(async move {
            let pages = cms.collection("pages").unwrap();
            cms.create_item(
                Caller::Operator,
                pages,
                new_post("s", json!({"title": "S", "status": "published"})),
            )
            .await?;
            cms.list_items(pages, &ListQuery::default(), &Viewer::Anonymous).await
        })
    };
    assert_eq!(task.await.unwrap().unwrap().total_items, 1);
}

#[tokio::test]
async fn files_that_move_break_or_heal_outside_are_seen_after_settle() {
    let world = MemoryWorld::new();
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\ntags: [X, x]\n---\n");
    world.content.put_raw(POSTS, "broken.md", b"---\ntitle: [\n---\n");
    let cms = world.cms();
    let anon = Viewer::Anonymous;
    let posts = cms.collection("posts").unwrap().clone();
    assert_eq!(slugs(&cms, &[], &anon).await, ["a"]);
    assert!(matches!(cms.read_item(&posts, &item("broken"), &anon).await, Err(CoreError::Corrupt(_))));

    // Renamed to a dated file, and the broken file fixed.
    world.content.remove_raw(POSTS, "a.md");
    world.content.put_raw(POSTS, "2024-01-01-a.md", b"---\ntitle: A2\ntags: [y]\n---\n");
    world.content.put_raw(POSTS, "broken.md", b"---\ntitle: Healed\n---\n");
    world.settle(&cms).await;
    let fresh = world.cms();
    for pairs in [&[][..], &[("tags", "x")], &[("tags", "y")], &[("orderBy", "title")]] {
        assert_eq!(list(&cms, pairs, &anon).await, list(&fresh, pairs, &anon).await, "{pairs:?}");
    }
    assert_eq!(
        cms.read_item(&posts, &item("a"), &anon).await.unwrap().meta.filename.as_ref(),
        "2024-01-01-a.md"
    );
    assert_eq!(&*cms.read_item(&posts, &item("broken"), &anon).await.unwrap().meta.title, "Healed");

    // Broken again: unlisted, and a read says why.
    world.content.put_raw(POSTS, "broken.md", b"---\ntitle: [\n---\n");
    world.settle(&cms).await;
    assert_eq!(slugs(&cms, &[], &anon).await, ["a"]);
    assert!(matches!(cms.read_item(&posts, &item("broken"), &anon).await, Err(CoreError::Corrupt(_))));
}

#[tokio::test]
async fn concurrent_first_requests_build_the_index_once() {
    let world = MemoryWorld::new();
    for i in 0..5 {
        world.content.put_raw(POSTS, &format!("p{i}.md"), format!("---\ntitle: P{i}\n---\n").as_bytes());
    }
    let (cms, _store) = interleaving(&world);
    cms.upkeep().subscribe().unwrap();
    let posts = cms.collection("posts").unwrap().clone();
    let (q, anon) = (ListQuery::default(), Viewer::Anonymous);
    let lists = (0..10).map(|_| cms.list_items(&posts, &q, &anon));
    let creates = (0..3).map(|i| {
        cms.create_item(
            Caller::Operator,
            &posts,
            new_post(&format!("n{i}"), json!({"status": "published", "date": "2020-01-01"})),
        )
    });
    let (lists, creates) = tokio::join!(join_all(lists), join_all(creates));
    for page in lists {
        assert!((5..=8).contains(&page.unwrap().total_items));
    }
    for outcome in creates {
        outcome.unwrap();
    }
    assert_eq!(world.content.reads.load(Ordering::Relaxed), 5, "each file was read once, by one build");
    assert_eq!(cms.list_items(&posts, &q, &anon).await.unwrap().total_items, 8);

    // A change report applied while the API writes the same item: neither change is lost,
    // and the index ends as a fresh build sees the store.
    world.content.put_raw(POSTS, "2020-01-01-n1.md", b"---\ntitle: Outside\nstatus: published\n---\n");
    let changes = world.content.take_changes();
    assert_eq!(changes.len(), 1);
    let n1 = item("n1");
    let (applied, updated) = tokio::join!(
        cms.upkeep().apply_changes(changes),
        cms.update_item(Caller::Operator, &posts, &n1, patch(json!({"k": 1})), None)
    );
    applied.unwrap();
    updated.unwrap();
    let raw = cms.read_item_source(Caller::Operator, &posts, &item("n1")).await.unwrap();
    assert_eq!((raw.doc.fm["title"].as_str(), raw.doc.fm["k"].as_i64()), (Some("Outside"), Some(1)));
    let all = [("per_page", "50")];
    assert_eq!(list(&cms, &all, &anon).await, list(&world.cms(), &all, &anon).await);
}

/// Every item of the posts index, in filename order, as the index holds it.
async fn indexed(cms: &Cms) -> Vec<String> {
    let mut items: Vec<String> = cms
        .indexed_items(cms.collection("posts").unwrap())
        .await
        .unwrap()
        .iter()
        .map(|item| format!("{item:?}"))
        .collect();
    items.sort();
    items
}

/// A restart reads the saved snapshot and parses only what changed since: an edited, an
/// added and a removed file are all seen, and the index equals one built without it.
#[tokio::test]
async fn a_restart_reuses_the_snapshot_and_reparses_only_changed_files() {
    let world = MemoryWorld::new();
    for i in 0..20 {
        let text = format!(
            "---\ntitle: Post {i}\ntags: [t{}]\ndate: 2024-01-{:02} 10:00 +0100\n---\nBody {i}.\n",
            i % 3,
            i + 1
        );
        world.content.put_raw(POSTS, &format!("p{i}.md"), text.as_bytes());
    }
    world.content.put_raw(POSTS, "broken.md", b"---\ntitle: [\n---\n");
    world.content.take_changes();
    let first = world.cms();
    first.upkeep().start().await.unwrap();
    assert_eq!(first.upkeep().save_snapshots().await.unwrap(), 1, "posts (pages is empty: nothing to keep)");
    assert_eq!(first.upkeep().save_snapshots().await.unwrap(), 0, "nothing changed since");

    world.content.put_raw(POSTS, "p3.md", b"---\ntitle: Edited\n---\nNew body.\n");
    world.content.put_raw(POSTS, "new.md", b"---\ntitle: New\n---\n");
    world.content.remove_raw(POSTS, "p7.md");
    world.content.take_changes();
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let second = world.cms();
    second.upkeep().start().await.unwrap();
    assert_eq!(
        world.content.reads.load(Ordering::Relaxed) - reads_before,
        2,
        "only p3.md and new.md are read"
    );

    world.snapshots.corrupt(POSTS, b"not a snapshot");
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let fresh = world.cms();
    fresh.upkeep().start().await.unwrap();
    assert_eq!(
        world.content.reads.load(Ordering::Relaxed) - reads_before,
        21,
        "a bad snapshot: every file is read"
    );
    assert_eq!(indexed(&second).await, indexed(&fresh).await);
    assert_eq!(
        second.skipped_files().await,
        fresh.skipped_files().await,
        "the broken file is still reported"
    );
    assert_eq!(list(&second, &[], &Viewer::Anonymous).await, list(&fresh, &[], &Viewer::Anonymous).await);

    // The second server saves what it learned; a third start reads nothing.
    assert_eq!(second.upkeep().save_snapshots().await.unwrap(), 1);
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let third = world.cms();
    third.upkeep().start().await.unwrap();
    assert_eq!(world.content.reads.load(Ordering::Relaxed), reads_before);
    assert_eq!(indexed(&third).await, indexed(&fresh).await);
}

/// The lists a restart must answer as a fresh build does: orders, a tag, with drafts (for
/// a key of `email`, made here) and without.
async fn every_list(cms: &Cms, email: &str) -> Vec<Listed> {
    cms.add_user(Caller::Operator, email, Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, email, "t", [7; 32]).await.unwrap();
    let editor = Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap());
    let mut lists = Vec::new();
    for pairs in [
        &[("per_page", "100")][..],
        &[("per_page", "100"), ("orderBy", "title")],
        &[("per_page", "100"), ("orderBy", "title"), ("direction", "desc")],
        &[("per_page", "100"), ("tags", "t1")],
    ] {
        lists.push(list(cms, pairs, &Viewer::Anonymous).await);
        lists.push(list(cms, pairs, &editor).await);
    }
    lists
}

/// A restart builds the index of its snapshot while the folder is listed, then makes the
/// changes since: a few one by one into that index, more by building it again from what
/// it still holds and what it reads. Either way the index and every list equal a fresh
/// build's, and only the changed files are read.
#[tokio::test]
async fn a_restart_after_few_or_many_changes_equals_a_fresh_build() {
    let post = |i: usize, title: &str, day: usize| {
        format!(
            "---\ntitle: {title}\ntags: [t{}]\ndate: 2024-02-{day:02} 10:00 +0100\ndraft: {}\n---\nBody {i}.\n",
            i % 3,
            i.is_multiple_of(7)
        )
    };
    let world = MemoryWorld::new();
    // What the folder holds, for a fresh build beside each restart.
    let files: std::cell::RefCell<std::collections::BTreeMap<String, Vec<u8>>> = Default::default();
    let put = |name: String, bytes: Vec<u8>| {
        world.content.put_raw(POSTS, &name, &bytes);
        files.borrow_mut().insert(name, bytes);
    };
    for i in 0..100 {
        put(format!("p{i:03}.md"), post(i, &format!("Post {i}"), 1 + i % 28).into_bytes());
    }
    world.content.take_changes();
    let first = world.cms();
    first.upkeep().start().await.unwrap();
    first.upkeep().save_snapshots().await.unwrap();

    // 10 edited (new titles, dates, tags and drafts: they move in every order), one broken,
    // 5 removed and 5 added are 26 changes, made one by one into the snapshot's index;
    // then 70 edited and one added are more than 64, and the index is built again.
    for (round, edited, reads) in [(1, 10, 16), (2, 70, 71)] {
        for i in 0..edited {
            let title = format!("Edited {round} {i}");
            put(format!("p{i:03}.md"), post(i + 1, &title, 28 - i % 28).into_bytes());
        }
        if round == 1 {
            put("p050.md".to_owned(), b"---\ntitle: [\n---\n".to_vec());
            for i in 90..95 {
                world.content.remove_raw(POSTS, &format!("p{i:03}.md"));
                files.borrow_mut().remove(&format!("p{i:03}.md"));
            }
            for i in 100..105 {
                put(format!("p{i:03}.md"), post(i, "Added", 3).into_bytes());
            }
        } else {
            // A file added moves the folder's stamp: the start lists the folder.
            put("p200.md".to_owned(), post(200, "Added", 4).into_bytes());
        }
        world.content.take_changes();
        let reads_before = world.content.reads.load(Ordering::Relaxed);
        let restarted = world.cms();
        restarted.upkeep().start().await.unwrap();
        assert_eq!(world.content.reads.load(Ordering::Relaxed) - reads_before, reads, "round {round}");
        let fresh = MemoryWorld::new();
        for (name, bytes) in files.borrow().iter() {
            fresh.content.put_raw(POSTS, name, bytes);
        }
        fresh.content.take_changes();
        let fresh = fresh.cms();
        fresh.upkeep().start().await.unwrap();
        assert_eq!(indexed(&restarted).await, indexed(&fresh).await, "round {round}");
        let email = format!("ed{round}@example.com");
        assert_eq!(every_list(&restarted, &email).await, every_list(&fresh, &email).await, "round {round}");
        assert_eq!(restarted.skipped_files().await, fresh.skipped_files().await, "round {round}");
        assert_eq!(
            restarted.upkeep().save_snapshots().await.unwrap(),
            1,
            "round {round}: the changes are saved"
        );
    }
}

/// When no file was added, removed or renamed since the snapshot (the folder's stamp is the
/// one it recorded), a start answers from the snapshot alone, without listing the folder:
/// what it answers is the state the snapshot was taken in, with the folder's other files
/// still reported. Checking the snapshot then finds the edits made in place meanwhile,
/// reads only those, and announces them as outside edits; the index then equals a fresh
/// build's.
#[tokio::test]
async fn a_start_answers_from_the_snapshot_then_finds_edits_made_in_place() {
    let world = MemoryWorld::new();
    let post = |title: &str| format!("---\ntitle: {title}\nstatus: published\n---\nBody.\n");
    for i in 0..10 {
        world.content.put_raw(POSTS, &format!("p{i}.md"), post(&format!("Post {i}")).as_bytes());
    }
    world.content.put_raw(POSTS, "broken.md", b"---\ntitle: [\n---\n");
    world.content.put_raw(POSTS, "notes.txt", b"not an item");
    world.content.take_changes();
    let first = world.cms();
    first.upkeep().start().await.unwrap();
    first.upkeep().save_snapshots().await.unwrap();
    let skipped = first.skipped_files().await;
    assert_eq!(skipped.len(), 2, "{skipped:?}");

    world.content.put_raw(POSTS, "p3.md", post("Edited in place").as_bytes());
    world.content.take_changes();
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let second = world.cms();
    second.upkeep().start().await.unwrap();
    assert_eq!(world.content.reads.load(Ordering::Relaxed), reads_before, "no file is read");
    assert_eq!(indexed(&second).await, indexed(&first).await, "the snapshot's state");
    assert_eq!(second.skipped_files().await, skipped, "the other files as the snapshot recorded them");
    world.events.take();

    assert_eq!(second.upkeep().check_snapshot_starts().await.unwrap(), 1, "p3.md changed");
    assert_eq!(world.content.reads.load(Ordering::Relaxed) - reads_before, 1, "only p3.md is read");
    let titles: Vec<String> = list(&second, &[("per_page", "20")], &Viewer::Anonymous)
        .await
        .0
        .into_iter()
        .map(|row| row.1)
        .collect();
    assert!(titles.contains(&"Edited in place".to_owned()), "{titles:?}");
    let announced: Vec<_> = world.events.take().into_iter().map(|e| e.kind).collect();
    assert_eq!(announced, [cms_core::events::EventKind::FileUpdated], "the edit is an outside edit");
    let fresh = MemoryWorld::new();
    for i in 0..10 {
        let title = if i == 3 { "Edited in place".to_owned() } else { format!("Post {i}") };
        fresh.content.put_raw(POSTS, &format!("p{i}.md"), post(&title).as_bytes());
    }
    fresh.content.put_raw(POSTS, "broken.md", b"---\ntitle: [\n---\n");
    let fresh = fresh.cms();
    assert_eq!(indexed(&second).await, indexed(&fresh).await);
    assert_eq!(second.upkeep().check_snapshot_starts().await.unwrap(), 0, "checked once");
    assert_eq!(world.content.reads.load(Ordering::Relaxed) - reads_before, 1, "checked once");

    // A file added moves the folder's stamp: the next start lists the folder first.
    assert_eq!(second.upkeep().save_snapshots().await.unwrap(), 1);
    world.content.put_raw(POSTS, "p10.md", post("Added").as_bytes());
    world.content.take_changes();
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let third = world.cms();
    third.upkeep().start().await.unwrap();
    assert_eq!(world.content.reads.load(Ordering::Relaxed) - reads_before, 1, "p10.md is read at once");
    assert_eq!(indexed(&third).await.len(), 11, "ten and the added one");
}

/// Dates without an offset depend on `site.timezone`: a snapshot made under another zone
/// is not used.
#[tokio::test]
async fn a_snapshot_of_another_time_zone_is_not_used() {
    let world = MemoryWorld::new();
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\ndate: 2024-01-01\n---\n");
    world.content.take_changes();
    let utc = world.cms();
    utc.upkeep().start().await.unwrap();
    utc.upkeep().save_snapshots().await.unwrap();
    let berlin = SITE_YAML.replace("  per_page: 10\n", "  per_page: 10\n  timezone: Europe/Berlin\n");
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    let cms = world.cms_with(&berlin);
    cms.upkeep().start().await.unwrap();
    assert_eq!(world.content.reads.load(Ordering::Relaxed) - reads_before, 1);
    let items = cms.indexed_items(cms.collection("posts").unwrap()).await.unwrap();
    assert_eq!(items[0].meta.date_at.unwrap().offset().whole_hours(), 1);
}

/// A content store whose second `read_many` (the second batch of a build) waits until the
/// test lets it go, having said that it is there.
struct SecondBatchHeld {
    inner: Arc<MemoryContentStore>,
    batches: AtomicUsize,
    reached: std::sync::Mutex<Option<futures_channel::oneshot::Sender<()>>>,
    release: futures_util::lock::Mutex<Option<futures_channel::oneshot::Receiver<()>>>,
}

#[async_trait]
impl ContentStore for SecondBatchHeld {
    async fn scan(&self, collection: &Collection) -> cms_core::CoreResult<Vec<FileStamp>> {
        self.inner.scan(collection).await
    }

    async fn stat(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> cms_core::CoreResult<Option<FileStamp>> {
        self.inner.stat(collection, name).await
    }

    async fn read(
        &self,
        collection: &Collection,
        name: &ItemFilename,
    ) -> cms_core::CoreResult<Option<StoredFile>> {
        self.inner.read(collection, name).await
    }

    async fn read_many(
        &self,
        collection: &Collection,
        names: &[ItemFilename],
    ) -> Vec<cms_core::CoreResult<Option<StoredFile>>> {
        if self.batches.fetch_add(1, Ordering::SeqCst) == 1 {
            let _ = self.reached.lock().unwrap().take().unwrap().send(());
            let release = self.release.lock().await.take().unwrap();
            release.await.unwrap();
        }
        self.inner.read_many(collection, names).await
    }

    async fn create(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
    ) -> cms_core::CoreResult<FileStamp> {
        self.inner.create(collection, name, bytes).await
    }

    async fn replace(
        &self,
        collection: &Collection,
        name: &ItemFilename,
        bytes: &[u8],
        expected: &FileStamp,
    ) -> cms_core::CoreResult<FileStamp> {
        self.inner.replace(collection, name, bytes, expected).await
    }

    async fn delete(&self, collection: &Collection, name: &ItemFilename) -> cms_core::CoreResult<()> {
        self.inner.delete(collection, name).await
    }
}

/// While `start` builds the indexes it says how far it is (files indexed of those found),
/// from the moment it is called until it is done; a facade nobody started says nothing.
#[tokio::test]
async fn start_reports_its_progress_until_done() {
    let world = MemoryWorld::new();
    for i in 0..2100 {
        world.content.put_raw(POSTS, &format!("p{i:04}.md"), format!("---\ntitle: P{i}\n---\n").as_bytes());
    }
    world.content.take_changes();
    let (reached_tx, reached_rx) = futures_channel::oneshot::channel();
    let (release_tx, release_rx) = futures_channel::oneshot::channel();
    let store = Arc::new(SecondBatchHeld {
        inner: world.content.clone(),
        batches: AtomicUsize::new(0),
        reached: std::sync::Mutex::new(Some(reached_tx)),
        release: futures_util::lock::Mutex::new(Some(release_rx)),
    });
    let mut ports = world.ports();
    ports.content = store;
    let cms = Cms::builder(&SiteConfig::from_yaml(SITE_YAML).unwrap(), ports).build();
    assert_eq!(cms.indexing(), None, "not started: indexes are built on first use");

    let starting = cms.upkeep().start();
    assert_eq!(cms.indexing(), Some(Indexing { indexed: 0, found: 0 }), "indexing from the call on");
    let watch = async {
        reached_rx.await.unwrap();
        let during = cms.indexing();
        release_tx.send(()).unwrap();
        during
    };
    let (started, during) = futures_util::future::join(starting, watch).await;
    started.unwrap();
    assert_eq!(during, Some(Indexing { indexed: 2048, found: 2100 }), "one batch of the posts read");
    assert_eq!(cms.indexing(), None, "done");
    assert_eq!(cms.indexed_items(cms.collection("posts").unwrap()).await.unwrap().len(), 2100);
}

/// The slugs a public search for `words` finds.
async fn searched(cms: &Cms, words: &str) -> Vec<String> {
    let params = cms_core::service::SearchParams { q: Some(words.into()), ..Default::default() };
    let query = cms_core::service::SearchQuery::parse(&params).unwrap();
    let page = cms.search(&query, &Viewer::Anonymous).await.unwrap();
    let mut slugs: Vec<String> = page.items.iter().map(|hit| hit.item.meta.slug.to_string()).collect();
    slugs.sort();
    slugs
}

/// A restart reads the saved search index instead of every item file: only the files
/// changed since it was saved are read, and a search finds what a fresh build would.
#[tokio::test]
async fn a_restart_reads_the_saved_search_index_and_only_the_files_changed_since() {
    let world = MemoryWorld::new();
    for i in 0..10 {
        let text = format!("---\ntitle: Post {i}\nstatus: published\n---\nA walrus, number {i}.\n");
        world.content.put_raw(POSTS, &format!("p{i}.md"), text.as_bytes());
    }
    world.content.take_changes();
    let first = world.cms();
    first.upkeep().start().await.unwrap();
    first.prepare_search().await.unwrap();
    assert_eq!(world.snapshots.search_saves.load(Ordering::Relaxed), 1, "posts, once built");
    assert_eq!(first.upkeep().save_snapshots().await.unwrap(), 1, "the index; search is saved already");

    world.content.put_raw(POSTS, "p3.md", b"---\ntitle: Edited\nstatus: published\n---\nA narwhal.\n");
    world.content.put_raw(POSTS, "new.md", b"---\ntitle: New\nstatus: published\n---\nA walrus too.\n");
    world.content.remove_raw(POSTS, "p7.md");
    world.content.take_changes();
    let second = world.cms();
    second.upkeep().start().await.unwrap();
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    second.prepare_search().await.unwrap();
    assert_eq!(
        world.content.reads.load(Ordering::Relaxed) - reads_before,
        2,
        "only p3.md and new.md are read"
    );
    let walruses = ["new", "p0", "p1", "p2", "p4", "p5", "p6", "p8", "p9"];
    assert_eq!(searched(&second, "walrus").await, walruses);
    assert_eq!(searched(&second, "narwhal").await, ["p3"]);
    assert_eq!(world.snapshots.search_saves.load(Ordering::Relaxed), 2, "what it read again is saved");

    // A third start reads no file at all, and finds the same.
    let third = world.cms();
    third.upkeep().start().await.unwrap();
    let reads_before = world.content.reads.load(Ordering::Relaxed);
    third.prepare_search().await.unwrap();
    assert_eq!(world.content.reads.load(Ordering::Relaxed), reads_before);
    assert_eq!(searched(&third, "walrus").await, walruses);
    assert_eq!(world.snapshots.search_saves.load(Ordering::Relaxed), 2, "nothing new to save");
}
