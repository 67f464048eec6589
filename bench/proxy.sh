#!/usr/bin/env bash
# momento-proxy's figures (issue 33 item 6; issue 48's "Performance": with
# auth, TLS off and metrics on), all in one run against one momento-local
# started here. The proxy runs as an operator would run it: with
# --requirepass (a fixed bench password: every RESP load authenticates,
# redis-benchmark and redis-cli with it, and the memcache port, which then
# takes the binary protocol only, is loaded with mc_load --binary
# --sasl-pass, SASL PLAIN on each connection) and --metrics-port 0 (its
# /metrics is read once at the end, to show it served); no TLS
# (bench/proxy_tls.sh measures that). AUTH=0 and METRICS=0 give the runs
# before issue 48: no password, the memcache loads in the text protocol.
#   a. load-gen --batch on that server, ops/s at LG_CONC in flight (the
#      proxy's -c 50 -P 16 is 800), unique keys and hot keys;
#   b. redis-benchmark SET then GET through the proxy's RESP port: 50
#      connections, -P 1 and -P 16, random keys (-r KEYS) and hot keys
#      (-r HOT), after a prefill of every key (redis-cli --pipe) so GETs hit;
#   c. bench/mc_load, the same matrix through the proxy's memcache port
#      (its --prefill first);
#   d. the same loads against redis-server and memcached themselves, for
#      scale (no password: memcached -S needs a SASL database; memcached
#      is loaded in the protocol the proxy's port is, binary with AUTH=1);
#   e. the proxy's VmRSS / VmHWM (/proc/PID/status): at start, with IDLE
#      (1000) idle connections held by mc_load --idle, after the loads,
#      with IDLE idle connections again, and its peak over the run, which
#      includes a GET run on 1000 busy connections (redis-benchmark -c 1000);
#      with AUTH=1 each idle connection authenticates first, as a client
#      does on connecting (without it the proxy answers its probe NOAUTH,
#      or on the memcache port hangs up);
#   f. at low load, one connection and no pipelining: GET p50 / p99 through
#      the proxy (redis-benchmark -c 1 and mc_load --conns 1) against a
#      direct libmomento get at concurrency 1 (load-gen, set-then-get,
#      unbatched) on the same server, ROUNDS rounds alternating, medians;
#      "added" is proxy minus direct.
#   g. RATIO_ROUNDS rounds of load-gen --batch (unique, hot) alternating with
#      -P 16 GETs through each port: the four ratios the targets judge, each
#      within its round, and their medians.
# Then issue 48's targets: both ports' -P 16 GET rate >= 1.0 of load-gen
# --batch's ops/s (unique keys), and with hot keys >= load-gen's (on the
# same hot keys); p99 added at one connection <= 100 us on both ports; RSS
# at 1000 connections <= 64 MB.
#
# Usage: bench/proxy.sh [BUILD_DIR]   (default build; a -Dtests=false
# debugoptimized build, as the other scripts). Needs redis-server,
# redis-benchmark and redis-cli (redis-server, redis-tools) and memcached.
# Without BUILD/proxy/momento-proxy the proxy's parts are skipped and the
# rest runs. Loopback only; every load is bounded by a request count and
# by a timeout (or, mc_load's, by --seconds), and the script stops by
# itself. The client, the proxy and the server share this machine's cores:
# unpinned by default; PIN=1 pins momento-local to CPU 0 and every other
# process to CPU 1.
# Environment: SECONDS_PER_RUN (5: load-gen and mc_load runs), RB_N1
# (200000: redis-benchmark requests per test at -P 1), RB_N16 (1000000: at
# -P 16), KEYS (100000), HOT (10), VALUE (100 bytes), LG_CONC (800), IDLE
# (1000), ROUNDS (3: the low-load rounds), LOW_N (20000: requests per
# low-load run), RATIO_ROUNDS (3: the ratio rounds, 0 = the first pass's
# readings judge), PROXY_ARGS (more options for momento-proxy), PIN (0),
# AUTH (1: --requirepass, as above; 0: none, text on the memcache ports),
# METRICS (1: --metrics-port 0; 0: no metrics port), TRANSPORT (grpc: the
# proxy's gets, sets and deletes over gRPC; protosocket: over momento-local's
# protosocket port, `--transport protosocket`; the issue's baseline,
# load-gen --batch over gRPC, stays, and the ratio rounds also run load-gen
# --batch over protosocket for the same-transport ratios; the low-load
# direct figure is load-gen over the proxy's transport).
# Prints the runs as they go, a table, and RESULT lines. About 5 minutes
# on two cores (4 min 43 s on 2026-12-07 with auth and metrics, load
# average 6-9; 20 when the proxy was slower).
set -euo pipefail
build=${1:-build}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
secs=${SECONDS_PER_RUN:-5}
rb_n1=${RB_N1:-200000}
rb_n16=${RB_N16:-1000000}
keys=${KEYS:-100000}
hot=${HOT:-10}
value=${VALUE:-100}
lg_conc=${LG_CONC:-800}
idle=${IDLE:-1000}
rounds=${ROUNDS:-3}
ratio_rounds=${RATIO_ROUNDS:-3}
low_n=${LOW_N:-20000}
auth=${AUTH:-1}
metrics=${METRICS:-1}
transport=${TRANSPORT:-grpc}
case "$transport" in grpc | protosocket) ;; *) echo "TRANSPORT must be grpc or protosocket"; exit 1 ;; esac
# The proxy's password with AUTH=1. Fixed, not secret: loopback only.
pass=bench-proxy-requirepass
proxy="$build/proxy/momento-proxy"
driver="$build/bench/mc_load"
loadgen="$build/apps/load-gen"
for f in "$driver" "$loadgen"; do [ -x "$f" ] || { echo "build first: $f is missing"; exit 1; }; done
for c in redis-server redis-benchmark redis-cli memcached; do
    command -v "$c" > /dev/null || { echo "$c is missing (Debian: redis-server redis-tools memcached)"; exit 1; }
