//! One road for every change: whatever made it (a write through the facade, an outside
//! edit, another node's write, a scheduled instant), each change to an item reaches every
//! subscriber of the change log once, numbered in order, and the webhooks announce what
//! this process is the one to announce.

use crate::spec_fields;
use std::sync::{Arc, Mutex};

use cms_core::changes::{Cause, Change, ChangeKind, ChangeSubscriber};
use cms_core::events::{EventData, EventKind, FileEvent};
use cms_core::policy::Caller;
use cms_core::ports::Sharing;
use cms_core::service::{
    Cms, ItemUpdate, NewItem, Ports, SearchParams, SearchQuery, UpdateMode, VersionId, Viewer,
};
use cms_core::testing::fixtures::item;
use cms_core::testing::{MemoryWorld, SITE_YAML};
use serde_json::json;

const POSTS: &str = "content/posts";

/// Keeps every change it is handed.
#[derive(Default)]
struct Recorder(Mutex<Vec<Change>>);

impl Recorder {
    fn take(&self) -> Vec<Change> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl ChangeSubscriber for Recorder {
    fn changed(&self, change: &Change) {
        self.0.lock().unwrap().push(change.clone());
    }
}

/// Two subscribers beside the built-in ones, so that "every subscriber" is tested.
fn followed(cms: &Cms) -> (Arc<Recorder>, Arc<Recorder>) {
    let (first, second) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    cms.change_log().subscribe(first.clone());
    cms.change_log().subscribe(second.clone());
    (first, second)
}

/// What a change says, in a comparable form.
fn said(change: &Change) -> (u64, ChangeKind, String, Cause, bool, bool) {
    (
        change.sequence,
        change.kind,
        change.filename.to_string(),
        change.cause.clone(),
        change.before.is_some(),
        change.after.is_some(),
    )
}

/// Both subscribers saw the same changes; answers them.
fn seen_by_both(first: &Recorder, second: &Recorder) -> Vec<(u64, ChangeKind, String, Cause, bool, bool)> {
    let (first, second): (Vec<_>, Vec<_>) =
        (first.take().iter().map(said).collect(), second.take().iter().map(said).collect());
    assert_eq!(first, second, "every subscriber sees every change once");
    first
}

fn events(world: &MemoryWorld) -> Vec<(EventKind, EventData)> {
    world.events.take().into_iter().map(|e| (e.kind, spec_fields(e.data))).collect()
}

fn file(kind: EventKind, filename: &str) -> (EventKind, EventData) {
    (kind, EventData::File(FileEvent::new(filename, 0)))
}

async fn found(cms: &Cms, words: &str, viewer: &Viewer) -> Vec<String> {
    let params = SearchParams { q: Some(words.into()), ..Default::default() };
    let page = cms.search(&SearchQuery::parse(&params).unwrap(), viewer).await.unwrap();
    page.items.iter().map(|hit| hit.item.meta.slug.to_string()).collect()
}

fn author(name: &str) -> Cause {
    Cause::Write { author: name.into(), email: None }
}

#[tokio::test]
async fn a_write_through_the_facade_is_one_change_per_write_with_its_author() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    cms.prepare_search().await.unwrap();
    let (first, second) = followed(&cms);
    let viewer = Viewer::Preview;

    let new = NewItem {
        slug: Some("zebra".into()),
        date_prefix: Some(false),
        fm: [("title".into(), json!("Zebra")), ("status".into(), json!("published"))].into_iter().collect(),
        body: "Stripes everywhere.".into(),
    };
    cms.create_item(Caller::Operator, &posts, new).await.unwrap();
    world.clock.advance(1);
    assert_eq!(found(&cms, "stripes", &viewer).await, ["zebra"], "search follows the log");
    let update = ItemUpdate {
        mode: UpdateMode::Patch,
        fm: [("title".into(), json!("Okapi"))].into_iter().collect(),
        body: None,
    };
    cms.update_item(Caller::Operator, &posts, &item("zebra"), update, None).await.unwrap();
    world.clock.advance(1);
    let versions = cms.list_versions(Caller::Operator, &posts, &item("zebra")).await.unwrap();
    cms.delete_item(Caller::Operator, &posts, &item("zebra"), None).await.unwrap();
    world.clock.advance(1);
    assert!(found(&cms, "stripes", &viewer).await.is_empty());
    let oldest = VersionId::new(versions.versions.last().unwrap().timestamp).unwrap();
    cms.restore_version(Caller::Operator, &posts, &item("zebra"), oldest, None).await.unwrap();

