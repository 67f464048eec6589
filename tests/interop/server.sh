# Sourced by run.sh and compression.sh, with $here and $server_bin set and
# the package the script needs as $1: skips (exit 77) where node is absent,
# installs the pinned packages with `npm ci` when that one is not installed
# yet, then starts momento-local on a free port, stopped when the script
# exits. Sets endpoint (host:port), host and port, and defines both_ways.
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed; the interop suite needs Node.js"
    exit 77
fi
if [ ! -d "$here/node_modules/$1" ]; then
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
out=$(mktemp)
"$server_bin" --port 0 > "$out" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do
    grep -q "listening on" "$out" && break
    sleep 0.1
done
endpoint=$(sed -n 's/^listening on //p' "$out")
[ -n "$endpoint" ] || { echo "momento-local did not start"; exit 1; }
host=${endpoint%:*}
port=${endpoint##*:}

# Each client reads what the other wrote:
# both_ways WHAT C-PROGRAM NODE-SCRIPT runs `C-PROGRAM write`, then
# `node NODE-SCRIPT verify-c`, then `node NODE-SCRIPT write`, then
# `C-PROGRAM read`, every one of them; fails when any failed.
both_ways() {
    local rc=0
    echo "# $1: libmomento writes, the Node SDK reads"
    "$2" write "$endpoint" || rc=1
    node "$3" verify-c "$host" "$port" || rc=1
    echo "# $1: the Node SDK writes, libmomento reads"
    node "$3" write "$host" "$port" || rc=1
    "$2" read "$endpoint" || rc=1
    return $rc
}
