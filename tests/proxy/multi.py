#!/usr/bin/env python3
"""MULTI / EXEC / DISCARD (issue 48 item 5): momento-proxy queues a
transaction's commands and runs them in order at EXEC, answering as
redis-server answers.

The same steps run against a redis-server this test starts, against
momento-proxy, and against a proxy with --max-in-flight 2 (so EXEC's
commands stop and go on many times: the connection's limit, and each
waiting for the earlier ones on its keys); each record is compared
(pt.compare_records), and where the proxy must differ (WATCH, refused)
EXPECT says what it answers and why.

  wire        raw sockets: +QUEUED, EXEC's array with errors as elements
              (WRONGTYPE, syntax), EXECABORT for a queued unknown command,
              a wrong arity, MULTI x or DISCARD x; nested MULTI, EXEC and
              DISCARD without MULTI, EXEC x, WATCH inside and outside MULTI,
              UNWATCH, SUBSCRIBE in MULTI, MULTI and EXEC while subscribed,
              QUIT inside MULTI, DISCARD dropping the queue.
  order       one key written and read many times in one EXEC (INCR, INCRBY,
              LPUSH / LRANGE, DEL / EXISTS), a pipeline around a transaction
              on the same keys (the commands before EXEC seen by it, those
              after it seeing its writes), and 2,000 queued commands (more
              than --max-in-flight and the reply budget let start at once):
              EXEC's 2,000 answers in order.
  redis-py    pipeline() (transaction=True, the default): results equal,
              an error inside (raise_on_error=False), a queued unknown
              command (ExecAbortError), watch() refused.
  bound       the proxy only: a MULTI that queues past --max-request-bytes
              (here 1 MiB) gets the proxy's error on the command past it,
              QUEUED after it, EXECABORT at EXEC; 24 MiB of SETs queued
              raise the proxy's VmRSS by under 8 MiB; 100,001 PINGs in one
              MULTI with --max-request-bytes 64 MiB: the 100,001st is
              refused (the count bound).

Usage: multi.py [--target reference|proxy|both] --redis-server PATH --proxy PATH;
exits 77 without redis-server or redis-py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import RawConn, encode, pipelined, session  # noqa: E402

pt.require_modules("redis")
import redis  # noqa: E402

MANY = 2000


WIRE = [
    ("without MULTI", [("EXEC",), ("DISCARD",), ("EXEC", "x"), ("MULTI", "x"), ("DISCARD", "x")]),
    ("nested MULTI", [("MULTI",), ("MULTI",), ("SET", "a", "1"), ("EXEC",)]),
    ("unknown command queued", [("MULTI",), ("SET", "a", "1"), ("NOSUCH",), ("GET", "a"),
                                ("EXEC",), ("GET", "a")]),
    ("arity error queued", [("MULTI",), ("SET", "a", "2"), ("GET",), ("EXEC",), ("GET", "a")]),
    ("too many arguments queued", [("MULTI",), ("SET", "a", "2"), ("GET", "a", "b"), ("EXEC",),
                                   ("GET", "a")]),
    ("errors inside EXEC", [("MULTI",), ("SET", "a", "3"), ("INCR", "a"), ("LPUSH", "a", "x"),
                            ("GET", "a"), ("SET", "a", "4", "BOGUS"), ("SELECT", "x"),
                            ("EXEC",), ("GET", "a")]),
    ("empty transaction", [("MULTI",), ("EXEC",), ("EXEC",)]),
    ("DISCARD", [("DEL", "d"), ("MULTI",), ("SET", "d", "v"), ("DISCARD",), ("GET", "d"),
                 ("EXEC",)]),
    ("WATCH inside MULTI", [("MULTI",), ("WATCH", "a"), ("SET", "a", "5"), ("EXEC",)]),
    ("UNWATCH", [("UNWATCH",), ("MULTI",), ("UNWATCH",), ("EXEC",)]),
    ("WATCH outside MULTI", [("WATCH", "a")]),
    ("WATCH arity", [("WATCH",), ("UNWATCH", "x")]),
    ("EXEC x inside MULTI", [("MULTI",), ("SET", "a", "6"), ("EXEC", "x"), ("EXEC",), ("GET", "a")]),
    ("DISCARD x inside MULTI", [("MULTI",), ("DISCARD", "x"), ("PING",), ("EXEC",)]),
    ("MULTI x inside MULTI", [("MULTI",), ("MULTI", "x"), ("PING",), ("EXEC",)]),
    ("connection commands queued", [("MULTI",), ("PING",), ("PING", "p"), ("ECHO", "e"),
                                    ("SELECT", "0"), ("PUBLISH", "nobody-listens", "m"),
                                    ("EXEC",)]),
    ("SUBSCRIBE queued", [("MULTI",), ("SUBSCRIBE", "mch"), ("EXEC",), ("PING",),
                          ("UNSUBSCRIBE",)]),
    ("while subscribed", [("SUBSCRIBE", "sch"), ("MULTI",), ("EXEC",), ("EXEC", "x"),
                          ("GET",), ("UNSUBSCRIBE",), ("MULTI",), ("EXEC",)]),
    ("QUIT inside MULTI", [("MULTI",), ("SET", "q", "1"), ("QUIT",), ("PING",)]),
    ("MULTI after a failed EXEC", [("MULTI",), ("NOSUCH",), ("EXEC",), ("MULTI",), ("SET", "a", "7"),
                                   ("EXEC",)]),
]


def wire_steps(port, out):
    for name, cmds in WIRE:
        for i, ans in enumerate(session(port, cmds)):
            out.append((f"{name}, step {i + 1}: {' '.join(cmds[i])}", ans))


def order_steps(port, out):
    one_key = [("DEL", "o", "ol"), ("MULTI",)]
    for i in range(20):
        one_key += [("INCR", "o"), ("INCRBY", "o", "5"), ("GET", "o"), ("SET", "o", str(i)),
                    ("LPUSH", "ol", str(i)), ("LRANGE", "ol", "0", "2")]
    one_key += [("DEL", "o"), ("EXISTS", "o"), ("GET", "o"), ("EXEC",)]
    out.append(("one key, 124 commands in one EXEC", session(port, one_key)[-1]))
    around = [("SET", "p", "1"), ("INCR", "p"), ("MULTI",), ("INCR", "p"), ("GET", "p"),
              ("SET", "p2", "a"), ("EXEC",), ("GET", "p"), ("INCR", "p"), ("GET", "p2"),
              ("MULTI",), ("DEL", "p"), ("EXEC",), ("EXISTS", "p")]
    out.append(("a pipeline around transactions on the same keys", pipelined(port, around)))
    many = [("DEL", "m"), ("MULTI",)]
    for i in range(MANY):
        many.append(("INCR", "m") if i % 2 else ("SET", f"m:{i}", f"v{i}"))
    many.append(("EXEC",))
    for i in range(0, MANY, 2):
        many.append(("GET", f"m:{i}"))
    many.append(("GET", "m"))
    got = pipelined(port, many)
    exec_reply = got[2 + MANY]
    out.append((f"{MANY} queued: every QUEUED", sum(1 for a in got[2:2 + MANY]
                                                    if a == ("+", "QUEUED"))))
    out.append((f"{MANY} queued: EXEC's answers", exec_reply))
    out.append((f"{MANY} queued: the GETs after it", got[3 + MANY:]))


def redis_py_steps(port, out):
    def attempt(name, fn):
        pt.attempt(out, name, fn)

    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
                    socket_connect_timeout=pt.WATCHDOG)
    r.delete("rp", "rpl", "rph")
    attempt("redis-py pipeline(): writes and reads",
            lambda: r.pipeline().set("rp", "1").incr("rp").incrby("rp", 5).get("rp")
            .rpush("rpl", "a", "b").lrange("rpl", 0, -1).hset("rph", "f", "v").hgetall("rph")
            .delete("rp").exists("rp").execute())
    attempt("redis-py pipeline(): an error inside, raise_on_error=False",
            lambda: [repr(x) for x in r.pipeline().set("rp", "x").incr("rp").get("rp")
                     .execute(raise_on_error=False)])
    attempt("redis-py pipeline(): an error inside raises",
            lambda: r.pipeline().set("rp", "x").incr("rp").get("rp").execute())
    attempt("redis-py pipeline(): a queued unknown command",
            lambda: r.pipeline().set("rp", "y").execute_command("NOSUCH").execute())
    attempt("redis-py: rp after the aborted transaction", lambda: r.get("rp"))
    def incrs():
        r.delete("rpn")
        p = r.pipeline()
        for _ in range(500):
            p.incr("rpn")
        got = p.execute()
        return got == list(range(1, 501))
    attempt("redis-py pipeline() of 500 INCRs answers 1..500 in order", incrs)

    def watched():
        p = r.pipeline()
        p.watch("rp")
        return "watch accepted"
    attempt("redis-py pipeline().watch()", watched)
    def body(p):
        p.multi()
        p.set("rt", "1")
        p.get("rt")
    attempt("redis-py transaction() without keys to watch", lambda: r.transaction(body))
    r.close()


def run(port, label):
    out = []
    for part in (wire_steps, order_steps, redis_py_steps):
        try:
            part(port, out)
        except Exception as e:  # a part's failure is an answer too
            out.append((f"{part.__name__} (failed here)", (type(e).__name__, str(e))))
    return out


WATCH_WHY = ("Momento has no optimistic locking (no version of a key to check at EXEC), so "
             "the proxy refuses WATCH rather than run a check-and-set that could lose updates")
WATCH_ERR = ("-", "ERR momento-proxy: WATCH is not supported: Momento has no optimistic locking "
                  "(no version of a key to check at EXEC), so the proxy could not abort a "
                  "transaction whose watched key changed")
EXPECT = {
    "WATCH outside MULTI, step 1: WATCH a": pt.Expect(WATCH_ERR, WATCH_WHY),
    "redis-py pipeline().watch()": pt.Expect(("ResponseError", WATCH_ERR[1][4:]), WATCH_WHY),
}


def bound_steps(res, proxy):
    """The proxy's bounds on one MULTI (no reference: Redis has none)."""
    limit = 1 << 20
    px = pt.start_proxy(proxy, memcache=False, extra=["--max-request-bytes", str(limit)])
    try:
        port = px.ports["resp"]
        value = "v" * 8192
        n = 3 * 1024  # 24 MiB of SETs: 24 times the bound
        c = RawConn(port, timeout=pt.WATCHDOG)
        c.command("PING")
        rss0 = pt.status_kb(px.proc.pid)
        c.send(encode(("MULTI",)))
        assert c.reply() == ("+", "OK")
        answers = []
        batch = 64
        for i in range(0, n, batch):
            c.send(b"".join(encode(("SET", f"b:{j}", value)) for j in range(i, i + batch)))
            answers += [c.reply() for _ in range(batch)]
        rss1 = pt.status_kb(px.proc.pid)
        first_err = next((i for i, a in enumerate(answers) if a[0] == "-"), None)
        err = answers[first_err] if first_err is not None else None
        res.check("bound: the command past --max-request-bytes is refused with the proxy's "
                  "error", err is not None and err[1].startswith(
                      "ERR momento-proxy: a transaction queues at most 100000 commands and "
                      f"--max-request-bytes ({limit})"), f"first error {err!r} at {first_err}")
        # Each SET keeps about 8.3 KB: the bound is reached within ~126 of them.
        res.check("bound: refused near 1 MiB of arguments, QUEUED before",
                  first_err is not None and 100 <= first_err <= 130 and
                  all(a == ("+", "QUEUED") for a in answers[:first_err]),
                  f"first error at {first_err}")
        res.check("bound: QUEUED after it (kept nowhere), as Redis answers after a refusal",
                  first_err is not None and
                  all(a == ("+", "QUEUED") for a in answers[first_err + 1:]),
                  repr({a for a in answers[first_err + 1:]}) if first_err is not None else "")
        res.check("bound: EXEC then answers EXECABORT", c.command("EXEC") ==
                  ("-", "EXECABORT Transaction discarded because of previous errors."), "")
        res.check("bound: nothing of it was run", c.command("EXISTS", "b:0") == (":", 0), "")
        print(f"# VmRSS {rss0} kB before the MULTI, {rss1} kB after 24 MiB queued")
        res.check_memory(proxy, "bound: 24 MiB of queued SETs raised VmRSS by under 8 MiB",
                         rss1 - rss0 < 8 * 1024, f"{rss0} kB -> {rss1} kB")
        res.check("bound: the connection serves on", c.command("PING") == ("+", "PONG"), "")
        c.close()
    finally:
        status = px.stop()
    res.check("momento-proxy --max-request-bytes 1 MiB exits 0 on SIGTERM", status == 0,
              f"exit status {status}; stderr:\n{px.log_tail()}")
    px = pt.start_proxy(proxy, memcache=False, extra=["--max-request-bytes", str(64 << 20)])
    try:
        c = RawConn(px.ports["resp"], timeout=pt.WATCHDOG)
        c.send(encode(("MULTI",)))
        assert c.reply() == ("+", "OK")
        ping = encode(("PING",))
        count, errors, first_err = 100001, 0, None
        for i in range(0, count, 1000):
            k = min(1000, count - i)
            c.send(ping * k)
            for j in range(k):
                a = c.reply()
                if a[0] == "-":
                    errors += 1
                    first_err = i + j if first_err is None else first_err
        res.check("bound: 100,001 PINGs in one MULTI: the 100,001st refused",
                  errors == 1 and first_err == 100000, f"{errors} errors, first at {first_err}")
        res.check("bound: ... and EXEC answers EXECABORT", c.command("EXEC") ==
                  ("-", "EXECABORT Transaction discarded because of previous errors."), "")
        c.close()
    finally:
        status = px.stop()
    res.check("momento-proxy --max-request-bytes 64 MiB exits 0 on SIGTERM", status == 0,
              f"exit status {status}; stderr:\n{px.log_tail()}")


def main():
    a = pt.parse_common_args(sys.argv[1:])
    pt.run_against_redis(a, pt.Results(), run, EXPECT, 3600,
                         proxies=(([], "momento-proxy"),
                                  (["--max-in-flight", "2"], "momento-proxy --max-in-flight 2")),
                         after=lambda res: bound_steps(res, a.proxy))

if __name__ == "__main__":
    main()
