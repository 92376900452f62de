//! The AI-agent endpoint `/mcp` and `GET /cms/search` on the real server: the gate (401,
//! 402, 403) over plain HTTP, search kept in step with writes and outside edits, and the
//! whole endpoint driven by the official MCP Python SDK (`mcp_client.py`).
//!
//! The SDK check runs when a Python with the `mcp` package is found (`CMS_PYTHON`, else the
//! venv `cargo xtask test` makes under `target/validators-venv`, else `python3`) and is
//! recorded as skipped otherwise (`cms_s3::testing::skip_check`);
//! `CMS_REQUIRE_VALIDATORS=1` makes a missing SDK fail.
//!
//! Past 800 lines on purpose: each test starts one real server and walks a whole area of
//! the endpoint against it, and the checks read best beside the steps that make them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{Server, cms, demo_site, poll, stdout, user_with_key};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/mcp_client.py");
const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

pub(crate) fn mcp_key(site: &Path, email: &str) -> String {
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
        cms_s3::testing::skip_check("Python's mcp package", cms_s3::testing::INSTALL_PYTHON_PACKAGES);
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

// ---- sessions, errors and the wire, over plain HTTP -----------------------------------

/// One answer of `/mcp`: status, the headers of interest, the body as text.
pub(crate) struct Answer {
    pub(crate) status: u16,
    session: Option<String>,
    content_type: String,
    pub(crate) body: String,
}

impl Answer {
    /// The body as JSON (a plain JSON answer).
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The SSE events of the body, each as its `(id, retry, data)` fields.
    fn events(&self) -> Vec<(Option<String>, Option<String>, String)> {
        self.body
            .split("\n\n")
            .filter(|block| block.lines().any(|l| !l.starts_with(':') && !l.is_empty()))
            .map(|block| {
                let field = |name: &str| {
                    block.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim_start().to_owned())
                };
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|v| v.strip_prefix(' ').unwrap_or(v))
                    .collect();
                (field("id:"), field("retry:"), data.join("\n"))
            })
            .collect()
    }

    /// The one JSON-RPC message of an SSE answer (every event's data must be JSON).
    pub(crate) fn message(&self) -> Value {
        let messages: Vec<Value> = self
            .events()
            .into_iter()
            .map(|(_, _, data)| {
                serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
            })
            .collect();
        assert_eq!(messages.len(), 1, "{}", self.body);
        messages.into_iter().next().unwrap()
    }
}

/// A raw client of `/mcp` with one key.
pub(crate) struct Raw<'a> {
    pub(crate) server: &'a Server,
    pub(crate) key: String,
}

impl Raw<'_> {
    fn request(
        &self,
        method: &str,
        session: Option<&str>,
        protocol: Option<&str>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        let url = format!("{}/mcp", self.server.base);
        let mut req = match method {
            "GET" => self.server.agent.get(url),
            "DELETE" => self.server.agent.delete(url),
            _ => unreachable!(),
        };
        req = req
            .header("Authorization", format!("Bearer {}", self.key))
            .header("Accept", "application/json, text/event-stream");
        if let Some(session) = session {
            req = req.header("Mcp-Session-Id", session);
        }
        if let Some(protocol) = protocol {
            req = req.header("MCP-Protocol-Version", protocol);
        }
        req
    }

    pub(crate) fn post(&self, session: Option<&str>, protocol: Option<&str>, body: &str) -> Answer {
        let mut req = self
            .server
            .agent
            .post(format!("{}/mcp", self.server.base))
            .header("Authorization", format!("Bearer {}", self.key))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        if let Some(session) = session {
            req = req.header("Mcp-Session-Id", session);
        }
        if let Some(protocol) = protocol {
            req = req.header("MCP-Protocol-Version", protocol);
        }
        answer(req.send(body).unwrap())
    }

    /// `initialize` then `notifications/initialized`: the answer to `initialize`.
    fn initialize(&self, protocol: &str) -> Answer {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{protocol}","capabilities":{{}},"clientInfo":{{"name":"it","version":"0"}}}}}}"#
        );
        let answer = self.post(None, None, &init);
        if let Some(session) = &answer.session {
            let done = self.post(
                Some(session),
                Some(protocol),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            );
            assert_eq!(done.status, 202, "{}", done.body);
        }
        answer
    }

    /// A new session's id (2025-06-18).
    pub(crate) fn open(&self) -> String {
        let answer = self.initialize("2025-06-18");
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.session.expect("a session id")
    }

    /// `ping` in `session`.
    fn ping(&self, session: &str) -> Answer {
        self.post(Some(session), None, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
    }

    /// The server's event stream of `session`, held open while the answer lives.
    fn listen(&self, session: &str) -> ureq::http::Response<ureq::Body> {
        let response = self.request("GET", Some(session), None).call().unwrap();
        assert_eq!(response.status().as_u16(), 200, "GET opens the stream");
        response
    }

    fn delete(&self, session: &str) -> Answer {
        answer(self.request("DELETE", Some(session), None).call().unwrap())
    }
}

