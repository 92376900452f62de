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
