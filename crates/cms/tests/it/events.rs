//! The live event stream on the real server (`GET /cms/events`, docs/events.md): what an
//! anonymous reader and a key see, resuming exactly with `Last-Event-ID`, a `reset` past
//! what is kept, stream tokens bound to their filters, the bounds, and a clean end when
//! the server stops. Real clients (`eventsource`, `httpx-sse`) are in `events_clients.rs`.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Server, demo_site, user_with_key};

const ITEMS: &str = "/cms/collections/posts/items";
const WAIT: Duration = Duration::from_secs(5);

/// One Server-Sent Events frame as a client reads it (comments kept apart).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Frame {
    pub(crate) id: Option<String>,
    pub(crate) event: Option<String>,
    pub(crate) data: String,
    pub(crate) comment: bool,
    pub(crate) retry: Option<String>,
}

impl Frame {
    pub(crate) fn id(&self) -> u64 {
        self.id.as_deref().unwrap().parse().unwrap()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// An open stream, read on its own thread.
pub(crate) struct Stream {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    frames: Receiver<Option<Frame>>,
}

impl Stream {
    fn open(server: &Server, query: &str, key: Option<&str>, last_event_id: Option<u64>) -> Stream {
        let auth = key.map(|key| format!("Bearer {key}"));
        let last = last_event_id.map(|id| id.to_string());
        let mut headers = Vec::new();
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth.as_str()));
        }
        if let Some(last) = &last {
            headers.push(("Last-Event-ID", last.as_str()));
        }
        Self::request(server, &format!("/cms/events{query}"), &headers)
    }

    /// `GET path` with `headers` (a key, a session cookie, `Last-Event-ID`), read as a
    /// stream whatever the answer.
    pub(crate) fn request(server: &Server, path: &str, headers: &[(&str, &str)]) -> Stream {
        let mut req = server.agent.get(format!("{}{path}", server.base));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let response = req.call().unwrap();
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
            .collect();
        let (send, frames) = channel();
        let body = response.into_body().into_reader();
        std::thread::spawn(move || read_frames(body, &send));
        Stream { status, headers, frames }
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v)
    }

    /// The next frame that is not a comment, or `None` when the stream ended.
    pub(crate) fn next(&self) -> Option<Frame> {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.frames.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Some(frame)) if frame.comment => continue,
                Ok(frame) => return frame,
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => panic!("no frame within {WAIT:?}"),
            }
        }
    }

    /// The next frame, comments included.
    fn next_raw(&self) -> Option<Frame> {
        self.frames.recv_timeout(WAIT).expect("a frame in time")
    }
}

fn read_frames(body: impl Read, send: &std::sync::mpsc::Sender<Option<Frame>>) {
    let mut lines = BufReader::new(body);
    let mut frame = Frame::default();
    loop {
        let mut line = String::new();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = send.send(None);
                return;
            }
            Ok(_) => {}
        }
        let line = line.trim_end_matches('\n');
        if line.is_empty() {
            if send.send(Some(std::mem::take(&mut frame))).is_err() {
                return;
            }
            continue;
        }
        match line.split_once(':') {
            Some(("", _)) => frame.comment = true,
            Some((field, value)) => {
                let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                match field {
                    "id" => frame.id = Some(value),
                    "event" => frame.event = Some(value),
                    "data" => frame.data.push_str(&value),
                    "retry" => frame.retry = Some(value),
                    _ => {}
                }
            }
            None => {}
        }
    }
}

fn send(server: &Server, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let auth = format!("Bearer {key}");
    let mut response = match (method, body) {
        ("POST", Some(body)) => server.agent.post(url).header("Authorization", auth).send_json(body),
        ("POST", None) => server.agent.post(url).header("Authorization", auth).send_empty(),
        ("PATCH", Some(body)) => server.agent.patch(url).header("Authorization", auth).send_json(body),
        ("DELETE", _) => server.agent.delete(url).header("Authorization", auth).call(),
        other => panic!("{other:?}"),
    }
    .unwrap();
    (response.status().as_u16(), response.body_mut().read_json().unwrap_or(Value::Null))
}

