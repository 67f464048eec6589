#!/usr/bin/env python3
"""Differential fuzzer (issue 47): seeded random command sequences sent to a
real server and to momento-proxy, replies compared.

Three protocols, each for a bounded time (--seconds, default 20) or
--rounds rounds: RESP (redis-server), memcached text and memcached binary
(memcached). A round starts both sides empty (FLUSHALL / flush_all) and
sends one random sequence over a key space of six keys (k0..k5), so
types, missing keys, overwrites and type errors meet all the time;
arguments come from pools of edge values (empty, negative, +N, -0, 007,
2^63, floats, inf, bad options, wrong arity). The reference server gets
the sequence one command at a time (Redis and memcached answer a pipeline
exactly as they answer the same commands one by one). The proxy gets it in
one of four ways, chosen by the round's seed: one at a time, pipelined in
one write, pipelined in chunks, or in one stream cut into random small
writes. Two proxies serve: one plain (batching and coalescing on) and one
whose Momento calls naming k1 or k4 momento-local holds DELAY_MS
(`--header delay-ms`, `delay-keys`: docs/server.md "Fault injection"), so
calls finish out of order and the proxy's ordering has to put them back.
On RESP a round may also keep a subscriber on channel c1, whose messages
are compared at the end.

The replies are compared exactly, except where docs/proxy.md documents a
difference; each such rule below (RULES) names the proxy.md bullet it
stands on. There is no list of accepted divergences: a divergence is a
failure until the proxy is fixed or proxy.md documents it (and a rule
here cites that). `--ignore CLASS` exists only to look past one known
divergence while exploring: a run given it never passes.

A divergence whose reference answer the reference server does not repeat
when the round is run on it again (memcached's incr and decr on 20-digit
values: reference_steady()) is printed and not compared: it says nothing
about the proxy. So is one in a memcached round where the reference did
incr or decr that may have met a number with bit 63 set
(reference_arith_unsure()): memcached's answer there differed between
machines, steady on each.

On a divergence the script shrinks the sequence (drops commands while the
same divergence remains), prints the seed, the round, the minimal
sequence and both replies, and exits 1.

Usage: differential.py --redis-server PATH --memcached PATH --proxy PATH
        [--seed N] [--seconds S] [--rounds R] [--protocols resp,text,binary]
        [--round I (replay one round of the seed)] [--keep-going] [--ignore CLASS]...
Exits 77 when a server it needs is missing."""
import os
import random
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
import rawmc as mc  # noqa: E402
from rawresp import RawConn, Closed, encode  # noqa: E402

DEFAULT_TTL = 3600
KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"]
DELAY_MS = 8
DELAYED_KEYS = "k1 k4"
# One reply's wait: only a hang (or a reply the proxy never sends) reaches
# it; it is shorter than proxytest.WATCHDOG so that a lost reply costs a
# round, not the run's whole budget.
REPLY_WAIT = 10.0
# The last reply of a run whose connection stopped answering.
TIMED_OUT = ("timeout", f"no reply within {REPLY_WAIT} s")
# How far apart two TTLs read in the two runs may be: the runs are not at
# the same moment, and the proxy's run may be slowed by DELAY_MS holds and
# CPU-bound neighbours. Time passing, not a difference of the proxy's.
TTL_SLACK_MS = 5000
SHRINK_SECONDS = 15

# --- rules: the documented differences -------------------------------------
# Each rule's text names the docs/proxy.md bullet it stands on.
R_FOREVER = ('proxy.md "Nothing lives forever.": a key Redis keeps without TTL has '
             '--default-ttl on the proxy (TTL never -1; PERSIST answers 0)')
R_INCR007 = ('proxy.md "INCR and HINCRBY use Momento\'s increment, which reads a stored `007` '
             'as 7 and `-0` as 0 where Redis refuses them" (the values then differ: the round '
             'stops here)')
R_NOTTL = ('proxy.md "EXPIRE / PEXPIRE NX, XX, GT, LT on a key written without an expiry.": '
           'the proxy answers as for a key with --default-ttl left (XX 1; GT 1 only if longer; '
           'LT and NX 1 only if shorter; a past time: XX and NX/LT 1, GT 0); the TTLs then '
           'differ: the round stops here')
R_NX_TTL = ('proxy.md "EXPIRE / PEXPIRE NX, XX, GT, LT on a key written without an expiry.": '
            '"on a key given a TTL explicitly ... NX applies where it shortens that TTL, where '
            'Redis answers 0"; the TTLs then differ: the round stops here')
R_EMPTY = ('proxy.md "The empty key.": a command naming "" as a key answers the proxy\'s error '
           '(after a write the states differ: the round stops there)')
R_UNORDERED = 'proxy.md "HGETALL, HKEYS, HVALS, SMEMBERS answer in Momento\'s order": compared as multisets'
R_SETALG = ('proxy.md "SINTER, SUNION, SDIFF and their STORE forms": "The members come in the '
            'proxy\'s order, not Redis\'s": compared as multisets')
R_RANDOM = ('SPOP / SRANDMEMBER pick at random in Redis too (proxy.md "SRANDMEMBER with a '
            'negative count"): the picks are checked for validity against the set, not equality')
R_OWN = ('answers that are each server\'s own (INFO: proxy.md "INFO reports the proxy\'s '
         'counters"; COMMAND and HELLO\'s version/id: proxy.md\'s table "enough for redis-cli"; '
         'memcached\'s version: "`version` answers `1.6.18-momento-proxy`"; stats: per proxy, '
         'proxy.md "Many proxies") compared by form')
R_SELECT = 'proxy.md "SELECT 0 only": another valid index is an error'
R_BYLEX = 'proxy.md ZUNIONSTORE bullet: "BYLEX ranges are refused"'
R_CAS = ('proxy.md memcached "cas.": a unique is a hash of the value as stored, so a value '
         'written again as it was keeps its unique (memcached: EXISTS); the round stops here')
R_CASFORM = 'proxy.md memcached "cas.": uniques are the proxy\'s hashes, compared by form'
R_TIME = ('not a proxy difference: the two runs are at different moments, so TTLs are '
          f'compared within {TTL_SLACK_MS} ms (proxy.md "TTL precision.")')
R_GTLT_TIE = ('not a proxy difference: GT/LT between expiries within TTL_SLACK_MS of each '
              'other depends on the millisecond each server ran it')


class Stop(Exception):
    pass


# --- RESP: generation ----------------------------------------------------------
INTS = ["0", "1", "-1", "2", "3", "10", "-5", "+7", "-0", "007", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "1.5", "abc", "", " 1", "1e3"]
FLOATS = ["0", "1", "-1", "1.5", "-2.5", "+3", "-0", "007", "inf", "-inf", "+inf", "nan",
          "1e308", "1e309", "abc", "", " 1", "3.0", "1e-5", ".5", "5.", "0x10"]
# EX/EXPIRE values. Nothing short enough to expire during a round (that
# would race between the two runs): long, zero, negative, malformed, huge.
TTLS = ["1000", "2000", "100000", "0", "-1", "abc", "", "9223372036854775807",
        "99999999999", "1.5", "+1000", "007"]
# Absolute expiries: long past, far future, malformed.
ABS_S = ["1", "1000000000", "4102444800", "0", "-1", "abc"]
ABS_MS = ["1", "1000000000000", "4102444800000", "0", "-1", "abc"]
MEMBERS = ["a", "b", "c", "1", "2"]
RANGE_IDX = ["0", "-1", "1", "-2", "2", "100", "-100", "abc"]
SCORE_BOUNDS = ["-inf", "+inf", "inf", "(1", "1", "0", "-1.5", "(", "abc", "2", "(2"]
# Weights a 32-bit float holds exactly, and two it does not (inf, 1e300),
# which take the proxy's own path with double weights. No 0.1: proxy.md
# ZUNIONSTORE bullet documents its 32-bit rounding, and the scores it left
# would differ for the rest of the round.
WEIGHTS = ["1", "2", "0.5", "-1", "0", "1.5", "3", "inf", "1e300", "abc"]


class Gen:
    def __init__(self, rng):
        self.r = rng

    def p(self, x):
        return self.r.random() < x

    def key(self):
        if self.p(0.02):
            return ""
        return self.r.choice(KEYS).decode()

    def val(self):
        c = self.r.random()
        if c < 0.35:
            return self.r.choice(MEMBERS)
        if c < 0.7:
            return self.r.choice(INTS)
        if c < 0.8:
            return self.r.choice(FLOATS)
        if c < 0.9:
            return self.r.choice(["", "v", "hello world", "\x00\xff\r\n$-1\r\n", "é"])
        return "x" * self.r.choice([100, 1000, 20000])

    def member(self):
        return self.r.choice(MEMBERS) if not self.p(0.05) else self.r.choice(["", "x" * 300])

    def some(self, f, lo=1, hi=4):
        return [f() for _ in range(self.r.randint(lo, hi))]

    def keys(self, lo=1, hi=4):
        return self.some(self.key, lo, hi)


