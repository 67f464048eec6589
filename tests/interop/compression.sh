#!/usr/bin/env bash
# Compression across clients: values compressed by Momento's Node SDK
# (its zstd extension, and gzip as its gzip extension writes it) read back
# by libmomento, and the reverse (compression.js, compression_check.c).
# Skips (exit 77) only where node is absent. Installs the pinned packages
# with `npm ci` when they are not installed yet.
set -euo pipefail
server_bin=$1
check_bin=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed; the interop suite needs Node.js"
    exit 77
fi
if [ ! -d "$here/node_modules/@gomomento/sdk-nodejs-compression" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
out=$(mktemp)
"$server_bin" --port 0 > "$out" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do
    grep -q "listening on" "$out" && break
    sleep 0.1
done
endpoint=$(sed -n 's/^listening on //p' "$out")
[ -n "$endpoint" ] || { echo "momento-local did not start"; exit 1; }
host=${endpoint%:*}
port=${endpoint##*:}
status=0
echo "# libmomento compresses, the Node SDK decompresses"
"$check_bin" write "$endpoint" || status=1
node "$here/compression.js" verify-c "$host" "$port" || status=1
echo "# the Node SDK compresses, libmomento decompresses"
node "$here/compression.js" write "$host" "$port" || status=1
"$check_bin" read "$endpoint" || status=1
exit $status
