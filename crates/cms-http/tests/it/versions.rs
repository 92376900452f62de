use actix_web::test::TestRequest;
use serde_json::json;

use crate::Harness;

const ITEM: &str = "/cms/collections/pages/items/about";

async fn with_history(h: &Harness) -> i64 {
    let create = TestRequest::post().uri("/cms/collections/pages/items").insert_header(h.bearer());
    let reply =
        h.send(create.set_json(json!({"slug": "about", "fm": {"title": "About"}, "body": "first"}))).await;
    assert_eq!(reply.status, 200);
    let patch = TestRequest::patch().uri(ITEM).insert_header(h.bearer()).set_json(json!({"body": "second"}));
    assert_eq!(h.send(patch).await.status, 200);
    let list =
        h.send(TestRequest::get().uri(&format!("{ITEM}/versions")).insert_header(h.bearer())).await.json();
    list["versions"][0]["timestamp"].as_i64().unwrap()
}

#[actix_web::test]
async fn list_read_and_restore_over_http() {
    let h = Harness::setup().await;
    let version = with_history(&h).await;

    let list = h.send(TestRequest::get().uri(&format!("{ITEM}/versions")).insert_header(h.bearer())).await;
    assert_eq!(list.status, 200);
    let body = list.json();
    assert_eq!(body["versions"].as_array().unwrap().len(), 1);
    assert!(body["versions"][0]["size"].as_u64().unwrap() > 0);
    assert!(body["current"]["modified"].is_i64() && body["current"]["size"].is_u64(), "{body}");
    assert!(body.get("success").is_none(), "editor shape");

    let read =
        h.send(TestRequest::get().uri(&format!("{ITEM}/versions/{version}")).insert_header(h.bearer())).await;
    let body = read.json();
    assert_eq!(body["timestamp"], version);
    assert_eq!((body["fm"]["title"].as_str(), body["body"].as_str()), (Some("About"), Some("first")));
    assert!(body["size"].is_u64());

    let restore =
        TestRequest::post().uri(&format!("{ITEM}/versions/{version}/restore")).insert_header(h.bearer());
    let reply = h.send(restore).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"filename": "about.md", "folder": 1, "message": "Version restored.", "restored": version})
    );
    assert!(reply.header("etag").is_some());
    let raw = h.send(TestRequest::get().uri(&format!("{ITEM}/raw")).insert_header(h.bearer())).await.json();
    assert_eq!(raw["body"], "first");
    let kinds: Vec<&str> = h.world.events.take().iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.last(), Some(&"file.updated"));
}

#[actix_web::test]
async fn history_errors_are_editor_shaped() {
    let h = Harness::setup().await;
    let version = with_history(&h).await;
    h.send(TestRequest::get().uri(&format!("{ITEM}/versions"))).await.assert_editor_error(401, "API key");
    let get = |uri: String| TestRequest::get().uri(&uri).insert_header(h.bearer());
    h.send(get(format!("{ITEM}/versions/latest"))).await.assert_editor_error(400, "integer timestamp");
    h.send(get(format!("{ITEM}/versions/{}", version + 999))).await.assert_editor_error(404, "no version");
    h.send(get("/cms/collections/pages/items/nope/versions".into()))
        .await
        .assert_editor_error(404, "no item");
    h.send(get("/cms/collections/nope/items/about/versions".into()))
        .await
        .assert_editor_error(404, "no collection");
    let restore = TestRequest::post().uri(&format!("{ITEM}/versions/x1/restore")).insert_header(h.bearer());
    h.send(restore).await.assert_editor_error(400, "integer timestamp");
    let wrong_method =
        TestRequest::get().uri(&format!("{ITEM}/versions/{version}/restore")).insert_header(h.bearer());
    h.send(wrong_method).await.assert_envelope_error(405, "GET is not allowed");
}

#[actix_web::test]
async fn restore_honours_if_match() {
    let h = Harness::setup().await;
    let version = with_history(&h).await;
    let restore = TestRequest::post()
        .uri(&format!("{ITEM}/versions/{version}/restore"))
        .insert_header(h.bearer())
        .insert_header(("If-Match", "\"stale\""));
    h.send(restore).await.assert_editor_error(412, "does not match");
}
