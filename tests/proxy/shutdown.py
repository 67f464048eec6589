#!/usr/bin/env python3
"""momento-proxy stops cleanly with commands still buffered (issue 48's
review): SIGTERM with --drain-seconds 0 while 20 connections each have
thousands of pipelined GETs and SINTERs sent and only some answered. The
drain ends at once; the proxy must then close its connections before it
frees the library's client, or a paused connection's buffered commands
are fed to the freed coalescer (a use-after-free an ASan build reported
in 16 runs of 16, tests/memcheck.sh runs this suite under ASan).

No reference server: what is checked is the proxy's own exit. Each trial
sends, waits until every connection has read some reply bytes (so
commands are in flight and more are buffered), then sends SIGTERM and
checks that the proxy exits 0 and its stderr has no sanitizer report.
Trials differ in how many reply bytes are awaited first.

Usage: shutdown.py --proxy PATH"""
import os
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import encode  # noqa: E402

CONNS = 20
PIPELINE = 1500
TRIALS = 6


def cmd(*args):
    return encode(args)


def trial(res, proxy, n):
    px = pt.start_proxy(proxy, memcache=False, extra=["--drain-seconds", "0"])
    socks = []
    try:
        port = px.ports["resp"]
        with socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG) as s:
            s.sendall(cmd("SADD", "s1", "a", "b", "c") + cmd("SADD", "s2", "b", "c", "d") +
                      cmd("SET", "k", "v"))
            got = b""
            while got.count(b"\r\n") < 3:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        res.check(f"trial {n}: setup answered", got == b":3\r\n:3\r\n+OK\r\n", repr(got))
        req = (cmd("GET", "k") + cmd("GET", f"k{n}") + cmd("SINTER", "s1", "s2")) * PIPELINE
        for _ in range(CONNS):
            s = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
            s.setblocking(False)
            socks.append([s, req, 0])
        # Send what the sockets take and read what comes back, until every
        # connection has read `want` reply bytes: then commands are in
        # flight on each and (the pipeline being larger than what the proxy
        # starts at once) more wait buffered.
        want = 1 + 4096 * (n % 3)
        import selectors
        sel = selectors.DefaultSelector()
        for entry in socks:
            sel.register(entry[0], selectors.EVENT_READ | selectors.EVENT_WRITE, entry)
        ready = 0
        import time
        deadline = time.monotonic() + pt.WATCHDOG
        while ready < CONNS and time.monotonic() < deadline:
            for key, ev in sel.select(1):
                entry = key.data
                s = entry[0]
                if ev & selectors.EVENT_WRITE and entry[1]:
                    try:
                        sent = s.send(entry[1][:65536])
                        entry[1] = entry[1][sent:]
                    except BlockingIOError:
                        pass
                    if not entry[1]:
                        sel.modify(s, selectors.EVENT_READ, entry)
                if ev & selectors.EVENT_READ:
                    try:
                        data = s.recv(65536)
                    except BlockingIOError:
                        data = None
                    if data:
                        before = entry[2]
                        entry[2] += len(data)
                        if before < want <= entry[2]:
                            ready += 1
        sel.close()
        res.check(f"trial {n}: every connection was answered before SIGTERM", ready == CONNS,
                  f"{ready} of {CONNS}")
        status = px.stop(signal.SIGTERM)
        log = open(px.log_path, "rb").read()
        res.check(f"trial {n}: momento-proxy exits 0 on SIGTERM with commands buffered",
                  status == 0, f"status {status}; stderr:\n{px.log_tail()}")
        res.check(f"trial {n}: no sanitizer report",
                  b"AddressSanitizer" not in log and b"runtime error" not in log,
                  px.log_tail(40))
    finally:
        for entry in socks:
            entry[0].close()
        if px.alive():
            px.stop(signal.SIGKILL)


def main():
    args = pt.parse_common_args(sys.argv[1:])
    pt.require_program(args.proxy, "momento-proxy")
    res = pt.Results()
    for n in range(TRIALS):
        trial(res, args.proxy, n)
    res.exit()


if __name__ == "__main__":
    main()
