//! Scheduled and expiring items over in-memory ports with the fixed clock: hidden like
//! drafts outside their window on every public path, moved by `advance_schedule` with no
//! write and no rescan, one event per transition, once, even across a restart.

use crate::spec_fields;
use cms_core::policy::Caller;
use cms_core::testing::fixtures::item;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::events::{EventData, EventKind, FileEvent};
use cms_core::query::{ListParams, ListQuery};
use cms_core::service::{
    ItemUpdate, RssParams, SearchIndexParams, SearchParams, SearchQuery, SitemapParams, TagsParams,
    UpdateMode, Viewer,
};
use cms_core::testing::MemoryWorld;
use serde_json::json;

const POSTS: &str = "content/posts";
/// The memory world's clock: 2026-01-01T00:00:00Z.
const START: i64 = 1_767_225_600;

fn put(world: &MemoryWorld, name: &str, fm: &str) {
    world.content.put_raw(POSTS, name, format!("---\n{fm}\n---\nWords about zebras.\n").as_bytes());
}

fn query(pairs: &[(&str, &str)]) -> ListQuery {
    ListQuery::parse(&ListParams::from_pairs(pairs.iter().copied())).unwrap()
}

async fn keyed(cms: &cms_core::Cms) -> Viewer {
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [9; 32]).await.unwrap();
    Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap())
}

/// The slugs every public path shows.
async fn public_slugs(cms: &cms_core::Cms) -> Vec<Vec<String>> {
    let posts = cms.collection("posts").unwrap();
    let listed = cms.list_items(posts, &query(&[]), &Viewer::Anonymous).await.unwrap();
    let mut listed: Vec<String> = listed.items.iter().map(|s| s.item.meta.slug.to_string()).collect();
    listed.sort();
    let mut lists = vec![listed];
    let index = SearchIndexParams { collection_path: Some(POSTS.into()), ..Default::default() };
    lists.push(
        cms.search_index(&index).await.unwrap().into_iter().map(|e| e.item.meta.slug.to_string()).collect(),
    );
    let tags = TagsParams { content_path: Some(POSTS.into()), ..Default::default() };
    lists.push(
        cms.tags(&tags).await.unwrap().into_iter().map(|t| format!("{}:{}", t.slug, t.count)).collect(),
    );
    let rss = cms.rss(posts, &RssParams::default()).await.unwrap();
    let sitemap = cms.sitemap(posts, &SitemapParams::default()).await.unwrap();
    lists.push(
        ["soon", "ending", "always"]
            .iter()
            .filter(|s| rss.contains(&format!("/{s}<")))
            .map(|s| s.to_string())
            .collect(),
    );
    lists.push(
        ["soon", "ending", "always"]
            .iter()
            .filter(|s| sitemap.contains(&format!("/{s}<")))
            .map(|s| s.to_string())
            .collect(),
    );
    let search =
        SearchQuery::parse(&SearchParams { q: Some("zebras".into()), ..Default::default() }).unwrap();
    let mut found: Vec<String> = cms
        .search(&search, &Viewer::Anonymous)
        .await
        .unwrap()
        .items
        .iter()
        .map(|h| h.item.meta.slug.to_string())
        .collect();
    found.sort();
    lists.push(found);
    for slug in ["soon", "ending"] {
        let single = cms.read_item(posts, &item(slug), &Viewer::Anonymous).await;
        let anywhere = cms.read_item_anywhere(&item(slug)).await;
        let version = cms.item_version(posts, &item(slug), &Viewer::Anonymous).await;
        match (single, anywhere, version) {
            (Ok(_), Ok(_), Ok(Some(_))) => lists.push(vec![slug.to_owned()]),
            (Err(CoreError::NotFound(_)), Err(CoreError::NotFound(_)), Err(CoreError::NotFound(_))) => {}
            other => panic!("{slug}: the public reads disagree: {other:?}"),
        }
    }
    lists
}

fn site(world: &MemoryWorld) {
    put(world, "soon.md", "title: Soon\nstatus: published\ntags: [news]\npublish_date: 2026-01-01T01:00:00Z");
    put(
        world,
        "ending.md",
        "title: Ending\nstatus: published\ntags: [news]\nunpublish_date: '2026-01-01 03:00:00 +0100'",
    );
    put(world, "always.md", "title: Always\nstatus: published\ntags: [news]");
}

