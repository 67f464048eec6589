// Disposable tokens through the official Node.js SDK: its AuthClient asks
// momento-local for tokens, and a CacheClient made from each does what the
// scope allows and gets PERMISSION_ERROR ("Insufficient permissions") for
// the rest; an expired token gets AUTHENTICATION_ERROR, a request the
// service refuses INVALID_ARGUMENT_ERROR.
'use strict';
const {AllCaches, CacheRole, DisposableTokenScopes, ExpiresIn, MomentoErrorCode} = require('@gomomento/sdk');
const {authSuite, check, describe, isError, localClient, run, sleep} = require('./harness');

const cacheName = 'tokens-interop';

run(async () => {
  const {host, port, endpoint, admin, auth} = await authSuite(cacheName);
  await admin.set(cacheName, 'pet-cat', 'meow');
  await admin.set(cacheName, 'cow', 'moo');

  const prefix = await auth.generateDisposableToken(
    DisposableTokenScopes.cacheKeyPrefixReadOnly(cacheName, 'pet'), ExpiresIn.seconds(60),
    {tokenId: 'interop'});
  check('generateDisposableToken succeeds', prefix.type === 'Success', describe(prefix));
  if (prefix.type !== 'Success') return;
  check('the token names the server it works against', prefix.endpoint === endpoint, prefix.endpoint);
  check('expiresAt is about a minute away',
    Math.abs(prefix.expiresAt.epoch() - (Date.now() / 1000 + 60)) < 5);
  const reader = await localClient(host, port, prefix.authToken);
  const hit = await reader.get(cacheName, 'pet-cat');
  check('read-only prefix token reads a key under its prefix',
    hit.type === 'Hit' && hit.valueString() === 'meow', describe(hit));
  const cow = await reader.get(cacheName, 'cow');
  check('... and is refused another key',
    isError(cow, MomentoErrorCode.PERMISSION_ERROR) && cow.message().includes('Insufficient permissions'),
    describe(cow));
  const write = await reader.set(cacheName, 'pet-dog', 'woof');
  check('... and is refused a write', isError(write, MomentoErrorCode.PERMISSION_ERROR), describe(write));
  const control = await reader.createCache('another');
  check('... and is refused the control plane', isError(control, MomentoErrorCode.PERMISSION_ERROR),
    describe(control));

  const keyToken = await auth.generateDisposableToken(
    {permissions: [{role: CacheRole.WriteOnly, cache: AllCaches, item: {key: 'cow'}}]},
    ExpiresIn.seconds(60));
  check('a write-only key token is issued', keyToken.type === 'Success', describe(keyToken));
  if (keyToken.type === 'Success') {
    const writer = await localClient(host, port, keyToken.authToken);
    const set = await writer.set(cacheName, 'cow', 'moo2');
    check('write-only key token writes its key', set.type === 'Success', describe(set));
    const get = await writer.get(cacheName, 'cow');
    check('... but may not read it', isError(get, MomentoErrorCode.PERMISSION_ERROR), describe(get));
    const other = await writer.set(cacheName, 'pig', 'oink');
    check('... nor write another key', isError(other, MomentoErrorCode.PERMISSION_ERROR), describe(other));
    writer.close();
  }

  // No one-hour cap since February 2026 (the service and every SDK).
  const day = await auth.generateDisposableToken(
    DisposableTokenScopes.cacheKeyReadWrite(cacheName, 'k'), ExpiresIn.days(30));
  check('a 30-day token is issued', day.type === 'Success', describe(day));
  if (day.type === 'Success') {
    const lives = day.expiresAt.epoch() - Math.floor(Date.now() / 1000);
    check('... valid for 30 days', lives > 30 * 86400 - 60 && lives <= 30 * 86400 + 1, String(lives));
  }
  const empty = await auth.generateDisposableToken({permissions: []}, ExpiresIn.seconds(60));
  check('an empty scope is INVALID_ARGUMENT', isError(empty, MomentoErrorCode.INVALID_ARGUMENT_ERROR),
    describe(empty));

  const short = await auth.generateDisposableToken(
    DisposableTokenScopes.cacheKeyReadWrite(cacheName, 'pet-cat'), ExpiresIn.seconds(1));
  check('a one-second token is issued', short.type === 'Success', describe(short));
  if (short.type === 'Success') {
    const brief = await localClient(host, port, short.authToken);
    // valid_until is a whole second: wait past the next one.
    await sleep(2100);
    const late = await brief.get(cacheName, 'pet-cat');
    check('an expired token is AUTHENTICATION_ERROR',
      isError(late, MomentoErrorCode.AUTHENTICATION_ERROR), describe(late));
    brief.close();
  }

  reader.close();
  admin.close();
});
