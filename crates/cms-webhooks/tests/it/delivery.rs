use cms_core::policy::Caller;
use cms_core::testing::fixtures::item;
use std::collections::BTreeSet;
use std::fs;
use std::sync::Arc;
use std::time::Duration;

use cms_core::account::Role;
use cms_core::document::Frontmatter;
use cms_core::events::EventKind;
use cms_core::ports::EventSink;
use cms_core::service::{ItemUpdate, NewItem, UpdateMode};
use cms_core::testing::FixedClock;
use cms_webhooks::testing::{Answer, Receiver, TestCa, dead_url};
use cms_webhooks::{SinkConfig, WebhookSink, WebhookStore};
use ring::hmac;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::{Fixture, SETTLE, allowed, file_event};

const ALL: &str = "file.created,file.updated,file.deleted,user.created,user.updated,user.deleted";

/// The receiver's side of the contract, written out independently of the crate's code.
fn signature_is_valid(secret: &str, body: &[u8], header: &str) -> bool {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let expected = format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()));
    header == expected
}

#[tokio::test]
async fn every_event_kind_arrives_signed_over_the_raw_body() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(200));
    let subscription = f.add(&receiver.url(), ALL);
    let sink = f.sink();
    let (_world, cms) = f.cms(sink.clone());

    let posts = cms.collection("posts").unwrap();
    let mut fm = Frontmatter::new();
    fm.insert("title".into(), "Hello".into());
    let new = NewItem { slug: Some("hello".into()), date_prefix: Some(false), fm, body: "one".into() };
    cms.create_item(Caller::Operator, posts, new).await.unwrap();
    let update = ItemUpdate { mode: UpdateMode::Patch, fm: Frontmatter::new(), body: Some("two".into()) };
    cms.update_item(Caller::Operator, posts, &item("hello"), update, None).await.unwrap();
    let version =
        cms.list_versions(Caller::Operator, posts, &item("hello")).await.unwrap().versions[0].timestamp;
    cms.restore_version(
        Caller::Operator,
        posts,
        &item("hello"),
        cms_core::service::VersionId::new(version).unwrap(),
        None,
    )
    .await
    .unwrap();
    cms.delete_item(Caller::Operator, posts, &item("hello"), None).await.unwrap();
    cms.add_user(Caller::Operator, "ann@example.com", Role::Editor).await.unwrap();
    cms.add_user(Caller::Operator, "ann@example.com", Role::Admin).await.unwrap();
    cms.remove_user(Caller::Operator, "ann@example.com").await.unwrap();

    let report = sink.shutdown(SETTLE);
    assert!(report.finished, "{report:?}");
    let received = receiver.received();
    let mut events: Vec<String> = Vec::new();
    let mut deliveries = BTreeSet::new();
    for request in &received {
        assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/hook"));
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("user-agent"), Some(concat!("cms/", env!("CARGO_PKG_VERSION"))));
        let signature = request.header("x-webhook-signature").unwrap();
        assert!(signature_is_valid(&subscription.secret, &request.body, signature), "{request:?}");
        assert!(!signature_is_valid("whsec_other", &request.body, signature));
        let body = request.json();
        // Item events come through the event log, which numbers them (the stream's `id:`);
        // user events have no place in it.
        let keys = body.as_object().unwrap().keys().collect::<Vec<_>>();
        if body["event"].as_str().unwrap().starts_with("file.") {
            assert_eq!(keys, ["id", "event", "timestamp", "data"]);
            assert!(body["id"].as_u64().unwrap() > 0, "{body}");
        } else {
            assert_eq!(keys, ["event", "timestamp", "data"]);
        }
        assert_eq!(request.header("x-webhook-event"), body["event"].as_str());
        let timestamp = body["timestamp"].as_str().unwrap();
        assert!(
            timestamp.ends_with('Z') && OffsetDateTime::parse(timestamp, &Rfc3339).is_ok(),
            "{timestamp}"
        );
        let expected_data = match body["event"].as_str().unwrap() {
            "file.created" | "file.updated" | "file.deleted" => {
                json!({"filename": "hello.md", "folder": 0, "collection": "posts", "slug": "hello"})
            }
            "user.created" => json!({"email": "ann@example.com", "role": "editor"}),
            _ => json!({"email": "ann@example.com"}),
        };
        assert_eq!(body["data"], expected_data, "{body}");
        assert!(deliveries.insert(request.header("x-webhook-delivery").unwrap().to_owned()), "unique ids");
        events.push(body["event"].as_str().unwrap().to_owned());
    }
    events.sort();
    assert_eq!(
        events,
        [
            "file.created",
            "file.deleted",
            "file.updated",
            "file.updated", // the restore
            "user.created",
            "user.deleted",
            "user.updated", // the role change
        ]
    );
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 7);
    for entry in &log {
        assert!(entry.success && entry.status == Some(200) && entry.error.is_none(), "{entry:?}");
        assert_eq!(
            (entry.webhook.as_str(), entry.url.as_str()),
            (subscription.id.as_str(), receiver.url().as_str())
        );
        assert!(deliveries.contains(&entry.delivery), "the log names the X-Webhook-Delivery id");
    }
}

