#!/usr/bin/env python3
"""momento-proxy --near-cache-topic / --near-cache-topic-cache (issue 50;
docs/proxy.md, "The near cache"): one proxy's writes drop the other
proxies' near-cache entries through a Momento topic.

Four proxies on one momento-local, all serving cache proxy-test, every
near cache with a bound of 60 s (longer than the test's waits, so that
only an invalidation can make a reader see a new value):
  W  writer: near cache and the topic (on the command line);
  R  reader: near cache and the topic (from a config file, so the keys
     are checked too);
  C  control: near cache, no topic;
  P  publisher only: the topic, no near cache.
The topic is in cache nc-sync, which only the proxies create.
  - R and C read a key W wrote, and hold it (a second read is a near-cache
    hit); W writes a new value: R answers it within a bounded wait, C
    still answers the old one - without the option the check would fail;
  - the same for a DEL through W, a memcached set through W's memcache
    port read through R's, and a SET through P (which keeps nothing);
  - the metrics: keys published and heard, entries invalidated, no
    publish errors, subscribed 1 on W and R, 0 on P (it does not
    subscribe); promtool check metrics passes on R's scrape when promtool
    is installed;
  - bad values, on the command line and in a config file, and the topic's
    cache without a topic, are refused at start (exit 2, the words).
Issue 46: no check asserts an elapsed time. Each wait polls for what must
come and gives up after SEEN_WITHIN_S: a write seen "within milliseconds"
is the library's promise, the generous bound only keeps a lost message
from hanging the test.

Usage: near_invalidation.py --proxy PATH --momento-local PATH
Exits 77 when redis-py or pymemcache or momento-local is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis", "pymemcache")
import redis  # noqa: E402
from pymemcache.client.base import Client as McClient  # noqa: E402

CACHE = "proxy-test"
SYNC_CACHE = "nc-sync"
TOPIC = "near"
BOUND_MS = 60000     # every near cache's: longer than any wait below
SEEN_WITHIN_S = 10   # how long a reader may take to see another's write


def near():
    return ["--near-cache-bytes", "1048576", "--near-cache-staleness-ms", str(BOUND_MS)]


def topic_args():
    return ["--near-cache-topic", TOPIC, "--near-cache-topic-cache", SYNC_CACHE]


def scrape(px):
    return pt.scrape(px.ports['metrics'])


def metric(px, name, text=None):
    body = text if text is not None else scrape(px)
    m = re.search(r"^momento_proxy_" + re.escape(name) + r" (\d+)$", body, re.M)
    return int(m.group(1)) if m else -1


def start_reader(proxy, endpoint, tmpdir):
    """R, from a config file: its near cache and topic set by the file's
    keys, with - and _ spellings."""
    path = os.path.join(tmpdir, "reader.yaml")
    with open(path, "w") as f:
        f.write(f"endpoint: {endpoint}\n"
                "insecure: true\n"
                f"cache: {CACHE}\n"
                "default_ttl: 3600\n"
                "near_cache_bytes: 1048576\n"
                f"near-cache-staleness-ms: {BOUND_MS}\n"
                f"near_cache_topic: {TOPIC}\n"
                f"near-cache-topic-cache: {SYNC_CACHE}\n"
                "metrics-port: 0\n"
                "listeners:\n"
                "  - resp: 127.0.0.1:0\n"
                "  - memcache: 127.0.0.1:0\n")
    px = pt.start_proxy_config(proxy, path, 2)
    for kind, _host, port, _cache in px.listeners:
        px.ports[kind] = port
    return px


def rc(px):
    return redis.Redis(host="127.0.0.1", port=px.ports["resp"], socket_timeout=pt.WATCHDOG)


def mc(px):
    # default_noreply=False: a set returns once the proxy answered it, so
    # what the test reads after it is ordered after the write.
    return McClient(("127.0.0.1", px.ports["memcache"]), timeout=pt.WATCHDOG,
                    connect_timeout=pt.WATCHDOG, default_noreply=False)


def seen(res, what, read, want):
    """Checks that read() answers want within SEEN_WITHIN_S, reading until
    it does."""
    deadline = time.monotonic() + SEEN_WITHIN_S
    delay = 0.002
    while True:
        got = read()
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    res.check(what, got == want, f"got {got!r}")


def answers(res, what, read, want):
    """Checks that one read() answers want (a value the proxy still holds)."""
    got = read()
    res.check(what, got == want, f"got {got!r}")


def near_hits(px):
    return metric(px, "near_cache_hits_total") + metric(px, "near_cache_miss_hits_total")


def held(res, what, px, read, want):
    """read() answers want, and a read after it is a near-cache hit: the
    proxy holds it, so only an invalidation (or the 60 s bound) changes
    its answer. Read again until one is a hit: a key published before
    may still be on its way and drop the entry the first read made
    (settle() waits for those, this is for any other)."""
    deadline = time.monotonic() + SEEN_WITHIN_S
    got = read()
    while True:
        before = near_hits(px)
        again = read()
        hit = near_hits(px) > before
        if (hit and again == want) or again != want or time.monotonic() > deadline:
            break
    res.check(f"{what} reads {want!r} and then holds it (a near-cache hit)",
              got == want and again == want and hit, f"got {got!r} then {again!r}, hit {hit}")


def invalidates(res, wrp, px, read, held_what, before, write, seen_what, after):
    """settle(*wrp); px holds `before` for read() (held()); write() changes
    the key through another proxy; read() then answers `after` (seen())."""
    settle(*wrp)
    held(res, held_what, px, read, before)
    write()
    seen(res, seen_what, read, after)


def settle(w, r, p):
    """Waits (at most SEEN_WITHIN_S) until W and R have heard every key
    the others published so far, so that no earlier write's message
    arrives after a read the test means to hold. Returns whether they
    did: a message lost would be the answer no."""
    deadline = time.monotonic() + SEEN_WITHIN_S
    while True:
        tw, tr, tp = scrape(w), scrape(r), scrape(p)
        pw, pr, pp = (metric(x, "near_cache_keys_published_total", t)
                      for x, t in ((w, tw), (r, tr), (p, tp)))
        hw, hr = (metric(x, "near_cache_keys_heard_total", t) for x, t in ((w, tw), (r, tr)))
        if (hr == pw + pp and hw == pr + pp) or time.monotonic() > deadline:
            return hr == pw + pp and hw == pr + pp, f"W published {pw}, R {pr}, P {pp}; " \
                                                    f"W heard {hw}, R {hr}"
        time.sleep(0.01)


def subscribed(res, px, name):
    ok = []

    def up():
        if metric(px, "near_cache_subscribed") == 1:
            ok.append(True)
        return bool(ok)
    try:
        pt.wait_until(up, pt.WATCHDOG, f"{name}'s subscription")
    except TimeoutError:
        pass
    res.check(f"{name}'s topic subscription comes up (near_cache_subscribed 1)", bool(ok),
              px.log_tail())
    return bool(ok)


def resp_checks(res, w, r, c, p):
    rw, rr, rcc, rp = rc(w), rc(r), rc(c), rc(p)

    # A SET through W reaches R's near cache; C, without the topic, keeps
    # the old value to its bound.
    rw.set("ni:k1", "one")
    settle(w, r, p)
    held(res, "R's GET of k1", r, lambda: rr.get("ni:k1"), b"one")
    held(res, "C's GET of k1", c, lambda: rcc.get("ni:k1"), b"one")
    rw.set("ni:k1", "two")
    seen(res, f"R's GET answers W's new SET within {SEEN_WITHIN_S} s (the topic)",
         lambda: rr.get("ni:k1"), b"two")
    answers(res, "C's GET, without the topic, still answers the old value (its 60 s bound)",
            lambda: rcc.get("ni:k1"), b"one")

    # A DEL through W: R reads the key gone.
    invalidates(res, (w, r, p), r, lambda: rr.get("ni:k1"), "R's GET of k1 again", b"two",
                lambda: rw.delete("ni:k1"),
                f"R's GET answers nil within {SEEN_WITHIN_S} s of W's DEL", None)
    answers(res, "C's GET after the DEL still answers the old value", lambda: rcc.get("ni:k1"),
            b"one")

    # R's kept miss ends at W's write too.
    invalidates(res, (w, r, p), r, lambda: rr.get("ni:k2"), "R's GET of the absent k2", None,
                lambda: rw.set("ni:k2", "now"), "R's kept miss ends at W's SET", b"now")

    # P publishes without a near cache of its own.
    rp.set("ni:k3", "first")
    invalidates(res, (w, r, p), r, lambda: rr.get("ni:k3"), "R's GET of k3", b"first",
                lambda: rp.set("ni:k3", "second"),
                "R's GET answers a SET through P (topic, no near cache)", b"second")

    # And the other way: R's write reaches W.
    invalidates(res, (w, r, p), w, lambda: rw.get("ni:k4"), "W's GET of k4", None,
                lambda: rr.set("ni:k4", "from R"), "W's GET answers R's SET", b"from R")
    for x in (rw, rr, rcc, rp):
        x.close()


def memcache_checks(res, w, r, c, p):
    mw, mr, mcc = mc(w), mc(r), mc(c)
    mw.set("ni:m1", b"one")
    settle(w, r, p)
    held(res, "R's memcached get of m1", r, lambda: mr.get("ni:m1"), b"one")
    held(res, "C's memcached get of m1", c, lambda: mcc.get("ni:m1"), b"one")
    mw.set("ni:m1", b"two")
    seen(res, f"R's memcached get answers W's memcached set within {SEEN_WITHIN_S} s",
         lambda: mr.get("ni:m1"), b"two")
    answers(res, "C's memcached get, without the topic, still answers the old value",
            lambda: mcc.get("ni:m1"), b"one")

    # A memcached write read through RESP: one key space, one topic (RESP
    # sees the item's 4 bytes of flags first, docs/proxy.md "Flags").
    rr = rc(r)
    invalidates(res, (w, r, p), r, lambda: rr.get("ni:m2"), "R's GET of m2", None,
                lambda: mw.set("ni:m2", b"mc"), "R's RESP GET answers W's memcached set",
                b"\0\0\0\0mc")
    for x in (mw, mr, mcc, rr):
        x.close()


def metrics_checks(res, w, r, c, p):
    ok, counts = settle(w, r, p)
    res.check("W and R heard every key the other proxies published", ok, counts)
    tw, tr, tc, tp = scrape(w), scrape(r), scrape(c), scrape(p)
    # W wrote k1 three times (SET, SET, DEL), k2, m1 twice, m2; R k4; P k3
    # twice.
    res.check("W published its writes' keys without error",
              metric(w, "near_cache_keys_published_total", tw) >= 7 and
              metric(w, "near_cache_publishes_total", tw) >= 1 and
              metric(w, "near_cache_publish_errors_total", tw) == 0,
              f"keys {metric(w, 'near_cache_keys_published_total', tw)}, "
              f"publishes {metric(w, 'near_cache_publishes_total', tw)}, "
              f"errors {metric(w, 'near_cache_publish_errors_total', tw)}")
    res.check("R heard the others' keys and dropped entries for them",
              metric(r, "near_cache_keys_heard_total", tr) >= 8 and
              metric(r, "near_cache_invalidated_total", tr) >= 5,
              f"heard {metric(r, 'near_cache_keys_heard_total', tr)}, "
              f"invalidated {metric(r, 'near_cache_invalidated_total', tr)}")
    res.check("R's subscription connected once at least (near_cache_resets_total)",
              metric(r, "near_cache_resets_total", tr) >= 1,
              f"resets {metric(r, 'near_cache_resets_total', tr)}")
    res.check("P published and does not subscribe",
              metric(p, "near_cache_keys_published_total", tp) >= 2 and
              metric(p, "near_cache_subscribed", tp) == 0 and
              metric(p, "near_cache_keys_heard_total", tp) == 0,
              f"published {metric(p, 'near_cache_keys_published_total', tp)}, "
              f"subscribed {metric(p, 'near_cache_subscribed', tp)}")
    names = ("invalidated_total", "resets_total", "keys_published_total", "publishes_total",
             "publish_errors_total", "keys_heard_total", "subscribed")
    zero = [n for n in names if metric(c, "near_cache_" + n, tc) != 0]
    res.check("C, without the topic, reports every invalidation metric, all 0", not zero,
              f"not 0 or missing: {zero}")
    promtool = shutil.which("promtool")
    if promtool:
        out = subprocess.run([promtool, "check", "metrics"], input=tr.encode(),
                             capture_output=True, timeout=pt.WATCHDOG)
        text = (out.stdout + out.stderr).decode(errors="replace").strip()
        res.check("promtool check metrics passes on R's scrape", out.returncode == 0 and not text,
                  f"exit {out.returncode}: {text[:2000]}")
    else:
        print("# promtool not found (Debian: prometheus): R's scrape not linted")


def refusals(res, proxy):
    pt.check_starts_refused(res, proxy, [
        (["--near-cache-topic", ""], "invalid --near-cache-topic '': the topic name is empty"),
        (["--near-cache-topic", "  "],
         "invalid --near-cache-topic '  ': the topic name is only whitespace"),
        (["--near-cache-topic", "t", "--near-cache-topic-cache", ""],
         "invalid --near-cache-topic-cache '': the cache name is empty"),
        (["--near-cache-topic", "t", "--near-cache-topic-cache", "a\tb"],
         "the cache name has a control character (0x09) at byte 1"),
        (["--near-cache-topic", "t" * 256],
         "names must be under 256 bytes"),
        (["--near-cache-topic-cache", SYNC_CACHE],
         f"invalid --near-cache-topic-cache '{SYNC_CACHE}': needs --near-cache-topic"),
    ])
    pt.check_config_refused(
        res, proxy,
        "near_cache_bytes: 1048576\nnear_cache_staleness_ms: 50\nnear_cache_topic: \"\"\n",
        "{path}:3: near_cache_topic: '' the topic name is empty",
        "a config file's empty near_cache_topic is refused at its line")


def main():
    args = pt.parse_common_args(sys.argv[1:])
    pt.require_program(args.proxy, "momento-proxy")
    if not args.momento_local or not os.access(args.momento_local, os.X_OK):
        pt.skip(f"momento-local not found ({args.momento_local!r}): give --momento-local PATH")
    res = pt.Results()
    refusals(res, args.proxy)
    local = pt.start_momento_local(args.momento_local, CACHE)
    started = []
    tmpdir = tempfile.mkdtemp(prefix="near-invalidation-")
    try:
        endpoint = f"127.0.0.1:{local.port}"

        def start(extra):
            px = pt.start_proxy(args.proxy, cache=CACHE, endpoint=endpoint,
                                extra=extra + ["--metrics-port", "0"])
            started.append(px)
            px.ports["metrics"] = pt.metrics_port(px)
            return px
        w = start(near() + topic_args())
        r = start_reader(args.proxy, endpoint, tmpdir)
        started.append(r)
        r.ports["metrics"] = pt.metrics_port(r)
        c = start(near())
        p = start(topic_args())
        # A subscription connecting drops every entry, so the reads begin
        # once both are up; W's is checked for the last check (R's write).
        if subscribed(res, w, "W") and subscribed(res, r, "R"):
            resp_checks(res, w, r, c, p)
            memcache_checks(res, w, r, c, p)
            metrics_checks(res, w, r, c, p)
        with open(w.log_path) as f:
            log = f.read()
        res.check(f"W created the topic's cache {SYNC_CACHE} at start",
                  f"cache '{SYNC_CACHE}' on" in log, log[-2000:])
    finally:
        for px in started:
            code = px.stop()
            res.check(f"proxy on {px.port} exits 0 at SIGTERM", code == 0, px.log_tail())
        local.stop()
        shutil.rmtree(tmpdir, ignore_errors=True)
    res.exit()


if __name__ == "__main__":
    main()
