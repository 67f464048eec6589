#!/usr/bin/env bash
# Races, checked by a tool: builds libmomento, momento-local and the stress
# tests with ThreadSanitizer (gcc, -Db_sanitize=thread -Dtsan=true) and runs
# them: the client's (tests/tsan/tsan_stress.c), then momento-local's
# threads (tests/tsan/tsan_server.c). Fails on any TSan report
# (halt_on_error) and on any request called back twice or never.
# docs/threading.md, "How races are checked", says what it does.
#
# Usage: tests/tsan/run.sh [SECONDS [MAX_REQUESTS]]     (default 10 60000)
# Environment: TSAN_BUILD_DIR (default build-tsan), CC (default gcc).
# Needs the packages of `./build.sh test` (gcc ships the TSan runtime).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
max=${2:-60000}
dir=${TSAN_BUILD_DIR:-build-tsan}
src=$(pwd)

if [ ! -f "$dir/build.ninja" ]; then
    CC=${CC:-gcc} meson setup "$dir" -Db_sanitize=thread -Db_lundef=false -Dtsan=true >/dev/null
fi
ninja -C "$dir" tests/tsan/tsan_stress tests/tsan/tsan_server tests/tsan/tsan_transport >/dev/null

# halt_on_error: the first report ends the run with exitcode 66.
# second_deadlock_stack: lock-order reports show both acquisitions.
opts="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=4"
opts="$opts suppressions=$src/tests/tsan/suppressions.txt"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The test bounds itself (its own watchdog ends it 120 s after the load);
# timeout is the last resort, sized for a loaded machine (issue 46).
# run PROGRAM ARGS...: once, and again without address-space randomisation
# if TSan's runtime cannot map its shadow memory under it (gcc 12 on some
# kernels, vm.mmap_rnd_bits > 28). Fails the script on any report, a hang
# or a failed check.
run() {
    local prog=$1
    shift
    local status=0
    TSAN_OPTIONS="$opts" timeout -k 10 $((secs + 600)) "$dir/tests/tsan/$prog" "$@" \
        2> "$log" || status=$?
    if [ $status -ne 0 ] && grep -q "unexpected memory mapping" "$log"; then
        echo "(TSan cannot map its memory with ASLR on this kernel: retrying under setarch -R)"
        status=0
        TSAN_OPTIONS="$opts" timeout -k 10 $((secs + 600)) setarch "$(uname -m)" -R \
            "$dir/tests/tsan/$prog" "$@" 2> "$log" || status=$?
    fi
    cat "$log" >&2
    if [ $status -ne 0 ]; then
        grep -q "WARNING: ThreadSanitizer" "$log" && echo "tsan: FAILED, ThreadSanitizer reported (above)"
        [ $status -eq 124 ] && echo "tsan: FAILED, the test hung"
        echo "tsan: FAILED ($prog, exit $status)"
        exit 1
    fi
}
echo "== ThreadSanitizer stress test: ${secs} s, at most ${max} requests"
run tsan_stress "$secs" "$max"
echo "== ThreadSanitizer stress test over protosocket: ${secs} s, at most ${max} requests"
MOMENTO_TSAN_TRANSPORT=protosocket run tsan_stress "$secs" "$max"
# Each timer's fire held 300 us: a cancel already taken to fire meets its
# request answered and freed on another thread (dispatch mode) far more
# often. Without momento__timer_settle this reports a use after free.
echo "== ThreadSanitizer stress test, timer fires delayed 300 us: ${secs} s"
MOMENTO_TSAN_FIRE_DELAY_US=300 run tsan_stress "$secs" "$max"
# The same over protosocket, whose I/O thread finishes the dispatch-mode
# client's attempts itself: a fire of a queued request's gate timer then
# meets the request launched, answered and released off the completion
# thread (call.c's release() waits every fire of its timers out).
echo "== ThreadSanitizer stress test over protosocket, timer fires delayed 300 us: ${secs} s"
MOMENTO_TSAN_TRANSPORT=protosocket MOMENTO_TSAN_FIRE_DELAY_US=300 run tsan_stress "$secs" "$max"
# The default-mode clients with their callbacks on protosocket's I/O thread
# (momento_config_set_io_thread_callbacks()).
echo "== ThreadSanitizer stress test over protosocket, callbacks on its I/O thread: ${secs} s"
MOMENTO_TSAN_TRANSPORT=protosocket MOMENTO_TSAN_IO_CALLBACKS=1 run tsan_stress "$secs" "$max"
# The dispatch-mode client without protosocket's I/O thread
# (momento_config_set_dispatch_io()): its connections stepped by the
# dispatcher, blocking calls and the free, while other threads launch.
echo "== ThreadSanitizer stress test over protosocket, stepped by the dispatcher: ${secs} s"
MOMENTO_TSAN_TRANSPORT=protosocket MOMENTO_TSAN_DISPATCH_IO=1 run tsan_stress "$secs" "$max"
# Every client with a near cache: lookups, fills, writes dropping entries
# and answers delivered through the completion thread race the rest.
echo "== ThreadSanitizer stress test with near caches: ${secs} s"
MOMENTO_TSAN_NEAR=1 run tsan_stress "$secs" "$max"
# momento-local's own threads (long requests in slices, calls held back).
echo "== ThreadSanitizer server stress: ${secs} s"
run tsan_server "$secs"
# The transport seam with a transport that completes on its own thread
# (tests/lib/test_transport.c, five times: its post()s race the
# loop, cancels and the client's free).
echo "== ThreadSanitizer transport seam: test_transport x5"
for _ in 1 2 3 4 5; do
    run tsan_transport
done
echo "tsan: passed"
