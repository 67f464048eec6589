#!/usr/bin/env python3
"""momento-proxy over TLS (issue 48 item 2: --tls-cert, --tls-key, --tls-ca,
SIGHUP), with real clients: redis-cli --tls, redis-py ssl=True, pymemcache
with a tls_context, and Python's ssl module on a raw socket.

A throwaway CA, server and client certificates are made with `openssl` in a
temporary directory at each run (nothing is committed). Where redis-server
can show what a TLS server answers (it is started with --tls-port and the
same files), the same steps run against it first and the answers are
compared step by step:
- redis-cli and redis-py commands over TLS;
- plaintext on the TLS port: nothing is answered, the connection closes;
- QUIT: +OK, then the end of the TLS stream (close_notify);
- with client certificates required (--tls-ca / --tls-auth-clients yes):
  a client without one, or with one another CA signed, is refused; one the
  CA signed is served.
Against the proxy alone:
- the memcached port over TLS (pymemcache, text protocol on ssl);
- SIGHUP after the certificate files changed: a new connection sees the new
  certificate (serial, subject), one opened before still works; SIGHUP with
  a broken key file keeps serving with the last good certificate, and
  stderr says why; a bad file at start stops the start;
- a client that connects and never handshakes (and one that sends part of
  a ClientHello) does not hold up another: the other is answered while
  both are still connected; both are then closed by the handshake deadline;
- a pipeline of 300 GETs of 64 KiB values (each reply several TLS records)
  read back in order; commands whose bytes end just past what one read
  takes (64 KiB), so that the last of them sit in OpenSSL's buffer, which
  epoll does not report, 20 times;
- a slow reader over TLS: 300 pipelined GETs of 1 MiB never read; the proxy
  starts only what fits the reply budget, another connection is answered,
  and the 300 replies then arrive in order;
- --max-connections over TLS: the refused client reads nothing, not the
  plaintext error a plain port writes.

No check asserts an elapsed time: the handshake deadline is waited for up
to the watchdog, and its check is that the proxy closed the connections,
after another client was served while they were open.
"""
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import encode  # noqa: E402

SERIAL_A = "1001"  # the certificate the proxy starts with
SERIAL_B = "2002"  # the one a SIGHUP puts in place
SUBJECT_B = "proxy-reloaded"


# ---- certificates ----

def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=pt.WATCHDOG)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {r.stdout.decode(errors='replace')}")


def make_certs(d):
    """Two CAs; server certificates A and B (CA 1); client certificates from
    CA 1 and CA 2. EC P-256 keys: quick to make."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca1", "ca2"):
        openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "2",
                "-subj", f"/CN=momento-proxy test {ca}", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName = DNS:localhost, IP:127.0.0.1\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage = clientAuth\n")

    def leaf(name, cn, ca, serial, ext):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}",
                cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                "-set_serial", "0x" + serial, "-days", "2", "-extfile", ext, "-out", f"{name}.crt",
                cwd=d)

    leaf("server_a", "localhost", "ca1", SERIAL_A, "server.ext")
    leaf("server_b", SUBJECT_B, "ca1", SERIAL_B, "server.ext")
    leaf("client1", "client of ca1", "ca1", "3003", "client.ext")
    leaf("client2", "client of ca2", "ca2", "4004", "client.ext")
    return {n: os.path.join(d, n) for n in
            ("ca1.crt", "ca2.crt", "server_a.crt", "server_a.key", "server_b.crt",
             "server_b.key", "client1.crt", "client1.key", "client2.crt", "client2.key")}


# ---- clients ----

def client_ctx(certs, cert=None):
    ctx = ssl.create_default_context(cafile=certs["ca1.crt"])
    if cert:
        ctx.load_cert_chain(certs[cert + ".crt"], certs[cert + ".key"])
    return ctx


class TlsConn:
    """RESP over TLS on a raw socket: the wire form of each reply."""

    def __init__(self, port, ctx, suppress_ragged_eofs=True):
        raw = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost",
                                    suppress_ragged_eofs=suppress_ragged_eofs)
        self.buf = b""

    def serial(self):
        return self.sock.getpeercert()["serialNumber"].lstrip("0")

    def subject_cn(self):
        return dict(x[0] for x in self.sock.getpeercert()["subject"])["commonName"]

    def send(self, data):
        self.sock.sendall(data)

    def command(self, *args):
        self.send(encode(args))
        return self.reply()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("closed")
        self.buf += chunk

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return (t.decode(), rest.decode(errors="replace"))
        if t == b":":
            return (":", int(rest))
        if t == b"$":
            n = int(rest)
            return ("$", None) if n < 0 else ("$", self.exact(n + 2)[:-2])
        if t == b"*":
            return ("*", [self.reply() for _ in range(int(rest))])
        raise ValueError(f"not a RESP reply: {line!r}")

    def close(self):
        self.sock.close()


def refused_or_served(port, ctx):
    """A client with `ctx` connects and sends PING: "served" when +PONG
    comes back, "refused" when the handshake or the first read fails (in
    TLS 1.3 the server checks the client's certificate after the client's
    handshake is done, so the refusal is seen at the first read)."""
    try:
        c = TlsConn(port, ctx)
    except (ssl.SSLError, ConnectionError):
        return "refused"
    try:
        r = c.command("PING")
        return "served" if r == ("+", "PONG") else f"answered {r!r}"
    except (ssl.SSLError, ConnectionError, EOFError):
        return "refused"
    finally:
        c.close()


def plaintext_answer(port, request):
    """Sends `request` in plaintext to a TLS port and reads until the
    server closes: what came back, and how it closed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    s.sendall(request)
    got = bytearray()
    try:
        return pt.recv_until(s, buf=got), "closed"
    except ConnectionResetError:
        return bytes(got), "closed"
    except socket.timeout:
        return bytes(got), "still open"
    finally:
        s.close()


