// The official Node.js SDK's half of the cross-check with libmomento:
//   node cross.js verify-c  HOST PORT  reads and checks what crosscheck wrote
//   node cross.js write     HOST PORT  writes keys for crosscheck to read
//   node cross.js publish   HOST PORT  publishes to topic node-to-c, which
//                                      crosscheck subscribe checks
//   node cross.js subscribe HOST PORT  subscribes to topic c-to-node, prints
//                                      "ready", checks what crosscheck
//                                      publish sends (run.sh starts that)
// One line per check, then "N passed, M failed".
'use strict';
const {CollectionTtl, ItemType, SortedSetOrder} = require('@gomomento/sdk');
const {check, describe: show, earlyLosses, localClient, localTopicClient, run, sleep, waitFor} = require('./harness');

const [mode, host, port] = process.argv.slice(2);

async function verifyC(client) {
  let r = await client.get('cross', 'c-plain');
  check('Node reads c-plain written by C', r.type === 'Hit' && r.valueString() === 'from-c', show(r));
  r = await client.get('cross', 'c-binary');
  check("Node reads C's binary value", r.type === 'Hit' &&
        Buffer.from(r.valueUint8Array()).equals(Buffer.from([0, 1, 2, 255, 0])), show(r));
  r = await client.setIfNotExists('cross', 'c-cond', 'second');
  check("Node's setIfNotExists sees C's key", r.type === 'NotStored', show(r));
  r = await client.get('cross', 'c-ctr');
  check("Node reads C's counter as text 42", r.type === 'Hit' && r.valueString() === '42', show(r));
  r = await client.increment('cross', 'c-ctr', 8);
  check("Node increments C's counter to 50", r.type === 'Success' && r.value() === 50, show(r));
  r = await client.itemGetTtl('cross', 'c-ttl');
  check("Node sees C's 45 s TTL", r.type === 'Hit' && r.remainingTtlMillis() > 30000 &&
        r.remainingTtlMillis() <= 45000, show(r));
  r = await client.itemGetType('cross', 'c-ttl');
  check("Node's itemGetType of C's key -> SCALAR", r.type === 'Hit' &&
        r.itemType() === ItemType.SCALAR, show(r));
  r = await client.getBatch('cross', ['c-b0', 'c-b1', 'c-b2']);
  check("Node getBatch over C's setBatch", r.type === 'Success' &&
        JSON.stringify(r.results().map(x => x.valueString())) === '["zero","one","two"]', show(r));
  await verifyCollections(client);
}

const json = x => JSON.stringify(x);
const hex = a => Buffer.from(a).toString('hex');

// Checks that `r` is a Hit whose content `f(r)` is `want` (as JSON).
function checkHit(name, r, f, want) {
  const got = r.type === 'Hit' ? json(f(r)) : show(r);
  check(name, r.type === 'Hit' && got === json(want), `got ${got}`);
}

