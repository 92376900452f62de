//! The web editor in a real browser: `tests/browser/admin_tour.py` drives Debian's
//! Chromium through Selenium against the real server (see that script for the steps).
//!
//! Each script runs when Chromium, its driver, Python's `selenium` and axe-core are installed, and is
//! recorded as skipped otherwise (`cms_s3::testing::skip_check`: `cargo xtask test` lists
//! it); `CMS_REQUIRE_VALIDATORS=1` turns a missing one into a failure. The Python is `CMS_BROWSER_PYTHON`, else the venv
//! `.ci/run` makes under `target/browser-venv`. Screenshots go to `CMS_ADMIN_SCREENSHOTS`
//! (relative to the workspace), else `target/admin-screenshots`; `docs/admin/` holds the
//! ones of the documentation:
//! `CMS_ADMIN_SCREENSHOTS=docs/admin cargo test -p cms --test it admin_browser`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::admin::{PASSWORD, user_with_password};
use crate::{Server, demo_site};

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// The whole tour takes well under a minute; this only stops a hung browser.
const TIME_LIMIT: Duration = Duration::from_secs(150);

fn runs(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn python() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/browser-venv/bin/python");
    [std::env::var_os("CMS_BROWSER_PYTHON").map(PathBuf::from), Some(venv)]
        .into_iter()
        .flatten()
        .find(|python| runs(python, &["-c", "import selenium"]))
}

fn tool(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

#[test]
fn the_editor_works_in_a_real_browser() {
    let Some(tools) = browser_tools() else { return };
    let site = demo_site();
    // The tour's webhook is on loopback (nothing listens there; its delivery fails).
    let config = site.path().join("cms.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("webhooks:\n", "webhooks:\n  allow_private_addresses: true\n");
    assert!(text.contains("allow_private_addresses"), "the demo config has a webhooks section");
    std::fs::write(config, text).unwrap();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "editor@example.com", "editor");
    let server = Server::start(site.path());
    run_script(&tools, "admin_tour.py", &server, &[]);
}

/// What a browser script needs: a Python with selenium, Chromium, its driver, axe-core.
pub struct BrowserTools {
    python: PathBuf,
    chromium: PathBuf,
    driver: PathBuf,
    axe: PathBuf,
}

/// The browser tools, or `None` after recording the check as skipped (a failure under
/// `CMS_REQUIRE_VALIDATORS=1`).
pub fn browser_tools() -> Option<BrowserTools> {
    let chromium = tool("CMS_CHROMIUM", "/usr/bin/chromium");
    let driver = tool("CMS_CHROMEDRIVER", "/usr/bin/chromedriver");
    let python = python();
    let axe = axe_script();
    let missing: Vec<&str> = [
        (python.is_none(), "Python's selenium (target/browser-venv)"),
        (!runs(&chromium, &["--version"]), "chromium"),
        (!runs(&driver, &["--version"]), "chromium-driver"),
        (axe.is_none(), "axe-core (target/axe)"),
    ]
    .into_iter()
    .filter_map(|(missing, what)| missing.then_some(what))
    .collect();
    if !missing.is_empty() {
        cms_s3::testing::skip_check(
            &missing.join(", "),
            "apt-get install chromium chromium-driver (needs root), then cargo xtask test (installs selenium into target/browser-venv and axe-core into target/axe)",
        );
        return None;
    }
    Some(BrowserTools { python: python?, chromium, driver, axe: axe? })
}

/// Runs `tests/browser/{script}` (which imports `tests/browser/editor.py`) against
/// `server`, signed in as `owner@example.com` or `editor@example.com` (both with
/// [`PASSWORD`], made by the caller); `env` adds variables of the script's own.
pub fn run_script(tools: &BrowserTools, script: &str, server: &Server, env: &[(&str, &str)]) {
    let shots = Path::new(WORKSPACE)
        .join(std::env::var_os("CMS_ADMIN_SCREENSHOTS").unwrap_or_else(|| "target/admin-screenshots".into()));
    std::fs::create_dir_all(&shots).unwrap();
    let mut command = Command::new(&tools.python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser").join(script))
        .env("CMS_BASE", &server.base)
        .env("CMS_OWNER", "owner@example.com")
        .env("CMS_EDITOR", "editor@example.com")
        .env("CMS_PASSWORD", PASSWORD)
        .env("CMS_SCREENSHOTS", &shots)
        .env("CMS_AXE_JS", &tools.axe)
        .env("CMS_CHROMIUM", &tools.chromium)
        .env("CMS_CHROMEDRIVER", &tools.driver);
    for (name, value) in env {
        command.env(name, value);
    }
    run(command, script);
}

/// Runs a browser script; fails when it fails or takes longer than [`TIME_LIMIT`]. A
/// thread waits for the script and says when it ended, so that no loop polls the clock.
/// Its output is passed on (the test's capture keeps it for a failure), and a failure
/// names the step it stopped in and the script's error, the browser driver's frames left
/// out: a CI log that shows only the end of the output still says what went wrong.
fn run(mut command: Command, what: &str) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let stdout = pass_on(child.stdout.take().unwrap(), |line| println!("{line}"));
    let stderr = pass_on(child.stderr.take().unwrap(), |line| eprintln!("{line}"));
    let (ended, status) = std::sync::mpsc::channel();
    std::thread::spawn(move || ended.send(child.wait()));
    let status = match status.recv_timeout(TIME_LIMIT) {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{what} took longer than {TIME_LIMIT:?}");
        }
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    if !status.success() {
        let step = stdout.iter().rev().find(|line| line.starts_with('[') && line.contains(" s] "));
        let error: Vec<&str> =
            stderr.iter().map(String::as_str).filter(|line| !is_driver_frame(line)).collect();
        let error = error[error.len().saturating_sub(12)..].join("\n");
        panic!("{what} failed ({status}) in step {step:?}; its output is above, its error ends:\n{error}");
    }
}

/// Copies a child's output line by line through `show` on a thread; the thread's result is
/// every line.
fn pass_on(
    output: impl std::io::Read + Send + 'static,
    show: impl Fn(&str) + Send + 'static,
) -> std::thread::JoinHandle<Vec<String>> {
    use std::io::BufRead;
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in std::io::BufReader::new(output).lines().map_while(Result::ok) {
            show(&line);
            lines.push(line);
        }
        lines
    })
}

