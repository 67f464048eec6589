// What interop.js, topics.js, cross.js, tokens.js and api_keys.js share:
// TAP-like checks, a readable form of an SDK response, clients for
// momento-local (cache, topics, auth; its own credentials or a key it
// issued), the key and token suites' start, a bounded wait, and the closing
// "N passed, M failed" line with the exit status.
'use strict';
const {
  AuthClient, AuthClientConfigurations, CacheClient, Configurations, CredentialProvider, TopicClient,
  TopicConfigurations,
} = require('@gomomento/sdk');

let passed = 0;
let failed = 0;

function check(name, cond, detail) {
  if (cond) passed++;
  else failed++;
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}${!cond && detail ? ` (${detail})` : ''}`);
}

function describe(resp) {
  return resp.type === 'Error' ? `Error ${resp.errorCode()}: ${resp.message()}` : resp.type;
}

// Whether `resp` is an error with this MomentoErrorCode.
function isError(resp, code) {
  return resp.type === 'Error' && resp.errorCode() === code;
}

// Credentials for momento-local: its own, or a key or token its AuthClient
// issued (`apiKey`). Those have a disposable token's form (base64 of
// {endpoint, api_key}), which the SDK decodes itself; a local server needs
// the endpoints named, in plaintext.
function localCredentials(host, port, apiKey) {
  if (apiKey === undefined) return CredentialProvider.forMomentoLocal({hostname: host, port: Number(port)});
  const endpoint = `${host}:${port}`;
  return CredentialProvider.fromDisposableToken({
    apiKey,
    endpointOverrides: {
      cacheEndpoint: endpoint, controlEndpoint: endpoint, tokenEndpoint: endpoint,
      secureConnection: false,
    },
  });
}

function localClient(host, port, apiKey) {
  return CacheClient.create({
    configuration: Configurations.Laptop.v1(),
    credentialProvider: localCredentials(host, port, apiKey),
    defaultTtlSeconds: 60,
  });
}

function localAuthClient(host, port, apiKey) {
  return new AuthClient({
    configuration: AuthClientConfigurations.Default.latest(),
    credentialProvider: localCredentials(host, port, apiKey),
  });
}

// A TopicClient for momento-local, built as localClient builds its
// CacheClient (same credentials, plaintext loopback).
function localTopicClient(host, port) {
  return new TopicClient({
    configuration: TopicConfigurations.Default.latest(),
    credentialProvider: localCredentials(host, port),
  });
}

// What the key and token suites start from: the command line's HOST and
// PORT, the endpoint they name, a client with the server's own credentials
// (`admin`) that has made cache `cacheName`, and an AuthClient (`auth`).
async function authSuite(cacheName) {
  const [host, port] = process.argv.slice(2);
  const admin = await localClient(host, port);
  await admin.createCache(cacheName);
  return {host, port, endpoint: `${host}:${port}`, admin, auth: localAuthClient(host, port)};
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// Polls `cond` every 10 ms until it holds or `ms` have passed; returns
// whether it held. Every wait of the suites is bounded so.
async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() >= end) return false;
    await sleep(10);
  }
  return true;
}

// The official SDK gives a subscription's first stream the client's
// deadline (5 s), which then ends that stream, whatever the server does: the
// SDK reports a lost connection and resubscribes. `lossTimes` (ms since the
// subscribe call) split so: those before the deadline are real breaks.
const SDK_FIRST_STREAM_DEADLINE = 5000;
function earlyLosses(lossTimes) {
  const late = lossTimes.filter(t => t >= SDK_FIRST_STREAM_DEADLINE - 50);
  if (late.length) console.log(`# ${late.length} lost connection(s) at the SDK's own ${SDK_FIRST_STREAM_DEADLINE} ms first-stream deadline, not counted`);
  return lossTimes.length - late.length;
}

// Runs `main`, counts an exception as a failure, prints the tally and exits
// non-zero unless something passed and nothing failed.
function run(main) {
  main()
    .catch(e => {
      failed++;
      console.log(`not ok - unexpected exception: ${e && e.stack ? e.stack : e}`);
    })
    .finally(() => {
      console.log(`${passed} passed, ${failed} failed`);
      process.exit(failed === 0 && passed > 0 ? 0 : 1);
    });
}

module.exports = {
  authSuite, check, describe, earlyLosses, isError, localAuthClient, localClient, localTopicClient, run, sleep,
  waitFor,
};
