#!/usr/bin/env python3
"""momento-proxy when Momento is slow, failing or far behind the client
(issue 33 item 4): no real server to compare with here, so each check
states what must happen. momento-local's fault injection is driven by the
proxy's --header (sent with every Momento call):

- a slow backend never blocks other connections, and a connection's
  replies stay in order behind a slow one;
- Momento's errors and timeouts reach the client as errors, with the
  reason, never as misses;
- SIGTERM answers the commands in flight, refuses new connections, exits 0;
- --max-connections refuses one more with Redis's error;
- a client that sends without reading is not read past the limits: the
  proxy's memory stays bounded, and every reply arrives once it reads;
- a request over --max-request-bytes is refused as Redis refuses one over
  proto-max-bulk-len;
- ZUNIONSTORE over plain sets (computed by the proxy) whose union Momento
  could not store is refused before the destination is touched;
- duplicate gets in flight share a call, distinct ones GetBatch calls of
  at most --batch-keys keys.

Issue 46: no check asserts an elapsed time. Each asserts an order - what
had or had not happened on one connection when something happened on
another, while momento-local held a call - or the proxy's INFO counters.
"""
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
import rawmc  # noqa: E402
from rawresp import Closed, RawConn, encode  # noqa: E402


# How long momento-local holds the gets the tests hold. No check waits for
# it or measures it: it is the window in which a test makes its
# observations (another connection's reply, a refused connection, commands
# read while the call is in flight), each a loopback round trip of
# milliseconds even beside two CPU-bound jobs, and each check also says
# whether it fell inside the window (the held connection had no reply yet,
# the duplicates found the call in flight). Only its end releases the
# held call, so each hold costs the test this much.
HOLD_MS = 3000
# How long momento-local holds the gets that must end at --timeout-ms 300:
# below the proxy's default deadline (5000 ms), so that only the option's
# deadline can make their answer a TIMEOUT; far above 300 ms, so that the
# deadline comes first with 3.7 s to spare.
LATE_MS = 4000


def readable(conn):
    """Whether conn has a reply (or EOF) waiting now, without waiting for one."""
    if conn.buf:
        return True
    r, _, _ = select.select([conn.sock], [], [], 0)
    return bool(r)


def wait_in_flight(port, what, n=1):
    """Waits (bounded) until the proxy's INFO shows n Momento requests in
    flight: commands sent before are then read and their calls made."""
    pt.wait_until(lambda: info_fields(port)["momento_in_flight"] >= n, pt.WATCHDOG, what)


def refused_now(port):
    """One attempt at a new connection: True when it is refused or closed
    without an answer, False when a PING on it is answered."""
    try:
        d = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    except OSError:
        return True
    try:
        d.sendall(encode(["PING"]))
        return d.recv(100) == b""
    except OSError:  # reset: the listener closed with it in its queue
        return True
    finally:
        d.close()


