use actix_web::test::TestRequest;
use serde_json::{Value, json};

use crate::Harness;

fn post_json(h: &Harness, uri: &str, body: Value) -> TestRequest {
    TestRequest::post().uri(uri).insert_header(h.bearer()).set_json(body)
}

async fn seed(h: &Harness) {
    for (slug, status, date) in [
        ("first", "published", "2024-01-01"),
        ("second", "published", "2024-02-01"),
        ("hidden", "draft", "2024-03-01"),
    ] {
        let body = json!({"slug": slug, "fm": {"title": slug.to_uppercase(), "status": status, "date": date, "tags": ["Rust"]}, "body": format!("# {slug}\n\nText of {slug}.")});
        let reply = h.send(post_json(h, "/cms/collections/posts/items", body)).await;
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    }
}

#[actix_web::test]
async fn create_answers_filename_folder_message_and_location() {
    let h = Harness::setup().await;
    let reply = h
        .send(post_json(
            &h,
            "/cms/collections/0/items",
            json!({"fm": {"title": "Hello World"}, "body": "Hi"}),
        ))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"filename": "2026-01-01-hello-world.md", "folder": 0, "message": "File created."})
    );
    assert_eq!(reply.header("location"), Some("/cms/collections/posts/items/hello-world"));
    assert!(reply.header("etag").unwrap().starts_with('"'));

    let again =
        h.send(post_json(&h, "/cms/collections/posts/items", json!({"fm": {"title": "Hello World"}}))).await;
    again.assert_editor_error(409, "already exists");
}

#[actix_web::test]
async fn list_returns_entries_and_meta() {
    let h = Harness::setup().await;
    seed(&h).await;
    let reply = h.send(TestRequest::get().uri("/cms/collections/posts/items?per_page=1")).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_eq!(body["success"], true);
    assert_eq!(
        body["meta"],
        json!({"currentPage": 1, "lastPage": 2, "totalItems": 2, "perPage": 1, "has_prev": false, "has_next": true})
    );
    let entry = &body["data"][0];
    assert_eq!(entry["slug"], "second");
    assert_eq!(entry["title"], "SECOND");
    assert_eq!(entry["url"], "/blog/second");
    assert_eq!(entry["canonicalUrl"], "https://example.com/blog/second");
    assert_eq!(entry["date"], "2024-02-01");
    assert_eq!(entry["status"], "published");

    let past = h.send(TestRequest::get().uri("/cms/collections/posts/items?page=9")).await.json();
    assert_eq!(past["data"], json!([]));
    assert_eq!(past["meta"]["lastPage"], 1);

    let all = h
        .send(TestRequest::get().uri("/cms/collections/posts/items?status=all").insert_header(h.bearer()))
        .await;
    assert_eq!(all.json()["meta"]["totalItems"], 3);
    h.send(TestRequest::get().uri("/cms/collections/posts/items?status=draft"))
        .await
        .assert_envelope_error(401, "needs an API key");
}

#[actix_web::test]
async fn single_read_renders_and_sends_an_etag() {
    let h = Harness::setup().await;
    seed(&h).await;
    let reply = h.send(TestRequest::get().uri("/cms/collections/posts/items/first")).await;
    assert_eq!(reply.status, 200);
    let data = reply.json()["data"].clone();
    assert_eq!(data["slug"], "first");
    assert_eq!(data["filename"], "2024-01-01-first.md");
    assert_eq!(data["body_html"], "<h1>first</h1>\n<p>Text of first.</p>\n");
    assert_eq!(data["frontmatter"]["tags"], json!(["Rust"]));
    assert_eq!(data["excerpt"], "first Text of first.");
    assert_eq!(data["tags"], json!(["Rust"]));
    assert!(data["modified"].is_i64());
    let etag = reply.header("etag").unwrap().to_owned();

    let by_file =
        h.send(TestRequest::get().uri("/cms/collections/blog-posts/items/2024-01-01-first.md")).await;
    assert_eq!(by_file.status, 404, "unknown collection slug");
    let by_file = h.send(TestRequest::get().uri("/cms/collections/Posts/items/2024-01-01-first.md")).await;
    assert_eq!(by_file.status, 200, "full filename and any-case collection slug work");

    let cached = h
        .send(
            TestRequest::get()
                .uri("/cms/collections/posts/items/first")
                .insert_header(("If-None-Match", etag)),
        )
        .await;
    assert_eq!(cached.status, 304);

    h.send(TestRequest::get().uri("/cms/collections/posts/items/hidden"))
        .await
        .assert_envelope_error(404, "no item");
    let keyed =
        h.send(TestRequest::get().uri("/cms/collections/posts/items/hidden").insert_header(h.bearer())).await;
    assert_eq!(keyed.status, 200, "drafts are visible with a key");
}