def resp_set(g):
    args = ["SET", g.key(), g.val()]
    opts = []
    if g.p(0.5):
        kind = g.r.choice(["EX", "PX", "EXAT", "PXAT", "KEEPTTL"])
        if kind == "EX":
            opts += [kind, g.r.choice(TTLS)]
        elif kind == "PX":
            opts += [kind, g.r.choice(TTLS + ["1000000"])]
        elif kind == "EXAT":
            opts += [kind, g.r.choice(ABS_S)]
        elif kind == "PXAT":
            opts += [kind, g.r.choice(ABS_MS)]
        else:
            opts.append(kind)
    if g.p(0.35):
        opts.append(g.r.choice(["NX", "XX"]))
    if g.p(0.25):
        opts.append("GET")
    if g.p(0.05):
        opts.append(g.r.choice(["BOGUS", "EX", "NX", "PX", "KEEPTTL"]))
    g.r.shuffle(opts) if g.p(0.2) else None
    return args + opts


def resp_expire(g):
    name = g.r.choice(["EXPIRE", "PEXPIRE"])
    t = g.r.choice(TTLS + (["1000000", "100000000"] if name == "PEXPIRE" else []))
    args = [name, g.key(), t]
    if g.p(0.5):
        args.append(g.r.choice(["NX", "XX", "GT", "LT", "BAD", "nx"]))
    if g.p(0.08):
        args.append(g.r.choice(["NX", "XX", "GT", "LT"]))
    return args


def resp_zadd(g):
    args = ["ZADD", g.key()]
    for o in ("NX", "XX", "GT", "LT", "CH", "INCR"):
        if g.p(0.15):
            args.append(o)
    n = 1 if "INCR" in args and g.p(0.8) else g.r.randint(1, 3)
    for _ in range(n):
        args += [g.r.choice(FLOATS[:12]) if g.p(0.8) else g.r.choice(FLOATS), g.member()]
    return args


def resp_zrange(g):
    k = g.key()
    byscore = g.p(0.3)
    bylex = not byscore and g.p(0.05)
    if byscore:
        args = ["ZRANGE", k, g.r.choice(SCORE_BOUNDS), g.r.choice(SCORE_BOUNDS), "BYSCORE"]
    elif bylex:
        args = ["ZRANGE", k, "-", "+", "BYLEX"]
    else:
        args = ["ZRANGE", k, g.r.choice(RANGE_IDX), g.r.choice(RANGE_IDX)]
    if g.p(0.3):
        args.append("REV")
    if g.p(0.25):
        args += ["LIMIT", g.r.choice(["0", "1", "-1", "abc"]), g.r.choice(["1", "2", "-1", "0"])]
    if g.p(0.4):
        args.append("WITHSCORES")
    return args


def resp_zbyscore(g):
    name = g.r.choice(["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"])
    args = [name, g.key(), g.r.choice(SCORE_BOUNDS), g.r.choice(SCORE_BOUNDS)]
    if g.p(0.4):
        args.append("WITHSCORES")
    if g.p(0.25):
        args += ["LIMIT", g.r.choice(["0", "1", "-1", "abc"]), g.r.choice(["1", "2", "-1", "0"])]
    return args


def resp_zunion(g):
    srcs = g.keys(1, 3)
    n = str(len(srcs)) if g.p(0.9) else g.r.choice(["0", "-1", "abc", "5"])
    args = ["ZUNIONSTORE", g.key(), n] + srcs
    if g.p(0.35):
        args += ["WEIGHTS"] + [g.r.choice(WEIGHTS) for _ in srcs]
    if g.p(0.35):
        args += ["AGGREGATE", g.r.choice(["SUM", "MIN", "MAX", "BAD"])]
    return args


def resp_spop(g):
    # A pop that leaves the two sets holding different members would make
    # the rest of the round differ for Redis's own randomness: the key is
    # deleted right after (an atom of two commands).
    k = g.key()
    args = ["SPOP", k] + ([g.r.choice(["1", "2", "5", "0", "-1", "abc"])] if g.p(0.6) else [])
    return [args, ["DEL", k]]


def pairs(g, f1, f2, lo=1, hi=3):
    out = []
    for _ in range(g.r.randint(lo, hi)):
        out += [f1(), f2()]
    return out


RESP_GENS = [
    # connection
    (1, lambda g: ["PING"] + ([g.val()] if g.p(0.5) else [])),
    (1, lambda g: ["ECHO", g.val()]),
    (1, lambda g: ["SELECT", g.r.choice(["0", "abc", "16", "-1", "", "1.5", "0x0"])]),
    (0.5, lambda g: [["SELECT", g.r.choice(["1", "15"])], ["SELECT", "0"]]),
    (0.5, lambda g: g.r.choice([["COMMAND", "COUNT"], ["COMMAND", "INFO", "get"], ["INFO"],
                                ["INFO", "server"], ["HELLO", "2"], ["HELLO", "4"],
                                ["CLIENT", "SETNAME", "fz"], ["HELLO", "abc"]])),
    # HELLO's options. Never HELLO 3 (nor "HELLO 3 x", which the wrong-arity
    # mutation could cut to it): Redis would switch the connection to RESP3,
    # which this script does not read (the proxy answers NOPROTO, proxy.md's
    # table: RESP2 only).
    (0.5, lambda g: g.r.choice([["HELLO"], ["HELLO", "2", "x"], ["HELLO", "1"],
                                ["HELLO", "2", "AUTH", "default", "pw"],
                                ["HELLO", "2", "AUTH", "bob", "pw"], ["HELLO", "2", "AUTH", "default"],
                                ["HELLO", "2", "SETNAME", "fz"], ["HELLO", "2", "SETNAME", "a b"],
                                ["HELLO", "2", "SETNAME", "a b", "AUTH", "bob", "pw"],
                                ["HELLO", "2", "SETNAME", "fz", "x"], ["CLIENT", "SETNAME", "a b"]])),
    # strings
    (6, lambda g: ["GET", g.key()]),
    (6, resp_set),
    (1, lambda g: ["SETNX", g.key(), g.val()]),
    (1, lambda g: ["SETEX", g.key(), g.r.choice(TTLS), g.val()]),
    (1, lambda g: ["PSETEX", g.key(), g.r.choice(TTLS + ["1000000"]), g.val()]),
    (2, lambda g: ["GETDEL", g.key()]),
    (2, lambda g: ["MGET"] + g.keys(1, 5)),
    (2, lambda g: ["MSET"] + pairs(g, g.key, g.val)),
    # keys
    (2, lambda g: [g.r.choice(["DEL", "UNLINK"])] + g.keys(1, 3)),
    (2, lambda g: ["EXISTS"] + g.keys(1, 3)),
    (2, lambda g: ["TYPE", g.key()]),
    (3, resp_expire),
    (3, lambda g: [g.r.choice(["TTL", "PTTL"]), g.key()]),
    (1, lambda g: ["PERSIST", g.key()]),
    # counters
    (3, lambda g: [g.r.choice(["INCR", "DECR"]), g.key()]),
    (3, lambda g: [g.r.choice(["INCRBY", "DECRBY"]), g.key(), g.r.choice(INTS)]),
    # hashes
    (3, lambda g: [g.r.choice(["HSET", "HMSET"]), g.key()] + pairs(g, g.member, g.val)),
    (1, lambda g: ["HSETNX", g.key(), g.member(), g.val()]),
    (2, lambda g: ["HGET", g.key(), g.member()]),
    (1, lambda g: ["HMGET", g.key()] + g.some(g.member)),
    (2, lambda g: [g.r.choice(["HGETALL", "HKEYS", "HVALS", "HLEN"]), g.key()]),
    (1, lambda g: ["HDEL", g.key()] + g.some(g.member)),
    (2, lambda g: ["HINCRBY", g.key(), g.member(), g.r.choice(INTS)]),
    (1, lambda g: ["HEXISTS", g.key(), g.member()]),
    # lists
    (3, lambda g: [g.r.choice(["LPUSH", "RPUSH"]), g.key()] + g.some(g.val)),
    (2, lambda g: [g.r.choice(["LPOP", "RPOP"]), g.key()]
     + ([g.r.choice(["0", "1", "2", "-1", "abc", "9223372036854775807"])] if g.p(0.4) else [])),
    (2, lambda g: ["LRANGE", g.key(), g.r.choice(RANGE_IDX), g.r.choice(RANGE_IDX)]),
    (1, lambda g: ["LLEN", g.key()]),
    (2, lambda g: ["LINDEX", g.key(), g.r.choice(RANGE_IDX + ["+1", "-0", "1.0"])]),
    # sets
    (3, lambda g: ["SADD", g.key()] + g.some(g.member)),
    (1, lambda g: ["SREM", g.key()] + g.some(g.member)),
    (2, lambda g: ["SMEMBERS", g.key()]),
    (1, lambda g: ["SISMEMBER", g.key(), g.member()]),
    (1, lambda g: ["SMISMEMBER", g.key()] + g.some(g.member)),
    (1, lambda g: ["SCARD", g.key()]),
    (1, resp_spop),
    (1, lambda g: [g.r.choice(["SINTER", "SUNION", "SDIFF"])] + g.keys(1, 3)),
    (1, lambda g: [g.r.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), g.key()]
     + g.keys(1, 3)),
    (1, lambda g: ["SRANDMEMBER", g.key()]
     + ([g.r.choice(["1", "3", "10", "-3", "-10", "0", "abc"])] if g.p(0.7) else [])),
    # sorted sets
    (3, resp_zadd),
    (1, lambda g: ["ZREM", g.key()] + g.some(g.member)),
    (2, lambda g: ["ZSCORE", g.key(), g.member()]),
    (1, lambda g: ["ZMSCORE", g.key()] + g.some(g.member)),
    (2, lambda g: ["ZINCRBY", g.key(), g.r.choice(FLOATS), g.member()]),
    (1, lambda g: [g.r.choice(["ZRANK", "ZREVRANK"]), g.key(), g.member()]),
    (2, resp_zrange),
    (1, lambda g: ["ZREVRANGE", g.key(), g.r.choice(RANGE_IDX), g.r.choice(RANGE_IDX)]
     + (["WITHSCORES"] if g.p(0.4) else [])),
    (1, resp_zbyscore),
    (1, lambda g: ["ZCARD", g.key()]),
    (1, lambda g: ["ZCOUNT", g.key(), g.r.choice(SCORE_BOUNDS), g.r.choice(SCORE_BOUNDS)]),
    (1, resp_zunion),
    # pub/sub
    (1, lambda g: ["PUBLISH", g.r.choice(["c1", "c2"]), g.val()]),
]
RESP_WEIGHTS = [w for w, _ in RESP_GENS]


