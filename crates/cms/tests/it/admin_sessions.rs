//! The editor's sessions outlive the server (they are kept in the site's store), and typed
//! work survives a session that ended; error pages sit inside the editor's layout.

use crate::admin::{PASSWORD, Tab, passwd, user_with_password};
use crate::{Server, demo_site};

#[test]
fn a_session_survives_a_restart_and_a_password_change_still_ends_it() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let first = Server::start(site.path());
    let mut tab = Tab::new(&first);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    assert_eq!(tab.get("/admin/").status, 200);
    let cookies = tab.cookies.clone();
    let token = cookies["cms_session"].clone();
    drop(first);

    // The store keeps the session under its token's hash, never the token itself.
    let sessions = site.path().join(".cms/sessions");
    let files: Vec<_> = std::fs::read_dir(&sessions).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(!files[0].to_string_lossy().contains(&token));
    assert!(!std::fs::read_to_string(&files[0]).unwrap().contains(&token));

    let second = Server::start(site.path());
    let mut tab = Tab::new(&second);
    tab.cookies = cookies.clone();
    let home = tab.get("/admin/");
    assert_eq!(home.status, 200, "the cookie still works after a restart: {}", home.body);
    assert!(home.body.contains("ed@example.com"));

    assert!(passwd(site.path(), "ed@example.com", "a brand new password\n").status.success());
    assert_eq!(tab.get("/admin/").status, 303, "a new password ends the session");
    assert!(!files[0].exists(), "and its record is removed");

    // Signing out ends it for a restarted server too.
    assert_eq!(tab.sign_in("ed@example.com", "a brand new password").status, 303);
    let kept = tab.cookies.clone();
    let csrf = tab.csrf();
    assert_eq!(tab.post("/admin/signout", &[("csrf", &csrf)], &[]).status, 303);
    drop(second);
    let third = Server::start(site.path());
    let mut tab = Tab::new(&third);
    tab.cookies = kept;
    assert_eq!(tab.get("/admin/").status, 303, "a signed-out cookie stays refused");
}

const HELLO: &str = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md";
const HELLO_FILE: &str = "content/posts/2026-01-12-hello-world.md";
const TYPED_BODY: &str = "Typed while signed out.\r\nA second line with <angle> & \"quotes\".";

/// The fields of a save of [`HELLO`], as the edit page posts them (without `csrf`).
fn typed_save(etag: &str) -> Vec<(&'static str, String)> {
    vec![
        ("form", "model".into()),
        ("etag", etag.into()),
        ("action", "save".into()),
        ("fm.title", "Typed after the session ended".into()),
        ("status", "published".into()),
        ("body", TYPED_BODY.into()),
    ]
}

