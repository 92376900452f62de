use cms_core::policy::Caller;
use std::time::{Duration, Instant};

use cms_core::document::Frontmatter;
use cms_core::events::EventKind;
use cms_core::ports::EventSink;
use cms_core::service::NewItem;
use cms_webhooks::WebhookSink;
use cms_webhooks::testing::{Answer, Receiver, dead_url};

use crate::{Fixture, SETTLE, allowed, file_event};

const SLOW: Duration = Duration::from_secs(5);

#[test]
fn shutdown_finishes_what_is_queued_and_later_events_are_logged_as_not_sent() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(204));
    f.add(&receiver.url(), "file.updated");
    let sink = f.sink();
    for _ in 0..20 {
        sink.publish(file_event(EventKind::FileUpdated));
    }
    let report = sink.shutdown(SETTLE);
    assert_eq!((report.finished, report.abandoned), (true, 0));
    assert_eq!(receiver.received().len(), 20);

    sink.publish(file_event(EventKind::FileUpdated));
    let log = f.store.log().unwrap();
    assert_eq!(log.iter().filter(|e| e.success && e.status == Some(204)).count(), 20);
    let last = log.last().unwrap();
    assert_eq!(last.error.as_deref(), Some("not sent: the process was stopping"));
    assert_eq!(receiver.received().len(), 20);
}

#[test]
fn publishing_never_waits_and_a_shutdown_deadline_logs_what_did_not_finish() {
    let f = Fixture::new();
    let slow = Receiver::start(&f.ca, Answer::Slow(SLOW));
    f.add(&slow.url(), "file.created");
    let sink = f.sink(); // two workers

    let started = Instant::now();
    for _ in 0..6 {
        sink.publish(file_event(EventKind::FileCreated));
    }
    let publishing = started.elapsed();
    assert!(publishing < Duration::from_millis(500), "publishing 6 events took {publishing:?}");

    slow.wait_for(2, SETTLE); // both workers are now waiting on the slow receiver
    let started = Instant::now();
    let report = sink.shutdown(Duration::from_millis(300));
    let stopping = started.elapsed();
    assert!(stopping < Duration::from_secs(2), "shutdown kept its deadline: {stopping:?}");
    assert_eq!((report.finished, report.abandoned), (false, 6), "2 in flight + 4 queued");
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 6);
    assert!(
        log.iter()
            .all(|e| !e.success && e.error.as_deref().unwrap().starts_with("not sent: the process stopped"))
    );
    assert_eq!(log.iter().filter(|e| e.error.as_deref().unwrap().contains("may have reached")).count(), 2);
}

#[test]
fn a_full_queue_logs_the_event_as_not_sent_without_blocking() {
    let f = Fixture::new();
    let slow = Receiver::start(&f.ca, Answer::Slow(SLOW));
    f.add(&slow.url(), "file.created");
    let mut config = f.config(Duration::from_secs(10));
    config.workers = 1;
    config.queue = 1;
    let lock_path = config.state_dir.join("webhooks.lock");
    let sink = WebhookSink::start(config, allowed()).unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    slow.wait_for(1, SETTLE); // the worker is busy
    // Another process (the CLI) holds the log's lock: publishing must not wait for it,
    // so nothing may be written to the log on the publishing thread.
    let held = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).unwrap();
    held.lock().unwrap();
    let started = Instant::now();
    for _ in 0..4 {
        sink.publish(file_event(EventKind::FileCreated)); // one fits in the queue
    }
    assert!(started.elapsed() < Duration::from_millis(500), "a full queue does not block");
    drop(held);
    let report = sink.shutdown(Duration::from_millis(100));
    assert_eq!(report.abandoned, 2, "the one in flight and the one queued");
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 5, "every event is accounted for: {log:?}");
    let full = log.iter().filter(|e| e.error.as_deref() == Some("not sent: the delivery queue was full"));
    assert_eq!(full.count(), 3);
}

/// The write path costs the same whatever the receiver does: the facade's create returns
/// before any delivery is attempted.
#[tokio::test]
async fn a_write_returns_as_fast_with_a_slow_or_dead_receiver() {
    let f = Fixture::new();
    let fast = Receiver::start(&f.ca, Answer::Status(200));
    let slow = Receiver::start(&f.ca, Answer::Slow(SLOW));
    let mut timings = Vec::new();
    for (name, url) in [("fast", fast.url()), ("slow", slow.url()), ("down", dead_url())] {
        let subscription = f.add(&url, "file.created");
        let sink = f.sink();
        let (_world, cms) = f.cms(sink.clone());
        let posts = cms.collection("posts").unwrap();
        let mut worst = Duration::ZERO;
        for n in 0..3 {
            let mut fm = Frontmatter::new();
            fm.insert("title".into(), format!("{name} {n}").into());
            let new = NewItem { slug: None, date_prefix: Some(false), fm, body: String::new() };
            let started = Instant::now();
            cms.create_item(Caller::Operator, posts, new).await.unwrap();
            worst = worst.max(started.elapsed());
        }
        timings.push((name, worst));
        sink.shutdown(Duration::from_millis(50));
        f.store.remove(&subscription.id).unwrap();
    }
    eprintln!("slowest of 3 creates per receiver: {timings:?}");
    for (name, worst) in timings {
        assert!(worst < Duration::from_millis(500), "{name}: a create took {worst:?}");
    }
}

