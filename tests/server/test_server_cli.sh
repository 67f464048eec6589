#!/usr/bin/env bash
# The momento-local command line: --help, refusal of bad options with exit
# status 2, and the counters printed and written (--stats-json) on SIGTERM.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" --help | grep -q -- "--max-memory" || fail "--help does not document --max-memory"
for bad in "--port 70000" "--port abc" "--bind localhost" "--max-rps -1" "--list-page-size x" "--list-page-size 4294967296" "--tls-cert x" "--nope" "extra"; do
    set +e
    # shellcheck disable=SC2086
    "$bin" $bad >/dev/null 2>"$tmp/err"
    rc=$?
    set -e
    [ "$rc" -eq 2 ] || fail "'$bad' exited $rc, want 2"
    [ -s "$tmp/err" ] || fail "'$bad' gave no message"
done

"$bin" --port 0 --cache warm --stats-json "$tmp/stats.json" > "$tmp/out" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/out" && break; sleep 0.1; done
grep -q "^listening on 127.0.0.1:[0-9]*$" "$tmp/out" || fail "no 'listening on' line"
kill -TERM "$pid"
wait "$pid" || fail "momento-local exited non-zero after SIGTERM"
grep -q '"total": 0' "$tmp/stats.json" || fail "--stats-json was not written"
grep -q '"total": 0' "$tmp/out" || fail "stats were not printed on SIGTERM"
echo "momento-local CLI checks passed"