def slow_backend(res, proxy_path):
    # Gets are held HOLD_MS; everything else is immediate. Every check is
    # of order: what had (not) happened on one connection when something
    # happened on another. No elapsed time is asserted.
    px = pt.start_proxy(proxy_path, memcache=False,
                        extra=["--header", f"delay-ms={HOLD_MS}",
                               "--header", "delay-rpcs=get get-batch"])
    try:
        a, b = RawConn(px.port), RawConn(px.port)
        a.command("SET", "slow:k", "v")
        a.command("SET", "slow:k2", "v2")
        # A: two slow GETs, then a SET pipelined behind them. Once INFO
        # shows both in flight, all three are read and the GETs are held by
        # the server. Two: with --batch 2 (the default) B's SET is then
        # queued to share a SetBatch, which once left only when an RPC
        # completed - B waited for A's gets (issue 46).
        a.send(encode(["GET", "slow:k"]) + encode(["GET", "slow:k2"]) +
               encode(["SET", "slow:other", "x"]))
        wait_in_flight(px.port, "A's GETs in flight", n=2)
        # B: answered while A's GETs are still held. A proxy that let the
        # slow calls hold up other connections would have answered A first
        # (B's SET going out only after them), so A would have its replies.
        got_b = b.command("SET", "slow:b", "1")
        a_answered = readable(a)
        res.check("another connection is answered while gets are held",
                  got_b == ("+", "OK") and not a_answered,
                  f"B got {got_b!r}; A {'had' if a_answered else 'had not'} been answered then")
        r = [a.reply() for _ in range(3)]
        res.check("the held connection's replies arrive in order after the gets",
                  r == [("$", b"v"), ("$", b"v2"), ("+", "OK")], repr(r))

        # SIGTERM with a get in flight: new connections refused while it is
        # still held, then it is answered, then its connection closed; exit 0.
        c = RawConn(px.port)
        c.send(encode(["GET", "slow:k"]))
        wait_in_flight(px.port, "the GET in flight before SIGTERM")
        answered_before = readable(c)
        px.proc.send_signal(signal.SIGTERM)
        # Polled: a connection may still be served until the proxy reads
        # the signal. Refused is only meaningful while the get is held:
        # after it the proxy exits and refuses everything anyway.
        try:
            pt.wait_until(lambda: refused_now(px.port), pt.WATCHDOG, "a new connection refused")
            refused = True
        except TimeoutError:
            refused = False
        held_still = not readable(c)
        res.check("after SIGTERM no new connection is served, while the get in flight is held",
                  refused and held_still and not answered_before,
                  f"refused {refused}, the get answered before SIGTERM {answered_before}, "
                  f"by the refusal {not held_still}")
        reply = c.reply_or("closed unanswered")
        res.check("after SIGTERM the get in flight is answered", reply == ("$", b"v"), repr(reply))
        try:
            c.reply()
            closed = False
        except Closed:
            closed = True
        res.check("then its connection is closed", closed)
        status = px.proc.wait(timeout=2 * pt.WATCHDOG)
        res.check("momento-proxy exits 0 after draining", status == 0, f"status {status}")
    finally:
        px.stop(signal.SIGKILL)


def failing_backend(res, proxy_path):
    with pt.start_proxy(proxy_path, memcache=False,
                        extra=["--header", "return-error=internal",
                               "--header", "error-rpcs=get get-batch keys-exist"]) as px:
        c = RawConn(px.port)
        got = c.command("SET", "err:k", "v")
        res.check("with gets failing, a set still succeeds", got == ("+", "OK"), repr(got))
        got = c.command("GET", "err:k")
        res.check("a failed get is an error naming Momento's reason, not a miss",
                  got[0] == "-" and got[1].startswith("ERR momento INTERNAL_SERVER_ERROR"),
                  repr(got))
        got = c.command("MGET", "err:k", "err:j")
        res.check("a failed MGET is an error", got[0] == "-" and "momento" in got[1], repr(got))
        got = c.command("EXISTS", "err:k")
        res.check("a failed EXISTS is an error", got[0] == "-" and "momento" in got[1], repr(got))
        got = c.command("PING")
        res.check("the connection stays usable after errors", got == ("+", "PONG"), repr(got))
    # The same through the memcache port: a one-key get, a multi-get and a
    # binary get each answer the failure with Momento's reason.
    with pt.start_proxy(proxy_path, resp=False,
                        extra=["--header", "return-error=internal",
                               "--header", "error-rpcs=get get-batch get-with-hash"]) as px:
        m = rawmc.Conn(px.ports["memcache"])
        got = m.text(b"set err:k 0 0 1\r\nv\r\n", "line")[0]
        res.check("memcache: with gets failing, a set is STORED", got == [b"STORED"], repr(got))
        for cmd in (b"get err:k\r\n", b"get err:k err:j\r\n"):
            got = m.text(cmd, "items")[0]
            res.check(f"memcache: a failed {cmd.strip().decode()!r} is SERVER_ERROR with the reason",
                      len(got) == 1 and got[0].startswith(b"SERVER_ERROR momento INTERNAL_SERVER_ERROR"),
                      repr(got))
        mb = rawmc.Conn(px.ports["memcache"])  # the first byte picks the protocol
        mb.send(rawmc.bin_request(rawmc.GET, "err:k", opaque=7))
        r = mb.bin_response()
        res.check("memcache binary: a failed get is an internal error (0x84) with the reason",
                  r["status"] == 0x84 and r["opaque"] == 7 and b"INTERNAL_SERVER_ERROR" in r["value"],
                  repr(r))
        got = m.text(b"version\r\n", "line")[0]
        res.check("memcache: the connection stays usable after errors",
                  got[0].startswith(b"VERSION"), repr(got))
    # A get past --timeout-ms. What tells a deadline's error from the
    # server's answer is the answer, not its time: momento-local holds the
    # get LATE_MS, inside the proxy's default deadline (5000 ms), and
    # then answers it a miss. So a TIMEOUT can only be the 300 ms deadline
    # the option set; a proxy that ignored --timeout-ms would answer nil /
    # END. (The time it took is not asserted: a deadline that fires late is
    # still a deadline, and a machine under load makes it late.)
    late = ["--timeout-ms", "300", "--header", f"delay-ms={LATE_MS}",
            "--header", "delay-rpcs=get get-batch"]
    with pt.start_proxy(proxy_path, memcache=False, extra=late) as px:
        c = RawConn(px.port)
        got = c.command("GET", "late:k")
        res.check("a get past --timeout-ms is a TIMEOUT error, not a miss",
                  got[0] == "-" and "TIMEOUT" in got[1], repr(got))
    with pt.start_proxy(proxy_path, resp=False, extra=late) as px:
        m = rawmc.Conn(px.ports["memcache"])
        got = m.text(b"get late:k\r\n", "items")[0]
        res.check("memcache: a get past --timeout-ms is SERVER_ERROR ... TIMEOUT, not a miss",
                  len(got) == 1 and got[0].startswith(b"SERVER_ERROR momento TIMEOUT"), repr(got))


