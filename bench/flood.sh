#!/usr/bin/env bash
# One client flooding momento-local must not starve another.
#   The flooder: h2load sends prebuilt gRPC Get frames on FLOOD_CONNS
#   connection(s) asking for FLOOD_STREAMS concurrent streams each (the
#   server's SETTINGS_MAX_CONCURRENT_STREAMS caps what it gets).
#   The victim: load-gen, open loop (latency counted from each request's
#   scheduled start), VICTIM_RPS requests/s, 1 s deadlines, its own
#   connection.
# The victim runs three times: alone, during the flood, and right after the
# flood is stopped (the server still working off what the flood left
# queued). Each prints the share of its requests that timed out and p50/p99
# of those answered (the larger of get's and set's). The server is pinned
# to CPU 0, both clients to CPU 1.
# Usage: bench/flood.sh [BUILD_DIR]   (default: build). Loopback only; the
# flood lasts VICTIM_SECONDS + 3 s (h2load -D, and `timeout` as a guard),
# the victim VICTIM_SECONDS, then AFTER_SECONDS.
set -euo pipefail
build=${1:-build}
command -v h2load >/dev/null || {
    echo "h2load is missing: apt-get install nghttp2-client (Debian/Ubuntu)"; exit 1; }
command -v taskset >/dev/null || { echo "taskset is missing: apt-get install util-linux"; exit 1; }
. "$(dirname "$0")/common.sh"
loadgen="$build/apps/load-gen"
[ -x "$loadgen" ] || { echo "build first: $loadgen is missing"; exit 1; }

FLOOD_STREAMS=${FLOOD_STREAMS:-50000}
FLOOD_CONNS=${FLOOD_CONNS:-1}
VICTIM_SECONDS=${VICTIM_SECONDS:-10}
VICTIM_RPS=${VICTIM_RPS:-200}
AFTER_SECONDS=${AFTER_SECONDS:-3}

flood=""
trap '[ -n "$flood" ] && kill "$flood" 2>/dev/null; bench_cleanup' EXIT
trap 'exit 1' INT TERM

printf '\x00\x00\x00\x00\x05\x0a\x03hot' > "$work/get.bin"
HDRS=(-H 'content-type: application/grpc' -H 'te: trailers' -H 'cache: bench')

# victim NAME SECONDS: one load-gen run; prints and sets RESULT fields.
victim() {
    local name=$1 secs=$2
    local line
    if ! taskset -c 1 "$loadgen" --endpoint "$ep" --insecure --cache bench --concurrency 50 \
        --rps "$VICTIM_RPS" --open-loop --timeout-ms 1000 --duration "$secs" --quiet \
        --json "$work/$name.json" > "$work/$name.out" 2>&1; then
        # load-gen gives up when not one request succeeded.
        grep -q "no request succeeded" "$work/$name.out" || { cat "$work/$name.out"; exit 1; }
        line="requests=- timeouts=all timeout_pct=100 p50_us=- p99_us=- max_us=-"
    else
        line=$(json "$work/$name.json" "'requests=%d timeouts=%d timeout_pct=%.2f p50_us=%d p99_us=%d max_us=%d' % (r['requests'], r['errors']['deadline_exceeded'], 100.0 * r['errors']['deadline_exceeded'] / max(1, r['requests']), max(r['get']['p50_us'], r['set']['p50_us']), max(r['get']['p99_us'], r['set']['p99_us']), max(r['get']['max_us'], r['set']['max_us']))")
    fi
    echo "victim $name: $line"
    eval "${name}_line=\"\$line\""
}

wrap="taskset -c 0" start_server --cache bench

echo "== victim alone (${VICTIM_SECONDS} s)"
victim alone "$VICTIM_SECONDS"

echo "== victim during a flood: $FLOOD_CONNS connection(s) x $FLOOD_STREAMS streams"
taskset -c 1 timeout $((VICTIM_SECONDS + 60)) h2load -D $((VICTIM_SECONDS + 3)) -c "$FLOOD_CONNS" \
    -m "$FLOOD_STREAMS" "${HDRS[@]}" -d "$work/get.bin" "http://$ep/cache_client.Scs/Get" \
    > "$work/h2load.out" 2>&1 &
flood=$!
sleep 2 # let the flood build up
victim during "$VICTIM_SECONDS"
wait "$flood" || true
flood=""
echo "flood: $(grep -E 'finished in' "$work/h2load.out" | head -1)"
echo "== victim right after the flood stopped (${AFTER_SECONDS} s)"
victim after "$AFTER_SECONDS"

stop_server
echo "RESULT alone_$(sed 's/ / alone_/g' <<<"$alone_line") during_$(sed 's/ / during_/g' <<<"$during_line") after_$(sed 's/ / after_/g' <<<"$after_line")"
