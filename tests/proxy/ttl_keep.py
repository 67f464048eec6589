#!/usr/bin/env python3
"""Writes keep a key's TTL, and an expiry already past shows nothing
(issue 47 items 1 and 2), answered by momento-proxy as redis-server
answers them.

The same steps run against a redis-server this test starts and against
momento-proxy; each step's record is compared (pt.compare_records), and
where the proxy must differ - a key written without an expiry has
--default-ttl, Momento keeping nothing forever - EXPECT says what it must
answer and why.

  kept       EXPIRE k 3600, then each write of each type: the TTL is still
             over 3000 s (the proxy's default here is 600 s, so a write that
             set the default would show).
  new key    a write that creates a key gives it no TTL in Redis, the
             default in the proxy.
  limiters   the two rate limiters people build first, with a 300 ms
             window: (a) INCR, and PEXPIRE when INCR answered 1; (b) INCR
             then PEXPIRE NX every time. Asserted by causality, not time:
             while the counter counts, its PTTL stays within the window (a
             write that refreshed it would show the default at once); once
             PTTL says it is gone, the next INCR answers 1; three windows.
  past       SET ... PXAT <past> with every option (none, NX, XX, GET, NX
             GET, XX GET), over a key there and one absent, and EXPIRE /
             PEXPIRE with a time not in the future: 200 rounds pipelined,
             each followed by a GET, which never shows the value (issue
             47 measured 153-183 of 200).

Usage: ttl_keep.py [--target reference|proxy|both] --redis-server PATH --proxy PATH;
exits 77 without redis-server or redis-py."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis")
import redis  # noqa: E402

DEFAULT_TTL = 600
WINDOW_MS = 300
ROUNDS = 200


# Each write: (name, type setup, the write). The key is "k".
WRITES = [
    ("HSET", [("HSET", "k", "a", "1", "b", "2")], ("HSET", "k", "c", "3")),
    ("HMSET", [("HSET", "k", "a", "1")], ("HMSET", "k", "a", "9", "d", "4")),
    ("HSETNX", [("HSET", "k", "a", "1")], ("HSETNX", "k", "n", "1")),
    ("HINCRBY", [("HSET", "k", "a", "1")], ("HINCRBY", "k", "a", "5")),
    ("HDEL", [("HSET", "k", "a", "1", "b", "2")], ("HDEL", "k", "a")),
    ("LPUSH", [("RPUSH", "k", "a")], ("LPUSH", "k", "x", "y")),
    ("RPUSH", [("RPUSH", "k", "a")], ("RPUSH", "k", "x")),
    ("LPOP", [("RPUSH", "k", "a", "b", "c")], ("LPOP", "k")),
    ("RPOP with a count", [("RPUSH", "k", "a", "b", "c")], ("RPOP", "k", "2")),
    ("SADD", [("SADD", "k", "a")], ("SADD", "k", "b", "c")),
    ("SREM", [("SADD", "k", "a", "b")], ("SREM", "k", "a")),
    ("SPOP", [("SADD", "k", "a", "b")], ("SPOP", "k")),
    ("ZADD", [("ZADD", "k", "1", "a")], ("ZADD", "k", "2", "b", "3", "a")),
    ("ZADD INCR", [("ZADD", "k", "1", "a")], ("ZADD", "k", "INCR", "2", "a")),
    ("ZADD GT CH", [("ZADD", "k", "1", "a")], ("ZADD", "k", "GT", "CH", "5", "a")),
    ("ZINCRBY", [("ZADD", "k", "1", "a")], ("ZINCRBY", "k", "2", "a")),
    ("ZINCRBY new member", [("ZADD", "k", "1", "a")], ("ZINCRBY", "k", "2", "b")),
    ("ZREM", [("ZADD", "k", "1", "a", "2", "b")], ("ZREM", "k", "a")),
    ("INCR", [("SET", "k", "5")], ("INCR", "k")),
    ("INCRBY", [("SET", "k", "5")], ("INCRBY", "k", "10")),
    ("DECR", [("SET", "k", "5")], ("DECR", "k")),
    ("DECRBY", [("SET", "k", "5")], ("DECRBY", "k", "3")),
    ("SET KEEPTTL", [("SET", "k", "5")], ("SET", "k", "6", "KEEPTTL")),
    ("SET XX KEEPTTL GET", [("SET", "k", "5")], ("SET", "k", "6", "XX", "KEEPTTL", "GET")),
]

# Writes that create their key: no TTL in Redis, the default in the proxy.
CREATES = [
    ("INCR", ("INCR", "k")), ("INCRBY", ("INCRBY", "k", "3")), ("DECR", ("DECR", "k")),
    ("HSET", ("HSET", "k", "f", "v")), ("HINCRBY", ("HINCRBY", "k", "f", "2")),
    ("LPUSH", ("LPUSH", "k", "a")), ("RPUSH", ("RPUSH", "k", "a")),
    ("SADD", ("SADD", "k", "a")), ("ZADD", ("ZADD", "k", "1", "a")),
    ("ZINCRBY", ("ZINCRBY", "k", "1", "a")), ("SET", ("SET", "k", "v")),
]


def kept_steps(r, out):
    for name, setup, write in WRITES:
        r.delete("k")
        for cmd in setup:
            r.execute_command(*cmd)
        r.expire("k", 3600)
        answer = r.execute_command(*write)
        if name == "SPOP":  # a random member
            answer = ("one of a, b", answer in (b"a", b"b"))
        if isinstance(answer, list):
            answer = sorted(answer)
        out.append((f"kept: {name} answers", answer))
        out.append((f"kept: {name} then TTL", pt.ttl_class(r.ttl("k"), DEFAULT_TTL)))
    # A write that replaces the key drops its TTL in Redis: the default.
    r.delete("k")
    r.set("k", "v", ex=3600)
    r.set("k", "w")
    out.append(("kept: SET without KEEPTTL then TTL", pt.ttl_class(r.ttl("k"), DEFAULT_TTL)))
    r.delete("k")
    r.execute_command("HSET", "k", "f", "v")
    r.expire("k", 3600)
    r.execute_command("ZADD", "u", "1", "a")
    r.execute_command("ZUNIONSTORE", "k", "1", "u")
    out.append(("kept: ZUNIONSTORE over it then TTL", pt.ttl_class(r.ttl("k"), DEFAULT_TTL)))
    r.delete("k", "u")
    # The session: EXPIRE sess 3600; HSET sess f v.
    r.delete("sess")
    r.execute_command("HSET", "sess", "user", "1")
    r.expire("sess", 3600)
    r.execute_command("HSET", "sess", "f", "v")
    out.append(("kept: session TTL over 3000 s after HSET", r.ttl("sess") > 3000))
    r.delete("sess")


def create_steps(r, out):
    for name, write in CREATES:
        r.delete("k")
        r.execute_command(*write)
        out.append((f"new key: {name} then TTL", pt.ttl_class(r.ttl("k"), DEFAULT_TTL)))
    r.delete("k")


def limiter(r, key, nx):
    """One of the two rate limiters until its counter has restarted three
    times; returns its record, or the first rule it broke."""
    r.delete(key)
    deadline = time.monotonic() + 3 * pt.WATCHDOG
    restarts, prev, gone = 0, 0, False
    while restarts < 3:
        if time.monotonic() > deadline:
            return f"{restarts} restarts, still counting ({prev}) after {3 * pt.WATCHDOG} s"
        v = r.incr(key)
        if nx:
            applied = r.pexpire(key, WINDOW_MS, nx=True)
        elif v == 1:
            applied = r.pexpire(key, WINDOW_MS)
        else:
            applied = None
        pttl = r.pttl(key)
        if v == 1:
            restarts += prev > 0
            # The window's expiry is set on its first INCR - unless the key
            # is already gone again, or (the proxy's INCR is two calls) came
            # back with less than the window left.
            if applied not in (True, 1) and not (pttl == -2 or (nx and pttl <= WINDOW_MS)):
                return f"PEXPIRE{' NX' if nx else ''} after INCR 1 answered {applied!r}, PTTL {pttl}"
        else:
            if gone:
                return f"INCR after PTTL said gone answered {v}, not 1"
            if v != prev + 1:
                return f"INCR answered {v} after {prev}"
            if nx and applied not in (False, 0):
                return f"PEXPIRE NX on a counting key answered {applied!r}"
        if pttl > WINDOW_MS or pttl == -1:
            return f"after INCR {v} the PTTL is {pttl} ms, not within the {WINDOW_MS} ms window"
        gone = pttl == -2
        prev = v
        time.sleep(0.02)
    r.delete(key)
    return "counted from 1, each PTTL within the window, 1 again once expired: 3 restarts"


def limiter_steps(r, out):
    out.append(("limiter (a): INCR, PEXPIRE 300 when INCR answered 1",
                limiter(r, "rl:a", nx=False)))
    out.append(("limiter (b): INCR, PEXPIRE 300 NX every time",
                limiter(r, "rl:b", nx=True)))


PAST_OPTIONS = [(), ("NX",), ("XX",), ("GET",), ("NX", "GET"), ("XX", "GET")]


def past_steps(r, out):
    past = int(time.time() * 1000) - 60_000
    for present in (True, False):
        for opts in PAST_OPTIONS:
            name = f"past: SET PXAT <past> {' '.join(opts) or '(plain)'}" + \
                (" over a key" if present else " on no key")
            p = r.pipeline(transaction=False)
            for _ in range(ROUNDS):
                if present:
                    p.set("p", "old")
                else:
                    p.delete("p")
                p.execute_command("SET", "p", "new", "PXAT", past, *opts)
                p.get("p")
                p.exists("p")
            res = p.execute(raise_on_error=False)
            rounds = [res[i:i + 4] for i in range(0, len(res), 4)]
            first = rounds[0]
            out.append((name + ": SET answers, then GET, EXISTS",
                        (first[1], first[2], first[3])))
            out.append((name + f": rounds of {ROUNDS} whose GET showed the new value",
                        sum(1 for x in rounds if x[2] == b"new")))
            out.append((name + ": rounds whose answers differ from the first's",
                        sum(1 for x in rounds if x[1:] != first[1:])))
    for cmd in (("EXPIRE", "p", "0"), ("EXPIRE", "p", "-10"), ("PEXPIRE", "p", "0"),
                ("PEXPIRE", "p", "-1"), ("EXPIRE", "p", "-1", "LT"), ("EXPIRE", "p", "-1", "GT"),
                ("SET", "p", "new", "EXAT", str(past // 1000))):
        name = "past: " + " ".join(cmd).replace(str(past // 1000), "<past>")
        p = r.pipeline(transaction=False)
        for _ in range(ROUNDS):
            p.set("p", "new")
            p.execute_command(*cmd)
            p.get("p")
        res = p.execute(raise_on_error=False)
        rounds = [res[i:i + 3] for i in range(0, len(res), 3)]
        out.append((name + ": answer, then GET", (rounds[0][1], rounds[0][2])))
        out.append((name + ": rounds whose answers differ from the first's",
                    sum(1 for x in rounds if x[1:] != rounds[0][1:])))
    r.delete("p")


def run(port, label):
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
                    socket_connect_timeout=pt.WATCHDOG)
    out = []
    t0 = time.monotonic()
    for part in (kept_steps, create_steps, limiter_steps, past_steps):
        try:
            part(r, out)
        except Exception as e:  # a part's failure is an answer too
            out.append((f"{part.__name__} (failed here)", (type(e).__name__, str(e))))
    print(f"# {label}: {len(out)} steps in {time.monotonic() - t0:.2f} s")
    r.close()
    return out


NO_PERSIST = ("Momento has no item without expiry: a write that creates a key gives it the "
              f"proxy's --default-ttl ({DEFAULT_TTL} s here) where Redis gives none")

EXPECT = {f"new key: {name} then TTL": pt.Expect("the default TTL", NO_PERSIST)
          for name, _ in CREATES}
EXPECT["kept: SET without KEEPTTL then TTL"] = pt.Expect(
    "the default TTL", NO_PERSIST + " (SET drops the TTL it replaces)")
EXPECT["kept: ZUNIONSTORE over it then TTL"] = pt.Expect(
    "the default TTL", NO_PERSIST + " (ZUNIONSTORE replaces its destination)")


def main():
    a = pt.parse_common_args(sys.argv[1:])
    pt.run_against_redis(a, pt.Results(), run, EXPECT, DEFAULT_TTL)


if __name__ == "__main__":
    main()
