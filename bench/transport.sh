#!/usr/bin/env bash
# gRPC vs protosocket for get and set (issue 31): load-gen against one
# momento-local serving both ports, the two transports alternating run by
# run in the same rounds (protosocket three times: by default, with
# --io-callbacks, "psio", and with --dispatch, "psdisp": dispatch mode
# without protosocket's I/O thread), unique keys (--keys 0) and hot keys (--keys 10),
# 1, 10, 100 and 1000 in flight, unbatched, no rate cap, 100-byte values.
# Per run: ops/s, the client's CPU per operation (load-gen's process CPU),
# get p50 / p99, the client's peak RSS, and the server's ops per CPU-second
# (momento-local's utime + stime from /proc over the run: ops/s per core).
# Each round also measures the floor (bench/ps_floor.c: a minimal client
# and server on the same frames; and that client against momento-local's
# protosocket port, whose p50 is the server's part). With NODE=1 also the official Node.js SDK (bench/node_loadgen.js, gRPC)
# at 1000 in flight, for the CPU ratio the issue names.
#   bench/transport.sh BUILD_DIR     ROUNDS=3 SECONDS_PER_RUN=4 NODE=0
# Prints each run, then RESULT lines of the medians over rounds, then the
# ratios of the targets. The server is pinned to CPU 0 and the client to
# CPU 1 when taskset exists. Every run's results are checked (every request
# succeeded, no wrong value, no miss); a failed check stops the script with
# status 1. Loopback only; every run is bounded (timeout).
set -euo pipefail
build=${1:?usage: bench/transport.sh BUILD_DIR}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-4}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
loadgen="$build/apps/load-gen"
pin_s="" pin_c=""
if command -v taskset > /dev/null; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; fi

server_cpu() { # utime + stime of $pid, in seconds
    awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat"
}

run() { # TRANSPORT KEYS IN_FLIGHT -> "ops cpu_us p50 p99 rss_mb server_ops_per_cpu_s"
    local transport=$1 keys=$2 n=$3 extra=()
    [ "$transport" = protosocket ] && extra=(--transport protosocket --protosocket-endpoint "$ps_ep")
    [ "$transport" = psio ] && extra=(--transport protosocket --protosocket-endpoint "$ps_ep" --io-callbacks)
    [ "$transport" = psdisp ] && extra=(--transport protosocket --protosocket-endpoint "$ps_ep" --dispatch)
    local c0 c1
    c0=$(server_cpu)
    # shellcheck disable=SC2086 # $pin_c is a command prefix
    timeout $((secs * 4 + 60)) $pin_c "$loadgen" --endpoint "$ep" --insecure --concurrency "$n" \
        --rps 0 --duration "$secs" --keys "$keys" --quiet "${extra[@]}" \
        --json "$work/r.json" > /dev/null
    c1=$(server_cpu)
    json "$work/r.json" "'ok' if r['success'] == r['requests'] and r['wrong_results'] == 0 and r['get_misses'] == 0 else 'bad'" |
        grep -q ok || { echo "$transport keys=$keys n=$n: a failed check"; cat "$work/r.json"; exit 1; }
    json "$work/r.json" "'%.0f %.3f %d %d %.1f %.0f' % (r['ops_per_sec'], r['client_cpu_s'] * 1e6 / r['requests'], r['get']['p50_us'], r['get']['p99_us'], r['max_rss_kb'] / 1024.0, r['requests'] / max($c1 - $c0, 1e-9))"
}

wrap=$pin_s start_server --cache load-gen --protosocket-port 0
ps_ep=$(sed -n 's/^protosocket listening on //p' "$work/out")
[ -n "$ps_ep" ] || { echo "momento-local printed no protosocket port"; cat "$work/out"; exit 1; }

declare -A res floor
settings=()
for keys in 0 10; do
    for n in 1 10 100 1000; do
        for t in grpc protosocket psio psdisp; do settings+=("$t.$keys.$n"); done
    done