// crosscheck.c's collections, read back exactly; then one change to each
// that crosscheck read verifies.
async function verifyCollections(client) {
  let r = await client.dictionaryFetch('cross', 'c-dict');
  checkHit("Node fetches C's c-dict: f1, f2, n and one binary field", r, x => {
    const rec = x.valueRecord();
    return [Object.keys(rec).length, rec.f1, rec.f2, rec.n];
  }, [4, 'v1', 'v2', '5']);
  r = await client.dictionaryGetField('cross', 'c-dict', new Uint8Array([0, 255]));
  check("Node reads C's binary dictionary field", r.type === 'Hit' && hex(r.valueUint8Array()) === '0100', show(r));
  r = await client.dictionaryGetFields('cross', 'c-dict', ['f2', 'nope', 'f1']);
  checkHit("Node getFields over C's c-dict in order", r,
           x => x.responses.map(p => (p.type === 'Hit' ? p.valueString() : p.type)), ['v2', 'Miss', 'v1']);
  r = await client.dictionaryIncrement('cross', 'c-dict', 'n', 2);
  check("Node increments C's dictionary counter 5 -> 7", r.type === 'Success' && r.value() === 7, show(r));

  r = await client.setFetch('cross', 'c-set');
  checkHit("Node fetches C's c-set: exactly x y z and a binary element", r,
           x => x.valueArrayUint8Array().map(hex).sort(), ['0007', '78', '79', '7a']);
  r = await client.setContainsElements('cross', 'c-set', ['y', 'w']);
  checkHit("Node containsElements over C's c-set", r, x => [x.containsElements().y, x.containsElements().w], [true, false]);
  r = await client.setRemoveElement('cross', 'c-set', 'y');
  check("Node removes y from C's c-set", r.type === 'Success', show(r));

  r = await client.listFetch('cross', 'c-list');
  checkHit("Node fetches C's c-list in order", r, x => x.valueList(), ['zero', 'one', 'two', 'three']);
  r = await client.listFetch('cross', 'c-list', {startIndex: 1, endIndex: -1});
  checkHit("Node fetches [1, -1) of C's c-list", r, x => x.valueList(), ['one', 'two']);
  r = await client.itemGetTtl('cross', 'c-list');
  check("Node sees c-list's 45 s CollectionTtl", r.type === 'Hit' && r.remainingTtlMillis() > 30000 &&
        r.remainingTtlMillis() <= 45000, show(r));
  r = await client.listPopFront('cross', 'c-list');
  check("Node pops zero off the front of C's c-list", r.type === 'Hit' && r.valueString() === 'zero', show(r));

  r = await client.sortedSetFetchByRank('cross', 'c-zset');
  checkHit("Node fetches C's c-zset: order (ties by value) and scores", r,
           x => x.valueArray().map(e => [e.value, e.score]), [['low', -1.5], ['mid', 2], ['tie', 2], ['high', 10.25]]);
  r = await client.sortedSetFetchByScore('cross', 'c-zset', {minScore: 0, order: SortedSetOrder.Descending});
  checkHit("Node fetches C's c-zset by score [0, inf), descending", r, x => x.valueArray().map(e => e.value),
           ['high', 'tie', 'mid']);
  r = await client.sortedSetGetRank('cross', 'c-zset', 'tie');
  check("Node's rank of C's tie -> 2", r.type === 'Hit' && r.rank() === 2, show(r));
  r = await client.sortedSetGetScore('cross', 'c-zset', 'low');
  check("Node's score of C's low -> -1.5", r.type === 'Hit' && r.score() === -1.5, show(r));
  r = await client.sortedSetIncrementScore('cross', 'c-zset', 'mid', 0.5);
  check("Node increments C's mid to 2.5", r.type === 'Success' && r.score() === 2.5, show(r));

  const types = [['c-dict', ItemType.DICTIONARY], ['c-set', ItemType.SET], ['c-list', ItemType.LIST],
    ['c-zset', ItemType.SORTED_SET]];
  for (const [key, type] of types) {
    r = await client.itemGetType('cross', key);
    check(`Node's itemGetType of C's ${key} -> ${ItemType[type]}`, r.type === 'Hit' && r.itemType() === type, show(r));
  }
}

async function write(client) {
  let r = await client.set('cross', 'n-plain', 'from-node');
  check('Node set n-plain', r.type === 'Success', show(r));
  r = await client.set('cross', 'n-binary', new Uint8Array([0, 9, 0]));
  check('Node set n-binary', r.type === 'Success', show(r));
  r = await client.increment('cross', 'n-ctr', 7);
  check('Node increment n-ctr to 7', r.type === 'Success' && r.value() === 7, show(r));
  r = await client.set('cross', 'n-ttl', 'x', {ttl: 30});
  check('Node set n-ttl for 30 s', r.type === 'Success', show(r));
  r = await client.setBatch('cross', new Map([['n-b0', 'b0'], ['n-b1', 'b1']]));
  check('Node setBatch n-b0..1', r.type === 'Success', show(r));
  r = await client.delete('cross', 'c-plain');
  check("Node deletes C's c-plain", r.type === 'Success', show(r));

  r = await client.dictionarySetFields('cross', 'n-dict', [['a', 'alpha'], ['b', 'beta']]);
  check('Node dictionarySetFields n-dict', r.type === 'Success', show(r));
  r = await client.dictionarySetField('cross', 'n-dict', new Uint8Array([98, 105, 110, 0]), new Uint8Array([0xfe, 0, 1]));
  check('Node dictionarySetField n-dict binary', r.type === 'Success', show(r));
  r = await client.dictionaryIncrement('cross', 'n-dict-ctr', 'hits', 10);
  check('Node dictionaryIncrement n-dict-ctr to 10', r.type === 'Success' && r.value() === 10, show(r));
  const ttl40 = {ttl: CollectionTtl.of(40)};
  r = await client.setAddElements('cross', 'n-set', ['red', 'green', 'blue'], ttl40);
  check('Node setAddElements n-set for 40 s', r.type === 'Success', show(r));
  r = await client.setAddElement('cross', 'n-set', new Uint8Array([0xff, 0]), ttl40);
  check('Node setAddElement n-set binary', r.type === 'Success', show(r));
  r = await client.listConcatenateBack('cross', 'n-list', ['l1', 'l2', 'l3']);
  check('Node listConcatenateBack n-list', r.type === 'Success' && r.listLength() === 3, show(r));
  r = await client.listPushFront('cross', 'n-list', 'l0');
  check('Node listPushFront n-list', r.type === 'Success' && r.listLength() === 4, show(r));
  r = await client.listPushBack('cross', 'n-list', 'l4');
  check('Node listPushBack n-list', r.type === 'Success' && r.listLength() === 5, show(r));
  r = await client.listPushBack('cross', 'n-list', new Uint8Array([0, 1, 0]));
  check('Node listPushBack n-list binary', r.type === 'Success' && r.listLength() === 6, show(r));
  r = await client.sortedSetPutElements('cross', 'n-zset', {first: -3, second: 0, third: 0, tiny: 0.125});
  check('Node sortedSetPutElements n-zset', r.type === 'Success', show(r));
  r = await client.sortedSetPutElement('cross', 'n-zset', 'fourth', 1e10);
  check('Node sortedSetPutElement n-zset fourth', r.type === 'Success', show(r));
}

