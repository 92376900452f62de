// The live event stream (`GET /cms/events`) read by the WHATWG `EventSource` of the npm
// package `eventsource` (what browsers' EventSource does, on Node >= 18's fetch). Run by
// `events_clients.rs`:
//
//     CMS_EVENTSOURCE_JS=<node_modules/eventsource> node events_sse.mjs BASE_URL API_KEY
//
// Checks, in order, each on the events of items this script makes:
//   live    an anonymous EventSource gets a published item's `file.created`, never a
//           draft's: the next event after the draft is the next published item, two ids above;
//   resume  closed, two writes, then a new EventSource at `?since=<last id seen>`: exactly
//           those two events, in order, then the next live one (no repeats);
//   token   a stream token from `POST /cms/events/tokens` bound to `{"event": "file.updated"}`
//           opens an EventSource without a header (`?token=`): a create is not delivered,
//           the update after it is.
// Prints a JSON summary and `all checks passed`; exits 1 with the reason on any failure.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const KINDS = ['file.created', 'file.updated', 'file.deleted', 'item.published', 'item.unpublished', 'reset'];
const ITEMS = '/cms/collections/blog-posts/items';
// How long one expected event may take.
const WAIT_MS = 5000;
// The whole run takes a few seconds; this only stops a hung one.
const TIME_LIMIT_MS = 20000;

class Failure extends Error {}

function check(condition, message) {
  if (!condition) throw new Failure(message);
}

/** `EventSource` from the package folder `CMS_EVENTSOURCE_JS` names (its ESM entry). */
async function loadEventSource() {
  const folder = process.env.CMS_EVENTSOURCE_JS;
  check(folder, 'CMS_EVENTSOURCE_JS must name the eventsource package folder (node_modules/eventsource)');
  const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
  const exported = manifest.exports?.['.'];
  const entry = (typeof exported === 'string' ? exported : exported?.import ?? exported?.default) ?? 'dist/index.js';
  const module = await import(pathToFileURL(join(folder, entry)).href);
  check(typeof module.EventSource === 'function', `${folder} exports no EventSource`);
  return { EventSource: module.EventSource, version: manifest.version };
}

/** An open EventSource whose events of the known kinds queue up to be taken in order. */
class Stream {
  constructor(EventSource, url) {
    this.source = new EventSource(url);
    this.queue = [];
    this.waiting = null;
    this.errors = [];
    for (const kind of KINDS) {
      this.source.addEventListener(kind, (event) => this.push(event));
    }
    // Unnamed events (`message`) are not expected: each frame has an `event:` line.
    this.source.onmessage = (event) => this.push(event);
    this.source.onerror = (event) => this.errors.push(event.message ?? 'error');
  }

  /** Resolves once the response has started (the server has fixed the stream's place). */
  opened() {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Failure(`the stream did not open: ${this.errors.join('; ')}`)), WAIT_MS);
      this.source.addEventListener('open', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
      this.source.addEventListener('error', () => {
        if (this.source.readyState === this.source.CLOSED) {
          clearTimeout(timer);
          reject(new Failure(`the stream failed to open: ${this.errors.join('; ')}`));
        }
      }, { once: true });
    });
  }

  push(event) {
    const item = { type: event.type, id: event.lastEventId, data: event.data };
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve(item);
    } else {
      this.queue.push(item);
    }
  }

  /** The next event, parsed and checked against its frame; fails after WAIT_MS. */
  async next(what) {
    const item = this.queue.length > 0 ? this.queue.shift() : await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Failure(`no event within ${WAIT_MS} ms while waiting for ${what} (errors: ${this.errors.join('; ') || 'none'})`));
      }, WAIT_MS);
      this.waiting = (got) => {
        clearTimeout(timer);
        resolve(got);
      };
    });
    check(KINDS.includes(item.type), `an event of an unknown kind while waiting for ${what}: ${JSON.stringify(item)}`);
    const body = JSON.parse(item.data);
    // A reset names the reader's new place as `last_id`; every other event its own id.
    const ownId = item.type === 'reset' ? body.last_id : body.id;
    check(String(ownId) === item.id, `the data's id ${ownId} is the event's lastEventId ${item.id}: ${item.data}`);
    check(body.event === item.type, `the data's event ${body.event} is the event's type ${item.type}`);
    return { id: Number(item.id), type: item.type, body };
  }

  async expect(what, id, type, slug) {
    const got = await this.next(what);
    const seen = [got.id, got.type, got.body.data?.slug];
    check(
      JSON.stringify(seen) === JSON.stringify([id, type, slug]),
      `${what}: expected ${JSON.stringify([id, type, slug])}, got ${JSON.stringify(seen)}: ${JSON.stringify(got.body)}`,
    );
    return got;
  }

  close() {
    this.source.close();
    check(this.source.readyState === this.source.CLOSED, 'close() leaves the EventSource CLOSED');
  }
}