#[tokio::test]
async fn items_go_live_and_come_down_by_themselves_on_every_public_path() {
    let world = MemoryWorld::new();
    site(&world);
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    let editor = keyed(&cms).await;
    world.events.take();
    let before = public_slugs(&cms).await;
    assert_eq!(before[0], ["always", "ending"], "lists");
    assert_eq!(before[2], ["news:2"], "tags count only live items");
    assert!(before.iter().all(|list| !list.iter().any(|s| s.contains("soon"))), "{before:?}");

    // Editors see it, with its window, and can list what is scheduled.
    let view = cms.read_item(&posts, &item("soon"), &editor).await.unwrap();
    assert_eq!(view.meta.schedule.as_ref().unwrap().publish_at.unwrap().unix_timestamp(), START + 3600);
    let scheduled = cms.list_items(&posts, &query(&[("status", "scheduled")]), &editor).await.unwrap();
    assert_eq!(scheduled.items.iter().map(|s| s.item.meta.slug.as_ref()).collect::<Vec<_>>(), ["soon"]);
    let refused = cms.list_items(&posts, &query(&[("status", "scheduled")]), &Viewer::Anonymous).await;
    assert!(matches!(refused, Err(CoreError::Unauthorized(_))));

    // The timer's instant is the earliest; nothing moves before it.
    assert_eq!(cms.upkeep().next_scheduled_instant(), Some(START + 3600));
    let version = cms.list_items_version(&posts, &query(&[]), &Viewer::Anonymous).await.unwrap();
    world.clock.advance(3599);
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    assert!(world.events.take().is_empty());
    assert_eq!(public_slugs(&cms).await, before);

    world.clock.advance(1);
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    let events = world.events.take();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::ItemPublished);
    assert_eq!(spec_fields(events[0].data.clone()), EventData::File(FileEvent::new("soon.md", 0)));
    let live = public_slugs(&cms).await;
    assert_eq!(live[0], ["always", "ending", "soon"]);
    assert_eq!(live[2], ["news:3"]);
    assert_eq!(live[5], ["always", "ending", "soon"], "full-text search");
    assert_eq!(live[6], ["soon"]);
    assert_ne!(
        cms.list_items_version(&posts, &query(&[]), &Viewer::Anonymous).await.unwrap(),
        version,
        "kept answers change with visibility"
    );
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    assert!(world.events.take().is_empty(), "once per transition");

    // 03:00 +01:00 is 02:00Z.
    assert_eq!(cms.upkeep().next_scheduled_instant(), Some(START + 7200));
    world.clock.advance(3600);
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    let events = world.events.take();
    assert_eq!((events.len(), events[0].kind), (1, EventKind::ItemUnpublished));
    let after = public_slugs(&cms).await;
    assert_eq!(after[0], ["always", "soon"]);
    assert_eq!(cms.upkeep().next_scheduled_instant(), None);
    let scheduled = cms.list_items(&posts, &query(&[("status", "scheduled")]), &editor).await.unwrap();
    assert_eq!(scheduled.items.iter().map(|s| s.item.meta.slug.as_ref()).collect::<Vec<_>>(), ["ending"]);
}

#[tokio::test]
async fn a_restart_spanning_the_instant_announces_it_once() {
    let world = MemoryWorld::new();
    site(&world);
    let first = world.cms();
    first.upkeep().start().await.unwrap();
    let mark = first.upkeep().catch_up_schedule(None);
    first.upkeep().publish_events().await;
    assert!(world.events.take().is_empty(), "a first start announces nothing of the past");
    drop(first);

    // Stopped at 00:00, started at 02:30: both instants passed while no server ran.
    world.clock.advance(9000);
    let second = world.cms();
    second.upkeep().start().await.unwrap();
    let mark = second.upkeep().catch_up_schedule(Some(mark));
    second.upkeep().publish_events().await;
    let kinds: Vec<(EventKind, EventData)> =
        world.events.take().into_iter().map(|e| (e.kind, spec_fields(e.data))).collect();
    assert_eq!(
        kinds,
        [
            (EventKind::ItemPublished, EventData::File(FileEvent::new("soon.md", 0))),
            (EventKind::ItemUnpublished, EventData::File(FileEvent::new("ending.md", 0))),
        ]
    );
    drop(second);
    let third = world.cms();
    third.upkeep().start().await.unwrap();
    third.upkeep().catch_up_schedule(Some(mark));
    third.upkeep().publish_events().await;
    assert!(world.events.take().is_empty(), "never twice");
}

