#!/usr/bin/env bash
# One entry point for the README's quick start:
#   ./build.sh demo   build, then run the request-coalescing demo against the
#                     bundled local server (writes request-coalescing.svg)
#   ./build.sh test   build, then run the whole test suite
# Either installs the Debian packages it needs first (as root, or with sudo).
set -euo pipefail
cd "$(dirname "$0")"

BUILD_PKGS=(gcc pkg-config meson ninja-build libgrpc-dev libprotobuf-c-dev
            protobuf-c-compiler libssl-dev uthash-dev libcmocka-dev zlib1g-dev libzstd-dev
            libuv1-dev libevent-dev libyaml-dev)
# valgrind: the valgrind_clean test (the suppressions file users get).
TEST_PKGS=(openssl valgrind)
# The proxy's tests (tests/proxy/): clients no one here wrote, and the real
# servers whose answers prove the expectations. Debian's Python modules are
# for /usr/bin/python3, which the tests run.
TEST_PKGS+=(python3 redis-server redis-tools memcached libmemcached-tools python3-redis
            python3-pymemcache prometheus)
# The interop suite runs Momento's official Node.js SDK. A machine whose
# Node.js already ships npm (NodeSource builds do) must not get Debian's npm,
# which conflicts with it.
if ! command -v npm >/dev/null 2>&1; then
    TEST_PKGS+=(nodejs npm)
fi

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "build.sh: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
    if [ ! -f build/build.ninja ]; then
        meson setup build >/dev/null
    fi
    ninja -C build >/dev/null
}

case "${1:-}" in
demo)
    install_missing "${BUILD_PKGS[@]}"
    build
    # The seed's request-coalescing demo, shortened; no account needed.
    exec ./build/apps/request-coalescing --duration 5 --rps 0 --concurrency 1000 \
        --stats-interval 5 --quiet --plot request-coalescing.svg
    ;;
test)
    install_missing "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"
    build
    # The interop suite's pinned official SDK, exactly as locked.
    if command -v npm >/dev/null 2>&1; then
        (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
    meson test -C build --print-errorlogs
    ;;
*)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
