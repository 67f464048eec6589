#!/usr/bin/env python3
"""What an unfinished RESP command costs momento-proxy (issue 47 item 5),
no reference server: a client sends 8 MB of a command of about 890,000
small arguments and holds back the last one. Once the proxy has read all
of it (its socket's receive queue empty), the proxy's VmRSS must have
grown by about those bytes - at least 0.8 times them (the input buffer
holds them: the measure saw the command) and under 1.6 times (before,
a 16-byte argv entry per argument made it about 3 times). Meanwhile
another connection's GET is answered, the held connection still without a
reply; then the last argument arrives and the command is answered as one
command of every argument (COMMAND INFO: one nil per name).

Usage: parse_cost.py --proxy PATH (the other programs are accepted and
unused)."""
import fcntl
import os
import socket
import struct
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import RawConn, encode  # noqa: E402

ARG = b"abc"
NARGS = 888_000  # 9 bytes each on the wire: 8 MB, under RESP_MAX_MULTIBULK


def rx_queue(local_port, remote_port):
    """The receive queue of the proxy's socket of this connection, from
    /proc/net/tcp (None when it is not listed)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    lport = int(cols[1].rsplit(":", 1)[1], 16)
                    rport = int(cols[2].rsplit(":", 1)[1], 16)
                    if lport == local_port and rport == remote_port:
                        return int(cols[4].split(":")[1], 16)
        except FileNotFoundError:
            pass
    return None


def unsent(sock):
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]


def main():
    args = pt.parse_common_args(sys.argv[1:])
    pt.require_program(args.proxy, "momento-proxy")
    res = pt.Results()
    px = pt.start_proxy(args.proxy, memcache=False)
    pid = px.proc.pid
    try:
        probe = RawConn(px.port)
        res.check("SET before", probe.command("SET", "parse-cost-k", "v") == ("+", "OK"))
        # The baseline after the proxy has served a command (its first
        # allocations made).
        probe.command("PING")
        time.sleep(0.2)
        base_kb = pt.status_kb(pid, "VmRSS")
        base_hwm_kb = pt.status_kb(pid, "VmHWM")

        head = b"*%d\r\n" % (NARGS + 3) + encode(["COMMAND", "INFO"])[4:]
        one = b"$%d\r\n%s\r\n" % (len(ARG), ARG)
        held = head + one * NARGS  # the last argument is held back
        big = socket.create_connection(("127.0.0.1", px.port), timeout=pt.WATCHDOG)
        big.sendall(held)
        my_port = big.getsockname()[1]
        pt.wait_until(lambda: unsent(big) == 0 and rx_queue(px.port, my_port) == 0,
                      pt.WATCHDOG, "the proxy to read the held command")
        grown = (pt.status_kb(pid, "VmRSS") - base_kb) * 1024
        ratio = grown / len(held)
        print(f"# {len(held)} bytes held, {NARGS + 2} arguments: VmRSS +{grown} bytes "
              f"({ratio:.2f}x); VmHWM {base_hwm_kb} -> {pt.status_kb(pid, 'VmHWM')} kB")
        res.check_memory(args.proxy, "the held bytes are in the proxy's memory (>= 0.8x)", ratio >= 0.8,
                  f"VmRSS grew by {grown} bytes for {len(held)} held: the measure missed them")
        res.check_memory(args.proxy, "an unfinished command costs about its bytes (< 1.6x)", ratio < 1.6,
                  f"VmRSS grew by {grown} bytes for {len(held)} held ({ratio:.2f}x)")

        # Another connection is served while the command is unfinished.
        other = RawConn(px.port)
        res.check("GET on another connection answered meanwhile",
                  other.command("GET", "parse-cost-k") == ("$", b"v"))
        big.setblocking(False)
        try:
            early = big.recv(1)
        except BlockingIOError:
            early = None
        big.setblocking(True)
        res.check("the held command has no reply yet", early is None, f"it got {early!r}")

        # The last argument: one command of every argument.
        big.sendall(one)
        want = b"*%d\r\n" % (NARGS + 1) + b"*-1\r\n" * (NARGS + 1)
        got = bytearray()
        deadline = time.monotonic() + pt.WATCHDOG
        while len(got) < len(want) and time.monotonic() < deadline:
            chunk = big.recv(1 << 20)
            if not chunk:
                break
            got += chunk
        res.check("the whole command answered as one, every argument in it",
                  bytes(got) == want,
                  f"{len(got)} bytes, starting {bytes(got[:40])!r}; want {len(want)}")
        res.check("the same connection serves the next command", _ping(big))
        big.close()
        other.close()
        probe.close()
    finally:
        px.stop()
    res.exit()


def _ping(sock):
    sock.sendall(encode(["PING"]))
    return pt.recv_until(sock, b"\r\n", size=100) == b"+PONG\r\n"


if __name__ == "__main__":
    main()