done
have_proxy=0 have_mc=0
[ -x "$proxy" ] && have_proxy=1
pin_s="" pin_c=""
if [ "${PIN:-0}" = 1 ]; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; fi

redis_pid="" mc_pid="" proxy_pid="" idle_pid=""
cleanup() {
    if [ -n "$proxy_pid" ] && ! kill -0 "$proxy_pid" 2> /dev/null; then
        wait "$proxy_pid" 2> /dev/null
        echo "momento-proxy exited early (status $?); its stderr:"
        tail -20 "$work/proxy.err"
    fi
    for p in $idle_pid $proxy_pid $redis_pid $mc_pid; do kill "$p" 2> /dev/null || true; done
    for p in $idle_pid $proxy_pid $redis_pid $mc_pid; do wait "$p" 2> /dev/null || true; done
    bench_cleanup
}
trap cleanup EXIT

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' /proc/"$1"/status; }
mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
declare -A fig   # name -> figure, for the table and the RESULT lines
# What a port asks of its clients, set as each server starts: rpass[PORT]
# the RESP password (redis-benchmark -a, redis-cli's REDISCLI_AUTH, mc_load
# --auth), mcopt[PORT] mc_load's protocol options (--binary, --sasl-pass).
declare -A rpass mcopt

# --- the servers ---------------------------------------------------------
ps_opts=() # the transport's options, for load-gen and the proxy alike
if [ "$transport" = protosocket ]; then
    wrap=$pin_s start_server --cache bench --protosocket-port 0
    ps_ep=$(sed -n 's/^protosocket listening on //p' "$work/out")
    [ -n "$ps_ep" ] || { echo "momento-local printed no protosocket port"; cat "$work/out"; exit 1; }
    ps_opts=(--transport protosocket --protosocket-endpoint "$ps_ep")
else
    wrap=$pin_s start_server --cache bench
fi
echo "momento-local on $ep (pid $pid)${ps_ep:+, protosocket $ps_ep}"
redis_port=$(free_port)
# shellcheck disable=SC2086 # $pin_c is a command prefix
$pin_c redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --daemonize no --logfile "$work/redis.log" &
redis_pid=$!
mc_port=$(free_port)
mc_user=()
[ "$(id -u)" = 0 ] && mc_user=(-u nobody)
# shellcheck disable=SC2086
$pin_c memcached "${mc_user[@]}" -l 127.0.0.1 -p "$mc_port" -U 0 -m 1024 -c 4096 &
mc_pid=$!
[ "$auth" = 1 ] && mcopt[$mc_port]=--binary
wait_port "$redis_port" || { echo "redis-server did not start"; cat "$work/redis.log"; exit 1; }
wait_port "$mc_port" || { echo "memcached did not start"; exit 1; }

# --- load-gen (a, and f's direct figure) ---------------------------------
# loadgen NAME ARGS...: one run; sets fig[NAME.ops] (all operations per s),
# fig[NAME.get_ops], get p50/p99 and the server's CPU per operation.
loadgen() {
    local name=$1
    shift
    local c0 c1
    c0=$(cpu_ns "$pid")
    # shellcheck disable=SC2086
    timeout $((secs * 4 + 60)) $pin_c "$loadgen" --endpoint "$ep" --insecure --cache bench --rps 0 \
        --duration "$secs" --quiet --json "$work/lg.json" "$@" > /dev/null
    c1=$(cpu_ns "$pid")
    json "$work/lg.json" "'ok' if r['success'] == r['requests'] and r['wrong_results'] == 0 else 'bad'" |
        grep -q ok || { echo "load-gen $name: a failed check"; cat "$work/lg.json"; exit 1; }
    read -r ops gops p50 p99 req < <(json "$work/lg.json" \
        "'%.0f %.0f %d %d %d' % (r['ops_per_sec'], r['get']['count'] / r['wall_s'], r['get']['p50_us'], r['get']['p99_us'], r['requests'])")
    fig[$name.ops]=$ops fig[$name.get_ops]=$gops fig[$name.p50]=$p50 fig[$name.p99]=$p99
    fig[$name.srv_us]=$(awk -v c=$((c1 - c0)) -v n="$req" 'BEGIN {printf "%.2f", c / 1e3 / n}')
    echo "load-gen $name $*: $ops ops/s ($gops gets/s), get p50 $p50 / p99 $p99 us, server ${fig[$name.srv_us]} us CPU/op"
}
loadgen lg_batch_unique --concurrency "$lg_conc" --keys 0 --batch
loadgen lg_batch_hot --concurrency "$lg_conc" --keys "$hot" --batch