fn create(server: &Server, key: &str, slug: &str, status: &str) {
    let body = json!({"slug": slug, "date_prefix": false, "fm": {"title": slug, "status": status}});
    let (code, answer) = send(server, "POST", ITEMS, key, Some(body));
    assert!(code == 200 || code == 201, "{code} {answer}");
}

/// A demo site whose streams send keep-alives every second, and a few streams per key.
fn site_with_events() -> tempfile::TempDir {
    let site = demo_site();
    let config = site.path().join("cms.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("events:\n  keep_alive_secs: 1\n  max_streams_per_key: 3\n");
    std::fs::write(config, text).unwrap();
    site
}

#[test]
fn an_anonymous_stream_carries_live_changes_only_and_resumes_exactly() {
    let site = site_with_events();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());

    let stream = Stream::open(&server, "", None, None);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), "text/event-stream");
    assert_eq!(stream.header("cache-control"), "no-store");
    let first = stream.next().unwrap();
    assert_eq!(first.retry.as_deref(), Some("3000"));
    let start = first.id();

    create(&server, &key, "first-news", "published");
    create(&server, &key, "secret-plan", "draft");
    create(&server, &key, "second-news", "published");
    let a = stream.next().unwrap();
    assert_eq!(a.event.as_deref(), Some("file.created"));
    assert_eq!(a.id(), start + 1);
    let body = a.json();
    assert_eq!(body["id"], start + 1);
    assert_eq!(body["event"], "file.created");
    assert_eq!(body["data"]["collection"], "blog-posts");
    assert_eq!(body["data"]["slug"], "first-news");
    assert_eq!(body["data"]["folder"], 0);
    assert_eq!(body["data"]["filename"], "first-news.md");
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    let b = stream.next().unwrap();
    assert_eq!(
        (b.id(), b.json()["data"]["slug"].clone()),
        (start + 3, json!("second-news")),
        "the draft's event is not sent"
    );
    drop(stream);

    // Missed while away: exactly these, in order, then live again.
    let (code, _) =
        send(&server, "PATCH", &format!("{ITEMS}/first-news"), &key, Some(json!({"fm": {"title": "News"}})));
    assert_eq!(code, 200);
    let (code, _) = send(&server, "DELETE", &format!("{ITEMS}/second-news"), &key, None);
    assert_eq!(code, 200);
    let (code, _) = send(&server, "DELETE", &format!("{ITEMS}/secret-plan"), &key, None);
    assert_eq!(code, 200);
    let resumed = Stream::open(&server, "", None, Some(b.id()));
    assert_eq!(resumed.next().unwrap().id(), b.id(), "the place it resumes from");
    let updated = resumed.next().unwrap();
    assert_eq!((updated.event.as_deref(), updated.id()), (Some("file.updated"), b.id() + 1));
    let deleted = resumed.next().unwrap();
    assert_eq!((deleted.event.as_deref(), deleted.id()), (Some("file.deleted"), b.id() + 2));
    create(&server, &key, "third-news", "published");
    let live = resumed.next().unwrap();
    assert_eq!(live.id(), b.id() + 4, "a draft's delete is never sent");
    // `?since=` resumes the same way.
    let since = Stream::open(&server, &format!("?since={}", b.id() + 1), None, None);
    assert_eq!(since.next().unwrap().id(), b.id() + 1);
    assert_eq!(since.next().unwrap().id(), b.id() + 2);

    // Past what the log holds: one reset, then live.
    let reset = Stream::open(&server, "", None, Some(999_999));
    let _place = reset.next().unwrap();
    let frame = reset.next().unwrap();
    assert_eq!(frame.event.as_deref(), Some("reset"));
    assert_eq!(frame.id(), b.id() + 4);
    assert_eq!(frame.json()["last_id"], b.id() + 4);

    // An idle stream hears keep-alive comments.
    let idle = Stream::open(&server, "", None, None);
    let _place = idle.next_raw();
    assert!(idle.next_raw().unwrap().comment, "a keep-alive comment within a second or two");
}

