#!/usr/bin/env bash
# Unary requests past Momento's 100 streams per connection: load-gen with
# 1000 in flight (unique keys, 100-byte values, no rate cap, one client
# thread, one data channel: the library's default) against momento-local at
# 100 concurrent streams per connection (its default, Momento's limit) and
# at 1000, batching off and on (--batch: the library's defaults), the four
# settings alternating over ROUNDS rounds in the same run. Prints each
# setting's medians of ops/s and client CPU per request (load-gen's own
# process CPU over the run), then the 100 / 1000 ratios.
#   bench/streams.sh BUILD_DIR     ROUNDS=3 SECONDS_PER_RUN=5
# The server is pinned to CPU 0 and the client to CPU 1 when taskset
# exists. Every run's results are checked (every request succeeded, no
# wrong value, no miss): a failed check stops the script with status 1.
# Loopback only; every run is bounded (timeout).
set -euo pipefail
build=${1:?usage: bench/streams.sh BUILD_DIR}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-5}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
loadgen="$build/apps/load-gen"
pin_s="" pin_c=""
if command -v taskset > /dev/null; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; fi

run() { # STREAMS MODE -> "ops us_per_request"
    local streams=$1 mode=$2 batch=()
    [ "$mode" = batch ] && batch=(--batch)
    wrap=$pin_s start_server --cache load-gen --max-streams-per-connection "$streams"
    # shellcheck disable=SC2086 # $pin_c is a command prefix
    timeout $((secs * 4 + 60)) $pin_c "$loadgen" --endpoint "$ep" --insecure --concurrency 1000 \
        --rps 0 --duration "$secs" --keys 0 --quiet "${batch[@]}" --json "$work/r.json" > /dev/null
    stop_server
    json "$work/r.json" "'ok' if r['success'] == r['requests'] and r['wrong_results'] == 0 and r['get_misses'] == 0 else 'bad'" |
        grep -q ok || { echo "streams=$streams $mode: a failed check"; cat "$work/r.json"; exit 1; }
    json "$work/r.json" "'%.0f %.3f' % (r['ops_per_sec'], r['client_cpu_s'] * 1e6 / r['requests'])"
}

declare -A ops cpu
for r in $(seq "$rounds"); do
    for mode in plain batch; do
        for streams in 100 1000; do
            read -r o u <<< "$(run "$streams" "$mode")"
            ops[$streams.$mode]+="$o "
            cpu[$streams.$mode]+="$u "
            echo "round $r: streams=$streams $mode: $o ops/s, $u us CPU per request"
        done
    done
done
med() { tr ' ' '\n' <<< "$1" | grep . | median; }
for mode in plain batch; do
    for streams in 100 1000; do
        echo "RESULT streams streams_per_connection=$streams mode=$mode ops_per_s=$(med "${ops[$streams.$mode]}") cpu_us_per_request=$(med "${cpu[$streams.$mode]}")"
    done
    o100=$(med "${ops[100.$mode]}") o1000=$(med "${ops[1000.$mode]}")
    c100=$(med "${cpu[100.$mode]}") c1000=$(med "${cpu[1000.$mode]}")
    echo "RESULT streams ratio mode=$mode ops=$(python3 -c "print('%.3f' % ($o100 / $o1000))") cpu=$(python3 -c "print('%.3f' % ($c100 / $c1000))")"
done
