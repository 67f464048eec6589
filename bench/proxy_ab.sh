#!/usr/bin/env bash
# Two momento-proxy binaries, A and B, on the same momento-local, rounds
# alternating: what a change to the proxy costs its GET rate (issue 47:
# "none of this costs more than 5 % of the GET rate").
#
# Each round, for A then B (B then A on even rounds, so neither always
# runs second): redis-benchmark -P 16 GETs (50 connections, random keys of
# KEYS, every one prefilled so GETs hit) through the RESP port, and
# bench/mc_load -P 16 gets through the memcache port; and the proxy's CPU
# (every thread's, from /proc) per RESP GET. The medians of ROUNDS rounds,
# and B / A for each. Then, at low load (one connection, no
# pipelining: redis-benchmark -c 1, LOW_N GETs), each side's GET p50 and
# p99 in the same alternation, their medians and B / A.
#
# Usage: bench/proxy_ab.sh BUILD_DIR PROXY_A [PROXY_B]
#   BUILD_DIR gives momento-local and mc_load (a -Dtests=false
#   debugoptimized build, as the other scripts); PROXY_B defaults to
#   BUILD_DIR/proxy/momento-proxy. PROXY_A is typically the proxy built at
#   the commit before the change (git worktree add, meson setup, ninja).
# Environment: ROUNDS (5), KEYS (100000), VALUE (100 bytes), RB_N (600000
#   requests per redis-benchmark run), SECONDS_PER_RUN (5: mc_load),
#   LOW_N (20000: requests per low-load run), PROXY_ARGS (more options for
#   both proxies), AUTH (1: both run with --requirepass, as bench/proxy.sh:
#   redis-benchmark and redis-cli authenticate, mc_load speaks the binary
#   protocol with SASL PLAIN; 0: no password, mc_load in text), METRICS
#   (1: both with --metrics-port 0; 0: none). A proxy built before issue 48
#   knows neither option: AUTH=0 METRICS=0 then. TRANSPORT (grpc; or
#   protosocket: momento-local opens its protosocket port and both proxies
#   send get, set and delete there, --transport protosocket).
# Loopback only; every run is bounded by a request count and a timeout.
set -euo pipefail
build=${1:?usage: bench/proxy_ab.sh BUILD_DIR PROXY_A [PROXY_B]}
proxy_a=${2:?usage: bench/proxy_ab.sh BUILD_DIR PROXY_A [PROXY_B]}
proxy_b=${3:-$build/proxy/momento-proxy}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-5}
keys=${KEYS:-100000}
value=${VALUE:-100}
rb_n=${RB_N:-600000}
low_n=${LOW_N:-20000}
secs=${SECONDS_PER_RUN:-5}
auth=${AUTH:-1}
metrics=${METRICS:-1}
pass=bench-proxy-requirepass # fixed, not secret: loopback only
px_opts=() last=memcache     # the last port a proxy prints: it serves them all then
rb_auth=() mc_opts=()
if [ "$auth" = 1 ]; then
    px_opts+=(--requirepass "$pass") rb_auth=(-a "$pass") mc_opts=(--binary --sasl-pass "$pass")
    export REDISCLI_AUTH=$pass # the prefill's redis-cli: as -a
fi
[ "$metrics" = 1 ] && px_opts+=(--metrics-port 0) && last=metrics
driver="$build/bench/mc_load"
for f in "$proxy_a" "$proxy_b" "$driver"; do [ -x "$f" ] || { echo "missing: $f"; exit 1; }; done
for c in redis-benchmark redis-cli; do
    command -v "$c" > /dev/null || { echo "$c is missing (Debian: redis-tools)"; exit 1; }
done

pids=()
ab_cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; bench_cleanup; }
trap ab_cleanup EXIT

if [ "${TRANSPORT:-grpc}" = protosocket ]; then
    start_server --cache bench --protosocket-port 0
    ps_ep=$(sed -n 's/^protosocket listening on //p' "$work/out")
    [ -n "$ps_ep" ] || { echo "momento-local printed no protosocket port"; exit 1; }
    px_opts+=(--transport protosocket --protosocket-endpoint "$ps_ep")
else
    start_server --cache bench
fi
echo "momento-local on $ep (pid $pid)"

