use actix_web::test::TestRequest;
use cms_core::policy::Caller;
use cms_http::routes::{LIVEZ, METRICS, READYZ, ROUTES};

use crate::Harness;

#[actix_web::test]
async fn status_routes_answer_in_the_envelope_without_a_key() {
    let h = Harness::setup().await;
    for path in ["/", "/status"] {
        let reply = h.send(TestRequest::get().uri(path)).await;
        assert_eq!(reply.status, 200);
        let body = reply.json();
        assert_eq!(body["success"], true);
        assert_eq!(body["data"]["status"], "ok");
        assert_eq!(body["data"]["name"], "Test Site");
        assert_eq!(body["data"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(body["message"], "CMS API running");
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    }
}

#[actix_web::test]
async fn every_route_answers_402_without_a_json_api_license() {
    let h = Harness::setup().await;
    h.set_license(None).await;
    for route in ROUTES {
        let path =
            route.path.replace("{collection}", "posts").replace("{slug}", "x").replace("{tag}", "rust");
        let req =
            TestRequest::default().method(route.method.parse().unwrap()).uri(&path).insert_header(h.bearer());
        let reply = h.send(req).await;
        if matches!(route.path, LIVEZ | READYZ | METRICS) {
            // An orchestrator must not restart or drop a server for its license (the
            // metrics are off in this harness: 404, not 402).
            assert_ne!(reply.status, 402, "{path} answers without a license");
            continue;
        }
        reply.assert_envelope_error(402, "no license");
    }
    h.set_license(Some(cms_core::license::License {
        licensee: "x".into(),
        features: vec!["webhooks".into()],
        expires_at: None,
        signature: None,
    }))
    .await;
    h.send(TestRequest::get().uri("/status")).await.assert_envelope_error(402, "json_api");
    let expired = cms_core::license::License {
        licensee: "x".into(),
        features: vec!["json_api".into()],
        expires_at: Some("2020-01-01T00:00:00Z".into()),
        signature: None,
    };
    h.set_license(Some(expired)).await;
    h.send(TestRequest::get().uri("/status")).await.assert_envelope_error(402, "expired");
}

#[actix_web::test]
async fn describe_needs_a_key_and_lists_every_route() {
    let h = Harness::setup().await;
    let reply = h.send(TestRequest::get().uri("/cms/")).await;
    reply.assert_envelope_error(401, "API key");
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));

    let reply = h.send(TestRequest::get().uri(&format!("/cms/?token={}", h.editor_key))).await;
    assert_eq!(reply.status, 200, "the token query parameter works");
    let routes = reply.json()["data"]["routes"].as_array().unwrap().clone();
    assert!(routes.iter().any(|r| r["method"] == "PATCH"
        && r["path"] == "/cms/collections/{collection}/items/{slug}"
        && r["auth"] == "required"));
    assert!(
        routes
            .iter()
            .any(|r| r["method"] == "GET" && r["path"] == "/cms/collections" && r["auth"] == "optional")
    );

    let document = h.send(TestRequest::get().uri("/cms/openapi.json")).await;
    assert_eq!(document.status, 200, "the reference needs no key");
    let document = document.json();
    assert_eq!(document["openapi"], "3.1.0");
    let documented: usize = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| {
            let methods = ["get", "post", "put", "patch", "delete"];
            p.as_object().unwrap().keys().filter(|k| methods.contains(&k.as_str())).count()
        })
        .sum();
    assert_eq!(routes.len(), documented, "GET /cms/ and the document list the same operations");
}