# --- RESP loads (b, d) -----------------------------------------------------
resp_prefill() { # PORT; redis-cli takes the password from REDISCLI_AUTH, as from -a
    if [ -n "${rpass[$1]:-}" ]; then
        REDISCLI_AUTH=${rpass[$1]} resp_prefill_keys "$1" "$keys" "$value"
    else
        resp_prefill_keys "$1" "$keys" "$value"
    fi
}
ra() { [ -z "${rpass[$1]:-}" ] || echo "-a ${rpass[$1]}"; } # PORT: redis-benchmark's -a PASS, if it asks
# rb NAME PORT PIPELINE RANGE [PID]: redis-benchmark SET then GET, 50
# connections; fig[NAME.set|get] = rps, .p50/.p99 in us, and with PID that
# process's CPU per request over both tests.
rb() {
    local name=$1 port=$2 p=$3 r=$4 who=${5:-} n c0 c1
    n=$([ "$p" -gt 1 ] && echo "$rb_n16" || echo "$rb_n1")
    [ -n "$who" ] && c0=$(cpu_ns "$who")
    # shellcheck disable=SC2086,SC2046 # $pin_c a prefix, $(ra) -a PASS or nothing
    timeout 300 $pin_c redis-benchmark -h 127.0.0.1 -p "$port" $(ra "$port") -c 50 -n "$n" -P "$p" -r "$r" -d "$value" \
        -t set,get --csv > "$work/rb.csv" 2> "$work/rb.err" || { echo "redis-benchmark $name failed"; cat "$work/rb.err"; exit 1; }
    [ -n "$who" ] && c1=$(cpu_ns "$who")
    for t in SET GET; do
        local l
        l=$(grep "^\"$t\"" "$work/rb.csv") || { echo "redis-benchmark $name: no $t line"; cat "$work/rb.csv"; exit 1; }
        local lt=${t,,}
        fig[$name.$lt]=$(cut -d, -f2 <<< "$l" | tr -d '"' | awk '{printf "%.0f", $1}')
        fig[$name.$lt.p50]=$(cut -d, -f5 <<< "$l" | tr -d '"' | awk '{printf "%.0f", $1 * 1000}')
        fig[$name.$lt.p99]=$(cut -d, -f7 <<< "$l" | tr -d '"' | awk '{printf "%.0f", $1 * 1000}')
    done
    [ -n "$who" ] && fig[$name.cpu_us]=$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.2f", c / 1e3 / (2 * n)}')
    echo "redis-benchmark $name -P $p -r $r: SET ${fig[$name.set]}/s p99 ${fig[$name.set.p99]} us, GET ${fig[$name.get]}/s p50 ${fig[$name.get.p50]} p99 ${fig[$name.get.p99]} us${who:+, ${fig[$name.cpu_us]} us CPU per request}"
}
resp_matrix() { # PREFIX PORT [PID]
    resp_prefill "$2"
    rb "$1.p1.rand" "$2" 1 "$keys" "${3:-}"
    rb "$1.p16.rand" "$2" 16 "$keys" "${3:-}"
    rb "$1.p1.hot" "$2" 1 "$hot" "${3:-}"
    rb "$1.p16.hot" "$2" 16 "$hot" "${3:-}"
}

