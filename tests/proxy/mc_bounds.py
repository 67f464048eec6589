#!/usr/bin/env python3
"""What an unfinished memcached command costs momento-proxy (issue 47):
about its bytes, not multiples of them. Clients send most of a command and
stop; once the proxy has read every byte sent (its /proc/PID/io rchar), its
VmRSS is read:

- three connections each holding a 4 MB `set` (its data block unfinished):
  the proxy grew by at most 2x their bytes plus 2 MiB (a connection's
  input buffer doubles as it fills, and the smaller buffers it leaves
  behind may stay resident in the heap for later use: up to once more the
  bytes; RESP's argv had cost 3.7x on top of its buffer);
- a binary set of 4 MB, its body unfinished: the same bound;
- a `set` of 8 MB, over the largest item: refused (SERVER_ERROR object
  too large for cache), its data skipped as it comes: the proxy grew by
  at most 2 MiB;
- a multi-get line of 7.5 MB without its newline (memcached lets only a
  get's line go past 2048 bytes): held, the same bound.

Each command is then finished (or the connection closed) and its answer
compared with memcached's (started with -I 5m, so that it takes a 4 MB
item as the proxy does). How the CPU cost of such a command does not
grow with its reads is tests/proxy/test_mc_parse.c's (counted, not timed).
No check asserts an elapsed time; every wait is bounded by the watchdog.

Usage: mc_bounds.py --memcached PATH --proxy PATH
Exits 77 when memcached is missing."""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
import rawmc as mc  # noqa: E402
from rawmc import bin_request as breq, set_extras  # noqa: E402

MiB = 1 << 20
HELD = 4_000_000     # a value the proxy (5 MiB items) and memcached -I 5m take
HUGE = 8_000_000     # over both servers' largest item
GET_LINE = 7_500_000  # under --max-request-bytes (8 MiB): held, not refused
PIECE = 4096         # what each send carries: many reads on the proxy's side
SLACK = 2 * MiB


