#!/usr/bin/env python3
"""Every RESP command of issue 33 item 2, answered by momento-proxy exactly
as redis-server answers it.

One script of steps runs against a redis-server this test starts (so each
expectation is what Redis really answers, not what someone remembered) and
then against momento-proxy; each step's answer is compared. Steps are of
three kinds:
  raw    the command on a plain socket, its reply kept in wire form (+ - : $ *,
         nil bulk apart from nil array apart from empty array)
  py     an expression on a redis-py client (what applications run)
  flow   a few commands whose outcome is one value (pub/sub, expiry)
Where Redis gives no order (sets, hash fields) the step sorts the answer.
Where the proxy must differ (no item without expiry; SELECT 0 only;
INFO/COMMAND are the proxy's own), the step's expected proxy answer is in
EXPECT below with the reason.

Usage: resp_script.py [--target reference|proxy|both] --redis-server PATH --proxy PATH;
exits 77 without redis-server or redis-py."""
import os
import shlex
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402

pt.require_modules("redis")
import redis  # noqa: E402
from rawresp import RawConn, Closed  # noqa: E402

DEFAULT_TTL = 3600


class Step:
    def __init__(self, kind, name, payload, sort=False):
        self.kind, self.name, self.payload, self.sort = kind, name, payload, sort


STEPS = []


def R(cmd, sort=False):
    """A raw command, written as redis-cli would take it."""
    STEPS.append(Step("raw", "raw: " + cmd, shlex.split(cmd), sort))


def W(name, data, replies=1):
    """Bytes sent as they are (inline commands), then `replies` replies."""
    STEPS.append(Step("wire", "wire: " + name, (data, replies)))


def P(expr):
    """A redis-py expression over r (this client), S (state kept between
    steps) and the helpers below."""
    STEPS.append(Step("py", "py: " + expr, expr))


def F(name, fn):
    STEPS.append(Step("flow", "flow: " + name, fn))


# --- connection -------------------------------------------------------------
R("PING")
R("PING hello")
R("ping")
R("ECHO hi")
R("ECHO ''")
R("ECHO")
R("ECHO a b")
R("SELECT 0")
R("SELECT 1")
R("SELECT 0")
R("SELECT abc")
R("SELECT 99")
R("INFO")
R("INFO server")
R("COMMAND")
R("COMMAND COUNT")
# Issue 47: HELLO's options as Redis 7.0 reads them - each in its turn,
# the first bad one answered (AUTH's user, SETNAME's name, anything else).
def hello(*args):
    """HELLO's answer; its map by keys and proto (the values are each
    server's own: version, id)."""
    def f(ctx):
        a = ctx.raw.command("HELLO", *args)
        if a[0] == "*" and a[1]:
            m = dict(zip(a[1][0::2], a[1][1::2]))
            return ("map", a[1][0::2], m.get(("$", b"proto")))
        return a
    return f


for h in ["", "2", "1", "4 x", "abc", "2 x", "3 x", "2 AUTH default pw", "2 AUTH bob pw",
          "2 AUTH default", "2 SETNAME fz", "2 SETNAME", "2 SETNAME 'a b'", "2 setname fz auth default pw",
          "2 SETNAME 'a b' AUTH bob pw", "2 AUTH bob pw SETNAME 'a b'", "2 SETNAME 'a b' x",
          "2 x SETNAME 'a b'"]:
    F(f"HELLO {h}", hello(*shlex.split(h)))
R("CLIENT SETNAME 'a b'")
R("CLIENT SETNAME ''")
# A known subcommand with the wrong number of arguments (Redis 7: its own
# arity), an unknown one.
R("CLIENT SETNAME fz x")
R("CLIENT SETNAME")
R("CLIENT ID x")
R("CLIENT GETNAME x")
R("CLIENT BOGUS x")
R("COMMAND COUNT x")
R("COMMAND BOGUS")
W("inline PING", b"PING\r\n")
W("inline ECHO with quotes", b"ECHO \"a b\"\r\n")
W("two inline commands in one write", b"PING\r\nECHO x\r\n", 2)