#[test]
fn a_failed_delivery_is_retried_with_its_delivery_id_and_each_attempt_logged() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::FailFirst(2));
    let hook = f.add(&receiver.url(), "file.created");
    let mut config = f.config(Duration::from_secs(10));
    config.retry_delays =
        vec![Duration::from_millis(300), Duration::from_millis(300), Duration::from_millis(300)];
    let sink = WebhookSink::start(config, allowed()).unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    let got = receiver.wait_for(3, Duration::from_secs(10));
    assert_eq!(got.len(), 3, "two failures, then the success");
    let ids: Vec<&str> = got.iter().map(|r| r.header("x-webhook-delivery").unwrap()).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one delivery id: {ids:?}");
    assert!(got.iter().all(|r| r.header("webhook-id") == Some(ids[0])));
    assert!(got.iter().all(|r| r.body == got[0].body));
    let report = sink.shutdown(SETTLE);
    // Finished means every worker has ended, so no delivery can follow: the count is final
    // now, with no waiting to see that nothing more comes.
    assert!(report.finished);
    assert_eq!(receiver.received().len(), 3, "nothing after the success");
    let log = f.store.log().unwrap();
    let attempts: Vec<(u32, Option<u16>, bool)> =
        log.iter().map(|e| (e.attempt, e.status, e.success)).collect();
    assert_eq!(attempts, [(1, Some(500), false), (2, Some(500), false), (3, Some(200), true)]);
    assert!(log.iter().all(|e| e.delivery == ids[0] && e.webhook == hook.id));
}

#[test]
fn consecutive_failures_disable_a_subscription_and_pending_retries_are_logged_at_shutdown() {
    let f = Fixture::new();
    let hook = f.add(&dead_url(), "file.created");
    let mut config = f.config(Duration::from_secs(10));
    config.disable_after = Some(2);
    let sink = WebhookSink::start(config, allowed()).unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    sink.publish(file_event(EventKind::FileCreated));
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.store.list().unwrap()[0].enabled && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!f.store.list().unwrap()[0].enabled, "disabled after two failed deliveries");
    sink.shutdown(SETTLE);
    f.store.set_enabled(&hook.id, true).unwrap();

    // A retry not yet due when the process stops is logged as not sent, with its attempt.
    let mut config = f.config(Duration::from_secs(10));
    config.retry_delays = vec![Duration::from_secs(3600)];
    let sink = WebhookSink::start(config, allowed()).unwrap();
    f.store.clear_log().unwrap();
    sink.publish(file_event(EventKind::FileCreated));
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.store.log().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let report = sink.shutdown(SETTLE);
    assert_eq!(report.abandoned, 1);
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!((log[1].attempt, log[1].delivery.as_str()), (2, log[0].delivery.as_str()));
    assert!(log[1].error.as_deref().unwrap().contains("before attempt 2 was due"), "{log:?}");
}

/// Subscriptions kept in memory whose reads start failing on demand (a bucket that stops
/// answering for a while); writes (the delivery log) keep working.
#[derive(Default)]
struct FlakyFiles {
    texts: std::sync::Mutex<std::collections::HashMap<String, String>>,
    failing: std::sync::atomic::AtomicBool,
}

impl cms_core::ports::StateDocuments for FlakyFiles {
    fn read(&self, name: &str) -> cms_core::CoreResult<Option<String>> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(cms_core::CoreError::internal(name, "the store does not answer"));
        }
        Ok(self.texts.lock().unwrap().get(name).cloned())
    }

    fn update(&self, name: &str, mut change: cms_core::ports::TextChange) -> cms_core::CoreResult<()> {
        let mut texts = self.texts.lock().unwrap();
        if let Some(new) = change(texts.get(name).map(String::as_str))? {
            texts.insert(name.to_owned(), new);
        }
        Ok(())
    }

    fn describe(&self, name: &str) -> String {
        format!("flaky:{name}")
    }
}

#[test]
fn events_are_still_delivered_while_the_subscriptions_cannot_be_read() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(204));
    f.add(&receiver.url(), "file.created");
    let files = std::sync::Arc::new(FlakyFiles::default());
    let subscriptions = std::fs::read_to_string(f.dir.path().join(".cms/webhooks.yaml")).unwrap();
    files.texts.lock().unwrap().insert("webhooks.yaml".into(), subscriptions);
    let mut config = f.config(Duration::from_secs(10));
    config.store = cms_webhooks::WebhookStore::new(files.clone(), std::sync::Arc::new(cms_fs::SystemClock));
    let sink = WebhookSink::start(config, allowed()).unwrap();

    sink.publish(file_event(EventKind::FileCreated));
    receiver.wait_for(1, SETTLE);
    files.failing.store(true, std::sync::atomic::Ordering::SeqCst);
    sink.publish(file_event(EventKind::FileCreated));
    let got = receiver.wait_for(2, SETTLE);
    assert_eq!(got.len(), 2, "delivered to the subscriptions read last");
    sink.shutdown(SETTLE);
}
