//! `cms webhooks ...`, user events delivered by the CLI process, and deliveries from the
//! server: a real HTTPS receiver on 127.0.0.1 trusted through `webhooks.ca_file`.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cms_webhooks::testing::{Answer, Receiver, TestCa, dead_url};
use ring::hmac;
use serde_json::json;
use tempfile::TempDir;

use crate::{Server, cms, demo_site, stdout, user_with_key};

/// A demo site whose `cms.yaml` trusts `ca` through `webhooks.ca_file` and allows
/// deliveries to private addresses (the test receivers are on loopback).
pub(crate) fn site_trusting(ca: &TestCa) -> TempDir {
    let site = demo_site();
    ca.write_ca(&site.path().join("test-ca.pem"));
    let config = site.path().join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let text = text.replace(
        "  timeout_secs: 10\n",
        "  timeout_secs: 10\n  ca_file: test-ca.pem\n  allow_private_addresses: true\n",
    );
    assert!(text.contains("ca_file"), "the demo config has a webhooks section");
    fs::write(config, text).unwrap();
    site
}

/// Turns `webhooks.allow_private_addresses` of a [`site_trusting`] off.
fn forbid_private_addresses(site: &Path) {
    let config = site.join("cms.yaml");
    let text = fs::read_to_string(&config).unwrap();
    let text = text.replace("  allow_private_addresses: true\n", "");
    assert!(!text.contains("allow_private_addresses"));
    fs::write(config, text).unwrap();
}

/// `cms webhooks add`; returns the id and the secret (the last line).
pub(crate) fn add_hook(site: &Path, url: &str, events: &str) -> (String, String) {
    let output = cms(site, &["webhooks", "add", "--url", url, "--events", events]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let out = stdout(&output);
    let id = out.split_whitespace().find(|w| w.starts_with("wh_")).unwrap().to_owned();
    (id, out.lines().last().unwrap().to_owned())
}

pub(crate) fn signed_by(secret: &str, body: &[u8], header: Option<&str>) -> bool {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    header == Some(format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))).as_deref()
}

pub(crate) fn ok(site: &Path, args: &[&str]) -> String {
    let output = cms(site, args);
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    stdout(&output)
}

#[test]
fn webhooks_commands_manage_subscriptions_and_refuse_bad_input() {
    let site = demo_site();
    let site = site.path();
    let output = cms(
        site,
        &[
            "webhooks",
            "add",
            "--url",
            "https://hooks.example.com/cms",
            "--events",
            "file.created, user.deleted",
        ],
    );
    assert!(output.status.success());
    let out = stdout(&output);
    let secret = out.lines().last().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() == 6 + 64, "the secret is the last line: {out}");

    let listed = ok(site, &["webhooks", "list"]);
    let fields: Vec<&str> = listed.split_whitespace().collect();
    assert!(fields[0].starts_with("wh_"), "id first: {listed}");
    assert_eq!(fields[1..4], ["enabled", "https://hooks.example.com/cms", "file.created,user.deleted"]);
    assert!(!listed.contains(&secret[6..]), "the secret is never listed");
    let id = fields[0].to_owned();

    assert_eq!(ok(site, &["webhooks", "disable", &id]), format!("disabled {id}\n"));
    assert!(ok(site, &["webhooks", "list"]).contains(" disabled "));
    assert_eq!(ok(site, &["webhooks", "enable", &id]), format!("enabled {id}\n"));
    assert_eq!(ok(site, &["webhooks", "log"]), "");
    assert_eq!(ok(site, &["webhooks", "clear-log"]), "cleared the delivery log (0 entries)\n");

    let stored = site.join(".cms/webhooks.yaml");
    let before = fs::read(&stored).unwrap();
    let cases: [&[&str]; 7] = [
        &["webhooks", "add", "--url", "http://hooks.example.com/cms", "--events", "file.created"],
        &[
            "webhooks",
            "add",
            "--url",
            "https://hooks.example.com/cms",
            "--events",
            "file.created,file.renamed",
        ],
        &["webhooks", "add", "--url", "https://hooks.example.com/cms", "--events", ""],
        &["webhooks", "add", "--url", "hooks.example.com", "--events", "file.created"],
        &["webhooks", "enable", "wh_missing"],
        &["webhooks", "disable", "wh_missing"],
        &["webhooks", "remove", "wh_missing"],
    ];
    for args in cases {
        let output = cms(site, args);
        let stderr = crate::error_of(site, &output);
        assert!(!output.status.success(), "{args:?} should fail");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line, got {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
    assert_eq!(fs::read(&stored).unwrap(), before, "nothing changed on disk");

    assert_eq!(ok(site, &["webhooks", "remove", &id]), format!("removed {id}\n"));
    assert_eq!(ok(site, &["webhooks", "list"]), "");
}

#[test]
fn user_commands_deliver_their_events_before_the_process_exits() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    let site = site_trusting(&ca);
    let site = site.path();
    let (id, secret) = add_hook(site, &receiver.url(), "user.created,user.updated,user.deleted");

    ok(site, &["users", "add", "--email", "ann@example.com", "--role", "editor"]);
    // No waiting: the command delivered before it exited.
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert!(signed_by(&secret, &got[0].body, got[0].header("x-webhook-signature")));
    assert_eq!(got[0].header("x-webhook-event"), Some("user.created"));
    assert_eq!(got[0].json()["data"], json!({"email": "ann@example.com", "role": "editor"}));

    ok(site, &["users", "add", "--email", "ann@example.com", "--role", "editor"]); // no change
    // (An admin, not an owner: the only owner cannot be removed.)
    ok(site, &["users", "add", "--email", "ann@example.com", "--role", "admin"]);
    ok(site, &["users", "remove", "--email", "ann@example.com"]);
    let got = receiver.received();
    let events: Vec<_> = got.iter().map(|r| r.json()["event"].as_str().unwrap().to_owned()).collect();
    assert_eq!(events, ["user.created", "user.updated", "user.deleted"]);
    assert!(got.iter().all(|r| signed_by(&secret, &r.body, r.header("x-webhook-signature"))));
    assert_eq!(got[2].json()["data"], json!({"email": "ann@example.com"}));

    let log = ok(site, &["webhooks", "log"]);
    assert_eq!(log.lines().count(), 3, "{log}");
    for (line, request) in log.lines().zip(&got) {
        let delivery = request.header("x-webhook-delivery").unwrap();
        assert!(line.contains(delivery) && line.contains(&id) && line.ends_with(" 200 success"), "{line}");
    }
    assert_eq!(ok(site, &["webhooks", "clear-log"]), "cleared the delivery log (3 entries)\n");
    assert_eq!(ok(site, &["webhooks", "log"]), "");
}