#[actix_web::test]
async fn raw_read_is_editor_shaped_and_needs_a_key() {
    let h = Harness::setup().await;
    seed(&h).await;
    h.send(TestRequest::get().uri("/cms/collections/posts/items/first/raw"))
        .await
        .assert_editor_error(401, "API key");
    let reply = h
        .send(TestRequest::get().uri("/cms/collections/posts/items/first/raw").insert_header(h.bearer()))
        .await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_eq!(body["slug"], "first");
    assert_eq!(body["folder"], 0);
    assert_eq!(
        body["fm"],
        json!({"title": "FIRST", "status": "published", "date": "2024-01-01", "tags": ["Rust"]})
    );
    assert_eq!(body["body"], "# first\n\nText of first.");
    assert!(body["size"].as_u64().unwrap() > 0 && body["modified"].is_i64());
    assert!(reply.header("etag").is_some());
}

#[actix_web::test]
async fn put_patch_and_delete() {
    let h = Harness::setup().await;
    seed(&h).await;
    h.world.events.take();
    let uri = "/cms/collections/posts/items/first";
    let raw = || TestRequest::get().uri("/cms/collections/posts/items/first/raw").insert_header(h.bearer());

    let patch = TestRequest::patch()
        .uri(uri)
        .insert_header(h.bearer())
        .set_json(json!({"fm": {"tags": null, "author": "Ann"}}));
    let reply = h.send(patch).await;
    assert_eq!(
        reply.json(),
        json!({"filename": "2024-01-01-first.md", "folder": 0, "message": "File saved."})
    );
    let body = h.send(raw()).await.json();
    assert_eq!(body["body"], "# first\n\nText of first.", "PATCH keeps the body");
    assert_eq!(
        body["fm"],
        json!({"title": "FIRST", "status": "published", "date": "2024-01-01", "author": "Ann"})
    );

    let put =
        TestRequest::put().uri(uri).insert_header(h.bearer()).set_json(json!({"fm": {"status": "draft"}}));
    assert_eq!(h.send(put).await.status, 200);
    let read = h.send(raw()).await;
    assert_eq!(read.json()["body"], "", "PUT without body saves an empty body");
    let etag = read.header("etag").unwrap().to_owned();

    let stale = TestRequest::put()
        .uri(uri)
        .insert_header(h.bearer())
        .insert_header(("If-Match", "\"stale\""))
        .set_json(json!({"body": "x"}));
    h.send(stale).await.assert_editor_error(412, "does not match");
    let fresh = TestRequest::put()
        .uri(uri)
        .insert_header(h.bearer())
        .insert_header(("If-Match", etag))
        .set_json(json!({"body": "x"}));
    assert_eq!(h.send(fresh).await.status, 200);

    let missing = TestRequest::put()
        .uri("/cms/collections/posts/items/nope")
        .insert_header(h.bearer())
        .set_json(json!({}));
    h.send(missing).await.assert_editor_error(404, "no item");

    let delete = || TestRequest::delete().uri(uri).insert_header(h.bearer());
    assert_eq!(h.send(delete()).await.json(), json!({"ok": true, "message": "File deleted."}));
    h.send(delete()).await.assert_editor_error(404, "no item");

    let kinds: Vec<&str> = h.world.events.take().iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["file.updated", "file.updated", "file.updated", "file.deleted"]);
}

