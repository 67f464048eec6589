#!/usr/bin/env bash
# Installs the build into a scratch DESTDIR, compiles roundtrip.c with only
# `pkg-config --cflags --libs momento`, and runs it against the installed
# momento-local binary on a free loopback port. Then, from the same install:
# embed.c, a program embedding momento-local, built with only
# `pkg-config --cflags --libs momento-local`; the README's program, built as
# it stands, run without credentials and then against momento-local with
# MOMENTO_ENDPOINT=host:port; the tools and momento-local on PATH with
# their man pages; a section 3 page for every exported function, whose
# examples build and run; the valgrind suppressions that
# `pkg-config --variable=suppressions momento` names.
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

# What the install holds, built first: `meson test` builds what its tests
# run, which leaves out the man pages; and a plain `meson install` would
# also build every test program (meson 1.0 keeps them in ninja's default
# target). Of the installed paths, those ninja builds: not the
# configure-time files, nor the library's version symlinks.
installed=$(meson introspect --installed "$build_dir" | python3 -c '
import json, os, subprocess, sys
build = os.path.abspath(sys.argv[1])
targets = set(l.split(":")[0] for l in subprocess.run(
    ["ninja", "-C", build, "-t", "targets", "all"], capture_output=True, text=True,
    check=True).stdout.splitlines())
for path in json.load(sys.stdin):
    rel = os.path.relpath(os.path.abspath(path), build)
    if rel in targets and not rel.startswith(".."):
        print(rel)' "$build_dir")
# shellcheck disable=SC2086 # one target a word
ninja -C "$build_dir" $installed >/dev/null
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
# start_server OUT [ARG...]: the installed momento-local on a free port,
# its output in $dest/OUT; sets server_pid and endpoint.
start_server() {
    local out=$1
    shift
    "$server" --port 0 "$@" > "$dest/$out" &
    server_pid=$!
    # Up to 30 s: a loaded machine can take seconds to start a process.
    for _ in $(seq 300); do
        grep -q "listening on" "$dest/$out" 2>/dev/null && break
        sleep 0.1
    done
    endpoint=$(sed -n 's/^listening on //p' "$dest/$out")
    [ -n "$endpoint" ] || { echo "momento-local did not start"; exit 1; }
}
# stop_server: SIGTERM, and wait for it (it prints its counters then).
stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid"
    server_pid=""
}
start_server server.out
LD_LIBRARY_PATH=$prefix_lib "$dest/roundtrip" "$endpoint"
stop_server
# The server printed its counters on SIGTERM: one Set and one Get arrived.
grep -q '"Set": {"total": 1, "OK": 1}' "$dest/server.out"
grep -q '"Get": {"total": 1, "OK": 1}' "$dest/server.out"

# The server library, embedded: momento-local.pc beside momento.pc.
[ -f "$pc/momento-local.pc" ] || { echo "momento-local.pc was not installed"; exit 1; }
cc $san -o "$dest/embed" "$src_dir/embed.c" $(pkg-config --cflags --libs momento-local)
LD_LIBRARY_PATH=$prefix_lib "$dest/embed"

