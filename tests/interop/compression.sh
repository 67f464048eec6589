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
# shellcheck source=server.sh
source "$here/server.sh" @gomomento/sdk-nodejs-compression
status=0
echo "# libmomento compresses, the Node SDK decompresses"
"$check_bin" write "$endpoint" || status=1
node "$here/compression.js" verify-c "$host" "$port" || status=1
echo "# the Node SDK compresses, libmomento decompresses"
node "$here/compression.js" write "$host" "$port" || status=1
"$check_bin" read "$endpoint" || status=1
exit $status