#[actix_web::test]
async fn lists_carry_a_strong_etag_and_answer_304_while_unchanged() {
    let h = Harness::setup().await;
    seed(&h).await;
    let uri = "/cms/collections/posts/items?per_page=1";
    let first = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("a list has an ETag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34, "strong, quoted: {etag}");
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert!(first.json()["timestamp"].is_string(), "the envelope keeps its timestamp");

    let again = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(again.header("etag"), Some(etag.as_str()), "identical requests, identical ETag");
    let other_page = h.send(TestRequest::get().uri("/cms/collections/posts/items?per_page=1&page=2")).await;
    assert_ne!(other_page.header("etag"), Some(etag.as_str()), "another page, another ETag");
    let all = TestRequest::get().uri("/cms/collections/posts/items?status=all").insert_header(h.bearer());
    let keyed = h.send(all).await;
    let public = h.send(TestRequest::get().uri("/cms/collections/posts/items")).await;
    assert_ne!(keyed.header("etag"), public.header("etag"), "drafts included, another ETag");

    for if_none_match in [etag.clone(), format!("\"other\", {etag}"), "*".to_owned()] {
        let cached =
            h.send(TestRequest::get().uri(uri).insert_header(("If-None-Match", if_none_match))).await;
        assert_eq!(cached.status, 304);
        assert_eq!(cached.header("etag"), Some(etag.as_str()));
        assert!(cached.body.is_empty());
    }
    let stale = h.send(TestRequest::get().uri(uri).insert_header(("If-None-Match", "\"stale\""))).await;
    assert_eq!((stale.status.as_u16(), stale.header("etag")), (200, Some(etag.as_str())));

    // A create changes the list: a new ETag, and the old one gets the whole page again.
    let create = TestRequest::post().uri("/cms/collections/posts/items").insert_header(h.bearer()).set_json(
        json!({"slug": "newest", "fm": {"title": "Newest", "status": "published", "date": "2024-12-01"}}),
    );
    assert_eq!(h.send(create).await.status, 200);
    let changed = h.send(TestRequest::get().uri(uri).insert_header(("If-None-Match", etag.clone()))).await;
    assert_eq!(changed.status, 200);
    assert_eq!(changed.json()["data"][0]["slug"], "newest");
    let new_etag = changed.header("etag").unwrap().to_owned();
    assert_ne!(new_etag, etag);
    let cached = h.send(TestRequest::get().uri(uri).insert_header(("If-None-Match", new_etag))).await;
    assert_eq!(cached.status, 304);
}

/// Lists and items are answered from serialized bodies kept by version: a write and an
/// outside edit are both seen by the very next read, never an old body.
#[actix_web::test]
async fn kept_answers_follow_every_change() {
    let h = Harness::setup().await;
    seed(&h).await;
    answers_follow_every_change(&h).await;
}

/// The same with answers made ahead of the reads, as a server makes them after start-up.
#[actix_web::test]
async fn answers_made_ahead_follow_every_change() {
    let h = Harness::setup_with_answers().await;
    seed(&h).await;
    let read = async |slug: &str| {
        h.send(TestRequest::get().uri(&format!("/cms/collections/posts/items/{slug}"))).await
    };
    let before = read("second").await;
    assert_eq!(cms_http::ahead::render_ahead(&h.state).await.unwrap(), 1, "the other published item");
    assert_eq!(cms_http::ahead::render_ahead(&h.state).await.unwrap(), 0, "every live item is kept");
    let first = read("first").await;
    assert_eq!(
        (first.status.as_u16(), first.json()["data"]["body_html"].as_str()),
        (200, Some("<h1>first</h1>\n<p>Text of first.</p>\n"))
    );
    let mut again = read("second").await.json();
    let mut before = before.json();
    for answer in [&mut again, &mut before] {
        answer.as_object_mut().unwrap().remove("timestamp");
    }
    assert_eq!(again, before, "the kept answer is the one a read makes");
    read("hidden").await.assert_envelope_error(404, "no item");
    answers_follow_every_change(&h).await;
}

/// An answer store that counts what is put in it.
#[derive(Default)]
struct CountingAnswers {
    kept: std::sync::Mutex<std::collections::HashMap<u64, Vec<u8>>>,
    puts: std::sync::atomic::AtomicUsize,
}

impl cms_core::ports::RenderCache for CountingAnswers {
    fn get(&self, key: u64) -> Option<actix_web::web::Bytes> {
        self.kept.lock().unwrap().get(&key).cloned().map(actix_web::web::Bytes::from)
    }
    fn put(&self, key: u64, record: &[u8]) {
        self.puts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.kept.lock().unwrap().insert(key, record.to_vec());
    }
    fn contains(&self, key: u64) -> bool {
        self.kept.lock().unwrap().contains_key(&key)
    }
    fn is_full(&self) -> bool {
        false
    }
}

/// Every route that answers a single item keeps its answer once, not once per request.
#[actix_web::test]
async fn a_kept_answer_is_not_kept_again_on_each_read() {
    let answers = std::sync::Arc::new(CountingAnswers::default());
    let h = Harness::setup_with(Some(answers.clone())).await;
    seed(&h).await;
    let puts = || answers.puts.load(std::sync::atomic::Ordering::Relaxed);
    for uri in [
        "/cms/collections/posts/items/first",
        "/cms/items/first",
        "/cms/collections/items/first?collectionPath=content/posts",
    ] {
        let before = puts();
        let first = h.send(TestRequest::get().uri(uri)).await;
        let second = h.send(TestRequest::get().uri(uri)).await;
        assert_eq!((first.status.as_u16(), second.status.as_u16()), (200, 200), "{uri}");
        assert_eq!(first.json()["data"]["body_html"], second.json()["data"]["body_html"]);
        assert!(puts() - before <= 1, "{uri}: kept {} times", puts() - before);
    }
    assert_eq!(puts(), 1, "the three routes answer the same item: one answer kept");
}

/// An answer store whose records are on a disk until read: `get_now` says so, and `get`
/// (which may wait) brings a record into memory, noting the thread it ran on.
#[derive(Default)]
struct PagedOutAnswers {
    kept: CountingAnswers,
    in_memory: std::sync::Mutex<std::collections::HashSet<u64>>,
    read_on: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl cms_core::ports::RenderCache for PagedOutAnswers {
    fn get(&self, key: u64) -> Option<actix_web::web::Bytes> {
        self.read_on.lock().unwrap().push(std::thread::current().id());
        let record = self.kept.get(key)?;
        self.in_memory.lock().unwrap().insert(key);
        Some(record)
    }
    fn get_now(&self, key: u64) -> cms_core::ports::KeptNow {
        use cms_core::ports::KeptNow;
        match self.kept.get(key) {
            None => KeptNow::Missing,
            Some(_) if !self.in_memory.lock().unwrap().contains(&key) => KeptNow::OnDisk,
            Some(record) => KeptNow::Found(record),
        }
    }
    fn put(&self, key: u64, record: &[u8]) {
        self.kept.put(key, record);
    }
    fn contains(&self, key: u64) -> bool {
        self.kept.contains(key)
    }
    fn is_full(&self) -> bool {
        false
    }
}

/// A kept answer whose record is on the disk is read off the async worker (which would
/// otherwise wait for the disk with every connection it serves), and answered as it is.
#[actix_web::test]
async fn a_kept_answer_on_the_disk_is_read_off_the_worker() {
    let answers = std::sync::Arc::new(PagedOutAnswers::default());
    let h = Harness::setup_with(Some(answers.clone())).await;
    seed(&h).await;
    let uri = "/cms/collections/posts/items/first";
    let made = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(made.status, 200);
    answers.in_memory.lock().unwrap().clear(); // paged out
    answers.read_on.lock().unwrap().clear();
    let kept = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(kept.status, 200);
    assert_eq!(
        (kept.json()["data"].clone(), kept.header("etag")),
        (made.json()["data"].clone(), made.header("etag"))
    );
    let read_on = answers.read_on.lock().unwrap().clone();
    assert_eq!(read_on.len(), 1, "one read that may wait");
    assert_ne!(read_on[0], std::thread::current().id(), "on the blocking pool, not the worker");
    let again = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(again.json()["data"], made.json()["data"]);
    assert_eq!(answers.read_on.lock().unwrap().len(), 1, "in memory now: had without waiting");
    // A route that reads the item first (the legacy read) finds the kept answer the same way.
    answers.in_memory.lock().unwrap().clear();
    answers.read_on.lock().unwrap().clear();
    let legacy = h.send(TestRequest::get().uri("/cms/items/first")).await;
    assert_eq!((legacy.status.as_u16(), &legacy.json()["data"]), (200, &made.json()["data"]));
    let read_on = answers.read_on.lock().unwrap().clone();
    assert!(!read_on.is_empty(), "the kept answer was read");
    assert!(read_on.iter().all(|thread| *thread != std::thread::current().id()), "never on the worker");
    assert_eq!(answers.kept.puts.load(std::sync::atomic::Ordering::Relaxed), 1, "nothing kept again");
}

async fn answers_follow_every_change(h: &Harness) {
    let read = async || h.send(TestRequest::get().uri("/cms/collections/posts/items/first")).await;
    let list = async || h.send(TestRequest::get().uri("/cms/collections/posts/items?per_page=5")).await;
    let (item, again) = (read().await, read().await);
    assert_eq!(item.json()["data"], again.json()["data"], "the same item, the same answer");
    assert_eq!(list().await.json()["data"][1]["title"], "FIRST");

    let patch = TestRequest::patch()
        .uri("/cms/collections/posts/items/first")
        .insert_header(h.bearer())
        .set_json(json!({"fm": {"title": "Renamed"}}));
    assert_eq!(h.send(patch).await.status, 200);
    assert_eq!(read().await.json()["data"]["title"], "Renamed");
    assert_eq!(list().await.json()["data"][1]["title"], "Renamed");

    h.world.content.put_raw(
        "content/posts",
        "2024-01-01-first.md",
        b"---\ntitle: Edited\nstatus: published\n---\nNew body.\n",
    );
    h.settle().await;
    let edited = read().await;
    assert_eq!(edited.json()["data"]["title"], "Edited");
    assert!(edited.json()["data"]["body_html"].as_str().unwrap().contains("New body."));
    assert_eq!(list().await.json()["data"][1]["title"], "Edited");

    // A kept answer of a published item never shows it once it is a draft.
    let unpublish = TestRequest::patch()
        .uri("/cms/collections/posts/items/first")
        .insert_header(h.bearer())
        .set_json(json!({"fm": {"status": "draft"}}));
    assert_eq!(h.send(unpublish).await.status, 200);
    read().await.assert_envelope_error(404, "no item");
    assert!(list().await.json()["data"].as_array().unwrap().iter().all(|e| e["slug"] != "first"));
}

#[actix_web::test]
async fn list_304s_keep_the_cors_headers() {
    let h = Harness::setup().await;
    seed(&h).await;
    let uri = "/cms/collections/posts/items";
    let from_app = || TestRequest::get().uri(uri).insert_header(("Origin", "https://app.example.com"));
    let reply = h.send(from_app()).await;
    let etag = reply.header("etag").unwrap().to_owned();
    let cached = h.send(from_app().insert_header(("If-None-Match", etag))).await;
    assert_eq!(cached.status, 304);
    assert_eq!(cached.header("access-control-allow-origin"), Some("https://app.example.com"));
    assert!(cached.header("access-control-expose-headers").unwrap().contains("ETag"));
    assert_eq!(cached.header_values("vary"), ["Accept-Encoding", "Origin"], "the 200's Vary");
}

/// A write that breaks the collection's model answers 400 in the editor shape with every
/// failing field; PATCH too, after merging; a valid one is written with its defaults.
#[actix_web::test]
async fn a_write_that_breaks_the_model_names_every_field() {
    let site = cms_core::testing::SITE_YAML.replacen(
        "    date_prefix: true\n",
        "    date_prefix: true\n    fields:\n      title: { type: string, required: true }\n      rating: { type: integer, min: 1, max: 5, default: 3 }\n",
        1,
    );
    let h = Harness::setup_site(&site, None).await;
    let reply = h
        .send(post_json(
            &h,
            "/cms/collections/posts/items",
            json!({"slug": "a", "fm": {"rating": 9}, "body": ""}),
        ))
        .await;
    assert_eq!(reply.status, 400, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(
        reply.json(),
        json!({
            "error": "2 fields break the collection's model: fm.title, fm.rating",
            "fields": [
                {"field": "fm.title", "message": "is required"},
                {"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 9"},
            ],
        })
    );

    let created = h
        .send(post_json(
            &h,
            "/cms/collections/posts/items",
            json!({"slug": "a", "fm": {"title": "A"}, "body": ""}),
        ))
        .await;
    assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));
    let filename = created.json()["filename"].as_str().unwrap().to_owned();
    let patch = TestRequest::patch()
        .uri(&format!("/cms/collections/posts/items/{filename}"))
        .insert_header(h.bearer())
        .set_json(json!({"fm": {"rating": 0}}));
    let refused = h.send(patch).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        refused.json()["fields"],
        json!([{"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 0"}])
    );
    let raw = h
        .send(
            TestRequest::get()
                .uri(&format!("/cms/collections/posts/items/{filename}/raw"))
                .insert_header(h.bearer()),
        )
        .await;
    assert_eq!(
        raw.json()["fm"],
        json!({"title": "A", "rating": 3, "status": "draft"}),
        "the default was written"
    );
}

