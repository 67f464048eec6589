#!/usr/bin/env bash
# Memory checks, run by CI after the README's test command:
#   1. the whole suite built with ASan+UBSan (any report fails the test);
#   2. unit and integration suites under valgrind memcheck (and momento-proxy
#      under its scripts);
#   3. momento-local under valgrind, driven through every RPC by the interop
#      scripts (topics too), then stopped with SIGTERM: a clean shutdown
#      leaks nothing;
#   4. the examples once under valgrind, each with its embedded server.
# In every valgrind run any error, definite or possible leak fails, read
# with valgrind/libmomento.supp: the suppressions the project installs for
# its users (gRPC's memory at exit; each entry says why), so this checks
# what they check, the way docs/reliability.md tells them to.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

supp="$PWD/valgrind/libmomento.supp"
# --fair-sched: valgrind runs one thread at a time, and by default a busy
# thread keeps running while others wait; momento-local's long requests run
# in slices meant to let the other threads in (test_server_turns), which
# then starved. Fair scheduling costs nothing measurable here (the client
# and coalescer suites: 234 s with it, 237 s without).
vg="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,possible \
    --show-leak-kinds=definite,possible --fair-sched=yes --suppressions=$supp -q"

echo "== ASan + UBSan: all suites (unit, integration, faults, interop, examples)"
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
ninja -C build-asan >/dev/null
# ASan makes the tests 2-3 times slower: their timeouts (sized for a plain
# build on a loaded machine, issue 46) are stretched to match.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-asan --print-errorlogs --timeout-multiplier 3

echo "== valgrind memcheck: unit and integration suites"
# What the tests run (meson-test-prereq: not built by default, as not
# installed; the runs below say --no-rebuild) and the examples run last.
ninja -C build all meson-test-prereq examples/hello examples/event-loop examples/async \
    examples/faults >/dev/null
# Three tests at a time, each in its own `meson test`, the slowest first.
# Under valgrind a process runs one thread at a time, so one test keeps one
# core busy at most, and most of its time is spent waiting (deadlines,
# sleeps and windows scaled by MOMENTO_TEST_TIME_SCALE, tokens that
# expire): two at once used both cores of a small machine and halved the
# wall time of the pass; a third fills the waits (the protosocket reruns
# of issue 31 added six tests, and the pass had to stay within CI's time).
# The clients' own deadlines (5 s by default) are not scaled; no test
# relies on a default deadline being long enough under valgrind.
# The order only balances the lanes: a test not named here (a new one)
# runs after these, so every test of the two suites runs.
slow_first="server_turns coalescer coalescer_ps server_collections server_limits batching server
    server_topics tokens client topics deadlines cancel_ps collections_list bad_server server_lists
    cancel deadlines_ps"
all=$(meson test -C build --no-rebuild --list --suite unit --suite integration |
      sed -n 's|^[^:]*:[a-z_]* / ||p')
order=$( (for t in $slow_first; do grep -qx "$t" <<<"$all" && echo "$t"; done
          grep -vxF -f <(tr ' ' '\n' <<<"$slow_first" | sed '/^$/d') <<<"$all" || true) )
vg_one() {  # one test under valgrind; its output printed only if it fails
    local name=$1 out start=$SECONDS
    out=$(mktemp)
    if MOMENTO_TEST_TIME_SCALE=20 meson test -C build --no-rebuild --suite unit --suite integration \
        --wrapper "$vg" --timeout-multiplier 20 --logbase "memcheck-$name" --print-errorlogs \
        "$name" > "$out" 2>&1; then
        printf '%-22s OK %6d s\n' "$name" $((SECONDS - start))
    else
        printf '%-22s FAIL after %d s\n' "$name" $((SECONDS - start))
        cat "$out"
        rm -f "$out"
        return 1
    fi
    rm -f "$out"
}
export -f vg_one
export vg
lanes_start=$SECONDS
if ! xargs -P 3 -n 1 bash -c 'vg_one "$1"' _ <<<"$order"; then
    echo "valgrind memcheck: a test failed (its output is above)"
    exit 1
fi
echo "valgrind memcheck: $(wc -l <<<"$order") tests clean in $((SECONDS - lanes_start)) s (three lanes)"

echo "== valgrind memcheck: momento-local through SIGTERM"
if command -v node >/dev/null && [ -d tests/interop/node_modules/@gomomento/sdk ]; then
    out=$(mktemp)
    $vg build/server/momento-local --port 0 > "$out" &
    pid=$!
    for _ in $(seq 300); do grep -q "listening on" "$out" && break; sleep 0.1; done
    endpoint=$(sed -n 's/^listening on //p' "$out")
    node tests/interop/interop.js "${endpoint%:*}" "${endpoint##*:}" | tail -n 1
    node tests/interop/topics.js "${endpoint%:*}" "${endpoint##*:}" | tail -n 1
    kill -TERM "$pid"
    wait "$pid"   # exits 99 on any valgrind error or leak
    rm -f "$out"
    echo "momento-local: clean under valgrind"
else
    echo "SKIP: node or the interop SDK is missing; the server leak check needs them"
fi
echo "== valgrind memcheck: the examples"
$vg build/examples/hello > /dev/null
$vg build/apps/load-gen --duration 2 --rps 200 --quiet > /dev/null
$vg build/apps/request-coalescing --duration 1 --rps 0 --concurrency 50 --quiet \
    --json /tmp/memcheck-rc.json --plot /tmp/memcheck-rc.svg > /dev/null
rm -f /tmp/memcheck-rc.json /tmp/memcheck-rc.svg
$vg build/apps/leaderboard --players 200 > /dev/null
$vg build/apps/session-store > /dev/null
$vg build/apps/topics-fanout --duration 1 --subscribers 3 --clients 2 --rate 100 --quiet > /dev/null
$vg build/apps/metrics-prometheus --requests 500 > /dev/null
$vg build/examples/event-loop --requests 2000 --per-tick 20 > /dev/null
$vg build/examples/async > /dev/null
$vg build/examples/faults > /dev/null
echo "examples: clean under valgrind"
echo "== valgrind memcheck: momento-proxy under its scripts"
# The proxy's scripts (every command, both protocols, malformed input)
# with the proxy itself under valgrind: each script ends it with SIGTERM and
# fails unless it exits 0, which valgrind's --error-exitcode makes 99 on any
# error or leak. backend.py and pipeline.py stay out: they measure timing
# (deadlines, drain windows, load), which valgrind's slowdown distorts.
vgproxy=$(mktemp)
printf '#!/bin/sh\nexec %s %s "$@"\n' "$vg" "$PWD/build/proxy/momento-proxy" > "$vgproxy"
chmod +x "$vgproxy"
for t in resp_script mc_script redis_cli malformed; do
    out=$(mktemp)
    if ! LD_LIBRARY_PATH=build/lib /usr/bin/python3 "tests/proxy/$t.py" --proxy "$vgproxy" \
        --redis-server /usr/bin/redis-server --redis-cli /usr/bin/redis-cli \
        --redis-benchmark /usr/bin/redis-benchmark --memcached /usr/bin/memcached \
        --tools-dir /usr/bin > "$out" 2>&1; then
        grep -v '^ok' "$out"
        echo "valgrind memcheck: momento-proxy failed tests/proxy/$t.py (above)"
        rm -f "$out" "$vgproxy"
        exit 1
    fi
    echo "tests/proxy/$t.py: $(tail -n 1 "$out")"
    rm -f "$out"
done
rm -f "$vgproxy"
echo "momento-proxy: clean under valgrind"
echo "memcheck passed"