/// A frame of the browser driver's stack in a Selenium error: `#12 0x55d0c4a1b2c3 <unknown>`.
fn is_driver_frame(line: &str) -> bool {
    line.strip_prefix('#')
        .and_then(|rest| rest.split_once(" 0x"))
        .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
}

/// axe-core's script: `CMS_AXE_JS`, else where `cargo xtask test` installs it.
fn axe_script() -> Option<PathBuf> {
    let installed = Path::new(WORKSPACE).join("target/axe/node_modules/axe-core/axe.min.js");
    [std::env::var_os("CMS_AXE_JS").map(PathBuf::from), Some(installed)]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}

/// The form built from a content model, in a real browser (`tests/browser/model_form.py`):
/// an invalid value comes back with its error at the field (`aria-invalid`, the summary
/// focused and linking to it), fixed it saves, and the file holds typed values; axe-core
/// finds no accessibility violation on the form, before and after the refusal.
#[test]
fn the_form_of_a_modelled_collection_works_in_a_real_browser() {
    let Some(tools) = browser_tools() else { return };
    let site = crate::admin_model::modelled_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    // More pages than the reference's list holds (the first 100 by title), and past them
    // a draft that only the search finds.
    let pages = site.path().join("content/pages");
    for n in 0..110 {
        std::fs::write(pages.join(format!("yak-{n}.md")), format!("---\ntitle: Yak {n}\n---\nA yak.\n"))
            .unwrap();
    }
    std::fs::write(pages.join("zulu-draft.md"), "---\ntitle: Zulu draft\nstatus: draft\n---\nSoon.\n")
        .unwrap();
    // A second resource folder: the picker's upload asks which one.
    let config = site.path().join("cms.yaml");
    let uploads = "    url: /media/uploads\n";
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        uploads,
        &format!("{uploads}  - label: Documents\n    path: media/docs\n    url: /media/docs\n"),
        1,
    );
    std::fs::write(&config, text).unwrap();
    std::fs::create_dir_all(site.path().join("media/docs")).unwrap();
    let server = Server::start(site.path());
    run_script(&tools, "model_form.py", &server, &[]);
    let uploaded: Vec<_> = std::fs::read_dir(site.path().join("media/docs")).unwrap().flatten().collect();
    assert_eq!(uploaded.len(), 1, "the picker's upload went into the folder chosen");

    let fm = crate::admin_model::frontmatter(site.path(), "2026-01-12-hello-world.md");
    assert_eq!(fm["sku"], "ABC-12", "{fm}");
    assert_eq!(fm["price"], serde_json::json!(12.5), "a number: {fm}");
    assert_eq!(fm["featured"], serde_json::json!(true), "a boolean: {fm}");
    assert_eq!(fm["category"], "guide", "{fm}");
    assert_eq!(fm["topics"], serde_json::json!(["web"]), "{fm}");
    assert_eq!(fm["cover"], "/media/uploads/logo.png", "picked: {fm}");
    assert_eq!(fm["related"], "about", "{fm}");
    assert_eq!(fm["title"], "Hello, World", "untouched: {fm}");
}