def resp_atom(g):
    """One generated unit: a list of commands (usually one)."""
    _, f = g.r.choices(RESP_GENS, weights=RESP_WEIGHTS)[0]
    out = f(g)
    cmds = out if isinstance(out[0], list) else [out]
    if len(cmds) == 1 and g.p(0.04):
        # Wrong arity: one argument fewer, or one more.
        c = cmds[0]
        cmds = [c[:-1] if len(c) > 1 and g.p(0.5) else c + ["x"]]
    return [[a.encode("utf-8", "surrogateescape") if isinstance(a, str) else a for a in c]
            for c in cmds]


def resp_sequence(g):
    atoms = []
    # Give most keys a type first, so that type errors are common.
    for k in KEYS:
        t = g.r.choice(["string", "hash", "list", "set", "zset", None])
        k = k.decode()
        if t == "string":
            atoms.append([[b"SET", k.encode(), g.val().encode("utf-8", "surrogateescape")]])
        elif t == "hash":
            atoms.append([[b"HSET", k.encode(), b"a", b"1"]])
        elif t == "list":
            atoms.append([[b"RPUSH", k.encode(), b"a", b"b"]])
        elif t == "set":
            atoms.append([[b"SADD", k.encode(), b"a", b"b"]])
        elif t == "zset":
            atoms.append([[b"ZADD", k.encode(), b"1", b"a", b"2", b"b"]])
    for _ in range(g.r.randint(5, 40)):
        atoms.append(resp_atom(g))
    return atoms


def show_resp(cmd):
    def one(a):
        s = a.decode("utf-8", "backslashreplace")
        if len(s) > 40:
            s = f"{s[:8]}...<{len(a)} bytes>"
        if s == "" or re.search(r"[\s'\"\\]", s):
            return repr(s)
        return s
    return " ".join(one(a) for a in cmd)


# --- RESP: running ---------------------------------------------------------------
def probe_resp(c, cmd):
    """What the reference held before a command some rule needs to know
    about (Redis only, on its own connection: nothing here writes)."""
    name = cmd[0].upper()
    if len(cmd) < 2:
        return None
    k = cmd[1]
    if name in (b"SPOP", b"SRANDMEMBER"):
        r = c.command("SMEMBERS", k)
        return r[1] if r[0] == "*" else None
    if name in (b"INCR", b"DECR", b"INCRBY", b"DECRBY"):
        r = c.command("GET", k)
        return r[1] if r[0] == "$" else None
    if name == b"HINCRBY" and len(cmd) > 2:
        r = c.command("HGET", k, cmd[2])
        return r[1] if r[0] == "$" else None
    if name in (b"EXPIRE", b"PEXPIRE"):
        return c.command("PTTL", k)[1]
    return None


def flush_proxy(px):
    m = mc.Conn(px.ports["memcache"], timeout=REPLY_WAIT)
    try:
        r = m.text(b"flush_all\r\n", "line")
        if r != [[b"OK"]]:
            raise RuntimeError(f"flush_all on the proxy answered {r!r}")
    finally:
        m.close()


def open_subscriber(port):
    s = RawConn(port, timeout=REPLY_WAIT)
    r = s.command("SUBSCRIBE", "c1")
    if r != ("*", [("$", b"subscribe"), ("$", b"c1"), (":", 1)]):
        raise RuntimeError(f"SUBSCRIBE c1 answered {r!r}")
    return s


def read_messages(sub, n):
    out = []
    try:
        for _ in range(n):
            out.append(sub.reply())
    except (Closed, socket.timeout, OSError) as e:
        out.append(("no more messages", type(e).__name__))
    return out


def batch_len(cmds, i, mode, rng, reference, unique):
    """How many memcached commands from cmds[i] go in one write: one
    against the reference or in seq mode or for a cas whose unique
    (`unique(cmd)`) comes from an earlier reply; otherwise the rest
    (pipe, dribble) or 1-8 (chunks), a cas with such a unique ending it."""
    if reference or mode == "seq" or unique(cmds[i]) is not None:
        return 1
    n = len(cmds) - i if mode in ("pipe", "dribble") else rng.randint(1, 8)
    for j in range(i + 1, min(i + n, len(cmds))):
        if unique(cmds[j]) is not None:
            return j - i
    return n


def run_resp(port, cmds, mode, rng, subscribe, reference, px=None):
    """Runs cmds on a fresh connection; returns (replies, probes), with
    ('closed'|'timeout', ...) as the reply where the connection ended and
    no replies after it."""
    c = RawConn(port, timeout=REPLY_WAIT)
    sub = None
    try:
        if reference:
            c.command("FLUSHALL")
        else:
            flush_proxy(px)
        if subscribe:
            sub = open_subscriber(port)
        replies, probes = [], []
        with pt.ends_recorded(replies, ("closed",), TIMED_OUT):
            if reference or mode == "seq":
                for cmd in cmds:
                    probes.append(probe_resp(c, cmd) if reference else None)
                    replies.append(c.command(*cmd))
            else:
                data = [encode(cmd) for cmd in cmds]
                if mode == "pipe":
                    c.send(b"".join(data))
                    replies = [c.reply() for _ in cmds]
                elif mode == "chunks":
                    i = 0
                    while i < len(data):
                        n = rng.randint(1, 8)
                        c.send(b"".join(data[i:i + n]))
                        replies += [c.reply() for _ in data[i:i + n]]
                        i += n
                else:  # dribble: one stream in random small writes
                    blob = b"".join(data)
                    i = 0
                    while i < len(blob):
                        n = rng.randint(1, 64)
                        c.send(blob[i:i + n])
                        i += n
                    replies = [c.reply() for _ in cmds]
        if sub is not None and len(replies) == len(cmds):
            n = sum(1 for cmd, r in zip(cmds, replies)
                    if cmd[0].upper() == b"PUBLISH" and cmd[1:2] == [b"c1"] and r == (":", 1))
            replies.append(("messages", read_messages(sub, n)))
        return replies, probes
    finally:
        c.close()
        if sub is not None:
            sub.close()


