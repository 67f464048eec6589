#!/usr/bin/env python3
"""Many commands in flight, replies in order, many connections at once
(issue 33 item 4), checked with redis-py, pymemcache and raw sockets, each
run proven against redis-server / memcached first:

  - a redis-py pipeline (transaction=False) of 1000 mixed commands, the
    replies compared one by one with redis-server's;
  - 50 threads, each its own connection and keys, 200 commands each in
    pipelines of 10, every reply checked against the thread's own model;
  - an MGET of 100 keys (half missing), and 20 threads reading one hot key;
  - 20,000 commands written on one connection while the replies are read
    (the client sending faster than it reads), every reply in order;
  - memcached: a text get of 100 keys, 20 threads x 200 pipelined text
    commands, 100 binary getkq + noop in one write;
  - redis-benchmark, a short run with pipelines of 16: it must finish
    without errors.

Usage: pipeline.py [--target reference|proxy|both] --redis-server PATH
                   --memcached PATH --proxy PATH [--redis-benchmark PATH]"""
import os
import random
import socket
import subprocess
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

THREAD_DEADLINE = 60


def client(port):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
                       socket_connect_timeout=pt.WATCHDOG)


def norm(v):
    if isinstance(v, Exception):
        return ("error", str(v))
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    if isinstance(v, dict):
        return sorted(v.items())
    return v


def mixed_pipeline(port):
    """1000 commands of every kind in one non-transaction pipeline; the
    replies, in order (sets sorted: Redis gives them no order)."""
    rnd = random.Random(33)
    r = client(port)
    p = r.pipeline(transaction=False)
    for i in range(1000):
        k = f"pl:{rnd.randrange(40)}"
        op = rnd.randrange(16)
        if op == 0:
            p.set(k, f"v{i}")
        elif op == 1:
            p.get(k)
        elif op == 2:
            p.incr(f"pl:n{rnd.randrange(5)}")
        elif op == 3:
            p.delete(k)
        elif op == 4:
            p.exists(k, f"pl:{rnd.randrange(40)}")
        elif op == 5:
            p.mget([f"pl:{rnd.randrange(40)}" for _ in range(5)])
        elif op == 6:
            p.set(k, f"w{i}", nx=True)
        elif op == 7:
            p.getdel(k)
        elif op == 8:
            p.hset(f"pl:h{rnd.randrange(3)}", f"f{rnd.randrange(5)}", i)
        elif op == 9:
            p.hget(f"pl:h{rnd.randrange(3)}", f"f{rnd.randrange(5)}")
        elif op == 10:
            p.rpush(f"pl:l{rnd.randrange(3)}", i)
        elif op == 11:
            p.lrange(f"pl:l{rnd.randrange(3)}", 0, -1)
        elif op == 12:
            p.sadd(f"pl:s{rnd.randrange(3)}", rnd.randrange(10))
        elif op == 13:
            p.zadd(f"pl:z{rnd.randrange(3)}", {f"m{rnd.randrange(10)}": i})
        elif op == 14:
            p.zrange(f"pl:z{rnd.randrange(3)}", 0, -1, withscores=True)
        else:
            p.echo(f"e{i}")
    out = [norm(v) for v in p.execute(raise_on_error=False)]
    r.close()
    return out


def run_workers(work, n, what):
    """work(0) .. work(n - 1) on threads of their own (run_threads); each
    returns None when every reply was right, else what was wrong (an
    exception is what was wrong too). Returns (how many were right, what
    was wrong, sorted, how many still run)."""
    done, errors = [], []

    def one(i):
        try:
            wrong = work(i)
        except Exception as e:
            wrong = f"{what} {i}: {type(e).__name__}: {e}"
        if wrong:
            errors.append(wrong)
        else:
            done.append(i)

    alive = run_threads(one, n)
    return len(done), sorted(errors), alive


def run_threads(target, n):
    """target(0) .. target(n - 1), each on a thread of its own, waited
    for THREAD_DEADLINE in all (a watchdog); returns how many still run."""
    ts = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join(max(0.1, THREAD_DEADLINE - (time.monotonic() - t0)))
    return sum(t.is_alive() for t in ts)