fn answer(mut response: ureq::http::Response<ureq::Body>) -> Answer {
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (session, content_type) = (header("mcp-session-id"), header("content-type").unwrap_or_default());
    let body = response.body_mut().read_to_string().unwrap_or_default();
    Answer { status: response.status().as_u16(), session, content_type, body }
}

fn with_mcp_settings(site: &Path, settings: &str) {
    let config = site.join("cms.yaml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(settings);
    fs::write(config, text).unwrap();
}

#[test]
fn one_key_holds_at_most_eight_sessions_and_the_oldest_idle_one_goes_first() {
    let site = demo_site();
    user_with_key(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };
    let sessions: Vec<String> = (0..20).map(|_| raw.open()).collect();
    for (n, session) in sessions.iter().enumerate() {
        let status = raw.ping(session).status;
        let expected = if n < 12 { 404 } else { 200 };
        assert_eq!(
            status, expected,
            "session {n} of 20: the 12 oldest made room (mcp.max_sessions_per_key 8)"
        );
    }
}

#[test]
fn busy_sessions_are_kept_and_a_new_one_is_refused_naming_the_setting() {
    let site = demo_site();
    with_mcp_settings(site.path(), "mcp:\n  max_sessions: 3\n  max_sessions_per_key: 2\n");
    user_with_key(site.path(), "owner@example.com", "owner");
    user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let a = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };
    let b = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };

    let idle = a.open();
    let busy = a.open();
    let _busy_stream = a.listen(&busy);
    let third = a.open();
    assert_eq!(a.ping(&idle).status, 404, "the idle session made room");
    assert_eq!(a.ping(&busy).status, 200, "the busy one is kept");
    let _third_stream = a.listen(&third);

    let refused = a.initialize("2025-06-18");
    assert_eq!(refused.status, 429, "{}", refused.body);
    let error = &refused.json()["error"];
    assert_eq!(refused.json()["id"], 1, "{}", refused.body);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("mcp.max_sessions_per_key") && message.contains('2'), "{message}");
    assert!(refused.session.is_none());

    let other = b.open();
    let _other_stream = b.listen(&other);
    let full = b.initialize("2025-06-18");
    assert_eq!(full.status, 503, "{}", full.body);
    let message = full.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("mcp.max_sessions") && message.contains('3'), "{message}");

    // Ending one makes room at once.
    let ended = a.delete(&busy);
    assert!(matches!(ended.status, 200 | 204), "DELETE answers 200 or 204: {} {}", ended.status, ended.body);
    assert_eq!(b.initialize("2025-06-18").status, 200, "room again after a DELETE");
}

#[test]
fn a_session_answers_only_the_key_that_opened_it() {
    let site = demo_site();
    user_with_key(site.path(), "owner@example.com", "owner");
    user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let owner = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };
    let same_user = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };
    let editor = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };
    let session = owner.open();

    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"delete_item","arguments":{"collection":"blog-posts","slug":"hello-world"}}}"#;
    for other in [&editor, &same_user] {
        let answer = other.post(Some(&session), None, call);
        assert_eq!(answer.status, 404, "another key cannot call tools in the session: {}", answer.body);
        assert!(answer.content_type.starts_with("application/json"), "{}", answer.content_type);
        assert!(answer.json()["error"]["message"].as_str().unwrap().contains("session"), "{}", answer.body);
        let stream = other.request("GET", Some(&session), None).call().unwrap();
        assert_eq!(stream.status().as_u16(), 404, "nor listen to it");
        assert_eq!(other.delete(&session).status, 404, "nor end it");
    }
    assert_eq!(
        server.get("/cms/collections/blog-posts/items/hello-world", None).0,
        200,
        "nothing was deleted"
    );
    assert_eq!(owner.ping(&session).status, 200, "the session lives on for its key");
    assert!(matches!(owner.delete(&session).status, 200 | 204));
    assert_eq!(owner.ping(&session).status, 404, "ended");
}

