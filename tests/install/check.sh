#!/usr/bin/env bash
# Installs the build into a scratch DESTDIR, compiles roundtrip.c with only
# `pkg-config --cflags --libs momento`, and runs it against the installed
# momento-local binary on a free loopback port.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
dest=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    rm -rf "$dest"
}
trap cleanup EXIT

meson install -C "$build_dir" --destdir "$dest" --no-rebuild --quiet >/dev/null
pc=$(dirname "$(find "$dest" -name momento.pc | head -n1)")
[ -n "$pc" ] || { echo "momento.pc was not installed"; exit 1; }
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$pc
prefix_lib=$(dirname "$pc")
# A sanitizer build of the library needs its runtime in the program too.
san=""
# (Not `ldd | grep -q`: under pipefail, grep leaving early can fail ldd with
# SIGPIPE, and the check then missed the runtime now and then.)
case "$(ldd "$prefix_lib/libmomento.so")" in
*libasan*) san="-fsanitize=address,undefined" ;;
esac
cc $san -o "$dest/roundtrip" "$src_dir/roundtrip.c" $(pkg-config --cflags --libs momento)
if nm -D "$prefix_lib/libmomento.so" | grep -E ' T ' | grep -v ' momento_' ; then
    echo "libmomento.so exports names without the momento_ prefix"; exit 1
fi

server=$(find "$dest" -name momento-local -type f | head -n1)
"$server" --port 0 > "$dest/server.out" &
server_pid=$!
for _ in $(seq 50); do
    grep -q "listening on" "$dest/server.out" 2>/dev/null && break
    sleep 0.1
done
endpoint=$(sed -n 's/^listening on //p' "$dest/server.out")
[ -n "$endpoint" ] || { echo "momento-local did not start"; exit 1; }
LD_LIBRARY_PATH=$prefix_lib "$dest/roundtrip" "$endpoint"
kill -TERM "$server_pid"
wait "$server_pid"
server_pid=""
# The server printed its counters on SIGTERM: one Set and one Get arrived.
grep -q '"Set": {"total": 1, "OK": 1}' "$dest/server.out"
grep -q '"Get": {"total": 1, "OK": 1}' "$dest/server.out"
echo "install check passed"
