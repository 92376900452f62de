//! The live event stream (`GET /cms/events`) read by real clients: Python's httpx with
//! httpx-sse (`events_sse.py`) and the WHATWG `EventSource` of the npm package
//! `eventsource` on Node (`events_sse.mjs`). Each script says what it checks; here they
//! run against a real server whose streams send a keep-alive every second.
//!
//! The Python is `CMS_PYTHON`, else the venv `cargo xtask test` makes under
//! `target/validators-venv`, else `python3` (the first that imports httpx and httpx_sse);
//! the package folder is `CMS_EVENTSOURCE_JS`, else `target/eventsource/node_modules/eventsource`,
//! run with `node` (18 or later, for its fetch). A missing one records the check as
//! skipped (`cms_s3::testing::skip_check`); `CMS_REQUIRE_VALIDATORS=1` makes it fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::{Server, demo_site, user_with_key};

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const PYTHON_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/events_sse.py");
const NODE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/events_sse.mjs");
/// Each script takes a few seconds; this only stops a hung one.
const TIME_LIMIT: Duration = Duration::from_secs(20);

#[test]
fn python_httpx_sse_follows_resumes_and_hears_keep_alives() {
    let Some(python) = python_with_httpx_sse() else {
        return cms_s3::testing::skip_check(
            "Python's httpx and httpx-sse",
            "cargo xtask test (installs httpx and httpx-sse into target/validators-venv)",
        );
    };
    let (_site, server, key) = serve();
    let mut command = Command::new(python);
    command.args([PYTHON_SCRIPT, &server.base, &key]);
    run(command, "events_sse.py");
}

#[test]
fn the_eventsource_package_follows_resumes_and_opens_with_a_stream_token() {
    let Some(eventsource) = eventsource_package().filter(|_| node_18_or_later()) else {
        return cms_s3::testing::skip_check(
            "Node 18 or later with the npm package eventsource",
            "cargo xtask test (installs eventsource into target/eventsource; needs node >= 18 on PATH)",
        );
    };
    let (_site, server, key) = serve();
    let mut command = Command::new("node");
    command.args([NODE_SCRIPT, &server.base, &key]).env("CMS_EVENTSOURCE_JS", eventsource);
    run(command, "events_sse.mjs");
}

/// A demo site whose streams send a keep-alive every second, its server, and an editor's key.
fn serve() -> (tempfile::TempDir, Server, String) {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("\nevents:"), "the demo config has no events section yet");
    text.push_str("events:\n  keep_alive_secs: 1\n");
    std::fs::write(config, text).unwrap();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    (site, server, key)
}

/// Runs a client script; fails, showing its output, when it fails or takes longer than
/// [`TIME_LIMIT`]. A thread waits for the script, so that no loop polls the clock.
fn run(mut command: Command, what: &str) {
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (ended, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || ended.send(child.wait_with_output()));
    let output: Output = match output.recv_timeout(TIME_LIMIT) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{what} took longer than {TIME_LIMIT:?}");
        }
    };
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{what} failed ({}):\n{out}\n{err}", output.status);
    assert!(out.contains("all checks passed"), "{what} did not finish its checks:\n{out}\n{err}");
}

fn python_with_httpx_sse() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/validators-venv/bin/python");
    let candidates = [std::env::var_os("CMS_PYTHON").map(PathBuf::from), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import httpx, httpx_sse"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The `eventsource` package folder: `CMS_EVENTSOURCE_JS`, else where `cargo xtask test`
/// installs it.
fn eventsource_package() -> Option<PathBuf> {
    let installed = Path::new(WORKSPACE).join("target/eventsource/node_modules/eventsource");
    [std::env::var_os("CMS_EVENTSOURCE_JS").map(PathBuf::from), Some(installed)]
        .into_iter()
        .flatten()
        .find(|folder| folder.join("package.json").is_file())
}

/// Whether `node` is on PATH and new enough for `eventsource` (its global fetch).
fn node_18_or_later() -> bool {
    let Ok(output) = Command::new("node").arg("--version").output() else { return false };
    let version = String::from_utf8_lossy(&output.stdout);
    let major = version.trim().trim_start_matches('v').split('.').next().and_then(|m| m.parse::<u32>().ok());
    output.status.success() && major.is_some_and(|major| major >= 18)
}
