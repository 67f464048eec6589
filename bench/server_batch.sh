#!/usr/bin/env bash
# momento-local's cost per key of GetBatch / SetBatch against per-key Get /
# Set. For each mode the server runs under callgrind (all threads) twice
# while bench/batch_driver (libmomento, IN_FLIGHT requests in flight, a table
# of 1,000 keys filled first with 100-byte values, so gets hit) asks for
# KEYS_SHORT and then KEYS_LONG keys; (long - short) / (KEYS_LONG -
# KEYS_SHORT) is the server's instructions per key with start-up, the fill
# and shutdown subtracted.
# Usage: bench/server_batch.sh [BUILD_DIR]   (default: build). Loopback only;
# every load is bounded by a key count. Environment: KEYS_SHORT (2000),
# KEYS_LONG (22000), IN_FLIGHT (10), BATCHES ("1 10 50"), PAYLOAD (100).
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/common.sh"
driver="$build/bench/batch_driver"
[ -x "$driver" ] || { echo "build first: $driver is missing"; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing"; exit 1; }
short_keys=${KEYS_SHORT:-2000}
long_keys=${KEYS_LONG:-22000}
in_flight=${IN_FLIGHT:-10}
batches=${BATCHES:-1 10 50}
payload=${PAYLOAD:-100}

# $1 = op, $2 = batch size, $3 = keys: the server's total instructions.
run_cg() {
    rm -f "$work"/cg.*
    wrap="valgrind --tool=callgrind --callgrind-out-file=$work/cg.out" start_server --cache bench
    "$driver" --endpoint "$ep" --op "$1" --batch "$2" --keys "$3" --in-flight "$in_flight" \
        --payload "$payload" > "$work/driver" || { cat "$work/driver"; echo "driver failed"; exit 1; }
    stop_server
    # Every request must have been answered OK: the fill's Sets plus the
    # measured RPCs.
    local method rpcs
    case $1 in
    get) method=Get rpcs=$3 ;;
    set) method=Set rpcs=$3 ;;
    get-batch) method=GetBatch rpcs=$(( ($3 + $2 - 1) / $2 )) ;;
    set-batch) method=SetBatch rpcs=$(( ($3 + $2 - 1) / $2 )) ;;
    esac
    local got
    got=$(grep -o "\"$method\": {\"total\": [0-9]*, \"OK\": [0-9]*}" "$work/out" || true)
    [ "$1" = set ] && rpcs=$((rpcs + 1000))
    [ "$got" = "\"$method\": {\"total\": $rpcs, \"OK\": $rpcs}" ] ||
        { echo "server counted $got, expected $rpcs $method OK"; exit 1; }
    cg_total "$work/cg.out"
}

# $1 = op, $2 = batch size: prints instructions per key.
per_key() {
    local short long
    short=$(run_cg "$1" "$2" "$short_keys")
    long=$(run_cg "$1" "$2" "$long_keys")
    echo $(( (long - short) / (long_keys - short_keys) ))
}

echo "== callgrind: momento-local instructions per key ($in_flight requests in flight, ${payload}-byte values, $short_keys vs $long_keys keys)"
result="RESULT"
get=$(per_key get 1); echo "Get (one key per RPC):      $get"; result+=" get=$get"
set_=$(per_key set 1); echo "Set (one key per RPC):      $set_"; result+=" set=$set_"
for b in $batches; do
    g=$(per_key get-batch "$b"); echo "GetBatch of $b: $g per key, $((g * b)) per RPC"
    s=$(per_key set-batch "$b"); echo "SetBatch of $b: $s per key, $((s * b)) per RPC"
    result+=" get_batch_$b=$g set_batch_$b=$s"
done
echo "$result"
