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
# Values one client compressed, decompressed by the other.
both_ways compression "$check_bin" "$here/compression.js" || status=1
exit $status