def thread_worker(port, n):
    """200 commands in pipelines of 10 on the thread's own keys; each
    reply checked against what the thread wrote; what was wrong, or None."""
    r = client(port)
    model, counter = {}, 0
    for batch in range(20):
        p = r.pipeline(transaction=False)
        want = []
        for j in range(10):
            i = batch * 10 + j
            k = f"th{n}:k{i % 7}"
            op = i % 5
            if op == 0:
                p.set(k, f"{n}-{i}")
                model[k] = f"{n}-{i}".encode()
                want.append(True)
            elif op == 1:
                p.get(k)
                want.append(model.get(k))
            elif op == 2:
                p.incr(f"th{n}:c")
                counter += 1
                want.append(counter)
            elif op == 3:
                keys = [f"th{n}:k{x}" for x in (0, 3, 6)]
                p.mget(keys)
                want.append([model.get(x) for x in keys])
            else:
                p.delete(k)
                want.append(1 if k in model else 0)
                model.pop(k, None)
        got = p.execute(raise_on_error=False)
        for w, g in zip(want, got):
            if w != g:
                return f"thread {n} batch {batch}: wanted {w!r}, got {g!r}"
        if len(got) != len(want):
            return f"thread {n}: {len(got)} replies for {len(want)} commands"
    r.close()
    return None


def many_connections(port, threads=50):
    done, errors, alive = run_workers(lambda n: thread_worker(port, n), threads, "thread")
    return {"finished": done, "stuck": alive, "first errors": errors[:3]}


def multiget(port):
    r = client(port)
    r.mset({f"mg:{i}": f"value-{i}" for i in range(0, 100, 2)})
    got = r.mget([f"mg:{i}" for i in range(100)])
    want = [f"value-{i}".encode() if i % 2 == 0 else None for i in range(100)]
    raw = RawConn(port)
    wire = raw.command("MGET", *[f"mg:{i}" for i in range(100)])
    raw.close()
    return {"redis-py right": got == want, "wire": wire}


