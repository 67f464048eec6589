// Momento Topics through the official Node.js SDK's TopicClient against
// momento-local: publish text and bytes, subscribe, and the error cases,
// with value checks (order, text vs bytes, sequence numbers 1..n,
// unsubscribe, missing cache, empty topic name). One line per check, then
// "N passed, M failed". Usage: node topics.js HOST PORT
'use strict';
const grpc = require('@grpc/grpc-js');
const {pubsub} = require('@gomomento/generated-types');
const {MomentoErrorCode} = require('@gomomento/sdk');
const {check, describe, earlyLosses, localClient, localTopicClient, run, sleep, waitFor} = require('./harness');

const [host, port] = process.argv.slice(2);
const cache = 'interop-topics';
// Every wait for an event is bounded by this; a quiet period (nothing more
// must arrive) lasts QUIET.
const WAIT = 10000;
const QUIET = 300;

const isCode = (r, code) => r.type === 'Error' && r.errorCode() === code;

// Subscribes with handlers that record every event.
async function subscribe(topics, cacheName, topic) {
  const t0 = Date.now();
  const s = {items: [], heartbeats: 0, discontinuities: [], errors: [], lossTimes: [], ended: false};
  s.resp = await topics.subscribe(cacheName, topic, {
    onItem: item => s.items.push(item),
    onHeartbeat: () => s.heartbeats++,
    onDiscontinuity: d => s.discontinuities.push(d),
    onError: e => s.errors.push(e),
    onConnectionLost: () => s.lossTimes.push(Date.now() - t0),
    onSubscriptionEnd: () => {
      s.ended = true;
    },
  });
  return s;
}

const kindOf = v => (typeof v === 'string' ? 'text' : v instanceof Uint8Array ? 'bytes' : typeof v);
const hex = v => Buffer.from(v).toString('hex');
// An item as [kind, content, sequence number]; bytes as hex, long values by
// length and a digest of their content.
function show(item) {
  const v = item.value();
  const content = typeof v === 'string' ? v : hex(v);
  const short = content.length > 64 ? `${content.length} chars, sum ${[...content].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 0)}` : content;
  return [kindOf(v), short, item.sequenceNumber()];
}
const want = (values, first) => values.map((v, i) => show({value: () => v, sequenceNumber: () => first + i}));

// Checks that a subscriber's items are exactly `values`, in order, each of
// its kind, numbered from `first`.
function checkItems(name, s, values, first) {
  const got = JSON.stringify(s.items.map(show));
  check(name, got === JSON.stringify(want(values, first)), `got ${got}`);
}

const bigBinary = new Uint8Array(300 * 1024).map((_, i) => (i * 7 + (i >> 10)) & 0xff);
const VALUES = [
  'hello',
  new Uint8Array([0, 1, 2, 255, 0]),
  'héllo ✓ 日本語 🚀',
  new Uint8Array(Buffer.from('abc')), // valid UTF-8, published as bytes: stays bytes
  ' ',
  'x'.repeat(64 * 1024),
  bigBinary,
];

// A Publish or Subscribe made with gRPC directly, for what the SDK refuses
// before sending (an empty topic name): the server's own answer.
function rawClient() {
  return new pubsub.cache_client.pubsub.PubsubClient(`${host}:${port}`, grpc.credentials.createInsecure());
}
function rawMeta() {
  const m = new grpc.Metadata();
  m.set('authorization', '');
  return m;
}
function rawPublish(client, cacheName, topic) {
  const req = new pubsub.cache_client.pubsub._PublishRequest({
    cache_name: cacheName,
    topic,
    value: new pubsub.cache_client.pubsub._TopicValue({text: 'v'}),
  });
  return new Promise(resolve => {
    client.Publish(req, rawMeta(), {deadline: Date.now() + WAIT}, err => resolve(err ? err.code : grpc.status.OK));
  });
}
function rawSubscribe(client, cacheName, topic) {
  const req = new pubsub.cache_client.pubsub._SubscriptionRequest({cache_name: cacheName, topic});
  return new Promise(resolve => {
    const call = client.Subscribe(req, rawMeta(), {deadline: Date.now() + WAIT});
    call.on('data', () => {
      call.cancel();
      resolve('a message');
    });
    call.on('error', err => resolve(err.code));
    call.on('end', () => resolve('end'));
  });
}