# --- memcached loads (c, d) ------------------------------------------------
# mc NAME PORT OP PIPELINE KEYS [PID] [--prefill]: one mc_load run, 50 connections.
mc() {
    local name=$1 port=$2 op=$3 p=$4 k=$5 who=${6:-} c0 c1 line
    shift 6 || shift $#
    [ -n "$who" ] && c0=$(cpu_ns "$who")
    # shellcheck disable=SC2086
    line=$(timeout $((secs * 2 + 150)) $pin_c "$driver" --port "$port" ${mcopt[$port]:-} --conns 50 --pipeline "$p" --op "$op" \
        --keys "$k" --value-bytes "$value" --requests "$rb_n16" --seconds "$secs" "$@" | grep '^RESULT') ||
        { echo "mc_load $name $op failed: $line"; exit 1; }
    [ -n "$who" ] && c1=$(cpu_ns "$who")
    fig[$name.$op]=$(field ops_per_s "$line")
    fig[$name.$op.p50]=$(field p50_us "$line")
    fig[$name.$op.p99]=$(field p99_us "$line")
    [ -n "$who" ] && fig[$name.$op.cpu_us]=$(awk -v c=$((c1 - c0)) -v n="$(field requests "$line")" 'BEGIN {printf "%.2f", c / 1e3 / n}')
    echo "mc_load $name $op -P $p --keys $k: ${fig[$name.$op]}/s p50 ${fig[$name.$op.p50]} p99 ${fig[$name.$op.p99]} us, misses $(field misses "$line")${who:+, ${fig[$name.$op.cpu_us]} us CPU per request}"
}
mc_matrix() { # PREFIX PORT [PID]
    local w=${3:-}
    mc "$1.p1.rand" "$2" get 1 "$keys" "$w" --prefill
    mc "$1.p1.rand" "$2" set 1 "$keys" "$w"
    mc "$1.p16.rand" "$2" get 16 "$keys" "$w"
    mc "$1.p16.rand" "$2" set 16 "$keys" "$w"
    mc "$1.p1.hot" "$2" get 1 "$hot" "$w"
    mc "$1.p1.hot" "$2" set 1 "$hot" "$w"
    mc "$1.p16.hot" "$2" get 16 "$hot" "$w"
    mc "$1.p16.hot" "$2" set 16 "$hot" "$w"
}

resp_matrix redis "$redis_port"
mc_matrix memcached "$mc_port"

# --- the proxy (b, c, e, f) ------------------------------------------------
# idle_rss PORT NAME [--resp]: holds IDLE idle connections to PORT (each
# checked with a memcached `version`, or a PING with --resp; authenticated
# first where the port asks it), then the proxy's VmRSS.
idle_rss() {
    local line opts=${mcopt[$1]:-}
    [ "${3:-}" = --resp ] && opts="--resp${rpass[$1]:+ --auth ${rpass[$1]}}"
    : > "$work/idle.out"
    # shellcheck disable=SC2086 # $opts are options or nothing
    "$driver" --port "$1" --idle "$idle" --hold 120 $opts > "$work/idle.out" &
    idle_pid=$!
    for _ in $(seq 600); do
        grep -q '^ready' "$work/idle.out" && break
        kill -0 "$idle_pid" 2> /dev/null || break # it stopped: an auth refused (its stderr says)
        sleep 0.1
    done
    sleep 1 # what the proxy allocates as it settles its new connections
    fig[$2]=$(status_kb "$proxy_pid" VmRSS)
    kill -TERM "$idle_pid"
    wait "$idle_pid" || true
    idle_pid=""
    line=$(grep '^RESULT' "$work/idle.out") || { echo "mc_load --idle: no result"; cat "$work/idle.out"; exit 1; }
    fig[$2.alive]=$(field alive "$line")
    echo "proxy VmRSS with $idle idle connections ($2): $(mb "${fig[$2]}") MB; $(field open "$line") opened, ${fig[$2.alive]} still served at the end"
    [ "${fig[$2.alive]}" = "$idle" ] || { echo "the proxy did not hold $idle connections"; exit 1; }
}
median_of() { # the median of the numbers in $1, "-" if there are none
    if [ -z "${1// /}" ]; then echo "-"; else tr ' ' '\n' <<< "$1" | grep . | median; fi
}

