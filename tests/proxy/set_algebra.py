#!/usr/bin/env python3
"""SINTER, SUNION, SDIFF and their STORE forms (issue 48 item 6), answered
by momento-proxy as redis-server answers them.

The same steps run against a redis-server this test starts and against
momento-proxy; each step's record is compared (pt.compare_records). Redis
gives no order for these answers: every array is sorted before it is
recorded, and a large one is recorded as its size and a digest of its
sorted members. Where the proxy must differ, EXPECT says what it must
answer and why (docs/proxy.md, the set algebra bullet).

  basic      each command over sets that overlap, wire form (raw socket)
             and through redis-py.
  missing    a missing key is an empty set, in every position.
  wrongtype  a string, hash, list or sorted set anywhere among the sources
             (first, last, after a missing key, after the answer is known
             to be empty) is WRONGTYPE, and a STORE then leaves its
             destination as it was.
  arity      too few arguments.
  store      the STORE forms answer the cardinality, replace a destination
             of any type, delete it when the answer is empty, and may name
             a source as the destination.
  dups       a key named twice.
  large      sets of 3000 members; 300 keys in one command.
  bounds     (proxy: EXPECT) a command that would read over 64 MiB of its
             sources, and a STORE whose answer is over Momento's 5 MiB item
             limit, answer an error and leave the destination as it was.
  ttl        a STORE's destination has no TTL in Redis, the proxy's
             default (--default-ttl) here.
  order      pipelined writes and set algebra on the same keys, 8 rounds:
             the answers are those of the commands run one by one. The proxy
             here has momento-local hold every call naming s2 (delay-ms),
             so a command that did not wait for an earlier write of s2 (its
             second or later key) would read the set without it.

Usage: set_algebra.py [--target reference|proxy|both] --redis-server PATH --proxy PATH;
exits 77 without redis-server or redis-py."""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis")
import redis  # noqa: E402
from rawresp import RawConn, encode  # noqa: E402

DEFAULT_TTL = 600
DELAY_MS = 10
DELAYED_KEYS = "s2"
ORDER_ROUNDS = 8
# Past ALG_READ_MAX (proxy/resp/resp_set.c): a set of BIG_N members of BIG_LEN
# bytes is under Momento's 5 MiB item limit, and READ_TIMES of it are over
# 64 MiB of reading; two of them (distinct members) are over the item limit.
BIG_N = 70000
BIG_LEN = 64
READ_TIMES = 12

OPS = ["SINTER", "SUNION", "SDIFF"]
STORES = ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]


def norm(a):
    """A reply in wire form with every array's elements sorted (nested
    arrays too); a large one as (size, digest)."""
    if isinstance(a, tuple) and a[0] == "*" and a[1] is not None:
        items = sorted((norm(x) for x in a[1]), key=repr)
        if len(items) > 50:
            h = hashlib.sha256(repr(items).encode()).hexdigest()[:16]
            return ("*", f"{len(items)} elements, sha256 {h}")
        return ("*", items)
    return a


def big(items):
    """A redis-py answer (a set or a list) as a comparable record."""
    if isinstance(items, (set, list)):
        s = sorted(items)
        if len(s) > 50:
            return (len(s), hashlib.sha256(b"\n".join(s)).hexdigest()[:16])
        return s
    return items


class Run:
    def __init__(self, port):
        self.c = RawConn(port, timeout=pt.WATCHDOG)
        self.r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
                             socket_connect_timeout=pt.WATCHDOG)
        self.out = []

    def raw(self, *cmd):
        return norm(self.c.command(*cmd))

    def step(self, name, *cmd):
        self.out.append((name or " ".join(cmd), self.raw(*cmd)))

    def rec(self, name, answer):
        self.out.append((name, answer))

    def pipe(self, cmds):
        self.c.send(b"".join(encode(list(c)) for c in cmds))
        return [norm(self.c.reply()) for _ in cmds]

    def reset(self, *keys):
        self.raw("DEL", *keys)

    def close(self):
        self.c.close()
        self.r.close()


