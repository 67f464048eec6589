// What interop.js and cross.js share: TAP-like checks, a readable form of an
// SDK response, a client for momento-local, and the closing
// "N passed, M failed" line with the exit status.
'use strict';
const {CacheClient, Configurations, CredentialProvider} = require('@gomomento/sdk');

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

function localClient(host, port) {
  return CacheClient.create({
    configuration: Configurations.Laptop.v1(),
    credentialProvider: CredentialProvider.forMomentoLocal({hostname: host, port: Number(port)}),
    defaultTtlSeconds: 60,
  });
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

module.exports = {check, describe, localClient, run};