#[tokio::test]
async fn writes_wake_the_timer_and_bad_dates_are_refused() {
    let world = MemoryWorld::new();
    site(&world);
    let cms = world.cms();
    cms.upkeep().start().await.unwrap();
    let woken = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&woken);
    cms.upkeep().on_schedule_change(move || {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let posts = cms.collection("posts").unwrap().clone();
    let update = |value: serde_json::Value| ItemUpdate {
        fm: value.as_object().unwrap().clone(),
        body: None,
        mode: UpdateMode::Patch,
    };
    cms.update_item(
        Caller::Operator,
        &posts,
        &item("always"),
        update(json!({"publish_date": "2026-01-01T00:00:30Z"})),
        None,
    )
    .await
    .unwrap();
    assert_eq!(woken.load(Ordering::Relaxed), 1, "an earlier instant wakes the timer");
    assert_eq!(cms.upkeep().next_scheduled_instant(), Some(START + 30));
    cms.update_item(Caller::Operator, &posts, &item("always"), update(json!({"publish_date": null})), None)
        .await
        .unwrap();
    assert_eq!(cms.upkeep().next_scheduled_instant(), Some(START + 3600), "a removed instant is forgotten");

    for bad in [json!("tomorrow"), json!("2026-13-01"), json!(5), json!("2026-01-01T25:00:00Z")] {
        let error = cms
            .update_item(
                Caller::Operator,
                &posts,
                &item("always"),
                update(json!({"unpublish_date": bad})),
                None,
            )
            .await
            .unwrap_err();
        assert!(matches!(&error, CoreError::Invalid(m) if m.contains("fm.unpublish_date")), "{bad}: {error}");
    }
    // A hand-written date that names no instant hides the item rather than publish it.
    put(&world, "odd.md", "title: Odd\nstatus: published\npublish_date: someday");
    world.settle(&cms).await;
    assert!(matches!(
        cms.read_item(&posts, &item("odd"), &Viewer::Anonymous).await,
        Err(CoreError::NotFound(_))
    ));
}

/// A server killed right after a transition's event went out must not announce it again
/// on its next start: the instant reached is recorded before the events are published.
#[tokio::test]
async fn the_instant_reached_is_recorded_before_its_events_are_published() {
    let world = MemoryWorld::new();
    site(&world);
    let cms = world.cms();
    cms.upkeep().start().await.unwrap();
    let recorded = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (events, log) = (world.events.clone(), Arc::clone(&recorded));
    cms.upkeep().on_schedule_mark(move |at| log.lock().unwrap().push((at, events.take().len())));
    let start = cms.upkeep().catch_up_schedule(None);
    cms.upkeep().publish_events().await;
    world.clock.advance(3600);
    let reached = cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    assert_eq!(reached, START + 3600);
    assert_eq!(
        *recorded.lock().unwrap(),
        [(start, 0), (reached, 0)],
        "each mark recorded while no event of its transitions was out yet"
    );
    let published: Vec<EventKind> = world.events.take().into_iter().map(|e| e.kind).collect();
    assert_eq!(published, [EventKind::ItemPublished], "then the event");
}

/// Several servers on one shared store: the mark is a claim, and a transition at or before
/// the instant another server already announced up to is not announced again here, while
/// the visibility still moves (every server serves the item the same way).
#[tokio::test]
async fn transitions_another_server_announced_are_not_announced_again() {
    let world = MemoryWorld::new();
    site(&world);
    let cms = world.cms();
    cms.upkeep().start().await.unwrap();
    let claims = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&claims);
    // Another server rang at 01:00 and announced `soon`; this one rings at 02:30.
    cms.upkeep().on_schedule_claim(move |at| {
        log.lock().unwrap().push(at);
        Some(START + 3600)
    });
    world.clock.advance(9000);
    let reached = cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    assert_eq!(*claims.lock().unwrap(), [START + 9000]);
    assert_eq!(reached, START + 9000);
    let kinds: Vec<(EventKind, EventData)> =
        world.events.take().into_iter().map(|e| (e.kind, spec_fields(e.data))).collect();
    assert_eq!(
        kinds,
        [(EventKind::ItemUnpublished, EventData::File(FileEvent::new("ending.md", 0)))],
        "only what happened after 01:00"
    );
    assert_eq!(public_slugs(&cms).await[0], ["always", "soon"], "both transitions applied here");
}

/// A claim that says another server already announced past now: nothing is announced.
#[tokio::test]
async fn a_claim_past_now_announces_nothing_on_catch_up() {
    let world = MemoryWorld::new();
    site(&world);
    let cms = world.cms();
    cms.upkeep().start().await.unwrap();
    cms.upkeep().on_schedule_claim(|_| Some(START + 10_000));
    world.clock.advance(9000);
    cms.upkeep().catch_up_schedule(Some(START));
    cms.upkeep().publish_events().await;
    assert!(world.events.take().is_empty());
    assert_eq!(public_slugs(&cms).await[0], ["always", "soon"]);
}
