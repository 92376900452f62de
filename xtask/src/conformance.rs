//! `cargo xtask mcp-conformance`: the official MCP conformance suite's server scenarios
//! (npm `@modelcontextprotocol/conformance`, with Node 22 from the npm package `node`, both
//! installed under `target/conformance` and reused by the next run) against `/mcp` of a
//! debug server on a copy of the demo site.
//!
//! The suite cannot send a key, and `/mcp` needs one: a loopback proxy in front of the
//! server adds `Authorization: Bearer mcp_...` to every request and passes everything else
//! on as it came. The proxy stands in for the server, so a `Host` or `Origin` naming the
//! proxy's own address is rewritten to name the server's; any other name (a rebinding
//! attacker's) passes unchanged.
//!
//! Every server scenario the suite lists must pass, except the ones [`EXCLUDED`] (features
//! this server does not offer, each with its reason) and the ones [`PENDING`] (run and
//! reported, waiting on work elsewhere). A scenario the suite adds in a new version runs
//! too, so an upgrade of [`SUITE`] shows what it asks.
//!
//! `cargo xtask mcp-conformance [SCENARIO...]` runs only the scenarios named.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::contract::{Server, copy_tree, run_checked};

/// The suite, pinned: a new version may add scenarios.
const SUITE: &str = "@modelcontextprotocol/conformance";
const SUITE_VERSION: &str = "0.1.16";
/// The suite needs Node 22 or later; the npm package `node` brings that binary along.
const NODE: &str = "node@22";

/// Scenarios of features this server does not offer.
const EXCLUDED: &[(&str, &str)] = &[
    ("logging-set-level", "the server offers no logging capability"),
    ("completion-complete", "the server offers no completions"),
    ("tools-call-simple-text", "calls the suite's own test tool test_simple_text"),
    ("tools-call-image", "calls the suite's own test tool test_image_content"),
    ("tools-call-audio", "calls the suite's own test tool test_audio_content"),
    ("tools-call-embedded-resource", "calls the suite's own test tool test_embedded_resource"),
    ("tools-call-mixed-content", "calls the suite's own test tool test_multiple_content_types"),
    ("tools-call-with-logging", "calls the suite's own test tool test_tool_with_logging"),
    ("tools-call-error", "calls the suite's own test tool test_error_handling"),
    ("tools-call-with-progress", "calls the suite's own test tool test_tool_with_progress"),
    ("tools-call-sampling", "calls the suite's own test tool test_sampling; the server never samples"),
    ("tools-call-elicitation", "calls the suite's own test tool test_elicitation; the server never elicits"),
    ("json-schema-2020-12", "reads the schema of the suite's own test tool json_schema_2020_12_tool"),
    ("elicitation-sep1034-defaults", "the server never asks the client for input (elicitation)"),
    ("elicitation-sep1330-enums", "the server never asks the client for input (elicitation)"),
    ("server-sse-polling", "calls the suite's own test tool test_reconnection (pending in the suite too)"),
    ("resources-read-text", "reads the suite's own resource test://static-text"),
    ("resources-read-binary", "reads the suite's own resource test://static-binary"),
    ("resources-templates-read", "reads the suite's own template test://template/{id}/data"),
    ("resources-subscribe", "subscribes to the suite's own resource test://watched-resource"),
    ("resources-unsubscribe", "unsubscribes from the suite's own resource test://watched-resource"),
    ("prompts-list", "the server offers no prompts"),
    ("prompts-get-simple", "the server offers no prompts"),
    ("prompts-get-with-args", "the server offers no prompts"),
    ("prompts-get-embedded-resource", "the server offers no prompts"),
    ("prompts-get-with-image", "the server offers no prompts"),
];

/// Scenarios that apply but wait on work elsewhere: run and reported, not failing the run.
const PENDING: &[(&str, &str)] = &[];

