//! A server listens as soon as it starts, and answers `503` with `Retry-After` (and
//! `/status` "indexing", `/readyz` 503) until its first indexing is done.

use std::fs;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::{BIN, Server, demo_site};

/// Reads the server's standard output up to the line that starts with `until`.
fn read_until(lines: &mut impl BufRead, until: &str, seen: &mut Vec<String>) {
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap() == 0 {
            panic!("the server stopped during start-up: {seen:?}");
        }
        let line = line.trim_end().to_owned();
        let found = line.starts_with(until);
        seen.push(line);
        if found {
            return;
        }
    }
}

#[test]
fn a_server_still_indexing_answers_503_with_retry_after_and_status_says_indexing() {
    let site = demo_site();
    let hold = tempfile::tempdir().unwrap();
    // The server reads this FIFO to its end before it indexes: held until the test writes.
    let fifo = hold.path().join("hold");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(site.path())
        .env("CMS_TEST_HOLD_INDEXING", &fifo)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut banner = Vec::new();
    read_until(&mut lines, "listening on", &mut banner);
    let base = banner[0].strip_prefix("listening on ").unwrap().to_owned();
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let server = Server { child, base, agent, banner };

    let list = format!("{}/cms/collections/blog-posts/items", server.base);
    let mut waiting = server.agent.get(&list).call().unwrap();
    assert_eq!(waiting.status(), 503);
    assert_eq!(waiting.headers().get("retry-after").unwrap(), "1");
    let body: serde_json::Value = waiting.body_mut().read_json().unwrap();
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().unwrap().contains("indexed so far"), "{body}");
    let (status, _) = server.get("/cms/collections", None);
    assert_eq!(status, 503, "every route but /status waits");

    let mut starting = server.agent.get(format!("{}/status", server.base)).call().unwrap();
    assert_eq!(starting.status(), 200);
    assert_eq!(starting.headers().get("cache-control").unwrap(), "no-store");
    assert!(starting.headers().get("etag").is_none(), "an answer not to be kept");
    let body: serde_json::Value = starting.body_mut().read_json().unwrap();
    assert_eq!(body["data"]["status"], "indexing", "{body}");
    assert_eq!(body["data"]["indexing"]["indexed"], 0, "{body}");
    // The probes: live, and not ready while indexing, with the reason.
    assert_eq!(server.get("/livez", None).0, 200);
    let (status, body) = server.get("/readyz", None);
    assert_eq!((status, body["checks"]["index"].as_str()), (503, Some("indexing")), "{body}");
    assert!(body["reason"].as_str().unwrap().starts_with("indexing"), "{body}");

    // Let it index, and wait for it to say it is ready.
    drop(fs::OpenOptions::new().write(true).open(&fifo).unwrap());
    let mut rest = Vec::new();
    read_until(&mut lines, "ready", &mut rest);
    assert!(rest.iter().any(|line| line.starts_with("indexed ")), "{rest:?}");
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));

    let (status, body) = server.get("/cms/collections/blog-posts/items", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["totalItems"], 3);
    let (status, body) = server.get("/status", None);
    assert_eq!((status, &body["data"]["status"]), (200, &serde_json::json!("ok")));
    assert!(body["data"].get("indexing").is_none(), "{body}");
    let (status, body) = server.get("/readyz", None);
    assert_eq!((status, body["ready"].as_bool()), (200, Some(true)), "{body}");
}

/// `/readyz` says how far the single items' answers made ahead of their first reads have
/// come (without making the server unready), until every live item's is made.
#[test]
fn readyz_follows_the_answers_made_ahead_until_every_live_item_has_one() {
    use std::time::{Duration, Instant};
    let site = demo_site();
    let server = Server::start(site.path());
    let deadline = Instant::now() + Duration::from_secs(30);
    let answers = loop {
        let (status, body) = server.get("/readyz", None);
        assert_eq!((status, body["ready"].as_bool()), (200, Some(true)), "{body}");
        let stage = body["answers"]["ahead"].as_str().unwrap_or_else(|| panic!("no answers: {body}"));
        assert!(["waiting", "making", "done"].contains(&stage), "{body}");
        if stage == "done" {
            break body["answers"].clone();
        }
        assert!(Instant::now() < deadline, "not done in 30 s: {body}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let live: u64 = ["blog-posts", "pages", "projects", "authors"]
        .iter()
        .map(|collection| {
            let (status, body) = server.get(&format!("/cms/collections/{collection}/items?perPage=1"), None);
            assert_eq!(status, 200, "{collection}: {body}");
            body["meta"]["totalItems"].as_u64().unwrap()
        })
        .sum();
    assert!(live > 3, "the demo site's live items: {live}");
    assert_eq!(answers["made"].as_u64(), Some(live), "{answers}");
}
