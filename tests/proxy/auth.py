#!/usr/bin/env python3
"""--requirepass (issue 48 item 1): momento-proxy answers authentication as
redis-server --requirepass and memcached -S (SASL) answer it.

Each part runs the same steps against a reference server this test starts
and against momento-proxy, and compares them step by step
(pt.compare_records); where the proxy must differ, EXPECT says what it
answers and why.

  resp         redis-server --requirepass vs the proxy --requirepass, on raw
               sockets (the wire form): every command before AUTH (NOAUTH,
               or the unknown-command and arity errors Redis checks first;
               EXEC's EXECABORT), AUTH PASS, AUTH default PASS, other users,
               wrong and near passwords, HELLO 2 AUTH with SETNAME and the
               order of HELLO's options, a failed AUTH leaving the connection
               as it was, a pipeline after a failed AUTH, AUTH queued in
               MULTI, inline commands; Redis's bounds before AUTH (over 10
               arguments, a bulk over 16384 bytes: refused at the line that
               announces them, the data never sent, and the connection
               closed); redis-py with and without the password, redis-cli -a.
  nopass       redis-server and the proxy without a password: AUTH PASS is
               Redis's "called without any password configured" error, AUTH
               default PASS any password, another user WRONGPASS.
  memcached    memcached -S (a Cyrus sasldb made for the test through
               libsasl2's own sasl_setpass) vs the proxy --requirepass, on
               the binary protocol: list mechanisms, PLAIN good and bad,
               PLAIN without data then SASL steps (a wrong step, then the
               right one), what a step, a list or a new auth does after a
               success, requests before auth (Auth failure, then the
               connection closed; a set's header is answered with its body
               not sent), version before auth, listing or a new auth
               dropping an earlier one, a pipeline after a failed auth,
               PLAIN with 5000 bytes of data, the text protocol hung up on;
               libmemcached's memcping, memccp and memccat with --username
               / --password. And memcached without -S vs the proxy without
               a password: the SASL requests answer Unknown command.
  secret       the password never shows in what the proxy writes: its
               stderr and stdout, INFO, the memcached port's stats, and
               every answer recorded above.
  memory       the proxy only: connections that have not authenticated,
               each announcing an 8 MB argument (RESP) or a 4 MB set
               (memcached) and sending it, raise the proxy's VmRSS by
               little (skipped for a sanitizer build); a SASL auth
               announcing more data than the proxy takes is answered at
               its header.

Usage: auth.py [--target reference|proxy|both] --redis-server PATH
               --memcached PATH --proxy PATH [--redis-cli PATH] [--tools-dir DIR]
Exits 77 when redis-server, memcached or redis-py is missing."""
import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
import rawmc  # noqa: E402
from rawresp import Closed as RespClosed, RawConn, encode  # noqa: E402
from rawresp import pipelined as resp_pipelined, session as resp_session  # noqa: E402

pt.require_modules("redis")
import redis  # noqa: E402

SECRET = "s3cr3t-Xq9-auth"
MC_USER = "proxyuser"
WRONG = "not-the-password"

SASL_LIST, SASL_AUTH, SASL_STEP = 0x20, 0x21, 0x22


# ---- RESP ------------------------------------------------------------------


def resp_unanswered_steps(port, steps):
    """Each (name, bytes, replies) on a connection of its own, all sent
    before any is read, so that a server that waits for data never sent
    costs one WATCHDOG, not one each. A step's record: its replies, then
    whether the connection was closed after them (closed_after())."""
    conns = [RawConn(port, timeout=pt.WATCHDOG) for _ in steps]
    out = []
    try:
        for c, (_, data, _) in zip(conns, steps):
            c.send(data)
        deadline = time.monotonic() + pt.WATCHDOG
        for c, (name, _, n) in zip(conns, steps):
            c.sock.settimeout(max(0.1, deadline - time.monotonic()))
            got = []
            try:
                for _ in range(n):
                    got.append(c.reply())
            except RespClosed:
                got.append("closed")
            except socket.timeout:
                got.append("no reply: the data not sent awaited")
            else:
                c.sock.settimeout(pt.WATCHDOG)
                got.append(c.closed_after()[0])
            out.append((name, got))
    finally:
        for c in conns:
            c.close()
    return out


def bulk_line(n):
    return b"$%d\r\n" % n


