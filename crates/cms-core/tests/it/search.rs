//! Full-text search through the facade: kept in step with the facade's writes and with
//! outside edits reported by the change feed, drafts for keys only, and its errors.

use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::policy::Caller;
use cms_core::query::Page;
use cms_core::service::{Cms, ItemUpdate, NewItem, SearchHit, SearchParams, SearchQuery, UpdateMode, Viewer};
use cms_core::testing::MemoryWorld;
use cms_core::testing::fixtures::item;
use serde_json::json;

const POSTS: &str = "content/posts";

async fn key_viewer(cms: &Cms) -> Viewer {
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [3; 32]).await.unwrap();
    Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap())
}

fn params(q: &str) -> SearchParams {
    SearchParams { q: Some(q.into()), ..SearchParams::default() }
}

/// The search of `params` as REST sends it: parsed, then asked of the facade.
async fn search(cms: &Cms, params: &SearchParams, viewer: &Viewer) -> Result<Page<SearchHit>, CoreError> {
    cms.search(&SearchQuery::parse(params)?, viewer).await
}

async fn found(cms: &Cms, q: &str, viewer: &Viewer) -> Vec<String> {
    let page = search(cms, &params(q), viewer).await.unwrap();
    page.items.iter().map(|hit| hit.item.meta.slug.to_string()).collect()
}

/// The excerpt of the first public hit.
async fn public_excerpt(cms: &Cms, q: &str) -> String {
    let page = search(cms, &params(q), &Viewer::Anonymous).await.unwrap();
    page.items[0].item.excerpt().to_owned()
}

fn new_item(title: &str, status: &str, body: &str) -> NewItem {
    NewItem {
        fm: json!({ "title": title, "status": status }).as_object().unwrap().clone(),
        body: body.into(),
        ..NewItem::default()
    }
}

#[tokio::test]
async fn search_follows_the_facades_writes_at_once() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let key = key_viewer(&cms).await;
    let posts = cms.collection("posts").unwrap();
    world.content.put_raw(
        POSTS,
        "2026-01-01-old.md",
        b"---\ntitle: Old\nstatus: published\n---\nPenguins.\n",
    );
    assert_eq!(found(&cms, "penguin", &Viewer::Anonymous).await, ["old"], "built from the files");

    cms.create_item(Caller::Operator, posts, new_item("Penguin draft", "draft", "Ice.")).await.unwrap();
    assert_eq!(found(&cms, "penguin", &Viewer::Anonymous).await, ["old"], "drafts are hidden without a key");
    assert_eq!(found(&cms, "penguin", &key).await, ["penguin-draft", "old"], "title above body");

    let update = ItemUpdate {
        mode: UpdateMode::Patch,
        fm: json!({ "title": "Walrus", "status": "published" }).as_object().unwrap().clone(),
        body: None,
    };
    cms.update_item(Caller::Operator, posts, &item("penguin-draft"), update, None).await.unwrap();
    assert_eq!(found(&cms, "walrus", &Viewer::Anonymous).await, ["penguin-draft"]);
    assert_eq!(found(&cms, "penguin", &key).await, ["old"], "the old title's words are gone");
    assert_eq!(found(&cms, "ice", &Viewer::Anonymous).await, ["penguin-draft"], "the body was kept");

    cms.delete_item(Caller::Operator, posts, &item("penguin-draft"), None).await.unwrap();
    assert!(found(&cms, "walrus", &key).await.is_empty());
    let hit = search(&cms, &params("penguins"), &key).await.unwrap();
    assert_eq!(hit.items[0].snippet, "<mark>Penguins</mark>.");
    assert_eq!(hit.items[0].url, "/blog/old");
}