function api(base, key) {
  return async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    check(response.status === 200 || response.status === 201, `${method} ${path} answered ${response.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

async function main() {
  const [base, key] = process.argv.slice(2).map((a, i) => (i === 0 ? a.replace(/\/+$/, '') : a));
  check(base && key, 'usage: node events_sse.mjs BASE_URL API_KEY');
  const { EventSource, version } = await loadEventSource();
  const write = api(base, key);
  const create = (slug, status) =>
    write('POST', ITEMS, { slug, date_prefix: false, fm: { title: slug, status } });
  const summary = { client: `eventsource ${version} on node ${process.version}` };

  // live: a published item's event arrives; a draft's never does.
  const anonymous = new Stream(EventSource, `${base}/cms/events`);
  await anonymous.opened();
  await create('js-first', 'published');
  await create('js-draft', 'draft');
  await create('js-second', 'published');
  const first = await anonymous.next("the published item's file.created");
  check(first.type === 'file.created' && first.body.data?.slug === 'js-first', `first event: ${JSON.stringify(first.body)}`);
  check(first.body.data.collection === 'blog-posts' && first.body.data.filename === 'js-first.md', `data: ${JSON.stringify(first.body)}`);
  const second = await anonymous.expect(
    "the next published item (the draft's event is never sent)",
    first.id + 2,
    'file.created',
    'js-second',
  );
  anonymous.close();
  summary.live = { received: [first.id, second.id], draft_id_skipped: first.id + 1 };

  // resume: what was missed while closed, exactly, then live.
  await write('PATCH', `${ITEMS}/js-first`, { fm: { title: 'js first, edited' } });
  await write('DELETE', `${ITEMS}/js-second`);
  const resumed = new Stream(EventSource, `${base}/cms/events?since=${second.id}`);
  await resumed.opened();
  await resumed.expect('the first missed event', second.id + 1, 'file.updated', 'js-first');
  await resumed.expect('the second missed event', second.id + 2, 'file.deleted', 'js-second');
  await create('js-third', 'published');
  const third = await resumed.expect('the next live event after the missed ones', second.id + 3, 'file.created', 'js-third');
  resumed.close();
  summary.resume = { since: second.id, received: [second.id + 1, second.id + 2, third.id] };

  // token: a stream token bound to file.updated, used where no header can be sent.
  const response = await fetch(`${base}/cms/events/tokens`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ event: 'file.updated' }),
  });
  const token = await response.json();
  check(response.status === 201, `POST /cms/events/tokens answered ${response.status}: ${JSON.stringify(token)}`);
  check(typeof token.token === 'string' && token.token.startsWith('evt_'), `token: ${JSON.stringify(token)}`);
  check(token.url?.endsWith(`/cms/events?token=${token.token}`), `url: ${JSON.stringify(token)}`);
  check(!Number.isNaN(Date.parse(token.expires)), `expires: ${JSON.stringify(token)}`);
  const bound = new Stream(EventSource, `${base}/cms/events?token=${encodeURIComponent(token.token)}`);
  await bound.opened();
  await create('js-token-create', 'published');
  await write('PATCH', `${ITEMS}/js-third`, { fm: { title: 'js third, edited' } });
  const update = await bound.expect(
    'the update (the create before it is not delivered)',
    third.id + 2,
    'file.updated',
    'js-third',
  );
  bound.close();
  summary.token = { event: 'file.updated', received: [update.id], create_id_skipped: third.id + 1 };

  console.log(JSON.stringify(summary, null, 2));
  console.log('all checks passed');
}

const limit = setTimeout(() => {
  console.error(`FAILED: the checks took longer than ${TIME_LIMIT_MS} ms`);
  process.exit(1);
}, TIME_LIMIT_MS);
main().then(
  () => {
    clearTimeout(limit);
    process.exit(0);
  },
  (error) => {
    console.error(`FAILED: ${error instanceof Failure ? error.message : error.stack ?? error}`);
    process.exit(1);
  },
);