# Before AUTH Redis 7 takes at most 10 arguments and 16384 bytes an
# argument, refused at the line announcing more: nothing after it is sent.
UNAUTH_LIMITS = [
    ("*11, alone", b"*11\r\n", 1),
    ("*2000000, alone", b"*2000000\r\n", 1),
    ("*2147483648, alone", b"*2147483648\r\n", 1),
    ("10 arguments, whole", encode(("PING",) + ("a",) * 9), 1),
    ("GET and $16385, alone", b"*2\r\n$3\r\nGET\r\n" + bulk_line(16385), 1),
    ("GET and $8388000, alone", b"*2\r\n$3\r\nGET\r\n" + bulk_line(8388000), 1),
    ("a first argument of $16385, alone", b"*1\r\n" + bulk_line(16385), 1),
    ("GET and 16384 bytes, whole", encode(("GET", "k" * 16384)), 1),
    ("AUTH WRONG, then ECHO's $20000 alone, pipelined",
     encode(("AUTH", WRONG)) + b"*2\r\n$4\r\nECHO\r\n" + bulk_line(20000), 2),
]


def hello_map(reply):
    """A HELLO answer as comparable facts: its keys and its proto (the
    version and the id are each server's own)."""
    if reply[0] != "*":
        return reply
    items = reply[1]
    keys = [items[i][1] for i in range(0, len(items), 2)]
    proto = dict((items[i][1], items[i + 1]) for i in range(0, len(items), 2)).get(b"proto")
    return ("HELLO map", keys, proto)


BEFORE_AUTH = [
    ("PING",), ("ECHO", "a"), ("SELECT", "0"), ("COMMAND", "COUNT"), ("INFO",),
    ("CLIENT", "ID"), ("CLIENT", "SETNAME", "x"), ("GET", "k"), ("SET", "k", "v"),
    ("NOSUCH", "a"), ("GET",), ("GET", "a", "b"), ("MULTI",), ("EXEC",), ("EXEC", "x"),
    ("DISCARD",), ("WATCH", "k"), ("UNWATCH",), ("SUBSCRIBE", "ch"), ("PUBLISH", "ch", "m"),
    ("HELLO",), ("HELLO", "2"), ("HELLO", "3"), ("HELLO", "2", "SETNAME", "x"), ("HELLO", "4"),
    ("HELLO", "x"), ("AUTH",), ("AUTH", "a", "b", "c"), ("AUTH", WRONG),
    ("AUTH", "default", WRONG), ("AUTH", "other", SECRET), ("AUTH", "Default", SECRET),
    ("AUTH", SECRET + "x"), ("AUTH", SECRET[:-1]), ("AUTH", ""), ("AUTH", SECRET + "\0"),
    ("HELLO", "2", "AUTH", "default", WRONG), ("HELLO", "2", "AUTH", "other", SECRET),
    ("PING",), ("QUIT",), ("PING",),
]

# HELLO's options in order, each session then a PING: whether it
# authenticated (Redis 7.0 applies an AUTH option before a bad one after it).
HELLO_ORDER = [
    ("HELLO", "2", "SETNAME", "a b", "AUTH", "default", SECRET),
    ("HELLO", "2", "AUTH", "default", SECRET, "SETNAME", "a b"),
    ("HELLO", "2", "AUTH", "default", WRONG, "SETNAME", "a b"),
    ("HELLO", "2", "AUTH", "default", SECRET, "BOGUS"),
    ("HELLO", "2", "BOGUS", "AUTH", "default", SECRET),
    ("HELLO", "2", "AUTH", "default"),
    ("HELLO", "2", "AUTH", "default", SECRET, "AUTH", "default", WRONG),
    ("HELLO", "2", "AUTH", "default", WRONG, "AUTH", "default", SECRET),
    ("HELLO", "4", "AUTH", "default", SECRET),
]