def hot_key(port, threads=20, reads=100):
    r = client(port)
    r.set("hot", "the hot value")
    bad, done = [], []

    def reader():
        c = client(port)
        try:
            for _ in range(reads // 10):
                p = c.pipeline(transaction=False)
                for _ in range(10):
                    p.get("hot")
                for v in p.execute():
                    if v != b"the hot value":
                        bad.append(v)
            done.append(1)
        except Exception as e:
            bad.append(repr(e))

    run_threads(lambda _: reader(), threads)
    return {"finished": len(done), "wrong": bad[:3]}


def flood(port, n=20000):
    """n commands written without waiting (another thread writes while
    this one reads), so the server must keep them in order while the
    client reads slower than it sends."""
    c = RawConn(port, timeout=pt.WATCHDOG)
    value = b"x" * 100
    cmds = []
    for i in range(n):
        k = b"fl:%d" % (i // 2 % 100)
        cmds.append(encode([b"SET", k, value + b"%d" % i]) if i % 2 == 0 else encode([b"GET", k]))
    data = b"".join(cmds)
    err = []

    def writer():
        try:
            c.sock.sendall(data)
        except OSError as e:
            err.append(repr(e))

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    wrong = None
    try:
        for i in range(n):
            rep = c.reply()
            want = ("+", "OK") if i % 2 == 0 else ("$", value + b"%d" % (i - 1))
            if rep != want and wrong is None:
                wrong = (i, want, rep)
    except Exception as e:
        wrong = wrong or ("after", i, repr(e))
    w.join(20)
    c.close()
    return {"replies in order": wrong is None, "first wrong": wrong, "write errors": err}


def mc_checks(port):
    out = {}
    c = Client(("127.0.0.1", port), default_noreply=False, timeout=pt.WATCHDOG,
               connect_timeout=pt.WATCHDOG)
    try:
        c.set_many({f"mm:{i}": b"%d" % i for i in range(0, 100, 2)})
        got = c.get_many([f"mm:{i}" for i in range(100)])
        out["get of 100 keys"] = sorted(got.items()) == sorted(
            (f"mm:{i}", b"%d" % i) for i in range(0, 100, 2))
    except Exception as e:
        out["get of 100 keys"] = repr(e)

    def worker(n):
        """200 text commands in batches of 10 on the connection's own keys;
        what was wrong, or None."""
        conn = mc.Conn(port, timeout=pt.WATCHDOG)
        for batch in range(20):
            data, kinds, want = b"", [], []
            for j in range(10):
                i = batch * 10 + j
                k = b"mt%d:%d" % (n, i // 2 % 5)
                if i % 2 == 0:
                    data += b"set %s %d 0 %d\r\n%s\r\n" % (k, n, len(b"%d" % i), b"%d" % i)
                    kinds.append("line")
                    want.append([b"STORED"])
                else:
                    data += b"get %s\r\n" % k
                    kinds.append("items")
                    prev = b"%d" % (i - 1)
                    want.append([b"VALUE %s %d %d" % (k, n, len(prev)), prev, b"END"])
            got = conn.text(data, *kinds)
            if got != want:
                return f"connection {n} batch {batch}: {got!r} != {want!r}"
        conn.close()
        return None

    done, errors, _ = run_workers(worker, 20, "connection")
    out["20 connections x 200 text commands"] = {"finished": done, "errors": errors[:2]}
    try:
        b = mc.Conn(port, timeout=pt.WATCHDOG)
        reqs = b"".join(mc.bin_request(mc.GETKQ, f"mm:{i}", opaque=i) for i in range(100))
        b.send(reqs + mc.bin_request(mc.NOOP, opaque=1000))
        hits = []
        while True:
            r = b.bin_response()
            if r["op"] == mc.NOOP:
                break
            hits.append((r["opaque"], r["key"], r["value"]))
        b.close()
        out["binary getkq x100 + noop"] = hits == [
            (i, b"mm:%d" % i, b"%d" % i) for i in range(0, 100, 2)]
    except Exception as e:
        out["binary getkq x100 + noop"] = repr(e)
    return out


def benchmark(path, port):
    if not path:
        return "redis-benchmark not found"
    try:
        p = subprocess.run([path, "-h", "127.0.0.1", "-p", str(port), "-t", "set,get", "-n", "5000",
                            "-c", "20", "-P", "16", "-q"], capture_output=True, timeout=60, text=True)
    except subprocess.TimeoutExpired:
        return "did not finish in 60 s"
    lines = [ln.split(":")[0] for ln in p.stdout.replace("\r", "\n").splitlines()
             if "requests per second" in ln]
    return (p.returncode, sorted(set(lines)), "error" in (p.stdout + p.stderr).lower())


def run_all(resp_port, mc_port, bench):
    rec = []
    t0 = time.monotonic()
    steps = [
        ("redis-py pipeline of 1000 mixed commands", lambda: mixed_pipeline(resp_port)),
        ("50 connections x 200 commands", lambda: many_connections(resp_port)),
        ("MGET of 100 keys", lambda: multiget(resp_port)),
        ("20 readers of one hot key", lambda: hot_key(resp_port)),
        ("20,000 commands sent while reading", lambda: flood(resp_port)),
        ("redis-benchmark -P 16", lambda: benchmark(bench, resp_port)),
    ]
    for name, fn in steps:
        try:
            rec.append((name, fn()))
        except Exception as e:
            rec.append((name, ("exception", type(e).__name__, str(e))))
    if mc_port:
        for name, ans in mc_checks(mc_port).items():
            rec.append((f"memcached: {name}", ans))
    print(f"# {time.monotonic() - t0:.1f} s")
    return rec


def compare_pipeline(res, ref, got):
    """The 1000-reply pipeline is compared reply by reply (the first few
    differences shown); the rest as whole answers."""
    rd, gd = dict(ref), dict(got)
    name = "redis-py pipeline of 1000 mixed commands"
    a, b = rd.pop(name, None), gd.pop(name, None)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        diffs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
        res.check(name, not diffs, f"{len(diffs)} replies differ; first: " + "; ".join(
            f"#{i}: redis-server {x!r}, proxy {y!r}" for i, x, y in diffs[:5]))
    else:
        res.check(name, a == b, f"redis-server: {str(a)[:300]}; proxy: {str(b)[:300]}")
    pt.compare_records(res, "reference", list(rd.items()), list(gd.items()), {})


def main():
    a = pt.parse_common_args(sys.argv[1:], extra=["--redis-benchmark"])
    res = pt.Results()
    ref = pt.run_on_redis_and_memcached(a, lambda rp, mp: run_all(rp, mp, a.redis_benchmark))
    # The checks that carry their own model must come out clean against
    # the real servers, or the model is wrong.
    rd = dict(ref)
    res.check("reference: 50 connections all right",
              rd["50 connections x 200 commands"] == {"finished": 50, "stuck": 0, "first errors": []},
              str(rd["50 connections x 200 commands"]))
    res.check("reference: hot key all right",
              rd["20 readers of one hot key"] == {"finished": 20, "wrong": []})
    res.check("reference: flood in order",
              rd["20,000 commands sent while reading"]["replies in order"] is True,
              str(rd["20,000 commands sent while reading"])[:300])
    res.check("reference: MGET right", rd["MGET of 100 keys"]["redis-py right"] is True)
    res.check("reference: memcached checks right",
              rd["memcached: get of 100 keys"] is True
              and rd["memcached: binary getkq x100 + noop"] is True
              and rd["memcached: 20 connections x 200 text commands"] == {"finished": 20, "errors": []},
              str([x for x in ref if x[0].startswith("memcached")])[:400])
    pt.end_if_reference(a, res, ref)
    pt.require_program(a.proxy, "momento-proxy")
    px = pt.start_proxy(a.proxy)
    try:
        got = run_all(px.ports["resp"], px.ports["memcache"], a.redis_benchmark)
    finally:
        status = px.stop()
    compare_pipeline(res, ref, got)
    res.check("momento-proxy exits 0 on SIGTERM", status == 0, f"exit status {status}")
    res.exit()


if __name__ == "__main__":
    main()
