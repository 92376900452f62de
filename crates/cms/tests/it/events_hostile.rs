//! Hostile volume against the live event stream (issue 47), over real TCP: 5,000 streams
//! asked for by one key, half-open connections, and readers that never read. The site's
//! time-outs are 1 s (`slow_clients::site_with_short_timeouts`), so each part ends in a
//! second or two.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::events::Stream;
use crate::slow_clients::{assert_ended, connect, read_until_closed, site_with_short_timeouts};
use crate::{Server, user_with_key};

/// Streams asked for by one key.
const ASKED: usize = 5000;
/// `events.max_streams_per_key`'s default.
const PER_KEY: usize = 32;

/// Opens a stream on a raw connection and reads only its head: the connection is then
/// left alone, a reader that never reads. Returns the status line.
fn open_unread(server: &Server, key: &str) -> (TcpStream, String) {
    let mut stream = connect(server);
    let host = server.base.strip_prefix("http://").unwrap();
    let head = format!("GET /cms/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut received = Vec::new();
    let mut byte = [0; 1];
    while !received.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the head ended early: {received:?}");
        received.push(byte[0]);
    }
    let text = String::from_utf8(received).unwrap();
    (stream, text.lines().next().unwrap().to_owned())
}

#[test]
fn thousands_of_streams_half_open_connections_and_readers_that_never_read_are_bounded() {
    let site = site_with_short_timeouts();
    let config = site.path().join("cms.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("events:\n  keep_alive_secs: 1\n");
    std::fs::write(config, text).unwrap();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());

    // One key asks for 5,000 streams: its first 32 open (and are never read); every other
    // is refused at once with 429 and Retry-After, on kept-alive connections, from 4 threads.
    let mut unread: Vec<TcpStream> = (0..PER_KEY)
        .map(|_| {
            let (stream, status) = open_unread(&server, &key);
            assert_eq!(status, "HTTP/1.1 200 OK");
            stream
        })
        .collect();
    let started = Instant::now();
    let refused: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (server, key) = (&server, &key);
                scope.spawn(move || {
                    let mut refused = 0;
                    for _ in 0..(ASKED - PER_KEY).div_ceil(4) {
                        let response = server
                            .agent
                            .get(format!("{}/cms/events", server.base))
                            .header("Authorization", format!("Bearer {key}"))
                            .call()
                            .unwrap();
                        assert_eq!(response.status().as_u16(), 429);
                        assert_eq!(response.headers().get("retry-after").unwrap(), "10");
                        refused += 1;
                    }
                    refused
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert!(refused >= ASKED - PER_KEY);
    eprintln!("{refused} streams refused in {:?}", started.elapsed());
    let (status, listed) = server.get("/cms/collections/posts/items", None);
    assert_eq!(status, 200, "the server still serves: {listed}");

    // Half-open connections: half a request head, then nothing. Each is closed at the
    // header deadline (1 s) and takes no stream: the key is still at its bound.
    let host = server.base.strip_prefix("http://").unwrap().to_owned();
    let started = Instant::now();
    let mut half_open: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut stream = connect(&server);
            stream
                .write_all(format!("GET /cms/events HTTP/1.1\r\nHost: {host}\r\nAuthor").as_bytes())
                .unwrap();
            stream
        })
        .collect();
    for stream in &mut half_open {
        assert_ended(
            "a half-open stream request",
            read_until_closed(stream, started),
            Duration::from_secs(5),
        );
    }
    let (_, status) = open_unread(&server, &key);
    assert!(status.starts_with("HTTP/1.1 429"), "{status}");

    // Readers that never read do not hold the others up: with 31 of them open, a stream
    // that reads gets every one of 200 writes, in order, and every write is acknowledged.
    drop(unread.pop());
    let bearer = format!("Bearer {key}");
    let reading = Stream::request(&server, "/cms/events", &[("Authorization", &bearer)]);
    assert_eq!(reading.status, 200);
    let start = reading.next().unwrap().id();
    let items = format!("{}/cms/collections/posts/items", server.base);
    let body =
        json!({"slug": "pressed", "date_prefix": false, "fm": {"title": "Pressed", "status": "draft"}});
    let created = server.agent.post(&items).header("Authorization", &bearer).send_json(body).unwrap();
    assert_eq!(created.status().as_u16(), 200);
    let mut slowest = Duration::ZERO;
    for round in 0..199 {
        let began = Instant::now();
        let response = server
            .agent
            .patch(format!("{items}/pressed"))
            .header("Authorization", &bearer)
            .send_json(json!({"body": format!("Round {round}: {}\n", "text ".repeat(200))}))
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        slowest = slowest.max(began.elapsed());
    }
    for n in 1..=200 {
        assert_eq!(reading.next().unwrap().id(), start + n, "every event, in order");
    }
    assert!(slowest < Duration::from_secs(2), "a write took {slowest:?} with unread streams open");
    drop(unread);
}
