#!/usr/bin/env python3
"""A key of another type among the keys of a read, and answers that must
not depend on other connections' keys (issue 46).

Every check runs first against redis-server or memcached, started here (so
each expected answer is the real server's), then against momento-proxy
twice: with --batch 0 (every get its own call) and with the default
(--batch 2: gets in flight at once share GetBatch calls; coalescing on).

RESP, compared with redis-server step by step:
  - MGET over a string, a hash, a list, a set, a sorted set and a missing
    key: a key of another type is nil, the string its value (on the wire
    and through redis-py); GET of the hash alone is WRONGTYPE;
  - GET hash then GETDEL str pipelined on one connection: WRONGTYPE, then
    str's value; and the same among other gets, so that several are in
    flight at once and --batch 2 sends them in shared GetBatch calls.
memcached, compared with memcached, where the key is simply absent
(memcached has no types; through the proxy it is first made a hash on the
RESP port):
  - get, gets, gat, gats of `a h` (and of h alone, twice, between a's): a's
    value and no VALUE line for h; binary getk, and getkq + noop (the
    binary multi-get); pymemcache's get_many and gets_many.
A GetBatch failing as a whole (momento-local's fault injection, plain
gets unharmed): FAILED_PRECONDITION - what a key of another type can do to
a batch - has MGET and memcached's get of many ask each key alone and
answer every value; any other error (INTERNAL) fails the command.
Isolation, the same against the reference: 8 connections each GET their
own string key 2,000 times (16 pipelined at a time) while a ninth GETs a
hash key in a loop that starts before them and ends after them; every
victim answer must be its own value, every attacker answer WRONGTYPE. The
same on the memcache port (victims' values, attacker's misses). Under
--batch 2 the proxy's INFO must show GetBatch calls made, so that the
check did go through the batcher.

Usage: other_type.py [--target reference|proxy|both] --redis-server PATH
                     --memcached PATH --proxy PATH
Exits 77 when a server or redis-py / pymemcache is missing."""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis", "pymemcache")
import redis  # noqa: E402
from pymemcache.client.base import Client  # noqa: E402
import rawmc as mc  # noqa: E402
from rawresp import RawConn, encode  # noqa: E402

# The proxy runs: (label, extra arguments, whether gets are batched).
MODES = [("--batch 0", ["--batch", "0"], False), ("default --batch 2", [], True)]
VICTIMS = 8
VICTIM_GETS = 2000
DEPTH = 16                 # commands pipelined at a time, per connection
ATTACKER_MAX = 200000      # the attacker's commands, at most
THREAD_DEADLINE = 60       # seconds, for any one connection's loop
WRONGTYPE = ("-", "WRONGTYPE Operation against a key holding the wrong kind of value")


def step(out, name, fn):
    """Records fn()'s answer, or its failure as the answer: a step that
    fails is compared (and reported) as one that answered wrong."""
    try:
        out.append((name, fn()))
    except Exception as e:
        out.append((name, ("exception", type(e).__name__, str(e))))


# --- RESP steps ---------------------------------------------------------------
def resp_steps(port):
    """[(step, answer)] in order, on one raw connection and one redis-py."""
    c = RawConn(port, timeout=pt.WATCHDOG)
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
                    socket_connect_timeout=pt.WATCHDOG)
    out = []

    def raw(*args):
        step(out, "raw: " + " ".join(args), lambda: c.command(*args))

    def piped(name, cmds):
        c.send(b"".join(encode(list(x)) for x in cmds))
        step(out, name, lambda: [c.reply() for _ in cmds])

    raw("SET", "str", "v")
    raw("HSET", "hash", "f", "v")
    raw("RPUSH", "list", "a")
    raw("SADD", "set", "a")
    raw("ZADD", "zset", "1", "a")
    raw("MSET", "p1", "1", "p2", "2", "p3", "3", "p4", "4")
    raw("MGET", "str", "hash", "missing")
    raw("MGET", "hash")
    raw("MGET", "hash", "str", "hash")
    raw("MGET", "list", "str", "set", "zset", "missing", "str")
    raw("GET", "hash")
    raw("GET", "str")
    piped("pipelined: GET hash, GETDEL str", [("GET", "hash"), ("GETDEL", "str")])
    raw("GET", "str")
    raw("SET", "str", "w")
    piped("pipelined among other gets: GET p1 p2 p3, GET hash, GETDEL str, GET hash, GET p4",
          [("GET", "p1"), ("GET", "p2"), ("GET", "p3"), ("GET", "hash"), ("GETDEL", "str"),
           ("GET", "hash"), ("GET", "p4")])
    raw("SET", "str", "x")
    piped("pipelined: MGET str hash, GET hash, GETDEL str, MGET hash p1",
          [("MGET", "str", "hash"), ("GET", "hash"), ("GETDEL", "str"), ("MGET", "hash", "p1")])
    step(out, "py: mget(['p1', 'hash', 'missing', 'list'])",
         lambda: r.mget(["p1", "hash", "missing", "list"]))
    raw("TYPE", "hash")
    raw("HGET", "hash", "f")
    c.close()
    r.close()
    return out


