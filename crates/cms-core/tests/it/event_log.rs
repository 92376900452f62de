//! The event log (`cms_core::event_log`) through the facade: ids shared by every server of
//! a site, the same ids in webhooks' bodies, what anonymous readers see, and a reset past
//! what is kept.

use std::time::Duration;

use cms_core::CoreError;
use cms_core::event_log::{EventFilter, Next};
use cms_core::events::EventKind;
use cms_core::policy::Caller;
use cms_core::ports::Sharing;
use cms_core::service::{Cms, ItemUpdate, NewItem, Ports, UpdateMode, Viewer};
use cms_core::slug::ItemRef;
use cms_core::testing::{MemoryWorld, SITE_YAML};
use serde_json::json;

fn new_item(slug: &str, status: &str) -> NewItem {
    NewItem {
        slug: Some(slug.into()),
        date_prefix: Some(false),
        fm: [("title".into(), json!(slug)), ("status".into(), json!(status))].into_iter().collect(),
        body: "Body.".into(),
    }
}

async fn create(cms: &Cms, slug: &str, status: &str) {
    let posts = cms.collection("posts").unwrap().clone();
    cms.create_item(Caller::Operator, &posts, new_item(slug, status)).await.unwrap();
}

/// The next events a cursor gives, as (id, event, slug), waiting at most a second.
async fn next(cursor: &mut cms_core::event_log::EventCursor) -> Vec<(u64, EventKind, String)> {
    let found = tokio::time::timeout(Duration::from_secs(1), cursor.next()).await.expect("events in time");
    match found {
        Next::Events(events) => events
            .iter()
            .map(|e| (e.id(), e.kind(), e.file().unwrap().slug.clone().unwrap_or_default()))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn webhooks_carry_the_logs_ids_and_anonymous_cursors_skip_drafts() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let log = cms.event_log().clone();
    let mut anonymous = log.cursor(log.head().await.unwrap(), EventFilter::default());
    let mut keyed = log.cursor(0, EventFilter { sees_drafts: true, ..EventFilter::default() });
    create(&cms, "draft", "draft").await;
    create(&cms, "news", "published").await;
    let posts = cms.collection("posts").unwrap().clone();
    cms.delete_item(Caller::Operator, &posts, &ItemRef::parse("draft").unwrap(), None).await.unwrap();

    let sent: Vec<_> = world.events.take().iter().map(|e| (e.id, e.kind)).collect();
    assert_eq!(
        sent,
        [
            (Some(1), EventKind::FileCreated),
            (Some(2), EventKind::FileCreated),
            (Some(3), EventKind::FileDeleted)
        ],
        "webhooks get every event, with the log's id"
    );
    assert_eq!(next(&mut anonymous).await, [(2, EventKind::FileCreated, "news".into())], "no draft's event");
    assert_eq!(
        next(&mut keyed).await,
        [
            (1, EventKind::FileCreated, "draft".into()),
            (2, EventKind::FileCreated, "news".into()),
            (3, EventKind::FileDeleted, "draft".into())
        ]
    );
    assert_eq!(world.event_store.len(), 3);
}

#[tokio::test]
async fn servers_sharing_a_store_share_one_sequence_and_a_forgotten_place_resets() {
    let world = MemoryWorld::new();
    let shared = || Ports { sharing: Sharing::Servers, ..world.ports() };
    let a = world.cms_with_ports(SITE_YAML, shared());
    let b = world.cms_with_ports(SITE_YAML, shared());
    let b_log = b.event_log().clone();
    let mut on_b = b_log.cursor(b_log.head().await.unwrap(), EventFilter::default());

    create(&a, "from-a", "published").await;
    // B learns of A's event when it reads the store (its servers poll it).
    b.upkeep().catch_up_events().await.unwrap();
    assert_eq!(next(&mut on_b).await, [(1, EventKind::FileCreated, "from-a".into())]);
    create(&a, "from-a-again", "published").await;
    // B writes before it read A's second event: its event still comes after, and B's
    // readers get both, in order.
    world.settle(&b).await;
    create(&b, "from-b", "published").await;
    assert_eq!(
        next(&mut on_b).await,
        [(2, EventKind::FileCreated, "from-a-again".into()), (3, EventKind::FileCreated, "from-b".into())]
    );
    let ids: Vec<_> = world.events.take().iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(ids, [1, 2, 3], "each event announced once, by the server that made it");

    // Events older than `events.keep_hours` are forgotten (not the last): a reader that
    // resumes from before them is told to start again.
    world.clock.advance(25 * 3600);
    create(&a, "later", "published").await;
    a.upkeep().forget_old_events().await.unwrap();
    assert_eq!(world.event_store.len(), 1);
    // (A server keeps the newest events in memory too; one that just started has none.)
    let c = world.cms_with_ports(SITE_YAML, shared());
    let mut resumed = c.event_log().cursor(1, EventFilter::default());
    assert!(matches!(resumed.next().await, Next::Reset));
    assert_eq!(resumed.position(), 4);
    let mut current = c.event_log().cursor(3, EventFilter::default());
    assert_eq!(next(&mut current).await, [(4, EventKind::FileCreated, "later".into())]);
}

/// A server that streamed another server's event answers a read of its item with what the
/// event announced, before its own index has read the other's write (a bucket site's
/// servers read the change journal and the events at separate polls): an item created,
/// changed and deleted on A, read on B as soon as B's stream has the event. B's index is
/// never told of A's writes here but by the events.
#[tokio::test]
async fn an_item_read_on_its_event_from_another_server_is_what_the_event_announced() {
    let world = MemoryWorld::new();
    let shared = || Ports { sharing: Sharing::Servers, ..world.ports() };
    let a = world.cms_with_ports(SITE_YAML, shared());
    let b = world.cms_with_ports(SITE_YAML, shared());
    let posts = b.collection("posts").unwrap().clone();
    let item = ItemRef::parse("from-a").unwrap();
    let anyone = Viewer::Anonymous;
    b.list_items(&posts, &Default::default(), &anyone).await.unwrap();
    let b_log = b.event_log().clone();
    let mut on_b = b_log.cursor(b_log.head().await.unwrap(), EventFilter::default());

    create(&a, "from-a", "published").await;
    b.upkeep().catch_up_events().await.unwrap();
    assert_eq!(next(&mut on_b).await, [(1, EventKind::FileCreated, "from-a".into())]);
    assert!(b.item_version(&posts, &item, &anyone).await.unwrap().is_some(), "B's index has it now");
    assert_eq!(&*b.read_item(&posts, &item, &anyone).await.unwrap().meta.title, "from-a");

    let retitled = ItemUpdate {
        mode: UpdateMode::Patch,
        fm: [("title".into(), json!("Changed on A"))].into_iter().collect(),
        body: None,
    };
    a.update_item(Caller::Operator, &a.collection("posts").unwrap().clone(), &item, retitled, None)
        .await
        .unwrap();
    b.upkeep().catch_up_events().await.unwrap();
    assert_eq!(next(&mut on_b).await, [(2, EventKind::FileUpdated, "from-a".into())]);
    assert_eq!(&*b.read_item(&posts, &item, &anyone).await.unwrap().meta.title, "Changed on A");

    a.delete_item(Caller::Operator, &a.collection("posts").unwrap().clone(), &item, None).await.unwrap();
    b.upkeep().catch_up_events().await.unwrap();
    assert_eq!(next(&mut on_b).await, [(3, EventKind::FileDeleted, "from-a".into())]);
    assert!(matches!(b.read_item(&posts, &item, &anyone).await, Err(CoreError::NotFound(_))));
    assert!(world.events.take().iter().all(|e| e.id.is_some_and(|id| id <= 3)), "B announced nothing");

    // A mark no read took is dropped two catch-ups after it was made (the change feed,
    // which reads the store as often, has read the file by then; here a rescan stands in
    // for it).
    create(&a, "never-read", "published").await;
    let never_read = ItemRef::parse("never-read").unwrap();
    for _ in 0..3 {
        b.upkeep().catch_up_events().await.unwrap();
    }
    assert!(matches!(b.read_item(&posts, &never_read, &anyone).await, Err(CoreError::NotFound(_))));
    b.upkeep().rescan_all().await.unwrap();
    assert_eq!(&*b.read_item(&posts, &never_read, &anyone).await.unwrap().meta.title, "never-read");
}

/// Likewise a write: a PATCH on B of an item A created, sent on its event, finds it (and
/// keeps what A wrote).
#[tokio::test]
async fn an_item_written_on_its_event_from_another_server_is_found() {
    let world = MemoryWorld::new();
    let shared = || Ports { sharing: Sharing::Servers, ..world.ports() };
    let (a, b) = (world.cms_with_ports(SITE_YAML, shared()), world.cms_with_ports(SITE_YAML, shared()));
    let posts = b.collection("posts").unwrap().clone();
    b.list_items(&posts, &Default::default(), &Viewer::Anonymous).await.unwrap();
    b.event_log().head().await.unwrap();

    create(&a, "from-a", "published").await;
    b.upkeep().catch_up_events().await.unwrap();
    let item = ItemRef::parse("from-a").unwrap();
    let body =
        ItemUpdate { mode: UpdateMode::Patch, fm: Default::default(), body: Some("Written on B.".into()) };
    b.update_item(Caller::Operator, &posts, &item, body, None).await.unwrap();
    let raw = b.read_item_source(Caller::Operator, &posts, &item).await.unwrap();
    assert_eq!((raw.doc.fm["title"].as_str(), raw.doc.body.as_str()), (Some("from-a"), "Written on B."));
}

/// A reader of one collection is woken by that collection's events only, and skips the
/// others' unread: after more events of a busy collection than memory keeps, forgotten by
/// the store since, a quiet collection's reader still gets its own next event (it would
/// otherwise have read the busy ones back from the store, and been told to start again).
#[tokio::test]
async fn a_quiet_collections_reader_sleeps_through_a_busy_one_and_misses_nothing() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let log = cms.event_log().clone();
    let pages = cms.collection("pages").unwrap().clone();
    let posts = cms.collection("posts").unwrap().clone();
    let quiet = EventFilter { collection: Some(pages.index), sees_drafts: true, ..EventFilter::default() };
    let mut reader = log.cursor(log.head().await.unwrap(), quiet);
    create(&cms, "busy", "published").await;
    let busy = ItemRef::parse("busy").unwrap();
    for n in 0..4200 {
        let update =
            ItemUpdate { mode: UpdateMode::Patch, fm: Default::default(), body: Some(format!("{n}")) };
        cms.update_item(Caller::Operator, &posts, &busy, update, None).await.unwrap();
    }
    world.clock.advance(25 * 3600);
    cms.create_item(Caller::Operator, &pages, new_item("about", "published")).await.unwrap();
    cms.upkeep().forget_old_events().await.unwrap();
    assert_eq!(world.event_store.len(), 1, "the busy collection's events are forgotten");
    assert_eq!(next(&mut reader).await, [(4202, EventKind::FileCreated, "about".into())]);
}