# --- RESP: comparing ---------------------------------------------------------------
# What proxy.md's INCR bullet names: leading zeros (`007`) and `-0`.
LEADING_ZERO = re.compile(rb"-?0\d+|-0")
EMPTY_KEY_ERR = "ERR momento-proxy: Momento does not allow an empty key"
# Commands that write nothing: after one of them refused for the empty key,
# both servers still hold the same keys.
RESP_READS = {b"GET", b"MGET", b"EXISTS", b"TYPE", b"TTL", b"PTTL", b"HGET", b"HMGET", b"HGETALL",
              b"HLEN", b"HKEYS", b"HVALS", b"HEXISTS", b"LRANGE", b"LLEN", b"LINDEX",
              b"SMEMBERS", b"SISMEMBER", b"SMISMEMBER", b"SCARD", b"SRANDMEMBER", b"SINTER",
              b"SUNION", b"SDIFF", b"ZSCORE",
              b"ZMSCORE", b"ZRANK", b"ZREVRANK", b"ZRANGE", b"ZRANGEBYSCORE", b"ZREVRANGE",
              b"ZREVRANGEBYSCORE", b"ZCARD", b"ZCOUNT"}
RESP_KEYLESS = {b"PING", b"ECHO", b"SELECT", b"COMMAND", b"INFO", b"CLIENT", b"HELLO",
                b"PUBLISH", b"SUBSCRIBE", b"UNSUBSCRIBE", b"QUIT"}


def resp_keys(cmd):
    """The arguments of cmd that are keys (as proxy.md's empty-key bullet
    counts them: every key of MGET, DEL, UNLINK, EXISTS, the set algebra, MSET's keys,
    ZUNIONSTORE's destination and numkeys sources)."""
    name = cmd[0].upper()
    if name in RESP_KEYLESS:
        return []
    if name in (b"MGET", b"DEL", b"UNLINK", b"EXISTS", b"SINTER", b"SUNION", b"SDIFF",
                b"SINTERSTORE", b"SUNIONSTORE", b"SDIFFSTORE"):
        return cmd[1:]
    if name == b"MSET":
        return cmd[1::2]
    if name == b"ZUNIONSTORE" and len(cmd) > 2:
        try:
            n = int(cmd[2])
        except ValueError:
            n = 0
        return cmd[1:2] + (cmd[3:3 + n] if 1 <= n <= len(cmd) - 3 else [])
    return cmd[1:2]


def expire_no_ttl(cmd):
    """What proxy.md's bullet "EXPIRE / PEXPIRE NX, XX, GT, LT on a key
    written without an expiry" says the proxy answers to cmd on such a key
    (its --default-ttl left), or None where the bullet does not decide (no
    option, a time within TTL_SLACK_MS of the default: time passing)."""
    name = cmd[0].upper()
    opts = {a.upper() for a in cmd[3:]}
    if not opts & {b"NX", b"XX", b"GT", b"LT"}:
        return None
    try:
        new = int(cmd[2]) * (1000 if name == b"EXPIRE" else 1)
    except ValueError:
        return None
    if new <= 0:
        return 0 if b"GT" in opts else 1
    if abs(new - DEFAULT_TTL * 1000) <= TTL_SLACK_MS:
        return None
    if b"GT" in opts:
        return int(new > DEFAULT_TTL * 1000)
    if opts & {b"LT", b"NX"}:
        return int(new < DEFAULT_TTL * 1000)
    return 1


def is_int(a):
    return isinstance(a, tuple) and len(a) == 2 and a[0] == ":"


def multiset(a):
    if a[0] != "*" or a[1] is None:
        return a
    return ("*", sorted(a[1], key=repr))


def hash_pairs(a):
    if a[0] != "*" or a[1] is None:
        return a
    it = a[1]
    return ("*", sorted(((it[i], it[i + 1]) for i in range(0, len(it) - 1, 2)), key=repr))


def random_pick_ok(cmd, members, ref, got):
    """SPOP / SRANDMEMBER: the same kind of answer, as many picks, each a
    member of the set; distinct where Redis's are distinct."""
    if ref[0] != got[0]:
        return False
    if ref[0] != "*" and ref[0] != "$":
        return ref == got
    if ref[0] == "$":
        return (ref[1] is None) == (got[1] is None) and (
            got[1] is None or (members is not None and ("$", got[1]) in members))
    if ref[1] is None or got[1] is None:
        return ref == got
    if len(ref[1]) != len(got[1]) or members is None:
        return False
    if any(x not in members for x in got[1]):
        return False
    distinct = not (cmd[0].upper() == b"SRANDMEMBER" and len(cmd) > 2 and cmd[2].startswith(b"-"))
    return not distinct or len(set(map(repr, got[1]))) == len(got[1])


def form(a):
    if not isinstance(a, tuple):
        return a
    if a[0] in ("$", "*", ":"):
        return (a[0], "..." if a[1] is not None else None)
    return a


def compare_resp(cmd, probe, ref, got):
    """Returns None when equal, (rule, stop) when a documented rule accepts
    it (stop: the round's states now differ, compare no further), or
    'differs'."""
    if ref == got:
        return None
    name = cmd[0].upper()
    opts = {a.upper() for a in cmd[2:]}
    if name in (b"TTL", b"PTTL") and is_int(ref) and is_int(got):
        if ref[1] == -1 and got[1] > 0:
            return (R_FOREVER, False)
        scale = 1000 if name == b"TTL" else 1
        if ref[1] >= 0 and got[1] >= 0 and abs(ref[1] - got[1]) * scale <= TTL_SLACK_MS:
            return (R_TIME, False)
    if name == b"PERSIST" and ref == (":", 1) and got == (":", 0):
        # Redis dropped the TTL, the proxy kept it: they differ from here.
        return (R_FOREVER, True)
    if got == ("-", EMPTY_KEY_ERR) and b"" in resp_keys(cmd):
        return (R_EMPTY, name not in RESP_READS)
    if name in (b"EXPIRE", b"PEXPIRE") and probe == -1 and is_int(ref) and is_int(got) \
            and got == (":", expire_no_ttl(cmd)):
        return (R_NOTTL, True)
    if name in (b"EXPIRE", b"PEXPIRE") and b"NX" in opts and isinstance(probe, int) and probe > 0 \
            and ref == (":", 0) and got == (":", 1):
        try:
            new = int(cmd[2]) * (1000 if name == b"EXPIRE" else 1)
        except ValueError:
            new = None
        # A time already past deletes whatever the TTL; otherwise only a
        # TTL clearly shorter than the one left (time passes between runs).
        if new is not None and (new <= 0 or new < probe - TTL_SLACK_MS):
            return (R_NX_TTL, True)
    if name in (b"EXPIRE", b"PEXPIRE") and opts & {b"GT", b"LT"} and is_int(ref) and is_int(got) \
            and isinstance(probe, int) and probe > 0:
        try:
            new = int(cmd[2]) * (1000 if name == b"EXPIRE" else 1)
            if abs(new - probe) <= TTL_SLACK_MS:
                return (R_GTLT_TIE, False)
        except ValueError:
            pass
    if name in (b"INCR", b"DECR", b"INCRBY", b"DECRBY", b"HINCRBY") and isinstance(probe, bytes) \
            and LEADING_ZERO.fullmatch(probe) and ref[0] == "-" \
            and (is_int(got) or got == ("-", "ERR increment or decrement would overflow")):
        return (R_INCR007, True)
    if name in (b"HKEYS", b"HVALS", b"SMEMBERS") and multiset(ref) == multiset(got):
        return (R_UNORDERED, False)
    if name in (b"SINTER", b"SUNION", b"SDIFF") and multiset(ref) == multiset(got):
        return (R_SETALG, False)
    if name == b"HGETALL" and hash_pairs(ref) == hash_pairs(got):
        return (R_UNORDERED, False)
    if name in (b"SPOP", b"SRANDMEMBER"):
        members = None if probe is None else set(map(lambda m: m, probe))
        if random_pick_ok(cmd, members, ref, got):
            return (R_RANDOM, False)
    if name in (b"INFO", b"COMMAND") and form(ref) == form(got):
        return (R_OWN, False)
    if name == b"HELLO" and ref[0] == got[0] == "*" and ref[1] and got[1] \
            and ref[1][0::2] == got[1][0::2]:
        return (R_OWN, False)
    if name == b"SELECT" and ref == ("+", "OK") and got[0] == "-" \
            and len(cmd) == 2 and cmd[1] not in (b"0",):
        return (R_SELECT, False)
    if name == b"ZRANGE" and b"BYLEX" in opts and got[0] == "-":
        return (R_BYLEX, False)
    return "differs"