/// Webhooks are a plan feature: without it nothing is sent, and the log says why. The
/// license is read when the delivery is due, so installing one with the feature turns
/// deliveries on at once.
#[test]
fn without_the_webhooks_feature_nothing_is_delivered_and_the_log_says_why() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    let site = site_trusting(&ca);
    let site = site.path();
    let (id, _) = add_hook(site, &receiver.url(), "user.created,user.deleted");
    let license = site.join(".cms/license.yaml");
    fs::write(&license, "licensee: Demo Site\nfeatures: [json_api]\n").unwrap();

    ok(site, &["users", "add", "--email", "ann@example.com", "--role", "editor"]);
    assert!(receiver.received().is_empty(), "nothing is sent without the webhooks feature");
    let log = ok(site, &["webhooks", "log"]);
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains(&id) && log.contains(" user.created "), "{log}");
    assert!(
        log.trim_end().ends_with("error: not sent: the license does not include the webhooks feature"),
        "{log}"
    );

    fs::write(&license, "licensee: Demo Site\nfeatures: [json_api, webhooks]\n").unwrap();
    ok(site, &["users", "remove", "--email", "ann@example.com"]);
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-webhook-event"), Some("user.deleted"));
}

/// An API write does not wait for its receivers, fast, slow (5 s) or down; a graceful stop
/// then finishes the slow deliveries before the process exits. A write that waited for the
/// slow receiver would take its 5 s; an honest one takes milliseconds, and the bound sits
/// between the two (not near the fast case, which a disk stall on a busy machine can pass).
#[test]
fn api_writes_never_wait_for_receivers_and_a_graceful_stop_finishes_deliveries() {
    const SLOW_ANSWER: Duration = Duration::from_secs(5);
    let ca = TestCa::new();
    let fast = Receiver::start(&ca, Answer::Status(200));
    let slow = Receiver::start(&ca, Answer::Slow(SLOW_ANSWER));
    let site = site_trusting(&ca);
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let hooks = [
        ("fast", add_hook(site.path(), &fast.url(), "file.created")),
        ("slow", add_hook(site.path(), &slow.url(), "file.created")),
        ("down", add_hook(site.path(), &dead_url(), "file.created")),
    ];
    for (_, (id, _)) in &hooks {
        ok(site.path(), &["webhooks", "disable", id]);
    }
    let mut server = Server::start(site.path());
    let url = format!("{}/cms/collections/posts/items", server.base);
    let write = |slug: String| {
        let started = Instant::now();
        let response = server
            .agent
            .post(&url)
            .header("Authorization", format!("Bearer {key}"))
            .send_json(json!({"slug": slug, "date_prefix": false, "fm": {"title": "W"}}))
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        started.elapsed()
    };

    let mut timings = vec![("none", (0..3).map(|n| write(format!("none-{n}"))).max().unwrap())];
    for (name, (id, _)) in &hooks {
        ok(site.path(), &["webhooks", "enable", id]);
        timings.push((name, (0..3).map(|n| write(format!("{name}-{n}"))).max().unwrap()));
        ok(site.path(), &["webhooks", "disable", id]);
    }
    eprintln!("slowest of 3 creates, by receiver: {timings:?}");
    for (name, worst) in &timings {
        assert!(*worst < SLOW_ANSWER - Duration::from_secs(2), "{name}: a write took {worst:?}: {timings:?}");
    }
    assert_eq!(fast.wait_for(3, Duration::from_secs(20)).len(), 3);
    assert!(slow.wait_for(3, Duration::from_secs(20)).len() == 3, "the slow receiver got its requests");

    // SIGTERM while the slow receiver still holds its three deliveries.
    let started = Instant::now();
    let killed = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert!(server.child.wait().unwrap().success(), "graceful stop exits 0");
    eprintln!("graceful stop took {:?}", started.elapsed());

    let log = ok(site.path(), &["webhooks", "log"]);
    let count = |hook: &str, outcome: &str| {
        let id = &hooks.iter().find(|(name, _)| *name == hook).unwrap().1.0;
        log.lines().filter(|l| l.contains(id.as_str()) && l.contains(outcome)).count()
    };
    assert_eq!(count("fast", " 200 success"), 3, "{log}");
    assert_eq!(count("slow", " 200 success"), 3, "the stop waited for the slow deliveries: {log}");
    assert_eq!(count("down", " - error: connection error"), 3, "{log}");
    assert_eq!(log.lines().count(), 9, "{log}");
}