metrics_ep="" metrics_scrape="off"
if [ "$have_proxy" = 1 ]; then
    px_opts=() last=memcache # the last port the proxy prints: it serves them all then
    [ "$auth" = 1 ] && px_opts+=(--requirepass "$pass")
    [ "$metrics" = 1 ] && px_opts+=(--metrics-port 0) && last=metrics
    # shellcheck disable=SC2086 # $pin_c is a command prefix, PROXY_ARGS options
    $pin_c "$proxy" --endpoint "$ep" --insecure --cache bench --resp-port 0 --memcache-port 0 \
        "${px_opts[@]}" "${ps_opts[@]}" ${PROXY_ARGS:-} > "$work/proxy.out" 2> "$work/proxy.err" &
    proxy_pid=$!
    for _ in $(seq 300); do grep -q "^$last listening on" "$work/proxy.out" 2> /dev/null && break; sleep 0.1; done
    resp_ep=$(sed -n 's/^resp listening on //p' "$work/proxy.out")
    mcp_ep=$(sed -n 's/^memcache listening on //p' "$work/proxy.out")
    metrics_ep=$(sed -n 's/^metrics listening on //p' "$work/proxy.out")
    if [ -z "$resp_ep" ] || [ -z "$mcp_ep" ] || { [ "$metrics" = 1 ] && [ -z "$metrics_ep" ]; }; then
        echo "momento-proxy did not start"
        cat "$work/proxy.out" "$work/proxy.err"
        exit 1
    fi
    resp_port=${resp_ep##*:} mcp_port=${mcp_ep##*:}
    if [ "$auth" = 1 ]; then
        rpass[$resp_port]=$pass
        mcopt[$mcp_port]="--binary --sasl-pass $pass"
    fi
    echo "momento-proxy (pid $proxy_pid): resp $resp_ep, memcache $mcp_ep${metrics_ep:+, metrics $metrics_ep}; AUTH=$auth METRICS=$metrics, memcache loads $([ "$auth" = 1 ] && echo "binary, SASL PLAIN" || echo text)"
    sleep 0.5
    fig[rss_start]=$(status_kb "$proxy_pid" VmRSS)
    echo "proxy VmRSS at start: $(mb "${fig[rss_start]}") MB"
    # Whether the memcache port serves yet (one connection, a `version`).
    # shellcheck disable=SC2086 # mc_load's protocol options
    "$driver" --port "$mcp_port" ${mcopt[$mcp_port]:-} --idle 1 --hold 0 | grep -q 'open=1 alive=1' && have_mc=1
    [ "$have_mc" = 1 ] || echo "the proxy's memcache port does not answer \`version\`: its loads are skipped"
    idle_rss "$resp_port" rss_idle_fresh --resp
    if [ "$have_mc" = 1 ]; then
        idle_rss "$mcp_port" rss_idle_fresh_mc
        fig[rss_idle_fresh_mc]=$(mb "${fig[rss_idle_fresh_mc]}")
    fi

    resp_matrix proxy_resp "$resp_port" "$proxy_pid"
    if [ "$have_mc" = 1 ]; then mc_matrix proxy_mc "$mcp_port" "$proxy_pid"; fi

    # 1000 busy connections, for the peak: GETs, no pipelining.
    # shellcheck disable=SC2086,SC2046 # $pin_c a prefix, $(ra) -a PASS or nothing
    timeout 300 $pin_c redis-benchmark -h 127.0.0.1 -p "$resp_port" $(ra "$resp_port") -c "$idle" -n "$rb_n1" -r "$keys" -d "$value" \
        -t get --csv > "$work/rb.csv" 2> "$work/rb.err" || { echo "redis-benchmark -c $idle failed"; cat "$work/rb.err"; exit 1; }
    fig[busy.get]=$(grep '^"GET"' "$work/rb.csv" | cut -d, -f2 | tr -d '"' | awk '{printf "%.0f", $1}')
    echo "redis-benchmark GET on $idle connections through the proxy: ${fig[busy.get]}/s"
    fig[rss_after]=$(status_kb "$proxy_pid" VmRSS)
    echo "proxy VmRSS after the loads: $(mb "${fig[rss_after]}") MB"
    idle_rss "$resp_port" rss_idle_after --resp
    fig[hwm]=$(status_kb "$proxy_pid" VmHWM)
    echo "proxy VmHWM (peak of the run): $(mb "${fig[hwm]}") MB"
fi

# --- the ratios (a against b, c): rounds alternating, medians --------------
# One reading of each load moves more between runs than the distance to a
# target, so the four ratios the targets judge are also taken RATIO_ROUNDS
# times, load-gen and the proxy alternating, each ratio within its round;
# the targets judge their medians.
rat() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b == 0) print ""; else printf "%.3f", a / b}'; }
rb_get() { # NAME PORT RANGE: -P 16 GETs alone through PORT; fig[NAME]
    # shellcheck disable=SC2086,SC2046 # $pin_c a prefix, $(ra) -a PASS or nothing
    timeout 300 $pin_c redis-benchmark -h 127.0.0.1 -p "$2" $(ra "$2") -c 50 -n "$rb_n16" -P 16 -r "$3" -d "$value" \
        -t get --csv > "$work/rb.csv" 2> "$work/rb.err" || { echo "redis-benchmark $1 failed"; cat "$work/rb.err"; exit 1; }
    fig[$1]=$(grep '^"GET"' "$work/rb.csv" | cut -d, -f2 | tr -d '"' | awk '{printf "%.0f", $1}')
}
r16s="" rhots="" m16s="" mhots="" r16ps="" m16ps=""
if [ "$have_proxy" = 1 ]; then
    for r in $(seq "$ratio_rounds"); do
        loadgen "lg_u.$r" --concurrency "$lg_conc" --keys 0 --batch
        if [ "$transport" = protosocket ]; then
            loadgen "lg_pu.$r" --concurrency "$lg_conc" --keys 0 --batch "${ps_opts[@]}"
        fi
        rb_get "rg_u.$r" "$resp_port" "$keys"
        loadgen "lg_h.$r" --concurrency "$lg_conc" --keys "$hot" --batch
        rb_get "rg_h.$r" "$resp_port" "$hot"
        r16s+=" $(rat "${fig[rg_u.$r]}" "${fig[lg_u.$r.ops]}")"
        rhots+=" $(rat "${fig[rg_h.$r]}" "${fig[lg_h.$r.ops]}")"
        if [ "$have_mc" = 1 ]; then
            mc "mg_u.$r" "$mcp_port" get 16 "$keys"
            mc "mg_h.$r" "$mcp_port" get 16 "$hot"
            m16s+=" $(rat "${fig[mg_u.$r.get]}" "${fig[lg_u.$r.ops]}")"
            mhots+=" $(rat "${fig[mg_h.$r.get]}" "${fig[lg_h.$r.ops]}")"
        fi
        if [ "$transport" = protosocket ]; then
            r16ps+=" $(rat "${fig[rg_u.$r]}" "${fig[lg_pu.$r.ops]}")"
            [ "$have_mc" = 1 ] && m16ps+=" $(rat "${fig[mg_u.$r.get]}" "${fig[lg_pu.$r.ops]}")"
            echo "ratio round $r, same transport: load-gen --batch over protosocket ${fig[lg_pu.$r.ops]} ops/s; RESP ${r16ps##* }${m16ps:+, memcache ${m16ps##* }}"
        fi
        echo "ratio round $r: RESP -P 16 GET ${fig[rg_u.$r]}/s vs load-gen ${fig[lg_u.$r.ops]} ops/s (${r16s##* }), hot ${fig[rg_h.$r]} vs ${fig[lg_h.$r.ops]} (${rhots##* })${m16s:+; memcache ${m16s##* }, hot ${mhots##* }}"
    done
