#!/usr/bin/env bash
# What parsing one large RESP command costs momento-proxy (issue 47 item
# 4): the proxy's CPU time (utime + stime, /proc/PID/stat) for one command
# of ARGS arguments of 14 bytes (7.8 MB at the default 371,000), sent
#   a. in one write, and
#   b. in pieces of PIECE (200) arguments, each sent once the proxy has
#      read the one before (its /proc/PID/io rchar has grown by what was
#      sent), so that every piece is a read of its own: the case where a
#      parser that starts again from the command's first byte on every read
#      is quadratic.
# The command is ECHO with too many arguments: the proxy answers an arity
# error without calling Momento, so what is measured is reading and
# parsing. Each case runs ROUNDS (3) times, on a new connection; the
# median is printed.
#
# Usage: bench/resp_parse.sh [BUILD_DIR]   (default build)
# Environment: PROXY (a momento-proxy binary to measure instead of
# BUILD/proxy/momento-proxy, e.g. one built from an older commit), ARGS, ARGLEN,
# PIECE, ROUNDS. The proxy runs its in-process momento-local; loopback
# only; every wait is bounded. Prints RESULT lines.
set -euo pipefail
build=${1:-build}
proxy=${PROXY:-$build/proxy/momento-proxy}
[ -x "$proxy" ] || { echo "build first: $proxy is missing"; exit 1; }
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

"$proxy" --resp-port 0 > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 300); do grep -q "resp listening on" "$work/out" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/^resp listening on //p' "$work/out")
[ -n "$addr" ] || { echo "momento-proxy did not start"; cat "$work/err"; exit 1; }
echo "momento-proxy $proxy on $addr (pid $pid)"

ARGS=${ARGS:-371000} ARGLEN=${ARGLEN:-14} PIECE=${PIECE:-200} ROUNDS=${ROUNDS:-3} \
timeout 1200 python3 - "$pid" "$addr" <<'EOF'
import os, socket, statistics, sys, time

pid, addr = int(sys.argv[1]), sys.argv[2]
host, port = addr.rsplit(":", 1)
nargs, piece, rounds = int(os.environ["ARGS"]), int(os.environ["PIECE"]), int(os.environ["ROUNDS"])
tick = os.sysconf("SC_CLK_TCK")

def cpu():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

def rchar():
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])

alen = int(os.environ["ARGLEN"])
arg = b"$%d\r\n" % alen + b"a" * alen + b"\r\n"
head = b"*%d\r\n$4\r\nECHO\r\n" % (nargs + 1)
body = arg * nargs
size = len(head) + len(body)
want = b"-ERR wrong number of arguments for 'echo' command\r\n"

def run(pieces):
    s = socket.create_connection((host, int(port)), timeout=600)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0, c0, r0 = time.monotonic(), cpu(), rchar()
    sent = 0
    for p in pieces:
        s.sendall(p)
        sent += len(p)
        if len(pieces) > 1:
            deadline = time.monotonic() + 10
            while rchar() - r0 < sent and time.monotonic() < deadline:
                time.sleep(0.0002)
    got = b""
    while not got.endswith(b"\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    c1, t1 = cpu(), time.monotonic()
    s.close()
    if got != want:
        sys.exit(f"unexpected reply {got[:200]!r}")
    return c1 - c0, t1 - t0

step = piece * len(arg)
split = [head] + [body[i:i + step] for i in range(0, len(body), step)]
print(f"command: {size} bytes, {nargs + 1} arguments; pieces of {piece} arguments: {len(split)}")
for name, pieces in (("one_write", [head + body]), ("pieces", split)):
    cpus, walls = [], []
    for _ in range(rounds):
        c, w = run(pieces)
        cpus.append(c)
        walls.append(w)
        print(f"  {name}: proxy cpu {c:.2f} s, wall {w:.2f} s", flush=True)
    print(f"RESULT case={name} bytes={size} writes={len(pieces)} "
          f"proxy_cpu_s={statistics.median(cpus):.2f} wall_s={statistics.median(walls):.2f}")
EOF