/// `GET /cms/collections/{collection}/schema`: the model's JSON Schema, kept with an ETag;
/// a collection without a model answers a schema of any object.
#[actix_web::test]
async fn the_schema_route_answers_the_models_json_schema() {
    let site = cms_core::testing::SITE_YAML.replacen(
        "    date_prefix: true\n",
        "    date_prefix: true\n    fields:\n      title: { type: string, required: true }\n",
        1,
    );
    let h = Harness::setup_site(&site, None).await;
    let reply = h.send(TestRequest::get().uri("/cms/collections/posts/schema")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/schema+json"));
    let schema = reply.json();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!((schema["title"].as_str(), &schema["required"]), (Some("Posts"), &json!(["title"])));
    assert_eq!(schema["properties"]["title"], json!({"type": "string"}));
    let etag = reply.header("etag").expect("an ETag").to_owned();
    let again = h
        .send(TestRequest::get().uri("/cms/collections/posts/schema").insert_header(("If-None-Match", etag)))
        .await;
    assert_eq!(again.status, 304);
    let pages = h.send(TestRequest::get().uri("/cms/collections/pages/schema")).await.json();
    assert_eq!((pages["type"].as_str(), pages.get("properties")), (Some("object"), None));
    let missing = h.send(TestRequest::get().uri("/cms/collections/nope/schema")).await;
    assert_eq!(missing.status, 404);
}

/// The list route on a modelled collection: `filter[...]`, `orderBy` on a field,
/// `fields=` and `expand=` over HTTP, a 400 naming an unknown field, a filtered page kept
/// and revalidated like any other, and the collection's `invalid_items`.
#[actix_web::test]
async fn lists_filter_order_and_project_a_models_fields() {
    let site = cms_core::testing::SITE_YAML.replacen(
        "    date_prefix: true\n",
        "    date_prefix: false\n    fields:\n      title: { type: string, required: true }\n      price: { type: number }\n      author: { type: reference, collection: pages }\n",
        1,
    );
    let h = Harness::setup_site(&site, None).await;
    h.send(post_json(
        &h,
        "/cms/collections/pages/items",
        json!({"slug": "ann", "fm": {"title": "Ann", "status": "published"}, "body": ""}),
    ))
    .await;
    for (slug, price) in [("a", 3), ("b", 12), ("c", 7)] {
        let created = h
            .send(post_json(
                &h,
                "/cms/collections/posts/items",
                json!({"slug": slug, "fm": {"title": slug.to_uppercase(), "price": price, "author": "ann", "status": "published"}, "body": ""}),
            ))
            .await;
        assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));
    }
    let uri = "/cms/collections/posts/items?filter%5Bprice%5D%5Bgte%5D=5&orderBy=price&direction=asc&fields=price&expand=author";
    let reply = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let body = reply.json();
    let entries = body["data"].as_array().unwrap();
    let slugs: Vec<&str> = entries.iter().map(|e| e["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["c", "b"]);
    assert_eq!(body["meta"]["totalItems"], 2);
    assert_eq!(entries[0]["fm"]["price"], 7);
    assert_eq!(entries[0]["fm"]["author"]["title"], "Ann");
    assert_eq!(entries[0]["fm"]["author"]["url"], "/pages/ann");
    let etag = reply.header("etag").expect("an ETag").to_owned();
    let again = h.send(TestRequest::get().uri(uri).insert_header(("If-None-Match", etag))).await;
    assert_eq!(again.status, 304, "a filtered page revalidates");

    let refused = h.send(TestRequest::get().uri("/cms/collections/posts/items?filter%5Bcolour%5D=red")).await;
    assert_eq!(refused.status, 400);
    let error = refused.json()["error"].as_str().unwrap().to_owned();
    assert!(
        error.starts_with(
            "filter[colour]: this collection has no field \"colour\"; its fields are title, price, author"
        ),
        "{error}"
    );
    let modelless = h.send(TestRequest::get().uri("/cms/collections/pages/items?filter%5Bprice%5D=1")).await;
    assert_eq!(modelless.status, 400);
    assert!(modelless.json()["error"].as_str().unwrap().contains("declare its fields in cms.yaml"));

    let collections = h.send(TestRequest::get().uri("/cms/collections")).await.json();
    assert_eq!(collections["data"][0]["invalid_items"], 0);
    assert!(collections["data"][1].get("invalid_items").is_none(), "no model, no count");
}
