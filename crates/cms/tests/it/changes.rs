//! Changes made behind the server's back (an editor's save, `rm`, a license installed with
//! the CLI) reach its kept index through the change feed, within about a second: each test
//! polls for them (see [`crate::poll`]) rather than expecting the next request to see them.

use std::fs;
use std::process::Command;

use serde_json::Value;

use crate::{SEEN_WITHIN, Server, cms, demo_site, poll};

const HELLO: &str = "content/posts/2026-01-12-hello-world.md";
const LIST: &str = "/cms/collections/posts/items";
const ITEM: &str = "/cms/collections/posts/items/hello-world";

/// A field of every item of a list answer; empty when the answer is not a list.
fn field<'a>(list: &'a Value, name: &str) -> Vec<&'a str> {
    let items = list["data"].as_array().map(Vec::as_slice).unwrap_or_default();
    items.iter().filter_map(|item| item[name].as_str()).collect()
}

#[test]
fn an_editors_save_behind_the_servers_back_is_seen_within_seconds() {
    let site = demo_site();
    let server = Server::start(site.path());
    let (status, before) = server.get(ITEM, None);
    assert_eq!((status, before["data"]["title"].as_str()), (200, Some("Hello, World")), "{before}");
    assert!(
        before["data"]["body_html"].as_str().unwrap_or_default().contains("<strong>file-based CMS</strong>")
    );

    // As an editor saves: the new text goes to a temporary file in the same folder, which
    // is then renamed over the item.
    let path = site.path().join(HELLO);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("title: Hello, World\n"), "{text}");
    let temp = path.with_file_name(".2026-01-12-hello-world.md.swp");
    let edited = text
        .replace("title: Hello, World\n", "title: Hello, Edited\n")
        .replace("**file-based CMS**", "*edited* CMS");
    fs::write(&temp, edited).unwrap();
    fs::rename(&temp, &path).unwrap();

    let (status, after) =
        poll(|| server.get(ITEM, None), |(_, item)| item["data"]["title"] == "Hello, Edited");
    assert_eq!(
        (status, after["data"]["title"].as_str()),
        (200, Some("Hello, Edited")),
        "not seen within {SEEN_WITHIN:?}: {after}"
    );
    // The body and frontmatter come from the rendering kept for the file's version: the
    // new version's, never the old one's.
    let html = after["data"]["body_html"].as_str().unwrap_or_default();
    assert!(html.contains("<em>edited</em> CMS") && !html.contains("file-based"), "{after}");
    assert_eq!(after["data"]["frontmatter"]["title"], "Hello, Edited", "{after}");
    // Lists are answered from the index alone: the edit reached it.
    let list = poll(|| server.get(LIST, None).1, |list| field(list, "title").contains(&"Hello, Edited"));
    let titles = field(&list, "title");
    assert!(titles.contains(&"Hello, Edited") && !titles.contains(&"Hello, World"), "{list}");
    assert_eq!(list["meta"]["totalItems"], 3, "{list}");
}

#[test]
fn a_file_removed_with_rm_disappears_from_the_list_within_seconds() {
    let site = demo_site();
    let server = Server::start(site.path());
    let (status, before) = server.get(LIST, None);
    assert_eq!(status, 200, "{before}");
    assert_eq!(field(&before, "slug"), ["tables-and-lists", "writing-with-frontmatter", "hello-world"]);

    let removed = Command::new("rm").arg(site.path().join(HELLO)).status().unwrap();
    assert!(removed.success());

    let gone = |list: &Value| list["data"].is_array() && !field(list, "slug").contains(&"hello-world");
    let list = poll(|| server.get(LIST, None).1, gone);
    assert_eq!(
        field(&list, "slug"),
        ["tables-and-lists", "writing-with-frontmatter"],
        "not gone within {SEEN_WITHIN:?}: {list}"
    );
    assert_eq!(list["meta"]["totalItems"], 2, "{list}");
    assert_eq!(server.get(ITEM, None).0, 404);
}

/// The server keeps the license in memory; a license installed with the CLI while it runs
/// takes effect once the change feed (or the rescan) reports it.
#[test]
fn a_license_installed_with_the_cli_while_serving_takes_effect_within_seconds() {
    let site = demo_site();
    let license = site.path().join(".cms/license.yaml");
    let saved = site.path().join("license.yaml");
    fs::rename(&license, &saved).unwrap();
    let server = Server::start(site.path());
    assert_eq!(server.get(LIST, None).0, 402, "no license, no API");

    let installed = cms(site.path(), &["license", "install", saved.to_str().unwrap()]);
    assert!(installed.status.success(), "{}", String::from_utf8_lossy(&installed.stderr));
    let (status, list) = poll(|| server.get(LIST, None), |(status, _)| *status == 200);
    assert_eq!(status, 200, "the license took no effect within {SEEN_WITHIN:?}: {list}");
}