#[test]
fn disabled_subscriptions_and_unselected_events_send_nothing() {
    let f = Fixture::new();
    let quiet = Receiver::start(&f.ca, Answer::Status(200));
    let control = Receiver::start(&f.ca, Answer::Status(200));
    f.add(&quiet.url(), "file.deleted,user.created");
    let disabled = f.add(&quiet.url(), ALL);
    f.store.set_enabled(&disabled.id, false).unwrap();
    let watching = f.add(&control.url(), "file.created");

    let sink = f.sink();
    sink.publish(file_event(EventKind::FileCreated));
    sink.publish(file_event(EventKind::FileUpdated));
    assert!(sink.shutdown(SETTLE).finished);

    assert_eq!(quiet.received().len(), 0, "neither the unselected nor the disabled one sent anything");
    let got = control.received();
    assert_eq!(got.len(), 1, "the control subscription proves the event was processed");
    assert_eq!(got[0].json()["event"], "file.created");
    let log = f.store.log().unwrap();
    assert_eq!(log.iter().map(|e| e.webhook.as_str()).collect::<Vec<_>>(), [watching.id.as_str()]);
}

#[test]
fn error_answers_dead_receivers_and_untrusted_certificates_are_logged_as_errors() {
    let f = Fixture::new();
    let failing = Receiver::start(&f.ca, Answer::Status(500));
    let stranger = Receiver::start(&TestCa::new(), Answer::Status(200));
    let answers_500 = f.add(&failing.url(), "file.created");
    let dead = f.add(&dead_url(), "file.created");
    let untrusted = f.add(&stranger.url(), "file.created");

    let sink = f.sink();
    sink.publish(file_event(EventKind::FileCreated));
    assert!(sink.shutdown(SETTLE).finished);

    assert_eq!(failing.received().len(), 1);
    assert_eq!(stranger.received().len(), 0, "nothing is sent to a server whose certificate is not trusted");
    let log = f.store.log().unwrap();
    let find = |id: &str| log.iter().find(|e| e.webhook == id).unwrap_or_else(|| panic!("{id} in {log:?}"));
    let e = find(&answers_500.id);
    assert_eq!((e.success, e.status, e.error.as_deref()), (false, Some(500), Some("HTTP 500")));
    let e = find(&dead.id);
    assert!(!e.success && e.status.is_none(), "{e:?}");
    assert!(e.error.as_deref().unwrap().starts_with("connection error"), "{e:?}");
    let e = find(&untrusted.id);
    assert!(!e.success && e.status.is_none(), "{e:?}");
    let error = e.error.as_deref().unwrap().to_lowercase();
    assert!(error.contains("certificate") || error.contains("issuer"), "{error}");
}

#[test]
fn a_receiver_slower_than_the_time_out_is_logged_as_timed_out() {
    let f = Fixture::new();
    let slow = Receiver::start(&f.ca, Answer::Slow(Duration::from_secs(5)));
    f.add(&slow.url(), "file.created");
    let sink = WebhookSink::start(f.config(Duration::from_secs(1)), allowed()).unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    assert!(sink.shutdown(SETTLE).finished);
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].error.as_deref(), Some("timed out (webhooks.timeout_secs)"));
    assert!(log[0].duration_ms.unwrap() < 4000, "{:?}", log[0]);
}

