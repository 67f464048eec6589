"""memcached's text and binary protocols over a plain socket, keeping each
reply as the client receives it: text replies as their lines (data blocks
included), binary responses as their header fields, extras, key and
value."""
import struct

import rawconn
from rawconn import Closed  # noqa: F401 (rawmc.Closed, for the scripts)

# Binary protocol opcodes (memcached's protocol_binary.h).
GET, SET, ADD, REPLACE, DELETE, INCREMENT, DECREMENT, QUIT = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
GETQ, NOOP, VERSION, GETK, GETKQ = 0x09, 0x0a, 0x0b, 0x0c, 0x0d
OPNAMES = {GET: "get", SET: "set", ADD: "add", REPLACE: "replace", DELETE: "delete",
           INCREMENT: "increment", DECREMENT: "decrement", QUIT: "quit", GETQ: "getq",
           NOOP: "noop", VERSION: "version", GETK: "getk", GETKQ: "getkq"}
HEADER = struct.Struct(">BBHBBHIIQ")


class Conn(rawconn.Conn):
    # --- text -------------------------------------------------------------
    def text_reply(self, kind):
        """One reply: kind 'line' (storage, delete, incr, touch, version...)
        or 'items' (get/gets/gat/gats: VALUE lines with their data, up to
        END) or 'stats' (STAT lines up to END). An error line ends any."""
        if kind == "line":
            return [self.line()]
        lines = []
        while True:
            ln = self.line()
            lines.append(ln)
            if ln == b"END" or ln.startswith((b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")):
                return lines
            if kind == "items" and ln.startswith(b"VALUE "):
                n = int(ln.split()[3])
                data = self.exact(n + 2)
                lines.append(data[:-2] if data.endswith(b"\r\n") else data)

    def text(self, data, *kinds):
        self.send(data)
        return [self.text_reply(k) for k in kinds]

    # --- binary -----------------------------------------------------------
    def bin_response(self):
        hdr = self.exact(24)
        magic, op, klen, elen, dtype, status, blen, opaque, cas = HEADER.unpack(hdr)
        body = self.exact(blen)
        extras, key, value = body[:elen], body[elen:elen + klen], body[elen + klen:]
        return {"magic": magic, "op": op, "status": status, "extras": extras, "key": key,
                "value": value, "opaque": opaque, "cas": cas, "dtype": dtype}


def bin_request(op, key=b"", extras=b"", value=b"", cas=0, opaque=0, magic=0x80):
    if isinstance(key, str):
        key = key.encode()
    if isinstance(value, str):
        value = value.encode()
    return HEADER.pack(magic, op, len(key), len(extras), 0, 0,
                       len(extras) + len(key) + len(value), opaque, cas) + extras + key + value


def set_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def incr_extras(delta, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)
