#!/usr/bin/env bash
# The coalescer's benchmarks (issue: request coalescer).
#   saturation: 1000 workers, 10 hot keys, set-then-get, no rate cap, 20 s,
#               plain client vs coalescer; server RPCs counted by the server.
#   overhead:   unique keys (nothing to coalesce): throughput of both, and
#               callgrind instructions per operation of both (long run minus
#               short run, so start-up and shutdown cancel out).
# Server pinned to CPU 0, client to CPU 1. Loopback only; every run is
# bounded by time or operation count.
# Usage: bench/coalescing.sh [BUILD_DIR] (default build). SECONDS_PER_RUN=20.
set -euo pipefail
build=${1:-build}
secs=${SECONDS_PER_RUN:-20}
bench="$build/bench/coalesce_bench"
[ -x "$bench" ] || { echo "build first: $bench is missing"; exit 1; }
. "$(dirname "$0")/common.sh"
start_bench_server() { wrap="taskset -c 0" start_server --stats-json "$work/stats.json"; }

server_rpcs() { # Get + Set answered
    python3 -c "import json,sys; m=json.load(open('$work/stats.json'))['methods']; print(sum(m.get(k,{}).get('total',0) for k in ('Get','Set')))"
}

echo "== saturation: 1000 workers, 10 hot keys, ${secs} s each"
for mode in plain coalesce; do
    start_bench_server
    line=$(taskset -c 1 "$bench" --endpoint "$ep" --mode $mode --workers 1000 --keys 10 --seconds "$secs")
    stop_server
    rpcs=$(server_rpcs)
    echo "$line server_rpcs=$rpcs"
    eval "${mode}_ops_s=$(field ops_per_s "$line")"
    eval "${mode}_ops=$(field ops "$line")"
    eval "${mode}_rpcs=$rpcs"
    eval "${mode}_line='$line'"
done
coal_pct=$(field coalesced_pct "$coalesce_line")
python3 - "$plain_ops_s" "$coalesce_ops_s" "$coalesce_rpcs" "$coalesce_ops" "$coal_pct" <<'PY'
import sys
plain, coal, rpcs, ops, pct = map(float, sys.argv[1:])
print(f"RESULT saturation speedup={coal/plain:.1f}x coalesced_pct={pct:.2f} server_rpcs_pct={100*rpcs/ops:.2f}")
PY

# Throughput on this shared VM drifts by more than the 5% being judged, so
# the two modes alternate over several rounds and the medians are compared.
rounds=${ROUNDS:-5}
usecs=${UNIQUE_SECONDS:-8}
echo "== overhead: unique keys, 100 workers, ${rounds} alternating rounds of ${usecs} s"
: > "$work/u_plain"; : > "$work/u_coalesce"
for r in $(seq "$rounds"); do
    for mode in plain coalesce; do
        start_bench_server
        line=$(taskset -c 1 "$bench" --endpoint "$ep" --mode $mode --workers 100 --keys 0 --seconds "$usecs")
        stop_server
        echo "round $r: $line"
        field ops_per_s "$line" >> "$work/u_$mode"
    done
done
u_plain=$(median < "$work/u_plain")
u_coalesce=$(median < "$work/u_coalesce")
echo "median ops/s: plain $u_plain, coalesce $u_coalesce"

echo "== overhead: callgrind instructions per operation (client process)"
cg() { # mode ops -> total instructions of the client
    start_bench_server
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
        "$bench" --endpoint "$ep" --mode "$1" --workers 100 --keys 0 --ops "$2" --seconds 600 >/dev/null 2>&1
    stop_server
    cg_total "$work/cg.out"
}
for mode in plain coalesce; do
    s=$(cg $mode 2000); l=$(cg $mode 22000)
    eval "i_${mode}=$(( (l - s) / 20000 ))"
    echo "$mode: $(( (l - s) / 20000 )) instructions per operation"
done
python3 - "$u_plain" "$u_coalesce" "$i_plain" "$i_coalesce" <<'PY'
import sys
up, uc, ip, ic = map(float, sys.argv[1:])
print(f"RESULT overhead throughput_ratio={uc/up:.3f} extra_instructions_per_op={ic-ip:.0f} plain_instructions_per_op={ip:.0f}")
PY