#[test]
fn the_priming_event_goes_only_to_clients_of_2025_11_25() {
    let site = demo_site();
    user_with_key(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    for old in ["2025-03-26", "2025-06-18"] {
        let opened = raw.initialize(old);
        assert_eq!(opened.status, 200, "{}", opened.body);
        assert_eq!(opened.message()["result"]["protocolVersion"], old, "{}", opened.body);
        let session = opened.session.unwrap();
        let answer = raw.post(Some(&session), Some(old), list);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(!answer.body.contains("retry:"), "{old}: no priming event: {:?}", answer.body);
        assert!(answer.message()["result"]["tools"].is_array(), "{old}: every event is a message");
    }
    let opened = raw.initialize("2025-11-25");
    let session = opened.session.unwrap();
    let answer = raw.post(Some(&session), Some("2025-11-25"), list);
    let events = answer.events();
    let (id, retry, data) = &events[0];
    assert!(
        id.is_some() && retry.is_some() && data.is_empty(),
        "2025-11-25: primed first: {:?}",
        answer.body
    );
    assert!(events[1].2.contains("\"tools\""), "{:?}", answer.body);
}

#[test]
fn protocol_errors_are_json_rpc_and_name_what_is_wrong() {
    let site = demo_site();
    user_with_key(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "owner@example.com") };

    let malformed = raw.post(None, None, r#"{"jsonrpc":"2.0","id":1,"method":"#);
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    assert!(malformed.content_type.starts_with("application/json"), "{}", malformed.content_type);
    assert_eq!(malformed.json()["error"]["code"], -32700, "{}", malformed.body);
    assert_eq!(malformed.json()["jsonrpc"], "2.0");

    let unknown = raw.ping("no-such-session");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert!(unknown.content_type.starts_with("application/json"), "{}", unknown.content_type);
    assert!(unknown.json()["error"]["message"].as_str().unwrap().contains("session"), "{}", unknown.body);

    let session = raw.open();
    for method in ["tools/list", "resources/list", "resources/templates/list"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{"cursor":"bogus"}}}}"#);
        let answer = raw.post(Some(&session), None, &body).message();
        assert_eq!(answer["error"]["code"], -32602, "{method} with a bogus cursor: {answer}");
    }

    let call = |arguments: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"list_items","arguments":{arguments}}}}}"#
        );
        let answer = raw.post(Some(&session), None, &body).message();
        assert_eq!(answer["result"]["isError"], true, "{arguments}: {answer}");
        answer["result"]["content"][0]["text"].as_str().unwrap().to_owned()
    };
    let text = call(r#"{"collection":"blog-posts","per_page":"two"}"#);
    assert_eq!(text, "argument `per_page` must be a whole number of 1 or more, got \"two\"");
    let text = call(r#"{"collection":"blog-posts","page":-1}"#);
    assert_eq!(text, "argument `page` must be a whole number of 1 or more, got -1");
    let text = call(r#"{"collection":7}"#);
    assert_eq!(text, "argument `collection` must be a string, got 7");
    let text = call(r#"{"per_page":2}"#);
    assert_eq!(text, "missing argument `collection` (a string)");
    let text = call(r#"{"collection":"blog-posts","colour":"red"}"#);
    assert!(
        text.starts_with("unknown argument `colour`; list_items takes collection, page, per_page"),
        "{text}"
    );

    let ended = raw.delete(&session);
    assert!(matches!(ended.status, 200 | 204), "{} {}", ended.status, ended.body);
}

// ---- the content model: describe_collection, the schema resource, field errors -------

/// Blog posts with a model that uses most types and rules, in place of the demo's; pages
/// without one.
const POSTS_MODEL: &str = r#"  - label: Blog Posts
    path: content/posts
    page_path: /blog
    date_prefix: true
    extra_fields: refuse
    fields:
      title: { type: string, required: true, max_length: 120, description: The headline }
      code: { type: string, min_length: 2, pattern: "[A-Z]+" }
      price: { type: number, min: 0, max: 99.5 }
      rating: { type: integer, min: 1, max: 5, default: 3 }
      featured: { type: boolean, default: false, hidden: true }
      category: { type: select, options: [news, guide] }
      topics: { type: multiselect, options: [rust, web], max_items: 2 }
      tags: { type: tags }
      date: { type: datetime }
      author: { type: string }
      description: { type: text }
      page: { type: reference, collection: pages }
      links: { type: list, of: { type: url }, max_items: 3 }
      seo: { type: object, fields: { title: { type: string }, noindex: { type: boolean } } }
  - label: Pages
    path: content/pages
    page_path: /
"#;

/// The demo site with [`POSTS_MODEL`] for its posts and pages.
fn modelled_site() -> tempfile::TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let start = text.find("  - label: Blog Posts\n").expect("the demo's posts");
    let end = text.find("  - label: Projects\n").expect("the demo's projects, after its pages");
    fs::write(&config, format!("{}{POSTS_MODEL}{}", &text[..start], &text[end..])).unwrap();
    site
}

impl Raw<'_> {
    /// One JSON-RPC request in `session`: its `result` (or the whole message if none).
    fn rpc(&self, session: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
        let answer = self.post(Some(session), None, &body);
        assert_eq!(answer.status, 200, "{method}: {}", answer.body);
        let message = answer.message();
        message.get("result").cloned().unwrap_or(message)
    }

    pub(crate) fn call_tool(&self, session: &str, name: &str, arguments: Value) -> Value {
        self.rpc(session, "tools/call", json!({"name": name, "arguments": arguments}))
    }
}

/// A REST request with a JSON body: status and JSON answer.
fn rest(server: &Server, method: &str, path: &str, key: &str, body: Value) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let request = match method {
        "POST" => server.agent.post(url),
        "PATCH" => server.agent.patch(url),
        _ => unreachable!(),
    };
    let mut response = request
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap();
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or(Value::Null))
}

