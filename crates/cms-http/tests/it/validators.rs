//! The feeds checked by their real consumers: the RSS route by Python's `feedparser` (no
//! bozo), the sitemap route by `xmllint --schema` against the sitemaps.org XSD.
//!
//! Each check runs when its tool is installed and is recorded as skipped otherwise (listed
//! by `cargo xtask test`, which installs feedparser; `CMS_REQUIRE_VALIDATORS=1` turns a
//! missing tool into a failure). The Python used is `CMS_PYTHON`, else the venv
//! `cargo xtask test` makes under `target/validators-venv`, else `python3`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use actix_web::test::TestRequest;
use serde_json::Value;

use crate::Harness;

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

const FEEDPARSER_SCRIPT: &str = r#"
import json, sys, feedparser
d = feedparser.parse(sys.stdin.buffer.read())
print(json.dumps({
    "bozo": bool(d.bozo),
    "error": str(d.get("bozo_exception", "")),
    "version": d.version,
    "feed": {"title": d.feed.get("title"), "link": d.feed.get("link"), "subtitle": d.feed.get("subtitle")},
    "entries": [{
        "title": e.get("title"),
        "link": e.get("link"),
        "id": e.get("id"),
        "published": list(e.published_parsed[:6]) if e.get("published_parsed") else None,
        "tags": [t["term"] for t in e.get("tags", [])],
        "summary": e.get("summary"),
    } for e in d.entries],
}))
"#;

/// Whether a missing validator fails the test (in CI) or skips it.
fn required() -> bool {
    std::env::var("CMS_REQUIRE_VALIDATORS").is_ok_and(|v| v == "1")
}

