#!/usr/bin/env bash
# Deadline lateness (issue 14): requests whose deadlines are spread
# uniformly from MIN_MS to MAX_MS, against momento-local holding every Get
# for DELAY_MS (past every deadline, via its delay-ms fault header), so each
# must time out; lateness = callback time - (submit time + its deadline).
# Two modes of REQUESTS requests each, submitted open loop at RATE per
# second: plain momento_get, and momento_coalescing_get on KEYS hot keys
# (waiters with different deadlines share RPCs). Prints p50/p99/max
# lateness and how many were called back early (before their deadline).
# Server pinned to CPU 0, the client (bench/lateness) to CPU 1.
# Usage: bench/lateness.sh [BUILD_DIR] (default build). Environment:
# REQUESTS (2000), RATE (500), MIN_MS (20), MAX_MS (2000), DELAY_MS (3000),
# KEYS (4). Loopback only; each mode ends REQUESTS/RATE + MAX_MS after it
# starts (10 s more at most if callbacks are missing).
set -euo pipefail
build=${1:-build}
bin="$build/bench/lateness"
[ -x "$bin" ] || { echo "build first: $bin is missing"; exit 1; }
command -v taskset >/dev/null || { echo "taskset is missing: apt-get install util-linux"; exit 1; }
. "$(dirname "$0")/common.sh"

REQUESTS=${REQUESTS:-2000}
RATE=${RATE:-500}
MIN_MS=${MIN_MS:-20}
MAX_MS=${MAX_MS:-2000}
DELAY_MS=${DELAY_MS:-3000}
KEYS=${KEYS:-4}

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for mode in plain coalesce; do
    wrap="taskset -c 0" start_server --stats-json "$work/stats.json"
    taskset -c 1 "$bin" --endpoint "$ep" --mode "$mode" --requests "$REQUESTS" \
        --rate "$RATE" --min-ms "$MIN_MS" --max-ms "$MAX_MS" --delay-ms "$DELAY_MS" \
        --keys "$KEYS" > "$work/$mode.out" || status=1
    stop_server
    line=$(grep '^mode=' "$work/$mode.out" || true)
    gets=$(json "$work/stats.json" "r['methods'].get('Get', {}).get('total', 0)")
    echo "$line server_gets=$gets"
    grep '^note:' "$work/$mode.out" || true
    eval "${mode}_line='$line'"
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in plain coalesce; do
    l=$(eval echo "\$${mode}_line")
    echo "RESULT $mode p50_ms=$(field p50_ms "$l") p99_ms=$(field p99_ms "$l")" \
        "max_ms=$(field max_ms "$l") early=$(field early "$l") timed_out=$(field timed_out "$l")" \
        "requests=$(field requests "$l") target_p99_ms=5"
done
exit $status