#[test]
fn describe_collection_answers_each_field_its_rules_and_the_json_schema() {
    let site = modelled_site();
    let api = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };
    let session = raw.open();

    let tools = raw.rpc(&session, "tools/list", json!({}));
    let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "describe_collection");
    let tool = tool.unwrap_or_else(|| panic!("listed: {tools}"));
    assert_eq!(tool["inputSchema"]["required"], json!(["collection"]), "{tool}");
    assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");

    // Once the index is built, a modelled collection counts its items that break the model,
    // as GET /cms/collections does.
    let counted = poll(|| server.get("/cms/collections", None).1, |c| c["data"][0]["invalid_items"] == 0);
    assert_eq!(counted["data"][0]["invalid_items"], 0, "{counted}");
    let listed = raw.call_tool(&session, "list_collections", json!({}));
    let rest_listed: Vec<Value> = counted["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.get("invalid_items").cloned().unwrap_or(Value::Null))
        .collect();
    let mcp_listed: Vec<Value> = listed["structuredContent"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.get("invalid_items").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(mcp_listed, rest_listed, "{listed}");
    let modelled: Vec<(&str, bool)> = listed["structuredContent"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["slug"].as_str().unwrap(), c["has_model"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        modelled,
        [("blog-posts", true), ("pages", false), ("projects", true), ("authors", true)],
        "{listed}"
    );

    let result = raw.call_tool(&session, "describe_collection", json!({"collection": "blog-posts"}));
    assert_eq!(result["isError"], false, "{result}");
    let described = &result["structuredContent"];
    assert_eq!(
        serde_json::from_str::<Value>(result["content"][0]["text"].as_str().unwrap()).unwrap(),
        *described,
        "the text is the same JSON"
    );
    let (status, schema) = server.get("/cms/collections/blog-posts/schema", None);
    assert_eq!(status, 200);
    assert_eq!(
        *described,
        json!({
            "index": 0,
            "label": "Blog Posts",
            "slug": "blog-posts",
            "path": "content/posts",
            "invalid_items": 0,
            "has_model": true,
            "note": "Every write of fm is checked against these fields (after update_item merges it): a failing write names each failing field; keys it does not name are refused, but for the server's own status, draft, publish_date and unpublish_date. New items get the defaults.",
            "extra_fields": "refuse",
            "fields": [
                {"name": "title", "type": "string", "required": true, "hidden": false,
                 "description": "The headline", "max_length": 120},
                {"name": "code", "type": "string", "required": false, "hidden": false,
                 "min_length": 2, "pattern": "[A-Z]+"},
                {"name": "price", "type": "number", "required": false, "hidden": false, "min": 0, "max": 99.5},
                {"name": "rating", "type": "integer", "required": false, "hidden": false, "default": 3,
                 "min": 1, "max": 5},
                {"name": "featured", "type": "boolean", "required": false, "hidden": true, "default": false},
                {"name": "category", "type": "select", "required": false, "hidden": false,
                 "options": ["news", "guide"]},
                {"name": "topics", "type": "multiselect", "required": false, "hidden": false,
                 "options": ["rust", "web"], "max_items": 2},
                {"name": "tags", "type": "tags", "required": false, "hidden": false},
                {"name": "date", "type": "datetime", "required": false, "hidden": false},
                {"name": "author", "type": "string", "required": false, "hidden": false},
                {"name": "description", "type": "text", "required": false, "hidden": false},
                {"name": "page", "type": "reference", "required": false, "hidden": false, "collection": "pages"},
                {"name": "links", "type": "list", "required": false, "hidden": false, "max_items": 3,
                 "of": {"name": "links", "type": "url", "required": false, "hidden": false}},
                {"name": "seo", "type": "object", "required": false, "hidden": false, "fields": [
                    {"name": "title", "type": "string", "required": false, "hidden": false},
                    {"name": "noindex", "type": "boolean", "required": false, "hidden": false},
                ]},
            ],
            "schema": schema,
            "schema_uri": "cms://blog-posts/schema",
        })
    );

    // Without a model: said plainly, no fields, the schema of any object.
    let pages = raw.call_tool(&session, "describe_collection", json!({"collection": "1"}));
    let (_, any) = server.get("/cms/collections/pages/schema", None);
    assert_eq!(
        pages["structuredContent"],
        json!({
            "index": 1, "label": "Pages", "slug": "pages", "path": "content/pages",
            "has_model": false,
            "note": "This collection has no content model: any frontmatter is accepted.",
            "fields": [],
            "schema": any,
            "schema_uri": "cms://pages/schema",
        })
    );

    // An unknown collection: a tool error in the REST route's words, as for other tools.
    let unknown = raw.call_tool(&session, "describe_collection", json!({"collection": "nope"}));
    let listed = raw.call_tool(&session, "list_items", json!({"collection": "nope"}));
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert_eq!(unknown["content"], listed["content"], "{unknown}");
    assert_eq!(unknown.get("structuredContent"), None, "{unknown}");
    let (status, rest_body) = server.get("/cms/collections/nope/schema", None);
    assert_eq!(status, 404);
    assert_eq!(unknown["content"][0]["text"], rest_body["error"], "{rest_body}");

    // The official SDK reads the description, the schema resource and a refused write's fields.
    sdk(&server, &raw.key, &api, "model");
}

#[test]
fn the_schema_is_a_resource_of_each_collection() {
    let site = modelled_site();
    user_with_key(site.path(), "ed@example.com", "editor");
    // An item whose slug is the schema's segment is listed and read by its filename.
    fs::write(
        site.path().join("content/posts/2026-05-01-schema.md"),
        "---\ntitle: Schema\n---\nOn schemas.\n",
    )
    .unwrap();
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };
    let session = raw.open();

    let templates = raw.rpc(&session, "resources/templates/list", json!({}));
    let templates: Vec<(&str, &str)> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["uriTemplate"].as_str().unwrap(), t["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        templates,
        [
            ("cms://{collection}/{slug}", "text/markdown"),
            ("cms://{collection}/schema", "application/schema+json")
        ]
    );
    let listed = raw.rpc(&session, "resources/list", json!({}));
    let listed: Vec<(&str, &str)> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("cms://blog-posts", "application/json"),
            ("cms://pages", "application/json"),
            ("cms://projects", "application/json"),
            ("cms://authors", "application/json"),
            ("cms://blog-posts/schema", "application/schema+json"),
            ("cms://projects/schema", "application/schema+json"),
            ("cms://authors/schema", "application/schema+json"),
        ],
        "the schemas of the modelled collections are listed"
    );

    for (uri, rest_path) in [
        ("cms://blog-posts/schema", "/cms/collections/blog-posts/schema"),
        ("cms://0/schema", "/cms/collections/blog-posts/schema"),
        ("cms://pages/schema", "/cms/collections/pages/schema"),
    ] {
        let read = raw.rpc(&session, "resources/read", json!({"uri": uri}));
        let contents = &read["contents"][0];
        assert_eq!(
            (contents["uri"].as_str(), contents["mimeType"].as_str()),
            (Some(uri), Some("application/schema+json"))
        );
        let schema: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
        assert_eq!(schema, server.get(rest_path, None).1, "{uri} is the REST route's schema");
    }
    let missing = raw.rpc(&session, "resources/read", json!({"uri": "cms://nope/schema"}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");

    let items = raw.rpc(&session, "resources/read", json!({"uri": "cms://blog-posts"}));
    let items: Value = serde_json::from_str(items["contents"][0]["text"].as_str().unwrap()).unwrap();
    let uris = items["items"].as_array().unwrap();
    assert!(uris.contains(&json!("cms://blog-posts/2026-05-01-schema.md")), "{items}");
    assert!(!uris.contains(&json!("cms://blog-posts/schema")), "{items}");
    let read = raw.rpc(&session, "resources/read", json!({"uri": "cms://blog-posts/2026-05-01-schema.md"}));
    assert!(read["contents"][0]["text"].as_str().unwrap().contains("On schemas."), "{read}");
}

/// The same invalid write through REST and MCP (create, update, restore) is refused with
/// the same fields; the tool error carries them as data.
#[test]
fn a_write_tool_that_breaks_the_model_names_the_same_fields_as_rest() {
    let site = modelled_site();
    let api = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };
    let session = raw.open();

    // A refused tool call: the sentence first, then {error, fields} as data and as JSON.
    let refused = |result: &Value, rest_body: &Value| {
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result.get("structuredContent"), None, "{result}");
        let data: Value = serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
        let data = &data;
        assert_eq!(data["fields"], rest_body["fields"], "the same fields as REST: {result} {rest_body}");
        assert!(data["fields"].as_array().is_some_and(|f| !f.is_empty()), "{result}");
        assert_eq!(data["error"], rest_body["error"], "REST's sentence: {result}");
        assert_eq!(result["content"][0], json!({"type": "text", "text": rest_body["error"]}), "{result}");
        let text: Value = serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, *data, "{result}");
    };

    let fm = json!({
        "rating": 9, "price": -1, "category": "gossip", "links": ["https://a.example", "nope"],
        "page": "no-such-page", "colour": "red",
    });
    let (status, rest_body) =
        rest(&server, "POST", "/cms/collections/blog-posts/items", &api, json!({"slug": "broken", "fm": fm}));
    assert_eq!(status, 400, "{rest_body}");
    assert_eq!(
        rest_body["fields"],
        json!([
            {"field": "fm.title", "message": "is required"},
            {"field": "fm.price", "message": "must be a number from 0 to 99.5, got -1"},
            {"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 9"},
            {"field": "fm.category", "message": "must be one of news, guide; got \"gossip\""},
            {"field": "fm.links[1]", "message": "must be an absolute http(s) URL, got \"nope\""},
            {"field": "fm.colour", "message": "is not a field of this collection (its fields: title, code, price, rating, featured, category, topics, tags, date, author, description, page, links, seo)"},
            {"field": "fm.page", "message": "names \"no-such-page\", but pages has no item with that slug"},
        ]),
        "{rest_body}"
    );
    let created = raw.call_tool(
        &session,
        "create_item",
        json!({"collection": "blog-posts", "slug": "broken", "fm": fm}),
    );
    refused(&created, &rest_body);

    let patch = json!({"fm": {"rating": 0, "seo": {"noindex": "yes"}}});
    let (status, rest_body) =
        rest(&server, "PATCH", "/cms/collections/blog-posts/items/hello-world", &api, patch.clone());
    assert_eq!(status, 400, "{rest_body}");
    let updated = raw.call_tool(
        &session,
        "update_item",
        json!({"collection": "blog-posts", "slug": "hello-world", "fm": patch["fm"]}),
    );
    refused(&updated, &rest_body);

    // A version that breaks the model (a hand edit, then replaced) is refused on restore.
    let post = site.path().join("content/posts/2026-01-12-hello-world.md");
    let text = fs::read_to_string(&post).unwrap().replacen("author: ada\n", "author: ada\nrating: 7\n", 1);
    fs::write(&post, text).unwrap();
    let saved = poll(
        || {
            rest(
                &server,
                "PATCH",
                "/cms/collections/blog-posts/items/hello-world",
                &api,
                json!({"fm": {"rating": 2}}),
            )
        },
        |(status, _)| *status == 200,
    );
    assert_eq!(saved.0, 200, "{}", saved.1);
    let (_, versions) = server.get("/cms/collections/blog-posts/items/hello-world/versions", Some(&api));
    let version = versions["versions"][0]["timestamp"].as_i64().unwrap_or_else(|| panic!("{versions}"));
    let (status, rest_body) = rest(
        &server,
        "POST",
        &format!("/cms/collections/blog-posts/items/hello-world/versions/{version}/restore"),
        &api,
        json!({}),
    );
    assert_eq!(status, 400, "{rest_body}");
    assert_eq!(
        rest_body["fields"],
        json!([{"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 7"}])
    );
    let restored = raw.call_tool(
        &session,
        "restore_version",
        json!({"collection": "blog-posts", "slug": "hello-world", "version": version}),
    );
    refused(&restored, &rest_body);

    // Any other failure stays a plain tool error, without data.
    let missing =
        raw.call_tool(&session, "update_item", json!({"collection": "blog-posts", "slug": "nope", "fm": {}}));
    assert_eq!(missing["isError"], true, "{missing}");
    assert_eq!(missing.get("structuredContent"), None, "{missing}");
    assert_eq!(missing["content"].as_array().unwrap().len(), 1, "{missing}");
}

