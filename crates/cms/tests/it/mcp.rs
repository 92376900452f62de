//! The AI-agent endpoint `/mcp` and `GET /cms/search` on the real server: the gate (401,
//! 402, 403) over plain HTTP, search kept in step with writes and outside edits, and the
//! whole endpoint driven by the official MCP Python SDK (`mcp_client.py`).
//!
//! The SDK check runs when a Python with the `mcp` package is found (`CMS_PYTHON`, else the
//! venv `.ci/run` makes under `target/validators-venv`, else `python3`) and is skipped with
//! a note otherwise; `CMS_REQUIRE_VALIDATORS=1` (set by `.ci/run`) makes a missing SDK fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{Server, cms, demo_site, poll, stdout, user_with_key};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/mcp_client.py");
const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn mcp_key(site: &Path, email: &str) -> String {
    let output = cms(site, &["keys", "create", "--user", email, "--mcp"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    stdout(&output).lines().last().unwrap().to_owned()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}"#;

/// `POST /mcp` of an `initialize` request: status, headers of interest, body.
fn initialize(
    server: &Server,
    key: Option<&str>,
    origin: Option<&str>,
) -> (u16, Option<String>, Option<String>, String) {
    let mut req = server
        .agent
        .post(format!("{}/mcp", server.base))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    if let Some(key) = key {
        req = req.header("Authorization", format!("Bearer {key}"));
    }
    if let Some(origin) = origin {
        req = req.header("Origin", origin);
    }
    let mut response = req.send(INITIALIZE).unwrap();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (authenticate, session) = (header("www-authenticate"), header("mcp-session-id"));
    let body = response.body_mut().read_to_string().unwrap_or_default();
    (response.status().as_u16(), authenticate, session, body)
}

#[test]
fn mcp_keys_are_listed_revoked_and_refused_by_the_rest_api() {
    let site = demo_site();
    let api = user_with_key(site.path(), "ed@example.com", "editor");
    let agent = mcp_key(site.path(), "ed@example.com");
    assert!(agent.starts_with("mcp_") && agent.len() == 4 + 64, "{agent}");
    let listed = stdout(&cms(site.path(), &["keys", "list"]));
    let line = listed.lines().find(|l| l.starts_with("mcpkey_")).unwrap_or_else(|| panic!("{listed}"));
    assert!(line.ends_with(" mcp") && line.contains("ed@example.com"), "{listed}");
    assert!(!listed.contains(&agent[4..]), "the plaintext is never stored or listed");

    let server = Server::start(site.path());
    let (status, body) = server.get("/cms/collections/blog-posts/items?status=all", Some(&agent));
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("AI-agent"), "{body}");
    let (status, _, session, _) = initialize(&server, Some(&agent), None);
    assert_eq!(status, 200);
    assert!(session.is_some(), "a session starts");

    let id = line.split(' ').next().unwrap();
    assert!(cms(site.path(), &["keys", "revoke", id]).status.success());
    let (status, _, _, body) = initialize(&server, Some(&agent), None);
    assert_eq!(status, 401, "revocation takes effect on the next request: {body}");
    assert!(body.contains("unknown or revoked mcp_ key"), "{body}");
    assert_eq!(
        server.get("/cms/collections/blog-posts/items?status=all", Some(&api)).0,
        200,
        "api_ keys still work"
    );
}

#[test]
fn the_gate_answers_401_403_and_lists_the_endpoint() {
    let site = demo_site();
    let api = user_with_key(site.path(), "owner@example.com", "owner");
    let agent = mcp_key(site.path(), "owner@example.com");
    let server = Server::start(site.path());

    let (status, authenticate, _, body) = initialize(&server, None, None);
    assert_eq!((status, authenticate.as_deref()), (401, Some("Bearer")), "{body}");
    assert!(body.contains("needs an mcp_ key"), "{body}");
    let (status, authenticate, _, body) = initialize(&server, Some(&api), None);
    assert_eq!((status, authenticate.as_deref()), (401, Some("Bearer")), "{body}");
    assert!(body.contains("api_ keys belong to the REST API"), "{body}");
    let (status, _, _, body) = initialize(&server, Some("mcp_0000"), None);
    assert_eq!(status, 401, "{body}");

    let (status, _, _, body) = initialize(&server, Some(&agent), Some("https://evil.example"));
    assert_eq!(status, 403, "a foreign browser origin is refused: {body}");
    let (status, _, session, body) = initialize(&server, Some(&agent), Some("https://example.com"));
    assert_eq!(status, 200, "the site's own origin passes: {body}");
    assert!(session.is_some());
    assert!(body.contains("\"serverInfo\"") && body.contains("\"cms\""), "{body}");

    // A session id that does not exist, and an oversized request, are refused clearly.
    let mut unknown = server
        .agent
        .post(format!("{}/mcp", server.base))
        .header("Authorization", format!("Bearer {agent}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("Mcp-Session-Id", "no-such-session")
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404, "{}", unknown.body_mut().read_to_string().unwrap_or_default());
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(1_100_000)
    );
    let status = server
        .agent
        .post(format!("{}/mcp", server.base))
        .header("Authorization", format!("Bearer {agent}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .send(huge)
        .map(|r| r.status().as_u16());
    assert!(matches!(status, Ok(413)) || status.is_err(), "over the JSON limit: {status:?}");

    let (status, described) = server.get("/cms/", Some(&api));
    assert_eq!(status, 200);
    assert_eq!(described["data"]["agent_endpoint"]["path"], "/mcp", "{described}");
}

#[test]
fn without_the_mcp_feature_the_endpoint_is_402_and_rest_still_works() {
    let site = demo_site();
    fs::write(site.path().join(".cms/license.yaml"), "licensee: Demo\nfeatures: [json_api]\n").unwrap();
    user_with_key(site.path(), "owner@example.com", "owner");
    let agent = mcp_key(site.path(), "owner@example.com");
    let server = Server::start(site.path());
    let (status, _, _, body) = initialize(&server, Some(&agent), None);
    assert_eq!(status, 402, "{body}");
    assert!(body.contains("mcp"), "{body}");
    assert_eq!(server.get("/cms/collections", None).0, 200);
    sdk(&server, &agent, "-", "no-license");
}

#[test]
fn search_ranks_hides_drafts_and_follows_writes_and_outside_edits() {
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let posts = site.path().join("content/posts");
    fs::write(
        posts.join("2026-05-01-body.md"),
        "---\ntitle: Other\nstatus: published\n---\nAll about walruses.\n",
    )
    .unwrap();
    fs::write(
        posts.join("2026-05-02-tag.md"),
        "---\ntitle: Another\nstatus: published\ntags: [Walrus]\n---\nNo.\n",
    )
    .unwrap();
    fs::write(posts.join("2026-05-03-title.md"), "---\ntitle: Walrus facts\nstatus: published\n---\nNo.\n")
        .unwrap();
    fs::write(posts.join("2026-05-04-draft.md"), "---\ntitle: Walrus draft\nstatus: draft\n---\nNo.\n")
        .unwrap();
    let server = Server::start(site.path());
    let slugs = |body: &Value| -> Vec<String> {
        body["data"].as_array().unwrap().iter().map(|h| h["slug"].as_str().unwrap().to_owned()).collect()
    };

    let (status, body) = server.get("/cms/search?q=walrus", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(slugs(&body), ["title", "tag", "body"], "title above tags above body, drafts hidden: {body}");
    assert_eq!(body["meta"]["totalItems"], 3);
    let snippet = body["data"][2]["snippet"].as_str().unwrap();
    assert_eq!(snippet, "All about <mark>walruses</mark>.", "{body}");
    let (_, body) = server.get("/cms/search?q=walr&collection=blog-posts&per_page=1&page=2", Some(&key));
    assert_eq!(slugs(&body), ["draft"], "a prefix, a key sees drafts, paged: {body}");
    assert_eq!(body["meta"]["totalItems"], 4);

    for (query, status) in [("", 400), ("?q=", 400), ("?q=x&page=0", 400), ("?q=x&collection=nope", 404)] {
        let (got, body) = server.get(&format!("/cms/search{query}"), None);
        assert_eq!(got, status, "{query}: {body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    }
    assert_eq!(server.get("/cms/search?q=%21%21%21", None).1["data"], json!([]), "no words: nothing");

    // A write through the API is found by the next request; an outside edit soon after.
    let created = server
        .agent
        .post(format!("{}/cms/collections/blog-posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(r#"{"fm":{"title":"Narwhal news","status":"published"},"body":"Tusks."}"#)
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);
    assert_eq!(slugs(&server.get("/cms/search?q=narwhal", None).1), ["narwhal-news"]);
    fs::write(
        posts.join("2026-05-01-body.md"),
        "---\ntitle: Other\nstatus: published\n---\nAll about seals.\n",
    )
    .unwrap();
    let seen = poll(|| server.get("/cms/search?q=seal", None).1, |b| slugs(b) == ["body"]);
    assert_eq!(slugs(&seen), ["body"], "an outside edit is searchable: {seen}");
    assert_eq!(
        slugs(&server.get("/cms/search?q=walrus", None).1),
        ["title", "tag"],
        "its old words are gone"
    );
    fs::remove_file(posts.join("2026-05-03-title.md")).unwrap();
    let seen = poll(|| server.get("/cms/search?q=walrus", None).1, |b| slugs(b) == ["tag"]);
    assert_eq!(slugs(&seen), ["tag"], "a removed file is not found: {seen}");
}

#[test]
fn the_official_python_sdk_drives_every_tool_and_resource() {
    let site = demo_site();
    let api = user_with_key(site.path(), "ed@example.com", "editor");
    let agent = mcp_key(site.path(), "ed@example.com");
    let server = Server::start(site.path());
    if !sdk(&server, &agent, &api, "full") {
        return;
    }
    // The tools wrote through the facade: the item's history is there on REST.
    let (status, versions) =
        server.get("/cms/collections/blog-posts/items/zebra-crossing/versions", Some(&api));
    assert_eq!(status, 200, "{versions}");
    assert!(versions["versions"].as_array().unwrap().len() >= 3, "every write kept a version: {versions}");
    assert_eq!(versions["current"], Value::Null, "deleted by the agent");
}

/// Runs `mcp_client.py` in `mode`; `false` when the SDK is missing and that is allowed.
fn sdk(server: &Server, agent: &str, api: &str, mode: &str) -> bool {
    let Some(python) = python_with_sdk() else {
        assert!(
            !std::env::var("CMS_REQUIRE_VALIDATORS").is_ok_and(|v| v == "1"),
            "CMS_REQUIRE_VALIDATORS=1 but no Python with the mcp package (run .ci/run)"
        );
        eprintln!("note: skipping the MCP SDK check: no Python with the mcp package (run .ci/run)");
        return false;
    };
    let output = Command::new(python)
        .args([SCRIPT, &format!("{}/mcp", server.base), agent, api, mode])
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the MCP SDK check failed:\n{out}\n{err}");
    assert!(out.contains("all checks passed"), "{out}");
    true
}

fn python_with_sdk() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/validators-venv/bin/python");
    let candidates = [std::env::var_os("CMS_PYTHON").map(PathBuf::from), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import mcp.client.streamable_http, httpx2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}
