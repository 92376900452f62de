//! Every kind of bad input gets a clear error and changes nothing.

use actix_web::test::TestRequest;
use serde_json::json;

use crate::{Harness, JSON_LIMIT};

async fn stored_files(h: &Harness) -> usize {
    let cms = h.cms();
    let mut count = 0;
    for collection in cms.collections() {
        count += cms.indexed_items(collection).await.unwrap().len();
    }
    count
}

#[actix_web::test]
async fn bad_create_bodies_are_refused_and_write_nothing() {
    let h = Harness::setup().await;
    let deep = format!("{{\"fm\": {{\"x\": {}1{}}}}}", "[".repeat(200), "]".repeat(200));
    let mut nested = json!(1);
    for _ in 0..40 {
        nested = json!({ "a": nested });
    }
    let cases: Vec<(String, u16, &str)> = vec![
        ("{not json".into(), 400, "malformed JSON"),
        ("[1, 2]".into(), 400, "must be a JSON object"),
        (json!({"fm": "title: x"}).to_string(), 400, "fm must be an object"),
        (json!({"slug": 5, "fm": {}}).to_string(), 400, "slug must be a string"),
        (json!({"slug": "a", "fm": {"tags": [1, 2]}}).to_string(), 400, "fm.tags must be a list of strings"),
        (json!({"slug": "a", "body": ["x"]}).to_string(), 400, "body must be a string"),
        (json!({"slug": "a", "date_prefix": "yes"}).to_string(), 400, "date_prefix must be true or false"),
        (json!({"slug": "../../etc/passwd"}).to_string(), 400, "invalid slug"),
        (json!({"slug": "a/b"}).to_string(), 400, "invalid slug"),
        (json!({"slug": "a\u{0}b"}).to_string(), 400, "invalid slug"),
        (json!({"slug": ".."}).to_string(), 400, "invalid slug"),
        (json!({"fm": {}}).to_string(), 400, "slug is required"),
        (json!({"slug": "a", "fm": {"filename": "../x.md"}}).to_string(), 400, "set by the server"),
        (json!({"slug": "a", "fm": {"folder": 3}}).to_string(), 400, "set by the server"),
        (json!({"slug": "a", "frontmatter": {}}).to_string(), 400, "unknown field \"frontmatter\""),
        (json!({"slug": "a", "fm": {"status": "live"}}).to_string(), 400, "status must be"),
        (json!({"slug": "a", "fm": {"x": nested}}).to_string(), 400, "nested"),
        (deep, 400, "malformed JSON"),
    ];
    for (body, status, needle) in cases {
        let req = TestRequest::post()
            .uri("/cms/collections/posts/items")
            .insert_header(h.bearer())
            .insert_header(("content-type", "application/json"))
            .set_payload(body.clone());
        let reply = h.send(req).await;
        assert_eq!(reply.status.as_u16(), status, "{body}: {}", String::from_utf8_lossy(&reply.body));
        reply.assert_editor_error(status, needle);
    }
    assert_eq!(stored_files(&h).await, 0);
}

#[actix_web::test]
async fn oversized_bodies_and_wrong_content_types() {
    let h = Harness::setup().await;
    let huge = json!({"slug": "big", "body": "x".repeat(JSON_LIMIT)}).to_string();
    let req = TestRequest::post()
        .uri("/cms/collections/posts/items")
        .insert_header(h.bearer())
        .insert_header(("content-type", "application/json"))
        .set_payload(huge);
    h.send(req).await.assert_editor_error(413, "over the limit");

    let form = TestRequest::post()
        .uri("/cms/collections/posts/items")
        .insert_header(h.bearer())
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload("slug=a");
    h.send(form).await.assert_editor_error(415, "application/json");
    assert_eq!(stored_files(&h).await, 0);
}

#[actix_web::test]
async fn unknown_collections_items_and_bad_slugs_in_paths() {
    let h = Harness::setup().await;
    h.send(TestRequest::get().uri("/cms/collections/nope/items"))
        .await
        .assert_envelope_error(404, "no collection");
    h.send(TestRequest::get().uri("/cms/collections/9/items"))
        .await
        .assert_envelope_error(404, "no collection");
    h.send(TestRequest::get().uri("/cms/collections/posts/items/missing"))
        .await
        .assert_envelope_error(404, "no item");
    h.send(TestRequest::get().uri("/cms/collections/posts/items/..%2F..%2Fcms.yaml"))
        .await
        .assert_envelope_error(400, "invalid");
    h.send(TestRequest::get().uri("/cms/collections/posts/items/a%00b"))
        .await
        .assert_envelope_error(400, "invalid slug");
    let write = TestRequest::post()
        .uri("/cms/collections/nope/items")
        .insert_header(h.bearer())
        .set_json(json!({"slug": "a"}));
    h.send(write).await.assert_editor_error(404, "no collection");
    for query in ["page=0", "per_page=x", "status=gone", "orderBy=colour", "direction=up", "offset=-1"] {
        let reply = h.send(TestRequest::get().uri(&format!("/cms/collections/posts/items?{query}"))).await;
        reply.assert_envelope_error(400, query.split('=').nth(1).unwrap());
    }
}

#[actix_web::test]
async fn bad_update_bodies_change_nothing() {
    let h = Harness::setup().await;
    let create = TestRequest::post()
        .uri("/cms/collections/pages/items")
        .insert_header(h.bearer())
        .set_json(json!({"slug": "about", "body": "keep"}));
    assert_eq!(h.send(create).await.status, 200);
    let before = h.world.content.get_raw("content/pages", "about.md").unwrap();
    let bad = [
        json!({"fm": []}),
        json!({"body": 3}),
        json!({"fm": {"tags": "x"}}),
        json!({"slug": "other"}),
        json!({"fm": {"filename": "other.md"}}),
        json!({"fm": {"folder": 0}}),
        json!({"fm": {"status": null}}),
    ];
    for body in bad {
        for method in [actix_web::http::Method::PATCH, actix_web::http::Method::PUT] {
            let req = TestRequest::default()
                .method(method.clone())
                .uri("/cms/collections/pages/items/about")
                .insert_header(h.bearer())
                .set_json(body.clone());
            assert_eq!(h.send(req).await.status, 400, "{method} {body}");
        }
    }
    assert_eq!(stored_files(&h).await, 1);
    assert_eq!(h.world.content.get_raw("content/pages", "about.md").unwrap(), before);
}

#[actix_web::test]
async fn broken_item_files_are_reported_not_fatal() {
    let h = Harness::setup().await;
    h.world.content.put_raw("content/pages", "ok.md", b"---\ntitle: OK\n---\n");
    h.world.content.put_raw("content/pages", "bad.md", b"---\ntitle: [\n---\n");
    let list = h.send(TestRequest::get().uri("/cms/collections/pages/items")).await.json();
    assert_eq!(list["meta"]["totalItems"], 1);
    h.send(TestRequest::get().uri("/cms/collections/pages/items/bad"))
        .await
        .assert_envelope_error(500, "bad.md");
}