/// A check that cannot run: fails in CI, else says so and records it in the file
/// `CMS_SKIPPED_FILE` names (`test<TAB>missing<TAB>install`, the lines
/// `cms_s3::testing::skip_check` writes), so that `cargo xtask test` lists it as skipped.
fn skip(what: &str, install: &str) {
    assert!(!required(), "CMS_REQUIRE_VALIDATORS=1 but {what} is not available; {install}");
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    eprintln!("note: SKIPPED {test}: {what} is not installed; to run it: {install}");
    if let Some(path) = std::env::var_os("CMS_SKIPPED_FILE") {
        let line = format!("{test}\t{what}\t{install}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
        if let Err(error) = appended {
            panic!("cannot record the skipped check in {}: {error}", Path::new(&path).display());
        }
    }
}

const INSTALL_FEEDPARSER: &str = "cargo xtask test (installs feedparser into target/validators-venv)";
const INSTALL_XMLLINT: &str = "apt-get install libxml2-utils (needs root)";

fn python() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/validators-venv/bin/python");
    let candidates = [std::env::var_os("CMS_PYTHON").map(PathBuf::from), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import feedparser"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn has_xmllint() -> bool {
    Command::new("xmllint")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program args` with `input` on standard input; returns status, stdout, stderr.
fn run(program: &Path, args: &[&str], input: &[u8]) -> (bool, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const TRICKY: &str = "Tom & \"Jerry\" <3 'quotes' — café ✓";

/// Items whose titles, tags and text need escaping, plus a draft that must stay out.
fn seed(h: &Harness) {
    let put = |folder: &str, name: &str, text: &str| h.world.content.put_raw(folder, name, text.as_bytes());
    put(
        "content/posts",
        "2024-05-01-tricky.md",
        "---\ntitle: \"Tom & \\\"Jerry\\\" <3 'quotes' — café ✓\"\ntags: [R&D, \"<b>bold</b>\", Rust Lang]\nauthor: O'Brien\n---\nAn <script>alert(1)</script> body & a [link](https://x.example/?a=1&b=2).\n",
    );
    put(
        "content/posts",
        "2024-04-01-plain.md",
        "---\ntitle: Plain\ndate: 2024-04-01T09:30:00+02:00\n---\nText.\n",
    );
    put("content/posts", "undated.md", "---\ntitle: No date\n---\nText.\n");
    put("content/posts", "2024-06-01-draft.md", "---\ntitle: Draft\nstatus: draft\n---\nx\n");
}

async fn body_of(h: &Harness, uri: &str) -> Vec<u8> {
    let reply = h.send(TestRequest::get().uri(uri)).await;
    assert_eq!(reply.status, 200, "{uri}: {}", String::from_utf8_lossy(&reply.body));
    reply.body
}

#[actix_web::test]
async fn rss_passes_feedparser_without_bozo() {
    let Some(python) = python() else { return skip("python3 with feedparser", INSTALL_FEEDPARSER) };
    let h = Harness::setup().await;
    seed(&h);
    let uri =
        "/cms/collections/posts/rss?title=News%20%26%20%3Cviews%3E&description=It%27s%20%22all%22%20here";
    let (ok, out, err) = run(&python, &["-c", FEEDPARSER_SCRIPT], &body_of(&h, uri).await);
    assert!(ok, "feedparser failed: {err}");
    let parsed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(parsed["bozo"], false, "bozo: {}", parsed["error"]);
    assert_eq!(parsed["version"], "rss20");
    assert_eq!(parsed["feed"]["title"], "News & <views>");
    assert_eq!(parsed["feed"]["link"], "https://example.com/blog");
    assert_eq!(parsed["feed"]["subtitle"], "It's \"all\" here");

    let entries = parsed["entries"].as_array().unwrap();
    let titles: Vec<&str> = entries.iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert_eq!(titles, [TRICKY, "Plain", "No date"], "newest first, no draft");
    let tricky = &entries[0];
    assert_eq!(tricky["link"], "https://example.com/blog/tricky");
    assert_eq!(tricky["id"], "https://example.com/blog/tricky");
    assert_eq!(tricky["published"], serde_json::json!([2024, 5, 1, 0, 0, 0]));
    assert_eq!(tricky["tags"], serde_json::json!(["R&D", "<b>bold</b>", "Rust Lang"]));
    assert!(!tricky["summary"].as_str().unwrap().contains("<script"), "{tricky}");
    assert_eq!(entries[1]["published"], serde_json::json!([2024, 4, 1, 7, 30, 0]), "converted to UTC");
    assert!(entries[2]["published"].is_array(), "undated items carry their file time");

    // An empty feed is valid too.
    let empty = Harness::setup().await;
    let (ok, out, err) =
        run(&python, &["-c", FEEDPARSER_SCRIPT], &body_of(&empty, "/cms/collections/pages/rss").await);
    assert!(ok, "{err}");
    let parsed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (parsed["bozo"].clone(), parsed["version"].clone()),
        (Value::Bool(false), "rss20".into()),
        "{}",
        parsed["error"]
    );
}

#[actix_web::test]
async fn sitemap_validates_against_the_sitemaps_org_schema() {
    if !has_xmllint() {
        return skip("xmllint", INSTALL_XMLLINT);
    }
    let schema = Path::new(WORKSPACE).join("fixtures/schemas/sitemap.xsd");
    let xmllint = Path::new("xmllint");
    let h = Harness::setup().await;
    seed(&h);
    let empty = Harness::setup().await;
    let documents = [
        body_of(&h, "/cms/collections/posts/sitemap").await,
        body_of(&h, "/cms/collections/posts/sitemap?baseUrl=https://example.com/o%27brien%26co&limit=1")
            .await,
        body_of(&empty, "/cms/collections/pages/sitemap").await,
    ];
    for xml in documents {
        let (ok, _, err) = run(xmllint, &["--noout", "--schema", schema.to_str().unwrap(), "-"], &xml);
        assert!(ok, "xmllint refused the sitemap:\n{err}\n{}", String::from_utf8_lossy(&xml));
        assert!(err.contains("validates"), "{err}");
    }
    // The schema is really checked: a document it must refuse is refused.
    let bad = b"<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><lastmod>yesterday</lastmod></url></urlset>";
    let (ok, _, _) = run(xmllint, &["--noout", "--schema", schema.to_str().unwrap(), "-"], bad);
    assert!(!ok, "the schema refuses a url without loc");
}
