#!/usr/bin/env bash
# One momento-proxy against N sharing one port with --reuseport (issue 48:
# "if one epoll thread is the limit, measure SO_REUSEPORT with N processes
# ... and choose with numbers"), beside load-gen --batch, all on one
# momento-local started here.
#   Each round, in an order that alternates: load-gen --batch (unique keys,
#   LG_CONC in flight, over gRPC: issue 48's baseline), redis-benchmark -P 16
#   GETs (50 connections, random keys of KEYS, every key prefilled) through
#   the single proxy's RESP port, and the same through the port the N
#   proxies share. Each proxy runs as bench/proxy.sh runs it: --requirepass
#   (redis-benchmark -a) and --metrics-port 0; TRANSPORT picks its gets'
#   transport (grpc, or protosocket: momento-local's protosocket port).
# Prints each round, then RESULT lines with the medians: the single
# proxy's and the N proxies' GET rate, N / 1, and each over load-gen's.
#
# Usage: bench/proxy_reuseport.sh [BUILD_DIR]   (default build; a
# -Dtests=false debugoptimized build, as the other scripts). Needs
# redis-benchmark and redis-cli (redis-tools). Loopback only; every load is
# bounded by a request count and a timeout; the script stops by itself.
# Environment: NPROC (2), ROUNDS (5), TRANSPORT (grpc), KEYS (100000),
# VALUE (100), RB_N (1000000), LG_CONC (800), SECONDS_PER_RUN (5: load-gen).
# About 3 minutes with the defaults.
set -euo pipefail
build=${1:-build}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
nproc_=${NPROC:-2}
rounds=${ROUNDS:-5}
transport=${TRANSPORT:-grpc}
keys=${KEYS:-100000}
value=${VALUE:-100}
rb_n=${RB_N:-1000000}
lg_conc=${LG_CONC:-800}
secs=${SECONDS_PER_RUN:-5}
pass=bench-proxy-requirepass
proxy="$build/proxy/momento-proxy"
loadgen="$build/apps/load-gen"
for f in "$proxy" "$loadgen"; do [ -x "$f" ] || { echo "build first: $f is missing"; exit 1; }; done
command -v redis-benchmark > /dev/null || { echo "redis-benchmark is missing (Debian: redis-tools)"; exit 1; }
case "$transport" in grpc | protosocket) ;; *) echo "TRANSPORT must be grpc or protosocket"; exit 1 ;; esac

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    bench_cleanup
}
trap cleanup EXIT

px_ps=()
if [ "$transport" = protosocket ]; then
    start_server --cache bench --protosocket-port 0
    ps_ep=$(sed -n 's/^protosocket listening on //p' "$work/out")
    [ -n "$ps_ep" ] || { echo "momento-local printed no protosocket port"; exit 1; }
    px_ps=(--transport protosocket --protosocket-endpoint "$ps_ep")
else
    start_server --cache bench
fi
pids+=("$pid")
one=$(free_port) shared=$(free_port)
start_proxy() { # PORT OUT [--reuseport]
    local port=$1 out=$2
    shift 2
    "$proxy" --endpoint "$ep" --insecure --cache bench --resp-port "$port" --requirepass "$pass" \
        --metrics-port 0 "${px_ps[@]}" "$@" > "$out" 2>&1 &
    pids+=("$!")
}
start_proxy "$one" "$work/px.one"
for i in $(seq "$nproc_"); do start_proxy "$shared" "$work/px.$i" --reuseport; done
wait_port "$one" && wait_port "$shared" || { echo "a proxy did not start"; cat "$work"/px.*; exit 1; }
sleep 0.5 # every proxy of the shared port listening (the first one's accepting says nothing of the others)
[ "$(grep -l '^resp listening on' "$work"/px.[0-9]* | wc -l)" = "$nproc_" ] ||
    { echo "not all $nproc_ proxies listen on $shared"; cat "$work"/px.[0-9]*; exit 1; }
REDISCLI_AUTH=$pass resp_prefill_keys "$one" "$keys" "$value"
echo "momento-local $ep; one proxy on $one, $nproc_ with --reuseport on $shared; TRANSPORT=$transport"

rb() { # PORT: -P 16 GETs, their rate
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$1" -a "$pass" -c 50 -n "$rb_n" -P 16 -r "$keys" \
        -d "$value" -t get --csv 2> /dev/null | grep '^"GET"' | cut -d, -f2 | tr -d '"' |
        awk '{printf "%.0f", $1}'
}
lg() {
    timeout $((secs * 4 + 60)) "$loadgen" --endpoint "$ep" --insecure --cache bench --rps 0 \
        --duration "$secs" --quiet --json "$work/lg.json" --concurrency "$lg_conc" --keys 0 --batch > /dev/null
    json "$work/lg.json" "'%.0f' % r['ops_per_sec'] if r['success'] == r['requests'] and r['wrong_results'] == 0 else 'bad'"
}
rat() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
ones="" ns="" gains="" r1s="" rns=""
for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
        l=$(lg) a=$(rb "$one") b=$(rb "$shared")
    else
        b=$(rb "$shared") a=$(rb "$one") l=$(lg)
    fi
    [ "$l" != bad ] && [ -n "$a" ] && [ -n "$b" ] || { echo "round $r: a load failed (load-gen '$l', one '$a', N '$b')"; exit 1; }
    ones+=" $a" ns+=" $b" gains+=" $(rat "$b" "$a")" r1s+=" $(rat "$a" "$l")" rns+=" $(rat "$b" "$l")"
    echo "round $r: load-gen --batch $l ops/s; one proxy $a GET/s ($(rat "$a" "$l")); $nproc_ with --reuseport $b GET/s ($(rat "$b" "$l")); N / 1 $(rat "$b" "$a")"
done
med() { tr ' ' '\n' <<< "$1" | grep . | median; }
echo "Machine: $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RESULT proxy_reuseport transport=$transport nproc=$nproc_ rounds=$rounds one_get=$(med "$ones") n_get=$(med "$ns") n_over_one=[${gains# }] median=$(med "$gains")"
echo "RESULT proxy_reuseport_ratios one_over_loadgen=[${r1s# }] median=$(med "$r1s") n_over_loadgen=[${rns# }] median=$(med "$rns") (issue 48's target: >= 1.0)"