# --- memcached steps ------------------------------------------------------------
def norm_text(lines):
    """A VALUE line's cas unique (gets, gats) is each server's own."""
    out = []
    for ln in lines:
        parts = ln.split(b" ")
        if ln.startswith(b"VALUE ") and len(parts) == 5:
            ln = b" ".join(parts[:4] + [b"<cas>"])
        out.append(ln)
    return out


def norm_bin(r):
    return (mc.OPNAMES.get(r["op"], r["op"]), r["status"], r["key"], r["extras"],
            r["value"] if r["status"] == 0 else "(an error text)", r["opaque"],
            "<cas>" if r["cas"] else 0)


def mc_steps(port):
    """h is absent (memcached) or holds a hash (the proxy: made before)."""
    c = mc.Conn(port, timeout=pt.WATCHDOG)
    out = []

    def text(data, kind="items"):
        step(out, "text: " + data.split(b"\r\n")[0].decode(),
             lambda: norm_text(c.text(data, kind)[0]))

    text(b"set a 0 0 1\r\nx\r\n", "line")
    for cmd in (b"get a h", b"gets a h", b"gat 100 a h", b"gats 100 a h", b"get h",
                b"get h h", b"get a h a", b"get h a h", b"gets h", b"gets h a h",
                b"gat 100 h", b"get a"):
        text(cmd + b"\r\n")
    b = mc.Conn(port, timeout=pt.WATCHDOG)
    # The binary multi-get: quiet gets answer hits only, then the noop.
    b.send(mc.bin_request(mc.GETKQ, "a", opaque=1) + mc.bin_request(mc.GETKQ, "h", opaque=2) +
           mc.bin_request(mc.GETQ, "h", opaque=3) + mc.bin_request(mc.GETKQ, "a", opaque=4) +
           mc.bin_request(mc.NOOP, opaque=5))

    def up_to_noop():
        got = []
        while not got or got[-1][0] != "noop":
            got.append(norm_bin(b.bin_response()))
        return got

    step(out, "binary: getkq a, getkq h, getq h, getkq a, noop", up_to_noop)
    for op, name in ((mc.GETK, "getk"), (mc.GET, "get")):
        b.send(mc.bin_request(op, "h", opaque=9))
        step(out, f"binary: {name} h", lambda: norm_bin(b.bin_response()))
    b.close()
    p = Client(("127.0.0.1", port), timeout=pt.WATCHDOG, connect_timeout=pt.WATCHDOG)
    step(out, "py: get_many(['a', 'h'])", lambda: sorted(p.get_many(["a", "h"]).items()))
    step(out, "py: gets_many(['h', 'a'])",
         lambda: sorted((k, v[0]) for k, v in p.gets_many(["h", "a"]).items()))
    p.close()
    c.close()
    return out


