//! Webhooks are a plan feature: the license gate, asked when deliveries are due.

use std::sync::Arc;
use std::time::Duration;

use cms_core::events::EventKind;
use cms_core::ports::EventSink;
use cms_fs::atomic;
use cms_webhooks::testing::{Answer, Receiver};
use cms_webhooks::{DeliveryGate, LicenseGate, WebhookSink};

use crate::{Fixture, SETTLE, file_event};

const WITH_WEBHOOKS: &str = "licensee: Demo\nfeatures: [json_api, webhooks]\n";
const WITHOUT: &str = "licensee: Demo\nfeatures: [json_api]\n";

impl Fixture {
    fn install_license(&self, text: &str) {
        atomic::write_private(&self.dir.path().join(".cms/license.yaml"), text.as_bytes()).unwrap();
    }

    fn licensed_sink(&self) -> Arc<WebhookSink> {
        let gate = Arc::new(crate::folder_gate(&self.dir.path().join(".cms"), None));
        Arc::new(WebhookSink::start(self.config(Duration::from_secs(10)), gate).unwrap())
    }
}

#[test]
fn without_the_webhooks_feature_nothing_is_sent_and_the_log_says_why() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(200));
    let hook = f.add(&receiver.url(), "file.created");
    f.install_license(WITHOUT);
    let sink = f.licensed_sink();
    sink.publish(file_event(EventKind::FileCreated));
    assert!(sink.shutdown(SETTLE).finished);
    assert!(receiver.received().is_empty());
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!((log[0].webhook.as_str(), log[0].success), (hook.id.as_str(), false));
    assert_eq!(log[0].error.as_deref(), Some("not sent: the license does not include the webhooks feature"));
}

/// The license can change while the process runs: each event is judged by the license
/// as it is when its deliveries are due, not as it was when the sink started.
#[test]
fn the_license_is_read_when_deliveries_are_due() {
    let f = Fixture::new();
    let receiver = Receiver::start(&f.ca, Answer::Status(200));
    f.add(&receiver.url(), "file.created,file.deleted");
    let sink = f.licensed_sink(); // no license at all yet

    f.install_license(WITH_WEBHOOKS);
    sink.publish(file_event(EventKind::FileCreated));
    assert_eq!(receiver.wait_for(1, SETTLE).len(), 1, "delivered once the license has the feature");

    f.install_license(WITHOUT);
    sink.publish(file_event(EventKind::FileDeleted));
    assert!(sink.shutdown(SETTLE).finished);
    assert_eq!(receiver.received().len(), 1, "nothing after the feature went away");
    let log = f.store.log().unwrap();
    let outcomes: Vec<_> = log.iter().map(|e| (e.event, e.success)).collect();
    assert_eq!(outcomes, [(EventKind::FileCreated, true), (EventKind::FileDeleted, false)]);
}

#[test]
fn no_expired_invalid_or_missing_license_lets_deliveries_through() {
    let f = Fixture::new();
    let state = f.dir.path().join(".cms");
    let why = |gate: &LicenseGate| gate.check().unwrap_err();
    let gate = crate::folder_gate(&state, None);
    assert_eq!(
        why(&gate),
        "no license is installed; webhooks need an active license with the webhooks feature"
    );
    f.install_license("licensee: Demo\nfeatures: [webhooks]\nexpires_at: 2001-01-01T00:00:00Z\n");
    assert!(why(&gate).starts_with("the license expired at 2001-01-01"), "{}", why(&gate));
    f.install_license(WITH_WEBHOOKS);
    assert_eq!(gate.check(), Ok(()));
    let signed_only = crate::folder_gate(&state, Some("00".repeat(32)));
    assert!(why(&signed_only).starts_with("the license is not valid"), "{}", why(&signed_only));
}