# --- strings ----------------------------------------------------------------
R("SET s:a 1")
R("GET s:a")
R("GET s:missing")
R("SET s:empty ''")
R("GET s:empty")
# Commands Redis has and item 2 does not list: the proxy answers them as
# Redis answers a command it does not know (EXPECT).
R("STRLEN s:a")
R("APPEND s:app x")
R("KEYS *")
R("SET s:ex v EX 100")
P("90 <= r.ttl('s:ex') <= 100")
R("SET s:px v PX 100000")
P("90000 <= r.pttl('s:px') <= 100000")
R("SET s:nx v NX")
R("SET s:nx w NX")
R("GET s:nx")
R("SET s:xx v XX")
R("GET s:xx")
R("SET s:nx w2 XX")
R("GET s:nx")
R("SET s:a v GET")
R("SET s:newget x GET")
R("SET s:a v2 NX GET")
R("GET s:a")
R("SET s:k v EX 100")
R("SET s:k w KEEPTTL")
P("90 <= r.ttl('s:k') <= 100")
R("GET s:k")
R("SET s:k w2")
P("r.ttl('s:k') > 100 or r.ttl('s:k') == -1")
R("SET s:a v EX 0")
R("SET s:a v EX -5")
R("SET s:a v PX 0")
R("SET s:a v EX abc")
R("SET s:a v NX XX")
R("SET s:a v EX 10 PX 100")
R("SET s:a v KEEPTTL EX 10")
R("SET s:a v BOGUS")
# Issue 47 item 6: Redis 7.0 reads every option before the expiry's number
# (a repeated option is allowed, the last expiry wins), and refuses an
# expiry whose absolute time overflows.
R("SET s:a v EX abc PX 0")
R("SET s:a v EX abc NX XX")
R("SET s:o v EX abc EX 100")
P("90 <= r.ttl('s:o') <= 100")
R("SET s:o v NX NX")
R("SET s:o w XX XX")
R("SET s:o x GET GET")
R("SET s:o y KEEPTTL KEEPTTL")
R("SET s:o z PX 9223372036854775807")
R("SET s:o z EX 9223372036854775")
R("SET s:o z EXAT 9223372036854775807")
R("SET s:o z XX GET KEEPTTL")
R("GET s:o")
R("SET s:a")
R("SET")
R("SETNX s:n 1")
R("SETNX s:n 2")
R("GET s:n")
R("SETNX s:n")
R("SETEX s:e 100 v")
P("90 <= r.ttl('s:e') <= 100")
R("SETEX s:e 0 v")
R("SETEX s:e abc v")
R("SETEX s:e 100")
# Issue 47: now + the time overflows.
R("SETEX s:e 9223372036854775 v")
R("PSETEX s:p 9223372036854775807 v")
R("PSETEX s:p 9223372036854775000 v")
R("PSETEX s:p 100000 v")
P("90000 <= r.pttl('s:p') <= 100000")
R("PSETEX s:p -1 v")
R("GETDEL s:e")
R("GETDEL s:e")
R("EXISTS s:e")
R("GETDEL")
R("MSET m:1 a m:2 b m:3 c")
R("MSET m:1")
R("MSET m:1 a m:2")
R("MGET m:1 m:missing m:2 m:3 m:1")
R("MGET m:missing")
R("MGET")
R("DEL m:1 m:2 m:missing")
R("DEL m:1")
R("UNLINK m:3 m:3")
R("UNLINK m:3")
R("DEL")
R("EXISTS s:a s:a s:missing")
R("EXISTS s:missing")
R("EXISTS")
R("TYPE s:a")
R("TYPE s:missing")
R("TYPE")
R("get s:a")
R("GeT s:a")
R("SET 'key with spaces' 'value with spaces'")
R("GET 'key with spaces'")
P("r.set(b'bin\\x00key', b'\\x00\\xff\\r\\n$-1\\r\\n')")
P("r.get(b'bin\\x00key')")
P("r.set('s:big', b'x' * 1000000)")
P("r.get('s:big') == b'x' * 1000000")
P("len(r.get('s:big'))")

# --- counters ---------------------------------------------------------------
R("INCR n:a")
R("INCRBY n:a 10")
R("DECR n:a")
R("DECRBY n:a 3")
R("INCRBY n:a -7")
R("GET n:a")
R("DECR n:new")
R("DECRBY n:new2 5")
R("INCR s:a")
R("INCRBY n:a abc")
R("INCRBY n:a 1.5")
R("SET n:big 9223372036854775807")
R("INCR n:big")
R("SET n:small -9223372036854775808")
R("DECR n:small")
R("SET n:f 1.5")
R("INCR n:f")
R("SET n:sp ' 1'")
R("INCR n:sp")
R("SET n:neg -5")
R("INCR n:neg")
R("SET n:lead 007")
R("INCR n:lead")
R("SET n:plus +7")
R("INCR n:plus")
R("SET n:mzero -0")
R("INCR n:mzero")
R("INCRBY n:a +7")
R("INCRBY n:a -0")
R("DECRBY n:a +1")
R("INCR")
R("INCRBY n:a")
R("INCR n:a n:b")

# --- expiry -----------------------------------------------------------------
R("SET t:a v")
R("TTL t:a")
R("PTTL t:a")
R("TTL t:missing")
R("PTTL t:missing")
R("EXPIRE t:a 100")
P("90 <= r.ttl('t:a') <= 100")
R("PEXPIRE t:a 200000")
P("190 <= r.ttl('t:a') <= 200")
R("EXPIRE t:missing 100")
R("PEXPIRE t:missing 100")
R("EXPIRE t:a abc")
R("EXPIRE t:a 10 BAD")
R("EXPIRE t:a abc BAD")
R("EXPIRE t:a abc NX XX")
R("EXPIRE t:a abc GT LT")
R("EXPIRE t:a 9223372036854775")
R("PEXPIRE t:a 9223372036854775807")
R("EXPIRE t:a")
R("PERSIST t:a")
R("TTL t:a")
R("PERSIST t:a")
R("PERSIST t:missing")
R("SET t:b v")
R("EXPIRE t:b 0")
R("GET t:b")
R("SET t:c v")
R("PEXPIRE t:c -1")
R("EXISTS t:c")
R("SET t:d v EX 100")
R("SET t:d w")
R("TTL t:d")
# NX: every Momento key has a TTL; the proxy takes NX as LT (docs/proxy.md).
R("SET t:nx v")
R("EXPIRE t:nx 100 NX")
P("90 <= r.ttl('t:nx') <= 100")
R("EXPIRE t:nx 200 NX")
R("EXPIRE t:nx 50 NX")
R("EXPIRE t:missing 50 NX")
# XX, GT, LT on a key written without an expiry (Redis: no TTL, counted
# as infinite by GT and LT; the proxy: --default-ttl, 3600 s here).
R("SET t:xx v")
R("EXPIRE t:xx 100 XX")
R("SET t:gt v")
R("EXPIRE t:gt 100000 GT")
R("SET t:gt2 v")
R("EXPIRE t:gt2 100 GT")
R("SET t:lt v")
R("EXPIRE t:lt 100000 LT")
R("SET t:lt2 v")
R("EXPIRE t:lt2 100 LT")
R("SET t:nx2 v")
R("EXPIRE t:nx2 100000 NX")
R("SET t:xp v")
R("EXPIRE t:xp 0 XX")
R("EXISTS t:xp")
R("SET t:gp v")
R("EXPIRE t:gp -1 GT")
R("EXISTS t:gp")
R("SET t:np v")
R("PEXPIRE t:np 0 NX")
R("EXISTS t:np")


