//! The body of a delivery and its signature.
//!
//! The body is [`cms_core::events::Event::body`]: the spec's `event`, `timestamp` and
//! `data` (`filename` and `folder`, or `email`), with the event's `id` and the item's
//! `collection` and `slug` for item changes.

use cms_core::events::Event;
use ring::hmac;
use serde_json::json;
use time::format_description::well_known::Rfc3339;

/// The JSON body of an event, as the exact bytes that are sent (and signed): the core's
/// [`Event::body`], which the live event stream sends too.
pub fn body(event: &Event) -> Vec<u8> {
    event.body()
}

/// The `X-Webhook-Signature` value: `sha256=` + lowercase hex HMAC-SHA256 of `body`, keyed
/// with the subscription's secret (the whole `whsec_...` string as UTF-8 bytes).
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))
}

/// The body of a `ping` (`cms webhooks test`): same shape as an event's.
pub fn ping_body(webhook: &str, now: time::OffsetDateTime) -> Vec<u8> {
    let timestamp = now.to_offset(time::UtcOffset::UTC).format(&Rfc3339).unwrap_or_default();
    let payload = json!({ "event": "ping", "timestamp": timestamp, "data": { "webhook": webhook } });
    serde_json::to_vec(&payload).expect("a JSON value always serializes")
}

/// The Standard Webhooks key of a secret: the `whsec_` prefix removed and the rest read
/// as base64, as the Standard Webhooks libraries read it (our 64 hex digits are valid
/// base64: 48 bytes), so receivers pass the secret exactly as `cms webhooks add` printed it.
pub fn standard_key(secret: &str) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = secret.strip_prefix(crate::model::SECRET_PREFIX).unwrap_or(secret);
    base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_else(|_| encoded.as_bytes().to_vec())
}

/// The Standard Webhooks `webhook-signature` value: `v1,` + base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}` with [`standard_key`].
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    use base64::Engine as _;
    let key = hmac::Key::new(hmac::HMAC_SHA256, &standard_key(secret));
    let mut signed = format!("{id}.{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(hmac::sign(&key, &signed).as_ref()))
}

/// Checks a received `X-Webhook-Signature` against the raw body, in constant time: what a
/// receiver written in Rust would do.
pub fn verify(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(digest) = header.trim().strip_prefix("sha256=").and_then(|h| hex::decode(h).ok()) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hmac::verify(&key, body, &digest).is_ok()
}

#[cfg(test)]
mod tests {
    use cms_core::account::Role;
    use cms_core::events::{EventData, EventKind, FileEvent};
    use serde_json::Value;
    use time::macros::datetime;

    use super::*;

    #[test]
    fn bodies_have_the_spec_shape() {
        let at = datetime!(2026-01-01 00:00:00 +01:00);
        let file = Event {
            id: None,
            kind: EventKind::FileDeleted,
            timestamp: at,
            data: EventData::File(FileEvent::new("a.md", 2)),
        };
        assert_eq!(
            String::from_utf8(body(&file)).unwrap(),
            r#"{"event":"file.deleted","timestamp":"2025-12-31T23:00:00Z","data":{"filename":"a.md","folder":2}}"#
        );
        let created = Event {
            id: None,
            kind: EventKind::UserCreated,
            timestamp: at,
            data: EventData::User { email: "a@b.co".into(), role: Some(Role::Editor) },
        };
        let value: Value = serde_json::from_slice(&body(&created)).unwrap();
        assert_eq!(value["data"], json!({"email": "a@b.co", "role": "editor"}));
        let deleted = Event { id: None, kind: EventKind::UserDeleted, ..created };
        let deleted = Event { data: EventData::User { email: "a@b.co".into(), role: None }, ..deleted };
        let value: Value = serde_json::from_slice(&body(&deleted)).unwrap();
        assert_eq!(value["data"], json!({"email": "a@b.co"}));
    }

    #[test]
    fn signatures_are_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        let key = "Jefe";
        let sig = signature(key, b"what do ya want for nothing?");
        assert_eq!(sig, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert!(verify(key, b"what do ya want for nothing?", &sig));
        assert!(!verify(key, b"what do ya want for nothing!", &sig));
        assert!(!verify("other", b"what do ya want for nothing?", &sig));
        assert!(!verify(key, b"x", "md5=00"));
    }
}
