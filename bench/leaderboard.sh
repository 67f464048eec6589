#!/usr/bin/env bash
# momento-local's cost per leaderboard query on leaderboards of 1,000 and
# of 1,000,000 elements, in the same run (issue 32 item 1): each query
# names or returns 10 elements (bench/lb_driver.c), so its cost should not
# grow with the leaderboard; the target is LARGE / SMALL <= 1.5.
#
# For each query and size the server runs under callgrind with its
# instrumentation off while bench/lb_driver fills the leaderboard (raw
# gRPC, 8192 elements an upsert), then on (callgrind_control -i on) for
# three phases of queries, one call at a time - WARM_OPS, OPS_SHORT,
# OPS_LONG - each followed by a dump (callgrind_control -d). (long phase -
# short phase) / (OPS_LONG - OPS_SHORT) is the server's instructions per
# query: start-up and the fill are outside both phases, and what a phase
# costs once cancels. Two figures, as bench/collections.sh gives them:
#   total    the whole server process (gRPC and HTTP/2 included): the
#            target's measure;
#   handling srv_dispatch() inclusive: decoding the request, the
#            leaderboard's work, packing the reply - the part that could
#            grow with the leaderboard, so its ratio is the sharper test.
# Instructions, not time: they do not see cache misses, which a 1M-element
# skiplist has more of; NATIVE=1 adds each query's server CPU time (its
# threads' schedstat over a run of NATIVE_OPS queries, not under valgrind).
# Usage: bench/leaderboard.sh [BUILD_DIR]   (default: build). Loopback
# only; every run is bounded by a query count and a timeout.
# Environment: WARM_OPS (50), OPS_SHORT (200), OPS_LONG (2200), LIMIT
# (1.5), SMALL (1000), LARGE (1000000), ONLY (queries, default all four),
# NATIVE (0), NATIVE_OPS (20000). About 4 minutes (NATIVE=1: one more).
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/common.sh"
driver="$build/bench/lb_driver"
[ -x "$driver" ] || { echo "build first: $driver is missing"; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing"; exit 1; }
command -v callgrind_control >/dev/null || { echo "callgrind_control is missing"; exit 1; }
warm_ops=${WARM_OPS:-50}
short_ops=${OPS_SHORT:-200}
long_ops=${OPS_LONG:-2200}
limit=${LIMIT:-1.5}
small=${SMALL:-1000}
large=${LARGE:-1000000}
native=${NATIVE:-0}
native_ops=${NATIVE_OPS:-20000}
ops=${ONLY:-get_rank get_by_rank get_by_score get_competition_rank}
[ "$long_ops" -gt "$short_ops" ] || { echo "OPS_LONG must exceed OPS_SHORT"; exit 1; }

cg_dispatch() {
    local n
    n=$(callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
        sed -n 's/^ *\([0-9,]*\) .*:srv_dispatch \[.*/\1/p' | head -1 | tr -d ,)
    echo "${n:-0}"
}

fail() { echo "$*" >&2; [ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 1; }

# The server's CPU time so far, in ns: every thread's schedstat.
server_cpu_ns() { cat /proc/"$pid"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }

# $1 = query, $2 = size: prints "total handling" instructions per query.
per_op() {
    rm -f "$work"/cg.*
    wrap="valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$work/cg.out" \
        start_server --cache bench
    timeout 900 "$driver" --endpoint "$ep" --op "$1" --size "$2" \
        --phases "$warm_ops,$short_ops,$long_ops" --callgrind-pid "$pid" \
        > "$work/driver" 2> "$work/driver.err" ||
        fail "$(cat "$work/driver" "$work/driver.err")" "driver failed: $1 size $2"
    stop_server
    # Every call answered OK: the server's counters (its last line).
    tail -1 "$work/out" > "$work/stats.json"
    json "$work/stats.json" \
        "'ok' if all(m['total'] == m.get('OK') for m in r['methods'].values()) else r" \
        > "$work/check"
    [ "$(cat "$work/check")" = ok ] || fail "server counters for $1 size $2: $(cat "$work/check")"
    # Dumps: .1 the warm-up, .2 the short phase, .3 the long one.
    [ -s "$work/cg.out.3" ] || fail "callgrind wrote no dump of the long phase"
    local d=$((long_ops - short_ops))
    echo "$(( ($(cg_total "$work/cg.out.3") - $(cg_total "$work/cg.out.2")) / d ))" \
         "$(( ($(cg_dispatch "$work/cg.out.3") - $(cg_dispatch "$work/cg.out.2")) / d ))"
}

# $1 = query, $2 = size: the server's CPU ns per query, natively (the
# fill and a warm-up of 200 queries not counted).
native_op() {
    start_server --cache bench
    timeout 300 "$driver" --endpoint "$ep" --op "$1" --size "$2" --phases 200 > /dev/null ||
        fail "native driver failed: $1 size $2"
    local before after
    before=$(server_cpu_ns)
    timeout 300 "$driver" --endpoint "$ep" --op "$1" --size "$2" --phases "$native_ops" \
        --no-fill > /dev/null || fail "native driver failed: $1 size $2"
    after=$(server_cpu_ns)
    stop_server
    echo $(( (after - before) / native_ops ))
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
verdict() { awk -v r="$1" -v m="$limit" 'BEGIN { print (r <= m ? "PASS" : "FAIL") }'; }

echo "== callgrind: momento-local instructions per leaderboard query, $small vs $large elements"
echo "   (one call at a time; (phase of $long_ops - phase of $short_ops) / $((long_ops - short_ops)); target: $large / $small <= $limit)"
rows=()
result="RESULT"
fails=0
start=$SECONDS
for op in $ops; do
    x=$(per_op "$op" "$small")
    y=$(per_op "$op" "$large")
    read -r -a a <<<"$x"
    read -r -a b <<<"$y"
    rt=$(ratio "${a[0]}" "${b[0]}")
    rh=$(ratio "${a[1]}" "${b[1]}")
    vt=$(verdict "$rt")
    [ "$vt" = PASS ] || fails=$((fails + 1))
    row="$(printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$op" "${a[0]}" "${b[0]}" "$rt" "$vt" \
        "${a[1]}" "${b[1]}" "$rh")"
    result+=" $op=${a[0]}/${b[0]}/${a[1]}/${b[1]}"
    if [ "$native" = 1 ]; then
        ns=$(native_op "$op" "$small")
        nl=$(native_op "$op" "$large")
        row+="$(printf ' %s | %s | %s |' "$ns" "$nl" "$(ratio "$ns" "$nl")")"
        result+="/cpu_ns=$ns/$nl"
    fi
    rows+=("$row")
    echo "${rows[-1]}   ($((SECONDS - start)) s)"
done
echo
head="| query | total/op $small | total/op $large | ratio | ≤ $limit | handling/op $small | handling/op $large | ratio |"
sep="|---|---|---|---|---|---|---|---|"
if [ "$native" = 1 ]; then
    head+=" cpu ns/op $small | cpu ns/op $large | ratio |"
    sep+="---|---|---|"
fi
echo "$head"
echo "$sep"
printf '%s\n' "${rows[@]}"
echo
echo "(total = the whole server process, the target's measure; handling ="
echo " srv_dispatch() inclusive; $((SECONDS - start)) s)"
echo "$result failures=$fails"
[ "$fails" -eq 0 ]