/// Every operation of the document this server serves (its resource folders' file URLs
/// included) reaches a handler: no `405`, no "no route" `404`. The reverse (every route
/// is documented) is `openapi::tests::the_document_and_the_route_table_list_the_same_operations`.
#[actix_web::test]
async fn documented_routes_are_all_registered() {
    let h = Harness::setup().await;
    h.world.resources.put_file("media/docs", "report.txt", b"text");
    let document = h.send(TestRequest::get().uri("/cms/openapi.json")).await.json();
    let paths = document["paths"].as_object().unwrap();
    assert!(
        paths.contains_key("/media/uploads/{path}") && paths.contains_key("/files/{path}"),
        "one per folder"
    );
    let mut checked = 0;
    for (path, item) in paths {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            checked += 1;
            let uri = path
                .replace("{collection}", "posts")
                .replace("{slug}", "nope")
                .replace("{tag}", "rust")
                .replace("{version}", "1")
                .replace("{path}", "report.txt");
            let req = TestRequest::default()
                .method(method.to_uppercase().parse().unwrap())
                .uri(&uri)
                .insert_header(h.bearer())
                .insert_header(("content-type", "application/json"))
                .set_payload("{}");
            let reply = h.send(req).await;
            assert_ne!(reply.status, 405, "{method} {path}");
            if !reply.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
                assert!(
                    matches!(reply.status.as_u16(), 200 | 304),
                    "{method} {path} answers {}",
                    reply.status
                );
                continue;
            }
            let body = reply.json();
            let error = body["error"].as_str().unwrap_or("");
            assert!(!error.starts_with("no route"), "{method} {path} is not registered");
        }
    }
    assert_eq!(checked, ROUTES.len() + 2, "the route table and one file URL per resource folder");
}

#[actix_web::test]
async fn key_failures_are_401_with_reasons() {
    let h = Harness::setup().await;
    let cases = [
        ("Bearer mcp_0123456789", "AI-agent"),
        ("Bearer api_0000", "unknown or revoked"),
        ("Bearer nonsense", "start with api_"),
    ];
    for (header, needle) in cases {
        let reply = h.send(TestRequest::get().uri("/cms/").insert_header(("Authorization", header))).await;
        reply.assert_envelope_error(401, needle);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    }
    // A revoked key stops working on the next request.
    let id = h
        .state
        .cms
        .keys(Caller::Operator)
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.email == "ed@example.com")
        .unwrap()
        .id;
    h.state.cms.revoke_key(Caller::Operator, &id).await.unwrap();
    h.send(TestRequest::get().uri("/cms/").insert_header(h.bearer()))
        .await
        .assert_envelope_error(401, "revoked");
}

#[actix_web::test]
async fn collections_are_listed_with_count() {
    let h = Harness::setup().await;
    let body = h.send(TestRequest::get().uri("/cms/collections")).await.json();
    assert_eq!(body["count"], 2);
    assert_eq!(
        body["data"][0],
        serde_json::json!({"index": 0, "label": "Posts", "slug": "posts", "path": "content/posts"})
    );
}

#[actix_web::test]
async fn unknown_routes_and_methods_answer_in_the_envelope() {
    let h = Harness::setup().await;
    h.send(TestRequest::get().uri("/nope")).await.assert_envelope_error(404, "no route GET /nope");
    let reply = h.send(TestRequest::delete().uri("/cms/collections")).await;
    reply.assert_envelope_error(405, "DELETE is not allowed");
    assert_eq!(reply.header("allow"), Some("GET, HEAD"));
    let reply = h.send(TestRequest::post().uri("/cms/collections/posts/items/x")).await;
    assert_eq!(reply.header("allow"), Some("GET, PUT, PATCH, DELETE, HEAD"));
}

#[actix_web::test]
async fn cors_preflight_and_origin_checks() {
    let h = Harness::setup().await;
    h.set_license(None).await; // preflights need no license
    let preflight = |origin: &str| {
        TestRequest::default()
            .method(actix_web::http::Method::OPTIONS)
            .uri("/cms/collections/posts/items")
            .insert_header(("Origin", origin.to_owned()))
            .insert_header(("Access-Control-Request-Method", "POST"))
    };
    let reply = h.send(preflight("https://app.example.com")).await;
    assert_eq!(reply.status, 204);
    assert_eq!(reply.header("access-control-allow-origin"), Some("https://app.example.com"));
    assert!(reply.header("access-control-allow-headers").unwrap().contains("Authorization"));
    assert!(reply.header("access-control-allow-methods").unwrap().contains("PATCH"));
    h.send(preflight("https://evil.example")).await.assert_envelope_error(403, "not allowed");

    let h = Harness::setup().await;
    let from = |origin: &str| {
        TestRequest::get().uri("/cms/collections").insert_header(("Origin", origin.to_owned()))
    };
    let reply = h.send(from("https://app.example.com")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("access-control-allow-origin"), Some("https://app.example.com"));
    assert_eq!(h.send(from("https://example.com")).await.status, 200, "the site's own origin");
    h.send(from("https://evil.example")).await.assert_envelope_error(403, "not allowed");
    let keyed = from("https://evil.example").insert_header(h.bearer());
    assert_eq!(h.send(keyed).await.status, 200, "cross-origin clients with a key are fine");
}