def rchar(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError(f"no rchar in /proc/{pid}/io")


def send_pieces(conn, data):
    for i in range(0, len(data), PIECE):
        conn.send(data[i:i + PIECE])


class Probe:
    """The proxy's memory around a step: its RSS when the step starts, and
    a wait until it has read every byte the step sent (rchar counts every
    read() of the process; nothing else reads while the step runs)."""

    def __init__(self, pid):
        self.pid = pid

    def start(self):
        if self.pid:
            self.rss0 = pt.status_kb(self.pid, "VmRSS") * 1024
            self.read0 = rchar(self.pid)

    def grew_after_reading(self, sent):
        if not self.pid:
            return None
        pt.wait_until(lambda: rchar(self.pid) - self.read0 >= sent, pt.WATCHDOG,
                      f"the proxy to read the {sent} bytes sent")
        return pt.status_kb(self.pid, "VmRSS") * 1024 - self.rss0


def held_sets(port, probe):
    """Three text sets of HELD bytes, each stopped 1000 bytes short."""
    out, grew = [], None
    conns = [mc.Conn(port) for _ in range(3)]
    probe.start()
    sent = 0
    for i, c in enumerate(conns):
        head = b"set held%d 0 0 %d\r\n" % (i, HELD)
        part = head + b"h" * (HELD - 1000)
        send_pieces(c, part)
        sent += len(part)
    grew = probe.grew_after_reading(sent)
    for i, c in enumerate(conns):
        out.append(c.text(b"h" * 1000 + b"\r\n", "line"))
        c.close()
    check = mc.Conn(port)
    r = check.text(b"get held0 held1 held2\r\n", "items")[0]
    out.append([ln if len(ln) < 100 else len(ln) for ln in r])
    check.close()
    return out, grew, sent


def held_binary(port, probe):
    c = mc.Conn(port)
    req = breq(mc.SET, "heldb", set_extras(3), b"b" * HELD, opaque=7)
    probe.start()
    part = req[:-1000]
    send_pieces(c, part)
    grew = probe.grew_after_reading(len(part))
    c.send(req[-1000:])
    r = c.bin_response()
    c.close()
    return (r["op"], r["status"], r["opaque"]), grew, len(part)


def refused_set(port, probe):
    """A set over the largest item: refused, and the data that follows
    skipped, not kept (the proxy answers at its line, memcached once the
    data is skipped: the answer is read after)."""
    c = mc.Conn(port)
    probe.start()
    line = b"set huge 0 0 %d\r\n" % HUGE
    send_pieces(c, line + b"x" * (HUGE - 1000))
    grew = probe.grew_after_reading(len(line) + HUGE - 1000)
    c.send(b"x" * 1000 + b"\r\n")
    answer = c.line()
    after = c.text(b"get huge\r\nversion\r\n", "items", "line")
    c.close()
    return [answer, after[0], after[1][0][:8]], grew


def held_get_line(port, probe):
    """A multi-get line without its newline: the connection is closed
    unfinished (its 30,000 keys are not the point)."""
    c = mc.Conn(port)
    probe.start()
    key = b"g" * 249 + b" "
    line = b"get " + key * ((GET_LINE - 4) // len(key))
    send_pieces(c, line)
    grew = probe.grew_after_reading(len(line))
    c.close()
    # The server is still there for others.
    other = mc.Conn(port)
    ans = other.text(b"version\r\n", "line")[0][0][:8]
    other.close()
    return ans, grew, len(line)


def run(port, pid):
    probe = Probe(pid)
    rec = {}
    rec["sets"] = held_sets(port, probe)
    rec["binary"] = held_binary(port, probe)
    rec["refused"] = refused_set(port, probe)
    rec["get line"] = held_get_line(port, probe)
    return rec


def main():
    a = pt.parse_common_args(sys.argv[1:])
    pt.require_program(a.memcached, "memcached")
    res = pt.Results()
    ref_srv = pt.start_memcached(a.memcached, extra=("-I", "5m"))
    try:
        ref = run(ref_srv.port, None)
    finally:
        ref_srv.stop()
    if a.target == "reference":
        print(f"# memcached: {ref!r}"[:2000])
        res.exit()
    pt.require_program(a.proxy, "momento-proxy")
    px = pt.start_proxy(a.proxy, resp=False)
    try:
        got = run(px.ports["memcache"], px.proc.pid)
    finally:
        status = px.stop()

    answers, grew, sent = got["sets"]
    res.check("three unfinished 4 MB sets: answered as memcached answers them",
              answers == ref["sets"][0], f"memcached {ref['sets'][0]!r}, proxy {answers!r}")
    res.check_memory(a.proxy, "three unfinished 4 MB sets cost the proxy at most 2x their bytes",
              grew <= 2 * sent + SLACK, f"VmRSS grew {grew} bytes for {sent} bytes held")
    answers, grew, sent = got["binary"]
    res.check("an unfinished binary set of 4 MB: answered as memcached answers it",
              answers == ref["binary"][0], f"memcached {ref['binary'][0]!r}, proxy {answers!r}")
    res.check_memory(a.proxy, "an unfinished binary set of 4 MB costs at most 2x its bytes",
              grew <= 2 * sent + SLACK, f"VmRSS grew {grew} bytes for {sent} bytes held")
    answers, grew = got["refused"]
    res.check("a set of 8 MB: refused at its line, its data skipped, as memcached does",
              answers == ref["refused"][0], f"memcached {ref['refused'][0]!r}, proxy {answers!r}")
    res.check_memory(a.proxy, "the refused set's 8 MB of data are not kept",
              grew <= SLACK, f"VmRSS grew {grew} bytes while its data was read")
    answers, grew, sent = got["get line"]
    res.check("a 7.5 MB get line without its newline: the server serves others after",
              answers == ref["get line"][0], f"memcached {ref['get line'][0]!r}, proxy {answers!r}")
    res.check_memory(a.proxy, "a 7.5 MB get line without its newline costs at most 2x its bytes",
              grew <= 2 * sent + SLACK, f"VmRSS grew {grew} bytes for {sent} bytes held")
    for name, v in got.items():
        print(f"# proxy {name}: VmRSS grew {v[1]} bytes" + (f" for {v[2]} sent" if len(v) > 2 else ""))
    res.check("momento-proxy exits 0 on SIGTERM", status == 0,
              f"exit status {status}; stderr:\n{px.log_tail()}")
    res.exit()


if __name__ == "__main__":
    try:
        main()
    except (mc.Closed, socket.timeout, TimeoutError) as e:
        print(f"not ok - the script stopped: {type(e).__name__}: {e}")
        print("# 0 passed, 1 failed")
        sys.exit(1)
