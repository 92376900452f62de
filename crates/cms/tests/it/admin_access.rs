//! The editor's pages are accessible by construction and calm (issue 36): destructive
//! actions ask first (and work without the script: a page with a form), repeated controls
//! name their object, the item list filters scheduled items, counts read in words, times
//! come as `<time datetime>`, dates and colours have their inputs. Over real HTTP; the
//! browser side (axe-core on every page, focus with forced colours, the folding
//! navigation, tables as cards) is `tests/browser/access.py`.

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::admin_browser::{browser_tools, run_script};
use crate::{Server, cms, demo_site, stdout};

/// `<a ... href="HREF"` is on the page (an ampersand as askama escapes it).
fn links_to(body: &str, href: &str) -> bool {
    body.contains(&format!("href=\"{}\"", href.replace('&', "&#38;")))
}

#[test]
fn revoking_a_key_and_removing_a_webhook_ask_first_and_each_control_names_its_object() {
    let site = demo_site();
    let root = site.path();
    user_with_password(root, "owner@example.com", "owner");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();

    // A key: the list links to a confirmation that names it; nothing is revoked by a GET.
    let made = tab.post(
        "/admin/keys",
        &[("csrf", &csrf), ("user", "owner@example.com"), ("name", "site build")],
        &[],
    );
    assert_eq!(made.status, 200, "{}", made.body);
    let id = made
        .body
        .split("<h2 id=\"new-key-title\">Key ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let keys = tab.get("/admin/keys");
    let confirm_href = format!("/admin/keys/revoke?id={id}");
    assert!(links_to(&keys.body, &confirm_href), "{}", keys.body);
    assert!(
        keys.body.contains(&format!("Revoke<span class=\"sr-only\"> the key “site build” ({id})</span>…")),
        "the link names the key: {}",
        keys.body
    );
    assert!(!keys.body.contains("action=\"/admin/keys/revoke\""), "no one-click revoke on the list");
    assert!(keys.body.contains("<time datetime=\""), "the creation time is a <time>: {}", keys.body);
    let confirm = tab.get(&confirm_href);
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(confirm.body.contains("Revoke the key “site build”?"), "{}", confirm.body);
    assert!(confirm.body.contains("action=\"/admin/keys/revoke\""), "{}", confirm.body);
    assert_eq!(confirm.input("id"), id);
    assert!(stdout(&cms(root, &["keys", "list"])).contains(&id), "asking revokes nothing");
    assert_eq!(tab.get("/admin/keys/revoke?id=key_nope").status, 404);
    assert_eq!(tab.get("/admin/keys/revoke").status, 400);
    let revoked = tab.post("/admin/keys/revoke", &[("csrf", &csrf), ("id", &id)], &[]);
    assert_eq!((revoked.status, revoked.header("location")), (303, Some("/admin/keys?ok=key-revoked")));
    assert!(!stdout(&cms(root, &["keys", "list"])).contains(&id));

    // A webhook: the same, and its Disable button names it too.
    let added = tab.post(
        "/admin/webhooks",
        &[("csrf", &csrf), ("url", "https://hooks.example.com/cms"), ("events", "file.created")],
        &[],
    );
    assert_eq!(added.status, 200, "{}", added.body);
    let hook = stdout(&cms(root, &["webhooks", "list"])).split_whitespace().next().unwrap().to_owned();
    let hooks = tab.get("/admin/webhooks");
    let remove_href = format!("/admin/webhooks/remove?id={hook}");
    assert!(links_to(&hooks.body, &remove_href), "{}", hooks.body);
    for control in ["Disable", "Remove"] {
        let named =
            format!("{control}<span class=\"sr-only\"> the webhook to https://hooks.example.com/cms</span>");
        assert!(hooks.body.contains(&named), "{named}: {}", hooks.body);
    }
    assert!(!hooks.body.contains("action=\"/admin/webhooks/remove\""), "no one-click remove on the list");
    let confirm = tab.get(&remove_href);
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(
        confirm.body.contains("Remove the webhook to https://hooks.example.com/cms?"),
        "{}",
        confirm.body
    );
    assert_eq!(confirm.input("id"), hook);
    assert!(stdout(&cms(root, &["webhooks", "list"])).contains(&hook), "asking removes nothing");
    assert_eq!(tab.get("/admin/webhooks/remove?id=nope").status, 404);
    let clear = tab.get("/admin/webhooks/log/clear");
    assert_eq!(clear.status, 200, "{}", clear.body);
    assert!(
        clear.body.contains("0 entries of the delivery log will be deleted.")
            && clear.body.contains("action=\"/admin/webhooks/log/clear\""),
        "the log is cleared after a confirmation too: {}",
        clear.body
    );
    let removed = tab.post("/admin/webhooks/remove", &[("csrf", &csrf), ("id", &hook)], &[]);
    assert_eq!(removed.status, 303);
    assert_eq!(stdout(&cms(root, &["webhooks", "list"])), "");

    // Users and the start page: each repeated control names its user or collection.
    let users = tab.get("/admin/users").body;
    for named in [
        "Set role<span class=\"sr-only\"> of owner@example.com</span>",
        "Remove<span class=\"sr-only\"> owner@example.com</span>…",
        "data-label=\"Email\"",
    ] {
        assert!(users.contains(named), "{named}: {users}");
    }
    let home = tab.get("/admin/").body;
    assert!(home.contains("New item<span class=\"sr-only\"> in Blog Posts</span>"), "{home}");
    // The navigation can fold behind a <details> on narrow screens (no script needed).
    assert!(home.contains("<details class=\"menu\"><summary>Menu</summary></details>"), "{home}");

    // The confirmations are owner pages, like the actions they lead to.
    user_with_password(root, "ed@example.com", "editor");
    let mut editor = Tab::new(&server);
    assert_eq!(editor.sign_in("ed@example.com", PASSWORD).status, 303);
    for path in ["/admin/keys/revoke?id=x", "/admin/webhooks/remove?id=x", "/admin/webhooks/log/clear"] {
        assert_eq!(editor.get(path).status, 403, "{path}");
    }
}

#[test]
fn the_item_list_filters_scheduled_items_and_counts_read_in_words() {
    let site = demo_site();
    let root = site.path();
    let pages = root.join("content/pages");
    std::fs::write(
        pages.join("launch.md"),
        "---\ntitle: Launch\nstatus: published\npublish_date: 2099-01-01T09:00:00Z\n---\nSoon.\n",
    )
    .unwrap();
    std::fs::write(
        pages.join("gone.md"),
        "---\ntitle: Gone\nstatus: published\nunpublish_date: 2020-01-01\n---\nOver.\n",
    )
    .unwrap();
    std::fs::write(pages.join("idea.md"), "---\ntitle: Idea\nstatus: draft\n---\nMaybe.\n").unwrap();
    user_with_password(root, "owner@example.com", "owner");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);

    let list = |tab: &mut Tab, status: &str| {
        let answer = tab.get(&format!("/admin/collections/pages?status={status}"));
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body
    };
    let scheduled = list(&mut tab, "scheduled");
    assert!(scheduled.contains("<option value=\"scheduled\" selected>Scheduled</option>"), "{scheduled}");
    assert!(scheduled.contains(">Launch</a>") && scheduled.contains(">Gone</a>"), "{scheduled}");
    assert!(!scheduled.contains(">About</a>") && !scheduled.contains(">Idea</a>"), "{scheduled}");
    assert!(scheduled.contains("<span class=\"badge scheduled\">scheduled</span>"), "{scheduled}");
    assert!(scheduled.contains("<span class=\"badge expired\">expired</span>"), "{scheduled}");
    assert!(scheduled.contains("<p class=\"hint\" id=\"count\">2 items</p>"), "{scheduled}");
    // Published means live now, as `status=published` of the REST API.
    let published = list(&mut tab, "published");
    assert!(published.contains(">About</a>") && !published.contains(">Launch</a>"), "{published}");
    let drafts = list(&mut tab, "draft");
    assert!(drafts.contains(">Idea</a>") && !drafts.contains(">Launch</a>"), "{drafts}");
    assert!(drafts.contains("<p class=\"hint\" id=\"count\">1 item</p>"), "one item, not 1 items: {drafts}");
    let all = list(&mut tab, "all");
    assert!(all.contains(">Launch</a>") && all.contains(">Idea</a>") && all.contains(">About</a>"), "{all}");
    // The edit page's action bar says the same of the stored item.
    for (file, badge) in [
        ("launch.md", "<span class=\"badge scheduled\" id=\"bar-status\">Scheduled</span>"),
        ("gone.md", "<span class=\"badge expired\" id=\"bar-status\">Expired</span>"),
        ("idea.md", "<span class=\"badge draft\" id=\"bar-status\">Draft</span>"),
        ("about.md", "<span class=\"badge published\" id=\"bar-status\">Published</span>"),
    ] {
        let edit = tab.get(&format!("/admin/collections/pages/items/{file}"));
        assert!(edit.body.contains(badge), "{file}: {}", edit.body);
    }
    assert!(all.contains("data-label=\"Changed\"><time datetime=\""), "times are <time>s: {all}");
    assert_eq!(tab.get("/admin/collections/pages?status=later").status, 400);

    // The start page counts in words: "1 draft", never "1 drafts".
    let home = tab.get("/admin/").body;
    assert!(home.contains("<p>2 published, 2 scheduled or expired, 1 draft</p>"), "pages: {home}");
    assert!(home.contains("<p>1 published, 0 drafts</p>"), "projects: {home}");
}