async function main() {
  const client = await localClient(host, port);
  const topics = localTopicClient(host, port);
  let r = await client.createCache(cache);
  check('createCache for topics -> Success', r.type === 'Success', describe(r));

  // One subscriber, every kind of value.
  const a = await subscribe(topics, cache, 'news');
  check('subscribe -> Subscription', a.resp.type === 'Subscription', describe(a.resp));
  check('subscription isSubscribed', a.resp.type === 'Subscription' && a.resp.isSubscribed === true);
  check("subscribe: the stream opens with momento-local's heartbeat", await waitFor(() => a.heartbeats >= 1, WAIT),
        `${a.heartbeats} heartbeats`);
  let ok = true;
  for (const v of VALUES) {
    r = await topics.publish(cache, 'news', v);
    ok = ok && r.type === 'Success';
    if (r.type !== 'Success') console.log(`# publish ${kindOf(v)} of ${v.length}: ${describe(r)}`);
  }
  check(`publish ${VALUES.length} text and bytes values -> Success each`, ok);
  await waitFor(() => a.items.length >= VALUES.length, WAIT);
  checkItems('subscriber gets every item in order, text as string, bytes as Uint8Array, numbers 1..n', a, VALUES, 1);
  check('text item: valueString() is the text', a.items.length > 2 && a.items[2].valueString() === VALUES[2]);
  check('bytes item: valueUint8Array() is the bytes', a.items.length > 1 &&
        hex(a.items[1].valueUint8Array()) === '000102ff00');

  // A second subscriber starts with what is published from now on; both
  // get the same numbers.
  const b = await subscribe(topics, cache, 'news');
  check('second subscribe -> Subscription', b.resp.type === 'Subscription', describe(b.resp));
  const later = ['late-1', new Uint8Array([7])];
  for (const v of later) await topics.publish(cache, 'news', v);
  await waitFor(() => a.items.length >= VALUES.length + 2 && b.items.length >= 2, WAIT);
  const n = VALUES.length;
  checkItems('second subscriber: no replay, only the new items, numbered on from the topic', b, later, n + 1);
  check('first subscriber gets the same new items with the same numbers',
        JSON.stringify(a.items.slice(n).map(show)) === JSON.stringify(want(later, n + 1)),
        JSON.stringify(a.items.slice(n).map(show)));

  // Another topic of the same cache is another stream of items.
  r = await topics.publish(cache, 'sports', 'elsewhere');
  check('publish to another topic -> Success', r.type === 'Success', describe(r));
  r = await topics.publish(cache, 'nobody-listens', 'into the void');
  check('publish to a topic nobody subscribes to -> Success', r.type === 'Success', describe(r));

  // Unsubscribe stops delivery to that subscriber only.
  a.resp.unsubscribe();
  check('unsubscribe: isSubscribed becomes false', a.resp.isSubscribed === false);
  check('unsubscribe: onSubscriptionEnd is called', await waitFor(() => a.ended, WAIT));
  const aCount = a.items.length;
  r = await topics.publish(cache, 'news', 'after-unsubscribe');
  check('publish after one unsubscribed -> Success', r.type === 'Success', describe(r));
  await waitFor(() => b.items.length >= 3, WAIT);
  await sleep(QUIET);
  check('unsubscribe stops delivery: nothing more reaches the first subscriber', a.items.length === aCount,
        `${a.items.length - aCount} more`);
  checkItems("the other subscriber still gets it, and nothing of the other topics", b, [...later, 'after-unsubscribe'], n + 1);
  const losses = earlyLosses([...a.lossTimes, ...b.lossTimes]);
  check('no error, discontinuity or lost connection on either subscriber',
        a.errors.length + b.errors.length + a.discontinuities.length + b.discontinuities.length + losses === 0,
        JSON.stringify({errors: [...a.errors, ...b.errors].map(describe), discontinuities: [...a.discontinuities, ...b.discontinuities].map(String),
          losses}));
  b.resp.unsubscribe();
  check('second unsubscribe: onSubscriptionEnd is called', await waitFor(() => b.ended, WAIT));

  // A topic resubscribed later goes on numbering where it was.
  const c = await subscribe(topics, cache, 'sports');
  await topics.publish(cache, 'sports', 'second');
  await waitFor(() => c.items.length >= 1, WAIT);
  checkItems("a topic's numbers go on across subscriptions (sports: 1 published before, this is 2)", c, ['second'], 2);
  c.resp.unsubscribe();

  // The error cases.
  const missing = await subscribe(topics, 'no-such-cache', 'news');
  check('subscribe to a missing cache -> CACHE_NOT_FOUND', isCode(missing.resp, MomentoErrorCode.CACHE_NOT_FOUND_ERROR), describe(missing.resp));
  r = await topics.publish('no-such-cache', 'news', 'v');
  check('publish to a missing cache -> CACHE_NOT_FOUND', isCode(r, MomentoErrorCode.CACHE_NOT_FOUND_ERROR), describe(r));
  r = await topics.publish(cache, '', 'v');
  check('publish with an empty topic name -> INVALID_ARGUMENT (the SDK refuses)', isCode(r, MomentoErrorCode.INVALID_ARGUMENT_ERROR), describe(r));
  const empty = await subscribe(topics, cache, '');
  check('subscribe with an empty topic name -> INVALID_ARGUMENT (the SDK refuses)', isCode(empty.resp, MomentoErrorCode.INVALID_ARGUMENT_ERROR), describe(empty.resp));
  const raw = rawClient();
  let code = await rawPublish(raw, cache, '');
  check('momento-local refuses a Publish with an empty topic: INVALID_ARGUMENT', code === grpc.status.INVALID_ARGUMENT, `status ${code}`);
  code = await rawSubscribe(raw, cache, '');
  check('momento-local refuses a Subscribe with an empty topic: INVALID_ARGUMENT', code === grpc.status.INVALID_ARGUMENT, `got ${code}`);
  code = await rawPublish(raw, 'no-such-cache', 'news');
  check('momento-local answers a Publish to a missing cache NOT_FOUND', code === grpc.status.NOT_FOUND, `status ${code}`);
  raw.close();
  r = await topics.publish(cache, 'news', new Uint8Array(5 * 1024 * 1024 + 1));
  check('publish over 5 MiB -> LIMIT_EXCEEDED', isCode(r, MomentoErrorCode.LIMIT_EXCEEDED_ERROR), describe(r));

  // Deleting the cache ends its subscriptions: the SDK reports
  // CACHE_NOT_FOUND to onError and does not resubscribe.
  const d = await subscribe(topics, cache, 'doomed');
  check('subscribe before the cache is deleted -> Subscription', d.resp.type === 'Subscription', describe(d.resp));
  r = await client.deleteCache(cache);
  check('deleteCache with a subscriber -> Success', r.type === 'Success', describe(r));
  check('the subscriber of a deleted cache gets onError CACHE_NOT_FOUND',
        await waitFor(() => d.errors.length > 0, WAIT) && d.errors[0].errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR,
        d.errors.map(describe).join('; ') || 'no error');
  check('... and is unsubscribed', d.resp.type === 'Subscription' && d.resp.isSubscribed === false);

  topics.close?.();
  client.close();
}

run(main);
