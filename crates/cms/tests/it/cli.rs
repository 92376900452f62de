use std::fs;

use crate::{cms, demo_site, stdout, user_with_key};

#[test]
fn users_keys_and_license_commands() {
    let site = demo_site();
    let site = site.path();
    let added = cms(site, &["users", "add", "--email", "Ann@Example.com", "--role", "admin"]);
    assert_eq!(stdout(&added), "added ann@example.com (admin)\n");
    assert_eq!(stdout(&cms(site, &["users", "list"])), "ann@example.com admin\n");

    let key = user_with_key(site, "bob@example.com", "editor");
    assert!(key.starts_with("api_") && key.len() == 68, "{key}");
    let listed = stdout(&cms(site, &["keys", "list"]));
    assert!(listed.starts_with("key_") && listed.contains("bob@example.com"), "{listed}");
    assert!(!listed.contains(&key[4..]), "the plaintext is never listed");
    let stored = fs::read_to_string(site.join(".cms/keys.yaml")).unwrap();
    assert!(!stored.contains(&key[4..]), "only a hash is stored");

    let id = listed.split_whitespace().next().unwrap();
    assert!(cms(site, &["keys", "revoke", id]).status.success());
    assert_eq!(stdout(&cms(site, &["keys", "list"])), "");

    let shown = stdout(&cms(site, &["license", "show"]));
    assert!(shown.contains("licensee: Demo Site") && shown.contains("state: active"), "{shown}");

    assert!(cms(site, &["users", "remove", "--email", "ann@example.com"]).status.success());
    assert_eq!(stdout(&cms(site, &["users", "list"])), "bob@example.com editor\n");
}

#[test]
fn bad_input_gets_one_line_errors_and_changes_nothing() {
    let site = demo_site();
    let site = site.path();
    user_with_key(site, "ann@example.com", "owner");
    let snapshot = |name: &str| fs::read(site.join(".cms").join(name)).unwrap();
    let (users, keys, license) = (snapshot("users.yaml"), snapshot("keys.yaml"), snapshot("license.yaml"));

    let bad_license = site.join("bad-license.yaml");
    fs::write(&bad_license, "licensee: X\nfeatures: [json_api]\nexpires_at: tomorrow\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["users", "add", "--email", "not-an-email", "--role", "owner"],
        vec!["users", "add", "--email", "a@b.co", "--role", "root"],
        vec!["users", "remove", "--email", "nobody@example.com"],
        vec!["keys", "create", "--user", "nobody@example.com"],
        vec!["keys", "revoke", "key_missing"],
        vec!["license", "install", bad_license.to_str().unwrap()],
        vec!["license", "install", "/no/such/file"],
    ];
    for args in cases {
        let output = cms(site, &args);
        // A command that changes the site names it first; the error is one line after it.
        let stderr = crate::error_of(site, &output);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(!stderr.trim().is_empty(), "{args:?} explains itself");
        if args[0] != "users" || args[3] != "a@b.co" {
            assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line, got {stderr}");
        }
    }
    assert_eq!(snapshot("users.yaml"), users);
    assert_eq!(snapshot("keys.yaml"), keys);
    assert_eq!(snapshot("license.yaml"), license);
}

#[test]
fn a_config_with_an_unknown_key_stops_start_up_naming_file_line_and_key() {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let text =
        fs::read_to_string(&config).unwrap().replace("  per_page: 10\n", "  per_page: 10\n  perpage: 5\n");
    fs::write(&config, text).unwrap();
    let output = cms(site.path(), &["serve", "--listen", "127.0.0.1:0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cms.yaml") && stderr.contains("line 6") && stderr.contains("perpage"),
        "{stderr}"
    );
}

/// A broken webhooks.ca_file must not lock operators out: a leaked key can still be
/// revoked, while the server refuses to start until the setting is fixed.
#[test]
fn a_broken_ca_file_stops_the_server_but_not_the_commands() {
    let site = demo_site();
    let site = site.path();
    user_with_key(site, "ann@example.com", "owner");
    let config = site.join("cms.yaml");
    let text = fs::read_to_string(&config)
        .unwrap()
        .replace("  timeout_secs: 10\n", "  timeout_secs: 10\n  ca_file: certs/missing.pem\n");
    fs::write(&config, text).unwrap();

    let id = stdout(&cms(site, &["keys", "list"])).split_whitespace().next().unwrap().to_owned();
    let revoked = cms(site, &["keys", "revoke", &id]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert_eq!(stdout(&cms(site, &["keys", "list"])), "");

    let serve = cms(site, &["serve", "--listen", "127.0.0.1:0"]);
    assert!(!serve.status.success());
    assert!(String::from_utf8_lossy(&serve.stderr).contains("missing.pem"));
}
