use cms_core::policy::Caller;
use cms_core::service::Precondition;
use cms_core::testing::fixtures::item;
use std::sync::atomic::Ordering;

use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::document::Frontmatter;
use cms_core::events::{EventData, EventKind, FileEvent};
use cms_core::query::{ListParams, ListQuery, OrderBy, StatusFilter, TextMatch};
use cms_core::service::{AheadSink, ItemUpdate, ItemView, NewItem, UpdateMode, Viewer};
use cms_core::testing::MemoryWorld;
use serde_json::{Value, json};

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

async fn keyed(world: &MemoryWorld) -> Viewer {
    let cms = world.cms();
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [9; 32]).await.unwrap();
    Viewer::Key(cms.authenticate(&key.plaintext).await.unwrap())
}

const POSTS: &str = "content/posts";

#[tokio::test]
async fn create_derives_slug_dates_the_file_and_defaults_to_draft() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    let out = cms
        .create_item(
            Caller::Operator,
            &posts,
            NewItem { fm: fm(json!({"title": "Hello, World!"})), body: "Hi".into(), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!((out.filename.as_str(), out.folder), ("2026-01-01-hello-world.md", 0));
    let text = String::from_utf8(world.content.get_raw(POSTS, &out.filename).unwrap()).unwrap();
    assert!(text.contains("status: draft"), "{text}");
    assert_eq!(
        crate::spec_fields(world.events.take()[0].data.clone()),
        EventData::File(FileEvent::new("2026-01-01-hello-world.md", 0))
    );

    let dated = cms
        .create_item(
            Caller::Operator,
            &posts,
            NewItem { fm: fm(json!({"title": "Old", "date": "2020-05-06"})), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(dated.filename, "2020-05-06-old.md");
    let undated = cms
        .create_item(
            Caller::Operator,
            &posts,
            NewItem { slug: Some("plain".into()), date_prefix: Some(false), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(undated.filename, "plain.md");
}

#[tokio::test]
async fn create_refuses_clashes_and_bad_input_without_writing() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    cms.create_item(Caller::Operator, &pages, NewItem { slug: Some("about".into()), ..Default::default() })
        .await
        .unwrap();
    let again = cms
        .create_item(Caller::Operator, &pages, NewItem { slug: Some("about".into()), ..Default::default() })
        .await;
    assert!(matches!(again, Err(CoreError::Conflict(_))));
    for bad in [
        NewItem::default(),
        NewItem { slug: Some("../x".into()), ..Default::default() },
        NewItem { slug: Some("a/b".into()), ..Default::default() },
        NewItem { slug: Some("a\0b".into()), ..Default::default() },
        NewItem { fm: fm(json!({"title": "!!!"})), ..Default::default() },
        NewItem { slug: Some("x".into()), fm: fm(json!({"tags": "a"})), ..Default::default() },
        NewItem { slug: Some("x".into()), fm: fm(json!({"folder": 3})), ..Default::default() },
    ] {
        assert!(matches!(cms.create_item(Caller::Operator, &pages, bad).await, Err(CoreError::Invalid(_))));
    }
    assert_eq!(cms.indexed_items(&pages).await.unwrap().len(), 1, "nothing else was written");
}

#[tokio::test]
async fn put_and_patch_merge_frontmatter_and_treat_body_differently() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("1").unwrap().clone();
    cms.create_item(
        Caller::Operator,
        &pages,
        NewItem {
            slug: Some("about".into()),
            fm: fm(json!({"title": "About", "tags": ["a"]})),
            body: "Body".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let patch = |fm_value: Value, body: Option<&str>, mode| ItemUpdate {
        mode,
        fm: fm(fm_value),
        body: body.map(str::to_owned),
    };

    cms.update_item(
        Caller::Operator,
        &pages,
        &item("about"),
        patch(json!({"status": "published", "tags": null}), None, UpdateMode::Patch),
        None,
    )
    .await
    .unwrap();
    let raw = cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap();
    assert_eq!(raw.doc.body, "Body", "PATCH without body keeps it");
    assert_eq!(raw.doc.fm, fm(json!({"title": "About", "status": "published"})), "null removed a key");

    cms.update_item(
        Caller::Operator,
        &pages,
        &item("about.md"),
        patch(json!({"author": "Ann"}), None, UpdateMode::Put),
        None,
    )
    .await
    .unwrap();
    let raw = cms.read_item_source(Caller::Operator, &pages, &item("about")).await.unwrap();
    assert_eq!(raw.doc.body, "", "PUT without body saves an empty body");
    assert_eq!(raw.doc.fm["author"], "Ann");

    let missing = cms
        .update_item(Caller::Operator, &pages, &item("nope"), patch(json!({}), None, UpdateMode::Put), None)
        .await;
    assert!(matches!(missing, Err(CoreError::NotFound(_))));
    let kinds: Vec<_> = world.events.take().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::FileCreated, EventKind::FileUpdated, EventKind::FileUpdated]);
}

#[tokio::test]
async fn if_match_guards_writes() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    let created = cms
        .create_item(Caller::Operator, &pages, NewItem { slug: Some("a".into()), ..Default::default() })
        .await
        .unwrap();
    let etag = created.etag.unwrap();
    let update = || ItemUpdate { mode: UpdateMode::Patch, fm: fm(json!({"title": "T"})), body: None };
    let stale = cms
        .update_item(
            Caller::Operator,
            &pages,
            &item("a"),
            update(),
            Some(&Precondition::from_if_match("\"0000\"")),
        )
        .await;
    assert!(matches!(stale, Err(CoreError::PreconditionFailed(_))));
    let fresh = cms
        .update_item(
            Caller::Operator,
            &pages,
            &item("a"),
            update(),
            Some(&Precondition::from_if_match(&etag)),
        )
        .await
        .unwrap();
    assert!(matches!(
        cms.delete_item(Caller::Operator, &pages, &item("a"), Some(&Precondition::from_if_match(&etag)))
            .await,
        Err(CoreError::PreconditionFailed(_))
    ));
    cms.delete_item(
        Caller::Operator,
        &pages,
        &item("a"),
        fresh.etag.as_deref().map(Precondition::from_if_match).as_ref(),
    )
    .await
    .unwrap();
    assert!(matches!(
        cms.read_item_source(Caller::Operator, &pages, &item("a")).await,
        Err(CoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn lists_filter_sort_and_paginate() {
    let world = MemoryWorld::new();
    let viewer = keyed(&world).await;
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    for (slug, date, status, tags, author) in [
        ("a", "2024-01-01", "published", json!(["Rust Lang"]), "ann"),
        ("b", "2024-02-01", "published", json!(["web"]), "bob"),
        ("c", "2024-03-01", "draft", json!(["rust-lang"]), "ann"),
        ("d", "2024-04-01", "published", json!([]), "ann"),
    ] {
        let item = NewItem {
            slug: Some(slug.into()),
            fm: fm(
                json!({"title": slug.to_uppercase(), "date": date, "status": status, "tags": tags, "author": author}),
            ),
            ..Default::default()
        };
        cms.create_item(Caller::Operator, &posts, item).await.unwrap();
    }
    let list = async |pairs: &[(&str, &str)], viewer: &Viewer| {
        let params = ListParams::from_pairs(pairs.iter().copied());
        let page = cms.list_items(&posts, &ListQuery::parse(&params).unwrap(), viewer).await?;
        Ok::<_, CoreError>(page.items.iter().map(|s| s.item.meta.slug.to_string()).collect::<Vec<_>>())
    };
    let anon = Viewer::Anonymous;
    assert_eq!(list(&[], &anon).await.unwrap(), ["d", "b", "a"], "published, newest first");
    assert_eq!(list(&[("direction", "asc")], &anon).await.unwrap(), ["a", "b", "d"]);
    assert_eq!(list(&[("tags", "rust-lang,web")], &anon).await.unwrap(), ["b", "a"]);
    assert_eq!(list(&[("author", "ann"), ("orderBy", "slug")], &anon).await.unwrap(), ["d", "a"]);
    assert_eq!(
        list(&[("status", "all"), ("per_page", "2"), ("page", "2")], &viewer).await.unwrap(),
        ["b", "a"]
    );
    assert_eq!(list(&[("status", "draft")], &viewer).await.unwrap(), ["c"]);
    assert!(matches!(list(&[("status", "draft")], &anon).await, Err(CoreError::Unauthorized(_))));
    assert!(matches!(list(&[("status", "all")], &anon).await, Err(CoreError::Unauthorized(_))));

    let page = cms
        .list_items(&posts, &ListQuery { per_page: Some(1000), ..Default::default() }, &anon)
        .await
        .unwrap();
    assert_eq!(page.per_page, 50, "per_page is clamped to max_per_page");
    assert_eq!(page.items[0].url, "/blog/d");
    assert_eq!(page.items[0].canonical_url, "https://example.com/blog/d");
}

/// What the web editor's list asks of the facade: newest first with each run of one date
/// (and the undated) by last change, a text condition, and the tags with their counts.
#[tokio::test]
async fn the_editors_list_orders_newest_first_by_last_change_and_matches_text() {
    let world = MemoryWorld::new();
    let viewer = keyed(&world).await;
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    for (name, modified, fields) in [
        ("old.md", 1, "title: Old news\ndate: 2024-01-01\nstatus: published\ntags: [Rust]"),
        ("same-a.md", 5, "title: Alpha\ndate: 2024-02-01\nstatus: published\nauthor: Zed"),
        ("same-b.md", 2, "title: Beta\ndate: 2024-02-01\nstatus: draft\ntags: [Web Dev]"),
        ("undated-x.md", 9, "title: Gamma\nstatus: published"),
        ("undated-y.md", 3, "title: Delta\nstatus: published\ntags: [rust]"),
    ] {
        world.content.now.store(1_700_000_000 + modified, Ordering::Relaxed);
        world.content.put_raw(POSTS, name, format!("---\n{fields}\n---\n\nx").as_bytes());
    }
    let newest = ListQuery { status: StatusFilter::All, order_by: OrderBy::Newest, ..Default::default() };
    let list = async |query: ListQuery| {
        let page = cms.list_items(&posts, &query, &viewer).await.unwrap();
        let names = page.items.iter().map(|s| s.item.meta.filename.to_string()).collect::<Vec<_>>();
        (names, page.total_items)
    };
    let all = list(newest.clone()).await.0;
    assert_eq!(all, ["same-a.md", "same-b.md", "old.md", "undated-x.md", "undated-y.md"]);
    let by_date = list(ListQuery { order_by: OrderBy::DatePublished, ..newest.clone() }).await.0;
    assert_eq!(
        by_date,
        ["same-b.md", "same-a.md", "old.md", "undated-y.md", "undated-x.md"],
        "the kept date order breaks ties by file name instead"
    );
    let second = list(ListQuery { page: 2, per_page: Some(2), ..newest.clone() }).await;
    assert_eq!(second, (vec!["old.md".to_owned(), "undated-x.md".to_owned()], 5));

    let text = |text: &str| ListQuery { text: TextMatch::new(text), ..newest.clone() };
    assert_eq!(TextMatch::new("  "), None, "a blank text is no condition");
    assert_eq!(list(text(" ALPHA ")).await.0, ["same-a.md"], "a title, ignoring case and blanks");
    assert_eq!(list(text("zed")).await.0, ["same-a.md"], "an author");
    assert_eq!(list(text("undated")).await.0, ["undated-x.md", "undated-y.md"], "a file name");
    assert_eq!(list(text("RUST")).await.0, ["old.md", "undated-y.md"], "a tag, equal ignoring case");
    assert_eq!(list(text("rus")).await.0, Vec::<String>::new(), "a tag must be equal, not contain it");
    let rust = vec!["rust".to_owned()];
    assert_eq!(list(ListQuery { tags: rust, ..text("undated") }).await, (vec!["undated-y.md".to_owned()], 1));
    let drafts = ListQuery { status: StatusFilter::Draft, ..text("beta") };
    assert_eq!(list(drafts).await.0, ["same-b.md"]);
    let published = ListQuery { status: StatusFilter::Published, ..text("beta") };
    assert_eq!(list(published).await.0, Vec::<String>::new());
    // The REST API's order is the kept date order; a text narrows it the same way.
    let published_text = ListQuery { text: TextMatch::new("a"), ..Default::default() };
    let page = cms.list_items(&posts, &published_text, &Viewer::Anonymous).await.unwrap();
    let names: Vec<_> = page.items.iter().map(|s| s.item.meta.filename.to_string()).collect();
    assert_eq!(names, ["same-a.md", "undated-y.md", "undated-x.md"]);

    let tags = async |viewer: Viewer| {
        let tags = cms.collection_tags(&posts, &viewer).await.unwrap();
        tags.into_iter().map(|t| (t.slug, t.tag, t.items)).collect::<Vec<_>>()
    };
    let rust = ("rust".to_owned(), "Rust".to_owned(), 2);
    assert_eq!(
        tags(viewer.clone()).await,
        [rust.clone(), ("web-dev".to_owned(), "Web Dev".to_owned(), 1)],
        "a draft's tags too, with a key; spelled as the newest item spells it"
    );
    assert_eq!(tags(Viewer::Anonymous).await, [rust], "the published items' only, without one");
}

#[tokio::test]
async fn drafts_are_invisible_without_a_key() {
    let world = MemoryWorld::new();
    let viewer = keyed(&world).await;
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    cms.create_item(Caller::Operator, &pages, NewItem { slug: Some("secret".into()), ..Default::default() })
        .await
        .unwrap();
    assert!(matches!(
        cms.read_item(&pages, &item("secret"), &Viewer::Anonymous).await,
        Err(CoreError::NotFound(_))
    ));
    assert_eq!(&*cms.read_item(&pages, &item("secret"), &viewer).await.unwrap().meta.slug, "secret");
}

#[tokio::test]
async fn the_index_reads_each_file_once_and_rereads_only_what_changed() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    for i in 0..20 {
        world.content.put_raw(
            "content/pages",
            &format!("p{i}.md"),
            format!("---\ntitle: P{i}\n---\n\nx").as_bytes(),
        );
    }
    let reads = || world.content.reads.load(Ordering::Relaxed);
    let anon = Viewer::Anonymous;
    let all = ListQuery { per_page: Some(50), ..Default::default() };
    let titles = async || -> Vec<String> {
        let page = cms.list_items(&pages, &all, &anon).await.unwrap();
        page.items.iter().map(|s| s.item.meta.title.to_string()).collect()
    };

    assert_eq!(titles().await.len(), 20);
    assert_eq!(reads(), 20, "building the index reads every file once");
    titles().await;
    cms.list_items(&pages, &ListQuery { order_by: OrderBy::Title, ..Default::default() }, &anon)
        .await
        .unwrap();
    assert_eq!(reads(), 20, "lists never read");

    assert_eq!(&*cms.read_item(&pages, &item("p1"), &anon).await.unwrap().meta.title, "P1");
    assert_eq!(reads(), 21, "a rendered read reads the file when its HTML is not cached");
    cms.read_item(&pages, &item("p1"), &anon).await.unwrap();
    cms.read_item(&pages, &item("p1.md"), &anon).await.unwrap();
    assert_eq!(reads(), 21, "the cached rendering of this version answers without a read");

    world.content.put_raw("content/pages", "p3.md", b"---\ntitle: Changed\n---\n");
    assert!(!titles().await.contains(&"Changed".to_owned()), "not seen before the change feed delivers it");
    assert_eq!(reads(), 21);
    // The 20 files put in place above were reported too (the facade was subscribed): the
    // settle stats them and finds their stamps indexed, so only p3 is read.
    world.settle(&cms).await;
    assert_eq!(reads(), 22, "exactly the changed file was read again");
    assert!(titles().await.contains(&"Changed".to_owned()), "seen once the change is delivered");
    assert_eq!(reads(), 22, "lists still never read");
    world.settle(&cms).await;
    assert_eq!(reads(), 22, "nothing pending, nothing read");

    cms.read_item(&pages, &item("p1"), &anon).await.unwrap();
    assert_eq!(reads(), 22, "an unchanged item stays cached");
    assert_eq!(&*cms.read_item(&pages, &item("p3"), &anon).await.unwrap().meta.title, "Changed");
    assert_eq!(reads(), 23, "the changed item is rendered from a new read");
    cms.read_item(&pages, &item("p3"), &anon).await.unwrap();
    assert_eq!(reads(), 23);
}

/// Keeps what `render_ahead` hands over.
#[derive(Default)]
struct Kept {
    views: std::sync::Mutex<Vec<ItemView>>,
    room: usize,
}

impl AheadSink for Kept {
    fn wants(&self, version: u64) -> bool {
        !self.views.lock().unwrap().iter().any(|view| view.version == version)
    }
    fn is_full(&self) -> bool {
        self.views.lock().unwrap().len() >= self.room
    }
    fn keep(&self, view: ItemView) {
        self.views.lock().unwrap().push(view);
    }
}

#[tokio::test]
async fn rendering_ahead_hands_over_each_live_item_as_a_read_would_show_it() {
    let world = MemoryWorld::new();
    let viewer = keyed(&world).await;
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    for i in 0..5 {
        let text = format!("---\ntitle: P{i}\n---\n\nBody *{i}*.");
        world.content.put_raw("content/pages", &format!("p{i}.md"), text.as_bytes());
    }
    world.content.put_raw("content/pages", "draft.md", b"---\ntitle: D\nstatus: draft\n---\n\nHidden.");
    world.content.put_raw("content/pages", "broken.md", b"---\ntitle: [unclosed\n---\n");
    let reads = || world.content.reads.load(Ordering::Relaxed);
    let anon = Viewer::Anonymous;

    let sink = Kept { room: 100, ..Kept::default() };
    assert_eq!(
        cms.render_ahead(&sink).await.unwrap(),
        5,
        "the live items; not the draft, not the broken file"
    );
    let views = std::mem::take(&mut *sink.views.lock().unwrap());
    for view in &views {
        let read = cms.read_item(&pages, &item(&view.meta.slug), &anon).await.unwrap();
        assert_eq!((&view.html, &view.fm, view.version), (&read.html, &read.fm, read.version));
        assert_eq!((&view.url, &view.etag, &view.meta), (&read.url, &read.etag, &read.meta));
        let version = cms.item_version(&pages, &item(&view.meta.slug), &anon).await.unwrap().unwrap();
        assert_eq!(version.version, view.version, "kept by the version a read asks for first");
    }
    let p3 = views.iter().find(|v| *v.meta.slug == *"p3").unwrap();
    assert_eq!(p3.html, "<p>Body <em>3</em>.</p>\n");
    *sink.views.lock().unwrap() = views;

    let before = reads();
    assert_eq!(cms.render_ahead(&sink).await.unwrap(), 0, "all kept: nothing rendered twice");
    assert_eq!(reads(), before, "and nothing read");
    let small = Kept { room: 0, ..Kept::default() };
    assert_eq!(cms.render_ahead(&small).await.unwrap(), 0, "a full sink stops it");
    // Bytes that are not the indexed version (a write in place racing the read) are not
    // handed over under the indexed version's name.
    world.content.overwrite_in_place("content/pages", "p4.md", b"---\ntitle: P4\n---\n\nRaced.");
    let fresh = Kept { room: 100, ..Kept::default() };
    assert_eq!(cms.render_ahead(&fresh).await.unwrap(), 4, "p4 is left to its first read");
    assert!(fresh.views.lock().unwrap().iter().all(|view| !view.html.contains("Raced")));

    // Reads keep their own renderings by file version: a new version is never answered
    // from an old one's.
    assert_eq!(cms.read_item(&pages, &item("draft"), &viewer).await.unwrap().html, "<p>Hidden.</p>\n");
    cms.update_item(
        Caller::Operator,
        &pages,
        &item("p0"),
        ItemUpdate { mode: UpdateMode::Patch, fm: Frontmatter::new(), body: Some("New *body*.".into()) },
        None,
    )
    .await
    .unwrap();
    let view = cms.read_item(&pages, &item("p0"), &anon).await.unwrap();
    assert_eq!((view.html.as_str(), view.fm["title"].as_str()), ("<p>New <em>body</em>.</p>\n", Some("P0")));
    world.content.put_raw("content/pages", "p1.md", b"---\ntitle: Outside\n---\n\nEdited.");
    world.settle(&cms).await;
    let view = cms.read_item(&pages, &item("p1"), &anon).await.unwrap();
    assert_eq!((view.html.as_str(), view.fm["title"].as_str()), ("<p>Edited.</p>\n", Some("Outside")));
}

#[tokio::test]
async fn broken_or_hostile_files_are_skipped_by_lists_and_reported_on_reads() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    world.content.put_raw("content/pages", "good.md", b"---\ntitle: Good\n---\n");
    world.content.put_raw("content/pages", "broken.md", b"---\ntitle: [unclosed\n---\n");
    let values = vec!["1"; 8000].join(",");
    let refs = vec!["*a"; 8000].join(",");
    let quadratic = format!("---\nanchor: &a [{values}]\nrefs: [{refs}]\n---\n");
    world.content.put_raw("content/pages", "quadratic.md", quadratic.as_bytes());
    world.content.put_raw("content/pages", "binary.md", &[0xff, 0xfe, 0x00]);

    let page = cms.list_items(&pages, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    let slugs: Vec<_> = page.items.iter().map(|s| s.item.meta.slug.as_ref()).collect();
    assert_eq!(slugs, ["good"]);
    for name in ["broken", "quadratic", "binary"] {
        let err = cms.read_item_source(Caller::Operator, &pages, &item(name)).await.unwrap_err();
        assert!(matches!(err, CoreError::Corrupt(_)), "{name}: {err:?}");
        let update = ItemUpdate { mode: UpdateMode::Patch, fm: fm(json!({"title": "x"})), body: None };
        assert!(cms.update_item(Caller::Operator, &pages, &item(name), update, None).await.is_err());
    }
    assert_eq!(world.content.get_raw("content/pages", "broken.md").unwrap(), b"---\ntitle: [unclosed\n---\n");
}

#[tokio::test]
async fn rendered_items_carry_html_excerpt_and_urls() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    world.content.put_raw(
        "content/posts",
        "2024-05-01-hi.md",
        b"---\ntitle: Hi\n---\n\n# Heading\n\nSome *text*.\n\n<script>alert(1)</script>\n",
    );
    let view = cms.read_item(&posts, &item("hi"), &Viewer::Anonymous).await.unwrap();
    assert!(view.html.contains("<h1>Heading</h1>") && !view.html.contains("<script"), "{}", view.html);
    assert_eq!(view.excerpt, "Heading Some text.");
    assert_eq!((view.url.as_str(), view.meta.date.as_deref()), ("/blog/hi", Some("2024-05-01")));
    assert_eq!(
        &*cms.read_item(&posts, &item("2024-05-01-hi.md"), &Viewer::Anonymous).await.unwrap().meta.slug,
        "hi"
    );
}

#[tokio::test]
async fn only_published_or_missing_status_is_public() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    for (name, fm_text) in [
        ("public", "title: P"),
        ("explicit", "status: published"),
        ("capital", "status: Draft"),
        ("private", "status: private"),
        ("hugo", "draft: true"),
        ("hugo-live", "draft: false"),
    ] {
        world.content.put_raw(
            "content/pages",
            &format!("{name}.md"),
            format!("---\n{fm_text}\n---\n").as_bytes(),
        );
    }
    let page = cms.list_items(&pages, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    let mut slugs: Vec<_> = page.items.iter().map(|s| s.item.meta.slug.to_string()).collect();
    slugs.sort();
    assert_eq!(slugs, ["explicit", "hugo-live", "public"]);
    for hidden in ["capital", "private", "hugo"] {
        assert!(
            matches!(
                cms.read_item(&pages, &item(hidden), &Viewer::Anonymous).await,
                Err(CoreError::NotFound(_))
            ),
            "{hidden}"
        );
    }
}

#[tokio::test]
async fn status_cannot_be_removed_by_a_null() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    cms.create_item(Caller::Operator, &pages, NewItem { slug: Some("d".into()), ..Default::default() })
        .await
        .unwrap();
    let update = ItemUpdate { mode: UpdateMode::Patch, fm: fm(json!({"status": null})), body: None };
    assert!(matches!(
        cms.update_item(Caller::Operator, &pages, &item("d"), update, None).await,
        Err(CoreError::Invalid(_))
    ));
    assert!(matches!(
        cms.read_item(&pages, &item("d"), &Viewer::Anonymous).await,
        Err(CoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn lists_and_single_reads_share_the_excerpt_rule() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let pages = cms.collection("pages").unwrap().clone();
    world.content.put_raw(
        "content/pages",
        "a.md",
        b"---\ndescription: From the frontmatter.\n---\n\nBody text.",
    );
    let listed = cms.list_items(&pages, &ListQuery::default(), &Viewer::Anonymous).await.unwrap();
    assert_eq!(listed.items[0].item.excerpt(), "From the frontmatter.");
    assert_eq!(
        cms.read_item(&pages, &item("a"), &Viewer::Anonymous).await.unwrap().excerpt,
        "From the frontmatter."
    );
}

/// An item's source is privileged as drafts are: checked against the policy table for a
/// key's user, open to the operator.
#[tokio::test]
async fn the_source_of_an_item_is_read_as_its_caller_may() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    let posts = cms.collection("posts").unwrap().clone();
    let draft =
        NewItem { fm: fm(json!({"title": "Secret"})), body: "Draft body".into(), ..Default::default() };
    let out = cms.create_item(Caller::Operator, &posts, draft).await.unwrap();
    let Viewer::Key(editor) = keyed(&world).await else { unreachable!("keyed answers a key") };
    assert!(cms_core::policy::may(&editor, cms_core::policy::Operation::ReadDrafts));
    let by_key = cms.read_item_source(&editor, &posts, &item(&out.slug)).await.unwrap();
    let by_operator = cms.read_item_source(Caller::Operator, &posts, &item(&out.slug)).await.unwrap();
    assert_eq!((by_key.doc.body.as_str(), &by_key.etag), ("Draft body", &by_operator.etag));
    let missing = cms.read_item_source(&editor, &posts, &item("nope")).await;
    assert!(matches!(missing, Err(CoreError::NotFound(_))), "{missing:?}");
}