declare -A port_resp port_mc proxy_pid
start_proxy() { # NAME BINARY
    # shellcheck disable=SC2086 # PROXY_ARGS are options
    "$2" --endpoint "$ep" --insecure --cache bench --resp-port 0 --memcache-port 0 "${px_opts[@]}" \
        ${PROXY_ARGS:-} > "$work/$1.out" 2> "$work/$1.err" &
    pids+=($!)
    proxy_pid[$1]=$!
    for _ in $(seq 300); do grep -q "^$last listening on" "$work/$1.out" 2> /dev/null && break; sleep 0.1; done
    local r m
    r=$(sed -n 's/^resp listening on //p' "$work/$1.out")
    m=$(sed -n 's/^memcache listening on //p' "$work/$1.out")
    if [ -z "$r" ] || [ -z "$m" ] || ! grep -q "^$last listening on" "$work/$1.out"; then
        echo "proxy $1 did not start"
        cat "$work/$1.err"
        exit 1
    fi
    port_resp[$1]=${r##*:} port_mc[$1]=${m##*:}
    echo "proxy $1 ($2): resp $r, memcache $m; AUTH=$auth METRICS=$metrics${PROXY_ARGS:+ PROXY_ARGS: $PROXY_ARGS}"
}
start_proxy A "$proxy_a"
start_proxy B "$proxy_b"

# Every key, through A (the cache is shared): GETs hit on both.
resp_prefill_keys "${port_resp[A]}" "$keys" "$value"
# mc_load's keys are its own; its prefill makes them hit too.
timeout 300 "$driver" --port "${port_mc[A]}" "${mc_opts[@]}" --conns 50 --keys "$keys" --value-bytes "$value" --prefill \
    --requests 1 --seconds 1 --op get > /dev/null

declare -A runs
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
rb_get() { # NAME PORT
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$2" "${rb_auth[@]}" -c 50 -n "$rb_n" -P 16 -r "$keys" -d "$value" \
        -t get --csv > "$work/rb.csv" 2> "$work/rb.err" || { echo "redis-benchmark failed"; cat "$work/rb.err"; exit 1; }
    grep '^"GET"' "$work/rb.csv" | cut -d, -f2 | tr -d '"' | awk '{printf "%.0f", $1}'
}
mc_get() { # PORT
    local line
    line=$(timeout $((secs * 2 + 150)) "$driver" --port "$1" "${mc_opts[@]}" --conns 50 --pipeline 16 --op get \
        --keys "$keys" --value-bytes "$value" --requests "$rb_n" --seconds "$secs" | grep '^RESULT') ||
        { echo "mc_load failed: $line"; exit 1; }
    [ "$(field misses "$line")" = 0 ] || { echo "mc_load: misses ($line)"; exit 1; }
    field ops_per_s "$line"
}
for r in $(seq "$rounds"); do
    order="A B"
    [ $((r % 2)) = 0 ] && order="B A"
    for w in $order; do
        c0=$(cpu_ns "${proxy_pid[$w]}")
        g=$(rb_get "$w" "${port_resp[$w]}")
        c1=$(cpu_ns "${proxy_pid[$w]}")
        m=$(mc_get "${port_mc[$w]}")
        # The proxy's CPU (all its threads) per RESP GET: steadier than the
        # rate on a machine whose other load varies.
        u=$(awk -v a="$c0" -v b="$c1" -v n="$rb_n" 'BEGIN {printf "%.2f", (b - a) / 1e3 / n}')
        runs[$w.resp]+=" $g" runs[$w.mc]+=" $m" runs[$w.cpu]+=" $u"
        echo "round $r $w: RESP -P 16 GET $g/s ($u us proxy CPU per GET), memcache -P 16 get $m/s"
    done
done
rb_low() { # PORT: "p50 p99" in us of GETs on one connection, no pipelining
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$1" "${rb_auth[@]}" -c 1 -n "$low_n" -r "$keys" -d "$value" \
        -t get --csv > "$work/rb.csv" 2> "$work/rb.err" || { echo "redis-benchmark failed"; cat "$work/rb.err"; exit 1; }
    grep '^"GET"' "$work/rb.csv" | tr -d '"' | awk -F, '{printf "%.0f %.0f\n", $5 * 1000, $7 * 1000}'
}
for r in $(seq "$rounds"); do
    order="A B"
    [ $((r % 2)) = 0 ] && order="B A"
    for w in $order; do
        read -r p50 p99 < <(rb_low "${port_resp[$w]}")
        runs[$w.p50]+=" $p50" runs[$w.p99]+=" $p99"
        echo "low load round $r $w: GET p50 $p50 us, p99 $p99 us"
    done
done
med() { tr ' ' '\n' <<< "$1" | grep . | median; }
for p in resp mc cpu p50 p99; do
    a=$(med "${runs[A.$p]}") b=$(med "${runs[B.$p]}")
    ra=${runs[A.$p]# } rb=${runs[B.$p]# }
    echo "RESULT port=$p a_median=$a b_median=$b b_over_a=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}') a_runs=${ra// /,} b_runs=${rb// /,}"
done
