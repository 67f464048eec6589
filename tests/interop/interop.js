// Drives momento-local through every RPC it serves, and its error cases,
// with Momento's official Node.js SDK. One line per check, then
// "N passed, M failed". Usage: node interop.js HOST PORT
'use strict';
const {CollectionTtl, ItemType, MomentoErrorCode, SortedSetAggregate, SortedSetOrder} = require('@gomomento/sdk');
const {check, describe, localClient, run} = require('./harness');

const [host, port] = process.argv.slice(2);

async function main() {
  const client = await localClient(host, port);
  const cache = 'interop';

  let r = checkType('createCache new cache -> Success', await client.createCache(cache), 'Success');
  checkType('createCache again -> AlreadyExists', await client.createCache(cache), 'AlreadyExists');
  r = await client.listCaches();
  check('listCaches includes the cache', r.type === 'Success' && r.getCaches().some(c => c.getName() === cache), describe(r));

  checkType('set -> Success', await client.set(cache, 'k', 'v1'), 'Success');
  r = await client.get(cache, 'k');
  check('get -> Hit with the value', r.type === 'Hit' && r.valueString() === 'v1', describe(r));
  checkType('get absent key -> Miss', await client.get(cache, 'absent'), 'Miss');
  const bytes = new Uint8Array([0, 1, 2, 255, 0]);
  await client.set(cache, new Uint8Array([9, 0, 9]), bytes);
  r = await client.get(cache, new Uint8Array([9, 0, 9]));
  check('binary key and value round trip', r.type === 'Hit' && Buffer.from(r.valueUint8Array()).equals(Buffer.from(bytes)), describe(r));
  checkType('delete -> Success', await client.delete(cache, 'k'), 'Success');
  checkType('get after delete -> Miss', await client.get(cache, 'k'), 'Miss');
  checkType('delete missing key -> Success', await client.delete(cache, 'k'), 'Success');

  checkType('setIfAbsent on missing -> Stored', await client.setIfAbsent(cache, 'c', 'a'), 'Stored');
  checkType('setIfAbsent on present -> NotStored', await client.setIfAbsent(cache, 'c', 'b'), 'NotStored');
  checkType('setIfNotExists on present -> NotStored', await client.setIfNotExists(cache, 'c', 'b'), 'NotStored');
  checkType('setIfNotExists on missing -> Stored', await client.setIfNotExists(cache, 'c2', 'b'), 'Stored');
  checkType('setIfPresent on present -> Stored', await client.setIfPresent(cache, 'c', 'p'), 'Stored');
  checkType('setIfPresent on missing -> NotStored', await client.setIfPresent(cache, 'nope', 'p'), 'NotStored');
  checkType('setIfEqual matching -> Stored', await client.setIfEqual(cache, 'c', 'e', 'p'), 'Stored');
  checkType('setIfEqual not matching -> NotStored', await client.setIfEqual(cache, 'c', 'x', 'p'), 'NotStored');
  checkType('setIfNotEqual equal -> NotStored', await client.setIfNotEqual(cache, 'c', 'x', 'e'), 'NotStored');
  checkType('setIfNotEqual different -> Stored', await client.setIfNotEqual(cache, 'c', 'n', 'zz'), 'Stored');
  checkType('setIfPresentAndNotEqual equal -> NotStored', await client.setIfPresentAndNotEqual(cache, 'c', 'q', 'n'), 'NotStored');
  checkType('setIfPresentAndNotEqual different -> Stored', await client.setIfPresentAndNotEqual(cache, 'c', 'q', 'zz'), 'Stored');
  checkType('setIfPresentAndNotEqual missing -> NotStored', await client.setIfPresentAndNotEqual(cache, 'nope', 'q', 'zz'), 'NotStored');
  checkType('setIfAbsentOrEqual different -> NotStored', await client.setIfAbsentOrEqual(cache, 'c', 'w', 'zz'), 'NotStored');
  checkType('setIfAbsentOrEqual equal -> Stored', await client.setIfAbsentOrEqual(cache, 'c', 'w', 'q'), 'Stored');
  checkType('setIfAbsentOrEqual missing -> Stored', await client.setIfAbsentOrEqual(cache, 'aoe', 'w', 'zz'), 'Stored');
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
  checkType('itemGetTtl missing -> Miss', await client.itemGetTtl(cache, 'missing'), 'Miss');
  r = await client.itemGetType(cache, 't');
  check('itemGetType of a set key -> Hit, SCALAR', r.type === 'Hit' && r.itemType() === ItemType.SCALAR, describe(r));
  r = await client.itemGetType(cache, new Uint8Array([9, 0, 9]));
  check('itemGetType of a binary key -> Hit, SCALAR', r.type === 'Hit' && r.itemType() === ItemType.SCALAR, describe(r));
  checkType('itemGetType missing -> Miss', await client.itemGetType(cache, 'missing'), 'Miss');
  r = await client.itemGetType('no-such-cache', 't');
  check('itemGetType on unknown cache -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  checkType('increaseTtl longer -> Set', await client.increaseTtl(cache, 't', 20000), 'Set');
  checkType('increaseTtl shorter -> NotSet', await client.increaseTtl(cache, 't', 1000), 'NotSet');
  checkType('decreaseTtl shorter -> Set', await client.decreaseTtl(cache, 't', 5000), 'Set');
  checkType('decreaseTtl longer -> NotSet', await client.decreaseTtl(cache, 't', 50000), 'NotSet');
  checkType('updateTtl -> Set', await client.updateTtl(cache, 't', 30000), 'Set');
  checkType('updateTtl missing -> Miss', await client.updateTtl(cache, 'missing', 30000), 'Miss');

  checkType('setBatch -> Success', await client.setBatch(cache, new Map([['b1', 'x'], ['b2', 'y']])), 'Success');
  r = await client.getBatch(cache, ['b1', 'bmissing', 'b2']);
  if (r.type === 'Success') {
    const vals = r.results().map(x => (x.type === 'Hit' ? x.valueString() : x.type));
    check('getBatch -> hit, miss, hit in order', JSON.stringify(vals) === '["x","Miss","y"]', JSON.stringify(vals));
  } else {
    check('getBatch -> Success', false, describe(r));
  }

  await collections(client, cache);

  checkType('flushCache -> Success', await client.flushCache(cache), 'Success');
  checkType('get after flush -> Miss', await client.get(cache, 'n'), 'Miss');

  r = await client.get('no-such-cache', 'k');
  check('get on unknown cache -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.set(cache, 'big', 'x'.repeat(5 * 1024 * 1024 + 1));
  check('item over 5 MiB -> LIMIT_EXCEEDED', r.type === 'Error' && r.errorCode() === MomentoErrorCode.LIMIT_EXCEEDED_ERROR, describe(r));
  r = await client.flushCache('no-such-cache');
  check('flushCache unknown -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  checkType('deleteCache -> Success', await client.deleteCache(cache), 'Success');
  r = await client.deleteCache(cache);
  check('deleteCache again -> NOT_FOUND', r.type === 'Error' && r.errorCode() === MomentoErrorCode.CACHE_NOT_FOUND_ERROR, describe(r));
  r = await client.listCaches();
  check('listCaches no longer lists it', r.type === 'Success' && !r.getCaches().some(c => c.getName() === cache), describe(r));

  client.close();
}

// ---- Collections. Each check's name starts with its family (dictionary,
// set, list, sorted set) so the tally per family is a grep away.

const json = x => JSON.stringify(x);
const sortedEntries = rec => Object.entries(rec).sort();
const failedPrecondition = r => r.type === 'Error' && r.errorCode() === MomentoErrorCode.FAILED_PRECONDITION_ERROR;
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const sameBytes = (a, b) => Buffer.from(a).equals(Buffer.from(b));

// Checks that `r` is a Hit whose content `f(r)` is `want` (as JSON).
function checkHit(name, r, f, want) {
  const got = r.type === 'Hit' ? json(f(r)) : describe(r);
  check(name, r.type === 'Hit' && got === json(want), `got ${got}`);
}

// Checks that `r` is a response of type `type` (Success, Stored, Miss...);
// returns it.
function checkType(name, r, type) {
  check(name, r.type === type, describe(r));
  return r;
}

function checkMiss(name, r) {
  checkType(name, r, 'Miss');
}

async function dictionaries(client, cache) {
  const d = 'dict';
  let r = checkType('dictionary setField -> Success', await client.dictionarySetField(cache, d, 'f1', 'v1'), 'Success');
  checkType('dictionary setFields -> Success', await client.dictionarySetFields(cache, d, new Map([['f2', 'v2'], ['f3', 'v3']])), 'Success');
  r = await client.dictionaryGetField(cache, d, 'f1');
  check('dictionary getField -> Hit, v1 for f1', r.type === 'Hit' && r.valueString() === 'v1' && r.fieldString() === 'f1', describe(r));
  r = await client.dictionaryGetField(cache, d, 'nope');
  check('dictionary getField of an absent field -> Miss', r.type === 'Miss' && r.fieldString() === 'nope', describe(r));
  r = await client.dictionaryGetFields(cache, d, ['f2', 'nope', 'f3']);
  checkHit('dictionary getFields -> hit, miss, hit in order', r,
           x => x.responses.map(p => [p.fieldString(), p.type === 'Hit' ? p.valueString() : p.type]),
           [['f2', 'v2'], ['nope', 'Miss'], ['f3', 'v3']]);
  r = await client.dictionaryFetch(cache, d);
  checkHit('dictionary fetch -> the three fields', r, x => sortedEntries(x.valueRecord()),
           [['f1', 'v1'], ['f2', 'v2'], ['f3', 'v3']]);
  await client.dictionarySetField(cache, d, 'f1', 'v1b');
  r = await client.dictionaryGetField(cache, d, 'f1');
  check('dictionary setField replaces a value', r.type === 'Hit' && r.valueString() === 'v1b', describe(r));
  r = await client.dictionarySetFields(cache, d, [['f2', 'v2b'], ['f4', 'v4']]);
  r = await client.dictionaryGetFields(cache, d, ['f2', 'f4']);
  checkHit('dictionary setFields replaces and adds', r, x => sortedEntries(x.valueRecord()), [['f2', 'v2b'], ['f4', 'v4']]);
  r = await client.dictionaryIncrement(cache, d, 'n', 5);
  check('dictionary increment of a new field -> 5', r.type === 'Success' && r.value() === 5, describe(r));
  r = await client.dictionaryIncrement(cache, d, 'n', -8);
  check('dictionary increment again -> -3', r.type === 'Success' && r.value() === -3, describe(r));
  r = await client.dictionaryGetField(cache, d, 'n');
  check('dictionary increment stores the text -3', r.type === 'Hit' && r.valueString() === '-3', describe(r));
  r = await client.dictionaryIncrement(cache, d, 'f1', 1);
  check('dictionary increment of text -> FAILED_PRECONDITION', failedPrecondition(r), describe(r));
  r = await client.dictionaryIncrement(cache, 'dict-ctr', 'hits');
  check('dictionary increment creates the dictionary, default amount 1', r.type === 'Success' && r.value() === 1, describe(r));
  const bf = new Uint8Array([0, 255]);
  const bv = new Uint8Array([1, 0, 2]);
  await client.dictionarySetField(cache, d, bf, bv);
  r = await client.dictionaryGetField(cache, d, bf);
  check('dictionary binary field and value round trip', r.type === 'Hit' && sameBytes(r.valueUint8Array(), bv) &&
        sameBytes(r.fieldUint8Array(), bf), describe(r));
  r = await client.dictionaryLength(cache, d);
  check('dictionary length -> 6', r.type === 'Hit' && r.length() === 6, describe(r));
  checkType('dictionary removeField -> Success', await client.dictionaryRemoveField(cache, d, 'f1'), 'Success');
  checkMiss('dictionary getField of the removed field -> Miss', await client.dictionaryGetField(cache, d, 'f1'));
  checkType('dictionary removeFields (one absent) -> Success', await client.dictionaryRemoveFields(cache, d, ['f2', 'nope', 'f4']), 'Success');
  await client.dictionaryRemoveField(cache, d, bf);
  r = await client.dictionaryFetch(cache, d);
  checkHit('dictionary fetch after the removals -> f3, n', r, x => sortedEntries(x.valueRecord()), [['f3', 'v3'], ['n', '-3']]);
  r = await client.dictionaryLength(cache, d);
  check('dictionary length after the removals -> 2', r.type === 'Hit' && r.length() === 2, describe(r));
  await client.dictionaryRemoveFields(cache, d, ['f3', 'n']);
  checkMiss('dictionary removing the last field deletes it: fetch -> Miss', await client.dictionaryFetch(cache, d));
  checkMiss('dictionary removing the last field deletes it: itemGetType -> Miss', await client.itemGetType(cache, d));
  checkType('dictionary removeField on an absent dictionary -> Success', await client.dictionaryRemoveField(cache, 'no-dict', 'f'), 'Success');
  checkMiss('dictionary fetch absent -> Miss', await client.dictionaryFetch(cache, 'no-dict'));
  checkMiss('dictionary getField absent -> Miss', await client.dictionaryGetField(cache, 'no-dict', 'f'));
  checkMiss('dictionary getFields absent -> Miss', await client.dictionaryGetFields(cache, 'no-dict', ['f', 'g']));
  checkMiss('dictionary length absent -> Miss', await client.dictionaryLength(cache, 'no-dict'));
}

async function sets(client, cache) {
  const s = 'set';
  let r = checkType('set addElement -> Success', await client.setAddElement(cache, s, 'a'), 'Success');
  checkType('set addElements -> Success', await client.setAddElements(cache, s, ['b', 'c', 'a']), 'Success');
  r = await client.setFetch(cache, s);
  checkHit('set fetch -> a, b, c (a once)', r, x => x.valueArray().sort(), ['a', 'b', 'c']);
  r = await client.setLength(cache, s);
  check('set length -> 3', r.type === 'Hit' && r.length() === 3, describe(r));
  r = await client.setContainsElement(cache, s, 'b');
  check('set containsElement member -> true', r.type === 'Hit' && r.containsElement() === true, describe(r));
  r = await client.setContainsElement(cache, s, 'z');
  check('set containsElement non-member -> false', r.type === 'Hit' && r.containsElement() === false, describe(r));
  r = await client.setContainsElements(cache, s, ['a', 'z', 'c']);
  checkHit('set containsElements -> true, false, true', r, x => ['a', 'z', 'c'].map(e => x.containsElements()[e]),
           [true, false, true]);
  r = await client.setSample(cache, s, 2);
  checkHit('set sample 2 -> 2 distinct members', r, x => {
    const v = x.valueArray();
    return v.length === 2 && new Set(v).size === 2 && v.every(e => 'abc'.includes(e));
  }, true);
  r = await client.setSample(cache, s, 10);
  checkHit('set sample over the size -> the whole set', r, x => x.valueArray().sort(), ['a', 'b', 'c']);
  r = await client.setSample(cache, s, 0);
  checkHit('set sample 0 -> no element', r, x => x.valueArray(), []);
  checkType('set removeElement -> Success', await client.setRemoveElement(cache, s, 'a'), 'Success');
  checkType('set removeElements (one absent) -> Success', await client.setRemoveElements(cache, s, ['b', 'z']), 'Success');
  r = await client.setFetch(cache, s);
  checkHit('set fetch after the removals -> c', r, x => x.valueArray(), ['c']);
  const bin = new Uint8Array([0, 255, 0]);
  await client.setAddElement(cache, s, bin);
  r = await client.setContainsElements(cache, s, [bin]);
  check('set binary element is a member', r.type === 'Hit' && Object.values(r.containsElements())[0] === true, describe(r));
  r = await client.setFetch(cache, s);
  check('set binary element round trips through fetch', r.type === 'Hit' && r.valueArrayUint8Array().some(e => sameBytes(e, bin)), describe(r));
  await client.setRemoveElement(cache, s, bin);
  await client.setAddElements(cache, s, ['d', 'e']);
  r = await client.setPop(cache, s, 2);
  const popped = r.type === 'Hit' ? r.valueArray() : [];
  check('set pop 2 -> 2 distinct members', r.type === 'Hit' && popped.length === 2 && new Set(popped).size === 2 &&
        popped.every(e => 'cde'.includes(e)), `${describe(r)} ${json(popped)}`);
  r = await client.setLength(cache, s);
  check('set length after pop -> 1', r.type === 'Hit' && r.length() === 1, describe(r));
  r = await client.setPop(cache, s, 5);
  checkHit('set pop over the size -> the one left', r, x => [...popped, ...x.valueArray()].sort(), ['c', 'd', 'e']);
  checkMiss('set popping the last element deletes it: fetch -> Miss', await client.setFetch(cache, s));
  checkType('set removeElement on an absent set -> Success', await client.setRemoveElement(cache, 'no-set', 'a'), 'Success');
  checkMiss('set fetch absent -> Miss', await client.setFetch(cache, 'no-set'));
  checkMiss('set length absent -> Miss', await client.setLength(cache, 'no-set'));
  checkMiss('set containsElement absent -> Miss', await client.setContainsElement(cache, 'no-set', 'a'));
  checkMiss('set containsElements absent -> Miss', await client.setContainsElements(cache, 'no-set', ['a', 'b']));
  checkMiss('set sample absent -> Miss', await client.setSample(cache, 'no-set', 3));
  checkMiss('set pop absent -> Miss', await client.setPop(cache, 'no-set', 1));
}

async function lists(client, cache) {
  const l = 'list';
  const fetch = opts => client.listFetch(cache, l, opts);
  const values = x => x.valueList();
  let r = await client.listConcatenateBack(cache, l, ['a', 'b', 'c']);
  check('list concatenateBack new list -> length 3', r.type === 'Success' && r.listLength() === 3, describe(r));
  r = await client.listConcatenateFront(cache, l, ['x', 'y']);
  check('list concatenateFront -> length 5', r.type === 'Success' && r.listLength() === 5, describe(r));
  checkHit('list fetch -> x y a b c', await fetch(), values, ['x', 'y', 'a', 'b', 'c']);
  r = await client.listPushBack(cache, l, 'd');
  check('list pushBack -> length 6', r.type === 'Success' && r.listLength() === 6, describe(r));
  r = await client.listPushFront(cache, l, 'w');
  check('list pushFront -> length 7', r.type === 'Success' && r.listLength() === 7, describe(r));
  checkHit('list fetch -> w x y a b c d', await fetch(), values, ['w', 'x', 'y', 'a', 'b', 'c', 'd']);
  checkHit('list fetch [1, 3) -> x y', await fetch({startIndex: 1, endIndex: 3}), values, ['x', 'y']);
  checkHit('list fetch [-2, end) -> c d', await fetch({startIndex: -2}), values, ['c', 'd']);
  checkHit('list fetch [0, -5) -> w x', await fetch({endIndex: -5}), values, ['w', 'x']);
  checkHit('list fetch [2, -2) -> y a b', await fetch({startIndex: 2, endIndex: -2}), values, ['y', 'a', 'b']);
  checkHit('list fetch [5, 100) -> c d', await fetch({startIndex: 5, endIndex: 100}), values, ['c', 'd']);
  r = await client.listLength(cache, l);
  check('list length -> 7', r.type === 'Hit' && r.length() === 7, describe(r));
  r = await client.listPushBack(cache, l, 'e', {truncateFrontToSize: 5});
  check('list pushBack truncating the front to 5 -> length 5', r.type === 'Success' && r.listLength() === 5, describe(r));
  checkHit('list fetch after front truncation -> a b c d e', await fetch(), values, ['a', 'b', 'c', 'd', 'e']);
  r = await client.listPushFront(cache, l, 'v', {truncateBackToSize: 4});
  check('list pushFront truncating the back to 4 -> length 4', r.type === 'Success' && r.listLength() === 4, describe(r));
  checkHit('list fetch after back truncation -> v a b c', await fetch(), values, ['v', 'a', 'b', 'c']);
  r = await client.listConcatenateBack(cache, l, ['p', 'q'], {truncateFrontToSize: 5});
  check('list concatenateBack truncating the front to 5 -> length 5', r.type === 'Success' && r.listLength() === 5, describe(r));
  checkHit('list fetch -> a b c p q', await fetch(), values, ['a', 'b', 'c', 'p', 'q']);
  r = await client.listConcatenateFront(cache, l, ['m', 'n'], {truncateBackToSize: 3});
  check('list concatenateFront truncating the back to 3 -> length 3', r.type === 'Success' && r.listLength() === 3, describe(r));
  checkHit('list fetch -> m n a', await fetch(), values, ['m', 'n', 'a']);
  checkMiss('list fetch of a slice selecting nothing -> Miss', await fetch({startIndex: 10, endIndex: 20}));
  r = await client.listConcatenateBack(cache, 'list-cap', ['1', '2', '3', '4'], {truncateFrontToSize: 2});
  check('list concatenateBack of more values than the cap -> length 2', r.type === 'Success' && r.listLength() === 2, describe(r));
  checkHit('list the cap keeps the last new values -> 3 4', await client.listFetch(cache, 'list-cap'), values, ['3', '4']);
  r = await client.listConcatenateFront(cache, 'list-cap', ['a', 'b', 'c'], {truncateBackToSize: 2});
  check('list concatenateFront of more values than the cap -> length 2', r.type === 'Success' && r.listLength() === 2, describe(r));
  checkHit('list the cap keeps the first new values -> a b', await client.listFetch(cache, 'list-cap'), values, ['a', 'b']);
  r = await client.listPopFront(cache, l);
  check('list popFront -> m', r.type === 'Hit' && r.valueString() === 'm', describe(r));
  r = await client.listPopBack(cache, l);
  check('list popBack -> a', r.type === 'Hit' && r.valueString() === 'a', describe(r));
  await client.listConcatenateBack(cache, l, ['a', 'x', 'a', 'y', 'a']);
  checkType('list removeValue -> Success', await client.listRemoveValue(cache, l, 'a'), 'Success');
  checkHit('list removeValue removed every a', await fetch(), values, ['n', 'x', 'y']);
  checkType('list removeValue of an absent value -> Success', await client.listRemoveValue(cache, l, 'zz'), 'Success');
  await client.listConcatenateBack(cache, l, ['1', '2', '3']);
  checkType('list retain [1, -1) -> Success', await client.listRetain(cache, l, {startIndex: 1, endIndex: -1}), 'Success');
  checkHit('list fetch after retain [1, -1) -> x y 1 2', await fetch(), values, ['x', 'y', '1', '2']);
  await client.listRetain(cache, l, {startIndex: 2});
  checkHit('list fetch after retain [2, end) -> 1 2', await fetch(), values, ['1', '2']);
  r = await client.listLength(cache, l);
  check('list length after retain -> 2', r.type === 'Hit' && r.length() === 2, describe(r));
  const bin = new Uint8Array([0, 1, 255]);
  await client.listPushBack(cache, l, bin);
  r = await client.listPopBack(cache, l);
  check('list binary value round trip', r.type === 'Hit' && sameBytes(r.valueUint8Array(), bin), describe(r));
  await client.listPopBack(cache, l);
  await client.listPopBack(cache, l);
  checkMiss('list popping the last value deletes it: fetch -> Miss', await fetch());
  checkMiss('list popping the last value deletes it: itemGetType -> Miss', await client.itemGetType(cache, l));
  checkType('list removeValue on an absent list -> Success', await client.listRemoveValue(cache, 'no-list', 'a'), 'Success');
  checkType('list retain on an absent list -> Success', await client.listRetain(cache, 'no-list', {startIndex: 0, endIndex: 1}), 'Success');
  checkMiss('list fetch absent -> Miss', await client.listFetch(cache, 'no-list'));
  checkMiss('list length absent -> Miss', await client.listLength(cache, 'no-list'));
  checkMiss('list popFront absent -> Miss', await client.listPopFront(cache, 'no-list'));
  checkMiss('list popBack absent -> Miss', await client.listPopBack(cache, 'no-list'));
}

async function sortedSets(client, cache) {
  const z = 'zset';
  const pairs = x => x.valueArray().map(e => [e.value, e.score]);
  const names = x => x.valueArray().map(e => e.value);
  const byRank = opts => client.sortedSetFetchByRank(cache, z, opts);
  const byScore = opts => client.sortedSetFetchByScore(cache, z, opts);
  const desc = SortedSetOrder.Descending;
  let r = checkType('sorted set putElement -> Success', await client.sortedSetPutElement(cache, z, 'a', 1), 'Success');
  checkType('sorted set putElements -> Success', await client.sortedSetPutElements(cache, z, new Map([['b', 2], ['c', 3], ['d', 4], ['e', 0.5]])), 'Success');
  checkHit('sorted set fetchByRank -> all, ascending, with scores', await byRank(), pairs,
           [['e', 0.5], ['a', 1], ['b', 2], ['c', 3], ['d', 4]]);
  checkHit('sorted set fetchByRank [1, 3) -> a b', await byRank({startRank: 1, endRank: 3}), names, ['a', 'b']);
  checkHit('sorted set fetchByRank descending [0, 2) -> d c', await byRank({order: desc, endRank: 2}), names, ['d', 'c']);
  checkHit('sorted set fetchByRank [-2, end) -> c d', await byRank({startRank: -2}), names, ['c', 'd']);
  checkHit('sorted set fetchByRank descending [1, -1) -> c b a', await byRank({order: desc, startRank: 1, endRank: -1}),
           names, ['c', 'b', 'a']);
  checkHit('sorted set fetchByRank past the end -> Hit, empty', await byRank({startRank: 10}), names, []);
  checkHit('sorted set fetchByScore [1, 3] -> a b c', await byScore({minScore: 1, maxScore: 3}), pairs,
           [['a', 1], ['b', 2], ['c', 3]]);
  checkHit('sorted set fetchByScore [1, 3] descending -> c b a', await byScore({minScore: 1, maxScore: 3, order: desc}),
           names, ['c', 'b', 'a']);
  checkHit('sorted set fetchByScore offset 1 count 2 -> a b', await byScore({offset: 1, count: 2}), names, ['a', 'b']);
  checkHit('sorted set fetchByScore [2, inf) descending offset 1 count 5 -> c b',
           await byScore({minScore: 2, order: desc, offset: 1, count: 5}), names, ['c', 'b']);
  checkHit('sorted set fetchByScore (-inf, 0.5] -> e', await byScore({maxScore: 0.5}), names, ['e']);
  r = await client.sortedSetGetScore(cache, z, 'c');
  check('sorted set getScore -> 3', r.type === 'Hit' && r.score() === 3, describe(r));
  checkMiss('sorted set getScore of an absent element -> Miss', await client.sortedSetGetScore(cache, z, 'nope'));
  r = await client.sortedSetGetScores(cache, z, ['a', 'nope', 'd']);
  checkHit('sorted set getScores -> 1, miss, 4 in order', r,
           x => x.responses().map(p => (p.type === 'Hit' ? [p.valueString(), p.score()] : [p.valueString(), p.type])),
           [['a', 1], ['nope', 'Miss'], ['d', 4]]);
  r = await client.sortedSetGetRank(cache, z, 'a');
  check('sorted set getRank ascending -> 1', r.type === 'Hit' && r.rank() === 1, describe(r));
  r = await client.sortedSetGetRank(cache, z, 'a', {order: desc});
  check('sorted set getRank descending -> 3', r.type === 'Hit' && r.rank() === 3, describe(r));
  checkMiss('sorted set getRank of an absent element -> Miss', await client.sortedSetGetRank(cache, z, 'nope'));
  r = await client.sortedSetIncrementScore(cache, z, 'a', 10);
  check('sorted set incrementScore -> 11', r.type === 'Success' && r.score() === 11, describe(r));
  r = await client.sortedSetIncrementScore(cache, z, 'f', 2.5);
  check('sorted set incrementScore of a new element -> 2.5', r.type === 'Success' && r.score() === 2.5, describe(r));
  r = await client.sortedSetIncrementScore(cache, z, 'f');
  check('sorted set incrementScore default amount 1 -> 3.5', r.type === 'Success' && r.score() === 3.5, describe(r));
  r = await client.sortedSetGetRank(cache, z, 'a');
  check('sorted set getRank after the increment -> 5', r.type === 'Hit' && r.rank() === 5, describe(r));
  await client.sortedSetPutElement(cache, z, 'b', -7);
  r = await client.sortedSetGetScore(cache, z, 'b');
  check('sorted set putElement replaces a score', r.type === 'Hit' && r.score() === -7, describe(r));
  await client.sortedSetPutElements(cache, z, [['g', 3], ['bb', 3]]);
  checkHit('sorted set equal scores order by value bytes', await byScore({minScore: 3, maxScore: 3}), names,
           ['bb', 'c', 'g']);
  checkHit('sorted set equal scores, descending, reverse', await byScore({minScore: 3, maxScore: 3, order: desc}), names,
           ['g', 'c', 'bb']);
  checkHit('sorted set fetchByRank -> the whole order', await byRank(), pairs,
           [['b', -7], ['e', 0.5], ['bb', 3], ['c', 3], ['g', 3], ['f', 3.5], ['d', 4], ['a', 11]]);
  r = await client.sortedSetLength(cache, z);
  check('sorted set length -> 8', r.type === 'Hit' && r.length() === 8, describe(r));
  r = await client.sortedSetLengthByScore(cache, z, {minScore: 3, maxScore: 4});
  check('sorted set lengthByScore [3, 4] -> 5', r.type === 'Hit' && r.length() === 5, describe(r));
  r = await client.sortedSetLengthByScore(cache, z, {minScore: 3.6});
  check('sorted set lengthByScore [3.6, inf) -> 2', r.type === 'Hit' && r.length() === 2, describe(r));
  // The SDK reads a found length of 0 as a Miss.
  checkType('sorted set lengthByScore matching nothing -> Miss', await client.sortedSetLengthByScore(cache, z, {maxScore: -100}), 'Miss');
  checkType('sorted set removeElement -> Success', await client.sortedSetRemoveElement(cache, z, 'a'), 'Success');
  checkType('sorted set removeElements (one absent) -> Success', await client.sortedSetRemoveElements(cache, z, ['b', 'nope', 'bb']), 'Success');
  checkHit('sorted set fetchByRank after the removals', await byRank(), names, ['e', 'c', 'g', 'f', 'd']);
  const bin = new Uint8Array([0, 255, 1]);
  await client.sortedSetPutElement(cache, z, bin, 9.25);
  r = await client.sortedSetGetScore(cache, z, bin);
  check('sorted set binary value round trip', r.type === 'Hit' && r.score() === 9.25, describe(r));
  r = await byRank({order: desc, endRank: 1});
  check('sorted set binary value fetched', r.type === 'Hit' && sameBytes(r.valueArrayUint8Elements()[0].value, bin), describe(r));
  await client.sortedSetRemoveElements(cache, z, ['e', 'c', 'g', 'f', 'd', bin].map(e => (typeof e === 'string' ? Buffer.from(e) : e)));
  checkMiss('sorted set removing the last element deletes it: fetch -> Miss', await byRank());

  await client.sortedSetPutElements(cache, 'z1', {a: 1, b: 2});
  await client.sortedSetPutElements(cache, 'z2', {b: 3, c: 4});
  const sources = [{sortedSetName: 'z1', weight: 1}, {sortedSetName: 'z2', weight: 2}];
  r = await client.sortedSetUnionStore(cache, 'zu', sources);
  check('sorted set unionStore (SUM) -> length 3', r.type === 'Success' && r.length() === 3, describe(r));
  checkHit('sorted set unionStore SUM of weighted scores', await client.sortedSetFetchByRank(cache, 'zu'), pairs,
           [['a', 1], ['b', 8], ['c', 8]]);
  await client.sortedSetUnionStore(cache, 'zu', sources, {aggregate: SortedSetAggregate.MIN});
  checkHit('sorted set unionStore MIN replaces the destination', await client.sortedSetFetchByRank(cache, 'zu'), pairs,
           [['a', 1], ['b', 2], ['c', 8]]);
  await client.sortedSetUnionStore(cache, 'zu', sources, {aggregate: SortedSetAggregate.MAX});
  checkHit('sorted set unionStore MAX', await client.sortedSetFetchByRank(cache, 'zu'), pairs,
           [['a', 1], ['b', 6], ['c', 8]]);
  r = await client.sortedSetUnionStore(cache, 'zu2', [{sortedSetName: 'z1', weight: -1}, {sortedSetName: 'no-zset', weight: 1}]);
  check('sorted set unionStore with an absent source -> length 2', r.type === 'Success' && r.length() === 2, describe(r));
  checkHit('sorted set unionStore negative weight', await client.sortedSetFetchByRank(cache, 'zu2'), pairs,
           [['b', -2], ['a', -1]]);
  r = await client.sortedSetUnionStore(cache, 'zu2', [{sortedSetName: 'no-zset', weight: 1}]);
  check('sorted set unionStore of nothing -> length 0', r.type === 'Success' && r.length() === 0, describe(r));
  checkMiss('sorted set unionStore of nothing deletes the destination', await client.sortedSetFetchByRank(cache, 'zu2'));

  checkType('sorted set removeElement on an absent set -> Success', await client.sortedSetRemoveElement(cache, 'no-zset', 'a'), 'Success');
  checkMiss('sorted set fetchByRank absent -> Miss', await client.sortedSetFetchByRank(cache, 'no-zset'));
  checkMiss('sorted set fetchByScore absent -> Miss', await client.sortedSetFetchByScore(cache, 'no-zset'));
  checkMiss('sorted set getScore absent -> Miss', await client.sortedSetGetScore(cache, 'no-zset', 'a'));
  checkMiss('sorted set getScores absent -> Miss', await client.sortedSetGetScores(cache, 'no-zset', ['a', 'b']));
  checkMiss('sorted set getRank absent -> Miss', await client.sortedSetGetRank(cache, 'no-zset', 'a'));
  checkMiss('sorted set length absent -> Miss', await client.sortedSetLength(cache, 'no-zset'));
  checkMiss('sorted set lengthByScore absent -> Miss', await client.sortedSetLengthByScore(cache, 'no-zset'));
}

// What every collection shares: itemGetType, CollectionTtl, expiry, and
// the type mismatch with a key of another type.
async function collectionRules(client, cache) {
  const families = {
    dictionary: {
      type: ItemType.DICTIONARY,
      write: (name, ttl) => client.dictionarySetField(cache, name, 'f', 'v', {ttl}),
      read: name => client.dictionaryFetch(cache, name),
    },
    set: {
      type: ItemType.SET,
      write: (name, ttl) => client.setAddElement(cache, name, 'e', {ttl}),
      read: name => client.setFetch(cache, name),
    },
    list: {
      type: ItemType.LIST,
      write: (name, ttl) => client.listPushBack(cache, name, 'v', {ttl}),
      read: name => client.listFetch(cache, name),
    },
    'sorted set': {
      type: ItemType.SORTED_SET,
      write: (name, ttl) => client.sortedSetPutElement(cache, name, 'e', 1, {ttl}),
      read: name => client.sortedSetFetchByRank(cache, name),
    },
  };
  const ttlWithin = (r, lo, hi) => r.type === 'Hit' && r.remainingTtlMillis() > lo && r.remainingTtlMillis() <= hi;
  const showTtl = r => (r.type === 'Hit' ? `${r.remainingTtlMillis()} ms` : describe(r));
  await client.set(cache, 'scalar', 'v');
  const names = Object.keys(families);
  for (const fam of names) {
    const {type, write} = families[fam];
    const key = `ttl-${fam}`;
    let r = checkType(`${fam} write with CollectionTtl.of(10) -> Success`, await write(key, CollectionTtl.of(10)), 'Success');
    r = await client.itemGetType(cache, key);
    check(`${fam} itemGetType -> ${ItemType[type]}`, r.type === 'Hit' && r.itemType() === type, describe(r));
    r = await client.itemGetTtl(cache, key);
    check(`${fam} created with a 10 s CollectionTtl -> ~10 s`, ttlWithin(r, 9000, 10000), showTtl(r));
    await write(key, CollectionTtl.of(100).withNoRefreshTtlOnUpdates());
    r = await client.itemGetTtl(cache, key);
    check(`${fam} write without refresh keeps ~10 s`, ttlWithin(r, 9000, 10000), showTtl(r));
    await write(key, CollectionTtl.of(100));
    r = await client.itemGetTtl(cache, key);
    check(`${fam} write with refresh -> ~100 s`, ttlWithin(r, 90000, 100000), showTtl(r));
    await write(key);
    r = await client.itemGetTtl(cache, key);
    check(`${fam} default CollectionTtl refreshes to the client's 60 s`, ttlWithin(r, 50000, 60000), showTtl(r));
  }
  for (const [i, fam] of names.entries()) {
    const {write, read} = families[fam];
    let r = await write('scalar');
    check(`${fam} write on a scalar key -> FAILED_PRECONDITION`, failedPrecondition(r), describe(r));
    r = await read('scalar');
    check(`${fam} read of a scalar key -> FAILED_PRECONDITION`, failedPrecondition(r), describe(r));
    const other = names[(i + 1) % names.length];
    r = await write(`ttl-${other}`);
    check(`${fam} write on a ${other} -> FAILED_PRECONDITION`, failedPrecondition(r), describe(r));
    r = await read(`ttl-${other}`);
    check(`${fam} read of a ${other} -> FAILED_PRECONDITION`, failedPrecondition(r), describe(r));
  }
  for (const fam of names) {
    const key = `ttl-${fam}`;
    let r = await client.get(cache, key);
    check(`${fam} get of one -> FAILED_PRECONDITION`, failedPrecondition(r), describe(r));
    checkType(`${fam} delete -> Success`, await client.delete(cache, key), 'Success');
    checkMiss(`${fam} read after delete -> Miss`, await families[fam].read(key));
  }
  for (const fam of names) await families[fam].write(`short-${fam}`, CollectionTtl.of(1));
  await sleep(1100);
  for (const fam of names) checkMiss(`${fam} expired after its 1 s CollectionTtl -> Miss`, await families[fam].read(`short-${fam}`));
}

async function collections(client, cache) {
  await dictionaries(client, cache);
  await sets(client, cache);
  await lists(client, cache);
  await sortedSets(client, cache);
  await collectionRules(client, cache);
}

run(main);