# --- memcached text -------------------------------------------------------------------
# No stored value of 20 digits (2^64-1, 2^64): memcached 1.6.18 answers
# incr/decr of such an item "non-numeric" at some moments and computes it
# at others (seen under load, the same answer on an immediate replay, a
# number minutes later), so it is no reference for them; mc_script.py
# checks the wrap at 2^64 in fixed steps. Deltas and results of that size
# are still generated.
MC_VALUES = [b"1", b"10", b"0", b"007", b"-1", b"9223372036854775808",
             b"v", b"", b"hello world", b" 1", b"1.5", b"a\r\nb", b"\x00\xff"]
MC_FLAGS = [b"0", b"0", b"5", b"4294967295"]
MC_BAD_FLAGS = [b"4294967296", b"-1", b"abc"]
# exptime: 0 (--default-ttl), relative, negative, absolute past (above 30
# days is a unix time), absolute future, the 30-day edge either side.
MC_EXP = [b"0", b"0", b"1000", b"-1", b"1000000000", b"4102444800", b"2592000", b"2592001"]
MC_DELTAS = [b"1", b"5", b"0", b"18446744073709551615", b"18446744073709551616", b"-1", b"abc",
             b"007"]


def mc_key(g):
    if g.p(0.02):
        return g.r.choice([b"k" * 250, b"k" * 251])
    return g.r.choice(KEYS)


def mc_val(g):
    if g.p(0.05):
        return b"x" * g.r.choice([1000, 20000])
    return g.r.choice(MC_VALUES)


def mc_nr(g):
    return b" noreply" if g.p(0.1) else b""


