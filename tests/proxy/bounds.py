#!/usr/bin/env python3
"""momento-proxy's reply budget (issue 47 item 3): replies of commands
already started count towards the bound on what a connection holds for its
client, so a client that pipelines large reads and never reads the replies
costs the proxy that bound, not --max-in-flight of its values.

Each check, on the RESP port and the memcache port:
- 300 pipelined gets of a 1 MiB value, never read (about 6 KB sent): the
  proxy starts only what fits the budget (INFO's / stats' command count),
  its memory stays near the budget (VmRSS, VmHWM), another connection is
  answered meanwhile, and once the client reads, all 300 replies arrive, in
  order, each the value;
- three such clients at once: each held to its own budget.

No check asserts an elapsed time. The one wait (until the proxy has no
Momento call in flight and has started nothing new) is bounded by the
watchdog and gates no pass on its length.
"""
import os
import select
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import RawConn, encode  # noqa: E402

VALUE = b"v" * (1 << 20)
GETS = 300
# The budget is 4 MiB (--max-output-bytes' default); a reply of unknown
# size reserves at least 1/16 of it, so at most 16 gets start before the
# first value arrives, and none after it (the values are larger than the
# reservation). 16 values held plus the proxy's own allocations and the
# allocator's slack stay under this; without the budget the 300 values
# (301 MB) are held.
HELD_MB = 64
# Peak: the held values plus the copies a value has while it is decoded
# and written (gRPC's message, the library's, the reply's).
PEAK_MB = 160


_infos = [0]


def resp_counts(port):
    """Commands processed, not counting the INFOs asked here, and calls in
    flight."""
    info = RawConn(port).command("INFO")[1].decode()
    _infos[0] += 1
    f = {k: v for k, v in (l.split(":", 1) for l in info.split("\r\n") if ":" in l)}
    return int(f["total_commands_processed"]) - _infos[0], int(f["momento_in_flight"])