def expires_soon(ctx):
    """A key set with PX 300 expires (polled, not slept). It is not read
    back within the 300 ms first (a loaded machine may miss that window):
    the SET replaces a value without expiry instead (SET ... GET answers
    that one), so the key reads as missing only once what replaced it has
    gone - which a SET that ignored PX would never do."""
    r = ctx.r
    r.set("t:short", "old")
    replaced = r.set("t:short", "v", px=300, get=True)
    deadline = time.monotonic() + pt.WATCHDOG
    while time.monotonic() < deadline:
        if r.get("t:short") is None:
            return ("gone", replaced, r.exists("t:short"), r.ttl("t:short"))
        time.sleep(0.05)
    return f"still there after {pt.WATCHDOG} s"


F("a PX 300 key expires", expires_soon)

# --- the empty key ------------------------------------------------------------
# Momento refuses an empty key: every command naming one as a key answers
# one error saying so (EXPECT); an empty value, field or weight is no key.
for c in ["SET '' v", "GET ''", "MGET e:a ''", "MSET e:a 1 '' 2", "DEL e:a ''", "EXISTS ''",
          "TTL ''", "EXPIRE '' 100", "INCR ''", "HSET '' f v", "RPUSH '' a", "SADD '' a",
          "ZADD '' 1 a", "ZUNIONSTORE '' 1 z:none", "ZUNIONSTORE e:z 1 ''",
          "LINDEX '' abc", "SET '' v BOGUS"]:
    R(c)
R("EXISTS e:a")
R("MSET e:a ''")
R("GET e:a")
R("HSET e:h '' v")
R("HGET e:h ''")
R("ZUNIONSTORE e:z 1 z:none WEIGHTS ''")

# --- hashes -----------------------------------------------------------------
R("HSET h:a f1 v1 f2 v2")
R("HSET h:a f1 x f3 y")
R("HGET h:a f1")
R("HGET h:a nof")
R("HGET h:missing f")
R("HMGET h:a f1 nof f2")
R("HMGET h:missing a b")
R("HGETALL h:a", sort=True)
R("HGETALL h:missing")
R("HDEL h:a f3 nof")
R("HDEL h:a nof")
R("HDEL h:missing f")
R("HLEN h:a")
R("HLEN h:missing")
R("HKEYS h:a", sort=True)
R("HVALS h:a", sort=True)
R("HKEYS h:missing")
R("HVALS h:missing")
R("HEXISTS h:a f1")
R("HEXISTS h:a nof")
R("HEXISTS h:missing f")
R("HINCRBY h:a cnt 5")
R("HINCRBY h:a cnt -2")
R("HINCRBY h:a f1 1")
R("HINCRBY h:a cnt x")
R("HINCRBY h:new c 1")
R("HGET h:a cnt")
R("TYPE h:a")
R("HSET h:a f")
R("HSET h:a")
R("HGET h:a")
R("HMGET h:a")
R("HDEL h:a")
R("HGETALL")
R("HINCRBY h:a cnt")
R("HGET s:a f")
R("HSET s:a f v")
R("HGETALL s:a")
R("GET h:a")
R("INCR h:a")
R("HDEL h:a f1 f2 cnt")
R("EXISTS h:a")
R("HSET h:b f v")
R("DEL h:b")
R("HLEN h:b")

# --- lists ------------------------------------------------------------------
R("RPUSH l:a a b c")
R("LPUSH l:a z y")
R("LRANGE l:a 0 -1")
R("LRANGE l:a 1 2")
R("LRANGE l:a -2 -1")
R("LRANGE l:a 5 10")
R("LRANGE l:a -100 100")
R("LRANGE l:a 3 1")
R("LRANGE l:missing 0 -1")
R("LRANGE l:a x 1")
R("LLEN l:a")
R("LLEN l:missing")
R("LINDEX l:a 0")
R("LINDEX l:a -1")
R("LINDEX l:a 10")
R("LINDEX l:missing 0")
R("LINDEX l:a abc")
# Redis looks the key up before it reads the index (issue 47 item 6).
R("LINDEX l:missing abc")
R("HSET h:li f v")
R("LINDEX h:li abc")
R("LINDEX s:a abc")
R("LRANGE l:missing abc 1")
R("LPOP l:a")
R("RPOP l:a")
R("LPOP l:a 2")
R("LPOP l:a 0")
R("RPOP l:a 5")
R("LPOP l:a")
R("EXISTS l:a")
R("LPOP l:missing")
R("LPOP l:missing 2")
R("LPOP l:missing 0")
R("RPOP l:missing 2")
R("LPOP l:a -1")
R("RPUSH l:b x")
R("TYPE l:b")
R("RPUSH l:b")
R("LPUSH l:b")
R("LRANGE l:b 0")
R("LINDEX l:b")
R("LLEN")
R("RPUSH s:a x")
R("LPUSH h:new x")
R("LRANGE s:a 0 -1")
R("LLEN s:a")
R("GET l:b")
R("SADD l:b m")

