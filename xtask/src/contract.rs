//! `cargo xtask contract`: schemathesis (from PyPI, in a virtual environment under
//! `target/`) against a real server on a copy of the demo site, with an owner key, every
//! check enabled and every phase run: the schema's examples, the coverage phase (boundary
//! and invalid values of every parameter and field), fuzzing, and stateful sequences that
//! follow the document's `links` (create an item, then read, patch, delete it and its
//! versions; upload a file, then list and delete it). It must find no server error, no
//! response that breaks docs/openapi.yaml, no valid request refused and no invalid one
//! accepted.
//!
//! `cargo xtask contract [schemathesis run options]` passes extra options on, e.g.
//! `--include-operation-id createItem` or `--max-examples 200` while working on a route.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};

const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// Test cases per operation in the fuzzing phase (and the bound on the stateful phase's
/// scenarios). The coverage phase ignores it: it generates every boundary case the schema
/// defines. 300 gives about 11,000 cases in under two minutes on two cores against the
/// debug build.
const MAX_EXAMPLES: &str = "300";

pub fn run(root: &Path, extra: &[String]) -> anyhow::Result<()> {
    crate::cargo(&["build", "--locked", "-p", "cms"])?;
    let cms = root.join("target/debug/cms");
    let schemathesis = install_schemathesis(root)?;

    let site = root.join("target/contract-site");
    if site.exists() {
        fs::remove_dir_all(&site)?;
    }
    copy_tree(&root.join("fixtures/demo-site"), &site)?;
    seed_history(&site)?;
    let key = owner_key(&cms, &site)?;
    let mut server = Server::start(&cms, &site)?;

    // schemathesis keeps caches in its working directory: under target/, not in the tree.
    let reports = root.join("target/contract-report");
    fs::create_dir_all(&reports)?;
    let started = Instant::now();
    let status = Command::new(schemathesis)
        .current_dir(&reports)
        .arg("--config-file")
        .arg(root.join("xtask/schemathesis.toml"))
        .arg("run")
        .arg(format!("{}/cms/openapi.json", server.base))
        .args(["--header", &format!("Authorization: Bearer {key}")])
        // Every check is enabled in the configuration file (see there why not `--checks`).
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args([
            "--max-examples",
            MAX_EXAMPLES,
            "--workers",
            "1",
            "--seed",
            "1",
            "--generation-database",
            "none",
        ])
        .args(["--suppress-health-check", "all", "--request-timeout", "10"])
        // The event stream never ends by itself: its own tests read it (crates/cms/tests/it/events.rs).
        .args(["--exclude-operation-id", "streamEvents"])
        .args(["--report", "junit", "--report-dir"])
        .arg(&reports)
        .args(extra)
        .status()
        .context("cannot run schemathesis")?;
    server.stop();
    println!("contract: schemathesis took {:.0?} (JUnit report in {})", started.elapsed(), reports.display());
    if !status.success() {
        bail!("schemathesis found responses that break docs/openapi.yaml ({status})");
    }
    Ok(())
}

/// The `timestamp` of the one historical version the contract site starts with: the
/// document's example of `{version}`, so that the examples and the coverage phase read and
/// restore a version that exists.
const SEEDED_VERSION: &str = "1767225600";

/// Gives `hello-world` a history (as docs/api-conventions.md lays it out on disk), which the
/// demo site does not ship.
fn seed_history(site: &Path) -> anyhow::Result<()> {
    let item = site.join(".cms/versions/content/posts/2026-01-12-hello-world.md");
    fs::create_dir_all(&item)?;
    let earlier =
        "---\ntitle: Hello\ndate: 2026-01-12\nstatus: draft\ntags: [announcements]\n---\n\nA first draft.\n";
    fs::write(item.join(format!("{SEEDED_VERSION}.md")), earlier)?;
    Ok(())
}

fn install_schemathesis(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/contract-venv");
    let bin = venv.join("bin/schemathesis");
    if bin.exists() {
        return Ok(bin);
    }
    run_checked(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run_checked(Command::new(venv.join("bin/pip")).args(["install", "--quiet", SCHEMATHESIS]))?;
    Ok(bin)
}

fn owner_key(cms: &Path, site: &Path) -> anyhow::Result<String> {
    run_checked(Command::new(cms).arg("--site").arg(site).args([
        "users",
        "add",
        "--email",
        "owner@example.com",
        "--role",
        "owner",
    ]))?;
    let output = Command::new(cms)
        .arg("--site")
        .arg(site)
        .args(["keys", "create", "--user", "owner@example.com"])
        .output()?;
    if !output.status.success() {
        bail!("cms keys create failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let stdout = String::from_utf8(output.stdout)?;
    stdout.lines().last().map(str::to_owned).context("cms keys create printed no key")
}

/// A debug `cms serve` on a free port of 127.0.0.1, killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Server {
    pub(crate) fn start(cms: &Path, site: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(cms)
            .arg("serve")
            .arg("--site")
            .arg(site)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start cms serve")?;
        let mut lines = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut first = String::new();
        lines.read_line(&mut first)?;
        let base =
            first.trim().strip_prefix("listening on ").context("unexpected start-up output")?.to_owned();
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Ok(Self { child, base })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn run_checked(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

pub(crate) fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