def basic_steps(t):
    t.reset("a", "b", "c")
    t.raw("SADD", "a", "1", "2", "3", "x")
    t.raw("SADD", "b", "2", "3", "4")
    t.raw("SADD", "c", "3", "4", "5", "x")
    for op in OPS:
        for keys in (["a"], ["a", "b"], ["b", "a"], ["a", "b", "c"], ["c", "b", "a"], ["a", "c"]):
            t.step(f"basic: {op} {' '.join(keys)}", op, *keys)
    # Empty members and bytes that are not text.
    t.reset("e1", "e2")
    t.raw("SADD", "e1", "", "\x00\xff", "\r\n", "é")
    t.raw("SADD", "e2", "", "\r\n", "z")
    for op in OPS:
        t.step(f"basic: {op} over odd members", op, "e1", "e2")
    # What applications run.
    t.rec("basic: redis-py sinter a b c", big(t.r.sinter("a", "b", "c")))
    t.rec("basic: redis-py sunion a b c", big(t.r.sunion("a", "b", "c")))
    t.rec("basic: redis-py sdiff a b", big(t.r.sdiff("a", "b")))
    t.rec("basic: redis-py sinterstore d a c", t.r.sinterstore("d", "a", "c"))
    t.rec("basic: redis-py sunionstore d a b", t.r.sunionstore("d", ["a", "b"]))
    t.rec("basic: redis-py sdiffstore d a c", t.r.sdiffstore("d", ["a", "c"]))
    t.rec("basic: redis-py smembers d", big(t.r.smembers("d")))
    t.reset("a", "b", "c", "d", "e1", "e2")


def missing_steps(t):
    t.reset("a", "b", "d")
    t.raw("SADD", "a", "1", "2")
    t.raw("SADD", "b", "2", "3")
    for op in OPS:
        for keys in (["nokey"], ["nokey", "a"], ["a", "nokey"], ["a", "nokey", "b"],
                     ["nokey", "nokey2"]):
            t.step(f"missing: {op} {' '.join(keys)}", op, *keys)
    for op in STORES:
        for keys in (["nokey"], ["nokey", "a"], ["a", "nokey"], ["a", "b", "nokey"]):
            t.raw("SADD", "d", "old")
            t.step(f"missing: {op} d {' '.join(keys)}", op, "d", *keys)
            t.step(f"missing: after {op} d {' '.join(keys)}: SMEMBERS d", "SMEMBERS", "d")
    t.reset("a", "b", "d")


OTHER_TYPES = {
    "string": ("SET", "w", "v"),
    "hash": ("HSET", "w", "f", "v"),
    "list": ("RPUSH", "w", "v"),
    "zset": ("ZADD", "w", "1", "v"),
}


def wrongtype_steps(t):
    t.reset("a", "b", "w", "d")
    t.raw("SADD", "a", "1", "2")
    t.raw("SADD", "b", "3")  # a and b do not meet: SINTER a b is empty
    for tname, setup in OTHER_TYPES.items():
        t.reset("w")
        t.raw(*setup)
        for op in OPS:
            for keys in (["w"], ["w", "a"], ["a", "w"], ["nokey", "w"], ["a", "b", "w"],
                         ["a", "nokey", "b", "w"], ["a", "w", "b"]):
                t.step(f"wrongtype {tname}: {op} {' '.join(keys)}", op, *keys)
        for op in STORES:
            for keys in (["w"], ["a", "w"], ["nokey", "w"], ["a", "b", "w"]):
                t.reset("d")
                t.raw("SET", "d", "keep")
                t.step(f"wrongtype {tname}: {op} d {' '.join(keys)}", op, "d", *keys)
                t.step(f"wrongtype {tname}: after {op} d {' '.join(keys)}: GET d", "GET", "d")
            t.reset("d")
            t.raw("SADD", "d", "kept")
            t.step(f"wrongtype {tname}: {op} d(a set) a w", op, "d", "a", "w")
            t.step(f"wrongtype {tname}: after {op} d(a set) a w: SMEMBERS d", "SMEMBERS", "d")
            # The destination alone of another type is no error: replaced.
            t.step(f"wrongtype {tname}: {op} w a (w the destination)", op, "w", "a")
            t.step(f"wrongtype {tname}: after {op} w a: TYPE w", "TYPE", "w")
            t.step(f"wrongtype {tname}: after {op} w a: SMEMBERS w", "SMEMBERS", "w")
            t.reset("w")
            t.raw(*setup)
            # The destination of another type, the answer empty: deleted.
            t.step(f"wrongtype {tname}: {op} w nokey (empty answer)", op, "w", "nokey")
            t.step(f"wrongtype {tname}: after {op} w nokey: EXISTS w", "EXISTS", "w")
            t.raw(*setup)
            # The destination of another type named as a source: WRONGTYPE.
            t.step(f"wrongtype {tname}: {op} w w a", op, "w", "w", "a")
            t.step(f"wrongtype {tname}: after {op} w w a: TYPE w", "TYPE", "w")
    t.reset("a", "b", "w", "d")


