"""A plain socket to a server, read a line or a number of bytes at a time:
what rawresp.py's RESP connection and rawmc.py's memcached one share."""
import socket


class Closed(Exception):
    """The server closed the connection (EOF or reset)."""


class Conn:
    # 30 s: proxytest.WATCHDOG, a wait only a hang reaches.
    def __init__(self, port, timeout=30.0, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed()
        self.buf += chunk

    def line(self):
        """The next line, without its CRLF."""
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        """The next `n` bytes."""
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data
