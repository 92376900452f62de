//! Shareable draft previews on the real server: a signed link opens one draft without a
//! key, with no-store and noindex headers, until it expires, is revoked, or its item is
//! deleted; anything else about the token is a `401` in the envelope.

use serde_json::{Value, json};

use crate::{Server, cms, demo_site, stdout, user_with_key};

fn post(server: &Server, path: &str, key: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut req = server.agent.post(format!("{}{path}", server.base));
    if let Some(key) = key {
        req = req.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = match body {
        Some(body) => req.send_json(body).unwrap(),
        None => req.send_empty().unwrap(),
    };
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or(Value::Null))
}

/// GET without a key: status, body, Cache-Control, X-Robots-Tag.
fn open(server: &Server, url: &str) -> (u16, Value, String, String) {
    let mut response = server.agent.get(url).call().unwrap();
    let header = |name: &str| {
        response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    let (cache, robots) = (header("cache-control"), header("x-robots-tag"));
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or(Value::Null), cache, robots)
}

#[test]
fn preview_links_open_one_draft_until_they_expire_or_are_revoked() {
    let site = demo_site();
    let site = site.path();
    let key = user_with_key(site, "ed@example.com", "editor");
    let server = Server::start(site);
    let items = "/cms/collections/posts/items";
    let (status, _) = post(
        &server,
        items,
        Some(&key),
        Some(json!({"slug": "secret-plan", "date_prefix": false, "fm": {"title": "Plan"}})),
    );
    assert_eq!(status, 200);
    assert_eq!(server.get(&format!("{items}/secret-plan"), None).0, 404, "a draft");

    let preview = format!("{items}/secret-plan/preview");
    let (status, link) = post(&server, &preview, Some(&key), None);
    assert_eq!(status, 200, "{link}");
    let url = link["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{}/cms/preview/", server.base)), "{url}");
    assert!(link["expires"].as_str().unwrap().ends_with('Z'));
    let (status, body, cache, robots) = open(&server, &url);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["data"]["slug"].as_str(), body["data"]["status"].as_str()),
        (Some("secret-plan"), Some("draft"))
    );
    assert!(body["data"]["body_html"].is_string());
    assert_eq!((cache.as_str(), robots.as_str()), ("private, no-store", "noindex"));

    // Tampered (another item, a later expiry, another MAC) or made up: 401, never an item.
    let token = url.rsplit('/').next().unwrap().to_owned();
    assert!(token.starts_with("blog-posts."), "names its collection by slug: {token}");
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let mut forged = Vec::new();
    let mut other = parts.clone();
    other[2] = "hello-world".into();
    forged.push(other.join("."));
    let mut later = parts.clone();
    later[1] = (later[1].parse::<i64>().unwrap() + 3600).to_string();
    forged.push(later.join("."));
    // The last hex digit changed (never to itself).
    let last = if parts[3].ends_with('0') { '1' } else { '0' };
    parts[3] = format!("{}{last}", &parts[3][..parts[3].len() - 1]);
    forged.push(parts.join("."));
    forged.push("nonsense".into());
    for token in forged {
        let (status, body, cache, robots) = open(&server, &format!("{}/cms/preview/{token}", server.base));
        assert_eq!(
            (status, body["success"].as_bool(), body["code"].as_u64()),
            (401, Some(false), Some(401)),
            "{token}: {body}"
        );
        assert_eq!((cache.as_str(), robots.as_str()), ("private, no-store", "noindex"));
    }

    // Bad requests.
    for (body, expected) in [
        (json!({"ttl_secs": 0}), 400),
        (json!({"ttl_secs": 604_801}), 400),
        (json!({"ttl_secs": "soon"}), 400),
        (json!({"ttl": 5}), 400),
    ] {
        assert_eq!(post(&server, &preview, Some(&key), Some(body.clone())).0, expected, "{body}");
    }
    assert_eq!(post(&server, &preview, None, None).0, 401, "editors only");
    assert_eq!(post(&server, &format!("{items}/nothing-here/preview"), Some(&key), None).0, 404);

    // Expiry: the requested lifetime reaches the link (a link ends when the facade's clock
    // passes it: cms-core's tests/it/previews.rs, on a manual clock, with no waiting).
    let asked = time::OffsetDateTime::now_utc();
    let (_, short) = post(&server, &preview, Some(&key), Some(json!({"ttl_secs": 60})));
    let expires = short["expires"].as_str().unwrap();
    let expires =
        time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339).unwrap();
    let lifetime = (expires - asked).whole_seconds();
    assert!((59..=61).contains(&lifetime), "a 60 s link ends {lifetime} s after it was asked for");

    // Revoking every link ends this one; a new one works.
    let revoked = cms(site, &["previews", "revoke-all"]);
    assert!(revoked.status.success() && stdout(&revoked).contains("revoked"));
    assert_eq!(open(&server, &url).0, 401, "revoked at once");
    let (_, fresh) = post(&server, &preview, Some(&key), None);
    let fresh = fresh["url"].as_str().unwrap().to_owned();
    assert_eq!(open(&server, &fresh).0, 200);

    // Deleting the item ends its links.
    let deleted = server
        .agent
        .delete(format!("{}{items}/secret-plan", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .call()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    let (status, body, _, _) = open(&server, &fresh);
    assert_eq!(status, 401, "{body}");

    // A new item under the same name is another item: the old link stays closed.
    let again = json!({"slug": "secret-plan", "date_prefix": false, "fm": {"title": "Another plan"}});
    assert_eq!(post(&server, items, Some(&key), Some(again)).0, 200);
    let (status, body, _, _) = open(&server, &fresh);
    assert_eq!(status, 401, "a link made before the delete opens nothing after it: {body}");
    assert!(body["error"].as_str().unwrap().contains("deleted"), "{body}");
    let (_, newer) = post(&server, &preview, Some(&key), None);
    let (status, body, _, _) = open(&server, newer["url"].as_str().unwrap());
    assert_eq!((status, body["data"]["title"].as_str()), (200, Some("Another plan")));
}

/// The link's host is the one the client asked by when it names this server, a trusted
/// proxy's forwarded host, or the site's URL: never a host a client made up.
#[test]
fn preview_urls_do_not_follow_a_client_sent_forwarded_host() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let link = |headers: &[(&str, &str)]| {
        let mut req =
            server.agent.post(format!("{}/cms/collections/posts/items/hello-world/preview", server.base));
        req = req.header("Authorization", format!("Bearer {key}"));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let mut response = req.send_empty().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.body_mut().read_json().unwrap();
        body["url"].as_str().unwrap().to_owned()
    };
    assert!(link(&[]).starts_with(&format!("{}/cms/preview/", server.base)));
    let forged = link(&[("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https")]);
    assert!(forged.starts_with(&format!("{}/cms/preview/", server.base)), "{forged}");
    let port = server.base.rsplit(':').next().unwrap();
    let by_other_name = link(&[("Host", &format!("rebind.example:{port}"))]);
    let site_url = "https://example.com/cms/preview/";
    assert!(by_other_name.starts_with(site_url), "a Host the site does not name: {by_other_name}");
}

/// A preview token is a credential: the request log names the route, not the token, however
/// the path was spelled.
#[test]
fn preview_tokens_stay_out_of_the_request_log() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let log = site.path().join("server.log");
    let server = Server::start_logging_to(site.path(), &log);
    let (status, link) = post(&server, "/cms/collections/posts/items/hello-world/preview", Some(&key), None);
    assert_eq!(status, 200);
    let token = link["token"].as_str().unwrap().to_owned();
    for spelled in [format!("/cms/preview/{token}"), format!("/cms/%70review/{token}")] {
        assert_eq!(open(&server, &format!("{}{spelled}", server.base)).0, 200, "{spelled}");
    }
    let mac = token.rsplit('.').next().unwrap();
    // Both requests were logged (by the log's own thread, soon after each ends).
    let logged = crate::poll(
        || std::fs::read_to_string(&log).unwrap(),
        |logged| logged.matches("/cms/preview/…").count() >= 2,
    );
    assert!(logged.matches("/cms/preview/…").count() >= 2, "{logged}");
    assert!(!logged.contains(mac), "{logged}");
}