// ---- Topics. Every wait is bounded by WAIT; after the last expected item
// nothing more may arrive for QUIET.
const WAIT = 10000;
const QUIET = 300;
// Byte i of the large binary value (crosscheck.c's big_byte).
const bigBinary = len => new Uint8Array(len).map((_, i) => (i * 7 + (i >> 10)) & 0xff);

// What crosscheck subscribe expects, in this order (its node_values).
const NODE_VALUES = [
  'from-node',
  new Uint8Array([0, 1, 2, 255, 0]),
  'héllo ✓ 日本 🚀',
  new Uint8Array(Buffer.from('abc')),
  '',
  new Uint8Array(0),
  bigBinary(300 * 1024),
  'last',
];

async function publish() {
  const topics = localTopicClient(host, port);
  let ok = true;
  for (const v of NODE_VALUES) {
    const r = await topics.publish('cross', 'node-to-c', v);
    if (r.type !== 'Success') console.log(`# publish of ${v.length} ${typeof v === 'string' ? 'chars' : 'bytes'}: ${show(r)}`);
    ok = ok && r.type === 'Success';
  }
  check(`Node publishes ${NODE_VALUES.length} text and bytes values to node-to-c`, ok);
}

// What crosscheck publish sends to c-to-node, in this order. (No empty
// value: the SDK's subscriber turns an empty text into empty bytes, as it
// tests `value.text` for truth.)
const C_VALUES = [
  'from-c',
  new Uint8Array([0, 255, 0, 1]),
  'ünïcode ✓',
  new Uint8Array(Buffer.from('xyz')),
  bigBinary(300 * 1024),
  'last',
];
const kindOf = v => (typeof v === 'string' ? 'text' : v instanceof Uint8Array ? 'bytes' : typeof v);
const same = (a, b) => kindOf(a) === kindOf(b) && (typeof a === 'string' ? a === b : Buffer.from(a).equals(Buffer.from(b)));

async function subscribe() {
  const topics = localTopicClient(host, port);
  const items = [];
  const errors = [];
  const lossTimes = [];
  let discontinuities = 0;
  let ended = false;
  const t0 = Date.now();
  const sub = await topics.subscribe('cross', 'c-to-node', {
    onItem: item => items.push(item),
    onError: e => errors.push(e),
    onDiscontinuity: () => discontinuities++,
    onConnectionLost: () => lossTimes.push(Date.now() - t0),
    onSubscriptionEnd: () => {
      ended = true;
    },
  });
  check('Node subscribes to c-to-node', sub.type === 'Subscription', show(sub));
  // run.sh starts crosscheck publish on this line.
  console.log('ready');
  if (sub.type !== 'Subscription') return;
  const all = await waitFor(() => items.length >= C_VALUES.length, WAIT);
  await sleep(QUIET);
  sub.unsubscribe();
  check(`Node subscriber gets all ${C_VALUES.length} items C published`, all, `got ${items.length}`);
  C_VALUES.forEach((v, i) => {
    const it = items[i];
    check(`Node gets C's item ${i + 1}: ${kindOf(v)} of ${v.length}, exact content and kind`, it !== undefined && same(it.value(), v),
          it ? `got ${kindOf(it.value())} of ${it.value().length}` : 'missing');
  });
  const seqs = items.map(it => it.sequenceNumber());
  check('Node sees sequence numbers 1..n in order', JSON.stringify(seqs) === JSON.stringify(C_VALUES.map((_, i) => i + 1)),
        JSON.stringify(seqs));
  check('Node gets nothing more after the last item', items.length === C_VALUES.length, `${items.length} items`);
  const losses = earlyLosses(lossTimes);
  check('Node subscription: no error, discontinuity or lost connection', errors.length + discontinuities + losses === 0,
        JSON.stringify({errors: errors.map(show), discontinuities, losses}));
  check('Node unsubscribe ends the subscription', await waitFor(() => ended, WAIT));
}

async function main() {
  if (mode === 'publish') return publish();
  if (mode === 'subscribe') return subscribe();
  const client = await localClient(host, port);
  if (mode === 'verify-c') await verifyC(client);
  else if (mode === 'write') await write(client);
  else throw new Error(`unknown mode ${mode}`);
  client.close();
}

run(main);
