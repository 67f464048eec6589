"""What every proxy test shares: the servers it starts (redis-server,
memcached, momento-proxy, momento-local), each on a free loopback port and
killed at the end, bounded waits instead of sleeps, and the step-by-step
comparison of a reference server's answers with the proxy's.

A script of steps runs once against the reference server (redis-server or
memcached, started by the test itself, so every expectation is proven by
the real thing) and once against momento-proxy; each step's answer is
recorded and the two records are compared. A step whose proxy answer is
meant to differ (Momento has no item without expiry, no database but 0,
its own cas uniques...) says so with an Expect: the answer the proxy must
give there, and why. Nothing is skipped silently."""
import atexit
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import rawconn

SKIP = 77
# The longest any one wait of these tests may take - a reply, a server's
# start or exit, a tool's run. Only a hang reaches it (every answer
# expected is a loopback round trip of milliseconds), so it is sized for a
# machine running two other CPU-bound jobs, not for the answer (issue 46).
WATCHDOG = 30


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def require_modules(*names):
    for name in names:
        try:
            __import__(name)
        except ImportError:
            skip(f"python module {name} is missing for {sys.executable} "
                 f"(Debian: python3-{name}; run the test with /usr/bin/python3)")


def require_program(path, what):
    if not path or not os.access(path, os.X_OK):
        skip(f"{what} not found ({path or 'no path given'})")