#[test]
fn share_links_take_a_date_and_time_and_theme_colours_a_colour_input() {
    let site = demo_site();
    let root = site.path();
    user_with_password(root, "owner@example.com", "owner");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();

    let item = "/admin/collections/blog-posts/items/2026-04-02-upcoming-release.md";
    let form = tab.get(&format!("{item}/share"));
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("name=\"expires\" type=\"datetime-local\""), "{}", form.body);
    let past = tab.post(&format!("{item}/share"), &[("csrf", &csrf), ("expires", "2020-01-01T10:00")], &[]);
    assert_eq!(past.status, 422, "{}", past.body);
    assert!(
        past.body.contains("must be in the future") && past.body.contains("aria-invalid=\"true\""),
        "{}",
        past.body
    );
    let far = tab.post(&format!("{item}/share"), &[("csrf", &csrf), ("expires", "2999-01-01T10:00")], &[]);
    assert_eq!(far.status, 422, "{}", far.body);
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::hours(2))
        .format(time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]"))
        .unwrap();
    let shared = tab.post(&format!("{item}/share"), &[("csrf", &csrf), ("expires", &soon)], &[]);
    assert_eq!(shared.status, 200, "{}", shared.body);
    assert!(shared.body.contains("data-copy=\"preview-link\""), "a Copy button: {}", shared.body);
    assert!(shared.body.contains("<time id=\"expires\" datetime=\""), "{}", shared.body);
    assert!(shared.body.contains("(in 1 hour)") || shared.body.contains("(in 2 hours)"), "{}", shared.body);

    // Theme colours: colour inputs (`#abc` shown as `#aabbcc`), the surface colour unset
    // by a box; sending the form unchanged changes nothing.
    assert_eq!(tab.post("/admin/theme", &[("csrf", &csrf), ("accent_color", "#abc")], &[]).status, 303);
    let theme = tab.get("/admin/theme").body;
    assert!(theme.contains("name=\"accent_color\" type=\"color\" value=\"#aabbcc\""), "{theme}");
    assert!(theme.contains("name=\"surface_color\" type=\"color\""), "{theme}");
    assert!(
        theme.contains("name=\"surface_color_unset\" id=\"theme-surface_color-unset\" checked"),
        "{theme}"
    );
    let unchanged = [
        ("csrf", csrf.as_str()),
        ("accent_color", "#aabbcc"),
        ("surface_color", "#ffffff"),
        ("surface_color_unset", "on"),
    ];
    assert_eq!(tab.post("/admin/theme", &unchanged, &[]).status, 303);
    let stored = std::fs::read_to_string(root.join(".cms/theme.yaml")).unwrap();
    assert!(stored.contains("#abc") && !stored.contains("aabbcc") && !stored.contains("#ffffff"), "{stored}");
    let surface = [("csrf", csrf.as_str()), ("surface_color", "#112233")];
    assert_eq!(tab.post("/admin/theme", &surface, &[]).status, 303);
    assert!(tab.get("/admin/theme").body.contains("type=\"color\" value=\"#112233\""));
}