pub fn run(root: &Path, only: &[String]) -> anyhow::Result<()> {
    crate::cargo(&["build", "--locked", "-p", "cms"])?;
    let cms = root.join("target/debug/cms");
    let (node, suite) = install(root)?;
    let listed = server_scenarios(&node, &suite)?;
    for (name, _) in EXCLUDED.iter().chain(PENDING) {
        if !listed.iter().any(|l| l == name) {
            bail!(
                "{name} is excluded or pending here but the suite no longer lists it: update xtask/src/conformance.rs"
            );
        }
    }
    if let Some(unknown) = only.iter().find(|name| !listed.contains(name)) {
        bail!("the suite has no server scenario {unknown}; it has {}", listed.join(", "));
    }
    let chosen: Vec<&String> = listed.iter().filter(|name| only.is_empty() || only.contains(name)).collect();

    let site = root.join("target/conformance-site");
    if site.exists() {
        fs::remove_dir_all(&site)?;
    }
    copy_tree(&root.join("fixtures/demo-site"), &site)?;
    let key = mcp_key(&cms, &site)?;
    let server = Server::start(&cms, &site)?;
    let proxy = KeyProxy::start(server.base.trim_start_matches("http://"), &key)?;
    let url = format!("http://{}/mcp", proxy.address);
    let reports = root.join("target/conformance-report");

    let (mut failed, mut passed, mut pending) = (Vec::new(), 0, Vec::new());
    for name in chosen {
        if let Some((_, why)) = EXCLUDED.iter().find(|(n, _)| n == name) {
            println!("mcp-conformance: {name}: excluded ({why})");
            continue;
        }
        let status = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &url, "--scenario", name, "--output-dir"])
            .arg(&reports)
            .status()
            .context("cannot run the conformance suite")?;
        match PENDING.iter().find(|(n, _)| n == name) {
            Some((_, why)) if status.success() => {
                println!("mcp-conformance: {name}: passes now; remove it from PENDING ({why})")
            }
            Some((_, why)) => pending.push(format!("{name} ({why})")),
            None if status.success() => passed += 1,
            None => failed.push(name.clone()),
        }
    }
    println!("mcp-conformance: {passed} scenarios passed (reports in {})", reports.display());
    for name in &pending {
        println!("mcp-conformance: pending, not counted: {name}");
    }
    if !failed.is_empty() {
        bail!("the MCP conformance suite failed: {}", failed.join(", "));
    }
    Ok(())
}

/// Node and the suite's entry point, installed under `target/conformance` unless they are.
fn install(root: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let prefix = root.join("target/conformance");
    let node = prefix.join("node_modules/.bin/node");
    let package = prefix.join("node_modules").join(SUITE);
    let installed = fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|manifest| manifest["version"] == SUITE_VERSION);
    if !installed || !node.exists() {
        fs::create_dir_all(&prefix)?;
        run_checked(
            Command::new("npm")
                .args(["install", "--prefix"])
                .arg(&prefix)
                .args(["--no-audit", "--no-fund", "--save-exact", NODE])
                .arg(format!("{SUITE}@{SUITE_VERSION}")),
        )?;
    }
    Ok((node, package.join("dist/index.js")))
}

/// The server scenarios the suite lists (`  - name [versions]` under "Server scenarios").
fn server_scenarios(node: &Path, suite: &Path) -> anyhow::Result<Vec<String>> {
    let output = Command::new(node).arg(suite).args(["list", "--server"]).output()?;
    if !output.status.success() {
        bail!("the suite cannot list its scenarios: {}", String::from_utf8_lossy(&output.stderr));
    }
    let names: Vec<String> = String::from_utf8(output.stdout)?
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        bail!("the suite listed no server scenarios");
    }
    Ok(names)
}

fn mcp_key(cms: &Path, site: &Path) -> anyhow::Result<String> {
    let email = "owner@example.com";
    run_checked(
        Command::new(cms).arg("--site").arg(site).args(["users", "add", "--email", email, "--role", "owner"]),
    )?;
    let output = Command::new(cms)
        .arg("--site")
        .arg(site)
        .args(["keys", "create", "--user", email, "--mcp"])
        .output()?;
    if !output.status.success() {
        bail!("cms keys create failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let stdout = String::from_utf8(output.stdout)?;
    stdout.lines().last().map(str::to_owned).context("cms keys create printed no key")
}

/// A loopback proxy that adds the key to every request: one request per connection (it
/// asks the server to close after answering), the request's head rewritten, everything
/// else copied byte for byte both ways, so streams stay streams.
struct KeyProxy {
    address: String,
}

impl KeyProxy {
    fn start(upstream: &str, key: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?.to_string();
        let (upstream, authorization) = (upstream.to_owned(), format!("Authorization: Bearer {key}\r\n"));
        let own = address.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, authorization, own) = (upstream.clone(), authorization.clone(), own.clone());
                std::thread::spawn(move || {
                    if let Err(error) = forward(client, &upstream, &own, &authorization) {
                        eprintln!("mcp-conformance proxy: {error}");
                    }
                });
            }
        });
        Ok(Self { address })
    }
}

fn forward(client: TcpStream, upstream: &str, own: &str, authorization: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(()); // closed before a request
        }
        let end = line == "\r\n" || line == "\n";
        let name = line.split(':').next().unwrap_or("").trim().to_ascii_lowercase();
        if !(head.is_empty() || end) && (name == "authorization" || name == "connection") {
            continue;
        }
        if end {
            head.push_str(authorization);
            head.push_str("Connection: close\r\n");
        }
        // The proxy's own address stands for the server's (a rebinding name passes as is).
        if (name == "host" || name == "origin") && line.contains(own) {
            line = line.replace(own, upstream);
        }
        head.push_str(&line);
        if end {
            break;
        }
    }
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(head.as_bytes())?;
    // What the reader holds beyond the head is the body's start.
    server.write_all(reader.buffer())?;
    let (mut to_server, mut from_server) = (server.try_clone()?, server);
    let mut from_client = reader.into_inner();
    let mut to_client = client;
    let upload = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut from_server, &mut to_client);
    let _ = to_client.shutdown(Shutdown::Both);
    let _ = upload.join();
    Ok(())
}