#[test]
fn a_hand_edited_http_subscription_is_never_sent_in_clear_text() {
    let f = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    fs::create_dir_all(f.dir.path().join(".cms")).unwrap();
    let yaml = format!(
        "- id: wh_plain\n  url: http://127.0.0.1:{port}/hook\n  events: [file.created]\n  enabled: true\n  secret: whsec_x\n  created_at: 2026-01-01T00:00:00Z\n"
    );
    fs::write(f.dir.path().join(".cms/webhooks.yaml"), yaml).unwrap();
    let sink = f.sink();
    sink.publish(file_event(EventKind::FileCreated));
    assert!(sink.shutdown(SETTLE).finished);
    assert!(listener.accept().is_err(), "no connection was made");
    let log = f.store.log().unwrap();
    assert_eq!(log[0].error.as_deref(), Some("refused: the URL is not HTTPS"));
}

#[test]
fn a_sink_without_a_usable_ca_file_does_not_start() {
    let f = Fixture::new();
    let mut config: SinkConfig = f.config(Duration::from_secs(1));
    config.delivery.ca_file = Some(f.dir.path().join("nope.pem"));
    let message = WebhookSink::start(config, allowed()).err().unwrap().to_string();
    assert!(message.contains("webhooks.ca_file") && message.contains("nope.pem"), "{message}");
    let _ = Value::Null;
}

/// Subscriptions written straight into `.cms/webhooks.yaml` (as a hand edit would, past
/// the check `webhooks add` makes), one per URL, each selecting `file.created`.
fn hand_written_subscriptions(f: &Fixture, urls: &[String]) {
    let mut yaml = String::new();
    for (i, url) in urls.iter().enumerate() {
        yaml.push_str(&format!(
            "- id: wh_{i:016x}\n  url: {url}\n  events: [file.created]\n  enabled: true\n  secret: whsec_x\n  created_at: 2026-01-01T00:00:00Z\n"
        ));
    }
    fs::create_dir_all(f.dir.path().join(".cms")).unwrap();
    fs::write(f.dir.path().join(".cms/webhooks.yaml"), yaml).unwrap();
}

/// Finding 10 of the review: every spelling of an internal address is refused when the
/// delivery is due, after the name is resolved (so a name that resolves to loopback, as a
/// rebinding name would, is caught too), and the log says only that.
#[test]
fn internal_receivers_are_refused_at_delivery_in_every_spelling() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(200));
    let port = receiver.port();
    let urls: Vec<String> = [
        "127.0.0.1",
        "localhost",
        "2130706433",
        "0x7f000001",
        "127.1",
        "0177.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "0.0.0.0",
        "169.254.169.254",
        "10.0.0.1",
        "[fe80::1]",
    ]
    .iter()
    .map(|host| format!("https://{host}:{port}/hook"))
    .collect();
    hand_written_subscriptions(&f, &urls);
    let mut config = f.config(Duration::from_secs(1));
    config.delivery.allow_private_addresses = false;
    let sink = WebhookSink::start(config, allowed()).unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    assert!(sink.shutdown(SETTLE).finished);

    assert_eq!(receiver.received().len(), 0, "no request reached the receiver");
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), urls.len(), "{log:?}");
    for entry in &log {
        assert_eq!(
            (entry.success, entry.status, entry.error.as_deref()),
            (false, None, Some("refused by the address policy")),
            "{entry:?}"
        );
    }
}

/// Attempts and log entries are dated by the site's clock (the `Clock` port), not the
/// machine's: the signed `webhook-timestamp`, the attempt's log time and a not-sent entry's.
#[test]
fn attempts_and_log_entries_are_dated_by_the_sites_clock() {
    let mut f = Fixture::new();
    let clock = Arc::new(FixedClock::at_unix(1_700_000_000));
    f.store = WebhookStore::new(Arc::new(cms_fs::FsStateDocuments::new(&f.dir.path().join(".cms"))), clock)
        .allowing_private_addresses(true);
    let receiver = Receiver::start(&f.ca, Answer::Status(200));
    f.add(&receiver.url(), "file.created");
    let sink = f.sink();
    sink.publish(file_event(EventKind::FileCreated));
    let got = receiver.wait_for(1, SETTLE);
    assert_eq!(got[0].header("webhook-timestamp"), Some("1700000000"));
    assert!(sink.shutdown(SETTLE).finished);
    // After shutdown an event is logged as not sent, dated by the same clock.
    sink.publish(file_event(EventKind::FileCreated));
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    for entry in &log {
        assert_eq!(entry.time.unix_timestamp(), 1_700_000_000, "{entry:?}");
    }
    assert_eq!(log.iter().filter(|e| e.duration_ms.is_none()).count(), 1, "one not sent: {log:?}");
}
