#!/usr/bin/env python3
"""momento-proxy --reuseport (issue 48's "N processes with SO_REUSEPORT"):
two proxies serve one RESP port, in front of one momento-local.

No reference server: what is checked is the sharing itself.
  - a second proxy with --reuseport binds the first one's port; a third
    without it is refused at start, naming the port;
  - 40 connections to the port are spread by the kernel over both proxies
    (each proxy's /metrics counts its accepted connections: both take
    some, and together exactly 40 - with two listeners the chance that
    one gets none of 40 is 2 in 2^40);
  - every connection's SET is read back through another connection, so
    most reads go through the other proxy: the data is the cache's, not a
    proxy's;
  - after the first proxy exits (SIGTERM), new connections to the port
    are all served by the second.

Usage: reuseport.py --proxy PATH"""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import RawConn  # noqa: E402

CONNS = 40


def accepted(port):
    body = pt.scrape(port)
    m = re.search(r"^momento_proxy_connections_accepted_total (\d+)", body, re.M)
    return int(m.group(1)) if m else -1


def start_pair(proxy):
    """Proxy A (its bundled momento-local) and B (A's server) on one port;
    a few attempts, in case another process takes the free port first."""
    for _ in range(3):
        port = pt.free_port()
        a = pt.start_proxy(proxy, memcache=False,
                           extra=["--resp-port", str(port), "--reuseport", "--metrics-port", "0"])
        if a.ports.get("resp") != port:
            a.stop(signal.SIGKILL)
            continue
        m = None

        def bundled():
            nonlocal m
            with open(a.log_path) as f:
                m = re.search(r"bundled local server at (\S+) ", f.read())
            return m is not None
        pt.wait_until(bundled, pt.WATCHDOG, "the first proxy naming its bundled server")
        try:
            b = pt.start_proxy(proxy, memcache=False, endpoint=m.group(1),
                               extra=["--resp-port", str(port), "--reuseport",
                                      "--metrics-port", "0"])
        except RuntimeError:
            a.stop(signal.SIGKILL)
            raise
        return port, m.group(1), a, b
    raise RuntimeError("no free port could be shared")


def main():
    a_ = pt.parse_common_args(sys.argv[1:])
    pt.require_program(a_.proxy, "momento-proxy")
    res = pt.Results()
    port, endpoint, a, b = start_pair(a_.proxy)
    try:
        res.check("a second proxy with --reuseport serves the same port", b.ports["resp"] == port,
                  f"it printed port {b.ports.get('resp')}")
        # Without --reuseport the port is taken: refused at start.
        third = subprocess.run([a_.proxy, "--endpoint", endpoint, "--insecure", "--cache",
                                "proxy-test", "--bind", "127.0.0.1", "--resp-port", str(port)],
                               capture_output=True, timeout=pt.WATCHDOG, stdin=subprocess.DEVNULL)
        err = third.stderr.decode(errors="replace")
        res.check("a proxy without --reuseport is refused the shared port",
                  third.returncode != 0 and str(port) in err and "in use" in err,
                  f"exit {third.returncode}, stderr {err!r}")

        ma, mb = pt.metrics_port(a), pt.metrics_port(b)
        conns = [RawConn(port, timeout=pt.WATCHDOG) for _ in range(CONNS)]
        try:
            sets = [c.command("SET", f"reuse:{i}", f"value-{i}") for i, c in enumerate(conns)]
            res.check(f"{CONNS} connections' SETs answered +OK",
                      all(r == ("+", "OK") for r in sets), repr(sets))
            gets = [conns[(i + 1) % CONNS].command("GET", f"reuse:{i}") for i in range(CONNS)]
            want = [("$", b"value-%d" % i) for i in range(CONNS)]
            res.check("each value read back through another connection",
                      gets == want, repr([g for g, w in zip(gets, want) if g != w][:5]))
            na, nb = accepted(ma), accepted(mb)
            res.check(f"the kernel gave both proxies some of the {CONNS} connections",
                      na > 0 and nb > 0 and na + nb == CONNS, f"accepted: {na} and {nb}")
        finally:
            for c in conns:
                c.close()

        status = a.stop(signal.SIGTERM)
        res.check("the first proxy exits 0 on SIGTERM", status == 0, f"exit {status}")
        # A's bundled server went with it: B's calls now fail, but B still
        # takes and answers every new connection on the port.
        before = accepted(mb)
        answers = []
        for _ in range(10):
            c = RawConn(port, timeout=pt.WATCHDOG)
            answers.append(c.command("PING"))
            c.close()
        res.check("after it, the second proxy answers every new connection",
                  answers == [("+", "PONG")] * 10 and accepted(mb) == before + 10,
                  f"{answers!r}; accepted {before} -> {accepted(mb)}")
    finally:
        for p in (b, a):
            if p.proc.poll() is None:
                p.stop(signal.SIGTERM)
    res.exit()


if __name__ == "__main__":
    main()
