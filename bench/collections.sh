#!/usr/bin/env bash
# momento-local's cost per collection operation on collections of 1,000 and
# of 100,000 elements (issue 16 item 5): each operation names or returns a
# fixed number of elements (10 or fewer), so its cost should not grow with
# the collection. For each operation and size the server runs under
# callgrind (all threads) while bench/coll_driver (libmomento, IN_FLIGHT
# requests in flight) fills one collection of SIZE elements, then runs the
# operation in three phases - WARM_OPS (first calls, lazy binding),
# OPS_SHORT, OPS_LONG - and has callgrind dump the server's counters after
# the fill and after each phase (callgrind_control -d). (long phase - short
# phase) / (OPS_LONG - OPS_SHORT) is the server's instructions per
# operation: start-up, the fill and shutdown lie outside both phases, and
# what each phase costs once (its start, its drain, the dump) cancels.
# Two figures:
#   total    the whole server process (gRPC and HTTP/2 included), the
#            target's measure: LARGE / SMALL must stay <= LIMIT;
#   handling srv_dispatch() inclusive: decoding the request, the
#            collection work, packing the reply - the part that could grow
#            with the collection, so its ratio is the sharper test.
# Usage: bench/collections.sh [BUILD_DIR]   (default: build). Loopback
# only; every load is bounded by an operation count and a timeout.
# Environment: WARM_OPS (50), OPS_SHORT (200), OPS_LONG (2200), IN_FLIGHT
# (10), LIMIT (1.5), SMALL (1000), LARGE (100000), ONLY (operations to run,
# default all). About 6 minutes.
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/common.sh"
driver="$build/bench/coll_driver"
[ -x "$driver" ] || { echo "build first: $driver is missing"; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing"; exit 1; }
command -v callgrind_control >/dev/null || { echo "callgrind_control is missing"; exit 1; }
warm_ops=${WARM_OPS:-50}
short_ops=${OPS_SHORT:-200}
long_ops=${OPS_LONG:-2200}
in_flight=${IN_FLIGHT:-10}
limit=${LIMIT:-1.5}
small=${SMALL:-1000}
large=${LARGE:-100000}
all_ops="dictionary_get_field dictionary_set_field dictionary_get_fields dictionary_length
set_contains set_add_remove set_sample set_length
list_push_pop list_fetch list_length
sorted_set_put sorted_set_fetch_by_rank sorted_set_fetch_by_score sorted_set_get_rank
sorted_set_length_by_score sorted_set_increment"
ops=${ONLY:-$all_ops}
[ "$long_ops" -gt "$short_ops" ] || { echo "OPS_LONG must exceed OPS_SHORT"; exit 1; }

# The inclusive instructions of srv_dispatch in a callgrind output file.
cg_dispatch() {
    local n
    n=$(callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
        sed -n 's/^ *\([0-9,]*\) .*:srv_dispatch \[.*/\1/p' | head -1 | tr -d ,)
    echo "${n:-0}"
}

# Runs in a command substitution: says why on stderr, stops the server.
fail() { echo "$*" >&2; [ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 1; }

# $1 = op, $2 = size: prints "total handling" instructions per operation.
per_op() {
    rm -f "$work"/cg.*
    wrap="valgrind --tool=callgrind --callgrind-out-file=$work/cg.out" start_server --cache bench
    timeout 300 "$driver" --endpoint "$ep" --op "$1" --size "$2" --in-flight "$in_flight" \
        --phases "$warm_ops,$short_ops,$long_ops" --dump-pid "$pid" \
        > "$work/driver" 2> "$work/driver.err" ||
        fail "$(cat "$work/driver" "$work/driver.err")" "driver failed: $1 size $2"
    stop_server
    # Every request answered OK, and the server saw exactly the fill's and
    # the driver's requests (the last line of its output is its counters).
    local requests fill
    requests=$(field requests " $(cat "$work/driver")")
    fill=$(( ($2 + 999) / 1000 ))
    tail -1 "$work/out" > "$work/stats.json"
    json "$work/stats.json" \
        "'ok' if r['total'] == $fill + $requests and all(m['total'] == m.get('OK') for m in r['methods'].values()) else r" \
        > "$work/check"
    [ "$(cat "$work/check")" = ok ] ||
        fail "server counters for $1 size $2, expected $fill + $requests OK: $(cat "$work/check")"
    # Dumps: .1 start-up and fill, .2 the warm-up, .3 the short phase, .4
    # the long one.
    [ -s "$work/cg.out.4" ] || fail "callgrind wrote no dump of the long phase"
    local d=$((long_ops - short_ops))
    echo "$(( ($(cg_total "$work/cg.out.4") - $(cg_total "$work/cg.out.3")) / d ))" \
         "$(( ($(cg_dispatch "$work/cg.out.4") - $(cg_dispatch "$work/cg.out.3")) / d ))"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
verdict() { awk -v r="$1" -v m="$limit" 'BEGIN { print (r <= m ? "PASS" : "FAIL") }'; }

echo "== callgrind: momento-local instructions per operation, $small vs $large elements"
echo "   ($in_flight in flight; (phase of $long_ops ops - phase of $short_ops) / $((long_ops - short_ops)); target: $large / $small <= $limit)"
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
    vh=$(verdict "$rh")
    [ "$vt" = PASS ] || fails=$((fails + 1))
    rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$op" "${a[0]}" "${b[0]}" "$rt" "$vt" \
        "${a[1]}" "${b[1]}" "$rh" "$vh")")
    echo "${rows[-1]}   ($((SECONDS - start)) s)"
    result+=" $op=${a[0]}/${b[0]}/${a[1]}/${b[1]}"
done
echo
echo "| operation | total/op $small | total/op $large | ratio | ≤ $limit | handling/op $small | handling/op $large | ratio | ≤ $limit |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "(total = the whole server process, the target's measure; handling ="
echo " srv_dispatch() inclusive; set_add_remove and list_push_pop are two RPCs"
echo " per op; $((SECONDS - start)) s)"
echo "$result failures=$fails"
[ "$fails" -eq 0 ]