def arity_steps(t):
    for op in OPS:
        t.step(f"arity: {op}", op)
    for op in STORES:
        t.step(f"arity: {op}", op)
        t.step(f"arity: {op} d", op, "d")
    t.step("arity: sinter in lower case", "sinter", "nokey")


def store_steps(t):
    t.reset("a", "b", "c", "d")
    t.raw("SADD", "a", "1", "2", "3")
    t.raw("SADD", "b", "2", "3", "4")
    t.raw("SADD", "c", "9")
    cases = [("SINTERSTORE", ["a", "b"]), ("SUNIONSTORE", ["a", "b"]), ("SDIFFSTORE", ["a", "b"]),
             ("SINTERSTORE", ["a", "c"]), ("SDIFFSTORE", ["c", "c"]),
             ("SUNIONSTORE", ["a", "b", "c"])]
    for dest_setup in (None, ("SADD", "d", "old", "2"), ("SET", "d", "str"),
                       ("HSET", "d", "f", "v"), ("RPUSH", "d", "x"), ("ZADD", "d", "1", "m")):
        shown = "absent" if dest_setup is None else dest_setup[0]
        for op, keys in cases:
            t.reset("d")
            if dest_setup:
                t.raw(*dest_setup)
            name = f"store over d ({shown}): {op} d {' '.join(keys)}"
            t.step(name, op, "d", *keys)
            t.step(name + ": TYPE d", "TYPE", "d")
            if t.raw("TYPE", "d") == ("+", "set"):
                t.step(name + ": SMEMBERS d", "SMEMBERS", "d")
    # The destination is a source.
    for op in STORES:
        t.reset("a", "b")
        t.raw("SADD", "a", "1", "2", "3")
        t.raw("SADD", "b", "2", "3", "4")
        t.step(f"store into a source: {op} a a b", op, "a", "a", "b")
        t.step(f"store into a source: after {op} a a b: SMEMBERS a", "SMEMBERS", "a")
        t.step(f"store into a source: after {op} a a b: SMEMBERS b", "SMEMBERS", "b")
        t.raw("SADD", "a", "1", "2", "3")
        t.step(f"store into a source: {op} b a b", op, "b", "a", "b")
        t.step(f"store into a source: after {op} b a b: SMEMBERS b", "SMEMBERS", "b")
    t.reset("a", "b", "c", "d")


def dup_steps(t):
    t.reset("a", "b", "d")
    t.raw("SADD", "a", "1", "2", "3")
    t.raw("SADD", "b", "3", "4")
    for op in OPS:
        for keys in (["a", "a"], ["a", "b", "a"], ["a", "b", "b"], ["b", "a", "a", "b"],
                     ["nokey", "nokey"]):
            t.step(f"dups: {op} {' '.join(keys)}", op, *keys)
    for op in STORES:
        for keys in (["a", "a"], ["a", "b", "a"], ["d", "d", "a"]):
            t.reset("d")
            t.raw("SADD", "d", "3", "x")
            t.step(f"dups: {op} d {' '.join(keys)}", op, "d", *keys)
            t.step(f"dups: after {op} d {' '.join(keys)}: SMEMBERS d", "SMEMBERS", "d")
            t.step(f"dups: after {op} d {' '.join(keys)}: EXISTS d", "EXISTS", "d")
    t.reset("a", "b", "d")


