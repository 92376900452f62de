//! Deleted items come back, and history that reads (issue 36), over real HTTP: the Undo
//! after a delete, the Deleted view, a deleted item's history and diff, Restore, and who
//! made each version in the editor and in the REST API; in Chromium with
//! `tests/browser/history.py`.

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::admin_browser::{browser_tools, run_script};
use crate::{Server, cms, demo_site, stdout};

/// Deletes `pages/about.md` through its confirmation; answers the redirect's location.
fn delete_about(tab: &mut Tab, csrf: &str) -> String {
    let confirm = tab.get("/admin/collections/pages/items/about/delete");
    assert_eq!(confirm.status, 200);
    let etag = confirm.input("etag");
    let deleted =
        tab.post("/admin/collections/pages/items/about/delete", &[("csrf", csrf), ("etag", &etag)], &[]);
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    deleted.header("location").unwrap().to_owned()
}

#[test]
fn a_deleted_item_comes_back_by_undo_and_from_the_deleted_view_with_its_history() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let about = site.path().join("content/pages/about.md");
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let list = tab.get("/admin/collections/pages");
    assert!(
        list.body.contains(r#"href="/admin/collections/pages/deleted""#),
        "the list links the Deleted view"
    );
    assert!(!list.body.contains("undo-delete"), "no Undo without a delete");

    // The notice after a delete offers Undo: a CSRF-checked form.
    let location = delete_about(&mut tab, &csrf);
    assert_eq!(location, "/admin/collections/pages?ok=deleted&undo=about.md");
    assert!(!about.exists());
    let notice = tab.get(&location);
    assert_eq!(notice.status, 200);
    assert!(notice.body.contains("Item deleted."), "{}", notice.body);
    let undo = "/admin/collections/pages/deleted/about.md/restore";
    assert!(notice.body.contains(&format!(r#"action="{undo}""#)), "{}", notice.body);
    assert!(notice.body.contains(r#"id="undo-delete""#));
    assert_eq!(tab.post(undo, &[], &[]).status, 403, "the token is checked");
    let elsewhere = [("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site")];
    assert_eq!(tab.post(undo, &[("csrf", &csrf)], &elsewhere).status, 403, "another site is refused");
    assert!(!about.exists(), "refused, nothing came back");
    let undone = tab.post(undo, &[("csrf", &csrf)], &[]);
    assert_eq!(
        (undone.status, undone.header("location")),
        (303, Some("/admin/collections/pages/items/about.md?ok=undeleted"))
    );
    assert!(about.is_file(), "Undo brought it back");
    let back = tab.get("/admin/collections/pages/items/about.md?ok=undeleted");
    assert!(back.body.contains("Item restored from its history."), "{}", back.body);
    let again = tab.post(undo, &[("csrf", &csrf)], &[]);
    assert_eq!(again.status, 303, "an item that is back already stays as it is");
    let text = std::fs::read_to_string(&about).unwrap();

    // Deleted again: the Deleted view lists it, with who deleted it and a Restore.
    delete_about(&mut tab, &csrf);
    let view = tab.get("/admin/collections/pages/deleted");
    assert_eq!(view.status, 200, "{}", view.body);
    assert!(view.body.contains("<title>Deleted from Pages"), "{}", view.body);
    assert!(view.body.contains("about.md") && view.body.contains("ed@example.com"), "{}", view.body);
    assert!(!view.body.contains("contact.md"), "an item with its file is not deleted");
    assert!(view.body.contains(r#"<span class="sr-only"> “About”</span>"#), "Restore names its item");
    assert!(view.body.contains(&format!(r#"action="{undo}""#)));
    assert_eq!(tab.get("/admin/collections/pages/deleted?page=0").status, 400);
    assert_eq!(tab.get("/admin/collections/nope/deleted").status, 404);

    // Its history and a version's diff (against nothing: every line removed).
    let history = tab.get("/admin/collections/pages/items/about.md/history");
    assert_eq!(history.status, 200, "{}", history.body);
    assert!(history.body.contains("<title>History of About"), "{}", history.body);
    assert!(history.body.contains("This item is deleted"), "{}", history.body);
    assert!(history.body.contains("<td data-label=\"By\">ed@example.com</td>"), "{}", history.body);
    let at = history.body.find("/admin/collections/pages/items/about.md/history/").unwrap();
    let version = &history.body[at..at + history.body[at..].find('"').unwrap()];
    let diff = tab.get(version);
    assert_eq!(diff.status, 200, "{}", diff.body);
    assert!(diff.body.contains("<title>About: version of"), "{}", diff.body);
    assert!(diff.body.contains("<h1>“About”: version of"), "{}", diff.body);
    assert!(
        diff.body.contains(
            r#"<span class="mark" aria-hidden="true">−</span><span class="sr-only">removed: </span>"#
        )
    );
    assert!(diff.body.contains("Now (deleted)"));
    assert!(diff.body.contains(&format!(r#"action="{version}/restore""#)));
    assert_eq!(tab.get("/admin/collections/pages/items/gone.md/history").status, 404);

    // Restore from the Deleted view.
    let restored = tab.post(undo, &[("csrf", &csrf)], &[]);
    assert_eq!(restored.status, 303, "{}", restored.body);
    assert_eq!(std::fs::read_to_string(&about).unwrap(), text, "the text it had when deleted");
    let view = tab.get("/admin/collections/pages/deleted");
    assert!(view.body.contains("Nothing deleted here") && !view.body.contains("about.md"), "{}", view.body);

    // Signed out: none of it.
    let mut stranger = Tab::new(&server);
    assert_ne!(stranger.get("/admin/collections/pages/deleted").status, 200);
    let refused = stranger.post(undo, &[("csrf", &csrf)], &[]);
    assert!(matches!(refused.status, 401 | 403), "{}", refused.status);
}

#[test]
fn each_version_names_who_made_the_change_in_the_editor_and_the_rest_api() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    assert!(
        cms(site.path(), &["users", "add", "--email", "bot@example.com", "--role", "editor"])
            .status
            .success()
    );
    let created = cms(site.path(), &["keys", "create", "--user", "bot@example.com", "--name", "Deploy bot"]);
    let key = stdout(&created).lines().last().unwrap().to_owned();
    // A version kept before authors were recorded: the snapshot alone.
    let old = site.path().join(".cms/versions/content/pages/about.md");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("100.md"), "---\ntitle: About\n---\nan old text\n").unwrap();
    let server = Server::start(site.path());

    let patched = server
        .agent
        .patch(format!("{}/cms/collections/pages/items/about", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(r#"{"body": "Written by the bot."}"#)
        .unwrap();
    assert_eq!(patched.status().as_u16(), 200);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    delete_about(&mut tab, &csrf);

    let (status, list) = server.get("/cms/collections/pages/items/about.md/versions", Some(&key));
    assert_eq!(status, 200, "{list}");
    let versions = list["versions"].as_array().unwrap();
    let authors: Vec<Option<&str>> = versions.iter().map(|v| v["author"].as_str()).collect();
    assert_eq!(authors, [Some("ed@example.com"), Some("Deploy bot"), None], "{list}");
    assert!(versions[2].get("author").is_none(), "absent, not null: {list}");

    let history = tab.get("/admin/collections/pages/items/about.md/history");
    assert_eq!(history.status, 200);
    for author in ["ed@example.com", "Deploy bot", "unknown"] {
        let author = format!(r#"<td data-label="By">{author}</td>"#);
        assert!(history.body.contains(&author), "{author}: {}", history.body);
    }
    assert!(
        history.body.contains(r#"<span class="sr-only">: the version replaced"#),
        "each link names its version"
    );
}

#[test]
fn undo_then_the_deleted_view_restore_and_the_history_pages_in_a_real_browser() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "editor@example.com", "editor");
    let server = Server::start(site.path());
    let Some(tools) = browser_tools() else { return };
    run_script(&tools, "history.py", &server, &[]);
}
