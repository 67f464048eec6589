# Helpers shared by the bench scripts; sourced after $build is set, not run.
# Sets $work (a scratch directory removed on exit) and $server.
#   start_server ARGS...  momento-local on a free loopback port with ARGS,
#                         prefixed by $wrap if set (taskset, valgrind);
#                         sets $pid and $ep, its stdout in $work/out.
#   stop_server           SIGTERM, and wait: the server's exit report is then
#                         complete in $work/out.
#   field KEY LINE        the value of KEY=value in a RESULT-style line.
#   json FILE EXPR        a Python expression over r = the JSON in FILE.
#   median                the median of numbers on stdin, one per line.
#   cg_total FILE         total instructions in a callgrind output file.
server="$build/server/momento-local"
[ -x "$server" ] || { echo "build first: $server is missing"; exit 1; }
work=$(mktemp -d)
pid=""
bench_cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap bench_cleanup EXIT

start_server() {
    : > "$work/out"
    # shellcheck disable=SC2086 # $wrap is a command prefix: split on purpose
    ${wrap:-} "$server" --port 0 "$@" > "$work/out" 2> "$work/err" &
    pid=$!
    for _ in $(seq 300); do grep -q "listening on" "$work/out" 2>/dev/null && break; sleep 0.1; done
    ep=$(sed -n 's/^listening on //p' "$work/out")
    [ -n "$ep" ] || { echo "momento-local did not start"; cat "$work/err"; exit 1; }
}
stop_server() { kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
json() { python3 -c "import json,sys; r=json.load(open('$1')); print($2)"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cg_total() {
    callgrind_annotate "$1" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
