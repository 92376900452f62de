//! Request ids (`X-Request-Id`): one per request, on its answer and on every log line it
//! causes. A client's or proxy's id is kept when it is well formed (so that one request
//! is followed through every hop); otherwise the server makes one: a random prefix per
//! process (the servers of a site differ) and a counter, cheap enough for every request.

use std::hash::{BuildHasher, RandomState};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::HeaderValue;

/// The longest id kept from a request.
const MAX_LEN: usize = 128;

static PREFIX: LazyLock<u32> = LazyLock::new(|| RandomState::new().hash_one("cms request ids") as u32);
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The id of a request that came with `sent` (its `X-Request-Id`, if any).
pub fn of(sent: Option<&HeaderValue>) -> String {
    match sent.and_then(|value| value.to_str().ok()) {
        Some(id) if well_formed(id) => id.to_owned(),
        _ => make(),
    }
}

/// 1 to 128 letters, digits, `.`, `_`, `:` and `-`: what ids of proxies and tracing
/// systems look like, and nothing that could break a log line.
fn well_formed(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// A new id: 24 hex digits, this process's prefix then its count of requests.
fn make() -> String {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:08x}{count:016x}", *PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_id_is_kept_and_anything_else_replaced() {
        let kept = HeaderValue::from_static("trace-4bf92f3577b34da6:a3ce929d0e0e4736_01");
        assert_eq!(of(Some(&kept)), "trace-4bf92f3577b34da6:a3ce929d0e0e4736_01");
        for bad in ["", "has space", "new\u{7f}line", "quote\"d", &"x".repeat(129)] {
            let value = HeaderValue::from_str(bad).unwrap_or(HeaderValue::from_static("x y"));
            let made = of(Some(&value));
            assert_eq!(made.len(), 24, "{bad:?} gave {made}");
            assert!(made.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        let (first, second) = (of(None), of(None));
        assert_ne!(first, second);
        assert_eq!(first[..8], second[..8], "one prefix per process");
    }
}