# --- sets -------------------------------------------------------------------
R("SADD st:a a b c")
R("SADD st:a a d")
R("SMEMBERS st:a", sort=True)
R("SMEMBERS st:missing")
R("SISMEMBER st:a a")
R("SISMEMBER st:a z")
R("SISMEMBER st:missing a")
R("SCARD st:a")
R("SCARD st:missing")
R("SREM st:a a z")
R("SREM st:a z")
R("SREM st:missing a")
P("S.__setitem__('popped', r.spop('st:a')) or S['popped'] in {b'b', b'c', b'd'}")
R("SCARD st:a")
P("sorted(set(r.spop('st:a', 5)) | {S['popped']})")
R("SPOP st:a")
R("EXISTS st:a")
R("SPOP st:missing")
R("SPOP st:missing 2")
R("SPOP st:missing 0")
R("SPOP st:a -1")
R("SADD st:r a b c")
P("r.srandmember('st:r') in {b'a', b'b', b'c'}")
P("(lambda m: (len(m), len(set(m)), set(m) <= {b'a', b'b', b'c'}))(r.srandmember('st:r', 2))")
R("SRANDMEMBER st:r 10", sort=True)
P("(lambda m: (len(m), set(m) <= {b'a', b'b', b'c'}))(r.srandmember('st:r', -5))")
R("SRANDMEMBER st:r 0")
R("SCARD st:r")
R("SRANDMEMBER st:missing")
R("SRANDMEMBER st:missing 3")
R("SRANDMEMBER st:r x")
R("TYPE st:r")
R("SADD st:r")
R("SREM st:r")
R("SISMEMBER st:r")
R("SMEMBERS")
R("SCARD")
R("SADD s:a x")
R("SMEMBERS s:a")
R("SISMEMBER l:b x")