def large_steps(t):
    t.reset("L1", "L2", "L3", "d")
    t.raw("SADD", "L1", *[f"m{i:05d}" for i in range(0, 3000)])
    t.raw("SADD", "L2", *[f"m{i:05d}" for i in range(1500, 4500)])
    t.raw("SADD", "L3", *[f"m{i:05d}" for i in range(0, 4500, 7)])
    for op in OPS:
        for keys in (["L1", "L2"], ["L1", "L2", "L3"], ["L3", "L1"]):
            t.rec(f"large: {op} {' '.join(keys)}", big(t.r.execute_command(op, *keys)))
    for op in STORES:
        t.step(f"large: {op} d L1 L2 L3", op, "d", "L1", "L2", "L3")
        t.step(f"large: after {op} d L1 L2 L3: SCARD d", "SCARD", "d")
        t.rec(f"large: after {op} d L1 L2 L3: SMEMBERS d", big(t.r.smembers("d")))
    # Many keys in one command: 300 sets, every one holding "common", its
    # own member and one of ten group members.
    n = 300
    keys = [f"mk:{i}" for i in range(n)]
    t.pipe([("DEL", k) for k in keys])
    t.pipe([("SADD", k, "common", f"u{i}", f"g{i % 10}") for i, k in enumerate(keys)])
    for op in OPS:
        t.rec(f"many: {op} of {n} keys", big(t.r.execute_command(op, *keys)))
    for op in STORES:
        t.step(f"many: {op} d of {n} keys", op, "d", *keys)
        t.rec(f"many: after {op} d of {n} keys: SMEMBERS d", big(t.r.smembers("d")))
    t.raw("SET", "w", "v")
    for op in OPS:
        # A missing key early (the answer empty from there for SINTER),
        # a key of another type last.
        t.step(f"many: {op} of nokey, {n} keys, a string", op, "nokey", *keys, "w")
        t.step(f"many: {op} of {n} keys, a string, {n} keys", op, *keys, "w", *keys)
    t.step(f"many: SINTER of {n} keys and nokey", "SINTER", *keys, "nokey")
    t.pipe([("DEL", k) for k in keys])
    t.reset("L1", "L2", "L3", "d", "w")


def bound_steps(t):
    """Sets near Momento's item limit: an answer over it and reads over
    ALG_READ_MAX. Redis serves both; the proxy refuses (EXPECT)."""
    t.reset("B1", "B2", "d")
    for key, tag in (("B1", "a"), ("B2", "b")):
        members = [(f"{tag}{i:08d}" + "x" * BIG_LEN)[:BIG_LEN] for i in range(BIG_N)]
        for i in range(0, BIG_N, 10000):
            t.r.execute_command("SADD", key, *members[i:i + 10000])
    t.rec("bounds: SCARD B1", t.r.scard("B1"))
    t.rec("bounds: SCARD B2", t.r.scard("B2"))
    # A set near the item limit is read whole.
    t.rec("bounds: SUNION B1", big(t.r.sunion("B1")))
    t.rec("bounds: SINTER B1 B2", big(t.r.sinter("B1", "B2")))
    # Over 64 MiB of reading.
    for op in ("SINTER", "SUNION"):
        name = f"bounds: {op} B1 x{READ_TIMES}"
        try:
            t.rec(name, big(t.r.execute_command(op, *(["B1"] * READ_TIMES))))
        except redis.ResponseError as e:
            t.rec(name, ("error", str(e)))
    t.raw("SET", "w", "v")
    t.step(f"bounds: SINTER B1 x{READ_TIMES} w", "SINTER", *(["B1"] * READ_TIMES), "w")
    t.raw("SET", "d", "keep")
    t.step(f"bounds: SINTERSTORE d B1 x{READ_TIMES}", "SINTERSTORE", "d",
           *(["B1"] * READ_TIMES))
    t.step(f"bounds: after SINTERSTORE d B1 x{READ_TIMES}: GET d", "GET", "d")
    # An answer over the item limit.
    t.step("bounds: SUNIONSTORE d B1 B2", "SUNIONSTORE", "d", "B1", "B2")
    t.step("bounds: after SUNIONSTORE d B1 B2: TYPE d", "TYPE", "d")
    # Under it: stored.
    t.step("bounds: SDIFFSTORE d B1 B2", "SDIFFSTORE", "d", "B1", "B2")
    t.step("bounds: after SDIFFSTORE d B1 B2: SCARD d", "SCARD", "d")
    t.reset("B1", "B2", "d", "w")


