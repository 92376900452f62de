//! Live changes in the web editor over real HTTP (issue 47): the pages name their stream
//! (`/admin/events`, opened with the session cookie), the item list's stream carries a
//! change made elsewhere, the edit page's stream carries a save of its item, and
//! *Compare* shows the saved version against the form's without saving. The browser half
//! (the list refreshing itself, the notice) is `live_changes_show_in_a_real_browser`
//! below (`tests/browser/live.py`).

use serde_json::json;

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::events::Stream;
use crate::{Server, demo_site, user_with_key};

const LIST: &str = "/admin/collections/blog-posts";

/// The `data-live` URL of a page (HTML-escaped `&` undone).
fn live_url(body: &str) -> String {
    let at = body.find("data-live=\"").unwrap_or_else(|| panic!("no data-live in {body}"));
    let rest = &body[at + 11..];
    rest[..rest.find('"').unwrap()].replace("&amp;", "&").replace("&#38;", "&")
}

fn api(server: &Server, method: &str, path: &str, key: &str, body: serde_json::Value) -> u16 {
    let url = format!("{}{path}", server.base);
    let auth = format!("Bearer {key}");
    let response = match method {
        "POST" => server.agent.post(url).header("Authorization", auth).send_json(body),
        "PATCH" => server.agent.patch(url).header("Authorization", auth).send_json(body),
        other => panic!("{other}"),
    };
    response.unwrap().status().as_u16()
}

#[test]
fn the_list_and_the_edit_page_follow_their_streams_and_compare_saves_nothing() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let cookie = tab.cookie_header();

    // The list names its collection's stream, from where the events stood when it was read.
    let list = tab.get(LIST);
    assert_eq!(list.status, 200);
    let url = live_url(&list.body);
    assert!(url.starts_with("/admin/events?collection=blog-posts&since="), "{url}");
    assert!(list.body.contains("data-slug=\"hello-world\""), "rows carry their slugs");

    // Without a session the stream is the sign-in page, not events.
    let anonymous = Tab::new(&server).get(&url);
    assert_eq!(anonymous.status, 303, "{}", anonymous.body);
    assert!(anonymous.header("location").unwrap().starts_with("/admin/signin"));

    // With the session cookie: a draft made through the API arrives (an editor sees drafts).
    let stream = Stream::request(&server, &url, &[("Cookie", &cookie)]);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), "text/event-stream");
    assert_eq!(stream.header("cache-control"), "no-store");
    let place = stream.next().unwrap();
    assert_eq!(place.retry.as_deref(), Some("3000"));
    let body =
        json!({"slug": "live-one", "date_prefix": false, "fm": {"title": "Live one", "status": "draft"}});
    assert_eq!(api(&server, "POST", "/cms/collections/posts/items", &key, body), 200);
    let created = stream.next().unwrap();
    assert_eq!(created.event.as_deref(), Some("file.created"));
    assert_eq!(created.json()["data"]["slug"], "live-one");
    assert_eq!(created.json()["data"]["collection"], "blog-posts");
    // What the script does next: the list read again shows the new item.
    assert!(tab.get(LIST).body.contains("data-slug=\"live-one\""));

    // The edit page names its item's stream; a save elsewhere arrives on it, and only that.
    let edit = "/admin/collections/blog-posts/items/live-one.md";
    let page = tab.get(edit);
    assert_eq!(page.status, 200);
    let item_url = live_url(&page.body);
    assert!(item_url.contains("&slug=live-one&since="), "{item_url}");
    assert!(page.body.contains("id=\"live-change\"") && page.body.contains(" hidden>"), "the notice waits");
    let opened_etag = page.input("etag");
    let item_stream = Stream::request(&server, &item_url, &[("Cookie", &cookie)]);
    assert_eq!(item_stream.next().unwrap().id(), created.id(), "the page's place");
    let other =
        json!({"slug": "live-two", "date_prefix": false, "fm": {"title": "Live two", "status": "draft"}});
    assert_eq!(api(&server, "POST", "/cms/collections/posts/items", &key, other), 200);
    let theirs = json!({"fm": {"title": "Their title"}, "body": "Their text.\n"});
    assert_eq!(api(&server, "PATCH", "/cms/collections/posts/items/live-one", &key, theirs), 200);
    let saved = item_stream.next().unwrap();
    assert_eq!(saved.event.as_deref(), Some("file.updated"));
    assert_eq!(saved.json()["data"]["slug"], "live-one");
    assert_eq!(saved.id(), created.id() + 2, "live-two's event was not this page's");

    // Compare: their version against the form's, nothing saved, their etag in the form.
    let csrf = page.input("csrf");
    let mine = [
        ("csrf", csrf.as_str()),
        ("etag", opened_etag.as_str()),
        ("form", "model"),
        ("fm.title", "My title"),
        ("status", "draft"),
        ("body", "My text.\n"),
    ];
    let mut compare = mine.to_vec();
    compare.push(("action", "compare"));
    let compared = tab.post(edit, &compare, &[]);
    assert_eq!(compared.status, 200, "{}", compared.body);
    assert!(compared.body.contains("The saved version and yours"), "{}", compared.body);
    assert!(compared.body.contains("Their text.") && compared.body.contains("My text."));
    assert!(compared.body.contains("Their title"), "their fields are shown");
    assert!(compared.body.contains("data-unsaved"), "the typed text is guarded");
    let their_etag = compared.input("etag");
    assert_ne!(their_etag, opened_etag);
    let stored = server.get("/cms/collections/posts/items/live-one", Some(&key)).1;
    assert_eq!(stored["data"]["title"], "Their title", "comparing saved nothing: {stored}");

    // The form's old etag still conflicts; with theirs, the save puts mine over on purpose.
    let mut save = mine.to_vec();
    save.push(("action", "save"));
    assert_eq!(tab.post(edit, &save, &[]).status, 409);
    save[1] = ("etag", their_etag.as_str());
    let saved = tab.post(edit, &save, &[]);
    assert_eq!(saved.status, 303, "{}", saved.body);
    let stored = server.get("/cms/collections/posts/items/live-one", Some(&key)).1;
    assert_eq!(stored["data"]["title"], "My title", "{stored}");
}

#[test]
fn live_changes_show_in_a_real_browser() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "editor@example.com", "editor");
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let Some(tools) = crate::admin_browser::browser_tools() else { return };
    crate::admin_browser::run_script(&tools, "live.py", &server, &[("CMS_KEY", &key)]);
    // Comparing saved nothing: the file holds their save, not the text typed in the page.
    let text = std::fs::read_to_string(site.path().join("content/posts/seen-live.md")).unwrap();
    assert!(text.contains("Their text.") && !text.contains("Typed here."), "{text}");
}
