//! Resource routes in-process: listing, multipart uploads, rename/move/delete/folders,
//! every bad input, and serving the files.

use actix_web::test::TestRequest;
use serde_json::{Value, json};

use crate::{Harness, UPLOAD_LIMIT};

/// A real 16×16 PNG (the demo site's logo).
const PNG: &[u8] = include_bytes!("../../../../fixtures/demo-site/media/uploads/logo.png");
const INLINE_SVG_HTML: &[u8] =
    b"<!DOCTYPE html>\n<html><body><svg viewBox=\"0 0 1 1\"><script>alert(1)</script></svg></body></html>";
const BOUNDARY: &str = "cms-test-boundary-7f3a";

/// A multipart body: (field name, filename, bytes) per part.
fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, bytes) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match filename {
            Some(f) => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
            ),
            None => body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes()),
        }
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn upload(h: &Harness, parts: &[(&str, Option<&str>, &[u8])]) -> TestRequest {
    TestRequest::post()
        .uri("/cms/resources")
        .insert_header(h.bearer())
        .insert_header(("content-type", format!("multipart/form-data; boundary={BOUNDARY}")))
        .set_payload(multipart(parts))
}

fn json_req(h: &Harness, method: actix_web::http::Method, uri: &str, body: Value) -> TestRequest {
    TestRequest::default().method(method).uri(uri).insert_header(h.bearer()).set_json(body)
}

async fn seeded() -> Harness {
    let h = Harness::setup().await;
    h.world.resources.put_file("media/uploads", "logo.png", PNG);
    h.world.resources.put_file("media/uploads", "photo.bin", PNG);
    h.world.resources.put_file("media/uploads", "fake.png", b"plain text, not an image");
    h.world.resources.put_file(
        "media/uploads",
        "bitmap-notes.txt",
        b"BM is how a bitmap file starts; this is text",
    );
    h.world.resources.put_file("media/uploads", "page.html", INLINE_SVG_HTML);
    h.world.resources.put_file(
        "media/uploads",
        "icon.svg",
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>",
    );
    h
}

#[actix_web::test]
async fn listing_shows_folders_files_and_images_by_content() {
    let h = seeded().await;
    let create =
        json_req(&h, actix_web::http::Method::POST, "/cms/resources/folders", json!({"name": "2026"}));
    assert_eq!(
        h.send(create).await.json(),
        json!({"ok": true, "message": "Folder created.", "name": "2026"})
    );

    let reply = h.send(TestRequest::get().uri("/cms/resources").insert_header(h.bearer())).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_eq!(body["folder"], json!({"index": 0, "label": "Uploads"}));
    assert_eq!(body["subpath"], "");
    assert_eq!(body["dirs"], json!([{"name": "2026", "type": "dir"}]));
    assert_eq!(body["license"], json!({"valid": true}));
    let files = body["files"].as_array().unwrap();
    let find = |name: &str| files.iter().find(|f| f["name"] == name).unwrap().clone();
    assert_eq!(find("logo.png")["url"], "/media/uploads/logo.png");
    assert_eq!(find("logo.png")["size"], PNG.len());
    assert!(find("logo.png")["modified"].is_i64());
    assert_eq!(find("logo.png")["is_image"], true);
    assert_eq!(find("photo.bin")["is_image"], true, "known by content, not extension");
    assert_eq!(find("fake.png")["is_image"], false);
    assert_eq!(find("icon.svg")["is_image"], true);
    assert_eq!(find("bitmap-notes.txt")["is_image"], false, "starting with BM is not enough");
    assert_eq!(find("page.html")["is_image"], false, "HTML with an inline <svg> is a document");

    let docs =
        h.send(TestRequest::get().uri("/cms/resources?folder=1").insert_header(h.bearer())).await.json();
    assert_eq!(docs["folder"], json!({"index": 1, "label": "Documents"}));
    assert_eq!(docs["files"], json!([]));
}