def ttl_steps(t):
    t.reset("a", "b", "d")
    t.raw("SADD", "a", "1", "2")
    t.raw("SADD", "b", "2", "3")
    for op in STORES:
        t.reset("d")
        t.raw("SET", "d", "v", "EX", "3600")
        t.step(f"ttl: {op} d a b over a key with a TTL", op, "d", "a", "b")
        t.rec(f"ttl: after {op} d a b: TTL d", pt.ttl_class(t.raw("TTL", "d")[1], DEFAULT_TTL))
        t.reset("d")
        t.step(f"ttl: {op} d a b, d new", op, "d", "a", "b")
        t.rec(f"ttl: after {op} d a b, d new: TTL d",
              pt.ttl_class(t.raw("TTL", "d")[1], DEFAULT_TTL))
    t.raw("EXPIRE", "a", "3600")
    t.step("ttl: SUNIONSTORE a a b, a with a TTL", "SUNIONSTORE", "a", "a", "b")
    t.rec("ttl: after SUNIONSTORE a a b: TTL a", pt.ttl_class(t.raw("TTL", "a")[1], DEFAULT_TTL))
    t.reset("a", "b", "d")


def empty_key_steps(t):
    t.reset("a")
    t.raw("SADD", "a", "1")
    t.step("empty key: SINTER '' a", "SINTER", "", "a")
    t.step("empty key: SUNION a ''", "SUNION", "a", "")
    t.step("empty key: SDIFFSTORE '' a", "SDIFFSTORE", "", "a")
    t.reset("a")


def order_round():
    return [
        ("DEL", "s1", "s2", "d"),
        ("SADD", "s1", "a"),
        ("SADD", "s2", "b"),
        ("SUNION", "s1", "s2"),
        ("SINTER", "s1", "s2"),
        ("SADD", "s2", "a"),
        ("SINTERSTORE", "d", "s1", "s2"),
        ("SMEMBERS", "d"),
        ("SDIFF", "s1", "s2"),
        ("SREM", "s2", "a"),
        ("SDIFFSTORE", "d", "s1", "s2"),
        ("SMEMBERS", "d"),
        ("SUNIONSTORE", "d", "s2", "s1"),
        ("SADD", "s1", "c"),
        ("SMEMBERS", "d"),
        ("SUNION", "d", "s2"),
        ("SADD", "s2", "z"),
        ("SCARD", "s2"),
    ]


def order_steps(t):
    cmds = order_round()
    first, differ = None, 0
    for _ in range(ORDER_ROUNDS):
        got = t.pipe(cmds)
        if first is None:
            first = got
        elif got != first:
            differ += 1
    for i, (cmd, a) in enumerate(zip(cmds, first)):
        t.rec(f"order: pipelined #{i + 1} " + " ".join(cmd), a)
    t.rec(f"order: rounds of {ORDER_ROUNDS} whose answers differ from the first's", differ)
    t.reset("s1", "s2", "d")


PARTS = (basic_steps, missing_steps, wrongtype_steps, arity_steps, store_steps, dup_steps,
         large_steps, bound_steps, ttl_steps, empty_key_steps, order_steps)


