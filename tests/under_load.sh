#!/usr/bin/env bash
# The test suite on a loaded machine (issue 46): two CPU hogs, one per core
# of a 2-core CI runner, busy for the whole run, and `meson test` under
# them. A test that passes only on an idle machine fails here.
#
#   tests/under_load.sh [BUILD_DIR] [meson test arguments...]
#
# BUILD_DIR defaults to build/ (where ./build.sh puts it); the arguments
# after it go to `meson test` as they are (e.g. `--suite unit --suite
# integration`, or one test's name). HOGS=N sets the number of hogs (2).
# Exits with meson test's status. The hogs are this script's children and
# die with it: at its end, on ^C, on a kill, and each after at most
# HOG_SECONDS (default 4 hours) if the script itself is killed -9.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && [ -d "$1" ]; then
    build=$1
    shift
fi
if [ ! -f "$build/build.ninja" ]; then
    echo "under_load.sh: $build is not a meson build directory (./build.sh test makes build/)" >&2
    exit 2
fi
hogs=${HOGS:-2}
hog_seconds=${HOG_SECONDS:-14400}

pids=()
stop_hogs() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null
    done
    pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

for _ in $(seq "$hogs"); do
    # A busy loop in its own shell, bounded by `timeout` should this script
    # die without running its trap.
    timeout "$hog_seconds" sh -c 'while :; do :; done' &
    pids+=("$!")
done

start=$(date +%s)
echo "under_load.sh: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $hogs CPU hogs (pids ${pids[*]}) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
meson test -C "$build" --print-errorlogs "$@"
rc=$?
end=$(date +%s)
echo "under_load.sh: meson test exited $rc after $((end - start)) s with $hogs hogs running (load $(cut -d' ' -f1-3 /proc/loadavg))"
exit $rc