    let cli = author("cms CLI");
    assert_eq!(
        seen_by_both(&first, &second),
        [
            (1, ChangeKind::Created, "zebra.md".into(), cli.clone(), false, true),
            (2, ChangeKind::Updated, "zebra.md".into(), cli.clone(), true, true),
            (3, ChangeKind::Deleted, "zebra.md".into(), cli.clone(), true, false),
            // A restore is an update, as the spec's `file.updated` says, even of a deleted item.
            (4, ChangeKind::Updated, "zebra.md".into(), cli, false, true),
        ]
    );
    assert_eq!(
        events(&world),
        [
            file(EventKind::FileCreated, "zebra.md"),
            file(EventKind::FileUpdated, "zebra.md"),
            file(EventKind::FileDeleted, "zebra.md"),
            file(EventKind::FileUpdated, "zebra.md"),
        ]
    );
    assert_eq!(cms.change_log().last_sequence(), 4);
}

#[tokio::test]
async fn an_update_names_the_item_before_and_after_as_the_index_knew_it() {
    let world = MemoryWorld::new();
    world.content.put_raw(POSTS, "hello.md", b"---\ntitle: Hello\nstatus: draft\n---\nHi.\n");
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    cms.list_items(&posts, &Default::default(), &Viewer::Anonymous).await.unwrap();
    let (first, _second) = followed(&cms);

    let update = ItemUpdate {
        mode: UpdateMode::Patch,
        fm: [("status".into(), json!("published"))].into_iter().collect(),
        body: None,
    };
    cms.update_item(Caller::Operator, &posts, &item("hello"), update, None).await.unwrap();
    let change = first.take().pop().unwrap();
    let (before, after) = (change.before.unwrap(), change.after.unwrap());
    assert_eq!((before.live(), after.live()), (false, true));
    assert_eq!(&*after.item().unwrap().meta.title, "Hello");
    assert_ne!(before.item().unwrap().content, after.item().unwrap().content);
}

#[tokio::test]
async fn an_outside_edit_is_a_change_and_announced_unless_the_site_says_not() {
    for announce in [true, false] {
        let world = MemoryWorld::new();
        let cms = world.cms_with(&format!("{SITE_YAML}webhooks:\n  outside_edits: {announce}\n"));
        cms.prepare_search().await.unwrap();
        let (first, second) = followed(&cms);

        world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: Okapi\nstatus: published\n---\nForest.\n");
        world.settle(&cms).await;
        assert_eq!(found(&cms, "forest", &Viewer::Anonymous).await, ["okapi"]);
        world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: Okapi\nstatus: published\n---\nJungle.\n");
        world.settle(&cms).await;
        // A report of a file the index already holds changes nothing: no change.
        cms.upkeep().rescan(cms.collection("posts").unwrap()).await.unwrap();
        world.content.remove_raw(POSTS, "okapi.md");
        world.settle(&cms).await;
        assert!(found(&cms, "jungle", &Viewer::Anonymous).await.is_empty());

        let outside = Cause::OutsideEdit;
        assert_eq!(
            seen_by_both(&first, &second),
            [
                (1, ChangeKind::Created, "okapi.md".into(), outside.clone(), false, true),
                (2, ChangeKind::Updated, "okapi.md".into(), outside.clone(), true, true),
                (3, ChangeKind::Deleted, "okapi.md".into(), outside, true, false),
            ],
            "outside_edits: {announce}"
        );
        let expected = [
            file(EventKind::FileCreated, "okapi.md"),
            file(EventKind::FileUpdated, "okapi.md"),
            file(EventKind::FileDeleted, "okapi.md"),
        ];
        assert_eq!(events(&world), if announce { expected.to_vec() } else { Vec::new() });
    }
}