# --- sorted sets --------------------------------------------------------------
R("ZADD z:a 1 a 2 b 3 c")
R("ZADD z:a 1.5 a 4 d")
R("ZADD z:a x a")
R("ZADD z:a 1 a 2")
R("ZADD z:a 1")
R("ZSCORE z:a a")
R("ZSCORE z:a nope")
R("ZSCORE z:missing a")
R("ZMSCORE z:a a nope b")
R("ZMSCORE z:missing a b")
R("ZINCRBY z:a 2.5 a")
R("ZINCRBY z:a 1 new")
R("ZINCRBY z:a abc a")
R("ZINCRBY z:a 1")
R("ZINCRBY z:mz -0 m")
R("ZINCRBY z:mz -0 m")
R("ZSCORE z:mz m")
R("ZADD z:mz INCR -0 m2")
R("ZINCRBY z:mz -0 m2")
R("ZRANK z:a a")
R("ZREVRANK z:a a")
R("ZRANK z:a new")
R("ZREVRANK z:a new")
R("ZRANK z:a nope")
R("ZRANK z:missing x")
R("ZREVRANK z:missing x")
R("ZRANGE z:a 0 -1")
R("ZRANGE z:a 0 -1 WITHSCORES")
R("ZRANGE z:a 0 -1 REV")
R("ZRANGE z:a 0 -1 REV WITHSCORES")
R("ZRANGE z:a 1 2 WITHSCORES")
R("ZRANGE z:a -2 -1")
R("ZRANGE z:a 10 20")
R("ZRANGE z:a 2 3 BYSCORE")
R("ZRANGE z:a (2 +inf BYSCORE WITHSCORES")
R("ZRANGE z:a (2 (4 BYSCORE")
R("ZRANGE z:a -inf +inf BYSCORE LIMIT 1 2")
R("ZRANGE z:a -inf +inf BYSCORE LIMIT 1 -1")
R("ZRANGE z:a -inf +inf BYSCORE LIMIT 10 2")
R("ZRANGE z:a +inf -inf BYSCORE REV LIMIT 0 2")
R("ZRANGE z:a 4 1 BYSCORE REV WITHSCORES")
R("ZRANGE z:a 1 4 BYSCORE REV")
R("ZRANGE z:a 0 -1 LIMIT 0 1")
R("ZRANGE z:a a b BYSCORE")
R("ZRANGE z:a 0 x")
R("ZRANGE z:a 0 -1 BOGUS")
R("ZRANGE z:a 0")
R("ZRANGE z:missing 0 -1")
R("ZRANGE z:missing -inf +inf BYSCORE")
R("ZCARD z:a")
R("ZCARD z:missing")
R("ZCOUNT z:a 2 4")
R("ZCOUNT z:a (2 4")
R("ZCOUNT z:a -inf +inf")
R("ZCOUNT z:a 5 1")
R("ZCOUNT z:missing 0 1")
R("ZCOUNT z:a x 1")
R("ZREM z:a new nope")
R("ZREM z:a nope")
R("ZREM z:missing a")
R("ZADD z:b 10 a 20 x")
R("ZUNIONSTORE z:u 2 z:a z:b")
R("ZRANGE z:u 0 -1 WITHSCORES")
R("ZUNIONSTORE z:u2 2 z:a z:b WEIGHTS 2 1 AGGREGATE MAX")
R("ZRANGE z:u2 0 -1 WITHSCORES")
R("ZUNIONSTORE z:u3 2 z:a z:b AGGREGATE MIN")
R("ZRANGE z:u3 0 -1 WITHSCORES")
R("ZUNIONSTORE z:u4 2 z:a z:missing")
R("ZRANGE z:u4 0 -1 WITHSCORES")
R("ZUNIONSTORE z:u5 1 z:missing")
R("EXISTS z:u5")
R("ZUNIONSTORE z:u 1 z:b")
R("ZRANGE z:u 0 -1")
R("ZUNIONSTORE z:u 0 z:a")
R("ZUNIONSTORE z:u 3 z:a z:b")
R("ZUNIONSTORE z:u 2 z:a z:b WEIGHTS 1")
R("ZUNIONSTORE z:u 2 z:a z:b AGGREGATE BOGUS")
R("ZUNIONSTORE z:u x z:a")
R("ZUNIONSTORE z:u")
R("SADD st:z m1 m2")
R("ZUNIONSTORE z:us 2 z:b st:z")
R("ZRANGE z:us 0 -1 WITHSCORES")
# Plain sets as sources (members at score 1): weights, aggregates, a set
# over a string destination, the destination one of its sources, nothing.
R("SADD st:y m2 m3 x")
R("ZUNIONSTORE z:us 3 st:z z:b st:y WEIGHTS 2 0.5 3")
R("ZRANGE z:us 0 -1 WITHSCORES")
R("ZUNIONSTORE z:us 2 st:z st:y AGGREGATE MAX WEIGHTS 5 -1")
R("ZRANGE z:us 0 -1 WITHSCORES")
R("ZUNIONSTORE z:us 3 st:y z:b st:none AGGREGATE MIN")
R("ZRANGE z:us 0 -1 WITHSCORES")
R("SET s:dest x")
R("ZUNIONSTORE s:dest 1 st:z")
R("TYPE s:dest")
R("ZRANGE s:dest 0 -1 WITHSCORES")
R("SADD st:self a b")
R("ZUNIONSTORE st:self 2 st:self z:b")
R("TYPE st:self")
R("ZRANGE st:self 0 -1 WITHSCORES")
R("ZUNIONSTORE z:us 2 st:none z:none")
R("EXISTS z:us")
R("ZUNIONSTORE z:us 2 st:z s:a")
# Redis sums in order of the sources' sizes, smallest first: here
# -inf + 1 = -inf, then -inf + inf = NaN, stored as 0 (in argument order it
# would be 1).
R("ZADD z:c3 inf m 1 p 2 q")
R("SADD st:c1 m")
R("ZADD z:c2 1 m 5 p")
R("ZUNIONSTORE z:us 3 z:c3 st:c1 z:c2 WEIGHTS 1 -inf 1")
R("ZRANGE z:us 0 -1 WITHSCORES")
# A weight no float holds, on sorted sets alone.
R("ZUNIONSTORE z:us 2 z:c3 z:c2 WEIGHTS 1e300 1 AGGREGATE MAX")
R("ZRANGE z:us 0 -1 WITHSCORES")
R("ZUNIONSTORE z:us 1 z:c2 WEIGHTS inf")
R("ZRANGE z:us 0 -1 WITHSCORES")
R("ZUNIONSTORE z:u 1 s:a")
# Issue 47: Redis looks every source up before it reads WEIGHTS and
# AGGREGATE: a source of another type is WRONGTYPE whatever follows; with
# every source of a right type (or missing), the option's own error.
R("SET zu:str x")
R("HSET zu:h f v")
R("ZUNIONSTORE z:u 2 z:a zu:str AGGREGATE BAD")
R("ZUNIONSTORE z:u 2 z:a zu:h WEIGHTS 1 abc")
R("ZUNIONSTORE z:u 2 zu:h z:a WEIGHTS")
R("ZUNIONSTORE z:u 3 z:missing st:z zu:str WEIGHTS 1 2 3 x")
R("ZUNIONSTORE z:u 2 z:a st:z AGGREGATE BAD")
R("ZUNIONSTORE z:u 2 z:a z:missing WEIGHTS 1 abc")
R("ZUNIONSTORE zu:str 1 z:a AGGREGATE")
R("TYPE zu:str")
R("ZADD z:inf +inf top -inf bottom 1.25 mid -3.5 neg")
R("ZSCORE z:inf top")
R("ZSCORE z:inf bottom")
R("ZSCORE z:inf mid")
R("ZRANGE z:inf 0 -1 WITHSCORES")
R("ZADD z:tie 1 b 1 a 1 c")
R("ZRANGE z:tie 0 -1")
R("ZRANGE z:tie 0 -1 REV")
R("ZRANK z:tie c")
R("ZADD z:nan nan a")
R("ZINCRBY z:inf -inf top")
R("TYPE z:a")
R("ZADD s:a 1 a")
R("ZSCORE s:a a")
R("ZRANGE s:a 0 -1")
R("ZCARD st:a")
R("GET z:a")

# --- every type deleted, and DEL/EXISTS/TYPE over them -------------------------
R("TYPE l:b")
R("TYPE st:r")
R("TYPE z:inf")
R("EXISTS s:a l:b st:r z:inf h:new s:missing")
R("EXPIRE z:inf 100")
P("90 <= r.ttl('z:inf') <= 100")
R("DEL s:a l:b st:r z:inf h:new s:missing")
R("EXISTS s:a l:b st:r z:inf h:new")

