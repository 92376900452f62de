"""The live event stream (`GET /cms/events`) read by a real Python client: httpx with
httpx-sse's `connect_sse`. Run by `events_clients.rs` with the validators venv's python:

    python events_sse.py BASE_URL API_KEY

The server's site must send keep-alive comments every second (`events.keep_alive_secs: 1`).
Checks, in order, each on the events of items this script makes:
  live     an anonymous stream gets a published item's `file.created`, never a draft's:
           the next event after the draft is the next published item, two ids above;
  resume   two writes while disconnected, then `Last-Event-ID` = the last id seen: exactly
           those two events, in order, then the next live one (no repeats);
  reset    `Last-Event-ID: 999999` (past the log): one `reset` event naming the newest id,
           then live events again;
  idle     an idle stream sends a `: keep-alive` comment within 3 seconds (read from the
           raw lines: httpx-sse drops comments).
Prints a JSON summary and `all checks passed`; exits 1 with the reason on any failure.
"""

import json
import sys
import time

import httpx
from httpx_sse import connect_sse

ITEMS = "/cms/collections/blog-posts/items"
KINDS = {"file.created", "file.updated", "file.deleted", "item.published", "item.unpublished", "reset"}
# How long one expected event may take; keep-alives (every second) wake the reader.
WAIT = 5.0


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Site:
    def __init__(self, base, key):
        self.base = base.rstrip("/")
        self.key = key
        self.api = httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {key}"}, timeout=10.0)
        # Streams: reads wait at most a little longer than a keep-alive period.
        self.streams = httpx.Client(base_url=self.base, timeout=httpx.Timeout(10.0, read=WAIT))

    def write(self, method, path, body=None):
        response = self.api.request(method, path, json=body)
        check(response.status_code in (200, 201), f"{method} {path} answered {response.status_code}: {response.text}")
        return response

    def create(self, slug, status):
        body = {"slug": slug, "date_prefix": False, "fm": {"title": slug, "status": status}}
        self.write("POST", ITEMS, body)

    def stream(self, headers=None, query="", **options):
        return connect_sse(self.streams, "GET", f"/cms/events{query}", headers=dict(headers or {}), **options)


def place(events):
    """The first frame of a stream: `retry: 3000` and the reader's place (an id, no event)."""
    first = next(events)
    check(first.retry == 3000, f"the first frame sets retry: 3000, got {first!r}")
    check(first.data == "" and first.event in ("", "message"), f"the first frame is no event: {first!r}")
    return int(first.id)