def limits(res, proxy_path):
    with pt.start_proxy(proxy_path, memcache=False,
                        extra=["--max-connections", "2", "--max-request-bytes", "65536",
                               "--max-in-flight", "8"]) as px:
        a, b = RawConn(px.port), RawConn(px.port)
        a.command("PING"), b.command("PING")
        c = RawConn(px.port)
        got = c.reply_or("closed")
        res.check("a connection over --max-connections gets Redis's error",
                  got == ("-", "ERR max number of clients reached"), repr(got))
        res.check("and is closed", c.closed_after()[0] == "closed")
        b.close()

        def served():
            # Until the proxy has seen b's close, a new one is still over
            # the limit and refused: polled, the wait only a watchdog.
            d = RawConn(px.port)
            try:
                return d.command("PING") == ("+", "PONG")
            except Closed:
                return False
            finally:
                d.close()
        try:
            ok = pt.wait_until(served, pt.WATCHDOG, "a connection served after one closed")
        except TimeoutError:
            ok = False
        res.check("a connection closing makes room for another", ok)

        got = a.command("SET", "big", "x" * 70000)
        res.check("a value over --max-request-bytes is refused as Redis refuses one",
                  got == ("-", "ERR Protocol error: invalid bulk length"), repr(got))
        res.check("and the connection is closed", a.closed_after()[0] == "closed")