def redis_cli(a, port, certs, *args):
    r = subprocess.run([a.redis_cli, "-h", "127.0.0.1", "-p", str(port), "--tls", "--cacert",
                        certs["ca1.crt"], *args], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=pt.WATCHDOG)
    return r.stdout.decode(errors="replace").strip()


def end_after_quit(port, ctx):
    """QUIT's answer, then how the stream ends: "close_notify" (a clean
    end of TLS) or "cut" (TCP closed without it)."""
    # Python's contexts take an end without close_notify as a clean end
    # (OP_IGNORE_UNEXPECTED_EOF): here it must show.
    ctx.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF
    c = TlsConn(port, ctx, suppress_ragged_eofs=False)
    try:
        r = c.command("QUIT")
        try:
            end = "close_notify" if c.sock.recv(100) == b"" else "more bytes"
        except ssl.SSLError as e:
            cut = isinstance(e, ssl.SSLEOFError) or "UNEXPECTED_EOF" in str(e)
            end = "cut" if cut else f"error {e!r}"
        except ConnectionError as e:
            end = f"error {e!r}"
        return r, end
    finally:
        c.close()


def script(a, port, certs):
    """The steps that run against redis-server --tls-port and the proxy."""
    import redis
    steps = []
    steps.append(("redis-cli --tls SET", redis_cli(a, port, certs, "SET", "tk", "hello")))
    steps.append(("redis-cli --tls GET", redis_cli(a, port, certs, "GET", "tk")))
    steps.append(("redis-cli --tls PING", redis_cli(a, port, certs, "PING")))
    r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=certs["ca1.crt"],
                    socket_timeout=pt.WATCHDOG)
    steps.append(("redis-py ssl set", r.set("tp", b"v" * 100000)))
    steps.append(("redis-py ssl get 100000 bytes", r.get("tp") == b"v" * 100000))
    steps.append(("redis-py ssl incr", [r.incr("tn"), r.incr("tn", 5)]))
    p = r.pipeline(transaction=False)
    for i in range(50):
        p.set(f"tq{i}", f"value {i}")
    p.mget([f"tq{i}" for i in range(50)])
    steps.append(("redis-py ssl pipeline of 51", p.execute()))
    r.close()
    steps.append(("plaintext PING on the TLS port", plaintext_answer(port, b"PING\r\n")))
    steps.append(("plaintext inline command on the TLS port",
                  plaintext_answer(port, b"*1\r\n$4\r\nPING\r\n" * 10)))
    steps.append(("QUIT over TLS", end_after_quit(port, client_ctx(certs))))
    return steps