#[actix_web::test]
async fn listing_refuses_bad_folders_and_subpaths() {
    let h = seeded().await;
    let get = |q: &str| TestRequest::get().uri(&format!("/cms/resources?{q}")).insert_header(h.bearer());
    h.send(get("folder=9")).await.assert_editor_error(404, "no resource folder 9");
    h.send(get("folder=x")).await.assert_editor_error(400, "folder must be");
    h.send(get("subpath=missing")).await.assert_editor_error(404, "no folder");
    for bad in ["..", "..%2F..", "%2Fetc", "a%00b", "%252e%252e", "a%5C..%5Cb", &"x".repeat(300)] {
        h.send(get(&format!("subpath={bad}"))).await.assert_editor_error(400, "invalid subpath");
    }
    h.send(TestRequest::get().uri("/cms/resources")).await.assert_editor_error(401, "API key");
}

#[actix_web::test]
async fn uploads_store_sanitized_names_and_never_overwrite() {
    let h = seeded().await;
    let reply = h.send(upload(&h, &[("file", Some("logo.png"), PNG)])).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let body = reply.json();
    assert_eq!(body["name"], "logo-1.png");
    assert_eq!(body["url"], "/media/uploads/logo-1.png");
    assert_eq!((body["size"].as_u64(), body["is_image"].as_bool()), (Some(PNG.len() as u64), Some(true)));
    assert!(body["modified"].is_i64());

    let traversal = h.send(upload(&h, &[("file", Some("../../x.png"), b"x")])).await.json();
    assert_eq!(traversal["name"], "x.png");

    let create = json_req(
        &h,
        actix_web::http::Method::POST,
        "/cms/resources/folders",
        json!({"folder": 1, "name": "reports"}),
    );
    assert_eq!(h.send(create).await.status, 200);
    // Fields may come after the file part.
    let into = upload(
        &h,
        &[
            ("file", Some("Q1 Report.PDF"), b"%PDF-1.7"),
            ("folder", None, b"1"),
            ("subpath", None, b"reports"),
        ],
    );
    let body = h.send(into).await.json();
    assert_eq!(
        (body["name"].as_str(), body["url"].as_str()),
        (Some("Q1-Report.PDF"), Some("/files/reports/Q1-Report.PDF"))
    );
    assert_eq!(body["is_image"], false);
}

#[actix_web::test]
async fn bad_uploads_are_refused_and_leave_nothing() {
    let h = seeded().await;
    let before = h.world.resources.paths();
    let exact = vec![b'a'; UPLOAD_LIMIT as usize];
    let over = vec![b'a'; UPLOAD_LIMIT as usize + 1];
    let cases: Vec<(TestRequest, u16, &str)> = vec![
        (upload(&h, &[("file", Some("big.bin"), &over)]), 413, "over the limit"),
        (upload(&h, &[("folder", None, b"0")]), 400, "missing the \"file\" part"),
        (upload(&h, &[("file", None, b"aGVsbG8=")]), 400, "base64 uploads are not accepted"),
        (upload(&h, &[("file", Some("a.png"), PNG), ("colour", None, b"red")]), 400, "unknown form field"),
        (upload(&h, &[("file", Some("a.png"), PNG), ("folder", None, b"9")]), 404, "no resource folder 9"),
        (upload(&h, &[("file", Some("a.png"), PNG), ("subpath", None, b"nope")]), 404, "no folder"),
        (upload(&h, &[("file", Some("a.png"), PNG), ("subpath", None, b"../..")]), 400, "invalid subpath"),
        (upload(&h, &[("file", Some("a.png"), PNG), ("subpath", None, b"/etc")]), 400, "invalid subpath"),
        (
            json_req(
                &h,
                actix_web::http::Method::POST,
                "/cms/resources",
                json!({"file": "aGVsbG8=", "name": "a.png"}),
            ),
            415,
            "base64 uploads are not accepted",
        ),
    ];
    for (req, status, needle) in cases {
        h.send(req).await.assert_editor_error(status, needle);
    }
    assert_eq!(h.world.resources.paths(), before, "nothing was stored");
    assert_eq!(
        h.send(upload(&h, &[("file", Some("exact.bin"), &exact)])).await.status,
        200,
        "the limit itself is fine"
    );
}