fi

# --- low load (f): one connection, no pipelining, rounds alternating --------
lg_p50s="" lg_p99s="" rp50s="" rp99s="" mp50s="" mp99s="" rr99s="" mr99s=""
for r in $(seq "$rounds"); do
    loadgen "lg_c1.$r" --concurrency 1 --keys 0 "${ps_opts[@]}"
    lg_p50s+=" ${fig[lg_c1.$r.p50]}" lg_p99s+=" ${fig[lg_c1.$r.p99]}"
    # shellcheck disable=SC2086
    timeout 120 $pin_c redis-benchmark -h 127.0.0.1 -p "$redis_port" -c 1 -n "$low_n" -r "$keys" -d "$value" -t get --csv > "$work/rb.csv" 2> "$work/rb.err"
    rr99s+=" $(grep '^"GET"' "$work/rb.csv" | cut -d, -f7 | tr -d '"' | awk '{printf "%.0f", $1 * 1000}')"
    # shellcheck disable=SC2086
    line=$(timeout 120 $pin_c "$driver" --port "$mc_port" ${mcopt[$mc_port]:-} --conns 1 --pipeline 1 --keys "$keys" --requests "$low_n" --seconds 60 | grep '^RESULT')
    mr99s+=" $(field p99_us "$line")"
    if [ "$have_proxy" = 1 ]; then
        # shellcheck disable=SC2086,SC2046 # $pin_c a prefix, $(ra) -a PASS or nothing
        timeout 120 $pin_c redis-benchmark -h 127.0.0.1 -p "$resp_port" $(ra "$resp_port") -c 1 -n "$low_n" -r "$keys" -d "$value" -t get --csv > "$work/rb.csv" 2> "$work/rb.err"
        l=$(grep '^"GET"' "$work/rb.csv")
        rp50s+=" $(cut -d, -f5 <<< "$l" | tr -d '"' | awk '{printf "%.0f", $1 * 1000}')"
        rp99s+=" $(cut -d, -f7 <<< "$l" | tr -d '"' | awk '{printf "%.0f", $1 * 1000}')"
        if [ "$have_mc" = 1 ]; then
            # shellcheck disable=SC2086
            line=$(timeout 120 $pin_c "$driver" --port "$mcp_port" ${mcopt[$mcp_port]:-} --conns 1 --pipeline 1 --keys "$keys" --requests "$low_n" --seconds 60 | grep '^RESULT')
            mp50s+=" $(field p50_us "$line")" mp99s+=" $(field p99_us "$line")"
        fi
    fi
    echo "low load, round $r: load-gen get p50/p99 ${fig[lg_c1.$r.p50]}/${fig[lg_c1.$r.p99]} us; redis-server p99 ${rr99s##* }, memcached p99 ${mr99s##* }${rp99s:+; proxy RESP p50/p99 ${rp50s##* }/${rp99s##* }, memcache ${mp50s##* }/${mp99s##* } us}"
done
fig[low.lg.p50]=$(median_of "$lg_p50s") fig[low.lg.p99]=$(median_of "$lg_p99s")
fig[low.redis.p99]=$(median_of "$rr99s") fig[low.memcached.p99]=$(median_of "$mr99s")

