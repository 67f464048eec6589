#!/usr/bin/env bash
# Two builds of the library over protosocket, and gRPC, in the same run:
# load-gen at IN_FLIGHT requests in flight against one momento-local
# (BUILD_B's, pinned to CPU 0; load-gen on CPU 1), the three alternating
# run by run, unique keys, unbatched. For a change to the protosocket
# transport: BUILD_A before it, BUILD_B after (each a `meson setup
# -Dtests=false` build of its own checkout).
#   bench/ps_ab.sh BUILD_A BUILD_B     ROUNDS=5 SECONDS_PER_RUN=3 IN_FLIGHT=1
# Prints per round: get p50 (µs), ops/s and client µs CPU per operation of
# each, then the medians. Loopback only; every run is bounded (timeout).
set -euo pipefail
a=${1:?usage: bench/ps_ab.sh BUILD_A BUILD_B}
b=${2:?usage: bench/ps_ab.sh BUILD_A BUILD_B}
rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-3}
n=${IN_FLIGHT:-1}
build=$b
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
pin_s="" pin_c=""
if command -v taskset > /dev/null; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; fi
wrap=$pin_s start_server --cache load-gen --protosocket-port 0
ps_ep=$(sed -n 's/^protosocket listening on //p' "$work/out")
[ -n "$ps_ep" ] || { echo "momento-local printed no protosocket port"; exit 1; }

one() { # BUILD TRANSPORT -> "p50 ops cpu"
    local extra=()
    [ "$2" = protosocket ] && extra=(--transport protosocket --protosocket-endpoint "$ps_ep")
    # shellcheck disable=SC2086 # $pin_c is a command prefix
    timeout $((secs * 4 + 60)) $pin_c "$1/apps/load-gen" --endpoint "$ep" --insecure \
        --concurrency "$n" --rps 0 --duration "$secs" --keys 0 --quiet "${extra[@]}" \
        --json "$work/r.json" > /dev/null
    json "$work/r.json" "'ok' if r['success'] == r['requests'] and r['wrong_results'] == 0 else 'bad'" |
        grep -q ok || { echo "a failed check"; cat "$work/r.json"; exit 1; }
    json "$work/r.json" "'%d %.0f %.2f' % (r['get']['p50_us'], r['ops_per_sec'], r['client_cpu_s'] * 1e6 / r['requests'])"
}
declare -A res
for r in $(seq "$rounds"); do
    for s in grpc ps_a ps_b; do
        case $s in
            grpc) line=$(one "$b" grpc) ;;
            ps_a) line=$(one "$a" protosocket) ;;
            ps_b) line=$(one "$b" protosocket) ;;
        esac
        res[$s]+="$line;"
        echo "round $r: $s in_flight=$n: p50 / ops/s / µs CPU per op: $line"
    done
done
stop_server
col() { tr ';' '\n' <<< "${res[$1]}" | grep . | awk -v i="$2" '{print $i}' | median; }
for s in grpc ps_a ps_b; do
    echo "RESULT ps_ab $s in_flight=$n get_p50_us=$(col $s 1) ops_per_s=$(col $s 2) cpu_us_per_op=$(col $s 3)"
done