fn with_csrf<'a>(fields: &'a [(&'static str, String)], csrf: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut all = vec![("csrf", csrf)];
    all.extend(fields.iter().map(|(name, value)| (*name, value.as_str())));
    all
}

/// The kept form shows every field typed, visibly and in hidden inputs that send it again.
fn assert_keeps_everything(body: &str) {
    for needle in [
        r#"<input type="hidden" name="fm.title" value="Typed after the session ended">"#,
        r#"<input type="hidden" name="action" value="save">"#,
        r#"<input type="hidden" name="form" value="model">"#,
        "Typed while signed out.",
        "A second line with &#60;angle&#62; &#38; &#34;quotes&#34;.",
        &format!(r#"action="{HELLO}""#),
    ] {
        assert!(body.contains(needle), "{needle}\n{body}");
    }
}

#[test]
fn a_save_after_the_session_ended_keeps_the_typed_text_and_completes_after_signing_in_inline() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let origin = [("Origin", server.base.as_str())];
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let page = tab.get(HELLO);
    let (csrf, etag) = (page.input("csrf"), page.input("etag"));
    let stored = std::fs::read_to_string(site.path().join(HELLO_FILE)).unwrap();

    // Signed out in another window while this one was being typed in.
    let mut other = Tab::new(&server);
    other.cookies = tab.cookies.clone();
    assert_eq!(other.post("/admin/signout", &[("csrf", &csrf)], &[]).status, 303);

    let typed = typed_save(&etag);
    let kept = tab.post(HELLO, &with_csrf(&typed, &csrf), &origin);
    assert_eq!(kept.status, 401, "{}", kept.body);
    assert!(kept.body.contains("Your session ended before this form was sent"), "{}", kept.body);
    assert!(kept.body.contains(r#"name="signin_password" type="password""#), "{}", kept.body);
    assert_keeps_everything(&kept.body);
    assert!(kept.header("content-security-policy").is_some());
    assert_eq!(std::fs::read_to_string(site.path().join(HELLO_FILE)).unwrap(), stored, "nothing saved");

    // A wrong password: still kept, the email filled in again.
    let signin_csrf = kept.input("csrf");
    let mut wrong = with_csrf(&typed, &signin_csrf);
    wrong.extend([("signin_email", "ed@example.com"), ("signin_password", "not it")]);
    let refused = tab.post(HELLO, &wrong, &origin);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.body.contains("Wrong email or password"), "{}", refused.body);
    assert!(refused.body.contains(r#"value="ed@example.com""#), "{}", refused.body);
    assert_keeps_everything(&refused.body);

    // The right one: signed in, and the save is made with what was typed.
    let signin_csrf = refused.input("csrf");
    let mut right = with_csrf(&typed, &signin_csrf);
    right.extend([("signin_email", "ed@example.com"), ("signin_password", PASSWORD)]);
    let saved = tab.post(HELLO, &right, &origin);
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(saved.header("location"), Some(format!("{HELLO}?ok=saved").as_str()));
    let file = std::fs::read_to_string(site.path().join(HELLO_FILE)).unwrap();
    assert!(file.contains("title: Typed after the session ended"), "{file}");
    assert!(file.contains("Typed while signed out.\nA second line with <angle> & \"quotes\"."), "{file}");
    assert!(!file.contains("signin"), "the sign-in's fields are not the item's: {file}");
    assert_eq!(tab.get("/admin/").status, 200, "the new session works");
}

#[test]
fn a_save_with_another_sessions_token_is_kept_and_sent_again_in_one_click() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let origin = [("Origin", server.base.as_str())];
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let page = tab.get(HELLO);
    let (old_csrf, etag) = (page.input("csrf"), page.input("etag"));
    // Signed out and in again (another tab): the open form's token is the old session's.
    assert_eq!(tab.post("/admin/signout", &[("csrf", &old_csrf)], &[]).status, 303);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);

    let typed = typed_save(&etag);
    let kept = tab.post(HELLO, &with_csrf(&typed, &old_csrf), &origin);
    assert_eq!(kept.status, 403, "{}", kept.body);
    assert!(kept.body.contains("Send again"), "{}", kept.body);
    assert!(kept.body.contains(r#"id="sign-out""#), "inside the layout: {}", kept.body);
    assert!(!kept.body.contains("signin_password"), "signed in: no sign-in form");
    assert_keeps_everything(&kept.body);
    let fresh = kept.input("csrf");
    assert_ne!(fresh, old_csrf);
    let saved = tab.post(HELLO, &with_csrf(&typed, &fresh), &origin);
    assert_eq!(saved.status, 303, "{}", saved.body);
    let file = std::fs::read_to_string(site.path().join(HELLO_FILE)).unwrap();
    assert!(file.contains("title: Typed after the session ended"), "{file}");

    // A form the editor did not make (no token at all), even from this site: refused.
    let tokenless = tab.post(HELLO, &with_csrf(&typed, "")[1..], &origin);
    assert_eq!(tokenless.status, 403);
    assert!(tokenless.body.contains("security token"), "{}", tokenless.body);
    assert!(!tokenless.body.contains("Typed while signed out"), "{}", tokenless.body);

    // From another site: refused, and nothing of it is offered back to be sent.
    let forged = tab.post(HELLO, &with_csrf(&typed, &old_csrf), &[("Origin", "https://evil.example")]);
    assert_eq!(forged.status, 403);
    assert!(!forged.body.contains("Typed while signed out"), "{}", forged.body);
    // Without a session and without a word on where it came from: a sign-in, nothing kept.
    let mut stranger = Tab::new(&server);
    let unknown = stranger.post(HELLO, &with_csrf(&typed, &old_csrf), &[]);
    assert_eq!(unknown.status, 401);
    assert!(!unknown.body.contains("Typed while signed out"), "{}", unknown.body);
    assert!(unknown.body.contains(r#"action="/admin/signin""#), "{}", unknown.body);
}

#[test]
fn error_pages_sit_in_the_layout_in_plain_sentences_with_a_way_on() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let mut ed = Tab::new(&server);
    assert_eq!(ed.sign_in("ed@example.com", PASSWORD).status, 303);

    // 404, signed in: the editor's layout, a plain sentence, the ways on.
    let missing = ed.get("/admin/no/such/page");
    assert_eq!(missing.status, 404);
    for needle in [
        "<h1>Page not found</h1>",
        "There is no page at /admin/no/such/page in the editor",
        r#"id="sign-out""#,
        r#"<nav aria-label="Main">"#,
        r#"<a href="/admin/">Go to the start page</a>"#,
    ] {
        assert!(missing.body.contains(needle), "{needle}\n{}", missing.body);
    }
    assert!(!missing.body.contains("Status 404"));
    assert!(missing.header("content-security-policy").unwrap().contains("script-src 'self'"));
    assert_eq!(missing.header("cache-control"), Some("no-store"));
    let item = ed.get("/admin/collections/blog-posts/items/nothing-here.md");
    assert_eq!(item.status, 404);
    assert!(item.body.contains(r#"id="sign-out""#), "{}", item.body);

    // 403: a page the role does not open.
    let keys = ed.get("/admin/keys");
    assert_eq!(keys.status, 403, "{}", keys.body);
    assert!(
        keys.body.contains("<h1>Not allowed</h1>") && keys.body.contains(r#"id="sign-out""#),
        "{}",
        keys.body
    );

    // 404, signed out: the site's frame, without the navigation.
    let mut stranger = Tab::new(&server);
    let nowhere = stranger.get("/admin/no/such/page");
    assert_eq!(nowhere.status, 404);
    assert!(
        nowhere.body.contains(r#"class="brand""#) && !nowhere.body.contains("sign-out"),
        "{}",
        nowhere.body
    );

    // 401: the sign-in form, with its own token in a cookie.
    let media = format!("{}/admin/media?folder=0", server.base);
    let unsigned = stranger.post("/admin/media/folder", &[("name", "x")], &[("Referer", &media)]);
    assert_eq!(unsigned.status, 401, "{}", unsigned.body);
    assert!(
        unsigned.body.contains(r#"<a href="/admin/media?folder=0">Back to the page you came from</a>"#),
        "{}",
        unsigned.body
    );
    assert!(unsigned.body.contains("<h1>Sign in to continue</h1>"), "{}", unsigned.body);
    assert!(unsigned.body.contains(r#"action="/admin/signin""#), "{}", unsigned.body);
    assert!(unsigned.body.contains(r#"name="password" type="password""#), "{}", unsigned.body);
    let token = unsigned.input("csrf");
    assert_eq!(stranger.cookies.get("cms_signin"), Some(&token), "the form's token is its cookie's");
    // ... which signs in.
    let next = unsigned.input("next");
    let signed = stranger.post(
        "/admin/signin",
        &[("csrf", &token), ("email", "owner@example.com"), ("password", PASSWORD), ("next", &next)],
        &[],
    );
    assert_eq!(signed.status, 303, "{}", signed.body);
    assert_eq!(signed.header("location"), Some("/admin/media?folder=0"), "back where it was");
    let elsewhere = Tab::new(&server).post(
        "/admin/media/folder",
        &[("name", "x")],
        &[("Referer", "https://evil.example/admin/media")],
    );
    assert!(!elsewhere.body.contains("Back to the page"), "another site is no way back: {}", elsewhere.body);

    // A sign-in form left open too long (its token replaced): the form again, fresh.
    let mut late = Tab::new(&server);
    late.get("/admin/signin");
    let stale = late.post(
        "/admin/signin",
        &[("csrf", &"0".repeat(64)), ("email", "ed@example.com"), ("password", PASSWORD)],
        &[],
    );
    assert_eq!(stale.status, 403, "{}", stale.body);
    assert!(stale.body.contains("This sign-in form had expired"), "{}", stale.body);
    let fresh = stale.input("csrf");
    assert_eq!(late.cookies.get("cms_signin"), Some(&fresh));
    let signed = late.post(
        "/admin/signin",
        &[("csrf", &fresh), ("email", "ed@example.com"), ("password", PASSWORD), ("next", "/admin/")],
        &[],
    );
    assert_eq!(signed.status, 303, "{}", signed.body);

    // 429: how long to wait (also in Retry-After, with a countdown), and the form.
    let mut guesser = Tab::new(&server);
    for _ in 0..5 {
        assert_eq!(guesser.sign_in("ed@example.com", "wrong password").status, 401);
    }
    let locked = guesser.sign_in("ed@example.com", PASSWORD);
    assert_eq!(locked.status, 429, "{}", locked.body);
    let wait: u64 = locked.header("retry-after").unwrap().parse().unwrap();
    assert!(wait >= 1);
    for needle in [
        "<h1>Too many sign-in attempts</h1>",
        &format!(r#"Try again in <span data-countdown="{wait}">{wait} seconds</span>."#),
        r#"action="/admin/signin""#,
        r#"<a href="/admin/">Go to the start page</a>"#,
    ] {
        assert!(locked.body.contains(needle), "{needle}\n{}", locked.body);
    }
    assert!(locked.header("content-security-policy").is_some());
}

/// In a real browser (`tests/browser/sessions.py`): the text typed before the session
/// ended comes back on the page, and signing in there saves it; error pages in the layout,
/// the locked sign-in counting down; axe-core finds nothing serious on them.
#[test]
fn typed_work_survives_a_sign_out_in_a_real_browser() {
    use crate::admin_browser::{browser_tools, run_script};
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "editor@example.com", "editor");
    let server = Server::start(site.path());
    let Some(tools) = browser_tools() else { return };
    run_script(&tools, "sessions.py", &server, &[]);
    let file = std::fs::read_to_string(site.path().join(HELLO_FILE)).unwrap();
    assert!(file.contains("title: Kept through a sign-out"), "{file}");
    assert!(
        file.contains("Typed in the browser while the session ended.\nSecond line, still here."),
        "{file}"
    );
}

#[test]
fn a_kept_form_stays_kept_while_signing_in_is_paused() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let origin = [("Origin", server.base.as_str())];
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let page = tab.get(HELLO);
    let (csrf, etag) = (page.input("csrf"), page.input("etag"));
    assert_eq!(tab.post("/admin/signout", &[("csrf", &csrf)], &[]).status, 303);
    let mut guesser = Tab::new(&server);
    for _ in 0..5 {
        assert_eq!(guesser.sign_in("ed@example.com", "wrong password").status, 401);
    }

    let typed = typed_save(&etag);
    let kept = tab.post(HELLO, &with_csrf(&typed, &csrf), &origin);
    assert_eq!(kept.status, 401);
    let signin_csrf = kept.input("csrf");
    let mut fields = with_csrf(&typed, &signin_csrf);
    fields.extend([("signin_email", "ed@example.com"), ("signin_password", PASSWORD)]);
    let paused = tab.post(HELLO, &fields, &origin);
    assert_eq!(paused.status, 429, "{}", paused.body);
    assert!(paused.header("retry-after").is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
    assert!(paused.body.contains("<h1>Too many sign-in attempts</h1>"), "{}", paused.body);
    assert!(paused.body.contains("data-countdown="), "{}", paused.body);
    assert!(paused.body.contains(r#"value="ed@example.com""#), "the email stays filled in");
    assert_keeps_everything(&paused.body);
}