if [ "$have_proxy" = 1 ]; then
    fig[low.resp.p50]=$(median_of "$rp50s") fig[low.resp.p99]=$(median_of "$rp99s")
    fig[low.mc.p50]=$(median_of "$mp50s") fig[low.mc.p99]=$(median_of "$mp99s")
    # The metrics port, read once: it served all along (what it costs is in
    # the figures above), and it counted the loads' GETs.
    if [ -n "$metrics_ep" ]; then
        if python3 - "$metrics_ep" > "$work/metrics.sum" 2> "$work/metrics.err" << 'EOF'
import sys, urllib.request
body = urllib.request.urlopen('http://%s/metrics' % sys.argv[1], timeout=10).read().decode()
gets = {}
samples = 0
for line in body.splitlines():
    if not line or line.startswith('#'):
        continue
    samples += 1
    name, _, val = line.rpartition(' ')
    if name.startswith('momento_proxy_commands_total{') and 'command="get"' in name:
        proto = name.split('protocol="', 1)[1].split('"', 1)[0]
        gets[proto] = gets.get(proto, 0) + float(val)
print(samples, ' '.join('%s=%.0f' % kv for kv in sorted(gets.items())))
EOF
        then
            metrics_scrape=ok
            echo "metrics at $metrics_ep/metrics: $(cut -d' ' -f1 "$work/metrics.sum") samples; GETs counted: $(cut -d' ' -f2- "$work/metrics.sum")"
        else
            metrics_scrape=failed
            echo "metrics at $metrics_ep/metrics: no answer: $(tail -1 "$work/metrics.err")"
        fi
    fi
    # SIGTERM: the proxy should drain and exit by itself.
    t0=$(date +%s%N)
    kill -TERM "$proxy_pid"
    for _ in $(seq 100); do kill -0 "$proxy_pid" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$proxy_pid" 2> /dev/null; then
        echo "momento-proxy still running 10 s after SIGTERM"
    else
        wait "$proxy_pid" || true
        echo "momento-proxy exited $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
    fi
    proxy_pid=""
fi
stop_server

# --- the table and the targets ---------------------------------------------
v() { echo "${fig[$1]:--}"; }
echo
echo "Machine: $(nproc) CPUs shared by client, proxy and servers (PIN=${PIN:-0}); load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$auth" = 1 ]; then
    auth_s="--requirepass: RESP loads AUTH, memcache loads SASL PLAIN in the binary protocol (memcached's binary too)"
else
    auth_s="no password: memcache loads in the text protocol"
fi
echo "Proxy: AUTH=$auth ($auth_s); METRICS=$metrics (/metrics read at the end: $metrics_scrape); TRANSPORT=$transport; TLS off${PROXY_ARGS:+; PROXY_ARGS: $PROXY_ARGS}"
echo "load-gen --batch, $lg_conc in flight: unique keys $(v lg_batch_unique.ops) ops/s ($(v lg_batch_unique.get_ops) gets/s, server $(v lg_batch_unique.srv_us) us CPU/op); hot keys $(v lg_batch_hot.ops) ops/s ($(v lg_batch_hot.get_ops) gets/s)"
echo
echo "| load (50 connections) | redis-server | proxy RESP | memcached | proxy memcache |"
echo "|---|---|---|---|---|"
for k in p1.rand p16.rand p1.hot p16.hot; do
    for op in get set; do
        echo "| ${op^^} ${k%%.*} ${k##*.} ops/s (p99 us) | $(v "redis.$k.$op") ($(v "redis.$k.$op.p99")) | $(v "proxy_resp.$k.$op") ($(v "proxy_resp.$k.$op.p99")) | $(v "memcached.$k.$op") ($(v "memcached.$k.$op.p99")) | $(v "proxy_mc.$k.$op") ($(v "proxy_mc.$k.$op.p99")) |"
    done
