"""A RESP2 client over a plain socket that keeps the wire form of each
reply: simple string, error, integer, bulk (or nil bulk), array (or nil
array), as tagged tuples, so that a test sees what redis-py would fold
together ($-1 and *-1 are both None to it, +OK and $2 OK both "OK")."""
import socket

import rawconn
from rawconn import Closed


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn(rawconn.Conn):
    def command(self, *args):
        self.send(encode(args))
        return self.reply()

    def reply(self):
        line = self.line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return ("+", rest.decode(errors="replace"))
        if t == b"-":
            return ("-", rest.decode(errors="replace"))
        if t == b":":
            return (":", int(rest))
        if t == b"$":
            n = int(rest)
            if n < 0:
                return ("$", None)
            data = self.exact(n + 2)
            return ("$", data[:-2])
        if t == b"*":
            n = int(rest)
            if n < 0:
                return ("*", None)
            return ("*", [self.reply() for _ in range(n)])
        raise ValueError(f"not a RESP reply: {line!r}")

    def reply_or(self, closed):
        """The next reply, or `closed` when the server closes first."""
        try:
            return self.reply()
        except Closed:
            return closed

    def closed_after(self, timeout=10.0):
        """Whether the server closes this connection: sends a PING and
        reads; EOF or reset means closed, a reply means open. Bounded by
        the socket timeout (a server that neither answers nor closes
        fails the wait)."""
        try:
            self.send(encode(["PING"]))
            r = self.reply()
            return ("open", r)
        except (Closed, BrokenPipeError, ConnectionResetError):
            return ("closed", None)
        except socket.timeout:
            return ("neither answered nor closed", None)


def session(port, cmds, timeout=30.0):
    """Sends each command on one fresh connection, in turn; a command's
    record is its reply (RawConn.reply()'s form), or "closed" - and nothing
    after it - once the server has closed the connection."""
    c = RawConn(port, timeout=timeout)
    out = []
    try:
        for cmd in cmds:
            try:
                out.append(c.command(*cmd))
            except (Closed, BrokenPipeError, ConnectionResetError):
                out.append("closed")
                break
    finally:
        c.close()
    return out


def pipelined(port, cmds, timeout=30.0):
    """Every command in one write, then every reply, as session()."""
    c = RawConn(port, timeout=timeout)
    try:
        c.send(b"".join(encode(cmd) for cmd in cmds))
        out = []
        for _ in cmds:
            try:
                out.append(c.reply())
            except Closed:
                out.append("closed")
                break
        return out
    finally:
        c.close()