/// A change of frontmatter alone, where the index keeps what it took from the body: the
/// item is still found by its body's words, shown to the public once published and hidden
/// again, with the body's excerpt or a written one.
#[tokio::test]
async fn a_change_of_frontmatter_alone_keeps_the_items_search_terms() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let key = key_viewer(&cms).await;
    let posts = cms.collection("posts").unwrap();
    cms.create_item(Caller::Operator, posts, new_item("Seal", "draft", "Ice *floes* drift.")).await.unwrap();
    assert!(found(&cms, "floe", &Viewer::Anonymous).await.is_empty(), "built: the draft is hidden");
    let patch = |fm: serde_json::Value| ItemUpdate {
        mode: UpdateMode::Patch,
        fm: fm.as_object().unwrap().clone(),
        body: None,
    };

    cms.update_item(
        Caller::Operator,
        posts,
        &item("seal"),
        patch(json!({ "status": "published", "n": 1 })),
        None,
    )
    .await
    .unwrap();
    assert_eq!(found(&cms, "floe", &Viewer::Anonymous).await, ["seal"], "published: shown");
    assert_eq!(public_excerpt(&cms, "floes").await, "Ice floes drift.");

    cms.update_item(
        Caller::Operator,
        posts,
        &item("seal"),
        patch(json!({ "excerpt": "A *written* one" })),
        None,
    )
    .await
    .unwrap();
    assert_eq!(public_excerpt(&cms, "floes").await, "A *written* one");
    cms.update_item(Caller::Operator, posts, &item("seal"), patch(json!({ "excerpt": null })), None)
        .await
        .unwrap();
    assert_eq!(public_excerpt(&cms, "floes").await, "Ice floes drift.", "the body's excerpt again");

    let put = ItemUpdate {
        mode: UpdateMode::Put,
        fm: json!({ "title": "Seal", "status": "draft" }).as_object().unwrap().clone(),
        body: Some("Ice *floes* drift.".into()),
    };
    cms.update_item(Caller::Operator, posts, &item("seal"), put, None).await.unwrap();
    assert!(found(&cms, "floe", &Viewer::Anonymous).await.is_empty(), "a draft again: hidden");
    assert_eq!(found(&cms, "floe", &key).await, ["seal"], "and still found with a key");
}

/// The kept body is the body of the file the write read: an outside edit the server has not
/// been told of yet is not hidden behind the index's older item.
#[tokio::test]
async fn a_change_of_frontmatter_over_an_unreported_edit_takes_the_new_body() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap();
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\nstatus: published\n---\nOtters swim.\n");
    assert_eq!(found(&cms, "otter", &Viewer::Anonymous).await, ["a"]);
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\nstatus: published\n---\nBeavers build.\n");
    let update = ItemUpdate {
        mode: UpdateMode::Patch,
        fm: json!({ "n": 1 }).as_object().unwrap().clone(),
        body: None,
    };
    cms.update_item(Caller::Operator, posts, &item("a"), update, None).await.unwrap();
    assert_eq!(found(&cms, "beaver", &Viewer::Anonymous).await, ["a"]);
    assert!(found(&cms, "otter", &Viewer::Anonymous).await.is_empty());
    assert_eq!(public_excerpt(&cms, "beavers").await, "Beavers build.");
}

#[tokio::test]
async fn search_follows_outside_edits_reported_by_the_store() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\n---\nOtters swim.\n");
    assert_eq!(found(&cms, "otter", &Viewer::Anonymous).await, ["a"]);
    world.content.put_raw(POSTS, "a.md", b"---\ntitle: A\n---\nBeavers build.\n");
    world.content.put_raw(POSTS, "b.md", b"---\ntitle: Otter\n---\n");
    world.settle(&cms).await;
    assert_eq!(found(&cms, "otter", &Viewer::Anonymous).await, ["b"]);
    assert_eq!(found(&cms, "beaver", &Viewer::Anonymous).await, ["a"]);
    world.content.remove_raw(POSTS, "b.md");
    world.settle(&cms).await;
    assert!(found(&cms, "otter", &Viewer::Anonymous).await.is_empty());
}

#[tokio::test]
async fn bad_search_input_is_refused_clearly() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let refused = |r: Result<_, CoreError>| r.map(|_: Page<_>| ()).unwrap_err().to_string();
    let anon = Viewer::Anonymous;
    assert!(refused(search(&cms, &SearchParams::default(), &anon).await).contains("q is required"));
    assert!(refused(search(&cms, &params(&"x".repeat(501)), &anon).await).contains("at most 500"));
    let page0 = SearchParams { page: Some("0".into()), ..params("x") };
    assert!(refused(search(&cms, &page0, &anon).await).contains("page must be"));
    let unknown = SearchParams { collection: Some("nope".into()), ..params("x") };
    assert!(matches!(search(&cms, &unknown, &anon).await, Err(CoreError::NotFound(_))));
    assert!(search(&cms, &params("?!"), &anon).await.unwrap().items.is_empty(), "no words: nothing");
}