# The README's program, extracted as it stands: it compiles against the
# install, and without credentials it says so and exits 1 (it does not go
# on to use credentials it never got).
readme="$src_dir/../../README.md"
awk '/^## Using the library/ { on = 1 } on && /^```c$/ { grab = 1; next }
     grab && /^```$/ { exit } grab { print }' "$readme" > "$dest/readme.c"
grep -q "int main" "$dest/readme.c" || { echo "README.md: no C program under 'Using the library'"; exit 1; }
cc $san -Wall -Wextra -Werror -o "$dest/readme" "$dest/readme.c" $(pkg-config --cflags --libs momento)
set +e
env -u MOMENTO_API_KEY -u MOMENTO_ENDPOINT LD_LIBRARY_PATH=$prefix_lib "$dest/readme" \
    > /dev/null 2> "$dest/readme.err"
rc=$?
set -e
# One line: a program that printed the failure and carried on would say more.
if [ "$rc" -ne 1 ] || [ "$(wc -l < "$dest/readme.err")" -ne 1 ] ||
   ! grep -q "^credentials: " "$dest/readme.err"; then
    cat "$dest/readme.err"
    echo "README program without MOMENTO_API_KEY: exit $rc, not 1 with a credentials message"
    exit 1
fi

# ...and against the installed momento-local, as the README says:
# MOMENTO_ENDPOINT=host:port and no key; it sets k, reads it back, prints v.
start_server server2.out --cache my-cache
out=$(env -u MOMENTO_API_KEY MOMENTO_ENDPOINT="$endpoint" LD_LIBRARY_PATH=$prefix_lib \
      "$dest/readme")
[ "$out" = "v" ] || { echo "README program against momento-local printed '$out', not v"; exit 1; }
stop_server

# The tools on PATH (bindir), each with its section 1 page, made from its
# --help at build time: the page names the program, and renders cleanly.
bindir=$(dirname "$server")
man1=$(dirname "$(find "$dest" -name momento-local.1 | head -n1)")
[ -d "$man1" ] || { echo "no man1 pages installed"; exit 1; }
for tool in momento-local load-gen request-coalescing topics-fanout leaderboard session-store \
            metrics-prometheus; do
    [ -x "$bindir/$tool" ] || { echo "$tool was not installed in $bindir"; exit 1; }
    LD_LIBRARY_PATH=$prefix_lib "$bindir/$tool" --help > "$dest/help.txt" ||
        { echo "installed $tool --help failed"; exit 1; }
    page="$man1/$tool.1"
    [ -f "$page" ] || { echo "$tool has no man page"; exit 1; }
    grep -q "^\.SH NAME" "$page" && grep -q "^${tool//-/\\\\-} \\\\- " "$page" ||
        { echo "$page: no NAME line for $tool"; exit 1; }
    # Every option of the --help is in the page.
    for opt in $(grep -o -- '^  --[a-z-]*' "$dest/help.txt"); do
        grep -q -- "^\.B ${opt//-/\\\\-}" "$page" || { echo "$page lacks $opt"; exit 1; }
    done
    if command -v man > /dev/null; then
        warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null)
        [ -z "$warnings" ] || { echo "$page: $warnings"; exit 1; }
    fi
done

# Section 3: a page for every function the libraries export (link pages
# for the names a group page documents), each group page with the sections
# a C library's reference has, rendering cleanly; `man momento_get` works
# with the install's man directory on MANPATH.
man3=$(dirname "$(find "$dest" -name libmomento.3 | head -n1)")
[ -d "$man3" ] || { echo "no man3 pages installed"; exit 1; }
archive=$(find "$dest" -name libmomento-local.a | head -n1)
{ nm -D --defined-only "$prefix_lib/libmomento.so" | awk '$2 == "T" { print $3 }' | sed 's/@.*//'
  nm --defined-only "$archive" 2>/dev/null | awk '$2 == "T" && $3 ~ /^momento_local/ { print $3 }'
} | sort -u > "$dest/exported.txt"
[ "$(wc -l < "$dest/exported.txt")" -gt 300 ] || { echo "too few exported names read"; exit 1; }
while read -r fn; do
    [ -f "$man3/$fn.3" ] || { echo "$fn has no man page"; exit 1; }
done < "$dest/exported.txt"
for page in "$man3"/*.3; do
    head -c 3 "$page" | grep -q '^\.so' && continue
    for section in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" THREADS "SEE ALSO"; do
        [ "$(basename "$page")" = libmomento.3 ] && break
        grep -q "^\.SH $section\$" "$page" || { echo "$page has no $section"; exit 1; }
    done
    if command -v man > /dev/null; then
        warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null)
        [ -z "$warnings" ] || { echo "$page: $warnings"; exit 1; }
    fi
done
if command -v man > /dev/null; then
    [ "$(MANPATH=$(dirname "$man3") man -w momento_get)" = "$man3/momento_get.3" ] ||
        { echo "man momento_get does not find its page"; exit 1; }
fi

# The pages' EXAMPLEs (docs/man/examples): each builds against the install
# and runs against the installed momento-local.
start_server server3.out --cache demo
for ex in "$src_dir"/../../docs/man/examples/*.c; do
    name=$(basename "$ex" .c)
    grep -q "^\.SH EXAMPLE" "$man3/$name.3" || { echo "$name.3 lacks the example $ex"; exit 1; }
    cc $san -Wall -Wextra -Werror -o "$dest/ex-$name" "$ex" $(pkg-config --cflags --libs momento)
    env -u MOMENTO_API_KEY MOMENTO_ENDPOINT="$endpoint" LD_LIBRARY_PATH=$prefix_lib \
        timeout 240 "$dest/ex-$name" > "$dest/ex-$name.out" ||
        { cat "$dest/ex-$name.out"; echo "the example of $name.3 failed"; exit 1; }
done
stop_server

# The valgrind suppressions, where the package says they are.
supp=$(pkg-config --variable=suppressions momento)
[ -n "$supp" ] || { echo "momento.pc has no suppressions variable"; exit 1; }
# pkg-config prefixes the sysroot to a variable or not, by version.
[ -f "$supp" ] || supp="$dest$supp"
grep -q "Memcheck:Leak" "$supp" || { echo "no valgrind suppressions at $supp"; exit 1; }
echo "install check passed"
