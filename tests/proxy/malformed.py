#!/usr/bin/env python3
"""Malformed input over raw sockets, answered as redis-server and memcached
answer it: the same bytes go to the real server and to momento-proxy, each
case on a connection of its own, followed by a probe (PING, version, a
binary noop); what comes back up to the probe's answer - error lines, the
probe's reply, or the connection closed - must be the same. A crash would
show as every later case failing to connect, and is checked at the end
(the proxy must still answer, and exit 0 on SIGTERM).

Usage: malformed.py [--target reference|proxy|both] --redis-server PATH
                    --memcached PATH --proxy PATH"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
import rawmc as mc  # noqa: E402
from rawresp import RawConn, encode  # noqa: E402

# Every case ends with an answer or a close (checked against the real
# servers below), so this read timeout is only a watchdog.
READ_TIMEOUT = pt.WATCHDOG
NOTHING_MORE = f"nothing more within {READ_TIMEOUT} s"

RESP_CASES = [
    ("bad multibulk length *abc", b"*abc\r\n"),
    ("negative bulk length $-5", b"*1\r\n$-5\r\n"),
    ("bulk longer than announced", b"*1\r\n$3\r\nPINGX\r\n"),
    ("second bulk longer than announced", b"*2\r\n$3\r\nGET\r\n$1\r\nab\r\n"),
    ("bulk not ended by CRLF", b"*1\r\n$4\r\nPINGab"),
    ("integer where a bulk should be", b"*1\r\n:5\r\n"),
    ("simple string where a bulk should be", b"*2\r\n+GET\r\n$1\r\na\r\n"),
    ("bulk length not a number", b"*1\r\n$x\r\n"),
    ("bulk length over 512 MB", b"*1\r\n$600000000\r\n"),
    ("multibulk length over 2^31", b"*3000000000\r\n"),
    ("null multibulk *-1", b"*-1\r\n"),
    ("empty multibulk *0", b"*0\r\n"),
    ("a top-level bulk (read inline)", b"$5\r\nhellx\r\n"),
    ("inline with unbalanced quotes", b"SET \"a\r\n"),
    ("inline with a quote not followed by a space", b"GET \"a\"b\r\n"),
    ("empty lines", b"\r\n\r\n\n"),
    ("binary junk inline", b"\x01\xff\xfe\r\n"),
    ("LF-only inline", b"PING\n"),
    # Inline quoting, token by token as redis-server's sdssplitargs reads it:
    # escapes in double quotes only, \' in single quotes only, \x with two
    # hex digits or taken literally, a closing quote that must be followed
    # by a space, and empty quoted arguments.
    ("inline double-quoted escapes", b'ECHO "a\\n\\t\\r\\b\\a\\"\\\\z"\r\n'),
    ("inline \\x with two hex digits", b'ECHO "\\x41\\x6a\\x7E"\r\n'),
    ("inline \\x with bad hex digits", b'ECHO "\\xZZ\\x4"\r\n'),
    ("inline single-quoted escapes", b"ECHO 'it\\'s \\n \\x41'\r\n"),
    ("inline unbalanced single quote", b"ECHO 'abc\r\n"),
    ("inline single quote followed by a letter", b"ECHO 'a'b\r\n"),
    # (an empty value: Momento refuses an empty key, docs/proxy.md)
    ("inline empty quoted arguments", b'SET "mk" \'\'\r\nGET mk\r\nECHO ""\r\n'),
    ("inline quotes inside a token", b'ECHO a"b"c\r\n'),
    ("inline tabs and runs of spaces", b"ECHO \t  x  \t\r\n"),
    # These two wait for the answer before the probe: the limit applies to
    # a line with no newline yet, and the probe's newline would end it.
    ("inline of 70,000 bytes without a newline", b"a" * 70000, "answer first"),
    ("multibulk count line of 70,000 bytes", b"*" + b"1" * 70000, "answer first"),
    ("a command of 1,000 arguments", encode(["MGET"] + [f"k{i}" for i in range(999)])),
]

MC_TEXT_CASES = [
    ("set with a bad length", b"set k 0 0 abc\r\nxyz\r\n"),
    ("set with a negative length", b"set k 0 0 -1\r\n"),
    ("set with data longer than announced", b"set k 0 0 3\r\nabcd\r\n"),
    ("set with data shorter than announced", b"set k 0 0 3\r\nab\r\n"),
    ("set with bad flags", b"set k abc 0 1\r\nx\r\n"),
    ("set with flags over 32 bits", b"set k 4294967296 0 1\r\nx\r\n"),
    ("set with a bad exptime", b"set k 0 abc 1\r\nx\r\n"),
    ("set with too few fields", b"set k 0 0\r\n"),
    ("set with a key of 251 bytes", b"set " + b"k" * 251 + b" 0 0 1\r\nx\r\n"),
    ("a line of 3000 bytes", b"x" * 3000 + b"\r\n"),
    ("10,000 bytes without a newline", b"y" * 10000, "answer first"),
    ("LF-only line", b"get k\n"),
    ("a control character in a key", b"get a\x01b\r\n"),
    ("a bad magic first byte (read as text)", b"\x90" + b"\x00" * 23),
]


def bin_header(magic=0x80, op=mc.NOOP, keylen=0, extlen=0, bodylen=0, opaque=0):
    return mc.HEADER.pack(magic, op, keylen, extlen, 0, 0, bodylen, opaque, 0)


MC_BIN_CASES = [
    ("bad magic after a good packet", mc.bin_request(mc.NOOP, opaque=1) + bin_header(magic=0x90)),
    ("a response magic after a good packet",
     mc.bin_request(mc.NOOP, opaque=2) + bin_header(magic=0x81)),
    ("an unknown opcode", bin_header(op=0x99, opaque=7)),
    ("body shorter than key + extras", bin_header(op=mc.GET, keylen=10, bodylen=4) + b"abcd"),
    ("set without its extras", mc.bin_request(mc.SET, "k", b"", "v", opaque=3)),
    ("get with extras", mc.bin_request(mc.GET, "k", b"\x00" * 4, opaque=4)),
    ("get with a key of 251 bytes", mc.bin_request(mc.GET, "k" * 251, opaque=5)),
    ("get without a key", mc.bin_request(mc.GET, "", opaque=6)),
    ("increment with short extras", mc.bin_request(mc.INCREMENT, "n", b"\x00" * 8, opaque=8)),
    ("noop with a body", mc.bin_request(mc.NOOP, "", b"", "junk", opaque=9)),
]


def case(c, data, first, probe, read):
    """What a case gets on the fresh connection c: `data` sent, one reply
    read by first(c) when the case has one answered before the probe,
    then `probe` sent and up to 8 replies read by read(c), which gives
    (what to record, whether it is the probe's answer); the connection's
    end (closed, nothing more) recorded as the last answer."""
    out = []
    try:
        with pt.ends_recorded(out, "closed", NOTHING_MORE):
            c.send(data)
            if first:
                out.append(first(c))
            c.send(probe)
            for _ in range(8):
                answer, probed = read(c)
                out.append(answer)
                if probed:
                    break
    except ValueError as e:  # rawresp's: a reply that is not RESP
        out.append(("not RESP", str(e)))
    finally:
        c.close()
    return out


def resp_case(port, data, answer_first=False):
    def read(c):
        r = c.reply()
        return r, r == ("+", "PONG")

    return case(RawConn(port, timeout=READ_TIMEOUT), data,
                RawConn.reply if answer_first else None, encode(["PING"]), read)


def mc_text_case(port, data, answer_first=False):
    def read(c):
        ln = c.line()
        return (b"VERSION <version>", True) if ln.startswith(b"VERSION ") else (ln, False)

    # The probe twice: memcached swallows the rest of a line it refused,
    # up to a newline, which can be the first probe's.
    return case(mc.Conn(port, timeout=READ_TIMEOUT), data,
                mc.Conn.line if answer_first else None, b"version\r\nversion\r\n", read)


def mc_bin_case(port, data):
    def read(c):
        r = c.bin_response()
        return ((hex(r["magic"]), hex(r["op"]), r["status"], r["value"], r["opaque"]),
                r["op"] == mc.NOOP and r["opaque"] == 0xabcd)

    return case(mc.Conn(port, timeout=READ_TIMEOUT), data, None,
                mc.bin_request(mc.NOOP, opaque=0xabcd), read)


def run(resp_port, mc_port):
    rec = []
    t0 = time.monotonic()
    for name, data, *first in RESP_CASES:
        rec.append((f"resp: {name}", resp_case(resp_port, data, bool(first))))
    for name, data, *first in MC_TEXT_CASES:
        rec.append((f"memcache text: {name}", mc_text_case(mc_port, data, bool(first))))
    for name, data in MC_BIN_CASES:
        rec.append((f"memcache binary: {name}", mc_bin_case(mc_port, data)))
    # Still serving after all of that.
    rec.append(("resp: still answers", resp_case(resp_port, b"")))
    rec.append(("memcache: still answers", mc_text_case(mc_port, b"")))
    print(f"# {len(rec)} cases in {time.monotonic() - t0:.1f} s")
    return rec


def replies_before_a_close(port, pipeline, bad):
    """A client with a small receive window sends `pipeline` and then `bad`
    (input after which the proxy closes), and once the first reply byte
    shows the proxy has read them, more bytes the proxy will never read.
    Returns every byte the client then reads up to the end, and how it
    ended. A close() with unread input answers with a reset, and the
    replies still queued behind the small window went with it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(READ_TIMEOUT)
    s.connect(("127.0.0.1", port))
    data, end = bytearray(), "EOF"
    try:
        s.sendall(pipeline + bad)
        data += s.recv(1)
        try:
            s.sendall(b"\0" * 4096)
        except OSError:
            pass  # already closed: the read below tells what arrived
        pt.recv_until(s, buf=data)
    except ConnectionResetError:
        end = "reset"
    finally:
        s.close()
    return bytes(data), end


def closing_cases(res, px):
    """Issue 47: every command keeps exactly one reply, in order, and the
    replies before an input that closes the connection reach the client
    (the proxy shuts its write side and drops what still arrives)."""
    n = 5000
    data, end = replies_before_a_close(px.ports["resp"], b"PING\r\n" * n, b"*abc\r\n")
    want = b"+PONG\r\n" * n + b"-ERR Protocol error: invalid multibulk length\r\n"
    res.check("resp: 5000 replies and the error before a protocol error's close all arrive",
              data == want and end == "EOF",
              f"{data.count(b'+PONG')} PONGs, error line {data.endswith(want[-48:])}, ended by {end}")
    noop = bin_header(op=mc.NOOP)
    data, end = replies_before_a_close(px.ports["memcache"], noop * n, bin_header(magic=0x00))
    res.check("memcache binary: 5000 noop answers before a bad magic byte's close all arrive",
              len(data) == 24 * n and end == "EOF", f"{len(data) // 24} answers, ended by {end}")
    # A client that neither closes nor sends after the error: its
    # connection, lingering to drop what it might still send, gives its
    # slot back all the same (conn.c LINGER_MS), seen in INFO from another
    # connection. The wait is the watchdog's; no time is asserted.
    info = RawConn(px.ports["resp"], timeout=READ_TIMEOUT)

    def clients():
        text = info.command("INFO")[1].decode()
        return int(text.split("connected_clients:")[1].split()[0])

    before = clients()
    s = socket.create_connection(("127.0.0.1", px.ports["resp"]), timeout=READ_TIMEOUT)
    s.sendall(b"PING\r\n*abc\r\n")
    pt.recv_until(s, b"length\r\n")  # up to the protocol error
    s.sendall(b"PING\r\n")  # after the error: read and dropped
    held = clients()
    try:
        pt.wait_until(lambda: clients() == before, pt.WATCHDOG, "the silent client's slot back")
        back = True
    except TimeoutError:
        back = False
    res.check("resp: a client silent after a protocol error holds its connection slot only for a while",
              back, f"clients {before}, with it {held}, given back {back}")
    s.close()
    info.close()


def main():
    a = pt.parse_common_args(sys.argv[1:])
    res = pt.Results()
    ref = pt.run_on_redis_and_memcached(a, run)
    # Each case must end, against the real servers, with the probe's answer
    # or the connection closed: a case that leaves them waiting would only
    # measure this test's timeout.
    for name, ans in ref:
        last = ans[-1] if ans else None
        ended = last in ("closed", ("+", "PONG"), b"VERSION <version>") or (
            isinstance(last, tuple) and len(last) == 5 and last[4] == 0xabcd)
        res.check(f"reference: {name} ends", ended, f"answer {str(ans)[:200]}")
    pt.end_if_reference(a, res, ref)
    pt.require_program(a.proxy, "momento-proxy")
    px = pt.start_proxy(a.proxy)
    try:
        got = run(px.ports["resp"], px.ports["memcache"])
        closing_cases(res, px)
    finally:
        alive = px.alive()
        status = px.stop()
    pt.compare_records(res, "reference", ref, got, {})
    res.check("momento-proxy still running after every case", alive, px.log_tail())
    res.check("momento-proxy exits 0 on SIGTERM", status == 0, f"exit status {status}")
    res.exit()


if __name__ == "__main__":
    main()