# --- unknown commands and arity ------------------------------------------------
R("FOOBAR")
R("FOOBAR a b")
R("foobar 'with space'")
R("MULTIGET a")
R("GET a b")
R("TTL")
R("TTL a b")
R("PING a b")
R("PUBLISH ch")

# --- redis-py, the way applications call it -------------------------------------
P("r.ping()")
P("r.echo('hi')")
P("r.set('py:a', 'v', ex=100, nx=True)")
P("r.set('py:a', 'w', nx=True)")
P("r.set('py:a', 'w', xx=True, keepttl=True)")
P("90 <= r.ttl('py:a') <= 100")
P("r.set('py:a', 'x', get=True)")
P("r.set('py:b', 'v', px=100000)")
P("r.get('py:a')")
P("r.get('py:missing')")
P("r.setnx('py:c', 1)")
P("r.setex('py:d', 100, 'v')")
P("r.psetex('py:e', 100000, 'v')")
P("r.getdel('py:d')")
P("r.mset({'py:m1': 'a', 'py:m2': 'b'})")
P("r.mget(['py:m1', 'py:missing', 'py:m2'])")
P("r.delete('py:m1', 'py:missing')")
P("r.unlink('py:m2')")
P("r.exists('py:a', 'py:b', 'py:missing')")
P("r.type('py:a')")
P("r.incr('py:n')")
P("r.incrby('py:n', 5)")
P("r.decr('py:n')")
P("r.decrby('py:n', 2)")
P("r.expire('py:n', 100)")
P("r.pexpire('py:n', 100000)")
P("r.persist('py:missing')")
P("r.ttl('py:missing')")
P("r.pttl('py:missing')")
P("r.hset('py:h', mapping={'a': '1', 'b': '2'})")
P("r.hget('py:h', 'a')")
P("r.hmget('py:h', ['a', 'x', 'b'])")
P("r.hgetall('py:h')")
P("r.hincrby('py:h', 'a', 10)")
P("r.hlen('py:h')")
P("sorted(r.hkeys('py:h'))")
P("sorted(r.hvals('py:h'))")
P("r.hexists('py:h', 'b')")
P("r.hdel('py:h', 'b', 'x')")
P("r.hgetall('py:missing')")
P("r.lpush('py:l', 'a', 'b')")
P("r.rpush('py:l', 'c')")
P("r.lrange('py:l', 0, -1)")
P("r.llen('py:l')")
P("r.lindex('py:l', 1)")
P("r.lpop('py:l')")
P("r.rpop('py:l', 2)")
P("r.lpop('py:l')")
P("r.sadd('py:s', 'a', 'b', 'c')")
P("sorted(r.smembers('py:s'))")
P("r.sismember('py:s', 'a')")
P("r.scard('py:s')")
P("r.srem('py:s', 'a')")
P("r.spop('py:s') in {b'b', b'c'}")
P("len(r.srandmember('py:s', 5))")
P("r.zadd('py:z', {'a': 1, 'b': 2.5, 'c': 3})")
P("r.zscore('py:z', 'b')")
P("r.zmscore('py:z', ['a', 'x'])")
P("r.zincrby('py:z', 2, 'a')")
P("r.zrank('py:z', 'a')")
P("r.zrevrank('py:z', 'a')")
P("r.zrange('py:z', 0, -1, withscores=True)")
P("r.zrange('py:z', 0, -1, desc=True)")
P("r.zrange('py:z', 1, 3, byscore=True, withscores=True)")
P("r.zrange('py:z', 3, 1, byscore=True, desc=True, offset=0, num=1)")
P("r.zrange('py:z', '(1', '+inf', byscore=True, offset=1, num=5)")
P("r.zcard('py:z')")
P("r.zcount('py:z', 2, '+inf')")
P("r.zrem('py:z', 'c')")
P("r.zadd('py:z2', {'a': 10})")
P("r.zunionstore('py:zu', ['py:z', 'py:z2'])")
P("r.zunionstore('py:zu', {'py:z': 2, 'py:z2': 1}, aggregate='MIN')")
P("r.zrange('py:zu', 0, -1, withscores=True)")
P("r.delete('py:h', 'py:l', 'py:s', 'py:z', 'py:z2', 'py:zu')")
P("isinstance(r.info(), dict) and len(r.info()) > 0")
P("r.get('py:missing') is None and r.lrange('py:missing', 0, -1) == []")


def pubsub_flow(ctx):
    """A redis-py subscriber gets, in order, what another connection
    publishes to its channels: the confirmations, the messages of each
    channel in their order, nothing of a channel it is not on, and the
    unsubscribe confirmation."""
    events = ctx.sub()
    sub = ctx.new_client().pubsub()
    pub = ctx.new_client()

    def next_msg():
        m = sub.get_message(timeout=pt.WATCHDOG)
        if m is None:
            return (f"no message within {pt.WATCHDOG} s",)
        return (m["type"], m["channel"], m["data"])

    sub.subscribe("ps:one", "ps:two")
    events.add("subscribe ps:one ps:two", sorted([next_msg(), next_msg()]))
    events.add("PUBLISH ps:one m1", pub.publish("ps:one", "m1"))
    events.add("PUBLISH ps:other (no subscriber)", pub.publish("ps:other", "nobody"))
    events.add("PUBLISH ps:one (binary)", pub.publish("ps:one", b"m2\x00\r\n"))
    events.add("PUBLISH ps:two n1", pub.publish("ps:two", "n1"))
    events.add("PUBLISH ps:one m3", pub.publish("ps:one", "m3"))
    got = [next_msg() for _ in range(4)]
    # Redis keeps one order over all channels; topics on Momento are
    # streams of their own, so only each channel's order is compared.
    events.add("the four messages, by channel",
               sorted(got, key=lambda m: m[1] if len(m) > 1 else b""))
    sub.unsubscribe("ps:two")
    events.add("unsubscribe ps:two", next_msg())
    events.add("PUBLISH ps:one m4", pub.publish("ps:one", "m4"))
    events.add("message m4", next_msg())
    sub.unsubscribe()
    events.add("unsubscribe (all)", next_msg())
    sub.close()
    return events