done
echo
echo "low load, 1 connection, GET p50 / p99 us (medians of $rounds): load-gen direct $(v low.lg.p50) / $(v low.lg.p99); proxy RESP $(v low.resp.p50) / $(v low.resp.p99); proxy memcache $(v low.mc.p50) / $(v low.mc.p99); redis-server p99 $(v low.redis.p99); memcached p99 $(v low.memcached.p99)"
echo "RESULT proxy_loadgen batch_unique_ops_per_s=$(v lg_batch_unique.ops) batch_unique_gets_per_s=$(v lg_batch_unique.get_ops) batch_hot_ops_per_s=$(v lg_batch_hot.ops) c1_get_p50_us=$(v low.lg.p50) c1_get_p99_us=$(v low.lg.p99)"
echo "RESULT proxy_scale redis_p16_get=$(v redis.p16.rand.get) redis_p16_hot_get=$(v redis.p16.hot.get) memcached_p16_get=$(v memcached.p16.rand.get) memcached_p16_hot_get=$(v memcached.p16.hot.get)"
if [ "$have_proxy" = 1 ]; then
    # ratio A B, minus A B, mark X TARGET [LE]: "-" where a figure is missing.
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b}'; }
    minus() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-") print "-"; else print a - b}'; }
    mark() { awk -v x="$1" -v t="$2" -v le="${3:-0}" 'BEGIN {if (x == "-") print "not measured"; else print ((le ? x <= t : x >= t) ? "met" : "NOT met")}'; }
    # The first pass's single readings, and the rounds' medians, which the
    # targets judge when there are rounds.
    r16_1=$(ratio "$(v proxy_resp.p16.rand.get)" "$(v lg_batch_unique.ops)")
    rhot_1=$(ratio "$(v proxy_resp.p16.hot.get)" "$(v lg_batch_hot.ops)")
    m16_1=$(ratio "$(v proxy_mc.p16.rand.get)" "$(v lg_batch_unique.ops)")
    mhot_1=$(ratio "$(v proxy_mc.p16.hot.get)" "$(v lg_batch_hot.ops)")
    med2() { local m; m=$(median_of "$1"); [ "$m" = "-" ] && echo "$2" || awk -v x="$m" 'BEGIN {printf "%.2f", x}'; }
    r16=$(med2 "$r16s" "$r16_1") rhot=$(med2 "$rhots" "$rhot_1")
    m16=$(med2 "$m16s" "$m16_1") mhot=$(med2 "$mhots" "$mhot_1")
    [ "$transport" = protosocket ] && echo "RESULT proxy_ratios_same_transport rounds=$ratio_rounds p16_get_over_lg_protosocket=[${r16ps# }] median=$(med2 "$r16ps" -) mc_p16_get_over_lg_protosocket=[${m16ps# }] median=$(med2 "$m16ps" -)"
    echo "RESULT proxy_ratios transport=$transport rounds=$ratio_rounds p16_get=[${r16s# }] hot_get=[${rhots# }] mc_p16_get=[${m16s# }] mc_hot_get=[${mhots# }] first_pass p16_get=$r16_1 hot_get=$rhot_1 mc_p16_get=$m16_1 mc_hot_get=$mhot_1"
    # The figure judged: the larger of the RESP-port readings, fresh and after the loads.
    rss_idle=$(awk -v a="${fig[rss_idle_fresh]}" -v b="${fig[rss_idle_after]}" 'BEGIN {print (a > b ? a : b)}')
    added=$(minus "$(v low.resp.p99)" "$(v low.lg.p99)")
    added_mc=$(minus "$(v low.mc.p99)" "$(v low.lg.p99)")
    echo "RESULT proxy_resp p16_get=$(v proxy_resp.p16.rand.get) p16_hot_get=$(v proxy_resp.p16.hot.get) p1_get=$(v proxy_resp.p1.rand.get) cpu_us_per_req_p16=$(v proxy_resp.p16.rand.cpu_us) cpu_us_per_req_p16_hot=$(v proxy_resp.p16.hot.cpu_us) low_get_p50_us=$(v low.resp.p50) low_get_p99_us=$(v low.resp.p99)"
    echo "RESULT proxy_mc p16_get=$(v proxy_mc.p16.rand.get) p16_hot_get=$(v proxy_mc.p16.hot.get) p1_get=$(v proxy_mc.p1.rand.get) cpu_us_per_get_p16=$(v proxy_mc.p16.rand.get.cpu_us) low_get_p50_us=$(v low.mc.p50) low_get_p99_us=$(v low.mc.p99)"
    echo "RESULT proxy_rss start_mb=$(mb "${fig[rss_start]}") idle_${idle}_fresh_mb=$(mb "${fig[rss_idle_fresh]}") idle_${idle}_memcache_mb=$(v rss_idle_fresh_mc) after_load_mb=$(mb "${fig[rss_after]}") idle_${idle}_after_mb=$(mb "${fig[rss_idle_after]}") peak_mb=$(mb "${fig[hwm]}")"
    echo "RESULT proxy_config auth=$auth metrics=$metrics tls=0 memcache_protocol=$([ "$auth" = 1 ] && echo binary_sasl || echo text) metrics_scrape=$metrics_scrape proxy_args=$([ -n "${PROXY_ARGS:-}" ] && echo yes || echo no)"
    echo "RESULT proxy_targets p16_get_ratio=$r16 ($(mark "$r16" 1.00)) mc_p16_get_ratio=$m16 ($(mark "$m16" 1.00)) hot_get_ratio=$rhot ($(mark "$rhot" 1.00)) mc_hot_get_ratio=$mhot ($(mark "$mhot" 1.00)) p99_added_us=$added ($(mark "$added" 100 1)) mc_p99_added_us=$added_mc ($(mark "$added_mc" 100 1)) rss_${idle}_mb=$(mb "$rss_idle") ($(mark "$rss_idle" 65536 1))"
else
    echo "(no $proxy: the proxy's parts were skipped)"
fi
