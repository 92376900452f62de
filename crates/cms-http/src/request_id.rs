//! Request ids (`X-Request-Id`): one per request, on its answer and on every log line it
//! causes. A client's or proxy's id is kept when it is well formed (so that one request
//! is followed through every hop); otherwise the server makes one: a random prefix per
//! process (the servers of a site differ) and a counter, cheap enough for every request.
//!
//! While a request is handled its id is the task's ([`scope`]), so that a line logged on
//! the way names it ([`current`], read by the log's formatter). A task-local costs a
//! request a thread-local swap per poll; a `tracing` span did the same job for about
//! 2,700 instructions a request (the registry, the filter's bookkeeping, its field
//! formatted when it opened), on every request, whether or not a line was logged.

use std::hash::{BuildHasher, RandomState};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::HeaderValue;

/// The longest id kept from a request.
const MAX_LEN: usize = 128;

static PREFIX: LazyLock<u32> = LazyLock::new(|| RandomState::new().hash_one("cms request ids") as u32);
static COUNTER: AtomicU64 = AtomicU64::new(0);

tokio::task_local! {
    static CURRENT: String;
}

/// Runs `handling` with `id` as the current request's id (see [`current`]).
pub async fn scope<F: std::future::Future>(id: String, handling: F) -> F::Output {
    CURRENT.scope(id, handling).await
}

/// `with` the id of the request this task is handling, if any (`None` outside a
/// request, and on threads the request's work was handed to).
pub fn current<R>(with: impl FnOnce(&str) -> R) -> Option<R> {
    CURRENT.try_with(|id| with(id)).ok()
}

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

/// A new id: 24 hex digits, this process's prefix then its count of requests (written by
/// hand: `format!` cost every request about 700 instructions).
fn make() -> String {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut id = String::with_capacity(24);
    push_hex(&mut id, u64::from(*PREFIX), 8);
    push_hex(&mut id, count, 16);
    id
}

/// The low `digits` hex digits of `value`, zero-padded, as `{:0digits$x}` writes them.
pub(crate) fn push_hex(out: &mut String, value: u64, digits: u32) {
    for at in (0..digits).rev() {
        let nibble = (value >> (at * 4)) & 0xf;
        out.push(char::from(b"0123456789abcdef"[nibble as usize]));
    }
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
        let count = u64::from_str_radix(&second[8..], 16).unwrap();
        assert_eq!(second, format!("{:08x}{count:016x}", *PREFIX));
        for value in [0, 9, 10, 0xabc, u64::MAX] {
            let mut hex = String::new();
            push_hex(&mut hex, value, 16);
            assert_eq!(hex, format!("{value:016x}"));
        }
    }

    #[test]
    fn the_id_is_current_while_its_request_is_handled_and_only_then() {
        assert_eq!(current(str::to_owned), None);
        let handled = scope("probe-1".into(), async { current(str::to_owned) });
        let seen = futures_util::FutureExt::now_or_never(handled).expect("ready at once");
        assert_eq!(seen.as_deref(), Some("probe-1"));
        assert_eq!(current(str::to_owned), None, "gone once the request is answered");
    }
}
