// The Node SDK's half of the compression cross-check with libmomento
// (compression_check.c), run by compression.sh:
//   node compression.js verify-c HOST PORT  reads what compression_check
//                                           write stored, compressed by C
//   node compression.js write    HOST PORT  stores values compressed by the
//                                           Node SDK for compression_check read
// One line per check, then "N passed, M failed".
//
// zstd is Momento's published compression extension,
// @gomomento/sdk-nodejs-compression 0.75.0 (CompressorFactory.default() is
// zstd there, through @mongodb-js/zstd). The gzip extension
// (@gomomento/sdk-nodejs-compression's later gzip form) is not published;
// GzipCompressor below does what its source does: Node's zlib.gzip at
// zlib's default / best-speed / best-compression level for Balanced /
// Fastest / SmallestSize, and gunzip for values starting 1f 8b.
'use strict';
const zlib = require('zlib');
const {CacheClient, CompressionLevel, Configurations, CredentialProvider} = require('@gomomento/sdk');
const {CompressorFactory} = require('@gomomento/sdk-nodejs-compression');
const {check, describe: show, run} = require('./harness');

const [mode, host, port] = process.argv.slice(2);
const CACHE = 'compression';

class GzipCompressor {
  async compress(level, value) {
    const zlevel = level === CompressionLevel.Fastest ? zlib.constants.Z_BEST_SPEED
      : level === CompressionLevel.SmallestSize ? zlib.constants.Z_BEST_COMPRESSION
        : zlib.constants.Z_DEFAULT_COMPRESSION;
    return new Uint8Array(zlib.gzipSync(Buffer.from(value), {level: zlevel}));
  }

  async decompressIfCompressed(value) {
    if (value.length < 2 || value[0] !== 0x1f || value[1] !== 0x8b) return value;
    return new Uint8Array(zlib.gunzipSync(Buffer.from(value)));
  }
}

const compressors = {gzip: new GzipCompressor(), zstd: CompressorFactory.default()};
const levels = {
  fastest: CompressionLevel.Fastest,
  balanced: CompressionLevel.Balanced,
  smallest: CompressionLevel.SmallestSize,
};
const magic = {gzip: '1f8b', zstd: '28b52ffd'};

// The value both sides store under a tag: compressible text, then every
// byte value; compression_check.c builds the same bytes.
function valueFor(tag) {
  const text = Buffer.from(`${tag}:` + 'compressible text, '.repeat(2000));
  const bytes = Buffer.alloc(256);
  for (let i = 0; i < 256; i++) bytes[i] = i;
  return Buffer.concat([text, bytes]);
}

function client(algo, level) {
  let configuration = Configurations.Laptop.v1();
  if (algo) {
    configuration = configuration.withCompressionStrategy({
      compressorFactory: compressors[algo],
      compressionLevel: level,
    });
  }
  return CacheClient.create({
    configuration,
    credentialProvider: CredentialProvider.forMomentoLocal({hostname: host, port: Number(port)}),
    defaultTtlSeconds: 60,
  });
}

// What a client without a compressor reads: the stored bytes.
async function stored(plain, key) {
  const r = await plain.get(CACHE, key);
  return r.type === 'Hit' ? Buffer.from(r.valueUint8Array()) : null;
}

async function verifyC() {
  const plain = await client(null);
  for (const algo of ['gzip', 'zstd']) {
    const reader = await client(algo, CompressionLevel.Balanced);
    for (const level of Object.keys(levels)) {
      const key = `c-${algo}-${level}`;
      const want = valueFor(key);
      const raw = await stored(plain, key);
      check(`C stored ${key} compressed with ${algo} (magic bytes, smaller)`,
            raw && raw.subarray(0, magic[algo].length / 2).toString('hex') === magic[algo] &&
            raw.length < want.length, raw ? raw.subarray(0, 8).toString('hex') : 'miss');
      const r = await reader.get(CACHE, key);
      check(`Node's ${algo} extension decompresses C's ${key}`,
            r.type === 'Hit' && Buffer.from(r.valueUint8Array()).equals(want), show(r));
    }
    // setBatch from C: each value compressed, getBatch decompresses each.
    const keys = [0, 1, 2].map(i => `c-${algo}-batch${i}`);
    const r = await reader.getBatch(CACHE, keys);
    check(`Node getBatch decompresses C's ${algo} setBatch`, r.type === 'Success' &&
          r.results().every((x, i) => x.type === 'Hit' &&
                            Buffer.from(x.valueUint8Array()).equals(valueFor(keys[i]))), show(r));
  }
}

async function writeNode() {
  const plain = await client(null);
  for (const algo of ['gzip', 'zstd']) {
    for (const [level, sdkLevel] of Object.entries(levels)) {
      const writer = await client(algo, sdkLevel);
      const key = `node-${algo}-${level}`;
      const r = await writer.set(CACHE, key, valueFor(key), {compress: true});
      check(`Node sets ${key} with compress: true`, r.type === 'Success', show(r));
      const raw = await stored(plain, key);
      check(`Node stored ${key} compressed (${magic[algo]}...)`,
            raw && raw.subarray(0, magic[algo].length / 2).toString('hex') === magic[algo],
            raw ? raw.subarray(0, 8).toString('hex') : 'miss');
    }
    const writer = await client(algo, CompressionLevel.Balanced);
    const key = `node-${algo}-if`;
    await writer.delete(CACHE, key);
    const r = await writer.setIfAbsent(CACHE, key, valueFor(key), {compress: true});
    check(`Node setIfAbsent ${key} with compress: true`, r.type === 'Stored', show(r));
  }
  // A value Node stores without compressing, which C must return as is.
  const r = await plain.set(CACHE, 'node-plain', valueFor('node-plain'));
  check('Node sets node-plain uncompressed', r.type === 'Success', show(r));
}

if (mode === 'verify-c') run(verifyC);
else if (mode === 'write') run(writeNode);
else {
  console.error('usage: node compression.js verify-c|write HOST PORT');
  process.exit(2);
}