def mc_counts(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    s.sendall(b"stats\r\n")
    data = pt.recv_until(s, b"END\r\n")
    s.close()
    f = {}
    for line in data.decode().split("\r\n"):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            f[parts[1]] = parts[2]
    cmds = sum(int(f.get(k, 0)) for k in ("cmd_get", "cmd_set", "cmd_touch"))
    return cmds, int(f.get("momento_in_flight", 0))


def hog(port, request):
    # The kernel's socket buffers take a few MB of what the proxy writes;
    # the rest is the proxy's to hold.
    h = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    h.sendall(request * GETS)
    return h


def read_exactly(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(1 << 20, n - len(buf)))
        if not chunk:
            raise EOFError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def check_port(res, px, proto):
    if proto == "resp":
        port = px.ports["resp"]
        c = RawConn(port, timeout=pt.WATCHDOG)
        c.command("SET", "big", VALUE)
        c.command("SET", "small", "s")
        request = encode(["GET", "big"])
        one_reply = b"$%d\r\n" % len(VALUE) + VALUE + b"\r\n"
        counts = lambda: resp_counts(port)  # noqa: E731

        def probe():
            return c.command("GET", "small") == ("$", b"s")
    else:
        port = px.ports["memcache"]
        c = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
        c.sendall(b"set big 0 0 %d\r\n" % len(VALUE) + VALUE + b"\r\nset small 0 0 1\r\ns\r\n")
        read_exactly(c, len(b"STORED\r\nSTORED\r\n"))
        request = b"get big\r\n"
        one_reply = b"VALUE big 0 %d\r\n" % len(VALUE) + VALUE + b"\r\nEND\r\n"
        counts = lambda: mc_counts(port)  # noqa: E731

        def probe():
            c.sendall(b"get small\r\n")
            return read_exactly(c, len(b"VALUE small 0 1\r\ns\r\nEND\r\n")) == \
                b"VALUE small 0 1\r\ns\r\nEND\r\n"

    for nhogs in (1, 3):
        before, _ = counts()
        base = pt.status_kb(px.proc.pid, "VmRSS")
        hogs = [hog(port, request) for _ in range(nhogs)]
        started = pt.settled(counts) - before
        held = (pt.status_kb(px.proc.pid, "VmRSS") - base) // 1024
        peak = (pt.status_kb(px.proc.pid, "VmHWM") - base) // 1024
        what = f"{proto}, {nhogs} client(s) pipelining {GETS} gets of 1 MiB, reading nothing"
        res.check(f"{what}: the proxy starts only what fits each one's budget",
                  started <= nhogs * (16 + 2), f"{started} commands started")
        res.check_memory(px.proc.args[0], f"{what}: the proxy holds about the budget each",
                  held < nhogs * HELD_MB, f"VmRSS grew {held} MB")
        if nhogs == 1:
            res.check_memory(px.proc.args[0], f"{what}: its peak stays near it", peak < PEAK_MB, f"VmHWM {peak} MB over the start")
        res.check(f"{what}: another connection is answered meanwhile", probe())
        for i, h in enumerate(hogs):
            try:
                got = read_exactly(h, len(one_reply) * GETS)
                ok = got == one_reply * GETS
                why = "" if ok else "a reply differs"
            except (OSError, EOFError) as e:
                ok, why = False, repr(e)
            res.check(f"{what}: once client {i + 1} reads, its {GETS} replies arrive in order", ok, why)
            h.close()
    c.close()


# How long momento-local holds the sets of small_replies(): the window in
# which the proxy must have started them all. No check measures it.
HOLD_MS = 3000
DEEP = 100


def small_replies(res, proxy_path):
    """Writes answer a line or a number: they take next to nothing of the
    budget, so a deep pipeline of them is not cut to 16 in flight. With
    every set held by momento-local and --batch 0 (one call per set), all
    100 sets of a pipeline are in flight at once (stats / INFO)."""
    px = pt.start_proxy(proxy_path, extra=["--batch", "0", "--header", f"delay-ms={HOLD_MS}",
                                           "--header", "delay-rpcs=set"])
    try:
        cases = [("memcache", b"".join(b"set deep%d 0 0 1\r\nv\r\n" % i for i in range(DEEP)),
                  lambda: mc_counts(px.ports["memcache"])[1], b"STORED\r\n" * DEEP),
                 ("resp", b"".join(encode(["SET", f"deep{i}", "v"]) for i in range(DEEP)),
                  lambda: resp_counts(px.ports["resp"])[1], b"+OK\r\n" * DEEP)]
        for name, request, in_flight, want in cases:
            s = socket.create_connection(("127.0.0.1", px.ports[name]), timeout=pt.WATCHDOG)
            s.sendall(request)
            most = [0]

            def all_started_or_answered():
                most[0] = max(most[0], in_flight())
                if most[0] >= DEEP:
                    return True
                r, _, _ = select.select([s], [], [], 0.05)
                return bool(r)  # the first answers: the hold is over

            pt.wait_until(all_started_or_answered, pt.WATCHDOG, "the sets to start")
            res.check(f"{name}: {DEEP} pipelined sets are all in flight at once (small replies)",
                      most[0] >= DEEP, f"at most {most[0]} in flight")
            got = read_exactly(s, len(want))
            res.check(f"{name}: and each is answered", got == want, repr(got[:80]))
            s.close()
    finally:
        px.stop()


def many_keys_in_order(res, proxy_path):
    """A command of many keys behind many commands in flight on them waits
    for exactly those (conn.c's waiter: each claim looked at once, not
    every key against every claim), and answers what they wrote. With every
    set held by momento-local, 300 pipelined SETs are in flight when an
    MGET of 50,000 keys, 300 of them theirs, arrives; then a DEL of those
    keys and a GET of one. Redis would answer the same. The deadline is
    generous: the DEL is 50,000 Delete calls, which on a loaded machine
    (a sanitizer build beside other tests) took longer than the default
    5 s; what is checked is order and answers, not speed."""
    px = pt.start_proxy(proxy_path, memcache=False,
                        extra=["--batch", "0", "--header", "delay-ms=500",
                               "--header", "delay-rpcs=set", "--timeout-ms", "120000"])
    try:
        c = RawConn(px.ports["resp"], timeout=pt.WATCHDOG)
        mine = [f"mk{i}" for i in range(300)]
        keys = [f"other{i}" for i in range(50_000 - len(mine))] + mine
        cmds = [["SET", k, "v" + k] for k in mine] + [["MGET"] + keys] + \
            [["DEL"] + keys, ["GET", mine[-1]]]
        c.send(b"".join(encode(x) for x in cmds))
        replies = [c.reply() for _ in cmds]
        sets_ok = all(r == ("+", "OK") for r in replies[:len(mine)])
        mget = replies[len(mine)]
        values = mget[1] if mget[0] == "*" else []
        want = [("$", None)] * (len(keys) - len(mine)) + [("$", ("v" + k).encode()) for k in mine]
        res.check("an MGET of 50,000 keys behind 300 SETs of its keys in flight reads what they wrote",
                  sets_ok and values == want,
                  f"sets ok {sets_ok}, MGET {str(mget)[:120]}")
        res.check("then the DEL of those keys, then a GET of one answers nil",
                  replies[-2] == (":", len(mine)) and replies[-1] == ("$", None),
                  f"{replies[-2]!r} {replies[-1]!r}")
        c.close()
    finally:
        px.stop()


def both_ports(res, proxy_path):
    px = pt.start_proxy(proxy_path)
    try:
        check_port(res, px, "resp")
        check_port(res, px, "memcache")
    finally:
        px.stop()


def main():
    pt.run_proxy_checks(both_ports, small_replies, many_keys_in_order)

if __name__ == "__main__":
    main()
