#!/usr/bin/env bash
# Server throughput and cost per RPC.
#   1. h2load sends prebuilt gRPC Get frames to momento-local pinned to one
#      core (h2load on the other): RPC/s per server core.
#   2. callgrind counts the server's instructions for a short and a long run;
#      the difference over the difference in RPCs is the cost of one RPC with
#      start-up and shutdown subtracted.
# Usage: bench/server.sh [BUILD_DIR]   (default: build). Loopback only; every
# load is bounded by a request count.
set -euo pipefail
build=${1:-build}
command -v h2load >/dev/null || { echo "h2load is missing: apt-get install nghttp2-client"; exit 1; }
. "$(dirname "$0")/common.sh"

# A gRPC message frame: flag 0, 4-byte big-endian length, then the protobuf
# _GetRequest{cache_key: "hot"} = 0a 03 'h' 'o' 't'.
printf '\x00\x00\x00\x00\x05\x0a\x03hot' > "$work/get.bin"
HDRS=(-H 'content-type: application/grpc' -H 'te: trailers' -H 'cache: bench')

echo "== h2load: server pinned to CPU 0, client on CPU 1"
wrap="taskset -c 0" start_server --cache bench
N=${N:-400000}
h2load_out=$(taskset -c 1 h2load -n "$N" -c 4 -m 100 "${HDRS[@]}" -d "$work/get.bin" "http://$ep/cache_client.Scs/Get")
echo "$h2load_out" | grep -E "finished in|requests:|status codes|time for request"
rps=$(echo "$h2load_out" | sed -n 's/.*finished in .*, \([0-9.]*\) req\/s.*/\1/p')
stop_server
# Every request must have been a gRPC-level OK, not just an HTTP 200.
ok=$(grep -o '"Get": {"total": [0-9]*, "OK": [0-9]*}' "$work/out" || true)
echo "server counted: $ok"
[ "$ok" = "\"Get\": {\"total\": $N, \"OK\": $N}" ] || { echo "not every Get was answered OK"; exit 1; }

echo "== callgrind: instructions per Get RPC"
run_cg() { # $1 = number of requests
    rm -f "$work"/cg.*
    wrap="valgrind --tool=callgrind --callgrind-out-file=$work/cg.out" start_server --cache bench
    h2load -n "$1" -c 1 -m 50 "${HDRS[@]}" -d "$work/get.bin" "http://$ep/cache_client.Scs/Get" >/dev/null
    stop_server
    # All threads' instructions (gRPC runs work on its own threads too).
    cg_total "$work/cg.out"
}
run_cg 2000 > "$work/short"; short=$(cat "$work/short")
run_cg 22000 > "$work/long"; long=$(cat "$work/long")
per_rpc=$(( (long - short) / 20000 ))
echo "short run: $short instructions, long run: $long instructions"
echo "RESULT server_rps_one_core=${rps} server_instructions_per_rpc=${per_rpc}"
