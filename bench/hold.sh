#!/usr/bin/env bash
# How long one request can hold momento-local's single server thread
# (issue 27 item 9), seen by another client: bench/hold_driver sends a Get
# every 5 ms (1 s deadline) on its own connection while it runs each
# scenario's one heavy request, and reports the heavy request's time, the
# CPU time the server used meanwhile (the hold itself, near enough, on a
# machine busy with other work too) and the Gets it delayed (how many,
# how many timed out, the slowest). The
# scenarios: the issue's SortedSetUnionStore (one 100,000-element set named
# 1000 times), ListErase of 500,000 ranges over a 1,000,000-element list,
# GetBatch / DictionaryGet naming one big value many times (200 MB of
# reply), and the largest requests still allowed of each shape: a union
# of sources at the limit, fetch / scan / delete of a collection of each
# family at the 5 MiB item limit (of the smallest elements, the most per
# byte), a 5 MB write, GetWithHash of a 5 MiB item.
# The server is pinned to CPU 0 and the driver to CPU 1 when taskset is
# there (PIN=0: neither; the server's threads may then use both CPUs).
# Usage: bench/hold.sh [BUILD_DIR] [SERVER_BINARY]   (defaults: build, and
# BUILD_DIR's momento-local: pass an older binary to measure before a
# change). SCENARIOS: names to run (default all, see hold_driver.c).
# Loopback only; every heavy request has a 60 s deadline, every fill a
# fixed size; about 2 minutes (more against a server without the limits).
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/common.sh"
[ -n "${2:-}" ] && server=$2
driver="$build/bench/hold_driver"
[ -x "$driver" ] || { echo "build first: $driver is missing"; exit 1; }
pin_server="" pin_driver=""
if [ "${PIN:-1}" != 0 ] && command -v taskset >/dev/null; then
    pin_server="taskset -c 0"
    pin_driver="taskset -c 1"
fi

wrap=$pin_server start_server --cache bench
args=()
for s in ${SCENARIOS:-}; do args+=(--scenario "$s"); done
echo "== $server ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
$pin_driver "$driver" --endpoint "$ep" --server-pid "$pid" "${args[@]}" | tee "$work/lines"
stop_server
cpu=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^server_cpu_ms=/) { split($i, a, "="); if (a[2] > m) { m = a[2]; s = $1 } } } END { sub("scenario=", "", s); print m, s }' "$work/lines")
worst=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^victim_max_ms=/) { split($i, a, "="); if (a[2] > m) { m = a[2]; s = $1 } } } END { sub("scenario=", "", s); print m, s }' "$work/lines")
timeouts=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^victim_timeouts=/) { split($i, a, "="); t += a[2] } } END { print t + 0 }' "$work/lines")
echo "RESULT max_server_cpu_ms=${cpu% *} max_cpu_scenario=${cpu#* } worst_victim_ms=${worst% *} worst_scenario=${worst#* } victim_timeouts=$timeouts"