/// A file written again with the same bytes and time (a sync tool that rewrites what it
/// did not change) is no change: the index takes its new stamp, and nothing is announced.
/// (A new `modified` time is a change: lists show it and sort by it.)
#[tokio::test]
async fn a_file_saved_again_unchanged_is_no_change() {
    let world = MemoryWorld::new();
    let bytes = b"---\ntitle: Okapi\nstatus: published\n---\nForest.\n";
    world.content.put_raw(POSTS, "okapi.md", bytes);
    let cms = world.cms();
    cms.prepare_search().await.unwrap();
    let (first, _second) = followed(&cms);
    world.content.put_raw(POSTS, "okapi.md", bytes);
    world.settle(&cms).await;
    assert!(first.take().is_empty(), "no change");
    assert!(events(&world).is_empty());
    world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: Okapi\nstatus: draft\n---\nForest.\n");
    world.settle(&cms).await;
    assert_eq!(first.take().len(), 1, "a change of the bytes is one");
}

/// On a store that several servers share, every server finds an edit made without one:
/// each applies it (lists, search), and none announces it, rather than each.
#[tokio::test]
async fn an_outside_edit_of_a_shared_store_is_applied_but_not_announced() {
    let world = MemoryWorld::new();
    let ports = Ports { sharing: Sharing::Servers, ..world.ports() };
    let cms = world.cms_with_ports(SITE_YAML, ports);
    cms.prepare_search().await.unwrap();
    let (first, _second) = followed(&cms);
    world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: Okapi\nstatus: published\n---\nForest.\n");
    world.settle(&cms).await;
    assert_eq!(first.take().iter().map(|c| c.cause.clone()).collect::<Vec<_>>(), [Cause::OutsideEdit]);
    assert_eq!(found(&cms, "forest", &Viewer::Anonymous).await, ["okapi"]);
    assert!(events(&world).is_empty());
}

#[tokio::test]
async fn an_unusable_outside_edit_is_a_change_that_takes_the_item_out_of_search() {
    let world = MemoryWorld::new();
    world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: Okapi\nstatus: published\n---\nForest.\n");
    let cms = world.cms();
    cms.prepare_search().await.unwrap();
    let (first, _second) = followed(&cms);
    world.content.put_raw(POSTS, "okapi.md", b"---\ntitle: [unclosed\n---\nForest.\n");
    world.settle(&cms).await;
    let change = first.take().pop().unwrap();
    assert_eq!((change.kind, change.cause), (ChangeKind::Updated, Cause::OutsideEdit));
    assert!(change.before.unwrap().item().is_some() && change.after.unwrap().item().is_none());
    assert!(found(&cms, "forest", &Viewer::Anonymous).await.is_empty());
    assert_eq!(events(&world), [file(EventKind::FileUpdated, "okapi.md")]);
}

#[tokio::test]
async fn another_nodes_write_is_a_change_here_but_announced_by_that_node_only() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.prepare_search().await.unwrap();
    let (first, second) = followed(&cms);

    world.content.put_from_other_node(
        POSTS,
        "tapir.md",
        b"---\ntitle: Tapir\nstatus: published\n---\nSnout.\n",
    );
    world.settle(&cms).await;
    assert_eq!(
        seen_by_both(&first, &second),
        [(1, ChangeKind::Created, "tapir.md".into(), Cause::OtherNode, false, true)]
    );
    assert_eq!(found(&cms, "snout", &Viewer::Anonymous).await, ["tapir"], "search follows it");
    assert!(events(&world).is_empty(), "the node that wrote it announced it");
}

#[tokio::test]
async fn a_scheduled_instant_is_a_change_once_and_a_claimed_one_is_not_announced_again() {
    let world = MemoryWorld::new();
    for name in ["soon", "later"] {
        world.content.put_raw(
            POSTS,
            &format!("{name}.md"),
            format!("---\ntitle: {name}\nstatus: published\npublish_date: '2026-01-01T0{}:00:00Z'\n---\nHidden words.\n", if name == "soon" { 1 } else { 2 }).as_bytes(),
        );
    }
    let cms = world.cms();
    cms.upkeep().start().await.unwrap();
    cms.prepare_search().await.unwrap();
    // Another server already announced up to 01:30.
    let claimed = 1_767_225_600 + 5400;
    cms.upkeep().on_schedule_claim(move |_now| Some(claimed));
    let (first, second) = followed(&cms);

    world.clock.advance(3600);
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    world.clock.advance(3600);
    cms.upkeep().advance_schedule();
    cms.upkeep().publish_events().await;
    assert_eq!(
        seen_by_both(&first, &second),
        [
            (
                1,
                ChangeKind::Published,
                "soon.md".into(),
                Cause::Schedule { announced_elsewhere: true },
                true,
                true
            ),
            (
                2,
                ChangeKind::Published,
                "later.md".into(),
                Cause::Schedule { announced_elsewhere: false },
                true,
                true
            ),
        ]
    );
    assert_eq!(events(&world), [file(EventKind::ItemPublished, "later.md")]);
    assert_eq!(found(&cms, "hidden", &Viewer::Anonymous).await.len(), 2, "search follows visibility");
}

