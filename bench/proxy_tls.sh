#!/usr/bin/env bash
# What TLS to clients costs momento-proxy (issue 48 item 2): two proxies on
# the same momento-local, one plain, one with --tls-cert / --tls-key (a
# throwaway CA and certificate made here with openssl), loaded alike with
# redis-benchmark (Debian's has --tls), rounds alternating which goes
# first; medians.
#   a. GET rate, 50 connections, -P 16 and -P 1, random keys of KEYS (every
#      one prefilled, so GETs hit), and the proxy's CPU per GET (all its
#      threads, /proc/PID/task/*/schedstat, over the run);
#   b. at low load (one connection, no pipelining, LOW_N GETs): p50 / p99;
#   c. a new connection per GET (redis-benchmark -k 0, 50 at once,
#      CONN_N GETs): connections per second, each over TLS a full
#      handshake, and the proxy's CPU per connection.
# Prints the runs as they go and a RESULT line per figure: plain, tls and
# tls / plain.
#
# Usage: bench/proxy_tls.sh [BUILD_DIR]   (default build; a debugoptimized
#   build, as the other scripts). Needs redis-benchmark, redis-cli
#   (redis-tools) and openssl.
# Environment: ROUNDS (3), KEYS (100000), VALUE (100 bytes), RB_N (600000
#   requests per -P 16 run; a fifth of it at -P 1), LOW_N (20000), CONN_N
#   (20000), KEY_TYPE (ec: a P-256 key, what the handshake costs with it;
#   rsa: RSA 2048).
# Loopback only; every run is bounded by a request count and a timeout.
# The client, both proxies and the server share this machine's cores.
set -euo pipefail
build=${1:-build}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
rounds=${ROUNDS:-3}
keys=${KEYS:-100000}
value=${VALUE:-100}
rb_n=${RB_N:-600000}
low_n=${LOW_N:-20000}
conn_n=${CONN_N:-20000}
key_type=${KEY_TYPE:-ec}
proxy="$build/proxy/momento-proxy"
[ -x "$proxy" ] || { echo "build first: $proxy is missing"; exit 1; }
for c in redis-benchmark redis-cli openssl; do
    command -v "$c" > /dev/null || { echo "$c is missing (Debian: redis-tools, openssl)"; exit 1; }
done
redis-benchmark --help 2>&1 | grep -q -- --tls || { echo "redis-benchmark is built without TLS"; exit 1; }

pids=()
tls_cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; bench_cleanup; }
trap tls_cleanup EXIT

case "$key_type" in
ec) newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1) ;;
rsa) newkey=(-newkey rsa:2048) ;;
*) echo "KEY_TYPE must be ec or rsa"; exit 1 ;;
esac
(
    cd "$work"
    openssl req -x509 "${newkey[@]}" -nodes -keyout ca.key -out ca.crt -days 2 \
        -subj "/CN=bench CA" 2> /dev/null
    openssl req "${newkey[@]}" -nodes -keyout server.key -out server.csr \
        -subj "/CN=localhost" 2> /dev/null
    echo "subjectAltName = DNS:localhost, IP:127.0.0.1" > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial 1 -days 2 \
        -extfile server.ext -out server.crt 2> /dev/null
)

start_server --cache bench
echo "momento-local on $ep (pid $pid)"

declare -A port proc
start_proxy() { # NAME ARGS...
    local name=$1
    shift
    "$proxy" --endpoint "$ep" --insecure --cache bench --resp-port 0 "$@" \
        > "$work/$name.out" 2> "$work/$name.err" &
    pids+=($!)
    proc[$name]=$!
    for _ in $(seq 300); do grep -q "^resp listening on" "$work/$name.out" 2> /dev/null && break; sleep 0.1; done
    local r
    r=$(sed -n 's/^resp listening on //p' "$work/$name.out")
    [ -n "$r" ] || { echo "proxy $name did not start"; cat "$work/$name.err"; exit 1; }
    port[$name]=${r##*:}
    echo "proxy $name: resp $r"
}
start_proxy plain
start_proxy tls --tls-cert "$work/server.crt" --tls-key "$work/server.key"
resp_prefill_keys "${port[plain]}" "$keys" "$value"

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
# rb NAME ARGS...: one redis-benchmark GET run against proxy NAME; prints
# its CSV line's fields "rps p50_ms p99_ms" and the proxy's CPU ns.
rb() {
    local name=$1
    shift
    local tls=()
    [ "$name" = tls ] && tls=(--tls --cacert "$work/ca.crt")
    local before after
    before=$(cpu_ns "${proc[$name]}")
    timeout 300 redis-benchmark -h 127.0.0.1 -p "${port[$name]}" "${tls[@]}" -r "$keys" -d "$value" \
        -t get --csv "$@" > "$work/rb.csv" 2> "$work/rb.err" ||
        { echo "redis-benchmark failed"; cat "$work/rb.err"; exit 1; }
    after=$(cpu_ns "${proc[$name]}")
    grep '^"GET"' "$work/rb.csv" | tr -d '"' |
        awk -F, -v cpu=$((after - before)) '{printf "%.0f %.3f %.3f %s\n", $2, $5, $7, cpu}'
}

declare -A runs
for r in $(seq "$rounds"); do
    order="plain tls"
    [ $((r % 2)) = 0 ] && order="tls plain"
    for w in $order; do
        read -r rps16 _ _ cpu16 < <(rb "$w" -c 50 -P 16 -n "$rb_n")
        read -r rps1 _ _ cpu1 < <(rb "$w" -c 50 -n $((rb_n / 5)))
        read -r _ p50 p99 _ < <(rb "$w" -c 1 -n "$low_n")
        read -r cps _ _ cpuc < <(rb "$w" -c 50 -k 0 -n "$conn_n")
        ns16=$((cpu16 / rb_n)) ns1=$((cpu1 / (rb_n / 5))) nsc=$((cpuc / conn_n))
        p50=$(awk -v v="$p50" 'BEGIN {printf "%.0f", v * 1000}')
        p99=$(awk -v v="$p99" 'BEGIN {printf "%.0f", v * 1000}')
        runs[$w.p16]+=" $rps16" runs[$w.p1]+=" $rps1" runs[$w.p50]+=" $p50" runs[$w.p99]+=" $p99"
        runs[$w.conn]+=" $cps" runs[$w.cpu16]+=" $ns16" runs[$w.cpu1]+=" $ns1" runs[$w.cpuc]+=" $nsc"
        echo "round $r $w: -P 16 GET $rps16/s ($ns16 ns CPU each), -P 1 $rps1/s ($ns1 ns)," \
            "1 conn p50 $p50 us p99 $p99 us, new connection per GET $cps/s ($nsc ns CPU each)"
    done
done
med() { tr ' ' '\n' <<< "$1" | grep . | median; }
for f in p16:get_rate_p16 p1:get_rate_p1 p50:p50_us p99:p99_us conn:connections_per_s \
    cpu16:cpu_ns_per_get_p16 cpu1:cpu_ns_per_get_p1 cpuc:cpu_ns_per_connection; do
    k=${f%%:*} name=${f#*:}
    a=$(med "${runs[plain.$k]}") b=$(med "${runs[tls.$k]}")
    echo "RESULT figure=$name key=$key_type plain=$a tls=$b tls_over_plain=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')"
done
