//! The server's log and request ids (issue 49) over real HTTP: every answer carries
//! `X-Request-Id` (the client's when well formed, else one the server made); with
//! `--log-format json` every line is one JSON object, the request line names the route
//! template, status, time and id, and a line logged while a request is handled carries
//! that request's id too.

use std::process::Command;

use serde_json::Value;

use crate::admin::{Tab, user_with_password};
use crate::{BIN, Server, demo_site, poll};

fn get_with_id(server: &Server, path: &str, id: Option<&str>) -> (u16, String) {
    let mut req = server.agent.get(format!("{}{path}", server.base));
    if let Some(id) = id {
        req = req.header("X-Request-Id", id);
    }
    let response = req.call().unwrap();
    let id =
        response.headers().get("x-request-id").expect("every answer has an id").to_str().unwrap().to_owned();
    (response.status().as_u16(), id)
}

#[test]
fn every_answer_has_a_request_id_and_json_log_lines_carry_it() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(BIN);
    command.args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--site"]).arg(site.path());
    let server = Server::spawn_with(command, "info", log.reopen().unwrap().into());

    // Kept when well formed, made otherwise (24 hex digits), on success and failure alike.
    let list = "/cms/collections/blog-posts/items";
    assert_eq!(get_with_id(&server, list, Some("probe-123")), (200, "probe-123".to_owned()));
    let (status, made) = get_with_id(&server, list, None);
    assert_eq!(status, 200);
    assert!(made.len() == 24 && made.bytes().all(|b| b.is_ascii_hexdigit()), "{made}");
    let (status, replaced) = get_with_id(&server, "/cms/nowhere", Some("not{well}formed"));
    assert_eq!(status, 404);
    assert!(replaced.len() == 24 && replaced != made, "{replaced}");
    assert_eq!(get_with_id(&server, "/livez", Some("probe-live")).1, "probe-live");
    // A line logged while a request is handled (a failed sign-in) names its request.
    let mut tab = Tab::new(&server);
    let form = tab.get("/admin/signin");
    let csrf = form.input("csrf");
    let failed = tab.post(
        "/admin/signin",
        &[("csrf", &csrf), ("email", "owner@example.com"), ("password", "wrong"), ("next", "/admin/")],
        &[("X-Request-Id", "signin-probe")],
    );
    assert_eq!(failed.header("x-request-id"), Some("signin-probe"));
    // The caller: a key by its id, never the key; an editor session by its user.
    let key = crate::user_with_key(site.path(), "ed@example.com", "editor");
    let keyed = server
        .agent
        .get(format!("{}{list}", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("X-Request-Id", "keyed-probe")
        .call()
        .unwrap();
    assert_eq!(keyed.status(), 200);
    assert_eq!(tab.sign_in("owner@example.com", crate::admin::PASSWORD).status, 303);
    let page = tab.get_with("/admin/", &[("X-Request-Id", "session-probe")]);
    assert_eq!(page.status, 200);

    // The lines are written by the log's own thread: wait until the last request's is out.
    let lines: Vec<Value> = poll(
        || {
            std::fs::read_to_string(log.path())
                .unwrap()
                .split_inclusive('\n')
                // A line still being written is read next time.
                .filter_map(|line| line.strip_suffix('\n'))
                .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
                .collect::<Vec<Value>>()
        },
        |lines| lines.iter().any(|line| line["request_id"] == "session-probe"),
    );
    let probe = lines.iter().find(|line| line["request_id"] == "probe-123").expect("the request's line");
    assert_eq!(probe["target"], "cms::access");
    assert_eq!(probe["level"], "INFO");
    assert_eq!(probe["route"], "/cms/collections/{collection}/items", "the template: {probe}");
    assert_eq!(probe["status"], 200);
    assert!(probe["ms"].is_u64() && probe["timestamp"].is_string(), "{probe}");
    let inner = lines
        .iter()
        .find(|line| line["message"] == "a sign-in to the editor failed")
        .expect("the sign-in's own line");
    assert_eq!(inner["span"]["request_id"], "signin-probe", "{inner}");
    assert!(!log_text_holds(&lines, "wrong"), "no password in the log");
    assert_eq!(probe.get("key_id"), None, "an anonymous request names no caller: {probe}");
    let keyed = lines.iter().find(|line| line["request_id"] == "keyed-probe").unwrap();
    let key_id = keyed["key_id"].as_str().expect("the key's id");
    assert!(key_id.starts_with("key_") && !key.contains(key_id), "{keyed}");
    assert!(!log_text_holds(&lines, &key), "no key in the log");
    let session = lines.iter().find(|line| line["request_id"] == "session-probe").unwrap();
    assert_eq!(session["user"], "owner@example.com", "{session}");
    assert_eq!(session.get("key_id"), None, "{session}");
}

fn log_text_holds(lines: &[Value], needle: &str) -> bool {
    lines.iter().any(|line| line.to_string().contains(needle))
}

/// Starts the demo site with `server:` settings, logging text at `info` into a file.
fn logging_server(server_section: &str, level: &str) -> (tempfile::TempDir, tempfile::NamedTempFile, Server) {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("\nserver:"), "the demo has no server: section to merge with");
    std::fs::write(&config, format!("{text}server:\n{server_section}")).unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(BIN);
    command.args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(site.path());
    let server = Server::spawn_with(command, level, log.reopen().unwrap().into());
    (site, log, server)
}

#[test]
fn a_sampled_access_log_keeps_every_error_and_an_access_log_turned_off_keeps_none() {
    // Sampled to nothing: successes go unlogged, errors are logged. A line is queued
    // before its answer is sent, so once the 404's line is out, the 200's would be too.
    let (_site, log, server) = logging_server("  access_log_sample: 0\n", "info");
    assert_eq!(get_with_id(&server, "/cms/collections/blog-posts/items", Some("quiet-ok")).0, 200);
    assert_eq!(get_with_id(&server, "/cms/nowhere", Some("loud-404")).0, 404);
    let text = poll(|| std::fs::read_to_string(log.path()).unwrap(), |text| text.contains("loud-404"));
    let line = text.lines().find(|line| line.contains("loud-404")).unwrap();
    assert!(
        line.contains(" INFO cms::access: request method=GET path=\"/cms/nowhere\" status=404 ms="),
        "the text line as tracing writes it: {line}"
    );
    assert!(!text.contains("quiet-ok"), "{text}");

    // Off in cms.yaml, or in RUST_LOG: no request line at all, while the server's other
    // lines are still written.
    for (section, level) in
        [("  access_log: false\n", "info"), ("  keep_alive_secs: 5\n", "info,cms::access=off")]
    {
        let (_site, log, server) = logging_server(section, level);
        assert_eq!(get_with_id(&server, "/cms/nowhere", Some("unlogged-404")).0, 404);
        // Stopped by SIGTERM, the server writes out what its log holds before it exits.
        let mut server = server;
        let pid = server.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        assert!(server.child.wait().unwrap().success());
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(text.contains("INFO"), "the server logs its start: {text}");
        assert!(!text.contains("cms::access") && !text.contains("unlogged-404"), "{level}: {text}");
    }
}