def pubsub_raw_flow(ctx):
    """The subscribe-mode wire form: replies to SUBSCRIBE, PING in that
    mode, a refused command, a message, the unsubscribe replies, and the
    connection back to normal afterwards."""
    c = RawConn(ctx.port, timeout=pt.WATCHDOG)
    pub = ctx.new_client()
    out = ctx.sub()
    try:
        out.add("SUBSCRIBE pr:a", c.command("SUBSCRIBE", "pr:a"))
        out.add("SUBSCRIBE pr:b pr:a (1st reply)", c.command("SUBSCRIBE", "pr:b", "pr:a"))
        out.add("SUBSCRIBE pr:b pr:a (2nd reply)", c.reply())
        out.add("PING when subscribed", c.command("PING"))
        out.add("PING x when subscribed", c.command("PING", "x"))
        out.add("GET when subscribed", c.command("GET", "k"))
        out.add("PUBLISH pr:b hello", pub.publish("pr:b", "hello"))
        out.add("the message", c.reply())
        out.add("UNSUBSCRIBE pr:a", c.command("UNSUBSCRIBE", "pr:a"))
        out.add("UNSUBSCRIBE pr:b", c.command("UNSUBSCRIBE", "pr:b"))
        out.add("UNSUBSCRIBE with none left", c.command("UNSUBSCRIBE"))
        out.add("PING after", c.command("PING"))
        out.add("SUBSCRIBE without a channel", c.command("SUBSCRIBE"))
    except (Closed, socket.timeout) as e:
        out.add("connection", type(e).__name__)
    c.close()
    return out


F("pub/sub with redis-py", pubsub_flow)
F("pub/sub on the wire", pubsub_raw_flow)


def quit_flow(ctx):
    c = RawConn(ctx.port, timeout=pt.WATCHDOG)
    try:
        first = c.command("QUIT")
    except Closed:
        return ("closed before answering",)
    try:
        c.reply()
        return (first, "connection still open")
    except Closed:
        return (first, "closed")
    except socket.timeout:
        return (first, f"neither closed nor answered within {pt.WATCHDOG} s")
    finally:
        c.close()


F("QUIT answers +OK and closes", quit_flow)


# --- what the proxy answers on purpose differently ----------------------------
def integer_in(lo, hi):
    return lambda a: a[0] == ":" and lo <= a[1] <= hi


def is_error(a):
    return a[0] == "-"


NO_PERSIST = ("Momento has no item without expiry: a key set without EX has the proxy's "
              f"--default-ttl ({DEFAULT_TTL} s here)")
NO_TTL_XX = ('docs/proxy.md "EXPIRE / PEXPIRE NX, XX, GT, LT": a key written without an '
             'expiry has --default-ttl here, so XX finds a TTL and applies (Redis: no TTL, 0)')
NO_TTL_GTLT = ('docs/proxy.md "EXPIRE / PEXPIRE NX, XX, GT, LT": GT, LT and NX (taken as LT) '
               f'compare with the --default-ttl ({DEFAULT_TTL} s) a key written without an '
               'expiry has here, where Redis counts no TTL as infinite')
EMPTY_KEY_ERR = "ERR momento-proxy: Momento does not allow an empty key"
EMPTY_KEY = ('docs/proxy.md "The empty key": Momento refuses an empty key, so every command '
             'naming one answers this error')
NOT_LISTED = "a command issue 33 does not list: Redis's answer to a command it does not know"


def unknown(name, *args):
    text = "".join(f"'{a}' " for a in args)
    return pt.Expect(("-", f"ERR unknown command '{name}', with args beginning with: {text}"),
                     NOT_LISTED)