# --- isolation: victims and one attacker ----------------------------------------
def isolation(port, proto):
    """8 victims GET their own keys while one attacker GETs a key of
    another type, from before the victims start to after they end."""
    if proto == "resp":
        setup = RawConn(port, timeout=pt.WATCHDOG)
        for i in range(VICTIMS):
            setup.command("SET", f"victim:{i}", f"value of victim {i}")
        setup.close()
        attack_cmd = encode(["GET", "attack"])
        attack_want = WRONGTYPE
    else:
        setup = mc.Conn(port, timeout=pt.WATCHDOG)
        for i in range(VICTIMS):
            v = b"value of victim %d" % i
            setup.text(b"set victim:%d 0 0 %d\r\n%s\r\n" % (i, len(v), v), "line")
        setup.close()
        attack_cmd = b"get attack\r\n"
        attack_want = [b"END"]

    def connect():
        return (RawConn(port, timeout=pt.WATCHDOG) if proto == "resp"
                else mc.Conn(port, timeout=pt.WATCHDOG))

    def reply(conn):
        return conn.reply() if proto == "resp" else conn.text_reply("items")

    started, victims_done = threading.Event(), threading.Event()
    attacker = {"answers": 0, "wrong": 0, "first wrong": None, "error": None}
    victims = [{"answers": 0, "wrong": 0, "first wrong": None, "error": None}
               for _ in range(VICTIMS)]

    def pump(st, cmd, want, limit, after_round=lambda: False):
        """One connection's loop: `cmd` DEPTH at a time, each answer
        counted in `st` and checked against `want`, until `limit` answers,
        THREAD_DEADLINE or after_round() says stop; a failure is st's
        error."""
        try:
            conn = connect()
            deadline = time.monotonic() + THREAD_DEADLINE
            while st["answers"] < limit and time.monotonic() < deadline:
                conn.send(cmd * DEPTH)
                for _ in range(DEPTH):
                    got = reply(conn)
                    st["answers"] += 1
                    if got != want:
                        st["wrong"] += 1
                        st["first wrong"] = st["first wrong"] or got
                if after_round():
                    break
            conn.close()
        except Exception as e:
            st["error"] = repr(e)

    def attack():
        def after_round():
            started.set()
            return victims_done.is_set()

        try:
            pump(attacker, attack_cmd, attack_want, ATTACKER_MAX, after_round)
        finally:
            started.set()

    def victim(i):
        v = b"value of victim %d" % i
        if proto == "resp":
            cmd, want = encode(["GET", f"victim:{i}"]), ("$", v)
        else:
            cmd = b"get victim:%d\r\n" % i
            want = [b"VALUE victim:%d 0 %d" % (i, len(v)), v, b"END"]
        pump(victims[i], cmd, want, VICTIM_GETS)

    a = threading.Thread(target=attack, daemon=True)
    a.start()
    started.wait(THREAD_DEADLINE)
    attacks_before = attacker["answers"]
    ts = [threading.Thread(target=victim, args=(i,), daemon=True) for i in range(VICTIMS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(THREAD_DEADLINE + 10)
    attacks_during = attacker["answers"] - attacks_before
    victims_done.set()
    a.join(THREAD_DEADLINE + 10)
    return {
        "victims' answers": sum(v["answers"] for v in victims),
        "victims' wrong answers": sum(v["wrong"] for v in victims),
        "a victim's first wrong answer": next((v["first wrong"] for v in victims
                                               if v["first wrong"]), None),
        "victims' errors": [v["error"] for v in victims if v["error"]],
        "the attacker answered before the victims began": attacks_before > 0,
        "the attacker answered while they ran": attacks_during > 0,
        "the attacker's wrong answers": attacker["wrong"],
        "the attacker's first wrong answer": attacker["first wrong"],
        "the attacker's error": attacker["error"],
    }


def isolation_ok(rec):
    return (rec["victims' answers"] == VICTIMS * VICTIM_GETS and rec["victims' wrong answers"] == 0
            and not rec["victims' errors"] and rec["the attacker answered before the victims began"]
            and rec["the attacker answered while they ran"] and rec["the attacker's wrong answers"] == 0
            and rec["the attacker's error"] is None)


def info_field(port, name):
    c = RawConn(port, timeout=pt.WATCHDOG)
    try:
        kind, text = c.command("INFO")
    finally:
        c.close()
    m = re.search(rb"^%s:(\d+)" % name.encode(), text or b"", re.M)
    return int(m.group(1)) if m else None


# --- a GetBatch failing as a whole (momento-local's fault injection) --------------
def whole_batch_failures(res, proxy_path, label, extra):
    """Every GetBatch fails, plain gets do not. FAILED_PRECONDITION (what
    a key of another type can do to a whole batch): each key is asked
    again alone and answers its own value. INTERNAL: the command fails,
    and its keys are not asked again."""
    for kind, again in (("failed-precondition", True), ("internal", False)):
        px = pt.start_proxy(proxy_path, extra=list(extra) + [
            "--header", f"return-error={kind}", "--header", "error-rpcs=get-batch"])
        try:
            c = RawConn(px.ports["resp"], timeout=pt.WATCHDOG)
            c.command("MSET", "wb:1", "one", "wb:2", "two")
            m = mc.Conn(px.ports["memcache"], timeout=pt.WATCHDOG)
            m.text(b"set wb:a 0 0 1\r\na\r\nset wb:b 0 0 1\r\nb\r\n", "line", "line")
            got = c.command("MGET", "wb:1", "wb:missing", "wb:2")
            got_mc = m.text(b"get wb:a wb:missing wb:b\r\n", "items")[0]
            if again:
                res.check(f"{label}: every GetBatch failing {kind}: MGET asks each key alone",
                          got == ("*", [("$", b"one"), ("$", None), ("$", b"two")]), repr(got))
                res.check(f"{label}: every GetBatch failing {kind}: memcached's get of many too",
                          got_mc == [b"VALUE wb:a 0 1", b"a", b"VALUE wb:b 0 1", b"b", b"END"],
                          repr(got_mc))
            else:
                res.check(f"{label}: every GetBatch failing {kind}: MGET fails, its keys not "
                          "asked again", got[0] == "-" and "INTERNAL" in got[1], repr(got))
                res.check(f"{label}: every GetBatch failing {kind}: so does memcached's get of many",
                          len(got_mc) == 1 and got_mc[0].startswith(
                              b"SERVER_ERROR momento INTERNAL"), repr(got_mc))
            c.close()
            m.close()
        finally:
            px.stop()


# --- the runs ---------------------------------------------------------------------
def run_resp(port):
    rec = resp_steps(port)
    c = RawConn(port, timeout=pt.WATCHDOG)
    c.command("HSET", "attack", "f", "v")
    c.close()
    step(rec, "isolation: 8 victims GET their own keys, one attacker GETs a hash",
         lambda: isolation(port, "resp"))
    return rec


def run_mc(mc_port, resp_port):
    """resp_port: the proxy's, where h and attack are made hashes first;
    None for memcached, where they are simply absent."""
    if resp_port:
        c = RawConn(resp_port, timeout=pt.WATCHDOG)
        c.command("HSET", "h", "f", "v")
        c.command("HSET", "attack", "f", "v")
        c.close()
    rec = mc_steps(mc_port)
    step(rec, "isolation: 8 victims get their own keys, one attacker gets a hash",
         lambda: isolation(mc_port, "memcache"))
    if resp_port:
        c = RawConn(resp_port, timeout=pt.WATCHDOG)
        rec.append(("(proxy) the hash h after memcached's reads: TYPE, HGET f",
                    [c.command("TYPE", "h"), c.command("HGET", "h", "f")]))
        c.close()
    return rec


def numbered(rec):
    """Steps whose names repeat are numbered (#1, #2...): the records are
    compared by name."""
    names = [n for n, _ in rec]
    seen = {}
    out = []
    for n, a in rec:
        if names.count(n) > 1:
            seen[n] = seen.get(n, 0) + 1
            n = f"{n} #{seen[n]}"
        out.append((n, a))
    return out


def compare(res, label, ref, got):
    got = [(n, a) for n, a in got if not n.startswith("(proxy)")]
    pt.compare_records(res, "reference", [(f"{label}: {n}", a) for n, a in numbered(ref)],
                       [(f"{label}: {n}", a) for n, a in numbered(got)], {})


def main():
    a = pt.parse_common_args(sys.argv[1:])
    res = pt.Results()
    ref_resp, ref_mc = pt.run_on_redis_and_memcached(
        a, lambda rp, mp: (run_resp(rp), run_mc(mp, None)))
    # The isolation checks carry their own model: it must hold against the
    # real servers, or the model is wrong.
    for name, rec in ref_resp + ref_mc:
        if name.startswith("isolation"):
            res.check(f"reference: {name}", isinstance(rec, dict) and isolation_ok(rec), repr(rec))
    pt.end_if_reference(a, res, ref_resp + ref_mc, width=None)
    pt.require_program(a.proxy, "momento-proxy")
    for label, extra, batching in MODES:
        px = pt.start_proxy(a.proxy, extra=extra)
        try:
            t0 = time.monotonic()
            got_resp = run_resp(px.ports["resp"])
            got_mc = run_mc(px.ports["memcache"], px.ports["resp"])
            batches = info_field(px.ports["resp"], "momento_batches")
            print(f"# {label}: {time.monotonic() - t0:.1f} s, momento_batches {batches}")
        finally:
            status = px.stop()
        compare(res, f"{label} resp", ref_resp, got_resp)
        compare(res, f"{label} memcache", ref_mc, got_mc)
        proxy_only = dict(got_mc)["(proxy) the hash h after memcached's reads: TYPE, HGET f"]
        res.check(f"{label}: memcached's reads leave the hash h as it was",
                  proxy_only == [("+", "hash"), ("$", b"v")], repr(proxy_only))
        if batching:
            res.check(f"{label}: the isolation checks went through adaptive batching",
                      (batches or 0) > 0, f"INFO momento_batches {batches}")
        res.check(f"{label}: momento-proxy exits 0 on SIGTERM", status == 0,
                  f"exit status {status}; stderr:\n{px.log_tail()}")
        whole_batch_failures(res, a.proxy, label, extra)
    res.exit()


if __name__ == "__main__":
    main()
