//! Slow clients over real TCP (review finding 8): a request's headers must arrive within
//! `server.header_timeout_secs` and its whole body within `server.body_timeout_secs`, on a
//! connection's first request and on a kept-alive one alike; what is too slow is answered
//! `408` or closed, and a normal request still works.
//!
//! The sites set every time-out to 1 s, so each case ends in a second or two; the bounds
//! asserted are generous. The client side trickles one byte every 50 ms on a thread (that
//! is the slow client, not a wait for the server).

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;

use crate::{Server, demo_site, user_with_key};

/// One byte every this long: far slower than any real client, far faster than a time-out.
const TRICKLE_EVERY: Duration = Duration::from_millis(50);
/// How long a case waits for the server to end a slow request before it fails.
const GIVE_UP: Duration = Duration::from_secs(15);

/// A demo site whose `server:` time-outs are all 1 s.
pub(crate) fn site_with_short_timeouts() -> TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let mut text = fs::read_to_string(&config).unwrap();
    assert!(!text.contains("\nserver:"), "the demo config has no server section yet");
    text.push_str("server:\n  header_timeout_secs: 1\n  body_timeout_secs: 1\n  keep_alive_secs: 1\n");
    fs::write(config, text).unwrap();
    site
}

/// A connection to the server.
pub(crate) fn connect(server: &Server) -> TcpStream {
    let address = server.base.strip_prefix("http://").unwrap();
    let stream = TcpStream::connect(address).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// The slow client: writes `bytes` one at a time, [`TRICKLE_EVERY`] apart, until all are
/// written or the server has closed the connection.
pub(crate) fn trickle(stream: &TcpStream, bytes: Vec<u8>) {
    let mut stream = stream.try_clone().unwrap();
    thread::spawn(move || {
        for byte in bytes {
            if stream.write_all(&[byte]).is_err() {
                return;
            }
            thread::sleep(TRICKLE_EVERY);
        }
    });
}

/// Reads until the server closes the connection; returns what it sent and how long after
/// `since` it closed, or panics after [`GIVE_UP`] with the connection still open.
pub(crate) fn read_until_closed(stream: &mut TcpStream, since: Instant) -> Ended {
    let mut received = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        let left = GIVE_UP.checked_sub(since.elapsed()).unwrap_or_else(|| {
            panic!(
                "the connection is still open after {GIVE_UP:?}; received {:?}",
                String::from_utf8_lossy(&received)
            )
        });
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1)))).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // A reset after the answer (the slow client kept writing to a closed socket).
            Err(_) => break,
        }
    }
    let _ = stream.shutdown(Shutdown::Both); // Stops the trickle.
    (String::from_utf8_lossy(&received).into_owned(), since.elapsed())
}

/// How a slow request ended: what the server sent, and when it closed.
pub(crate) type Ended = (String, Duration);

/// The server ended a slow request: answered `408` (and closed) or closed without an answer,
/// within `bound`.
pub(crate) fn assert_ended(case: &str, (received, took): Ended, bound: Duration) {
    assert!(took < bound, "{case}: ended after {took:?}, over {bound:?}");
    assert!(
        received.is_empty() || received.starts_with("HTTP/1.1 408"),
        "{case}: a 408 or nothing, got {received:?}"
    );
}

/// A request head with a body of `length` bytes to follow.
fn head(server: &Server, method_path: &str, headers: &[(&str, &str)], length: usize) -> String {
    let host = server.base.strip_prefix("http://").unwrap();
    let mut head = format!("{method_path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {length}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Reads one whole answer whose body has a `Content-Length` (a kept-alive connection stays
/// open after it); returns the status line.
fn read_one_answer(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(GIVE_UP)).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before a whole answer: {:?}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&received).into_owned();
        let Some(end) = text.find("\r\n\r\n") else { continue };
        let length: usize = text[..end]
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().unwrap())
            })
            .expect("a Content-Length");
        if received.len() >= end + 4 + length {
            return text.lines().next().unwrap().to_owned();
        }
    }
}

#[test]
fn slow_heads_and_bodies_are_cut_off_and_normal_requests_still_work() {
    let site = site_with_short_timeouts();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let auth = format!("Bearer {key}");
    let create = "POST /cms/collections/posts/items";
    let padding = format!("X-Padding: {}\r\n", "a".repeat(400));

    // The cases run side by side; each is a connection of its own.
    let cases: Vec<(&str, thread::JoinHandle<Ended>, Duration)> = vec![
        {
            // The first request's headers, a byte at a time.
            let mut stream = connect(&server);
            let started = Instant::now();
            trickle(&stream, format!("{create} HTTP/1.1\r\n{padding}").into_bytes());
            (
                "a trickled head",
                thread::spawn(move || read_until_closed(&mut stream, started)),
                Duration::from_secs(4),
            )
        },
        {
            // A whole first request, then the next one's headers a byte at a time on the
            // same (kept-alive) connection.
            let mut stream = connect(&server);
            stream.write_all(head(&server, "GET /cms/", &[("Authorization", &auth)], 0).as_bytes()).unwrap();
            let status = read_one_answer(&mut stream);
            assert!(status.starts_with("HTTP/1.1 200"), "{status}");
            let started = Instant::now();
            trickle(&stream, format!("{create} HTTP/1.1\r\n{padding}").into_bytes());
            (
                "a trickled head on a kept-alive connection",
                thread::spawn(move || read_until_closed(&mut stream, started)),
                Duration::from_secs(8),
            )
        },
        {
            // Whole headers, then the body a byte at a time.
            let mut stream = connect(&server);
            let body = json!({"slug": "slow", "fm": {"title": "x".repeat(500)}}).to_string();
            let head = head(
                &server,
                create,
                &[("Authorization", &auth), ("Content-Type", "application/json")],
                body.len(),
            );
            stream.write_all(head.as_bytes()).unwrap();
            let started = Instant::now();
            trickle(&stream, body.into_bytes());
            (
                "a trickled body",
                thread::spawn(move || read_until_closed(&mut stream, started)),
                Duration::from_secs(5),
            )
        },
    ];

    // Meanwhile, and after, a normal request is served.
    let created = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", &auth)
        .send_json(json!({"slug": "normal", "date_prefix": false, "fm": {"title": "N"}}))
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);

    for (case, ended, bound) in cases {
        let ended = ended.join().unwrap();
        if case == "a trickled body" {
            assert!(ended.0.starts_with("HTTP/1.1 408"), "{case}: answered 408, got {:?}", ended.0);
            assert!(ended.0.contains("server.body_timeout_secs"), "{case}: says why: {:?}", ended.0);
        }
        assert_ended(case, ended, bound);
    }
    let (status, item) = server.get("/cms/collections/posts/items/normal?status=all", Some(&key));
    assert_eq!((status, item["data"]["frontmatter"]["title"].as_str()), (200, Some("N")), "{item}");
    assert_eq!(
        server.get("/cms/collections/posts/items/slow?status=all", Some(&key)).0,
        404,
        "nothing half-written"
    );
}
