# Sourced by run.sh and compression.sh, with $here and $server_bin set and
# the package the script needs as $1: skips (exit 77) where node is absent,
# installs the pinned packages with `npm ci` when that one is not installed
# yet, then starts momento-local on a free port, stopped when the script
# exits. Sets endpoint (host:port), host and port.
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
