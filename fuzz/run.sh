#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# SECONDS (default 60), starting from the committed seeds, then replays every
# saved regression input. A crash leaves its input in fuzz/findings/; copy it
# to fuzz/regressions/<target>/ so it is replayed from then on.
# Usage: fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if ! command -v clang >/dev/null; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined \
        -Db_lundef=false >/dev/null
fi
ninja -C build-fuzz >/dev/null
mkdir -p fuzz/findings
status=0
# Every target has a seed folder: the folders name the targets.
targets=$(cd fuzz/corpus && ls -d */ | tr -d /)
for target in $targets; do
    work=$(mktemp -d)
    cp fuzz/corpus/$target/* "$work"/ 2>/dev/null || true
    echo "== fuzz_$target: ${secs} s"
    # -timeout: one input's limit before it counts as a hang, 4 times what
    # a loaded machine needs (issue 46), not a measure of speed.
    if ! (cd fuzz/findings && UBSAN_OPTIONS=halt_on_error=1 \
          ../../build-fuzz/fuzz/fuzz_$target -max_total_time="$secs" -timeout=40 \
          -rss_limit_mb=2048 -print_final_stats=1 "$work" 2>&1 | tail -n 12); then
        status=1
    fi
    rm -rf "$work"
    shopt -s nullglob
    regressions=(fuzz/regressions/$target/*)
    if [ ${#regressions[@]} -gt 0 ]; then
        echo "== fuzz_$target: replaying ${#regressions[@]} regression input(s)"
        build-fuzz/fuzz/fuzz_$target "${regressions[@]}" >/dev/null 2>&1 || status=1
    fi
done
[ $status -eq 0 ] && echo "fuzzing passed" || echo "fuzzing FAILED (inputs in fuzz/findings/)"
exit $status