def slow_reader(res, proxy_path):
    """A client that sends 20,000 GETs of a 64 KiB value (1.3 GB of replies)
    and reads nothing for a while: the proxy stops reading it, so its memory
    stays bounded; then every reply arrives, in order. With --max-in-flight
    16 the proxy may read 16 commands past what the client took, and a few
    reads' worth (64 KiB each, and the buffer's slack) into its buffer."""
    with pt.start_proxy(proxy_path, memcache=False, extra=["--max-in-flight", "16"]) as px:
        c = RawConn(px.port, timeout=60)
        value = b"v" * 65536
        c.command("SET", "wide", value)
        base = pt.status_kb(px.proc.pid)
        n = 20000
        sent = threading.Event()

        def send_all():
            data = encode(["GET", "wide"]) * 500
            try:
                for _ in range(n // 500):
                    c.sock.sendall(data)
            except OSError:
                pass
            sent.set()

        t = threading.Thread(target=send_all, daemon=True)
        t.start()
        # Not reading for a while: the proxy must stop reading too. The
        # sleep gates no pass: a proxy that stops reading stays under both
        # bounds below however long it is given; it is the time a proxy
        # that reads on is given to cross them (all 480 KB of GETs in a
        # fraction of it, when idle).
        time.sleep(2.0)
        peak = pt.status_kb(px.proc.pid)
        res.check("a client that does not read is not read: the proxy's memory stays bounded",
                  peak - base < 128 * 1024, f"RSS grew {(peak - base) // 1024} MB")
        # What the proxy read of it (INFO, from another connection): the
        # rest waits in the kernel's buffers.
        info = RawConn(px.port).command("INFO")[1].decode()
        read = int(info.split("total_net_input_bytes:")[1].split()[0])
        total = n * len(encode(["GET", "wide"]))
        res.check("the proxy stopped reading the commands it cannot answer yet",
                  read < 3 * 80 * 1024 < total, f"read {read} of {total} bytes")
        good = 0
        for i in range(n):
            try:
                r = c.reply()
            except (socket.timeout, Closed) as e:
                info = RawConn(px.port).command("INFO")[1].decode()
                state = [l for l in info.split("\r\n") if "momento_" in l or "net_" in l]
                res.fail("every reply arrives once the client reads",
                         f"reply {i}: {e!r}; proxy: {state}")
                break
            if r != ("$", value):
                res.fail("every reply arrives once the client reads", f"reply {i}: {r!r:.80}")
                break
            good += 1
        else:
            res.ok("every reply arrives once the client reads")
        t.join(timeout=10)


def union_limit(res, proxy_path):
    # Two sets of 3,000 distinct 1,000-byte members (3 MB each, within
    # Momento's 5 MiB item limit); their union (6 MB) is not.
    with pt.start_proxy(proxy_path, memcache=False) as px:
        c = RawConn(px.port, timeout=pt.WATCHDOG)
        for name in ("s1", "s2"):
            for chunk in range(30):
                members = [f"{name}-{chunk * 100 + i:06d}".ljust(1000, ".") for i in range(100)]
                got = c.command("SADD", name, *members)
                if got != (":", 100):
                    res.check(f"SADD {name} chunk {chunk} adds 100", False, repr(got))
                    return
        c.command("ZADD", "zd", "7", "kept")
        got = c.command("ZUNIONSTORE", "zd", "2", "s1", "s2")
        res.check("a union over Momento's item limit is an error naming the limit",
                  got[0] == "-" and "LIMIT_EXCEEDED" in got[1] and "item limit" in got[1],
                  repr(got))
        got = c.command("ZRANGE", "zd", "0", "-1", "WITHSCORES")
        res.check("and the destination is as it was", got == ("*", [("$", b"kept"), ("$", b"7")]),
                  repr(got)[:200])
        got = c.command("ZUNIONSTORE", "zd", "1", "s1")
        res.check("a union within the limit is stored", got == (":", 3000), repr(got))
        got = c.command("ZCARD", "zd")
        res.check("with every member", got == (":", 3000), repr(got))
        c.close()


def big_replies_before_a_wait(res, proxy_path):
    # Replies over the output limit (4 MiB) ahead of a command that waits
    # for an earlier write of its key: once they are written the waiting
    # command must run (a stale wait once left such a connection unwatched).
    with pt.start_proxy(proxy_path, memcache=False) as px:
        c = RawConn(px.port, timeout=pt.WATCHDOG)
        big = "b" * (4 << 20) + "x" * 100000
        c.command("SET", "big", big)
        ok, why = True, ""
        for round_ in range(10):
            cmds = [("GET", "big"), ("GET", "big"), ("SET", f"k{round_}", "v"),
                    ("GET", f"k{round_}"), ("PING",)]
            c.send(b"".join(encode(x) for x in cmds))
            try:
                got = [c.reply() for _ in cmds]
            except (Closed, socket.timeout) as e:
                ok, why = False, f"round {round_}: {type(e).__name__}"
                break
            want = [("$", big.encode()), ("$", big.encode()), ("+", "OK"), ("$", b"v"),
                    ("+", "PONG")]
            if got != want:
                ok, why = False, f"round {round_}: {[repr(g)[:40] for g in got]}"
                break
        res.check("a command waiting on its key runs after replies over the output limit", ok, why)
        c.close()


# Why shared_calls and batch_keys assert no exact batch count: a queued get
# leaves at most 1 ms after the first of its queue (libmomento's batching
# wait bound, MOMENTO_BATCH_DEFAULT_MAX_WAIT_US), so whether 20 pipelined
# gets leave as one batch or are split across two flushes depends on how
# fast the proxy reads them - one batch of 20 asserted the proxy's speed.
# What the order of events fixes is checked instead: a get sent while
# another call is in flight (observed in INFO) with --batch 1 is queued,
# never sent at once; gets of a key whose call is in flight join it; and
# queued gets leave in GetBatch calls of at most --batch-keys keys.


def held_then(a, port, first, rest):
    """Sends `first` on a, waits until its call is in flight (held by the
    server), then sends `rest`: every command of `rest` is read while that
    call is held. Returns the replies to all of them, in order."""
    a.send(encode(first))
    wait_in_flight(port, f"{first} in flight")
    a.send(b"".join(encode(c) for c in rest))
    return [a.reply() for _ in range(1 + len(rest))]


def shared_calls(res, proxy_path):
    # One GET of share:hot held by the server (delay-keys: no other key's
    # call is held) and, once it is in flight, 4 more GETs of share:hot and
    # GETs of 20 other keys, with batching from 1 call in flight: the
    # duplicates join the held call (coalesced); the 20 others are queued
    # and leave in GetBatch calls. INFO says so.
    px = pt.start_proxy(proxy_path, memcache=False,
                        extra=["--batch", "1", "--header", f"delay-ms={HOLD_MS}",
                               "--header", "delay-rpcs=get get-batch",
                               "--header", "delay-keys=share:hot"])
    try:
        a = RawConn(px.port)
        keys = [f"share:{i}" for i in range(20)]
        for k in ["share:hot"] + keys:
            a.command("SET", k, k)
        before = info_fields(px.port)
        replies = held_then(a, px.port, ["GET", "share:hot"],
                            [["GET", "share:hot"]] * 4 + [["GET", k] for k in keys])
        want = [("$", b"share:hot")] * 5 + [("$", k.encode()) for k in keys]
        res.check("coalesced and batched gets answer each its own value", replies == want,
                  repr(replies[:3]))
        after = info_fields(px.port)
        d = {f: after[f] - before[f] for f in
             ("momento_coalesced_gets", "momento_batches", "momento_batched_keys")}
        print(f"# shared calls: {d}")
        res.check("INFO counts the 4 duplicates of the held get as coalesced",
                  d["momento_coalesced_gets"] == 4, repr(d))
        # At least one batch: the 20 were read from one write and queued
        # together; only 19 gaps of over 1 ms each between them would send
        # every one alone. A batcher that is off counts none.
        res.check("INFO counts GetBatch calls for the 20 gets queued behind it",
                  d["momento_batches"] >= 1
                  and 2 * d["momento_batches"] <= d["momento_batched_keys"] <= 20,
                  repr(d))
    finally:
        px.stop(signal.SIGKILL)


def batch_keys(res, proxy_path):
    # --batch-keys 8: the same 20 queued gets leave in GetBatches of at most
    # 8 keys (three, when they leave together); a value out of range is
    # refused.
    px = pt.start_proxy(proxy_path, memcache=False,
                        extra=["--batch", "1", "--batch-keys", "8",
                               "--header", f"delay-ms={HOLD_MS}",
                               "--header", "delay-rpcs=get get-batch",
                               "--header", "delay-keys=bk:0"])
    try:
        a = RawConn(px.port)
        keys = [f"bk:{i}" for i in range(21)]
        for k in keys:
            a.command("SET", k, k)
        before = info_fields(px.port)
        replies = held_then(a, px.port, ["GET", keys[0]], [["GET", k] for k in keys[1:]])
        res.check("gets batched 8 at a time answer each its own value",
                  replies == [("$", k.encode()) for k in keys], repr(replies[:3]))
        after = info_fields(px.port)
        d = {f: after[f] - before[f] for f in ("momento_batches", "momento_batched_keys")}
        print(f"# --batch-keys 8: {d}")
        # No batch over 8 keys: their sum is at most 8 per batch. (When
        # the 20 leave in one flush, a proxy ignoring the option makes one
        # batch of 20 and fails this.)
        res.check("--batch-keys 8: the queued gets leave in batches of at most 8",
                  d["momento_batches"] >= 1
                  and d["momento_batched_keys"] <= 8 * d["momento_batches"],
                  repr(d))
    finally:
        px.stop(signal.SIGKILL)
    bad = subprocess.run([proxy_path, "--batch-keys", "1", "--resp-port", "0"],
                         capture_output=True, text=True, timeout=pt.WATCHDOG,
                         stdin=subprocess.DEVNULL)
    res.check("--batch-keys 1 is refused with exit status 2 and the reason",
              bad.returncode == 2 and "--batch-keys" in bad.stderr, repr((bad.returncode, bad.stderr)))


def info_fields(port):
    info = RawConn(port).command("INFO")[1].decode()
    return {k: int(v) for k, v in (l.split(":", 1) for l in info.split("\r\n") if ":" in l)
            if v.isdigit()}


def main():
    pt.run_proxy_checks(slow_backend, failing_backend, limits, slow_reader, union_limit,
                        big_replies_before_a_wait, shared_calls, batch_keys)

if __name__ == "__main__":
    main()
