// The seed's load pattern (Momento's Node.js load-gen.ts) on Momento's
// official Node.js SDK, for bench/batching.sh's side-by-side CPU figure:
// CONCURRENCY async workers, each setting a fresh key ("worker<i>operation<n>")
// to a 100-byte value and then getting it, with no rate cap (as load-gen
// --rps 0), against momento-local at HOST:PORT, cache "load-gen", for SECONDS.
// Prints RESULT ops= ops_per_s= cpu_us_per_op= (the whole process's CPU,
// process.cpuUsage(), over the measured run) and exits non-zero when a
// request failed or a get did not return its own value.
// Usage: node bench/node_loadgen.js HOST:PORT CONCURRENCY SECONDS
'use strict';
const path = require('path');
const {CacheClient, Configurations, CredentialProvider} =
  require(path.join(__dirname, '../tests/interop/node_modules/@gomomento/sdk'));

async function main() {
  const [endpoint, concurrencyArg, secondsArg] = process.argv.slice(2);
  const sep = endpoint ? endpoint.lastIndexOf(':') : -1;
  const concurrency = Number(concurrencyArg);
  const seconds = Number(secondsArg);
  if (sep < 0 || !(concurrency >= 1) || !(seconds > 0 && seconds <= 600)) {
    console.error('usage: node_loadgen.js HOST:PORT CONCURRENCY SECONDS (at most 600)');
    process.exit(2);
  }
  const client = await CacheClient.create({
    configuration: Configurations.Laptop.v1().withClientTimeoutMillis(30000),
    credentialProvider: CredentialProvider.forMomentoLocal({
      hostname: endpoint.slice(0, sep), port: Number(endpoint.slice(sep + 1))}),
    defaultTtlSeconds: 60,
  });
  const cache = 'load-gen';
  const pad = 'x'.repeat(100);
  let ops = 0;
  let failures = 0;
  let firstFailure = '';
  const fail = why => {
    failures++;
    if (!firstFailure) firstFailure = why;
  };
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const end = t0 + BigInt(Math.round(seconds * 1e9));

  // One worker: set, then get, then the next key, until the time is up
  // (the seed's issueAsyncSetGet loop with its rate limit removed).
  async function worker(id) {
    for (let n = 0; process.hrtime.bigint() < end; n++) {
      const key = `worker${id}operation${n}`;
      const value = (key + pad).slice(0, 100); // the key's own value, 100 bytes
      const s = await client.set(cache, key, value);
      ops++;
      if (s.type !== 'Success') fail(`set: ${s.type} ${s.message ? s.message() : ''}`);
      const g = await client.get(cache, key);
      ops++;
      if (g.type !== 'Hit' || g.valueString() !== value) fail(`get: ${g.type}`);
    }
  }
  await Promise.all(Array.from({length: concurrency}, (_, i) => worker(i)));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuUs = cpu.user + cpu.system;
  client.close();
  console.log(`RESULT ops=${ops} ops_per_s=${Math.round(ops / wall)} ` +
    `cpu_us_per_op=${(cpuUs / ops).toFixed(2)} failures=${failures}`);
  if (failures) {
    console.error(`${failures} failures; first: ${firstFailure}`);
    process.exit(1);
  }
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