#[test]
fn keys_see_drafts_tokens_bind_their_filters_and_streams_are_bounded() {
    let site = site_with_events();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());

    let keyed = Stream::open(&server, "?event=file.created", Some(&key), None);
    let _place = keyed.next().unwrap();
    create(&server, &key, "a-draft", "draft");
    let draft = keyed.next().unwrap();
    assert_eq!(
        (draft.event.as_deref(), draft.json()["data"]["slug"].clone()),
        (Some("file.created"), json!("a-draft"))
    );

    // A token bound to file.updated of posts: it opens streams without a header.
    let (code, token) = send(
        &server,
        "POST",
        "/cms/events/tokens",
        &key,
        Some(json!({"collection": "posts", "event": "file.updated"})),
    );
    assert_eq!(code, 201, "{token}");
    let url = token["url"].as_str().unwrap();
    let token = token["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("evt_") && url.ends_with(&token), "{url}");
    let by_token = Stream::open(&server, &format!("?token={token}"), None, None);
    assert_eq!(by_token.status, 200);
    let _place = by_token.next().unwrap();
    create(&server, &key, "not-an-update", "draft");
    let (code, _) =
        send(&server, "PATCH", &format!("{ITEMS}/a-draft"), &key, Some(json!({"fm": {"title": "Draft 2"}})));
    assert_eq!(code, 200);
    let update = by_token.next().unwrap();
    assert_eq!(
        (update.event.as_deref(), update.json()["data"]["slug"].clone()),
        (Some("file.updated"), json!("a-draft"))
    );

    let status_of = |query: &str, last_event_id: Option<&str>| {
        let mut req = server.agent.get(format!("{}/cms/events{query}", server.base));
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id);
        }
        let response = req.call().unwrap();
        let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        (response.status().as_u16(), retry)
    };
    // Narrowing a token's filters is fine; widening them is not; a changed token is refused.
    assert_eq!(status_of(&format!("?token={token}&event=file.created"), None).0, 403);
    assert_eq!(status_of(&format!("?token={token}&collection=pages"), None).0, 403);
    let mut forged = token.clone();
    forged.insert(6, if forged.as_bytes()[6] == b'0' { '1' } else { '0' });
    forged.remove(7);
    assert_eq!(status_of(&format!("?token={forged}"), None).0, 401);
    // Clear 4xx for bad input.
    assert_eq!(status_of("?collection=nope", None).0, 404);
    assert_eq!(status_of("?event=user.created", None).0, 400);
    assert_eq!(status_of("?event=file.renamed", None).0, 400);
    assert_eq!(status_of("", Some("abc")).0, 400);

    // Three streams per key (two are open): the fourth is refused with Retry-After.
    let third = Stream::open(&server, "", Some(&key), None);
    assert_eq!(third.status, 200);
    let refused = Stream::open(&server, "", Some(&key), None);
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), "10");
    drop(third);
    let again = poll_status(&server, &key);
    assert_eq!(again, 200, "a closed stream gives its place back");
}

/// Opens keyed streams until one is accepted (a closed stream's place comes back once the
/// server sees the connection end).
fn poll_status(server: &Server, key: &str) -> u16 {
    crate::poll(|| Stream::open(server, "", Some(key), None).status, |status| *status == 200)
}

#[test]
fn streams_end_cleanly_when_the_server_stops() {
    let site = site_with_events();
    let server = Server::start(site.path());
    let stream = Stream::open(&server, "", None, None);
    let _place = stream.next().unwrap();
    let stopping = Instant::now();
    let pid = server.child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let end = loop {
        match stream.frames.recv_timeout(WAIT) {
            Ok(Some(frame)) if frame.comment => continue,
            other => break other,
        }
    };
    assert!(matches!(end, Ok(None)), "the stream ends: {end:?}");
    assert!(stopping.elapsed() < Duration::from_secs(3), "at once, not at the stop's time-out");
}