def status_kb(pid, field="VmRSS"):
    """A process's /proc/PID/status field in kB: VmRSS, VmHWM."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def free_port():
    """A loopback port nobody listened on a moment ago. Servers that take a
    port by number (redis-server, memcached) get one of these, and the start
    is retried with another if someone took it in between."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, timeout, what):
    """Polls pred() until it is true, for at most timeout seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def recv_until(sock, ending=None, buf=None, size=65536):
    """Reads sock until what it read ends with `ending` (bytes or a tuple
    of them), or, without one, until the peer closes; stops early when it
    closes. Returns what it read. An error of recv (a reset, a timeout)
    is raised as recv raised it, what came before it kept in `buf` (a
    bytearray) when the caller gives one."""
    if buf is None:
        buf = bytearray()
    while ending is None or not buf.endswith(ending):
        chunk = sock.recv(size)
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def settled(counts):
    """Waits until a proxy has no Momento call in flight and its command
    count stays the same across two readings: it has started all it will
    start. counts() gives (commands, calls in flight); returns that
    count."""
    last = [None]

    def still():
        n, in_flight = counts()
        same = in_flight == 0 and n == last[0]
        last[0] = n
        if not same:
            time.sleep(0.2)
        return same

    wait_until(still, WATCHDOG, "the proxy to stop starting commands")
    return last[0]


_children = []


def _kill_all():
    for p in _children:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


atexit.register(_kill_all)


def _on_signal(signum, frame):
    _kill_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)


class Server:
    """A server process this test started, with its port(s), its output
    kept for diagnostics, and a stop that is also run at exit."""

    def __init__(self, name, proc, log_path):
        self.name = name
        self.proc = proc
        self.log_path = log_path
        self.host = "127.0.0.1"
        self.port = None          # the main port (RESP or memcache)
        self.ports = {}
        _children.append(proc)

    def log_tail(self, n=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    # `with pt.start_proxy(...) as px:` stops it when the block ends.
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self, sig=signal.SIGTERM, timeout=WATCHDOG):
        """Sends sig and waits; returns the exit status (None if it had to
        be killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            return None


def _can_connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _start_by_port(name, argv_for_port, attempts=3):
    """Starts a server that takes its port on the command line, waiting for
    it to accept connections; another port is tried if it exits at start
    (the port was taken in between)."""
    last = ""
    for _ in range(attempts):
        port = free_port()
        log = tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".log", delete=False)
        proc = subprocess.Popen(argv_for_port(port), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        srv = Server(name, proc, log.name)
        srv.port = port
        try:
            wait_until(lambda: (not srv.alive()) or _can_connect(port), WATCHDOG,
                       f"{name} on {port}")
        except TimeoutError:
            srv.stop(signal.SIGKILL)
            raise
        if srv.alive():
            return srv
        last = srv.log_tail()
    raise RuntimeError(f"{name} did not start: {last}")


def start_redis(path):
    return _start_by_port("redis-server", lambda p: [
        path, "--port", str(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"])


def start_memcached(path, extra=()):
    # -U 0: no UDP; -u root only matters when the test runs as root, which
    # memcached refuses without it.
    return _start_by_port("memcached", lambda p: [
        path, "-p", str(p), "-l", "127.0.0.1", "-U", "0", "-u", "root", *extra])


def _read_lines(proc, take, enough, timeout):
    """Reads proc's stdout, each whole line given to take(line), until
    enough() is true, stdout ends or timeout passes. Returns the lines
    read (for a failure message) and the bytes read after the last one."""
    import selectors
    seen, buf = [], b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while not enough():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if not sel.select(left):
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            text = line.decode(errors="replace")
            seen.append(text)
            take(text)
    sel.close()
    return seen, buf


def _read_lines_until(proc, wanted, timeout):
    """Reads proc's stdout line by line until every prefix in wanted was
    seen (returns {prefix: rest of line}) or timeout passes; the lines read
    are returned too, for the failure message."""
    found = {}

    def take(text):
        for w in wanted:
            if text.startswith(w):
                found[w] = text[len(w):].strip()

    seen, _ = _read_lines(proc, take, lambda: len(found) >= len(wanted), timeout)
    return found, seen


def _drain(stream, sink):
    for chunk in iter(lambda: stream.read1(4096), b""):
        sink.append(chunk)


def start_proxy(path, resp=True, memcache=True, cache="proxy-test", default_ttl=3600,
                endpoint=None, extra=()):
    """Starts momento-proxy on ports 0 and reads the ports it prints
    (`resp listening on 127.0.0.1:PORT`, `memcache listening on ...`).
    Without endpoint it runs its embedded momento-local; with
    MOMENTO_PROXY_TEST_TRANSPORT=protosocket in the environment (meson's
    NAME_ps reruns) that server serves protosocket too and the proxy sends
    its gets, sets and deletes there."""
    argv = [path, "--cache", cache, "--default-ttl", str(default_ttl), "--bind", "127.0.0.1"]
    if not endpoint and os.environ.get("MOMENTO_PROXY_TEST_TRANSPORT") == "protosocket":
        argv += ["--transport", "protosocket"]
    if resp:
        argv += ["--resp-port", "0"]
    if memcache:
        argv += ["--memcache-port", "0"]
    if endpoint:
        argv += ["--endpoint", endpoint, "--insecure"]
    argv += list(extra)
    log = tempfile.NamedTemporaryFile(prefix="momento-proxy-", suffix=".log", delete=False)
    env = {k: v for k, v in os.environ.items() if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                            env=env)
    srv = Server("momento-proxy", proc, log.name)
    wanted = (["resp listening on "] if resp else []) + (["memcache listening on "] if memcache else [])
    found, seen = _read_lines_until(proc, wanted, WATCHDOG)
    if len(found) < len(wanted):
        srv.stop(signal.SIGKILL)
        raise RuntimeError(f"momento-proxy printed {seen!r}, not {wanted!r}; stderr:\n{srv.log_tail()}")
    # Keep reading stdout so that the proxy never blocks on a full pipe;
    # the lines read so far stay readable there (a later line, "metrics
    # listening on", may have come in the same read as the ports').
    srv.stdout_rest = [("\n".join(seen) + "\n").encode()]
    threading.Thread(target=_drain, args=(proc.stdout, srv.stdout_rest), daemon=True).start()
    for w, addr in found.items():
        host, _, port = addr.rpartition(":")
        if host != "127.0.0.1":
            srv.stop(signal.SIGKILL)
            raise RuntimeError(f"momento-proxy listens on {addr}, not on 127.0.0.1")
        srv.ports[w.split()[0]] = int(port)
    srv.port = srv.ports.get("resp") or srv.ports.get("memcache")
    return srv


# A port's line: "resp listening on 127.0.0.1:6379", "... on [::1]:6379",
# then " cache NAME" when the listeners serve several caches.
_LISTENING = re.compile(r"^(resp|memcache) listening on (\[[^\]]+\]|[^\s\[\]]+):(\d+)"
                        r"(?: cache (.+))?$")


def start_proxy_config(path, config, listeners, before=(), after=()):
    """Starts momento-proxy --config CONFIG (options `before` and `after`
    it on the command line) and reads the `listening on` line of each of
    its `listeners` ports: srv.listeners lists (protocol, host, port,
    cache or None) in the order printed, which is the order the proxy
    opens them (the file's listeners, then --resp-port, --memcache-port).
    The cache is named when the listeners serve more than one."""
    argv = [path, *before, "--config", config, *after]
    log = tempfile.NamedTemporaryFile(prefix="momento-proxy-", suffix=".log", delete=False)
    env = {k: v for k, v in os.environ.items() if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                            env=env)
    srv = Server("momento-proxy", proc, log.name)
    found = []

    def take(text):
        m = _LISTENING.match(text)
        if m:
            found.append((m.group(1), m.group(2).strip("[]"), int(m.group(3)), m.group(4)))

    seen, buf = _read_lines(proc, take, lambda: len(found) >= listeners, WATCHDOG)
    if len(found) < listeners:
        srv.stop(signal.SIGKILL)
        raise RuntimeError(f"momento-proxy printed {seen!r}, not {listeners} 'listening on' "
                           f"lines; stderr:\n{srv.log_tail()}")
    # The lines read so far stay readable there too, as start_proxy()'s
    # do: "metrics listening on" may have come in the same read.
    srv.stdout_rest = [("\n".join(seen) + "\n").encode() + buf]
    threading.Thread(target=_drain, args=(proc.stdout, srv.stdout_rest), daemon=True).start()
    srv.listeners = found
    srv.host, srv.port = found[0][1], found[0][2]
    return srv


def start_momento_local(path, cache="proxy-test"):
    log = tempfile.NamedTemporaryFile(prefix="momento-local-", suffix=".log", delete=False)
    proc = subprocess.Popen([path, "--port", "0", "--cache", cache], stdout=subprocess.PIPE,
                            stderr=log, stdin=subprocess.DEVNULL)
    srv = Server("momento-local", proc, log.name)
    found, seen = _read_lines_until(proc, ["listening on "], WATCHDOG)
    if not found:
        srv.stop(signal.SIGKILL)
        raise RuntimeError(f"momento-local printed {seen!r}")
    srv.stdout_rest = []
    threading.Thread(target=_drain, args=(proc.stdout, srv.stdout_rest), daemon=True).start()
    srv.port = int(found["listening on "].rpartition(":")[2])
    return srv


def metrics_port(px):
    """The port of a proxy started with a metrics listener, from its line
    "metrics listening on HOST:PORT"."""
    found = []

    def seen():
        m = re.search(rb"metrics listening on [^\n]*:(\d+)\n", b"".join(px.stdout_rest))
        if m:
            found.append(int(m.group(1)))
        return bool(found)
    wait_until(seen, WATCHDOG, "the proxy's metrics port")
    return found[0]


def scrape(port):
    """The Prometheus text of the metrics listener on `port`."""
    import urllib.request
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                  timeout=WATCHDOG).read().decode()


def metric(port, name):
    """One unlabelled sample's value (or a labelled one named whole), -1
    when absent."""
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", scrape(port), re.M)
    return int(m.group(1)) if m else -1


def start_refused(proxy, args):
    """Runs momento-proxy with --resp-port 0 and `args`, a start that must
    be refused: (exit status, stderr text)."""
    p = subprocess.run([proxy, "--resp-port", "0", *args], capture_output=True,
                       timeout=WATCHDOG, stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr.decode(errors="replace")


def check_starts_refused(res, proxy, cases):
    """Each (args, words) of `cases`: momento-proxy started with `args`
    exits 2 with `words` in its stderr. Long arguments are cut in the
    check's name."""
    for args, words in cases:
        code, err = start_refused(proxy, args)
        shown = " ".join(a if len(a) < 20 else a[:8] + "..." for a in args)
        res.check(f"{shown!r} is refused at start", code == 2 and words in err,
                  f"exit {code}, stderr {err!r}")


def check_config_refused(res, proxy, text, want, what):
    """momento-proxy started with a --config file holding `text` exits 2
    with `want` in its stderr, where {path} in `want` stands for the file's
    path; `what` names the check. The file is removed after."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        code, err = start_refused(proxy, ["--config", f.name])
        res.check(what, code == 2 and want.format(path=f.name) in err,
                  f"exit {code}, stderr {err!r}")
    finally:
        os.unlink(f.name)

def run_on_redis_and_memcached(a, run):
    """run(redis-server's port, memcached's port) against both reference
    servers, started for it (each required) and stopped after."""
    require_program(a.redis_server, "redis-server")
    require_program(a.memcached, "memcached")
    red = start_redis(a.redis_server)
    try:
        mcd = start_memcached(a.memcached)
        try:
            return run(red.port, mcd.port)
        finally:
            mcd.stop()
    finally:
        red.stop()


def end_if_reference(a, res, ref, width=300):
    """With --target reference: prints the reference run's (name, answer)
    records, each cut to `width` characters, and ends the test."""
    if a.target == "reference":
        for name, ans in ref:
            print(f"{name} -> {ans!r}"[:width])
        res.exit()


def attempt(out, name, fn):
    """Records (name, fn()), or the exception fn raised as the answer."""
    try:
        out.append((name, fn()))
    except Exception as e:  # the exception is the answer
        out.append((name, (type(e).__name__, str(e))))


class Expect:
    """A step whose proxy answer differs from the reference server's on
    purpose: `answer` is what the proxy must give (a value, or a function of
    the answer returning True when acceptable, described by `shown`), and
    `why` the documented reason."""

    def __init__(self, answer, why, shown=None):
        self.answer = answer
        self.why = why
        self.shown = shown

    def accepts(self, got):
        if callable(self.answer):
            try:
                return bool(self.answer(got))
            except Exception:
                return False
        return got == self.answer

    def describe(self):
        return self.shown or repr(self.answer)


_sanitized = {}


def sanitized(path):
    """Whether a binary is built with AddressSanitizer (tests/memcheck.sh's
    build-asan): its allocator keeps freed memory in quarantine and maps
    shadow memory, so the process's RSS says nothing about what the
    program itself holds."""
    if path not in _sanitized:
        try:
            with open(path, "rb") as f:
                _sanitized[path] = b"__asan_init" in f.read()
        except OSError:
            _sanitized[path] = False
    return _sanitized[path]


def run_against_redis(a, res, run, expect, default_ttl, reference_check=None,
                      proxies=(((), "momento-proxy"),), after=None):
    """A RESP script's run: `run(port, name)` against a redis-server it
    starts (its answers checked against EXPECT's notes, and by
    `reference_check(res, ref)` when given), then, unless --target
    reference, against a momento-proxy started with each of `proxies`'
    (extra argv, label), each compared with redis-server step by step (a
    run after the first one has its checks named "[label] ..."), then
    after(res); ends the test."""
    require_program(a.redis_server, "redis-server")
    red = start_redis(a.redis_server)
    try:
        ref = run(red.port, "redis-server")
    finally:
        red.stop()
    check_ref_expects(res, ref, expect, "redis-server")
    if reference_check:
        reference_check(res, ref)
    end_if_reference(a, res, ref)
    require_program(a.proxy, "momento-proxy")
    for k, (extra, label) in enumerate(proxies):
        px = start_proxy(a.proxy, memcache=False, default_ttl=default_ttl, extra=extra)
        try:
            got = run(px.ports["resp"], label)
        finally:
            status = px.stop()
        tag = f"[{label}] " if k else ""
        compare_records(res, "redis-server", [(tag + n, x) for n, x in ref],
                        [(tag + n, x) for n, x in got], {tag + n: e for n, e in expect.items()})
        res.check(f"{label} exits 0 on SIGTERM", status == 0,
                  f"exit status {status}; stderr:\n{px.log_tail()}")
    if after:
        after(res)
    res.exit()


class Sub(list):
    """What a flow returns to be compared as steps of their own, one per
    (sub-name, answer). A flow makes it with ctx.sub(), so that when the
    flow fails half-way the sub-steps it reached are kept, the failure
    added after them."""

    def add(self, name, answer):
        self.append((name, answer))


class StepCtx:
    """What a script's steps share on one server (run_steps); ctx.sub()
    starts a flow's sub-steps."""
    current = None

    def sub(self):
        self.current = Sub()
        return self.current


def run_steps(label, steps, ctx, answer, lost, timeouts, on_lost):
    """Runs each step, answer(ctx, step) its answer, against one server;
    returns [(name, answer)]. A step that raises one of `lost` (the
    connection gone or stuck) is answered on_lost(ctx, e), which also
    opens fresh connections for the steps that follow; after 4 of
    `timeouts` the rest are not run. Any other exception is the step's
    answer too; a flow's Sub gives a step per sub-step."""
    out = []
    stuck = 0
    t0 = time.monotonic()
    for st in steps:
        ctx.current = None
        if stuck >= 4:
            out.append((st.name, ("not run", "4 steps timed out before")))
            continue
        try:
            ans = answer(ctx, st)
            if isinstance(ans, Sub):
                out.extend((f"{st.name} / {n}", a) for n, a in ans)
                continue
        except lost as e:
            if isinstance(e, timeouts):
                stuck += 1
            ans = on_lost(ctx, e)
        except Exception as e:  # a step's own failure is an answer too
            ans = ("exception", type(e).__name__, str(e))
        if ctx.current is not None and not (ans is ctx.current):
            # A flow that failed half-way: the sub-steps it reached, then
            # the failure as one more.
            out.extend((f"{st.name} / {n}", a) for n, a in ctx.current)
            out.append((f"{st.name} / (failed here)", ans))
            continue
        out.append((st.name, ans))
    print(f"# {label}: {len(out)} steps in {time.monotonic() - t0:.2f} s")
    return out


def check_every_step_answered(res, ref, server):
    """No step of run_steps' reference run lost its connection, raised or
    was not run."""
    res.check(f"{server} answered every step", all(
        not (isinstance(x, tuple) and x and x[0] in ("connection", "exception", "not run"))
        for _, x in ref), "see the steps above")


@contextlib.contextmanager
def ends_recorded(out, closed, timed_out):
    """A connection the server closed (EOF, a reset, a broken pipe) or
    that stopped answering (a socket timeout) ends a case: `closed` or
    `timed_out` is appended to out as its last answer."""
    try:
        yield
    except (rawconn.Closed, BrokenPipeError, ConnectionResetError):
        out.append(closed)
    except socket.timeout:
        out.append(timed_out)


class Results:
    """Counts and prints TAP-like lines; exit() ends the test."""

    def __init__(self):
        self.failed = []
        self.passed = 0
        self.skipped = 0

    def ok(self, name):
        self.passed += 1
        print(f"ok - {name}")

    def fail(self, name, detail):
        self.failed.append(name)
        print(f"not ok - {name}\n    {detail}")

    def check(self, name, cond, detail=""):
        if cond:
            self.ok(name)
        else:
            self.fail(name, detail)
        return cond

    def check_memory(self, binary, name, cond, detail=""):
        """A check of a process's memory (VmRSS, VmHWM): skipped, and said
        so, when `binary` is a sanitizer build."""
        if sanitized(binary):
            self.skipped += 1
            print(f"skip - {name}: {binary} is an AddressSanitizer build, whose RSS is its "
                  f"allocator's quarantine and shadow, not the proxy's")
            return True
        return self.check(name, cond, detail)

    def exit(self):
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        print(f"# {self.passed} passed, {len(self.failed)} failed{skipped}")
        if self.failed:
            shown = self.failed[:40]
            more = f" and {len(self.failed) - 40} more" if len(self.failed) > 40 else ""
            print("# failed: " + ", ".join(shown) + more)
        sys.exit(1 if self.failed else 0)


def compare_records(res, ref_name, ref, proxy, expects):
    """ref and proxy: lists of (step name, answer) in script order (both
    runs of the same script). expects: {step name: Expect}."""
    ref_names = {n for n, _ in ref}
    for n, a in proxy:
        if n not in ref_names:
            res.fail(n, f"a step {ref_name} did not have; proxy: {a!r}")
    pm = dict(proxy)
    for name, want in ref:
        if name not in pm:
            res.fail(name, "the proxy run did not reach this step")
            continue
        got = pm[name]
        e = expects.get(name)
        if e is not None:
            res.check(name, e.accepts(got),
                      f"{ref_name}: {want!r}; proxy must give {e.describe()} ({e.why}); "
                      f"proxy gave: {got!r}")
        else:
            res.check(name, got == want, f"{ref_name}: {want!r}; proxy: {got!r}")


def check_ref_expects(res, ref, expects, ref_name):
    """Every Expect names a step of the script (a misspelt one would never
    apply and let the real difference go unnoticed)."""
    names = {n for n, _ in ref}
    for name in expects:
        if name not in names:
            res.fail(f"expectation {name}", f"no step of that name ran against {ref_name}")


def number_repeated(steps):
    """Steps whose names repeat are numbered (#1, #2...) so that each has
    a name of its own: the records are compared by name."""
    names = [s.name for s in steps]
    dup = {n for n in names if names.count(n) > 1}
    seen = {}
    for s in steps:
        if s.name in dup:
            seen[s.name] = seen.get(s.name, 0) + 1
            s.name = f"{s.name} #{seen[s.name]}"


def ttl_class(t, default_ttl):
    """A TTL (TTL's answer, in s) as a fact comparable between Redis and
    the proxy run with --default-ttl default_ttl: none, the proxy's default
    (or up to a minute under it), kept (over 3000 s: the 3600 s a script
    set), or the number."""
    if t == -1:
        return "no TTL"
    if default_ttl - 60 <= t <= default_ttl:
        return "the default TTL"
    if t > 3000:
        return "kept (> 3000 s)"
    return t


def run_proxy_checks(*checks):
    """The whole run of a script with no reference server: the arguments
    parsed, momento-proxy required, then each check(res, proxy path) in
    order; ends the test."""
    a = parse_common_args(sys.argv[1:])
    require_program(a.proxy, "momento-proxy")
    res = Results()
    for check in checks:
        check(res, a.proxy)
    res.exit()

def parse_common_args(argv, extra=()):
    """--target reference|proxy|both (default both), --proxy PATH,
    --redis-server PATH, --memcached PATH, --momento-local PATH and
    whatever names extra lists, as a dict."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=["reference", "redis", "memcached", "proxy", "both"],
                    default="both")
    ap.add_argument("--proxy", default="")
    ap.add_argument("--redis-server", default="")
    ap.add_argument("--memcached", default="")
    ap.add_argument("--momento-local", default="")
    # Every script takes every program, so that meson gives them all one
    # argument list.
    for e in ("--redis-cli", "--redis-benchmark", "--tools-dir", "--tls-keyupdate", *extra):
        if e not in ap._option_string_actions:
            ap.add_argument(e, default="")
    a = ap.parse_args(argv)
    if a.target in ("redis", "memcached"):
        a.target = "reference"
    return a
