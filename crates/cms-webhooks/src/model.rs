//! Subscriptions and delivery log entries, and the rules for new subscriptions.

use cms_core::CoreError;
use cms_core::CoreResult;
use cms_core::events::EventKind;
use cms_core::ports::WebhookInfo;
use ring::rand::{SecureRandom, SystemRandom};
use time::OffsetDateTime;

pub const ID_PREFIX: &str = "wh_";
pub const SECRET_PREFIX: &str = "whsec_";
/// Bytes of randomness in a signing secret.
pub const SECRET_RANDOM_BYTES: usize = 32;

/// A webhook subscription, secret included. Only the CLI shows the secret, once.
#[derive(Clone, PartialEq, Eq)]
pub struct Subscription {
    /// `wh_` + 16 hex digits.
    pub id: String,
    /// An `https://` URL.
    pub url: String,
    /// The selected events, in [`EventKind::ALL`] order.
    pub events: Vec<EventKind>,
    pub enabled: bool,
    /// `whsec_` + 64 hex digits; the HMAC key is this whole string as UTF-8 bytes.
    pub secret: String,
    pub created_at: OffsetDateTime,
}

impl Subscription {
    /// A new, enabled subscription with a fresh id and secret from the system random source.
    /// Refuses a URL that is not HTTPS, one whose host is an internal address unless
    /// `allow_private_addresses`, and an unknown or empty event selection.
    pub fn create(
        url: &str,
        events: &str,
        allow_private_addresses: bool,
        now: OffsetDateTime,
    ) -> CoreResult<Self> {
        let url = check_url(url, allow_private_addresses)?;
        let events = EventKind::parse_list(events)?;
        Ok(Self {
            id: format!("{ID_PREFIX}{}", hex::encode(random::<8>()?)),
            url,
            events,
            enabled: true,
            secret: format!("{SECRET_PREFIX}{}", hex::encode(random::<SECRET_RANDOM_BYTES>()?)),
            created_at: now.replace_nanosecond(0).unwrap_or(now),
        })
    }

    /// Whether an event of this kind goes to this subscription.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.enabled && self.events.contains(&kind)
    }

    /// What the API may show: everything but the secret.
    pub fn info(&self) -> WebhookInfo {
        WebhookInfo {
            id: self.id.clone(),
            url: self.url.clone(),
            events: self.events.clone(),
            enabled: self.enabled,
            created_at: self.created_at,
        }
    }
}

/// Checks an endpoint URL: absolute, `https`, with a host, no spaces or control
/// characters, and (unless `allow_private_addresses`) a host that is not an internal
/// address written literally nor `localhost` (names are judged when a delivery resolves
/// them, see [`crate::address`]). Returns it with surrounding spaces trimmed.
pub fn check_url(raw: &str, allow_private_addresses: bool) -> CoreResult<String> {
    let url = raw.trim();
    let refuse = |why: &str| Err(CoreError::invalid(format!("webhook URL {raw:?} {why}")));
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("must not contain spaces or control characters");
    }
    let Ok(uri) = url.parse::<ureq::http::Uri>() else {
        return refuse("is not a valid absolute URL");
    };
    match uri.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("https") => {}
        Some(_) => return refuse("must use HTTPS (https://...)"),
        None => return refuse("is not an absolute URL; it must start with https://"),
    }
    match uri.authority() {
        Some(authority) if !authority.host().is_empty() => {}
        _ => return refuse("has no host"),
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return refuse("must not carry a user name or password");
    }
    if !allow_private_addresses && uri.host().is_some_and(crate::address::literal_host_is_internal) {
        return refuse(&format!(
            "names an internal address (loopback, private, link-local or otherwise not public); \
             deliveries go to public addresses only unless {} is true in cms.yaml",
            crate::address::ALLOW_SETTING
        ));
    }
    Ok(url.to_owned())
}

/// One delivery attempt (or an event that could not be sent) in the delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub time: OffsetDateTime,
    /// The `X-Webhook-Delivery` id.
    pub delivery: String,
    pub webhook: String,
    pub event: EventKind,
    pub url: String,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// A 2xx answer.
    pub success: bool,
    /// Why the delivery failed: a connection or TLS error, a time-out, `HTTP 500`, or
    /// `not sent: ...` when it was never attempted.
    pub error: Option<String>,
    /// How long the attempt took, when one was made.
    pub duration_ms: Option<u64>,
    /// 1 for the first attempt of a delivery, 2 for its first retry... (every attempt
    /// keeps the delivery id).
    pub attempt: u32,
    /// The JSON body sent (for `cms webhooks redeliver`), when one was made.
    pub body: Option<String>,
}

