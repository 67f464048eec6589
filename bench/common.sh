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
#   resp_prefill_keys PORT KEYS VALUE  SET key:%012d, KEYS keys of VALUE bytes,
#                         through a RESP port (redis-cli --pipe).
server="$build/server/momento-local"
[ -x "$server" ] || { echo "build first: $server is missing"; exit 1; }
# The drivers (mc_load, raw_client, ...) are not built by default: nothing
# here is installed. Build them now, as a script would need them.
ninja -C "$build" bench-programs > /dev/null ||
    { echo "ninja -C $build bench-programs failed"; exit 1; }
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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # PORT: until something accepts on it (10 s at most)
    for _ in $(seq 100); do
        (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null && return 0
        sleep 0.1
    done
    return 1
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
json() { python3 -c "import json,sys; r=json.load(open('$1')); print($2)"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cg_total() {
    callgrind_annotate "$1" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
resp_prefill_keys() { # PORT KEYS VALUE: SET key:%012d for KEYS keys of VALUE bytes (redis-cli --pipe)
    python3 - "$2" "$3" << 'EOF' | timeout 120 redis-cli -h 127.0.0.1 -p "$1" --pipe > "$work/pipe.out"
import sys
n, vlen = int(sys.argv[1]), int(sys.argv[2])
v = b'x' * vlen
out = sys.stdout.buffer
for i in range(n):
    k = b'key:%012d' % i
    out.write(b'*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' % (len(k), k, len(v), v))
EOF
    grep -q "errors: 0, replies: $2" "$work/pipe.out" || { echo "prefill through port $1 failed"; cat "$work/pipe.out"; exit 1; }
}
