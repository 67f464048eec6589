// API keys through the official Node.js SDK: its AuthClient asks
// momento-local for keys (AllDataReadWrite, super user, never expiring), a
// CacheClient made from each does what the scope allows and gets
// PERMISSION_ERROR for the rest, and refreshApiKey (the client's own key,
// as the SDK sends it) returns a new pair after which the old key gets
// AUTHENTICATION_ERROR.
'use strict';
const {AllDataReadWrite, ExpiresIn, MomentoErrorCode} = require('@gomomento/sdk');
const {InternalSuperUserPermissions} = require('@gomomento/sdk-core/dist/src/internal/utils/auth');
const {authSuite, check, describe, isError, localAuthClient, localClient, run} = require('./harness');

const cacheName = 'api-keys-interop';

run(async () => {
  const {host, port, endpoint, auth} = await authSuite(cacheName);

  const data = await auth.generateApiKey(AllDataReadWrite, ExpiresIn.seconds(60));
  check('generateApiKey(AllDataReadWrite) succeeds', data.type === 'Success', describe(data));
  if (data.type !== 'Success') return;
  check('... with a refresh token', data.refreshToken.length > 0);
  check('... naming the server', data.endpoint === endpoint, data.endpoint);
  check('... expiring in about a minute',
    Math.abs(data.expiresAt.epoch() - (Date.now() / 1000 + 60)) < 5);
  const user = await localClient(host, port, data.apiKey);
  const set = await user.set(cacheName, 'k', 'v');
  check('an AllDataReadWrite key writes', set.type === 'Success', describe(set));
  const create = await user.createCache('api-keys-may-not');
  check('... and may not create a cache', isError(create, MomentoErrorCode.PERMISSION_ERROR),
    describe(create));
  const more = await localAuthClient(host, port, data.apiKey).generateApiKey(AllDataReadWrite, ExpiresIn.seconds(60));
  check('... nor make keys', more.type === 'Error', describe(more));

  const refreshed = await localAuthClient(host, port, data.apiKey).refreshApiKey(data.refreshToken);
  check('refreshApiKey succeeds', refreshed.type === 'Success', describe(refreshed));
  if (refreshed.type !== 'Success') return;
  check('... with a new key and refresh token',
    refreshed.apiKey !== data.apiKey && refreshed.refreshToken !== data.refreshToken);
  const renewed = await localClient(host, port, refreshed.apiKey);
  const get = await renewed.get(cacheName, 'k');
  check('the new key reads', get.type === 'Hit', describe(get));
  const old = await user.get(cacheName, 'k');
  check('the old key is refused', isError(old, MomentoErrorCode.AUTHENTICATION_ERROR),
    describe(old));
  const again = await localAuthClient(host, port, data.apiKey).refreshApiKey(data.refreshToken);
  check('... and cannot be refreshed again',
    isError(again, MomentoErrorCode.AUTHENTICATION_ERROR), describe(again));

  const su = await auth.generateApiKey(new InternalSuperUserPermissions(), ExpiresIn.never());
  check('generateApiKey(super user, never) succeeds', su.type === 'Success', describe(su));
  if (su.type !== 'Success') return;
  check('... never expiring', !su.expiresAt.doesExpire());
  const root = await localClient(host, port, su.apiKey);
  const made = await root.createCache('api-keys-super-user');
  check('a super user creates caches', made.type === 'Success', describe(made));
  const su2 = await localAuthClient(host, port, su.apiKey).generateApiKey(new InternalSuperUserPermissions(),
    ExpiresIn.seconds(60));
  check('... makes no super user', isError(su2, MomentoErrorCode.PERMISSION_ERROR), describe(su2));
  const adrw = await localAuthClient(host, port, su.apiKey).generateApiKey(AllDataReadWrite, ExpiresIn.seconds(60));
  check('... but makes AllDataReadWrite keys', adrw.type === 'Success', describe(adrw));
});