/// Written by hand so that the signing secret never reaches a log line.
impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("enabled", &self.enabled)
            .field("secret", &"<hidden>")
            .field("created_at", &self.created_at)
            .finish()
    }
}

impl LogEntry {
    /// An entry, dated `now`, for a delivery that was never attempted.
    pub fn not_sent(subscription: &Subscription, event: EventKind, why: &str, now: OffsetDateTime) -> Self {
        Self {
            time: log_time(now),
            delivery: delivery_id(),
            webhook: subscription.id.clone(),
            event,
            url: subscription.url.clone(),
            status: None,
            success: false,
            error: Some(format!("not sent: {why}")),
            duration_ms: None,
            attempt: 1,
            body: None,
        }
    }

    /// The entry as the core's delivery log shows it.
    pub fn delivery(self) -> cms_core::ports::WebhookDelivery {
        cms_core::ports::WebhookDelivery {
            time: self.time,
            delivery: self.delivery,
            webhook: self.webhook,
            event: self.event,
            url: self.url,
            status: self.status,
            success: self.success,
            error: self.error,
        }
    }
}

/// `now` to the millisecond, for log entries.
pub fn log_time(now: OffsetDateTime) -> OffsetDateTime {
    now.replace_millisecond(now.millisecond()).unwrap_or(now)
}

/// A unique delivery id, formatted as a random (version 4) UUID.
pub fn delivery_id() -> String {
    // The system random source does not fail on the platforms we run on; should it, a
    // time-and-counter id is still unique within this process and time.
    let mut bytes = random::<16>().unwrap_or_else(|_| fallback_id_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

fn fallback_id_bytes() -> [u8; 16] {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&nanos.to_be_bytes());
    bytes[8..].copy_from_slice(&count.to_be_bytes());
    bytes
}

fn random<const N: usize>() -> CoreResult<[u8; N]> {
    let mut bytes = [0; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CoreError::internal("randomness", "the system random source failed"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_urls_with_a_host_are_accepted() {
        for good in ["https://hooks.example.com/cms", " https://8.8.8.8:8443/x?y=1 ", "HTTPS://e.com"] {
            assert!(check_url(good, false).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("http://hooks.example.com/cms", "HTTPS"),
            ("ftp://e.com", "HTTPS"),
            ("hooks.example.com/cms", "absolute"),
            ("https://", "valid"),
            ("https://e.com/a b", "spaces"),
            ("https://user:pw@e.com/", "password"),
            ("", "absolute"),
        ] {
            let message = check_url(bad, false).unwrap_err().to_string();
            assert!(message.contains(why), "{bad}: {message}");
        }
    }

    #[test]
    fn internal_addresses_are_refused_unless_the_site_allows_them() {
        // Every spelling of finding 10 of the review; `address.rs` tests the parsing.
        for internal in [
            "https://127.0.0.1/h",
            "https://[::1]/h",
            "https://0.0.0.0/h",
            "https://localhost:8443/h",
            "https://169.254.169.254/latest/meta-data/",
            "https://2130706433/h",
            "https://0x7f000001/h",
            "https://127.1/h",
            "https://[::ffff:127.0.0.1]/h",
            "https://10.1.2.3/h",
            "https://[fd00::1]/h",
        ] {
            let message = check_url(internal, false).unwrap_err().to_string();
            assert!(
                message.contains("internal address") && message.contains("webhooks.allow_private_addresses"),
                "{internal}: {message}"
            );
            assert_eq!(check_url(internal, true).unwrap(), internal, "allowed by the setting");
        }
    }

    #[test]
    fn new_subscriptions_have_fresh_ids_and_secrets() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let a = Subscription::create("https://e.com/h", "user.deleted,file.created", false, now).unwrap();
        let b = Subscription::create("https://e.com/h", "file.created", false, now).unwrap();
        assert!(a.id.starts_with("wh_") && a.id.len() == 3 + 16, "{}", a.id);
        assert!(a.secret.starts_with("whsec_") && a.secret.len() == 6 + 64, "{}", a.secret);
        assert_ne!((&a.id, &a.secret), (&b.id, &b.secret));
        assert_eq!(a.events, [EventKind::FileCreated, EventKind::UserDeleted]);
        assert!(a.wants(EventKind::UserDeleted) && !a.wants(EventKind::FileUpdated));
        assert!(!Subscription { enabled: false, ..a }.wants(EventKind::FileCreated));
        assert!(Subscription::create("https://e.com/h", "file.moved", false, now).is_err());
    }

    #[test]
    fn delivery_ids_are_unique_uuids() {
        let (a, b) = (delivery_id(), delivery_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4", "{a}");
    }
}