/// A file edited by hand in the site folder while the server runs (created, changed,
/// removed) is announced like an API write: the receiver gets `file.created`,
/// `file.updated` and `file.deleted`, signed, with the file's name and folder.
#[test]
fn an_outside_edit_of_a_file_sends_its_webhook() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    let site = site_trusting(&ca);
    let (_, secret) = add_hook(site.path(), &receiver.url(), "file.created,file.updated,file.deleted");
    let server = Server::start(site.path());
    let file = site.path().join("content/posts/edited-by-hand.md");

    let steps: [(&str, Option<&str>); 3] = [
        ("file.created", Some("---\ntitle: By hand\nstatus: published\n---\nWritten in an editor.\n")),
        ("file.updated", Some("---\ntitle: By hand, again\nstatus: published\n---\nChanged.\n")),
        ("file.deleted", None),
    ];
    for (count, (event, text)) in steps.into_iter().enumerate() {
        match text {
            Some(text) => fs::write(&file, text).unwrap(),
            None => fs::remove_file(&file).unwrap(),
        }
        let got = receiver.wait_for(count + 1, Duration::from_secs(20));
        assert_eq!(got.len(), count + 1, "{event} arrives");
        let last = &got[count];
        assert!(signed_by(&secret, &last.body, last.header("x-webhook-signature")));
        assert_eq!(last.header("x-webhook-event"), Some(event));
        let body = last.json();
        assert_eq!(body["event"], event);
        // The spec's fields, the item's collection and slug, and the event's id (the
        // same as on the live stream): one more per step.
        assert_eq!(
            body["data"],
            json!({"filename": "edited-by-hand.md", "folder": 0, "collection": "blog-posts", "slug": "edited-by-hand"})
        );
        assert!(body["id"].as_u64().is_some(), "{body}");
    }
    // The API's answer agrees: the item is gone.
    let gone = server.agent.get(format!("{}/cms/collections/posts/items/edited-by-hand", server.base)).call();
    assert_eq!(gone.unwrap().status().as_u16(), 404);
}

/// Finding 10 of the review, end to end: a site that does not allow private addresses
/// refuses a loopback receiver when it is added (the message names the setting) and, for
/// a subscription that exists already (added while the setting was on, or by hand), when
/// the delivery is due: by the CLI and by the server alike, the log says only that the
/// address policy refused it, and no request reaches the receiver.
#[test]
fn without_allow_private_addresses_a_loopback_receiver_is_refused() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    let site = site_trusting(&ca);
    let site = site.path();
    let (id, _) = add_hook(site, &receiver.url(), "file.created,user.created");
    forbid_private_addresses(site);

    for url in [receiver.url(), format!("https://2130706433:{}/hook", receiver.port())] {
        let output = cms(site, &["webhooks", "add", "--url", &url, "--events", "file.created"]);
        let stderr = crate::error_of(site, &output);
        assert!(!output.status.success(), "{url} is refused when added");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("internal address") && stderr.contains("webhooks.allow_private_addresses"),
            "{stderr}"
        );
    }

    ok(site, &["users", "add", "--email", "ann@example.com", "--role", "editor"]);
    let key = user_with_key(site, "ed@example.com", "editor");
    let server = Server::start(site);
    let created = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "refused", "date_prefix": false, "fm": {"title": "R"}}))
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);
    let log = crate::poll(|| ok(site, &["webhooks", "log"]), |log| log.contains(" file.created "));
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(&id)).collect();
    assert!(lines.iter().any(|l| l.contains(" user.created ")), "the CLI's delivery: {log}");
    assert!(lines.iter().any(|l| l.contains(" file.created ")), "the server's delivery: {log}");
    for line in &lines {
        assert!(line.ends_with(" - error: refused by the address policy"), "{line}");
    }
    assert!(receiver.received().is_empty(), "no request reached the receiver");
}