EXPECT = {
    "raw: STRLEN s:a": unknown("STRLEN", "s:a"),
    "raw: APPEND s:app x": unknown("APPEND", "s:app", "x"),
    "raw: PERSIST t:a #1": pt.Expect((":", 0), "Momento keeps no item forever: PERSIST removes no "
                                     "TTL and answers 0, as Redis does for a key without one"),
    "raw: TTL t:a #2": pt.Expect(integer_in(190, 200), "PERSIST left the TTL PEXPIRE set (200 s)",
                                 "an integer in [190, 200]"),
    "raw: KEYS *": unknown("KEYS", "*"),
    "raw: SELECT 1": pt.Expect(is_error, "the proxy serves database 0 only", "an error"),
    "raw: TTL t:a #1": pt.Expect(integer_in(DEFAULT_TTL - 100, DEFAULT_TTL), NO_PERSIST,
                              f"an integer in ({DEFAULT_TTL - 100}, {DEFAULT_TTL}]"),
    "raw: PTTL t:a": pt.Expect(integer_in((DEFAULT_TTL - 100) * 1000, DEFAULT_TTL * 1000),
                               NO_PERSIST, "an integer in ms near the default TTL"),
    "raw: INCR n:lead": pt.Expect((":", 8), "Momento's Increment reads \"007\" as 7 (Redis refuses "
                                  "leading zeros); the proxy would need a read first to refuse it"),
    "raw: INCR n:mzero": pt.Expect((":", 1), "Momento's Increment reads \"-0\" as 0 (Redis refuses "
                                   "it); the proxy would need a read first to refuse it"),
    "raw: EXPIRE t:nx 50 NX": pt.Expect((":", 1), "every Momento key has a TTL: the proxy takes "
                                        "EXPIRE NX as LT, so that INCR + EXPIRE NX keeps its window"),
    "raw: EXPIRE t:xx 100 XX": pt.Expect((":", 1), NO_TTL_XX),
    "raw: EXPIRE t:gt 100000 GT": pt.Expect((":", 1), NO_TTL_GTLT),
    "raw: EXPIRE t:lt 100000 LT": pt.Expect((":", 0), NO_TTL_GTLT),
    "raw: EXPIRE t:nx2 100000 NX": pt.Expect((":", 0), NO_TTL_GTLT),
    "raw: EXPIRE t:xp 0 XX": pt.Expect((":", 1), NO_TTL_XX),
    "raw: EXISTS t:xp": pt.Expect((":", 0), NO_TTL_XX + ": the past time deleted the key"),
    **{f"raw: {c}": pt.Expect(("-", EMPTY_KEY_ERR), EMPTY_KEY)
       for c in ["SET '' v", "GET ''", "MGET e:a ''", "MSET e:a 1 '' 2", "DEL e:a ''",
                 "EXISTS ''", "TTL ''", "EXPIRE '' 100", "INCR ''", "HSET '' f v", "RPUSH '' a",
                 "SADD '' a", "ZADD '' 1 a", "ZUNIONSTORE '' 1 z:none", "ZUNIONSTORE e:z 1 ''",
                 "LINDEX '' abc", "SET '' v BOGUS"]},
    "raw: EXISTS e:a": pt.Expect((":", 0), EMPTY_KEY + ": MSET e:a 1 '' 2 wrote nothing"),
    "raw: TTL t:d": pt.Expect(integer_in(DEFAULT_TTL - 100, DEFAULT_TTL), NO_PERSIST,
                              "an integer near the default TTL"),
}


def normalise(step, ans):
    """Answers that are the server's own (INFO's text, COMMAND's table) are
    compared by their form only."""
    n = step.name
    if n.startswith("raw: INFO"):
        return (ans[0], "a bulk string with '# ' sections" if ans[0] == "$" and ans[1]
                and ans[1].startswith(b"# ") else ans)
    if n == "raw: COMMAND":
        return (ans[0], "a non-empty array" if ans[0] == "*" and ans[1] else ans)
    if n == "raw: COMMAND COUNT":
        return (ans[0], "positive" if ans[0] == ":" and ans[1] > 0 else ans)
    return ans


def sort_reply(step, ans):
    if not step.sort or ans[0] != "*" or ans[1] is None:
        return ans
    items = ans[1]
    if step.name.startswith("raw: HGETALL"):
        pairs = [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        return ("*", [x for p in sorted(pairs, key=repr) for x in p])
    return ("*", sorted(items, key=repr))


class Ctx(pt.StepCtx):
    def __init__(self, port):
        self.port = port
        self.raw = RawConn(port, timeout=pt.WATCHDOG)
        self.r = self.new_client()
        self.S = {}

    def new_client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=pt.WATCHDOG,
                           socket_connect_timeout=pt.WATCHDOG)


def py_answer(v):
    if isinstance(v, (set, frozenset)):
        return ("set", sorted(v))
    if isinstance(v, dict):
        return ("dict", sorted(v.items()))
    return v


def answer(ctx, st):
    if st.kind == "raw":
        ans = sort_reply(st, ctx.raw.command(*st.payload))
    elif st.kind == "wire":
        data, n = st.payload
        ctx.raw.send(data)
        ans = [ctx.raw.reply() for _ in range(n)]
        ans = ans[0] if n == 1 else ans
    elif st.kind == "py":
        try:
            ans = py_answer(eval(st.payload, {"r": ctx.r, "S": ctx.S}))
        except redis.exceptions.ResponseError as e:
            ans = ("ResponseError", str(e))
    else:
        ans = st.payload(ctx)
    return normalise(st, ans)


def lost(ctx, e):
    # A fresh connection for the steps that follow.
    try:
        ctx.raw.close()
        ctx.raw = RawConn(ctx.port, timeout=pt.WATCHDOG)
    except OSError:
        pass
    return ("connection", type(e).__name__, str(e))


def run_script(port, label):
    """Runs every step against the server on port; returns [(name, answer)]."""
    return pt.run_steps(label, STEPS, Ctx(port), answer,
                        (Closed, socket.timeout, redis.exceptions.ConnectionError,
                         redis.exceptions.TimeoutError),
                        (socket.timeout, redis.exceptions.TimeoutError), lost)


def main():
    a = pt.parse_common_args(sys.argv[1:])
    pt.number_repeated(STEPS)
    pt.run_against_redis(a, pt.Results(), run_script, EXPECT, DEFAULT_TTL,
                         lambda res, ref: pt.check_every_step_answered(res, ref, "redis-server"))


if __name__ == "__main__":
    main()
