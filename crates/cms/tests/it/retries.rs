//! Webhooks that are never lost, on the real server: retries with one delivery id, the
//! Standard Webhooks headers verified by the official `standardwebhooks` package (when a
//! Python with it is found, else recorded as skipped; `CMS_REQUIRE_VALIDATORS=1` makes a
//! missing one fail), and the `test` and `redeliver` commands.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cms_webhooks::testing::{Answer, Receiver, TestCa};
use serde_json::json;

use crate::webhooks::{add_hook, ok, signed_by, site_trusting};
use crate::{Server, cms, poll, user_with_key};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/standard_webhooks.py");
const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn with_webhook_settings(site: &Path, lines: &str) {
    let config = site.join("cms.yaml");
    let text = fs::read_to_string(&config)
        .unwrap()
        .replace("  timeout_secs: 10\n", &format!("  timeout_secs: 10\n{lines}"));
    fs::write(config, text).unwrap();
}

#[test]
fn a_failing_receiver_gets_every_attempt_with_one_delivery_id_and_standard_signatures() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::FailFirst(2));
    let site = site_trusting(&ca);
    let site = site.path();
    with_webhook_settings(site, "  retry_delays_secs: [1, 1]\n");
    let (id, secret) = add_hook(site, &receiver.url(), "file.created");
    let key = user_with_key(site, "ed@example.com", "editor");
    let server = Server::start(site);
    let response = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "retried", "fm": {"title": "Retried"}}))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let got = receiver.wait_for(3, Duration::from_secs(15));
    assert_eq!(got.len(), 3, "two failures and the success");
    let delivery = got[0].header("x-webhook-delivery").unwrap().to_owned();
    for request in &got {
        assert_eq!(request.header("x-webhook-delivery"), Some(delivery.as_str()));
        assert_eq!(request.header("webhook-id"), Some(delivery.as_str()));
        assert!(
            signed_by(&secret, &request.body, request.header("x-webhook-signature")),
            "the spec's signature"
        );
        assert!(request.header("webhook-signature").unwrap().starts_with("v1,"));
    }
    // The receiver records a request before it answers: wait for the third log line.
    let log = poll(|| ok(site, &["webhooks", "log"]), |log| log.lines().count() >= 3);
    drop(server);
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(&delivery)).collect();
    assert_eq!(lines.len(), 3, "{log}");
    for (n, line) in lines.iter().enumerate() {
        assert!(line.contains(&format!(" attempt={} ", n + 1)), "{line}");
    }
    assert!(lines[2].ends_with(" 200 success"), "{log}");

    // The official package verifies every delivery with the secret as printed.
    let deliveries: Vec<serde_json::Value> = got
        .iter()
        .map(|r| json!({"headers": r.headers, "body": String::from_utf8(r.body.clone()).unwrap()}))
        .collect();
    let file = site.join("deliveries.json");
    fs::write(&file, serde_json::to_vec(&deliveries).unwrap()).unwrap();
    verify_with_standard_webhooks(&secret, &file);

    // `test` pings now; `redeliver` sends a logged delivery again as its next attempt.
    let pinged = ok(site, &["webhooks", "test", &id]);
    assert!(pinged.contains(" ping ") && pinged.trim_end().ends_with(" 200 success"), "{pinged}");
    let ping = &receiver.wait_for(4, Duration::from_secs(5))[3];
    assert_eq!(ping.header("x-webhook-event"), Some("ping"));
    assert_eq!(ping.json()["data"]["webhook"], id.as_str());
    let again = ok(site, &["webhooks", "redeliver", &delivery]);
    assert!(again.contains(&delivery) && again.contains(" attempt=4 "), "{again}");
    let redelivered = &receiver.wait_for(5, Duration::from_secs(5))[4];
    assert_eq!(redelivered.body, got[0].body);
    assert_eq!(redelivered.header("webhook-id"), Some(delivery.as_str()));
    for (args, expected) in [
        (["webhooks", "test", "wh_missing"], "no webhook with id"),
        (["webhooks", "redeliver", "nope"], "no delivery \"nope\""),
    ] {
        let output = cms(site, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{args:?}: {stderr}");
    }
}

fn verify_with_standard_webhooks(secret: &str, deliveries: &Path) {
    let Some(python) = python_with_package() else {
        return cms_s3::testing::skip_check(
            "Python's standardwebhooks package",
            cms_s3::testing::INSTALL_PYTHON_PACKAGES,
        );
    };
    let output = Command::new(python).arg(SCRIPT).arg(secret).arg(deliveries).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "standardwebhooks refused a delivery:\n{out}\n{err}");
    assert_eq!(out.trim(), "verified 3");
}

fn python_with_package() -> Option<PathBuf> {
    let venv = Path::new(WORKSPACE).join("target/validators-venv/bin/python");
    let candidates = [std::env::var_os("CMS_PYTHON").map(PathBuf::from), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import standardwebhooks"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[test]
fn an_acknowledged_writes_event_survives_kill_9_while_the_receiver_is_down() {
    let ca = TestCa::new();
    let receiver = Receiver::start(&ca, Answer::Status(200));
    let (port, url) = (receiver.port(), receiver.url());
    drop(receiver); // down
    let site = site_trusting(&ca);
    let site = site.path();
    with_webhook_settings(site, "  retry_delays_secs: [3600]\n");
    add_hook(site, &url, "file.created");
    let key = user_with_key(site, "ed@example.com", "editor");
    let mut server = Server::start(site);
    let response = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "kept", "date_prefix": false, "fm": {"title": "Kept"}}))
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    server.child.kill().unwrap(); // SIGKILL, right after the reply
    server.child.wait().unwrap();
    drop(server);

    let receiver = Receiver::start_on(&ca, Answer::Status(200), port);
    let _server = Server::start(site);
    let got = receiver.wait_for(1, Duration::from_secs(10));
    assert_eq!(got.len(), 1, "the event arrives after the restart");
    assert_eq!(got[0].header("x-webhook-event"), Some("file.created"));
    assert_eq!(got[0].json()["data"]["filename"], "kept.md");
}