def next_event(events, what):
    """The next event of a known kind. httpx-sse hands over the stream's `id:`-only frame
    and (since it keeps the last id) every keep-alive as an empty message: those are
    skipped. Fails when none comes within WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            sse = next(events)
        except httpx.ReadTimeout:
            raise Failure(f"nothing, not even a keep-alive, for {WAIT} s while waiting for {what}") from None
        except StopIteration:
            raise Failure(f"the stream ended while waiting for {what}") from None
        if sse.event in KINDS:
            check(sse.data, f"{sse.event} event {sse.id} without data")
            body = json.loads(sse.data)
            # A reset names the reader's new place as `last_id`; every other event its own id.
            own_id = body.get("last_id" if sse.event == "reset" else "id")
            check(str(own_id) == sse.id, f"the data's id {own_id} is the frame's id {sse.id}: {body}")
            check(body.get("event") == sse.event, f"the data's event {body.get('event')} is the frame's {sse.event}")
            return int(sse.id), sse.event, body
        check(sse.data == "", f"an unknown event while waiting for {what}: {sse!r}")
        check(time.monotonic() < deadline, f"no event within {WAIT} s while waiting for {what}")


def expect(events, what, event_id, kind, slug):
    got_id, got_kind, body = next_event(events, what)
    got = (got_id, got_kind, body.get("data", {}).get("slug"))
    check(got == (event_id, kind, slug), f"{what}: expected {(event_id, kind, slug)}, got {got}: {body}")
    return body


def live(site, summary):
    with site.stream() as source:
        check(source.response.status_code == 200, f"anonymous stream: {source.response.status_code}")
        content_type = source.response.headers.get("content-type", "")
        check(content_type.startswith("text/event-stream"), f"content-type {content_type!r}")
        events = source.iter_sse()
        start = place(events)
        site.create("py-first", "published")
        site.create("py-draft", "draft")
        site.create("py-second", "published")
        body = expect(events, "the published item's file.created", start + 1, "file.created", "py-first")
        data = body["data"]
        check(data.get("collection") == "blog-posts", f"collection: {body}")
        check(data.get("filename") == "py-first.md", f"filename: {body}")
        check("folder" in data, f"folder: {body}")
        check(isinstance(body.get("timestamp"), str) and body["timestamp"].endswith("Z"), f"timestamp: {body}")
        expect(events, "the next published item (the draft's event is never sent)", start + 3, "file.created", "py-second")
    summary["live"] = {"start": start, "received": [start + 1, start + 3], "draft_id_skipped": start + 2}
    return start + 3


def resume(site, summary, last_id):
    # Disconnected (the `with` above closed the connection): two writes are missed.
    site.write("PATCH", f"{ITEMS}/py-first", {"fm": {"title": "py first, edited"}})
    site.write("DELETE", f"{ITEMS}/py-second")
    with site.stream(headers={"Last-Event-ID": str(last_id)}) as source:
        check(source.response.status_code == 200, f"resumed stream: {source.response.status_code}")
        events = source.iter_sse()
        check(place(events) == last_id, "a resumed stream starts at the id it was given")
        expect(events, "the first missed event", last_id + 1, "file.updated", "py-first")
        expect(events, "the second missed event", last_id + 2, "file.deleted", "py-second")
        # Then live, with nothing repeated in between.
        site.create("py-third", "published")
        expect(events, "the next live event after the missed ones", last_id + 3, "file.created", "py-third")
    summary["resume"] = {"from": last_id, "received": [last_id + 1, last_id + 2, last_id + 3]}
    return last_id + 3


def reset(site, summary, newest):
    with site.stream(headers={"Last-Event-ID": "999999"}) as source:
        check(source.response.status_code == 200, f"stream from 999999: {source.response.status_code}")
        events = source.iter_sse()
        place(events)
        got_id, kind, body = next_event(events, "the reset event")
        check(kind == "reset", f"a place past the log answers reset, got {kind}: {body}")
        check(body.get("event") == "reset", f"reset data: {body}")
        check(body.get("last_id") == newest and got_id == newest, f"reset names the newest id {newest}: {body}")
        site.create("py-after-reset", "published")
        expect(events, "a live event after the reset", newest + 1, "file.created", "py-after-reset")
    summary["reset"] = {"last_id": newest}


def idle(site, summary):
    with site.stream(timeout=httpx.Timeout(10.0, read=3.0)) as source:
        opened = time.monotonic()
        lines = source.response.iter_lines()
        while True:
            try:
                line = next(lines)
            except httpx.ReadTimeout:
                raise Failure("no keep-alive comment within 3 s (is events.keep_alive_secs 1?)") from None
            except StopIteration:
                break
            if line.startswith(":"):
                check(line.strip() == ": keep-alive", f"a comment other than keep-alive: {line!r}")
                waited = time.monotonic() - opened
                check(waited < 3.0, f"the keep-alive came after {waited:.1f} s (keep_alive_secs: 1)")
                summary["idle"] = {"keep_alive_after_secs": round(waited, 2)}
                return
            check(time.monotonic() - opened < 3.0, "no keep-alive comment within 3 s")
    raise Failure("the idle stream ended before a keep-alive")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: events_sse.py BASE_URL API_KEY")
    site = Site(sys.argv[1], sys.argv[2])
    summary = {"client": f"httpx {httpx.__version__} + httpx-sse"}
    stage = "live"
    try:
        last = live(site, summary)
        stage = "resume"
        newest = resume(site, summary, last)
        stage = "reset"
        reset(site, summary, newest)
        stage = "idle"
        idle(site, summary)
    except (Failure, httpx.HTTPError, StopIteration, ValueError) as error:
        reason = str(error) if isinstance(error, Failure) else f"{type(error).__name__}: {error}"
        summary["failed"] = {"check": stage, "reason": reason}
        print(json.dumps(summary, indent=2))
        print(f"FAILED ({stage}): {reason}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(summary, indent=2))
    print("all checks passed")


if __name__ == "__main__":
    main()
