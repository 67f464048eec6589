// The official Node.js SDK's half of the cross-check with libmomento:
//   node cross.js verify-c HOST PORT   reads and checks what crosscheck wrote
//   node cross.js write    HOST PORT   writes keys for crosscheck to read
// One line per check, then "N passed, M failed".
'use strict';
const {check, describe: show, localClient, run} = require('./harness');

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
        r.itemType() === require('@gomomento/sdk').ItemType.SCALAR, show(r));
  r = await client.getBatch('cross', ['c-b0', 'c-b1', 'c-b2']);
  check("Node getBatch over C's setBatch", r.type === 'Success' &&
        JSON.stringify(r.results().map(x => x.valueString())) === '["zero","one","two"]', show(r));
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
}

async function main() {
  const client = await localClient(host, port);
  if (mode === 'verify-c') await verifyC(client);
  else if (mode === 'write') await write(client);
  else throw new Error(`unknown mode ${mode}`);
  client.close();
}

run(main);
