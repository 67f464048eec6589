// Drives momento-local through every RPC it serves, and its error cases,
// with Momento's official Node.js SDK. One line per check, then
// "N passed, M failed". Usage: node interop.js HOST PORT
'use strict';
const {ItemType, MomentoErrorCode} = require('@gomomento/sdk');
const {check, describe, localClient, run} = require('./harness');

const [host, port] = process.argv.slice(2);

async function main() {
  const client = await localClient(host, port);
  const cache = 'interop';

  let r = await client.createCache(cache);
  check('createCache new cache -> Success', r.type === 'Success', describe(r));
  r = await client.createCache(cache);
  check('createCache again -> AlreadyExists', r.type === 'AlreadyExists', describe(r));
  r = await client.listCaches();
  check('listCaches includes the cache', r.type === 'Success' && r.getCaches().some(c => c.getName() === cache), describe(r));

  r = await client.set(cache, 'k', 'v1');
  check('set -> Success', r.type === 'Success', describe(r));
  r = await client.get(cache, 'k');
  check('get -> Hit with the value', r.type === 'Hit' && r.valueString() === 'v1', describe(r));
  r = await client.get(cache, 'absent');
  check('get absent key -> Miss', r.type === 'Miss', describe(r));
  const bytes = new Uint8Array([0, 1, 2, 255, 0]);
  await client.set(cache, new Uint8Array([9, 0, 9]), bytes);
  r = await client.get(cache, new Uint8Array([9, 0, 9]));
  check('binary key and value round trip', r.type === 'Hit' && Buffer.from(r.valueUint8Array()).equals(Buffer.from(bytes)), describe(r));
  r = await client.delete(cache, 'k');
  check('delete -> Success', r.type === 'Success', describe(r));
  r = await client.get(cache, 'k');
  check('get after delete -> Miss', r.type === 'Miss', describe(r));
  r = await client.delete(cache, 'k');
  check('delete missing key -> Success', r.type === 'Success', describe(r));

  r = await client.setIfAbsent(cache, 'c', 'a');
  check('setIfAbsent on missing -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfAbsent(cache, 'c', 'b');
  check('setIfAbsent on present -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfNotExists(cache, 'c', 'b');
  check('setIfNotExists on present -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfNotExists(cache, 'c2', 'b');
  check('setIfNotExists on missing -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfPresent(cache, 'c', 'p');
  check('setIfPresent on present -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfPresent(cache, 'nope', 'p');
  check('setIfPresent on missing -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfEqual(cache, 'c', 'e', 'p');
  check('setIfEqual matching -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfEqual(cache, 'c', 'x', 'p');
  check('setIfEqual not matching -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfNotEqual(cache, 'c', 'x', 'e');
  check('setIfNotEqual equal -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfNotEqual(cache, 'c', 'n', 'zz');
  check('setIfNotEqual different -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfPresentAndNotEqual(cache, 'c', 'q', 'n');
  check('setIfPresentAndNotEqual equal -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfPresentAndNotEqual(cache, 'c', 'q', 'zz');
  check('setIfPresentAndNotEqual different -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfPresentAndNotEqual(cache, 'nope', 'q', 'zz');
  check('setIfPresentAndNotEqual missing -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfAbsentOrEqual(cache, 'c', 'w', 'zz');
  check('setIfAbsentOrEqual different -> NotStored', r.type === 'NotStored', describe(r));
  r = await client.setIfAbsentOrEqual(cache, 'c', 'w', 'q');
  check('setIfAbsentOrEqual equal -> Stored', r.type === 'Stored', describe(r));
  r = await client.setIfAbsentOrEqual(cache, 'aoe', 'w', 'zz');
  check('setIfAbsentOrEqual missing -> Stored', r.type === 'Stored', describe(r));
  r = await client.get(cache, 'c');
  check('conditional writes left the expected value', r.type === 'Hit' && r.valueString() === 'w', describe(r));

  r = await client.increment(cache, 'n', 5);
  check('increment new key -> 5', r.type === 'Success' && r.value() === 5, describe(r));
  r = await client.increment(cache, 'n', -7);
  check('increment again -> -2', r.type === 'Success' && r.value() === -2, describe(r));
  r = await client.increment(cache, 'c', 1);
  check('increment of text -> FAILED_PRECONDITION', r.type === 'Error' && r.errorCode() === MomentoErrorCode.FAILED_PRECONDITION_ERROR, describe(r));

  r = await client.keysExist(cache, ['c', 'missing', 'n']);
  check('keysExist -> [true, false, true]', r.type === 'Success' && JSON.stringify(r.exists()) === '[true,false,true]', describe(r));
  r = await client.keyExists(cache, 'missing');
  check('keyExists missing -> false', r.type === 'Success' && r.exists() === false, describe(r));

  await client.set(cache, 't', 'v', {ttl: 10});
  r = await client.itemGetTtl(cache, 't');
  check('itemGetTtl -> Hit with ~10 s left', r.type === 'Hit' && r.remainingTtlMillis() > 9000 && r.remainingTtlMillis() <= 10000, describe(r));
  r = await client.itemGetTtl(cache, 'missing');
  check('itemGetTtl missing -> Miss', r.type === 'Miss', describe(r));
  r = await client.itemGetType(cache, 't');
  check('itemGetType of a set key -> Hit, SCALAR', r.type === 'Hit' && r.itemType() === ItemType.SCALAR, describe(r));
  r = await client.itemGetType(cache, new Uint8Array([9, 0, 9]));
  check('itemGetType of a binary key -> Hit, SCALAR', r.type === 'Hit' && r.itemType() === ItemType.SCALAR, describe(r));
  r = await client.itemGetType(cache, 'missing');
  check('itemGetType missing -> Miss', r.type === 'Miss', describe(r));
  r = await client.itemGetType('no-such-cache', 't');
  check('itemGetType on unknown cache -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.increaseTtl(cache, 't', 20000);
  check('increaseTtl longer -> Set', r.type === 'Set', describe(r));
  r = await client.increaseTtl(cache, 't', 1000);
  check('increaseTtl shorter -> NotSet', r.type === 'NotSet', describe(r));
  r = await client.decreaseTtl(cache, 't', 5000);
  check('decreaseTtl shorter -> Set', r.type === 'Set', describe(r));
  r = await client.decreaseTtl(cache, 't', 50000);
  check('decreaseTtl longer -> NotSet', r.type === 'NotSet', describe(r));
  r = await client.updateTtl(cache, 't', 30000);
  check('updateTtl -> Set', r.type === 'Set', describe(r));
  r = await client.updateTtl(cache, 'missing', 30000);
  check('updateTtl missing -> Miss', r.type === 'Miss', describe(r));

  r = await client.setBatch(cache, new Map([['b1', 'x'], ['b2', 'y']]));
  check('setBatch -> Success', r.type === 'Success', describe(r));
  r = await client.getBatch(cache, ['b1', 'bmissing', 'b2']);
  if (r.type === 'Success') {
    const vals = r.results().map(x => (x.type === 'Hit' ? x.valueString() : x.type));
    check('getBatch -> hit, miss, hit in order', JSON.stringify(vals) === '["x","Miss","y"]', JSON.stringify(vals));
  } else {
    check('getBatch -> Success', false, describe(r));
  }

  r = await client.flushCache(cache);
  check('flushCache -> Success', r.type === 'Success', describe(r));
  r = await client.get(cache, 'n');
  check('get after flush -> Miss', r.type === 'Miss', describe(r));

  r = await client.get('no-such-cache', 'k');
  check('get on unknown cache -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.set(cache, 'big', 'x'.repeat(5 * 1024 * 1024 + 1));
  check('item over 5 MiB -> LIMIT_EXCEEDED', r.type === 'Error' && r.errorCode() === MomentoErrorCode.LIMIT_EXCEEDED_ERROR, describe(r));
  r = await client.flushCache('no-such-cache');
  check('flushCache unknown -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.deleteCache(cache);
  check('deleteCache -> Success', r.type === 'Success', describe(r));
  r = await client.deleteCache(cache);
  check('deleteCache again -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.listCaches();
  check('listCaches no longer lists it', r.type === 'Success' && !r.getCaches().some(c => c.getName() === cache), describe(r));

  client.close();
}

run(main);