#[actix_web::test]
async fn rename_move_delete_and_folders() {
    let h = seeded().await;
    let patch = |body: Value| json_req(&h, actix_web::http::Method::PATCH, "/cms/resources", body);
    let reply =
        h.send(patch(json!({"folder": 0, "subpath": "", "file": "logo.png", "newName": "logo-v2"}))).await;
    assert_eq!(reply.json(), json!({"ok": true, "message": "File renamed.", "name": "logo-v2.png"}));
    h.send(patch(json!({"file": "photo.bin", "newName": "fake.png"})))
        .await
        .assert_editor_error(409, "already exists");
    h.send(patch(json!({"file": "gone.png", "newName": "x.png"}))).await.assert_editor_error(404, "no file");
    h.send(patch(json!({"file": "photo.bin", "newName": "../x.png"})))
        .await
        .assert_editor_error(400, "invalid file name");
    h.send(patch(json!({"file": "photo.bin"}))).await.assert_editor_error(400, "newName is required");
    h.send(patch(json!({"newName": "x"}))).await.assert_editor_error(400, "file is required");
    h.send(patch(json!({"file": "../../cms.yaml", "newName": "x"})))
        .await
        .assert_editor_error(400, "invalid file name");

    let folder = json_req(
        &h,
        actix_web::http::Method::POST,
        "/cms/resources/folders",
        json!({"folder": 0, "subpath": "", "name": "2026"}),
    );
    assert_eq!(h.send(folder).await.status, 200);
    let moved = h
        .send(patch(
            json!({"op": "move", "file": "photo.bin", "dest_subpath": "2026", "new_filename": "photo"}),
        ))
        .await;
    assert_eq!(moved.json(), json!({"ok": true, "message": "File moved.", "name": "photo.bin"}));
    let listed =
        h.send(TestRequest::get().uri("/cms/resources?subpath=2026").insert_header(h.bearer())).await.json();
    assert_eq!(listed["files"][0]["url"], "/media/uploads/2026/photo.bin");
    h.send(patch(json!({"op": "move", "file": "fake.png", "dest_subpath": "nope"})))
        .await
        .assert_editor_error(404, "no folder");
    h.send(patch(json!({"op": "move", "file": "fake.png", "dest_subpath": "../.."})))
        .await
        .assert_editor_error(400, "invalid subpath");
    h.send(patch(json!({"op": "copy", "file": "fake.png"}))).await.assert_editor_error(400, "op must be");

    let delete = |body: Value| json_req(&h, actix_web::http::Method::DELETE, "/cms/resources", body);
    h.send(delete(json!({"file": "2026"}))).await.assert_editor_error(409, "not empty");
    assert_eq!(
        h.send(delete(json!({"subpath": "2026", "file": "photo.bin"}))).await.json(),
        json!({"ok": true, "message": "File deleted."})
    );
    assert_eq!(h.send(delete(json!({"file": "2026"}))).await.status, 200, "an empty folder can go");
    h.send(delete(json!({"file": "2026"}))).await.assert_editor_error(404, "no file or folder");
    h.send(delete(json!({"file": ".."}))).await.assert_editor_error(400, "invalid file name");
    h.send(delete(json!({"folder": "0", "file": "x"}))).await.assert_editor_error(400, "folder must be");

    let folders = |body: Value| json_req(&h, actix_web::http::Method::POST, "/cms/resources/folders", body);
    assert_eq!(h.send(folders(json!({"name": "a"}))).await.status, 200);
    h.send(folders(json!({"name": "a"}))).await.assert_editor_error(409, "already exists");
    h.send(folders(json!({"name": "a/b"}))).await.assert_editor_error(400, "invalid file name");
    h.send(folders(json!({"name": "x".repeat(300)}))).await.assert_editor_error(400, "longer than 255");
    h.send(folders(json!({"subpath": "missing", "name": "b"}))).await.assert_editor_error(404, "no folder");
}

