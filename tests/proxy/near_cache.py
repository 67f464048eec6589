#!/usr/bin/env python3
"""momento-proxy --near-cache-bytes / --near-cache-staleness-ms (issue 50;
docs/proxy.md, "The near cache").

Three proxies on one momento-local: B without a near cache (its bundled
server, which the others use), A with a near cache whose bound is ten
minutes, C with one of 100 ms. B's writes are another client's writes to
A and C. No reference server: what is checked is the proxy's contract.
  - A answers GET, MGET and memcached get (of one key or several) of a
    key it read with the value it read, after B wrote another one (the
    bound has not passed: the test takes less than ten minutes);
  - SET ... GET and GETDEL through A answer B's current value, and so do
    memcached gets (its unique feeds a cas, which then stores);
  - A reads its own writes at once (SET, GETDEL, memcached set);
  - C, 300 ms after B's write (more than its 100 ms bound), answers the
    new value, on both ports;
  - A's metrics count the near cache's hits and bypasses;
  - bad values of the two options, on the command line and in a config
    file, and one without the other, are refused at start (exit 2, and
    the usual words).
No check depends on how long anything took: the only sleep makes sure that
MORE than C's bound has passed.

Usage: near_cache.py --proxy PATH
Exits 77 when redis-py or pymemcache is missing."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis", "pymemcache")
import redis  # noqa: E402
from pymemcache.client.base import Client as McClient  # noqa: E402

LONG_MS = 600000  # A's bound: longer than the whole test
SHORT_MS = 100    # C's bound
PAST_SHORT_S = 0.3


def bundled_endpoint(px):
    """The endpoint of the momento-local a proxy started for itself."""
    found = []

    def seen():
        with open(px.log_path) as f:
            m = re.search(r"bundled local server at (\S+) ", f.read())
        if m:
            found.append(m.group(1))
        return bool(found)
    pt.wait_until(seen, pt.WATCHDOG, "the proxy naming its bundled server")
    return found[0]


def rc(px):
    return redis.Redis(host="127.0.0.1", port=px.ports["resp"], socket_timeout=pt.WATCHDOG)


def mc(px):
    # default_noreply=False: a set returns once the proxy answered it, so a
    # get through another proxy after it is ordered after the write
    # (pymemcache's default, noreply, lets the get overtake it).
    return McClient(("127.0.0.1", px.ports["memcache"]), timeout=pt.WATCHDOG,
                    connect_timeout=pt.WATCHDOG, default_noreply=False)


def near(ms):
    return ["--near-cache-bytes", "1048576", "--near-cache-staleness-ms", str(ms)]


def resp_checks(res, a, b, c):
    ra, rb, rcc = rc(a), rc(b), rc(c)
    # A reads k1, B writes it: A still answers what it read.
    rb.set("nc:k1", "one")
    res.check("A's GET reads the value", ra.get("nc:k1") == b"one")
    rb.set("nc:k1", "two")
    res.check("B's GET reads B's write", rb.get("nc:k1") == b"two")
    got = ra.get("nc:k1")
    res.check("A's GET after B's write answers A's read, within A's bound", got == b"one",
              f"got {got!r}")

    # SET ... GET on A answers the current value, not the near cache's.
    rb.set("nc:k2", "old")
    ra.get("nc:k2")
    rb.set("nc:k2", "current")
    got = ra.get("nc:k2")
    res.check("A's GET of k2 answers its stale read", got == b"old", f"got {got!r}")
    got = ra.set("nc:k2", "mine", get=True)
    res.check("A's SET ... GET answers B's current value", got == b"current", f"got {got!r}")
    got = ra.get("nc:k2")
    res.check("A reads its own SET at once", got == b"mine", f"got {got!r}")
    res.check("B reads A's SET", rb.get("nc:k2") == b"mine")

    # GETDEL on A answers the current value; A then reads the key gone.
    rb.set("nc:k3", "old")
    ra.get("nc:k3")
    rb.set("nc:k3", "current")
    got = ra.getdel("nc:k3")
    res.check("A's GETDEL answers B's current value", got == b"current", f"got {got!r}")
    got = ra.get("nc:k3")
    res.check("A reads its own GETDEL at once (nil)", got is None, f"got {got!r}")

    # A plain SET through A, read through A, after A had read the key.
    rb.set("nc:k4", "b's")
    ra.get("nc:k4")
    ra.set("nc:k4", "a's")
    got = ra.get("nc:k4")
    res.check("A's GET after A's own SET answers it", got == b"a's", f"got {got!r}")

    # A kept miss is a miss for the bound too; A's own write ends it.
    res.check("A's GET of an absent key is nil", ra.get("nc:k5") is None)
    rb.set("nc:k5", "later")
    got = ra.get("nc:k5")
    res.check("A's GET after B created the key answers its kept miss", got is None,
              f"got {got!r}")

    # MGET through A asks each key alone: the ones A read answer from
    # memory (k1's stale read, k5's kept miss), a key A never read goes to
    # Momento; through B (no near cache) every key is current.
    rb.set("nc:k7", "fresh")
    got = ra.mget("nc:k1", "nc:k5", "nc:k7")
    res.check("A's MGET answers its near cache's entries and Momento's for the rest",
              got == [b"one", None, b"fresh"], f"got {got!r}")
    got = rb.mget("nc:k1", "nc:k5", "nc:k7")
    res.check("B's MGET answers Momento's current values",
              got == [b"two", b"later", b"fresh"], f"got {got!r}")

    # C's bound is 100 ms: 300 ms after B's write, C answers it.
    rb.set("nc:k6", "before")
    rcc.get("nc:k6")
    rb.set("nc:k6", "after")
    time.sleep(PAST_SHORT_S)
    got = rcc.get("nc:k6")
    res.check(f"C's GET {PAST_SHORT_S * 1000:.0f} ms after B's write answers it "
              f"(bound {SHORT_MS} ms)", got == b"after", f"got {got!r}")


def memcache_checks(res, a, b, c):
    ma, mb, mcc = mc(a), mc(b), mc(c)
    mb.set("nc:m1", b"one")
    res.check("A's memcached get reads the value", ma.get("nc:m1") == b"one")
    mb.set("nc:m1", b"two")
    got = ma.get("nc:m1")
    res.check("A's memcached get after B's set answers A's read, within A's bound",
              got == b"one", f"got {got!r}")

    # gets answers a unique to write with: it must be current, and the cas
    # it feeds must store.
    got, cas = ma.gets("nc:m1")
    res.check("A's memcached gets answers B's current value", got == b"two", f"got {got!r}")
    res.check("a cas with gets's unique stores", ma.cas("nc:m1", b"three", cas) is True)
    got = ma.get("nc:m1")
    res.check("A's memcached get after its own cas answers it", got == b"three", f"got {got!r}")

    mb.set("nc:m2", b"b's")
    ma.get("nc:m2")
    ma.set("nc:m2", b"a's")
    got = ma.get("nc:m2")
    res.check("A's memcached get after its own set answers it", got == b"a's", f"got {got!r}")

    # A text get of several keys asks each alone: m2 (A's own set) from
    # memory, m9 (never read by A) from Momento.
    mb.set("nc:m9", b"nine")
    got = ma.get_many(["nc:m2", "nc:m9"])
    res.check("A's memcached get of two keys answers each", got == {"nc:m2": b"a's", "nc:m9": b"nine"},
              f"got {got!r}")
    mb.set("nc:m9", b"changed")
    got = ma.get_many(["nc:m9", "nc:m2"])
    res.check("A's memcached get of two keys answers m9 from its near cache",
              got == {"nc:m2": b"a's", "nc:m9": b"nine"}, f"got {got!r}")

    mb.set("nc:m3", b"before")
    mcc.get("nc:m3")
    mb.set("nc:m3", b"after")
    time.sleep(PAST_SHORT_S)
    got = mcc.get("nc:m3")
    res.check(f"C's memcached get {PAST_SHORT_S * 1000:.0f} ms after B's set answers it",
              got == b"after", f"got {got!r}")
    for m in (ma, mb, mcc):
        m.close()


def metrics_checks(res, a):
    port = pt.metrics_port(a)
    hits = pt.metric(port, "momento_proxy_near_cache_hits_total")
    miss_hits = pt.metric(port, "momento_proxy_near_cache_miss_hits_total")
    bypassed = pt.metric(port, "momento_proxy_near_cache_bypassed_total")
    saved = pt.metric(port, 'momento_proxy_calls_saved_total{by="near_cache"}')
    # Hits: k1, k2, m1 at least; miss_hits: k5. Bypassed: SET ... GET,
    # GETDEL, gets.
    res.check("A's metrics count near-cache hits", hits >= 3 and miss_hits >= 1,
              f"hits {hits}, miss_hits {miss_hits}")
    res.check("A's metrics count the reads that bypassed it", bypassed >= 3,
              f"bypassed {bypassed}")
    res.check("A's calls saved by the near cache are its hits", saved == hits + miss_hits,
              f"saved {saved}, hits {hits} + {miss_hits}")


def refusals(res, proxy):
    pt.check_starts_refused(res, proxy, [
        (["--near-cache-bytes", "4095", "--near-cache-staleness-ms", "10"],
         "invalid --near-cache-bytes '4095': must be 4096 to 2147483647"),
        (["--near-cache-bytes", "2147483648", "--near-cache-staleness-ms", "10"],
         "invalid --near-cache-bytes '2147483648': must be 4096 to 2147483647"),
        (["--near-cache-bytes", "lots", "--near-cache-staleness-ms", "10"],
         "invalid --near-cache-bytes 'lots': must be 4096 to 2147483647"),
        (["--near-cache-bytes", "4096", "--near-cache-staleness-ms", "0"],
         "invalid --near-cache-staleness-ms '0': must be 1 to 3600000"),
        (["--near-cache-bytes", "4096", "--near-cache-staleness-ms", "3600001"],
         "invalid --near-cache-staleness-ms '3600001': must be 1 to 3600000"),
        (["--near-cache-bytes", "4096"],
         "invalid --near-cache-bytes '4096': needs --near-cache-staleness-ms"),
        (["--near-cache-staleness-ms", "50"],
         "invalid --near-cache-staleness-ms '50': needs --near-cache-bytes"),
    ])
    pt.check_config_refused(
        res, proxy, "near_cache_bytes: 1048576\nnear_cache_staleness_ms: -5\n",
        "{path}:2: near_cache_staleness_ms: '-5' must be 1 to 3600000",
        "a config file's bad near_cache_staleness_ms is refused at start")


def main():
    args = pt.parse_common_args(sys.argv[1:])
    pt.require_program(args.proxy, "momento-proxy")
    res = pt.Results()
    refusals(res, args.proxy)
    b = pt.start_proxy(args.proxy)
    try:
        endpoint = bundled_endpoint(b)
        a = pt.start_proxy(args.proxy, endpoint=endpoint,
                           extra=near(LONG_MS) + ["--metrics-port", "0"])
        c = pt.start_proxy(args.proxy, endpoint=endpoint, extra=near(SHORT_MS))
        try:
            resp_checks(res, a, b, c)
            memcache_checks(res, a, b, c)
            metrics_checks(res, a)
        finally:
            for px in (a, c):
                res.check(f"proxy on {px.ports['resp']} exits 0 at SIGTERM", px.stop() == 0,
                          px.log_tail())
    finally:
        b.stop(signal.SIGTERM)
    res.exit()


if __name__ == "__main__":
    main()