/// `tests/browser/access.py`: axe-core finds no serious or critical violation on any page
/// at 1280 and 375 px, the focused element keeps a visible outline with forced colours
/// emulated, the navigation folds behind Menu on a phone (header at most 80 px), and
/// tables stack into cards there instead of scrolling sideways.
#[test]
fn every_page_passes_axe_at_both_widths_and_keeps_its_focus_outline_in_forced_colours() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let Some(tools) = browser_tools() else { return };
    run_script(&tools, "access.py", &server, &[]);
}

/// A refused form's error takes the focus when the page loads (`data-autofocus`, read by
/// the script; `tabindex="-1"` makes it focusable) and describes the inputs of the form it
/// refused, so a screen reader reads it at each of them; without an error, no input points
/// at it.
#[test]
fn a_refused_forms_error_takes_the_focus_and_describes_its_inputs() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let error = "<p class=\"error\" id=\"form-error\" role=\"alert\" tabindex=\"-1\" data-autofocus>";
    let refusals = [
        (
            "/admin/users",
            vec![("email", "ann@example.com"), ("role", "editor"), ("password", "short")],
            vec!["id=\"user-email\"", "id=\"user-password\""],
        ),
        (
            "/admin/webhooks",
            vec![("url", "http://hooks.example.com/x"), ("events", "file.created")],
            vec!["id=\"hook-url\""],
        ),
        ("/admin/keys", vec![("user", "nobody@example.com"), ("name", "build")], vec!["id=\"key-name\""]),
    ];
    for (path, fields, inputs) in refusals {
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend(fields);
        let refused = tab.post(path, &form, &[]);
        assert!((400..500).contains(&refused.status), "{path}: {} {}", refused.status, refused.body);
        assert!(refused.body.contains(error), "{path}: {}", refused.body);
        for input in inputs {
            let tag =
                refused.body.split(input).nth(1).and_then(|rest| rest.split('>').next()).unwrap_or_default();
            assert!(tag.contains("form-error"), "{path}: {input} is described by the error: {tag}");
        }
        let page = tab.get(path);
        assert!(!page.body.contains("form-error"), "{path}: no error, nothing points at one");
    }
}