def text_storage(g):
    name = g.r.choice([b"set", b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
    k = mc_key(g)
    v = mc_val(g)
    flags = g.r.choice(MC_FLAGS) if not g.p(0.03) else g.r.choice(MC_BAD_FLAGS)
    exp = g.r.choice(MC_EXP) if not g.p(0.03) else b"abc"
    line = [name, k, flags, exp, b"%d" % len(v)]
    unique = None
    if name == b"cas":
        if g.p(0.7):
            unique = k       # the unique this connection last read for k
            line.append(b"{unique}")
        else:
            line.append(g.r.choice([b"1", b"0", b"abc", b"18446744073709551615"]))
    if g.p(0.02):
        line = line[:-1]     # a field missing
    return {"line": b" ".join(line) + mc_nr(g), "data": v, "unique": unique, "key": k}


TEXT_GENS = [
    (8, text_storage),
    (5, lambda g: {"line": g.r.choice([b"get", b"gets"]) + b" " + b" ".join(
        mc_key(g) for _ in range(g.r.randint(1, 4)))}),
    (2, lambda g: {"line": g.r.choice([b"gat", b"gats"]) + b" " + g.r.choice(MC_EXP + [b"abc"])
                   + b" " + b" ".join(mc_key(g) for _ in range(g.r.randint(1, 3)))}),
    (2, lambda g: {"line": b"delete " + mc_key(g) + (b" 0" if g.p(0.05) else b"") + mc_nr(g)}),
    (3, lambda g: {"line": g.r.choice([b"incr", b"decr"]) + b" " + mc_key(g) + b" "
                   + g.r.choice(MC_DELTAS) + mc_nr(g)}),
    (2, lambda g: {"line": b"touch " + mc_key(g) + b" " + g.r.choice(MC_EXP + [b"abc"]) + mc_nr(g)}),
    # flush_all with a delay is not generated: proxy.md memcached section
    # documents `flush_all N` refused, and memcached's delayed flush would
    # reach into later rounds.
    (0.3, lambda g: {"line": b"flush_all" + mc_nr(g)}),
    (0.3, lambda g: {"line": g.r.choice([b"verbosity 1", b"stats", b"verbosity"])}),
]
TEXT_WEIGHTS = [w for w, _ in TEXT_GENS]


def text_sequence(g):
    atoms = []
    for k in KEYS:
        if g.p(0.6):
            v = g.r.choice(MC_VALUES)
            atoms.append([{"line": b"set %s 0 0 %d" % (k, len(v)), "data": v}])
    for _ in range(g.r.randint(5, 40)):
        atoms.append([g.r.choices(TEXT_GENS, weights=TEXT_WEIGHTS)[0][1](g)])
    return atoms


def text_bytes(cmd, uniques):
    line = cmd["line"]
    if cmd.get("unique") is not None:
        line = line.replace(b"{unique}", uniques.get(cmd["unique"], b"1"))
    out = line + b"\r\n"
    if "data" in cmd:
        out += cmd["data"] + b"\r\n"
    return out


def show_text(cmd):
    line = cmd["line"].decode(errors="backslashreplace")
    line = re.sub(r"k{40,}", lambda m: f"<{len(m.group())} x k>", line)
    if "data" in cmd:
        d = cmd["data"]
        ds = repr(d) if len(d) < 40 else f"<{len(d)} bytes>"
        return f"{line} / {ds}"
    return line


SENTINEL = b"version\r\n"


def read_text_until_version(c):
    """The lines of one command's reply, up to the VERSION line of the
    `version` sent after it (so a command answering nothing, noreply, or
    more lines than one, is delimited all the same)."""
    lines = []
    while True:
        ln = c.line()
        if ln.startswith(b"VERSION "):
            return lines
        lines.append(ln)
        f = ln.split()
        if ln.startswith(b"VALUE ") and len(f) >= 4 and f[3].isdigit():
            data = c.exact(int(f[3]) + 2)
            lines.append(data[:-2])


def text_uniques_from(cmd, reply, uniques, uval=None):
    """The uniques a gets / gats answered, and (uval) the value each came
    with, as a `get` of the key would show it: taken from the answer
    itself, since a gat with an exptime already past has removed the item
    by the time anything could read it again."""
    if not cmd["line"].startswith((b"gets ", b"gats ")):
        return
    for i, ln in enumerate(reply):
        f = ln.split() if isinstance(ln, bytes) else []
        if len(f) == 5 and f[0] == b"VALUE" and i + 1 < len(reply):
            uniques[f[1]] = f[4]
            if uval is not None:
                uval[f[1]] = [b" ".join(f[:4]), reply[i + 1], b"END"]


def probe_text(c, cmd, uniques_val):
    """Reference only: for cas, whether the value now is the value the
    unique was read with (proxy.md's cas bullet)."""
    if cmd.get("unique") is None:
        return None
    c.send(b"get " + cmd["unique"] + b"\r\n" + SENTINEL)
    now = read_text_until_version(c)
    return now == uniques_val.get(cmd["unique"])


def send_mc(c, blob, dribble, rng):
    """Sends a batch, in random small writes when dribbling. A batch may
    hold a request after which memcached hangs up (a malformed binary
    header, an overlong line): the server then closes while the rest is
    still being sent, and with bytes unread its close is a reset, so the
    send fails. memcached does the same to a client that pipelines so
    (checked with memcached 1.6.18). The answers the server wrote before
    closing are still in this socket: stop sending and read them, so that
    the close is compared at the request that caused it."""
    try:
        if not dribble:
            c.send(blob)
            return
        k = 0
        while k < len(blob):
            step = rng.randint(1, 64)
            c.send(blob[k:k + step])
            k += step
    except (BrokenPipeError, ConnectionResetError):
        pass


def run_mc(port, cmds, mode, rng, reference, px, proto):
    """A memcached run (proto: TextRun or BinRun) on a fresh connection,
    the store flushed first: the commands sent in batches (batch_len),
    each one's reply read and the unique it shows noted, and against the
    reference each batch's first command probed; returns (replies,
    probes), a closed or stuck connection the last reply."""
    c = mc.Conn(port, timeout=REPLY_WAIT)
    try:
        if reference:
            proto.flush(c)
        else:
            flush_proxy(px)
        uniques, uval, replies, probes = {}, {}, [], []
        with pt.ends_recorded(replies, ("closed",), TIMED_OUT):
            i = 0
            while i < len(cmds):
                n = batch_len(cmds, i, mode, rng, reference, proto.unique)
                batch = cmds[i:i + n]
                if reference:
                    probes.append(proto.probe(c, batch[0], uval, i))
                send_mc(c, proto.blob(batch, i, uniques), mode == "dribble" and not reference, rng)
                for j, x in enumerate(batch):
                    r = proto.read(c, i + j)
                    replies.append(r)
                    proto.note(c, x, r, i + j, uniques, uval if reference else None)
                i += n
        return replies, probes
    finally:
        c.close()


class TextRun:
    """The text protocol's part of run_mc."""

    @staticmethod
    def flush(c):
        c.send(b"flush_all\r\n")
        c.line()

    @staticmethod
    def unique(x):
        return x.get("unique")

    @staticmethod
    def probe(c, x, uval, i):
        return probe_text(c, x, uval)

    @staticmethod
    def blob(batch, i, uniques):
        return b"".join(text_bytes(x, uniques) + SENTINEL for x in batch)

    @staticmethod
    def read(c, k):
        return read_text_until_version(c)

    @staticmethod
    def note(c, x, r, k, uniques, uval):
        text_uniques_from(x, r, uniques, uval)


def norm_text(lines):
    if not isinstance(lines, list):
        return lines
    out = []
    for ln in lines:
        f = ln.split()
        if ln.startswith(b"VALUE ") and len(f) == 5:
            out.append(b" ".join(f[:4]) + b" <cas>")   # R_CASFORM
        else:
            out.append(ln)
    if out and all(x.startswith(b"STAT ") for x in out[:-1]) and out[-1] == b"END" and len(out) > 1:
        out = [b"<STAT lines>", b"END"]                  # R_OWN
    return out


def compare_text(cmd, probe, ref, got):
    if ref == got:
        return None
    if norm_text(ref) == norm_text(got):
        return ((R_CASFORM if any(b"<cas>" in x for x in norm_text(ref)) else R_OWN), False)
    if cmd["line"].startswith(b"cas ") and probe is True and ref == [b"EXISTS"] and got == [b"STORED"]:
        return (R_CAS, True)
    return "differs"


# --- memcached binary -------------------------------------------------------------------
BOP = {"get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04, "incr": 0x05,
       "decr": 0x06, "flush": 0x08, "getq": 0x09, "noop": 0x0a, "version": 0x0b, "getk": 0x0c,
       "getkq": 0x0d, "append": 0x0e, "prepend": 0x0f, "stat": 0x10, "setq": 0x11, "addq": 0x12,
       "replaceq": 0x13, "deleteq": 0x14, "incrq": 0x15, "decrq": 0x16, "flushq": 0x18,
       "appendq": 0x19, "prependq": 0x1a, "verbosity": 0x1b, "touch": 0x1c, "gat": 0x1d,
       "gatq": 0x1e, "gatk": 0x23, "gatkq": 0x24}
BNAME = {v: k for k, v in BOP.items()}
B_EXP = [0, 0, 1000, 0xffffffff, 1000000000, 4102444800, 2592000, 2592001]
B_DELTAS = [1, 5, 0, 2 ** 64 - 1, 2 ** 63]
SENTINEL_OPAQUE = 0xfeed0000


# Not generated: verbosity. memcached 1.6.18 answers a binary verbosity
# "Unknown command" and then misreads the framing of the request after it,
# so there is no reference answer to compare with.
BIN_OPS = [op for op in BOP if op != "verbosity"]


def bin_cmd(g):
    op = g.r.choice(BIN_OPS)
    while op == "noop" and g.p(0.7):
        op = g.r.choice(BIN_OPS)
    k = mc_key(g)
    d = {"op": op, "key": k, "extras": b"", "value": b"", "cas": 0, "unique": None}
    base = op.rstrip("q") if op not in ("getq",) else "get"
    base = {"getk": "getk", "getkq": "getk", "gatk": "gatk", "gatkq": "gatk"}.get(op, base)
    if base in ("set", "add", "replace"):
        d["extras"] = struct.pack(">II", int(g.r.choice(MC_FLAGS)), g.r.choice(B_EXP) & 0xffffffff)
        d["value"] = mc_val(g)
        if g.p(0.25):
            d["unique"] = k
        elif g.p(0.1):
            d["cas"] = g.r.choice([1, 2 ** 64 - 1])
    elif base in ("append", "prepend"):
        d["value"] = mc_val(g)
    elif base in ("incr", "decr"):
        # Initial values: not 2^64-1 (MC_VALUES says why).
        d["extras"] = struct.pack(">QQI", g.r.choice(B_DELTAS), g.r.choice([0, 10, 2 ** 63]),
                                  g.r.choice(B_EXP) & 0xffffffff)
    elif base in ("touch", "gat", "gatk"):
        d["extras"] = struct.pack(">I", g.r.choice(B_EXP) & 0xffffffff)
    elif base == "flush":
        d["key"] = b""
        d["extras"] = g.r.choice([b"", struct.pack(">I", 0)])
    elif base in ("noop", "version", "stat"):
        d["key"] = b""
    elif base == "verbosity":
        d["key"] = b""
        d["extras"] = struct.pack(">I", 1)
    elif base == "delete" and g.p(0.2):
        d["unique"] = k
    if g.p(0.03):
        d["extras"] = d["extras"][:-1] if d["extras"] else b"\x00"   # bad extras length
    return d


def bin_sequence(g):
    atoms = []
    for k in KEYS:
        if g.p(0.6):
            atoms.append([{"op": "set", "key": k, "extras": struct.pack(">II", 0, 0),
                           "value": g.r.choice(MC_VALUES), "cas": 0, "unique": None}])
    for _ in range(g.r.randint(5, 40)):
        atoms.append([bin_cmd(g)])
    return atoms


def show_bin(d):
    ex = d["extras"].hex()
    cas = " cas=<unique last read>" if d["unique"] is not None else (f" cas={d['cas']}" if d["cas"] else "")
    v = d["value"] if len(d["value"]) < 40 else f"<{len(d['value'])} bytes>"
    key = d["key"] if len(d["key"]) < 40 else f"<{len(d['key'])} bytes>"
    return f"{d['op']} key={key!r} extras={ex or '-'} value={v!r}{cas}"


def bin_bytes(d, i, uniques):
    cas = uniques.get(d["unique"], 1) if d["unique"] is not None else d["cas"]
    return mc.bin_request(BOP[d["op"]], d["key"], d["extras"], d["value"], cas=cas, opaque=i + 1)


def read_bin_until_sentinel(c, i):
    out = []
    while True:
        r = c.bin_response()
        if r["op"] == BOP["noop"] and r["opaque"] == SENTINEL_OPAQUE + i:
            return out
        out.append(r)


# The binary reads, whose answers carry the value with the unique.
BIN_READS = {BOP[n] for n in ("get", "getq", "getk", "getkq", "gat", "gatq", "gatk", "gatkq")}


def bin_uniques_from(d, reply, uniques):
    for r in reply:
        if r["status"] == 0 and r["cas"] and d["key"]:
            uniques[d["key"]] = r["cas"]


def probe_bin(c, d, uval, i):
    if d["unique"] is None:
        return None
    c.send(mc.bin_request(BOP["get"], d["key"], opaque=0xabc) + mc.bin_request(
        BOP["noop"], opaque=SENTINEL_OPAQUE + i))
    now = read_bin_until_sentinel(c, i)
    now = [(r["status"], r["extras"], r["value"]) for r in now]
    return now == uval.get(d["key"])


class BinRun:
    """The binary protocol's part of run_mc."""

    @staticmethod
    def flush(c):
        c.send(mc.bin_request(BOP["flush"], opaque=1))
        c.bin_response()

    @staticmethod
    def unique(d):
        return d["unique"]

    @staticmethod
    def probe(c, d, uval, i):
        return probe_bin(c, d, uval, i)

    @staticmethod
    def blob(batch, i, uniques):
        return b"".join(bin_bytes(d, i + j, uniques)
                        + mc.bin_request(BOP["noop"], opaque=SENTINEL_OPAQUE + i + j)
                        for j, d in enumerate(batch))

    @staticmethod
    def read(c, k):
        return read_bin_until_sentinel(c, k)

    @staticmethod
    def note(c, d, r, k, uniques, uval):
        before = dict(uniques)
        bin_uniques_from(d, r, uniques)
        if uval is None or not d["key"] or uniques.get(d["key"]) == before.get(d["key"]):
            return
        got_value = [(x["status"], x["extras"], x["value"]) for x in r
                     if x["status"] == 0 and x["cas"] and x["op"] in BIN_READS]
        if got_value:
            # A read's unique: the value it came with, from the answer
            # itself (a gat with an exptime already past has removed the
            # item by now), for R_CAS.
            uval[d["key"]] = got_value[-1:]
        else:
            # A store's unique: the value it goes with, read.
            c.send(mc.bin_request(BOP["get"], d["key"], opaque=0xabc)
                   + mc.bin_request(BOP["noop"], opaque=SENTINEL_OPAQUE + k))
            uval[d["key"]] = [(x["status"], x["extras"], x["value"])
                              for x in read_bin_until_sentinel(c, k)]


def norm_bin(reply):
    if not isinstance(reply, list):
        return reply
    out = []
    for r in reply:
        value = r["value"]
        if r["op"] == BOP["version"] and r["status"] == 0:
            value = b"<version>" if re.fullmatch(rb"\S+", value) else value   # R_OWN
        if r["op"] == BOP["stat"] and r["status"] == 0:
            if not r["key"]:
                out.append(("stat", "end"))
            elif not out or out[-1] != ("stat", "..."):
                out.append(("stat", "..."))                                    # R_OWN
            continue
        out.append((hex(r["magic"]), BNAME.get(r["op"], hex(r["op"])), hex(r["status"]),
                    r["extras"].hex(), r["key"], value if len(value) < 60 else f"<{len(value)} bytes>",
                    r["opaque"], "cas" if r["cas"] else 0, r["dtype"]))         # R_CASFORM
    return out


def compare_bin(d, probe, ref, got):
    if not isinstance(ref, list) or not isinstance(got, list):
        return None if ref == got else "differs"
    nr, ng = norm_bin(ref), norm_bin(got)
    if nr == ng:
        return None
    if d["unique"] is not None and probe is True and len(nr) == 1 and len(ng) <= 1 \
            and nr[0][2] == "0x2" and (not ng or ng[0][2] == "0x0"):
        return (R_CAS, True)
    return "differs"


# --- rounds, divergences, shrinking ------------------------------------------------------
MODES = ["seq", "pipe", "chunks", "dribble"]


class Proto:
    # run: run_resp for RESP; for memcached, run_mc's TextRun or BinRun.
    def __init__(self, name, seq, run, compare, show, norm):
        self.name, self.seq, self.run, self.compare, self.show, self.norm = \
            name, seq, run, compare, show, norm


def shape(proto, a):
    """A reply's kind, for grouping divergences: its type, and for errors
    its text with numbers taken out."""
    if isinstance(a, tuple) and a and a[0] in ("closed", "timeout", "messages"):
        return a[0]
    if proto == "resp":
        if a[0] == "-":
            return "-" + re.sub(r"\d+", "N", a[1])[:60]
        if a[0] in ("$", "*"):
            return a[0] + ("nil" if a[1] is None else "")
        return a[0]
    if proto == "text":
        words, skip = [], False
        for x in a:
            if skip:
                skip = False
                continue
            skip = x.startswith(b"VALUE ")
            w = x if x.startswith((b"SERVER_ERROR", b"CLIENT_ERROR")) else x.split(b" ")[0]
            words.append(re.sub(rb"\d+", b"N", w).decode(errors="replace")[:60])
        return "/".join(words) or "(nothing)"
    return "/".join(f"{BNAME.get(r['op'], r['op'])}:{r['status']:#x}{'+cas' if r['cas'] else ''}"
                    for r in a) or "(nothing)"


def cmd_class(proto, cmd):
    if proto == "resp":
        opts = sorted({a.upper().decode(errors="replace") for a in cmd[2:]} &
                      {"NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL",
                       "GET", "WITHSCORES", "BYSCORE", "BYLEX", "REV", "LIMIT", "WEIGHTS",
                       "AGGREGATE"})
        empty = ["(empty key)"] if len(cmd) > 1 and cmd[1] == b"" else []
        return " ".join([cmd[0].upper().decode(errors="replace")] + opts + empty)
    if proto == "text":
        f = cmd["line"].split()
        return f[0].decode(errors="replace") + (" noreply" if f[-1] == b"noreply" else "")
    return cmd["op"]


class Divergence:
    def __init__(self, proto, cmds, idx, ref, got, atoms, params, note=""):
        self.proto, self.cmds, self.idx, self.ref, self.got = proto, cmds, idx, ref, got
        self.atoms, self.params, self.note = atoms, params, note
        if proto == "resp" and idx < len(cmds) and isinstance(got, tuple) and got[0] == "-" \
                and ("INVALID_ARGUMENT" in got[1] or "empty key" in got[1]) and b"" in cmds[idx][1:]:
            # One cause, whatever the command: Momento refuses an empty key.
            self.cls = f"{proto}: (empty key): {shape(proto, ref)[:1]} vs {shape(proto, got)}"
        elif idx < len(cmds):
            self.cls = f"{proto}: {cmd_class(proto, cmds[idx])}: " \
                       f"{shape(proto, ref)} vs {shape(proto, got)}"
        else:
            self.cls = f"{proto}: (after the sequence): {shape(proto, ref)} vs {shape(proto, got)}"


def run_round(P, servers, atoms, params):
    """Runs one round on both sides. Returns (Divergence or None, rules
    applied)."""
    mode, target, subscribe, seed = params
    cmds = [c for a in atoms for c in a]
    ref_srv = servers["reference"]
    px = servers[target]
    rng_ref, rng_px = random.Random(seed), random.Random(seed)
    if P.name == "resp":
        ref, probes = run_resp(ref_srv.port, cmds, mode, rng_ref, subscribe, True)
        got, _ = run_resp(px.ports["resp"], cmds, mode, rng_px, subscribe, False, px)
    else:  # P.run: TextRun or BinRun
        ref, probes = run_mc(ref_srv.port, cmds, mode, rng_ref, True, None, P.run)
        got, _ = run_mc(px.ports["memcache"], cmds, mode, rng_px, False, px, P.run)
    rules = []
    for i in range(max(len(ref), len(got))):
        a = ref[i] if i < len(ref) else ("no reply", "the run ended before")
        b = got[i] if i < len(got) else ("no reply", "the run ended before")
        if i < len(cmds) and not (isinstance(a, tuple) and a and a[0] in ("closed", "timeout", "no reply")) \
                and not (isinstance(b, tuple) and b and b[0] in ("closed", "timeout", "no reply")):
            v = P.compare(cmds[i], probes[i] if i < len(probes) else None, a, b)
        else:
            v = None if a == b else "differs"
        if v is None:
            continue
        if v == "differs":
            return Divergence(P.name, cmds, i, a, b, atoms, params), rules
        rules.append(v[0])
        if v[1]:
            break
    return None, rules


def reference_steady(P, servers, d, tries=2):
    """Whether the reference server answers the diverging command the same
    way when the round is run on it again. memcached does not always: an
    item's value after incr or decr depends on whether another reference
    to the item was held at that moment (it pads in place, or makes a new
    item), which the fuzzer saw answer `decr` of 2^64-1 as non-numeric
    once and as the number on every replay. A reply the reference itself
    does not repeat is no reference for the proxy's."""
    mode, _, subscribe, seed = d.params
    cmds = [c for a in d.atoms for c in a]
    for _ in range(tries):
        rng = random.Random(seed)
        ref_srv = servers["reference"]
        if P.name == "resp":
            ref, _ = run_resp(ref_srv.port, cmds, mode, rng, subscribe, True)
        else:
            ref, _ = run_mc(ref_srv.port, cmds, mode, rng, True, None, P.run)
        if d.idx >= len(ref) or ref[d.idx] != d.ref:
            return False
    return True


TOP_BIT = 2 ** 63


def _big(tok):
    """Whether a token or value is a decimal number with bit 63 set."""
    return isinstance(tok, (bytes, bytearray)) and tok.isdigit() and int(tok) >= TOP_BIT


def reference_arith_unsure(P, d):
    """Whether the reference did incr or decr, before or at the diverging
    command, where a number with bit 63 set may have been met (a stored
    value, a delta, a binary initial value, or a result). memcached 1.6.18
    is no reference there: it answered incr of a stored 2^63 and decr of a
    stored 2^64-1 as if the item were not numeric on one machine under load
    and computed them on every replay elsewhere (CI, 2026-12-07; earlier,
    f60d6a2), and with noreply the miss only shows at a later read. The
    proxy's arithmetic at 2^63 and 2^64 is checked in fixed steps by
    mc_script.py instead."""
    cmds = d.cmds[:d.idx + 1]
    if P.name == "text":
        arith = any(c["line"].split()[:1] in ([b"incr"], [b"decr"]) for c in cmds)
        big = any(_big(c.get("data")) or any(_big(t) for t in c["line"].split()[1:])
                  for c in cmds)
    elif P.name == "binary":
        arith = any(c["op"].rstrip("q") in ("incr", "decr") for c in cmds)
        big = False
        for c in cmds:
            if _big(c["value"]):
                big = True
            if c["op"].rstrip("q") in ("incr", "decr") and len(c["extras"]) == 20:
                delta, initial, _ = struct.unpack(">QQI", c["extras"])
                big = big or delta >= TOP_BIT or initial >= TOP_BIT
    else:
        return False
    return arith and big


def same(d1, d2):
    return d2 is not None and d2.cls == d1.cls


def shrink(P, servers, d, deadline):
    """Drops atoms (a generated unit: one command, or SPOP with its DEL)
    while the same divergence remains; also tries the plainest way of
    sending (one at a time, the proxy without held calls)."""
    def reproduces(atoms, params, tries):
        for _ in range(tries):
            got, _ = run_round(P, servers, atoms, params)
            if same(d, got):
                return got
        return None

    atoms, params = d.atoms, d.params
    # Cut what follows the diverging command.
    count, cut = 0, len(atoms)
    for ai, a in enumerate(atoms):
        count += len(a)
        if count > d.idx:
            cut = ai + 1
            break
    hits = sum(1 for _ in range(3) if reproduces(atoms[:cut], params, 1))
    if hits == 0:
        d.note = "did not reproduce when run again (a race): the sequence is shown unshrunk"
        return d
    tries = 1 if hits == 3 else 3
    if hits < 3:
        d.note = f"reproduced {hits} of 3 times when run again"
    best = reproduces(atoms[:cut], params, tries) or d
    atoms = atoms[:cut]
    for alt in ((("seq",) + params[1:]), (params[0], "plain") + params[2:], params[:2] + (False,) + params[3:]):
        if alt != params and time.monotonic() < deadline:
            got = reproduces(atoms, alt, tries)
            if got:
                params, best = alt, got
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        i = len(atoms) - 1
        while i >= 0 and time.monotonic() < deadline:
            trial = atoms[:i] + atoms[i + 1:]
            got = reproduces(trial, params, tries) if trial else None
            if got:
                atoms, best, changed = trial, got, True
            i -= 1
    if time.monotonic() >= deadline:
        best.note = (best.note + "; " if best.note else "") + "shrinking stopped at its time bound"
    return best


def report(P, d, seed, rnd):
    mode, target, subscribe, _ = d.params
    print(f"DIVERGENCE ({d.cls})")
    print(f"  seed {seed}, {P.name} round {rnd}: rerun with --seed {seed} --protocols {P.name} "
          f"--round {rnd}")
    print(f"  sent: {mode}, to the {target} proxy"
          f"{' (Momento calls naming ' + DELAYED_KEYS + ' held ' + str(DELAY_MS) + ' ms)' if target == 'delayed' else ''}"
          f"{', a subscriber on c1' if subscribe else ''}")
    if d.note:
        print(f"  note: {d.note}")
    print("  minimal sequence:")
    for i, c in enumerate(d.cmds):
        mark = "  <-- diverges" if i == d.idx else ""
        print(f"    {i + 1:3d}. {P.show(c)}{mark}")
    if d.idx >= len(d.cmds):
        print("    (after the sequence: the subscriber's messages)")
    ref_name = "redis-server" if P.name == "resp" else "memcached"
    print(f"  {ref_name}: {P.norm(d.ref)!r}")
    print(f"  momento-proxy: {P.norm(d.got)!r}")
    sys.stdout.flush()


PROTOS = {
    "resp": Proto("resp", resp_sequence, run_resp, compare_resp, show_resp, lambda a: a),
    "text": Proto("text", text_sequence, TextRun, compare_text, show_text, norm_text),
    "binary": Proto("binary", bin_sequence, BinRun, compare_bin, show_bin, norm_bin),
}


def round_params(seed, proto, rnd):
    rng = random.Random(f"{seed}:{proto}:{rnd}")
    atoms = PROTOS[proto].seq(Gen(rng))
    mode = rng.choice(MODES)
    target = rng.choice(["plain", "delayed"])
    subscribe = proto == "resp" and rng.random() < 0.3
    return atoms, (mode, target, subscribe, rng.randrange(2 ** 32))


def main():
    import argparse
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--keep-going", action="store_true")
    ap.add_argument("--ignore", action="append", default=[])
    b, rest = ap.parse_known_args(sys.argv[1:])
    a = pt.parse_common_args(rest, extra=("--seed", "--seconds", "--rounds", "--protocols", "--round"))
    seed = int(a.seed) if a.seed else random.SystemRandom().randrange(10 ** 9)
    seconds = float(a.seconds) if a.seconds else 20.0
    rounds = int(a.rounds) if a.rounds else None
    protos = (a.protocols or "resp,text,binary").split(",")
    only_round = int(a.round) if a.round else None
    print(f"# seed {seed} (rerun: --seed {seed}); {seconds:g} s per protocol"
          f"{f', at most {rounds} rounds' if rounds else ''}; protocols {','.join(protos)}")
    if b.ignore:
        print(f"# --ignore {b.ignore}: exploring only; this run cannot pass")
    pt.require_program(a.proxy, "momento-proxy")
    servers_by = {}
    if "resp" in protos:
        pt.require_program(a.redis_server, "redis-server")
        servers_by["resp"] = pt.start_redis(a.redis_server)
    if "text" in protos or "binary" in protos:
        pt.require_program(a.memcached, "memcached")
        servers_by["mc"] = pt.start_memcached(a.memcached)
    plain = pt.start_proxy(a.proxy, default_ttl=DEFAULT_TTL)
    delayed = pt.start_proxy(a.proxy, default_ttl=DEFAULT_TTL, extra=[
        "--header", f"delay-ms={DELAY_MS}", "--header", f"delay-keys={DELAYED_KEYS}"])
    failed, seen, ignored, unsteady, unsure = 0, {}, 0, 0, 0
    rule_counts = {}
    for proto in protos:
        P = PROTOS[proto]
        servers = {"reference": servers_by["resp" if proto == "resp" else "mc"],
                   "plain": plain, "delayed": delayed}
        start = time.monotonic()
        deadline = start + seconds
        rnd, n_cmds, n_rounds = 0, 0, 0
        rng_rounds = [only_round] if only_round is not None else None
        while True:
            if rng_rounds is not None:
                if not rng_rounds:
                    break
                rnd = rng_rounds.pop()
            elif time.monotonic() >= deadline or (rounds is not None and rnd >= rounds):
                break
            atoms, params = round_params(seed, proto, rnd)
            d, rules = run_round(P, servers, atoms, params)
            n_rounds += 1
            n_cmds += sum(len(x) for x in atoms)
            for r in rules:
                rule_counts[r] = rule_counts.get(r, 0) + 1
            if d is not None:
                if any(pat in d.cls for pat in b.ignore):
                    ignored += 1
                elif d.cls in seen:
                    seen[d.cls] += 1
                elif reference_arith_unsure(P, d):
                    unsure += 1
                    print(f"# {d.cls}: after incr/decr near 2^63 on the reference (round {rnd}, "
                          f"reference_arith_unsure()): not compared")
                elif not reference_steady(P, servers, d):
                    unsteady += 1
                    print(f"# {d.cls}: the reference answered otherwise when the round was run "
                          f"on it again (round {rnd}): not compared")
                else:
                    seen[d.cls] = 1
                    failed += 1
                    d = shrink(P, servers, d, time.monotonic() + SHRINK_SECONDS)
                    report(P, d, seed, rnd)
                    if not b.keep_going:
                        break
            if rng_rounds is None:
                rnd += 1
        print(f"# {proto}: {n_rounds} rounds, {n_cmds} commands "
              f"in {time.monotonic() - start:.1f} s")
        if failed and not b.keep_going:
            break
    for s in (plain, delayed):
        st = s.stop()
        if st != 0:
            print(f"momento-proxy exited {st}; stderr:\n{s.log_tail()}")
            failed += 1
    for s in servers_by.values():
        s.stop()
    for r, n in sorted(rule_counts.items(), key=lambda x: -x[1]):
        print(f"# rule applied {n}x: {r}")
    if seen:
        print("# divergence classes (times seen):")
        for c, n in seen.items():
            print(f"#   {n:4d}  {c}")
    if unsteady:
        print(f"# {unsteady} divergences where the reference did not repeat its own answer "
              f"(reference_steady()): not compared")
    if unsure:
        print(f"# {unsure} divergences after incr/decr near 2^63 on the reference "
              f"(reference_arith_unsure()): not compared")
    if ignored:
        print(f"# {ignored} divergences ignored by --ignore: NOT a pass")
    print(f"# seed {seed}: {'FAILED' if failed or ignored else 'no divergence'}")
    sys.exit(1 if failed or ignored else 0)


if __name__ == "__main__":
    main()