/// JSON has one kind of number: `1.0` is the whole number 1 (and JSON Schema's `integer`
/// says so too), so a `folder` sent as `1.0` names folder 1; `1.5` and `-1` name none.
#[actix_web::test]
async fn folder_indexes_may_be_written_with_a_zero_fraction() {
    let h = seeded().await;
    let folders = |body: Value| json_req(&h, actix_web::http::Method::POST, "/cms/resources/folders", body);
    let reply = h.send(folders(json!({"folder": 1.0, "name": "reports"}))).await;
    assert_eq!(reply.status, 200, "{}", reply.json());
    let listed = h.send(TestRequest::get().uri("/cms/resources?folder=1").insert_header(h.bearer())).await;
    assert_eq!(listed.json()["dirs"], json!([{"name": "reports", "type": "dir"}]));
    h.send(folders(json!({"folder": 1.5, "name": "x"}))).await.assert_editor_error(400, "folder must be");
    h.send(folders(json!({"folder": -1, "name": "x"}))).await.assert_editor_error(400, "folder must be");
    h.send(folders(json!({"folder": -1.0, "name": "x"}))).await.assert_editor_error(400, "folder must be");
    h.send(folders(json!({"folder": 1e30, "name": "x"}))).await.assert_editor_error(400, "folder must be");
}

#[actix_web::test]
async fn files_are_served_with_caching_ranges_and_safety_headers() {
    let h = seeded().await;
    let reply = h.send(TestRequest::get().uri("/media/uploads/logo.png")).await;
    assert_eq!(reply.status, 200, "no key needed");
    assert_eq!(reply.body, PNG);
    assert_eq!(reply.header("content-type"), Some("image/png"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(reply.header("accept-ranges"), Some("bytes"));
    assert!(reply.header("last-modified").is_some());
    let etag = reply.header("etag").unwrap().to_owned();

    let cached = h
        .send(
            TestRequest::get().uri("/media/uploads/logo.png").insert_header(("If-None-Match", etag.clone())),
        )
        .await;
    assert_eq!(cached.status, 304);

    let part =
        h.send(TestRequest::get().uri("/media/uploads/logo.png").insert_header(("Range", "bytes=1-3"))).await;
    assert_eq!(part.status, 206);
    assert_eq!(part.body, &PNG[1..=3]);
    assert_eq!(part.header("content-range").unwrap(), format!("bytes 1-3/{}", PNG.len()));
    let past = h
        .send(TestRequest::get().uri("/media/uploads/logo.png").insert_header(("Range", "bytes=999-")))
        .await;
    assert_eq!(past.status, 416);
    let stale = TestRequest::get()
        .uri("/media/uploads/logo.png")
        .insert_header(("Range", "bytes=1-3"))
        .insert_header(("If-Range", "\"old\""));
    assert_eq!(h.send(stale).await.status, 200, "If-Range with an old ETag gets the whole file");

    let svg = h.send(TestRequest::get().uri("/media/uploads/icon.svg")).await;
    assert_eq!(svg.header("content-type"), Some("image/svg+xml"));
    assert!(svg.header("content-security-policy").unwrap().starts_with("sandbox"));
    assert_eq!(svg.header("content-disposition"), Some("inline"), "SVG is shown, sandboxed");

    let html = h.send(TestRequest::get().uri("/media/uploads/page.html")).await;
    assert_eq!(html.status, 200);
    assert_eq!(html.body, INLINE_SVG_HTML);
    assert_eq!(html.header("content-type"), Some("text/html; charset=utf-8"));
    let disposition = html.header("content-disposition").unwrap();
    assert!(disposition.starts_with("attachment") && disposition.contains("page.html"), "{disposition}");
    assert!(html.header("content-security-policy").unwrap().starts_with("sandbox"));

    let head = h
        .send(TestRequest::default().method(actix_web::http::Method::HEAD).uri("/media/uploads/logo.png"))
        .await;
    assert_eq!(head.status, 200);

    for bad in [
        "/media/uploads/missing.png",
        "/media/uploads/%2e%2e/%2e%2e/cms.yaml",
        "/media/uploads/..%2F..%2Fcms.yaml",
        "/media/uploads/.hidden",
    ] {
        assert_eq!(h.send(TestRequest::get().uri(bad)).await.status, 404, "{bad}");
    }
    h.set_license(None).await;
    assert_eq!(h.send(TestRequest::get().uri("/media/uploads/logo.png")).await.status, 402);
}
