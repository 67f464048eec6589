#!/usr/bin/env bash
# Races, checked by a tool: builds libmomento, momento-local and the stress
# test with ThreadSanitizer (gcc, -Db_sanitize=thread -Dtsan=true) and runs
# the test (tests/tsan/tsan_stress.c). Fails on any TSan report
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
ninja -C "$dir" tests/tsan/tsan_stress >/dev/null

# halt_on_error: the first report ends the run with exitcode 66.
# second_deadlock_stack: lock-order reports show both acquisitions.
opts="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=4"
opts="$opts suppressions=$src/tests/tsan/suppressions.txt"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The test bounds itself (its own watchdog ends it 120 s after the load);
# timeout is the last resort.
run() {
    TSAN_OPTIONS="$opts" timeout -k 10 $((secs + 180)) "$@" "$dir/tests/tsan/tsan_stress" \
        "$secs" "$max" 2> "$log"
}
echo "== ThreadSanitizer stress test: ${secs} s, at most ${max} requests"
status=0
run || status=$?
# TSan's runtime in gcc 12 cannot map its shadow memory under the larger
# address-space randomisation of some kernels (vm.mmap_rnd_bits > 28):
# then run without randomisation.
if [ $status -ne 0 ] && grep -q "unexpected memory mapping" "$log"; then
    echo "(TSan cannot map its memory with ASLR on this kernel: retrying under setarch -R)"
    status=0
    run setarch "$(uname -m)" -R || status=$?
fi
cat "$log" >&2
if [ $status -ne 0 ]; then
    grep -q "WARNING: ThreadSanitizer" "$log" && echo "tsan: FAILED, ThreadSanitizer reported (above)"
    [ $status -eq 124 ] && echo "tsan: FAILED, the test hung"
    echo "tsan: FAILED (exit $status)"
    exit 1
fi
echo "tsan: passed"