/// A change that came from outside to be written (a pulled commit, `cms-git`): written only
/// over the bytes its source last saw, the replaced version kept, and recorded once as an
/// outside edit; only the operator may ask.
#[tokio::test]
async fn an_incoming_change_is_written_over_what_its_source_saw_and_is_an_outside_edit() {
    use cms_core::service::Incoming;
    let world = MemoryWorld::new();
    let old = b"---\ntitle: Okapi\nstatus: published\n---\nForest.\n";
    let new = b"---\ntitle: Okapi\nstatus: published\n---\nJungle.\n";
    world.content.put_raw(POSTS, "okapi.md", old);
    let cms = world.cms();
    cms.prepare_search().await.unwrap();
    let posts = cms.collection("posts").unwrap().clone();
    let (first, second) = followed(&cms);
    let apply = |expected: Option<&'static [u8]>, incoming: Option<&'static [u8]>| {
        let (cms, posts) = (&cms, &posts);
        async move {
            cms.apply_incoming(
                Caller::Operator,
                posts,
                "okapi.md",
                expected,
                incoming,
                "git pull from origin",
            )
            .await
            .unwrap()
        }
    };

    // Not over bytes its source did not see: nothing is written.
    assert_eq!(apply(Some(b"something else"), Some(new)).await, Incoming::Diverged);
    assert_eq!(apply(None, Some(new)).await, Incoming::Diverged);
    assert_eq!(world.content.get_raw(POSTS, "okapi.md").unwrap(), old);
    assert_eq!(apply(Some(old), Some(old)).await, Incoming::Unchanged);
    assert_eq!(apply(Some(old), Some(new)).await, Incoming::Applied);
    assert_eq!(world.content.get_raw(POSTS, "okapi.md").unwrap(), new);
    assert_eq!(found(&cms, "jungle", &Viewer::Anonymous).await, ["okapi"], "search follows");
    let versions = cms.list_versions(Caller::Operator, &posts, &item("okapi")).await.unwrap();
    assert_eq!(versions.versions.len(), 1, "the replaced version is kept");
    assert_eq!(apply(Some(new), None).await, Incoming::Applied);
    assert_eq!(world.content.get_raw(POSTS, "okapi.md"), None);
    assert_eq!(apply(None, Some(new)).await, Incoming::Applied);

    let outside = Cause::OutsideEdit;
    assert_eq!(
        seen_by_both(&first, &second),
        [
            (1, ChangeKind::Updated, "okapi.md".into(), outside.clone(), true, true),
            (2, ChangeKind::Deleted, "okapi.md".into(), outside.clone(), true, false),
            (3, ChangeKind::Created, "okapi.md".into(), outside, false, true),
        ]
    );
    assert_eq!(
        events(&world),
        [
            file(EventKind::FileUpdated, "okapi.md"),
            file(EventKind::FileDeleted, "okapi.md"),
            file(EventKind::FileCreated, "okapi.md"),
        ]
    );
    let user = cms_core::account::User {
        email: "owner@example.com".into(),
        role: cms_core::account::Role::Owner,
        created: 0,
    };
    let owner = cms_core::policy::Principal { user, key_id: "k".into(), key_name: None };
    let refused = cms.apply_incoming(Caller::from(&owner), &posts, "okapi.md", Some(new), None, "x").await;
    assert!(matches!(refused, Err(cms_core::CoreError::Forbidden(_))), "{refused:?}");
}