done
for r in $(seq "$rounds"); do
    for s in "${settings[@]}"; do
        IFS=. read -r t keys n <<< "$s"
        line=$(run "$t" "$keys" "$n")
        res[$s]+="$line;"
        read -r o u p50 p99 rss sops <<< "$line"
        echo "round $r: $t keys=$keys in_flight=$n: $o ops/s, $u us CPU/op, get p50 $p50 us p99 $p99 us, RSS $rss MB, server $sops ops per CPU-s"
    done
    # The floor: a minimal client and server on the same frames (their own
    # processes, bench/ps_floor.c), and that client against momento-local.
    for n in 1 1000; do
        f=$(timeout $((secs * 4 + 30)) "$build/bench/ps_floor" --inflight "$n" --seconds "$secs")
        g=$(timeout $((secs * 4 + 30)) $pin_c "$build/bench/ps_floor" --inflight "$n" --seconds "$secs" --connect "$ps_ep")
        # No p50 at 1000 in flight (ps_floor times only a lone request): "-".
        fp=$(field p50_us "$f") gp=$(field p50_us "$g")
        floor[$n]+="$(field ops_per_s "$f") $(field client_cpu_us_per_op "$f") ${fp:--} $(field ops_per_s "$g") $(field client_cpu_us_per_op "$g") ${gp:--};"
        echo "round $r: floor in_flight=$n: ${f#RESULT ps_floor }; raw client to momento-local: ${g#RESULT ps_floor }"
    done
    if [ "${NODE:-0}" = 1 ]; then
        out=$(timeout $((secs * 4 + 60)) node "$(dirname "$0")/node_loadgen.js" "$ep" 1000 "$secs")
        node_cpu+="$(field cpu_us_per_op "$out") "
        echo "round $r: node sdk in_flight=1000: $(field ops_per_s "$out") ops/s, $(field cpu_us_per_op "$out") us CPU/op"
    fi
done
stop_server

col() { # SETTING INDEX -> the median of that column over rounds
    tr ';' '\n' <<< "${res[$1]}" | grep . | awk -v i="$2" '{print $i}' | median
}
for s in "${settings[@]}"; do
    IFS=. read -r t keys n <<< "$s"
    echo "RESULT transport transport=$t keys=$keys in_flight=$n ops_per_s=$(col "$s" 1) cpu_us_per_op=$(col "$s" 2) get_p50_us=$(col "$s" 3) get_p99_us=$(col "$s" 4) rss_mb=$(col "$s" 5) server_ops_per_cpu_s=$(col "$s" 6)"
done
for n in 1 1000; do
    fl() { tr ';' '\n' <<< "${floor[$n]}" | grep . | awk -v i="$1" '{print $i}' | median; }
    echo "RESULT transport floor in_flight=$n ops_per_s=$(fl 1) cpu_us_per_op=$(fl 2) p50_us=$(fl 3) raw_to_momento_local_ops_per_s=$(fl 4) raw_cpu_us_per_op=$(fl 5) raw_p50_us=$(fl 6)"
done
ratio() { python3 -c "print('%.3f' % ($1 / $2))"; }
echo "RESULT transport ratio cpu_per_op_ps_over_grpc_1000=$(ratio "$(col protosocket.0.1000 2)" "$(col grpc.0.1000 2)") (target <= 0.125)"
echo "RESULT transport ratio p50_ps_over_grpc_1=$(ratio "$(col protosocket.0.1 3)" "$(col grpc.0.1 3)") (target <= 0.333)"
echo "RESULT transport ratio server_ops_per_cpu_ps_over_grpc_1000=$(ratio "$(col protosocket.0.1000 6)" "$(col grpc.0.1000 6)") (target >= 4)"
echo "RESULT transport rss_mb_ps_1000=$(col protosocket.0.1000 5) (target <= 16)"
# Issue 51's targets against the floor of the same run, for protosocket
# as it is by default, with --io-callbacks (psio) and with --dispatch (psdisp).
flr() { tr ';' '\n' <<< "${floor[$1]}" | grep . | awk -v i="$2" '{print $i}' | median; }
for t in protosocket psio psdisp; do
    echo "RESULT transport ratio cpu_per_op_${t}_over_floor_1000=$(ratio "$(col $t.0.1000 2)" "$(flr 1000 2)") (target <= 2)"
    echo "RESULT transport ratio p50_${t}_over_floor_1=$(ratio "$(col $t.0.1 3)" "$(flr 1 3)") (target <= 1.5)"
    echo "RESULT transport ratio cpu_per_op_${t}_over_grpc_1=$(ratio "$(col $t.0.1 2)" "$(col grpc.0.1 2)") (target <= 1)"
done
if [ "${NODE:-0}" = 1 ]; then
    nmed=$(tr ' ' '\n' <<< "$node_cpu" | grep . | median)
    echo "RESULT transport ratio node_cpu_over_ps_1000=$(ratio "$nmed" "$(col protosocket.0.1000 2)") (target >= 150)"
fi