/// `list_items` takes the REST list's field filters as an object (`price[gte]` for
/// `filter[price][gte]`), with `orderBy` on a field, `fields` and `expand`, on the demo's
/// own model, and answers the entries REST does; an unknown field is refused by name.
#[test]
fn list_items_filters_orders_and_expands_as_the_rest_list_does() {
    let site = demo_site();
    let api = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let raw = Raw { server: &server, key: mcp_key(site.path(), "ed@example.com") };
    let session = raw.open();

    let query = "filter%5Bauthor%5D=ada&filter%5Bdate%5D%5Bgte%5D=2026-01-01&orderBy=date&direction=asc&fields=date&expand=author";
    let (status, rest_list) = server.get(&format!("/cms/collections/blog-posts/items?{query}"), Some(&api));
    assert_eq!(status, 200, "{rest_list}");
    let listed = raw.call_tool(
        &session,
        "list_items",
        json!({
            "collection": "blog-posts",
            "filter": {"author": "ada", "date[gte]": "2026-01-01"},
            "orderBy": "date", "direction": "asc", "fields": "date", "expand": "author",
        }),
    );
    assert_ne!(listed["isError"], true, "{listed}");
    let entries = |list: &Value| -> Vec<(Value, Value)> {
        list.as_array().unwrap().iter().map(|e| (e["slug"].clone(), e["fm"].clone())).collect()
    };
    let mcp_entries = entries(&listed["structuredContent"]["items"]);
    assert_eq!(mcp_entries, entries(&rest_list["data"]), "{listed}");
    let slugs: Vec<&Value> = mcp_entries.iter().map(|(slug, _)| slug).collect();
    assert_eq!(slugs, [&json!("hello-world"), &json!("tables-and-lists")], "ada's posts, oldest first");
    assert_eq!(mcp_entries[0].1["author"]["title"], "Ada Lovelace", "{listed}");

    let refused = raw.call_tool(
        &session,
        "list_items",
        json!({"collection": "blog-posts", "filter": {"colour": "red"}}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("filter[colour]: this collection has no field \"colour\""), "{text}");
}