def script_client_auth(a, port, certs):
    steps = []
    steps.append(("no client certificate", refused_or_served(port, client_ctx(certs))))
    steps.append(("a client certificate of another CA",
                  refused_or_served(port, client_ctx(certs, "client2"))))
    steps.append(("a client certificate of the CA", refused_or_served(port, client_ctx(certs, "client1"))))
    cli = subprocess.run([a.redis_cli, "-h", "127.0.0.1", "-p", str(port), "--tls", "--cacert",
                          certs["ca1.crt"], "--cert", certs["client1.crt"], "--key",
                          certs["client1.key"], "PING"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=pt.WATCHDOG)
    steps.append(("redis-cli with the CA's client certificate", cli.stdout.decode().strip()))
    return steps


def start_redis_tls(path, certs, auth_clients):
    return pt._start_by_port("redis-server", lambda p: [
        path, "--port", "0", "--tls-port", str(p), "--bind", "127.0.0.1",
        "--tls-cert-file", certs["server_a.crt"], "--tls-key-file", certs["server_a.key"],
        "--tls-ca-cert-file", certs["ca1.crt"], "--tls-auth-clients",
        "yes" if auth_clients else "no", "--save", "", "--appendonly", "no",
        "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"])


def start_tls_proxy(a, cert, key, ca=None, extra=()):
    args = ["--tls-cert", cert, "--tls-key", key] + (["--tls-ca", ca] if ca else [])
    return pt.start_proxy(a.proxy, extra=[*args, *extra])


def compared(res, a, certs):
    """The steps redis-server shows, then the proxy's, compared."""
    for auth, run, what in ((False, script, "TLS"),
                            (True, script_client_auth, "TLS, client certificates required")):
        red = start_redis_tls(a.redis_server, certs, auth)
        try:
            ref = run(a, red.port, certs)
        finally:
            red.stop()
        px = start_tls_proxy(a, certs["server_a.crt"], certs["server_a.key"],
                             ca=certs["ca1.crt"] if auth else None)
        try:
            got = run(a, px.ports["resp"], certs)
        finally:
            status = px.stop()
        ref = [(f"{what}: {n}", v) for n, v in ref]
        got = [(f"{what}: {n}", v) for n, v in got]
        pt.compare_records(res, "redis-server", ref, got, {})
        res.check(f"{what}: momento-proxy exits 0 on SIGTERM", status == 0,
                  f"exit status {status}; stderr:\n{px.log_tail()}")
        # What redis-server's own answers prove, said once: a client
        # without the CA's certificate is refused, plaintext is not served.
        refs = dict(ref)
        if auth:
            res.check(f"{what}: redis-server refuses a client without a certificate",
                      refs[f"{what}: no client certificate"] == "refused")
        else:
            res.check(f"{what}: redis-server answers nothing in plaintext",
                      refs[f"{what}: plaintext PING on the TLS port"] == (b"", "closed"))


# ---- the proxy alone ----

def memcache_over_tls(res, px, certs):
    from pymemcache.client.base import Client
    c = Client(("127.0.0.1", px.ports["memcache"]), tls_context=client_ctx(certs),
               timeout=pt.WATCHDOG, connect_timeout=pt.WATCHDOG)
    big = os.urandom(200000)
    res.check("memcache over TLS: pymemcache set", c.set("mt", big) is True)
    res.check("memcache over TLS: pymemcache get of 200000 bytes", c.get("mt") == big)
    c.set_many({f"mm{i}": f"v{i}" for i in range(100)})
    got = c.get_many([f"mm{i}" for i in range(100)])
    res.check("memcache over TLS: get_many of 100 keys",
              got == {f"mm{i}": f"v{i}".encode() for i in range(100)}, repr(got)[:200])
    c.close()
    data, how = plaintext_answer(px.ports["memcache"], b"version\r\n")
    res.check("memcache port: plaintext `version` is answered nothing, and closed",
              (data, how) == (b"", "closed"), f"{data!r}, {how}")


def handshake_metrics(res, px):
    """The metrics port counts what the steps before did: plaintext on the
    TLS ports failed handshakes (at least the memcache port's `version`),
    and the two silent clients' handshakes timed out."""
    import re
    body = pt.scrape(pt.metrics_port(px))
    values = dict(re.findall(r"^momento_proxy_(tls_handshake_\w+_total) (\d+)$", body, re.M))
    res.check("metrics: failed TLS handshakes counted",
              int(values.get("tls_handshake_failures_total", 0)) >= 1, repr(values))
    res.check("metrics: the two silent clients' handshakes counted as timed out",
              int(values.get("tls_handshake_timeouts_total", 0)) == 2, repr(values))


def key_updates(res, a, px):
    """TLS 1.3 KeyUpdates that ask the proxy to update its keys too, sent
    while the proxy cannot write (its client reads nothing until then): the
    proxy answers one while a reply record is half written. Every reply
    must still arrive (the review: OpenSSL failed the session, 'bad length',
    and the client lost the rest of 5 MB of replies)."""
    if not a.tls_keyupdate or not os.access(a.tls_keyupdate, os.X_OK):
        res.skipped += 1
        print("skip - KeyUpdate while the proxy's write is blocked: no tls_keyupdate client")
        return
    for n, k in ((5000, 5), (8000, 50)):
        p = subprocess.run([a.tls_keyupdate, str(px.ports["resp"]), str(n), str(k), "1000"],
                           capture_output=True, timeout=120)
        out = p.stdout.decode(errors="replace")
        res.check(f"{k} KeyUpdates after {n} pipelined GETs of 1000 bytes: every reply arrives",
                  p.returncode == 0 and out.startswith("all "), out[-500:])


def wait_log(px, text, after):
    """Waits until the proxy's stderr, past offset `after`, has `text`."""
    def seen():
        with open(px.log_path, errors="replace") as f:
            f.seek(after)
            return text in f.read()
    pt.wait_until(seen, pt.WATCHDOG, f"'{text}' on the proxy's stderr")


def log_size(px):
    return os.path.getsize(px.log_path)


def reload(res, a, certs, d):
    cert, key = os.path.join(d, "live.crt"), os.path.join(d, "live.key")
    shutil.copy(certs["server_a.crt"], cert)
    shutil.copy(certs["server_a.key"], key)
    px = start_tls_proxy(a, cert, key)
    try:
        port = px.ports["resp"]
        old = TlsConn(port, client_ctx(certs))
        res.check("reload: the first certificate is served", old.serial() == SERIAL_A,
                  old.serial())
        res.check("reload: a command before it", old.command("SET", "rk", "1") == ("+", "OK"))

        shutil.copy(certs["server_b.crt"], cert)
        shutil.copy(certs["server_b.key"], key)
        at = log_size(px)
        px.proc.send_signal(signal.SIGHUP)
        wait_log(px, "TLS: reloaded", at)
        new = TlsConn(port, client_ctx(certs))
        res.check("reload: after SIGHUP a new connection gets the new certificate's serial",
                  new.serial() == SERIAL_B, new.serial())
        res.check("reload: and its subject", new.subject_cn() == SUBJECT_B, new.subject_cn())
        res.check("reload: the new connection is served", new.command("GET", "rk") == ("$", b"1"))
        res.check("reload: the connection opened before it still works",
                  old.command("INCR", "rk") == (":", 2))

        with open(key, "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        at = log_size(px)
        px.proc.send_signal(signal.SIGHUP)
        wait_log(px, "reload failed", at)
        with open(px.log_path, errors="replace") as f:
            f.seek(at)
            said = f.read()
        res.check("reload: a broken key file is refused, and stderr names it",
                  "reload failed" in said and key in said, said)
        res.check("reload: the proxy is still running", px.alive())
        third = TlsConn(port, client_ctx(certs))
        res.check("reload: after the failed reload a new connection gets the last good "
                  "certificate", third.serial() == SERIAL_B, third.serial())
        res.check("reload: and is served", third.command("GET", "rk") == ("$", b"2"))
        res.check("reload: the older connections still work",
                  old.command("PING") == ("+", "PONG") and new.command("PING") == ("+", "PONG"))
        for c in (old, new, third):
            c.close()
    finally:
        status = px.stop()
    res.check("reload: momento-proxy exits 0 on SIGTERM", status == 0, px.log_tail())

    # A bad file at start: no port opens, the file is named.
    r = subprocess.run([a.proxy, "--resp-port", "0", "--tls-cert", certs["server_a.crt"],
                        "--tls-key", key], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=pt.WATCHDOG,
                       env={k: v for k, v in os.environ.items()
                            if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")})
    res.check("a broken key at start: the proxy exits non-zero, naming the file, serving nothing",
              r.returncode != 0 and key in r.stderr.decode() and b"listening" not in r.stdout,
              f"exit {r.returncode}; stdout {r.stdout!r}; stderr {r.stderr!r}")


def still_open(s):
    """The proxy has neither closed nor reset this socket (nothing to read:
    it never sent a byte, so readable means closed)."""
    r, _, _ = select.select([s], [], [], 0)
    return not r


def closed_by_proxy(s):
    """Waits (at most the watchdog) for the proxy to close s."""
    s.settimeout(pt.WATCHDOG)
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def silent_clients(res, px, certs):
    """Started first; their end is checked last (handshake_deadline)."""
    port = px.ports["resp"]
    mute = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    partial = socket.create_connection(("127.0.0.1", port), timeout=pt.WATCHDOG)
    partial.sendall(b"\x16\x03\x01\x00")  # the start of a ClientHello record, never finished
    other = TlsConn(port, client_ctx(certs))
    served = other.command("PING") == ("+", "PONG")
    other.close()
    res.check("a client that never handshakes, and one stopped mid-ClientHello: another is "
              "served while both are still connected",
              served and still_open(mute) and still_open(partial),
              f"served {served}, mute open {still_open(mute)}, partial open {still_open(partial)}")
    return mute, partial


def handshake_deadline(res, mute, partial):
    res.check("the client that never handshakes is closed by the handshake deadline",
              closed_by_proxy(mute))
    res.check("the one stopped mid-ClientHello too", closed_by_proxy(partial))
    mute.close()
    partial.close()


def big_pipeline(res, px, certs):
    port = px.ports["resp"]
    c = TlsConn(port, client_ctx(certs))
    values = [bytes([65 + i]) * 65536 for i in range(10)]
    for i, v in enumerate(values):
        c.command("SET", f"big{i}", v)
    n = 300
    c.send(b"".join(encode(["GET", f"big{i % 10}"]) for i in range(n)))
    bad = None
    for i in range(n):
        r = c.reply()
        if r != ("$", values[i % 10]):
            bad = (i, r[0], len(r[1]) if r[1] else r[1])
            break
    res.check(f"{n} pipelined GETs of 64 KiB over TLS: every reply, in order", bad is None,
              f"reply {bad}")

    c.close()


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def sized_set(key, size):
    """A SET of `key` whose wire form is `size` bytes or a byte or two less."""
    v = size - len(encode(["SET", key, b""]))
    while len(encode(["SET", key, b"v" * v])) > size:
        v -= 1
    return encode(["SET", key, b"v" * v])


def buffered_records(res, px, certs):
    """The hang epoll cannot see. The proxy reads at most 64 KiB per event,
    and OpenSSL reads ahead: the records after the one a read stopped at
    may already be in the session's buffer, not the socket's, and epoll
    never reports them. Here the proxy is stopped (SIGSTOP) while the
    client writes commands of R bytes, each its own TLS record, a few
    more than 64 KiB of them; once it runs again they are all in the
    socket, its first read stops at 64 KiB with read-ahead records
    behind, and the last commands are answered only if the proxy reads
    what its session holds. Several record sizes, so that the stop falls
    inside OpenSSL's read-ahead window whatever its size."""
    c = TlsConn(px.ports["resp"], client_ctx(certs))
    c.command("PING")
    failed = []
    for size in (200, 500, 1000, 1500, 3000, 5000):
        n = 65536 // size + 3
        cmds = [sized_set(f"r{i:05d}", size) for i in range(n)]
        px.proc.send_signal(signal.SIGSTOP)
        try:
            pt.wait_until(lambda: proc_state(px.proc.pid) == "T", pt.WATCHDOG,
                          "the proxy to stop")
            for cmd in cmds:
                c.send(cmd)  # one record each
        finally:
            px.proc.send_signal(signal.SIGCONT)
        try:
            got = [c.reply() for _ in range(n)]
            if got != [("+", "OK")] * n:
                failed.append(f"{size}-byte records: {got[:3]!r}...")
        except (socket.timeout, OSError, EOFError) as e:
            failed.append(f"{size}-byte records: {e!r}")
            break
    res.check("commands in TLS records OpenSSL read ahead past one read's 64 KiB: every one "
              "answered", not failed, "; ".join(failed))
    c.close()


def info_counts(port, certs):
    info = TlsConn(port, client_ctx(certs))
    text = info.command("INFO")[1].decode()
    info.close()
    f = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    return int(f["total_commands_processed"]), int(f["momento_in_flight"])


def slow_reader(res, px, certs, gets, what):
    """`gets` pipelined GETs of 1 MiB, unread until the proxy stops starting
    them (the connection is paused at its reply budget, the rest of the
    GETs in its input), then read."""
    port = px.ports["resp"]
    value = b"s" * (1 << 20)
    c = TlsConn(port, client_ctx(certs))
    c.command("SET", "slow", value)
    infos = [0]

    def counts():
        n, in_flight = info_counts(port, certs)
        infos[0] += 1
        return n - infos[0], in_flight

    before, _ = counts()
    c.send(encode(["GET", "slow"]) * gets)
    started = pt.settled(counts) - before
    res.check(f"{what}: of {gets} pipelined GETs of 1 MiB the proxy starts only what fits the "
              f"reply budget", started <= 16 + 2, f"{started} started")
    other = TlsConn(port, client_ctx(certs))
    res.check(f"{what}: another connection is answered meanwhile",
              other.command("PING") == ("+", "PONG"))
    other.close()
    want = b"$%d\r\n" % len(value) + value + b"\r\n"
    bad = None
    for i in range(gets):
        got = c.exact(len(want))
        if got != want:
            bad = i
            break
    res.check(f"{what}: once it reads, its {gets} replies arrive in order",
              bad is None, f"reply {bad} differs")
    c.close()


def max_connections(res, a, certs):
    px = start_tls_proxy(a, certs["server_a.crt"], certs["server_a.key"],
                         extra=["--max-connections", "1"])
    try:
        port = px.ports["resp"]
        first = TlsConn(port, client_ctx(certs))
        first.command("PING")
        data, how = plaintext_answer(port, b"")
        res.check("--max-connections over TLS: the refused client reads nothing and is closed",
                  (data, how) == (b"", "closed"), f"{data!r}, {how}")
        res.check("--max-connections over TLS: the first client is still served",
                  first.command("PING") == ("+", "PONG"))
        first.close()
    finally:
        px.stop()


def main():
    a = pt.parse_common_args(sys.argv[1:])
    pt.require_program(a.proxy, "momento-proxy")
    pt.require_program(a.redis_server, "redis-server")
    pt.require_program(a.redis_cli, "redis-cli")
    pt.require_program(shutil.which("openssl"), "openssl")
    pt.require_modules("redis", "pymemcache")
    help_text = subprocess.run([a.redis_cli, "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT).stdout
    if b"--tls" not in help_text:
        pt.skip("redis-cli is built without TLS")
    res = pt.Results()
    d = tempfile.mkdtemp(prefix="proxy-tls-")
    try:
        certs = make_certs(d)
        compared(res, a, certs)
        px = start_tls_proxy(a, certs["server_a.crt"], certs["server_a.key"],
                             extra=["--metrics-port", "0"])
        try:
            mute, partial = silent_clients(res, px, certs)
            memcache_over_tls(res, px, certs)
            big_pipeline(res, px, certs)
            slow_reader(res, px, certs, 300, "slow reader over TLS")
            buffered_records(res, px, certs)
            handshake_deadline(res, mute, partial)
            handshake_metrics(res, px)
            key_updates(res, a, px)
            res.check("the proxy is still running", px.alive(), px.log_tail())
        finally:
            status = px.stop()
        res.check("momento-proxy exits 0 on SIGTERM", status == 0, px.log_tail())
        reload(res, a, certs, d)
        max_connections(res, a, certs)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    res.exit()


if __name__ == "__main__":
    main()