def hello3_auth(port):
    """HELLO 3 AUTH default PASS, then PING, in one write: the first byte
    of HELLO's answer and the last line (PING's)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    try:
        s.sendall(encode(("HELLO", "3", "AUTH", "default", SECRET)) + encode(("PING",)))
        buf = pt.recv_until(s, (b"+PONG\r\n", b"-NOAUTH Authentication required.\r\n"))
        first = buf.split(b"\r\n", 1)[0]
        return (first[:1].decode() if first[:1] != b"-" else first.decode(),
                buf.rstrip(b"\r\n").rsplit(b"\r\n", 1)[-1].decode())
    finally:
        s.close()


def redis_py_steps(port, out):
    def attempt(name, fn):
        pt.attempt(out, name, fn)

    kw = dict(host="127.0.0.1", port=port, socket_timeout=pt.WATCHDOG,
              socket_connect_timeout=pt.WATCHDOG)
    good = redis.Redis(password=SECRET, **kw)
    attempt("redis-py password=: SET then GET", lambda: (good.set("rp", "v"), good.get("rp")))
    attempt("redis-py password=: a transaction pipeline",
            lambda: good.pipeline().incr("rpn").incr("rpn").get("rp").execute())
    good.close()
    user = redis.Redis(username="default", password=SECRET, **kw)
    attempt("redis-py username=default: PING", lambda: user.ping())
    user.close()
    bad = redis.Redis(password=WRONG, **kw)
    attempt("redis-py wrong password: PING", lambda: bad.ping())
    bad.close()
    other = redis.Redis(username="bob", password=SECRET, **kw)
    attempt("redis-py username=bob: PING", lambda: other.ping())
    other.close()
    none = redis.Redis(**kw)
    attempt("redis-py no password: GET", lambda: none.get("rp"))
    none.close()


def redis_cli_steps(cli, port, out):
    if not cli:
        return
    for name, args in (("redis-cli -a PASS PING", ["-a", SECRET, "PING"]),
                       ("redis-cli -a WRONG PING", ["-a", WRONG, "PING"]),
                       ("redis-cli --user default --pass PASS GET", ["--user", "default", "--pass",
                                                                     SECRET, "GET", "rp"]),
                       ("redis-cli without -a PING", ["PING"])):
        p = subprocess.run([cli, "-h", "127.0.0.1", "-p", str(port), "--no-auth-warning", *args],
                           capture_output=True, timeout=pt.WATCHDOG, stdin=subprocess.DEVNULL)
        out.append((name, (p.returncode, p.stdout.decode(errors="replace").strip(),
                           p.stderr.decode(errors="replace").strip())))


def resp_run(port, cli):
    out = []
    for i, (cmd, ans) in enumerate(zip(BEFORE_AUTH, resp_session(port, BEFORE_AUTH))):
        out.append((f"before AUTH, step {i + 1}: " + " ".join(cmd).replace(SECRET, "PASS"),
                    hello_map(ans) if cmd[0] == "HELLO" else ans))
    sess = [("AUTH", SECRET), ("PING",), ("AUTH", WRONG), ("PING",), ("AUTH", "default", SECRET),
            ("AUTH", "nope", SECRET), ("SET", "k", "v"), ("GET", "k")]
    for i, ans in enumerate(resp_session(port, sess)):
        out.append((f"AUTH session, step {i + 1}: " + " ".join(sess[i]).replace(SECRET, "PASS"),
                    ans))
    sess = [("HELLO", "2", "AUTH", "default", SECRET, "SETNAME", "nm"), ("PING",), ("GET", "k")]
    ans = resp_session(port, sess)
    out.append(("HELLO 2 AUTH default PASS SETNAME nm", hello_map(ans[0])))
    out.append(("HELLO 2 AUTH ...: then PING, GET", ans[1:]))
    for h in HELLO_ORDER:
        ans = resp_session(port, [h, ("PING",)])
        out.append(("HELLO order: " + " ".join(h).replace(SECRET, "PASS") + ", then PING",
                    [hello_map(ans[0])] + ans[1:]))
    out.append(("HELLO 3 AUTH default PASS, then PING", hello3_auth(port)))
    pipe = [("AUTH", WRONG), ("SET", "k", "v2"), ("GET", "k"), ("AUTH", SECRET), ("SET", "k", "v3"),
            ("GET", "k"), ("AUTH", WRONG), ("GET", "k")]
    out.append(("pipelined after a failed AUTH", resp_pipelined(port, pipe)))
    sess = [("AUTH", SECRET), ("MULTI",), ("AUTH", WRONG), ("PING",), ("EXEC",), ("PING",)]
    out.append(("AUTH queued in MULTI", resp_session(port, sess)))
    sess = [("AUTH", SECRET), ("MULTI",), ("HELLO", "2", "AUTH", "default", SECRET), ("EXEC",)]
    ans = resp_session(port, sess)
    out.append(("HELLO AUTH queued in MULTI", ans[:3] + [
        ("*", [hello_map(x) for x in ans[3][1]]) if ans[3][0] == "*" else ans[3]]))
    c = RawConn(port, timeout=pt.WATCHDOG)
    c.send(b"PING\r\nAUTH " + SECRET.encode() + b"\r\nPING\r\n")
    out.append(("inline PING, AUTH PASS, PING", [c.reply(), c.reply(), c.reply()]))
    c.close()
    for name, ans in resp_unanswered_steps(port, UNAUTH_LIMITS):
        out.append(("before AUTH: " + name, ans))
    # After AUTH the limits are the authenticated ones, from the next
    # command on (a failed AUTH leaves them: UNAUTH_LIMITS's last step).
    big = "a" * 20000
    out.append(("AUTH PASS, then ECHO of 20000 bytes and 11 arguments, pipelined",
                resp_pipelined(port, [("AUTH", SECRET), ("ECHO", big), ("PING",) + ("a",) * 10])))
    redis_py_steps(port, out)
    redis_cli_steps(cli, port, out)
    return out


def nopass_run(port):
    sess = [("AUTH", "x"), ("AUTH", "default", "x"), ("AUTH", "other", "x"), ("AUTH", "a", "b", "c"),
            ("HELLO", "2", "AUTH", "default", "x"), ("HELLO", "2", "AUTH", "other", "x"),
            ("MULTI",), ("AUTH", "x"), ("EXEC",), ("PING",)]
    out = []
    for i, ans in enumerate(resp_session(port, sess)):
        out.append((f"no password, step {i + 1}: {' '.join(sess[i])}",
                    hello_map(ans) if sess[i][0] == "HELLO" else ans))
    return out


# ---- memcached -------------------------------------------------------------

def mc_show(r):
    """A binary response as comparable facts: the opcode, the status and
    the body (version's is each server's own)."""
    if r == "closed":
        return r
    value = r["value"]
    if r["op"] == rawmc.VERSION and r["status"] == 0:
        value = "a version"
    return (hex(r["op"]), hex(r["status"]), value)


def mc_session(port, reqs):
    """Each request in turn on one connection; quiet ones are not read."""
    c = rawmc.Conn(port, timeout=pt.WATCHDOG)
    out = []
    try:
        for q in reqs:
            try:
                c.send(q)
                out.append(mc_show(c.bin_response()))
            except (rawmc.Closed, BrokenPipeError, ConnectionResetError):
                out.append("closed")
                break
    finally:
        c.close()
    return out


def mc_unanswered_steps(port, steps):
    """Each (name, bytes) on a connection of its own, all sent before any
    is read (one WATCHDOG in all for a server that waits for bytes never
    sent). A step's record: the response, then a noop's response or
    'closed'."""
    conns = [rawmc.Conn(port, timeout=pt.WATCHDOG) for _ in steps]
    out = []
    try:
        for c, (_, data) in zip(conns, steps):
            c.send(data)
        deadline = time.monotonic() + pt.WATCHDOG
        for c, (name, _) in zip(conns, steps):
            c.sock.settimeout(max(0.1, deadline - time.monotonic()))
            got = []
            try:
                got.append(mc_show(c.bin_response()))
                c.sock.settimeout(pt.WATCHDOG)
                c.send(req(rawmc.NOOP))
                got.append(mc_show(c.bin_response()))
            except (rawmc.Closed, BrokenPipeError, ConnectionResetError):
                got.append("closed")
            except socket.timeout:
                got.append("no response: the body not sent awaited")
            out.append((name, got))
    finally:
        for c in conns:
            c.close()
    return out


def plain(user, password, authzid=b""):
    return authzid + b"\0" + user.encode() + b"\0" + password.encode()


def req(op, key=b"", value=b"", extras=b""):
    return rawmc.bin_request(op, key=key, value=value, extras=extras)


def good_auth():
    return req(SASL_AUTH, "PLAIN", plain(MC_USER, SECRET))


# SASL exchanges, each on a connection, then a noop: G a PLAIN auth with the
# password, W with a wrong one, E PLAIN without data (answered "continue"),
# SG / SW a step with the right / a wrong password, L list mechanisms.
# memcached -S (Cyrus SASL) takes a step again after a wrong one; after a
# success it refuses a step, and the next auth with data, once.
SASL_SEQUENCES = ["E SW SG", "E SW SW SG", "E SG SG", "E SW E SG", "E L SG", "E W SG", "E SG E SG",
                  "G G", "G G G", "G W E SG", "G E SG", "G L E SG", "E SW SG G E SG"]


def sasl_sequence(seq):
    step = {"G": good_auth(), "W": req(SASL_AUTH, "PLAIN", plain(MC_USER, WRONG)),
            "E": req(SASL_AUTH, "PLAIN"), "SG": req(SASL_STEP, "PLAIN", plain(MC_USER, SECRET)),
            "SW": req(SASL_STEP, "PLAIN", plain(MC_USER, WRONG)), "L": req(SASL_LIST)}
    return [step[w] for w in seq.split()] + [req(rawmc.NOOP)]


def sasl_run(port, tools):
    out = []
    for seq in SASL_SEQUENCES:
        out.append(("sasl exchange: " + seq + ", noop", mc_session(port, sasl_sequence(seq))))
    # Before auth memcached -S answers at the header (and key) of a request
    # that is not SASL's: its body is not awaited.
    for name, ans in mc_unanswered_steps(port, [
            ("a set's header, extras and key, its 4 MB body not sent",
             rawmc.bin_request(rawmc.SET, "k", rawmc.set_extras(),
                               b"v" * 4000000)[:24 + 8 + 1])]):
        out.append(("sasl: " + name, ans))
    out.append(("sasl: PLAIN with 5000 bytes of data, then noop",
                mc_session(port, [req(SASL_AUTH, "PLAIN", plain(MC_USER, "x" * 5000)),
                                  req(rawmc.NOOP)])))
    S = [("list mechanisms", req(SASL_LIST)), ("version", req(rawmc.VERSION)),
         ("get before auth", req(rawmc.GET, "k")), ("noop after it", req(rawmc.NOOP))]
    for (n, _), a in zip(S, mc_session(port, [q for _, q in S])):
        out.append(("sasl: " + n, a))
    S = [("PLAIN, wrong password", req(SASL_AUTH, "PLAIN", plain(MC_USER, WRONG))),
         ("another mechanism", req(SASL_AUTH, "CRAM-MD5", b"x")),
         ("a step with no auth started", req(SASL_STEP, "PLAIN", plain(MC_USER, SECRET))),
         ("PLAIN without data", req(SASL_AUTH, "PLAIN")),
         ("then the step with it", req(SASL_STEP, "PLAIN", plain(MC_USER, SECRET))),
         ("noop", req(rawmc.NOOP)),
         ("set", req(rawmc.SET, "k", "v", rawmc.set_extras())),
         ("get", req(rawmc.GET, "k")),
         ("a step after the auth", req(SASL_STEP, "PLAIN", plain(MC_USER, SECRET))),
         ("noop after that", req(rawmc.NOOP))]
    for (n, _), a in zip(S, mc_session(port, [q for _, q in S])):
        out.append(("sasl session: " + n, a))
    for n, q in (("list mechanisms with a body", req(SASL_LIST, value=b"x")),
                 ("auth without a mechanism", req(SASL_AUTH, value=plain(MC_USER, SECRET))),
                 ("an unknown opcode before auth", req(0x45, "x", b"abc")),
                 ("a 40-byte mechanism", req(SASL_AUTH, "M" * 40, plain(MC_USER, SECRET)))):
        out.append(("sasl: " + n + ", then noop", mc_session(port, [q, req(rawmc.NOOP)])))
    out.append(("sasl: auth, get, list mechanisms, get",
                mc_session(port, [good_auth(), req(rawmc.GET, "k"), req(SASL_LIST),
                                  req(rawmc.GET, "k")])))
    out.append(("sasl: auth, a failed auth, noop",
                mc_session(port, [good_auth(), req(SASL_AUTH, "PLAIN", plain(MC_USER, WRONG)),
                                  req(rawmc.NOOP)])))
    for n, data in (("authzid the user's own", plain(MC_USER, SECRET, MC_USER.encode())),
                    ("authzid another", plain(MC_USER, SECRET, b"root")),
                    ("a NUL after the password", plain(MC_USER, SECRET) + b"\0"),
                    ("no NUL at all", SECRET.encode()),
                    ("no user", plain("", SECRET)),
                    ("another user", plain("someoneelse", SECRET))):
        out.append(("sasl PLAIN: " + n + ", then noop",
                    mc_session(port, [req(SASL_AUTH, "PLAIN", data), req(rawmc.NOOP)])))
    out.append(("sasl: mechanism in lower case, then noop",
                mc_session(port, [req(SASL_AUTH, "plain", plain(MC_USER, SECRET)),
                                  req(rawmc.NOOP)])))
    c = rawmc.Conn(port, timeout=pt.WATCHDOG)
    c.send(req(SASL_AUTH, "PLAIN", plain(MC_USER, WRONG)) + req(rawmc.SET, "k", "v2",
                                                                  rawmc.set_extras())
           + good_auth() + req(rawmc.GET, "k"))
    got = []
    for _ in range(4):
        try:
            got.append(mc_show(c.bin_response()))
        except rawmc.Closed:
            got.append("closed")
            break
    c.close()
    out.append(("sasl: pipelined after a failed auth", got))
    # Text on a SASL port: memcached -S hangs up once 24 bytes are in.
    for n, data in (("a text set", [b"set kkkkkkkk 0 0 10\r\n0123456789\r\n"]),
                    ("version, then more text past 24 bytes",
                     [b"version\r\n", b"get aaaaaaaaaaaaaaaaaaaa\r\n"])):
        c = rawmc.Conn(port, timeout=pt.WATCHDOG)
        try:
            for d in data:
                c.send(d)
            got = ("answered", c.line())
        except (rawmc.Closed, BrokenPipeError, ConnectionResetError):
            got = "closed without a word"
        c.close()
        out.append(("text on a SASL port: " + n, got))
    if tools:
        server = f"--servers=127.0.0.1:{port}"
        creds = [f"--username={MC_USER}", f"--password={SECRET}"]

        def tool(name, *args):
            p = subprocess.run([os.path.join(tools, name), server, *args], capture_output=True,
                               timeout=pt.WATCHDOG, stdin=subprocess.DEVNULL)
            return p.returncode, p.stdout.decode(errors="replace").strip()

        out.append(("memcping with the password", tool("memcping", *creds)[0]))
        out.append(("memcping with a wrong one", tool("memcping", f"--username={MC_USER}",
                                                       f"--password={WRONG}")[0]))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "saslfile")
            with open(path, "w") as f:
                f.write("stored through SASL\n")
            out.append(("memccp --binary with the password",
                        tool("memccp", "--binary", *creds, path)[0]))
        out.append(("memccat --binary with the password",
                    tool("memccat", "--binary", *creds, "saslfile")))
    return out


def proxy_only_sasl(res, port):
    """What only the proxy is asked: a text command shorter than a binary
    header is hung up on without more bytes (memcached would wait for 24)."""
    c = rawmc.Conn(port, timeout=pt.WATCHDOG)
    c.send(b"version\r\n")
    try:
        got = ("answered", c.line())
    except rawmc.Closed:
        got = "closed"
    c.close()
    res.check("proxy: 'version' (9 bytes) on a SASL port is hung up on at once", got == "closed",
              f"got {got!r}")
    # SASL data over the proxy's bound (mc_binary.c's SASL_DATA_MAX) is not
    # held: the auth is answered at its header, the data skipped as it
    # comes (memcached reads up to its item chunk, 512 KB, first).
    c = rawmc.Conn(port, timeout=pt.WATCHDOG)
    data = plain(MC_USER, "x" * 100000)
    whole = req(SASL_AUTH, "PLAIN", data)
    c.send(whole[:24 + 5])
    c.sock.settimeout(pt.WATCHDOG)
    try:
        first = mc_show(c.bin_response())
        c.send(whole[24 + 5:] + good_auth() + req(rawmc.NOOP))
        rest = [mc_show(c.bin_response()), mc_show(c.bin_response())]
    except (rawmc.Closed, socket.timeout) as e:
        first, rest = repr(e), []
    c.close()
    res.check("proxy: a SASL auth announcing 100000 bytes of data is answered at its header",
              first == ("0x21", "0x20", b"Auth failure."), f"got {first!r}")
    res.check("proxy: ...its data is skipped: the auth after it authenticates, a noop is answered",
              rest == [("0x21", "0x0", b"Authenticated"), ("0xa", "0x0", b"")], f"got {rest!r}")


# The memory check: this many connections that have not authenticated,
# each announcing ANNOUNCED bytes and sending them. Held, they would take
# the proxy's VmRSS up by CONNS * ANNOUNCED (64 MB, 32 MB); refused at the
# header, by the little a closing connection reads and drops.
MEMORY_CONNS = 8
MEMORY_GROWTH_MB = 16


def announce_and_send(port, header, announced):
    """MEMORY_CONNS connections each send `header`, then `announced` bytes
    in 64 KiB pieces, taking turns; one the proxy has closed stops. Returns
    the open sockets (the caller closes them)."""
    socks = []
    for _ in range(MEMORY_CONNS):
        s = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
        s.sendall(header)
        socks.append(s)
    piece = b"a" * 65536
    live = list(socks)
    for _ in range(announced // len(piece)):  # whole pieces: less than announced
        for s in list(live):
            try:
                s.sendall(piece)
            except OSError:
                live.remove(s)
        if not live:
            break
    return socks


def proxy_only_memory(res, binary):
    """Each protocol on a proxy of its own, so that memory one part freed
    (and the allocator kept) does not hide what the other holds."""
    for proto, header, announced in (
            ("resp", b"*2\r\n$3\r\nGET\r\n" + bulk_line(8388000), 8388000),
            ("memcache",
             rawmc.bin_request(rawmc.SET, "k", rawmc.set_extras(), b"v" * 4000000)[:24 + 8 + 1],
             4000000)):
        px = pt.start_proxy(binary, resp=proto == "resp", memcache=proto == "memcache",
                            extra=["--requirepass", SECRET])
        try:
            base = pt.status_kb(px.proc.pid)
            # Less than announced is sent: a proxy that awaited the data
            # would hold it all still (but for what the sockets' buffers
            # keep, a few MB at most).
            socks = announce_and_send(px.ports[proto], header, announced)
            after = pt.status_kb(px.proc.pid)
            for s in socks:
                s.close()
        finally:
            status = px.stop()
        grown = (after - base) // 1024
        print(f"# {proto}: VmRSS {base} kB, then {after} kB with the connections open")
        res.check_memory(binary,
                         f"memory: {MEMORY_CONNS} unauthenticated {proto} connections each "
                         f"announcing and sending {announced} bytes grow VmRSS under "
                         f"{MEMORY_GROWTH_MB} MB", grown < MEMORY_GROWTH_MB,
                         f"VmRSS {base} -> {after} kB")
        res.check(f"memory: the {proto} proxy exits 0 on SIGTERM", status == 0,
                  f"exit status {status}; stderr:\n{px.log_tail()}")


def nosasl_run(port):
    out = []
    for n, reqs in (("list mechanisms, noop", [req(SASL_LIST), req(rawmc.NOOP)]),
                    ("auth PLAIN, noop", [req(SASL_AUTH, "PLAIN", plain(MC_USER, SECRET)),
                                          req(rawmc.NOOP)]),
                    ("step, noop", [req(SASL_STEP, "PLAIN", b"x"), req(rawmc.NOOP)]),
                    ("list mechanisms with a body, noop", [req(SASL_LIST, value=b"x"),
                                                           req(rawmc.NOOP)]),
                    ("auth PLAIN with 5000 bytes of data, noop",
                     [req(SASL_AUTH, "PLAIN", plain(MC_USER, "x" * 5000)), req(rawmc.NOOP)])):
        out.append(("no SASL: " + n, mc_session(port, reqs)))
    return out


def make_sasldb(d):
    """A Cyrus sasldb holding MC_USER with SECRET, and memcached.conf naming
    it, in d: what saslpasswd2 does, through libsasl2's sasl_setpass (the
    library memcached itself uses), so no other package is needed. Returns
    why not, or None."""
    try:
        lib = ctypes.CDLL("libsasl2.so.2")
    except OSError as e:
        return f"libsasl2 cannot be loaded ({e})"
    db = os.path.join(d, "sasldb2")
    with open(os.path.join(d, "memcached.conf"), "w") as f:
        f.write(f"mech_list: plain\nsasldb_path: {db}\n")

    # libsasl2 reads the configuration's folder from SASL_CONF_PATH, as
    # memcached has it read there too.
    old = os.environ.get("SASL_CONF_PATH")
    os.environ["SASL_CONF_PATH"] = d
    try:
        if lib.sasl_server_init(None, b"memcached") != 0:
            return "sasl_server_init failed"
        conn = ctypes.c_void_p()
        # memcached's realm: this host's name (its sasl_server_new()).
        if lib.sasl_server_new(b"memcached", socket.gethostname().encode(), None, None, None,
                               None, 0, ctypes.byref(conn)) != 0:
            return "sasl_server_new failed"
        SASL_SET_CREATE = 1
        if lib.sasl_setpass(conn, MC_USER.encode(), SECRET.encode(), len(SECRET), None, 0,
                            SASL_SET_CREATE) != 0:
            return "sasl_setpass failed"
        lib.sasl_dispose(ctypes.byref(conn))
    finally:
        if old is None:
            del os.environ["SASL_CONF_PATH"]
        else:
            os.environ["SASL_CONF_PATH"] = old
    if not os.path.exists(db):
        return f"libsasl2 did not write {db}"
    return None


# ---- expectations ----------------------------------------------------------

NOPROTO = ("the proxy serves RESP2 only: HELLO 3 answers NOPROTO (a client falls back to "
           "RESP2), after its AUTH option has authenticated, as Redis's does")
EXPECT = {
    "HELLO 3 AUTH default PASS, then PING": pt.Expect(
        ("-NOPROTO unsupported protocol version", "+PONG"), NOPROTO),
}
NO_USERS = ("the proxy has one secret and no users: SASL PLAIN takes any user name with "
            "--requirepass, where memcached's sasldb knows only its users")
MC_EXPECT = {
    "sasl PLAIN: another user, then noop": pt.Expect(
        [("0x21", "0x0", b"Authenticated"), ("0xa", "0x0", b"")], NO_USERS),
}

def compare(res, label, ref, got, expects):
    pt.check_ref_expects(res, ref, expects, label)
    pt.compare_records(res, label, ref, got, expects)


def start_redis(path, *extra):
    return pt._start_by_port("redis-server", lambda p: [
        path, "--port", str(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning", *extra])


def main():
    a = pt.parse_common_args(sys.argv[1:], extra=["--tools-dir"])
    res = pt.Results()
    pt.require_program(a.redis_server, "redis-server")
    pt.require_program(a.memcached, "memcached")
    cli = a.redis_cli if a.redis_cli and os.access(a.redis_cli, os.X_OK) else ""
    tools = a.tools_dir or os.path.dirname(shutil.which("memccp") or "")
    if tools and not os.access(os.path.join(tools, "memcping"), os.X_OK):
        tools = ""
    if not cli:
        print("# redis-cli not found: its steps are left out")
    if not tools:
        print("# libmemcached-tools not found: their steps are left out")

    ref = {}
    red = start_redis(a.redis_server, "--requirepass", SECRET)
    try:
        ref["resp"] = resp_run(red.port, cli)
    finally:
        red.stop()
    red = start_redis(a.redis_server)
    try:
        ref["nopass"] = nopass_run(red.port)
    finally:
        red.stop()
    sasl_dir = tempfile.mkdtemp(prefix="auth-sasl-")
    why = make_sasldb(sasl_dir)
    if why:
        print(f"# memcached -S cannot be set up here ({why}): its comparison is left out")
    else:
        os.environ["SASL_CONF_PATH"] = sasl_dir
        mc = pt.start_memcached(a.memcached, ["-S"])
        del os.environ["SASL_CONF_PATH"]
        try:
            ref["sasl"] = sasl_run(mc.port, tools)
        finally:
            mc.stop()
    mc = pt.start_memcached(a.memcached)
    try:
        ref["nosasl"] = nosasl_run(mc.port)
    finally:
        mc.stop()
    shutil.rmtree(sasl_dir, ignore_errors=True)
    if a.target == "reference":
        for part, rec in ref.items():
            for name, ans in rec:
                print(f"{part}: {name} -> {ans!r}")
        res.exit()

    pt.require_program(a.proxy, "momento-proxy")
    got = {}
    px = pt.start_proxy(a.proxy, extra=["--requirepass", SECRET])
    try:
        got["resp"] = resp_run(px.ports["resp"], cli)
        if "sasl" in ref:
            got["sasl"] = sasl_run(px.ports["memcache"], tools)
        proxy_only_sasl(res, px.ports["memcache"])
        # What the proxy shows of itself once authenticated.
        info = resp_session(px.ports["resp"], [("AUTH", SECRET), ("INFO",), ("INFO", "all")])
        c = rawmc.Conn(px.ports["memcache"], timeout=pt.WATCHDOG)
        c.send(good_auth() + req(0x10))
        packets = [c.bin_response()]
        while not (packets[-1]["op"] == 0x10 and not packets[-1]["key"]):
            packets.append(c.bin_response())
        c.close()
        shown = repr(info) + repr(packets)
    finally:
        status = px.stop()
    with open(px.log_path, "rb") as f:
        output = f.read() + b"".join(px.stdout_rest)
    res.check("momento-proxy exits 0 on SIGTERM", status == 0,
              f"exit status {status}; stderr:\n{px.log_tail()}")
    px2 = pt.start_proxy(a.proxy)
    try:
        got["nopass"] = nopass_run(px2.ports["resp"])
        got["nosasl"] = nosasl_run(px2.ports["memcache"])
    finally:
        status = px2.stop()
    res.check("momento-proxy without a password exits 0 on SIGTERM", status == 0,
              f"exit status {status}; stderr:\n{px2.log_tail()}")

    proxy_only_memory(res, a.proxy)

    compare(res, "redis-server --requirepass", ref["resp"], got["resp"], EXPECT)
    compare(res, "redis-server", ref["nopass"], got["nopass"], {})
    if "sasl" in ref:
        compare(res, "memcached -S", ref["sasl"], got["sasl"], MC_EXPECT)
    compare(res, "memcached", ref["nosasl"], got["nosasl"], {})

    # The secret never shows: not in the proxy's output, not in INFO or
    # stats, not in any answer it gave.
    res.check("secret: not in the proxy's stderr nor stdout", SECRET.encode() not in output,
              "it is")
    res.check("secret: not in INFO nor the memcached port's stats",
              SECRET not in shown and "momento_cache" in shown and "curr_connections" in shown,
              f"INFO / stats: {shown[:300]!r}...")
    answers = repr([a for part in got.values() for _, a in part])
    res.check("secret: in no answer the proxy gave", SECRET not in answers, "it is")
    res.exit()


if __name__ == "__main__":
    main()
