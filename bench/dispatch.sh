#!/usr/bin/env bash
# What dispatch mode (issue 19: callbacks queued for the application's
# thread, run by momento_client_dispatch()) costs per request, against the
# default mode (callbacks on the completion thread):
#   1. callgrind instructions per get, 22,000 minus 2,000 gets (fixed costs
#      cancel), 100 in flight, each mode;
#   2. CPU time per get and gets per second, ROUNDS alternating runs of
#      OPS gets per mode (medians), 100 in flight.
# momento-local is a separate process pinned to CPU 0, the client to CPU 1.
# Loopback only; every run is bounded by its count and by 600 s.
# Usage: bench/dispatch.sh [BUILD_DIR]   (ROUNDS=5, OPS=200000, INFLIGHT=100)
set -euo pipefail
build=${1:-build}
drv="$build/bench/dispatch_bench"
[ -x "$drv" ] || { echo "build first: $drv"; exit 1; }
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-5}
n=${OPS:-200000}
k=${INFLIGHT:-100}
wrap="taskset -c 0" start_server --cache bench

echo "== callgrind: instructions per get (client process, 22,000 minus 2,000 gets, $k in flight)"
for mode in callback dispatch; do
    cg() {
        valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
            "$drv" --endpoint "$ep" --mode $mode --inflight "$k" --ops "$1" --seconds 600 \
            >/dev/null 2>&1
        cg_total "$work/cg.out"
    }
    s=$(cg 2000)
    l=$(cg 22000)
    echo "RESULT instructions mode=$mode per_get=$(( (l - s) / 20000 ))"
done

echo "== CPU per get and gets/s: $rounds alternating rounds of $n gets per mode (medians)"
: > "$work/callback"; : > "$work/dispatch"
for _ in $(seq "$rounds"); do
    for mode in callback dispatch; do
        taskset -c 1 "$drv" --endpoint "$ep" --mode $mode --inflight "$k" --ops "$n" \
            --seconds 600 >> "$work/$mode"
    done
done
for mode in callback dispatch; do
    cpu=$(sed -n 's/.*cpu_us_per_op=\([^ ]*\).*/\1/p' "$work/$mode" | median)
    ops=$(sed -n 's/.*ops_per_s=\([^ ]*\).*/\1/p' "$work/$mode" | median)
    echo "RESULT dispatch mode=$mode cpu_us_per_get=$cpu gets_per_s=$ops"
done
stop_server