def run(port, label):
    t = Run(port)
    t0 = time.monotonic()
    for part in PARTS:
        try:
            part(t)
        except Exception as e:  # a part's failure is an answer too
            t.rec(f"{part.__name__} (failed here)", (type(e).__name__, str(e)[:300]))
            out = t.out
            t.close()
            try:
                t = Run(port)
            except OSError as e2:
                out.append(("the server after the failure", (type(e2).__name__, str(e2))))
                print(f"# {label}: unreachable after {part.__name__}")
                return out
            t.out = out
    out = t.out
    print(f"# {label}: {len(out)} steps in {time.monotonic() - t0:.2f} s")
    t.close()
    return out


NO_PERSIST = ("Momento has no item without expiry: a STORE's destination, which Redis "
              f"writes without a TTL, gets the proxy's --default-ttl ({DEFAULT_TTL} s here)")
READ_BOUND = ("proxy.md set algebra bullet: a command reads at most 64 MiB of its sources "
              "(each member counted with its bookkeeping), so that one command cannot grow "
              "the proxy without bound; the destination is left as it was")
ITEM_LIMIT = ("proxy.md set algebra bullet: a STORE whose answer is over Momento's item limit "
              "(5 MiB) is refused before the destination is touched: Momento would not store it")
EMPTY_KEY = 'proxy.md "The empty key.": Momento refuses an empty key'
EMPTY_KEY_ERR = ("-", "ERR momento-proxy: Momento does not allow an empty key")


def read_bound_error(op):
    return ("error", f"momento-proxy: {op} reads at most 64 MiB of its sources")


EXPECT = {}
for _op in STORES:
    EXPECT[f"ttl: after {_op} d a b: TTL d"] = pt.Expect("the default TTL", NO_PERSIST)
    EXPECT[f"ttl: after {_op} d a b, d new: TTL d"] = pt.Expect("the default TTL", NO_PERSIST)
EXPECT["ttl: after SUNIONSTORE a a b: TTL a"] = pt.Expect("the default TTL", NO_PERSIST)
for _op in ("SINTER", "SUNION"):
    EXPECT[f"bounds: {_op} B1 x{READ_TIMES}"] = pt.Expect(read_bound_error(_op), READ_BOUND)
EXPECT[f"bounds: SINTERSTORE d B1 x{READ_TIMES}"] = pt.Expect(
    ("-", "ERR momento-proxy: SINTERSTORE reads at most 64 MiB of its sources"), READ_BOUND)
EXPECT[f"bounds: after SINTERSTORE d B1 x{READ_TIMES}: GET d"] = pt.Expect(
    ("$", b"keep"), READ_BOUND)
EXPECT["bounds: SUNIONSTORE d B1 B2"] = pt.Expect(
    lambda a: a[0] == "-" and a[1].startswith("ERR momento LIMIT_EXCEEDED_ERROR: the set (")
    and "over Momento's item limit of 5242880 bytes" in a[1], ITEM_LIMIT,
    shown="-ERR momento LIMIT_EXCEEDED_ERROR: the set (N bytes) is over Momento's item limit ...")
EXPECT["bounds: after SUNIONSTORE d B1 B2: TYPE d"] = pt.Expect(("+", "string"), ITEM_LIMIT)
EXPECT["empty key: SINTER '' a"] = pt.Expect(EMPTY_KEY_ERR, EMPTY_KEY)
EXPECT["empty key: SUNION a ''"] = pt.Expect(EMPTY_KEY_ERR, EMPTY_KEY)
EXPECT["empty key: SDIFFSTORE '' a"] = pt.Expect(EMPTY_KEY_ERR, EMPTY_KEY)


def every_step_named_once(res, ref):
    names = [n for n, _ in ref]
    res.check("every step has a name of its own", len(set(names)) == len(names),
              f"repeated: {sorted({n for n in names if names.count(n) > 1})}")


def main():
    a = pt.parse_common_args(sys.argv[1:])
    # Calls naming s2 held DELAY_MS (the order steps); nothing else is.
    held = ["--header", f"delay-ms={DELAY_MS}", "--header", f"delay-keys={DELAYED_KEYS}"]
    pt.run_against_redis(a, pt.Results(), run, EXPECT, DEFAULT_TTL, every_step_named_once,
                         proxies=((held, "momento-proxy"),))

if __name__ == "__main__":
    main()