#[actix_web::test]
async fn head_works_wherever_get_does() {
    let h = Harness::setup().await;
    let reply = h.send(TestRequest::default().method(actix_web::http::Method::HEAD).uri("/status")).await;
    assert_eq!(reply.status, 200);
    let reply = h
        .send(
            TestRequest::default().method(actix_web::http::Method::HEAD).uri("/cms/collections/posts/items"),
        )
        .await;
    assert_eq!(reply.status, 200);
}

/// Same-server is decided by the names the site gives (loopback names on the bound port,
/// `site.url`, `server.allowed_hosts`), never by `Host` or forwarded headers, which a DNS
/// rebinding page controls.
#[actix_web::test]
async fn forwarded_host_headers_do_not_make_an_origin_same_server() {
    let h = Harness::setup().await;
    let req = TestRequest::get()
        .uri("/cms/collections")
        .insert_header(("Origin", "https://evil.example"))
        .insert_header(("X-Forwarded-Host", "evil.example"))
        .insert_header(("Forwarded", "host=evil.example;proto=https"));
    h.send(req).await.assert_envelope_error(403, "not allowed");
    let rebinding = || {
        TestRequest::get()
            .uri("/cms/collections")
            .insert_header(("Host", "rebind.example:8080"))
            .insert_header(("Origin", "http://rebind.example:8080"))
    };
    h.send(rebinding()).await.assert_envelope_error(403, "server.allowed_hosts");
    h.cms().hosts().bind(&["0.0.0.0:8080".parse().unwrap()]);
    h.send(rebinding()).await.assert_envelope_error(403, "not allowed");
    let loopback =
        TestRequest::get().uri("/cms/collections").insert_header(("Origin", "http://localhost:8080"));
    assert_eq!(h.send(loopback).await.status, 200, "a loopback name on the bound port is same-server");
}

/// `/livez` answers whenever the process does; `/readyz` is `503` with the reason once the
/// server drains, and `200` otherwise (while indexing: `cms` crate's startup tests).
#[actix_web::test]
async fn health_probes_say_live_and_ready_then_draining() {
    let h = Harness::setup().await;
    let live = h.send(TestRequest::get().uri(LIVEZ)).await;
    assert_eq!((live.status.as_u16(), live.json()), (200, serde_json::json!({"live": true})));
    assert_eq!(live.header("cache-control"), Some("no-store"));
    let ready = h.send(TestRequest::get().uri(READYZ)).await;
    assert_eq!(ready.status, 200);
    assert_eq!(
        ready.json(),
        serde_json::json!({"ready": true, "reason": "ready",
            "checks": {"index": "ready", "draining": "no", "store": "reachable"}})
    );
    h.cms().upkeep().begin_draining();
    let draining = h.send(TestRequest::get().uri(READYZ)).await;
    assert_eq!(draining.status, 503);
    assert_eq!(draining.header("retry-after"), Some("1"));
    let body = draining.json();
    assert_eq!((body["ready"].as_bool(), body["checks"]["draining"].as_str()), (Some(false), Some("yes")));
    assert!(body["reason"].as_str().unwrap().starts_with("draining"), "{body}");
    assert_eq!(h.send(TestRequest::get().uri(LIVEZ)).await.status, 200, "still live");
}
