#!/usr/bin/env python3
"""momento-proxy --config FILE (issue 48 item 3): a YAML file of the long
options and of `listeners:`, so that one proxy serves several caches on
several ports. No reference server here: each check states what must
happen.

  example     docs/momento-proxy.example.yaml as it stands but its ports (made
              0): two caches on three ports, through redis-py and
              pymemcache. A key set through one cache's port is not seen
              through the other cache's, and is through the memcache port of
              its own; each cache is created at start. proxy.md's copy of
              the example is the file, and it lists every option of --help.
  override    the command line over the file, wherever --config stands:
              --default-ttl, --cache (a listener naming none serves it) and
              --bind (a bare-port listener listens on it); --resp-port adds
              a port beside the file's listeners.
  spellings   `default_ttl` and `max-connections` in one file both apply.
  headers     `headers:` as a mapping and `header:` as a list reach
              Momento (momento-local's fault injection answers by them);
              --header adds to the file's.
  requirepass a file holding it that every user can read is warned about,
              one that only its owner reads is not; the secret is never
              printed.
  refusals    each way a file is wrong exits 2 before serving, with the
              message naming the file, the line and the key.

Usage: config.py --proxy PATH
Exits 77 when redis-py or pymemcache is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402
from rawresp import RawConn  # noqa: E402

pt.require_modules("redis", "pymemcache")
import redis  # noqa: E402
from pymemcache.client.base import Client as McClient  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                       "momento-proxy.example.yaml")
TMP = tempfile.TemporaryDirectory(prefix="px-config-")
F0 = b"\0\0\0\0"  # memcached flags 0 as the proxy stores them
_n = 0


def write_config(text, mode=0o600):
    """A config file of its own (the messages name it), mode as given."""
    global _n
    _n += 1
    path = os.path.join(TMP.name, f"proxy{_n}.yaml")
    with open(path, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())
    os.chmod(path, mode)
    return path


def log_of(px):
    with open(px.log_path, errors="replace") as f:
        return f.read()


def rconn(listener):
    proto, host, port, _ = listener
    assert proto == "resp", listener
    return redis.Redis(host=host, port=port, socket_timeout=pt.WATCHDOG)


def example(res, proxy):
    with open(EXAMPLE) as f:
        text = f.read()
    # proxy.md shows the example whole: the copy must be the file.
    with open(os.path.join(os.path.dirname(EXAMPLE), "proxy.md")) as f:
        doc = f.read()
    m = re.search(r"^## Config file\n.*?^```yaml\n(.*?)^```\n", doc, re.S | re.M)
    res.check("proxy.md's \"Config file\" shows docs/momento-proxy.example.yaml as it is",
              m is not None and m.group(1) == text,
              "no yaml block under '## Config file'" if m is None else "they differ")
    # Every option of --help is in the example, set or commented out.
    out = subprocess.run([proxy, "--help"], capture_output=True, timeout=pt.WATCHDOG).stdout
    names = set(re.findall(r"^\s+--([a-z][a-z-]+)", out.decode(), re.M)) - {"help", "config"}
    keys = {k.replace("_", "-") for k in re.findall(r"^#? ?([a-z][a-z_-]+):", text, re.M)}
    if "headers" in keys:
        keys.add("header")
    res.check("the example lists every option of --help", names and not names - keys,
              f"missing: {sorted(names - keys)}")
    text, n = re.subn(r"\b127\.0\.0\.1:(6379|6380|11211)\b", "127.0.0.1:0", text)
    res.check("the example's three listeners are on 127.0.0.1:6379, :11211 and :6380", n == 3,
              f"{n} replaced")
    px = pt.start_proxy_config(proxy, write_config(text), 3)
    try:
        ls = px.listeners
        res.check("the example serves sessions (RESP, memcache) and catalog (RESP), in its order",
                  [(p, h, c) for p, h, _, c in ls] == [("resp", "127.0.0.1", "sessions"),
                                                       ("memcache", "127.0.0.1", "sessions"),
                                                       ("resp", "127.0.0.1", "catalog")],
                  repr(ls))
        log = log_of(px)
        for cache in ("sessions", "catalog"):
            res.check(f"cache {cache} is created at start",
                      f"momento-proxy: cache '{cache}' on " in log, log)
        sess, cat = rconn(ls[0]), rconn(ls[2])
        mc = McClient(("127.0.0.1", ls[1][2]), timeout=pt.WATCHDOG, connect_timeout=pt.WATCHDOG)

        # A memcached item is its 4 flag bytes, then the data (proxy.md,
        # "Flags"): a value written through RESP carries them (0) for the
        # memcache port to read it, and one written there shows them.
        res.check("a SET through sessions' RESP port", sess.set("user:1", F0 + b"alice") is True)
        got = cat.get("user:1")
        res.check("is not seen through catalog's RESP port", got is None, repr(got))
        got = mc.get("user:1")
        res.check("and is through sessions' memcache port", got == b"alice", repr(got))

        res.check("a SET through catalog's port", cat.set("sku:9", F0 + b"lamp") is True)
        got = (sess.get("sku:9"), mc.get("sku:9"), cat.get("sku:9"))
        res.check("is seen through catalog's port only", got == (None, None, F0 + b"lamp"),
                  repr(got))

        res.check("a memcache set through sessions' port", mc.set("mc:k", b"v1") is True)
        got = (sess.get("mc:k"), cat.get("mc:k"))
        res.check("is seen through sessions' RESP port, not catalog's", got == (F0 + b"v1", None),
                  repr(got))

        # One key name, two caches, two values: each port answers its own.
        sess.set("shared", F0 + b"s")
        cat.set("shared", F0 + b"c")
        got = (sess.get("shared"), cat.get("shared"), mc.get("shared"))
        res.check("one key in both caches keeps a value per cache",
                  got == (F0 + b"s", F0 + b"c", b"s"), repr(got))
        mc.close()
    finally:
        status = px.stop()
    res.check("the example's proxy exits 0 on SIGTERM", status == 0,
              f"status {status}; stderr:\n{px.log_tail()}")


def ttl_after_set(listener):
    r = rconn(listener)
    r.set("ttl:k", "v")
    return r.ttl("ttl:k")


def override(res, proxy):
    path = write_config("cache: from-file\n"
                        "bind: 127.0.0.1\n"
                        "default-ttl: 100\n"
                        "listeners:\n"
                        "  - resp: 0\n")
    px = pt.start_proxy_config(proxy, path, 1)
    try:
        ttl = ttl_after_set(px.listeners[0])
        log = log_of(px)
    finally:
        px.stop()
    res.check("the file alone: its default-ttl applies", 0 < ttl <= 100, f"TTL {ttl}")
    res.check("the file alone: a bare port listens on its bind",
              px.listeners[0][1] == "127.0.0.1", repr(px.listeners))
    res.check("the file alone: a listener naming no cache serves the file's cache",
              "cache 'from-file' on " in log, log)

    # The same file with options on both sides of --config: each one over
    # the file's, the --bind and --cache ones reaching the listener too.
    px = pt.start_proxy_config(proxy, path, 1, before=["--default-ttl", "2000"],
                               after=["--cache", "from-cli", "--bind", "::1"])
    try:
        ttl = ttl_after_set(px.listeners[0])
        log = log_of(px)
    finally:
        px.stop()
    res.check("--default-ttl before --config overrides the file's", 1000 < ttl <= 2000,
              f"TTL {ttl}")
    res.check("--bind after --config moves the file's bare-port listener",
              px.listeners[0][1] == "::1", repr(px.listeners))
    res.check("--cache after --config is the cache of a listener naming none",
              "cache 'from-cli' on " in log and "from-file" not in log, log)

    # --resp-port beside a file's listeners: one port more, on --bind,
    # serving --cache (here the file's).
    px = pt.start_proxy_config(proxy, path, 2, after=["--resp-port", "0"])
    px.stop()
    res.check("--resp-port adds a port beside the file's listeners",
              [(p, h) for p, h, _, _ in px.listeners] == [("resp", "127.0.0.1")] * 2
              and px.listeners[0][2] != px.listeners[1][2], repr(px.listeners))


def spellings(res, proxy):
    px = pt.start_proxy_config(proxy, write_config("default_ttl: 100\n"
                                                   "max-connections: 1\n"
                                                   "listeners:\n"
                                                   "  - {resp: '127.0.0.1:0'}\n"), 1)
    try:
        port = px.listeners[0][2]
        a = RawConn(port)
        a.command("SET", "k", "v")
        ttl = a.command("TTL", "k")
        res.check("default_ttl (underscore) is --default-ttl", ttl[0] == ":" and 0 < ttl[1] <= 100,
                  repr(ttl))
        b = RawConn(port)
        got = b.reply_or("closed")
        res.check("max-connections (dash) is --max-connections: a second connection is refused",
                  got == ("-", "ERR max number of clients reached"), repr(got))
    finally:
        px.stop()


def headers(res, proxy):
    forms = {
        "headers: as a mapping": "headers:\n  return-error: internal\n  error-keys: bad:k\n",
        "header: as a list": "header:\n  - return-error=internal\n  - error-keys=bad:k\n",
    }
    # The command line's --header adds to the file's: only both together
    # make GET bad:k fail.
    forms["headers: in the file and --header beside it"] = "headers:\n  return-error: internal\n"
    for form, text in forms.items():
        after = ["--header", "error-keys=bad:k"] if "--header" in form else []
        px = pt.start_proxy_config(proxy, write_config(text + "listeners:\n  - resp: 0\n"), 1,
                                   after=after)
        try:
            c = RawConn(px.listeners[0][2])
            ok = (c.command("SET", "good:k", "v"), c.command("GET", "good:k"))
            bad = c.command("GET", "bad:k")
        finally:
            px.stop()
        res.check(f"{form}: calls not naming the key are answered", ok == (("+", "OK"), ("$", b"v")),
                  repr(ok))
        res.check(f"{form}: reach Momento (its injected error answers GET bad:k)",
                  bad[0] == "-" and bad[1].startswith("ERR momento INTERNAL_SERVER_ERROR"),
                  repr(bad))


def requirepass(res, proxy):
    secret = "s3cret-Zq9-never-printed"
    for mode, warned in ((0o644, True), (0o640, False), (0o600, False)):
        path = write_config(f"requirepass: {secret}\nlisteners:\n  - resp: 0\n", mode)
        px = pt.start_proxy_config(proxy, path, 1)
        px.stop()
        log = log_of(px)
        out = b"".join(px.stdout_rest).decode(errors="replace")
        want = (f"momento-proxy: warning: {path} holds requirepass and any user can read it "
                f"(mode {mode:04o}): chmod o-r {path}")
        res.check(f"requirepass in a file of mode {mode:04o}: "
                  f"{'a warning' if warned else 'no warning'}",
                  (want in log.splitlines()) == warned and ("warning" in log) == warned, log)
        res.check(f"requirepass in a file of mode {mode:04o}: the secret is not printed",
                  secret not in log and secret not in out, log)
    path = write_config("listeners:\n  - resp: 0\n", 0o644)
    px = pt.start_proxy_config(proxy, path, 1)
    px.stop()
    res.check("a readable file without requirepass: no warning", "warning" not in log_of(px),
              log_of(px))


LISTENER_FORM = ("must be a mapping {cache: NAME, resp: HOST:PORT} or "
                 "{cache: NAME, memcache: HOST:PORT}")
# (what, the file, the message after "momento-proxy: FILE:"). Each file
# would serve if it were right: the listener is there.
REFUSALS = [
    ("an unknown key", "cache: a\ntimeout: 5\nlisteners:\n  - resp: 0\n",
     "2: timeout: unknown key (the keys are --help's long options, and listeners)"),
    ("a list where a value goes", "cache: [a, b]\nlisteners:\n  - resp: 0\n",
     "1: cache: must be one value, not a list"),
    ("a mapping where a value goes", "timeout-ms:\n  value: 5\nlisteners:\n  - resp: 0\n",
     "2: timeout-ms: must be one value, not a mapping"),
    ("a key given twice", "cache: a\nbind: 127.0.0.1\ncache: b\nlisteners:\n  - resp: 0\n",
     "3: cache: given twice (first at line 1)"),
    ("a key given with - and with _", "default-ttl: 60\ndefault_ttl: 60\nlisteners:\n  - resp: 0\n",
     "2: default_ttl: given twice (first at line 1)"),
    ("header and headers both", "header: a=b\nheaders: {c: d}\nlisteners:\n  - resp: 0\n",
     "2: headers: given twice (first at line 1)"),
    ("a value out of range", "listeners:\n  - resp: 0\ntimeout-ms: 400000\n",
     "3: timeout-ms: '400000' must be 1 to 300000"),
    ("a flag neither true nor false", "no-coalesce: maybe\nlisteners:\n  - resp: 0\n",
     "1: no-coalesce: 'maybe' must be true or false"),
    ("a key without a value", "requirepass:\nlisteners:\n  - resp: 0\n",
     "1: requirepass: has no value: give one (quoted if it is the word null), or leave the key "
     "out for its default"),
    ("a null value", "cache: null\nlisteners:\n  - resp: 0\n",
     "1: cache: has no value: give one (quoted if it is the word null), or leave the key "
     "out for its default"),
    ("config inside a config file", "config: other.yaml\nlisteners:\n  - resp: 0\n",
     "1: config: a command-line option only"),
    ("a header name with =", "headers:\n  a=b: c\nlisteners:\n  - resp: 0\n",
     "2: headers: a header's name must be a name, without '='"),
    ("an empty listeners list", "cache: a\nlisteners: []\n",
     "2: listeners: an empty list: give at least one listener, or leave the key out"),
    ("listeners as a mapping", "listeners:\n  cache: a\n  resp: 0\n",
     "2: listeners: must be a list of listeners, each {cache: NAME, resp: HOST:PORT} or "
     "{cache: NAME, memcache: HOST:PORT}"),
    ("a listener that is a port", "listeners:\n  - resp: 0\n  - 6379\n",
     f"3: listeners[1]: {LISTENER_FORM}, not a value"),
    ("a listener without a port", "listeners:\n  - cache: a\n",
     "2: listeners[0]: needs resp: HOST:PORT or memcache: HOST:PORT"),
    ("a listener with two ports", "listeners:\n  - {cache: a, resp: 1, memcache: 2}\n",
     "2: listeners[0].memcache: a listener has one port (line 2 gave it): give another "
     "listener for this one"),
    ("a listener's unknown key", "listeners:\n  - {cache: a, redis: 6379}\n",
     "2: listeners[0].redis: unknown key (a listener has cache and one of resp, memcache)"),
    ("a listener's cache given twice", "listeners:\n  - resp: 0\n    cache: a\n    cache: b\n",
     "4: listeners[0].cache: given twice (first at line 3)"),
    ("a listener's empty cache name", "listeners:\n  - {cache: '', resp: 0}\n",
     "2: listeners[0].cache: must be 1 to 255 bytes"),
    ("an IPv6 address without brackets", "listeners:\n  - {resp: '::1:6379'}\n",
     "2: listeners[0].resp: an IPv6 address goes in brackets: [::1]:6379"),
    ("a port out of range", "listeners:\n  - {resp: '127.0.0.1:65536'}\n",
     "2: listeners[0].resp: the port must be 0 to 65535"),
    ("a host without a port", "listeners:\n  - {resp: localhost}\n",
     "2: listeners[0].resp: must be HOST:PORT, [IPV6]:PORT or a PORT on --bind"),
    ("two listeners on one HOST:PORT (one a bare port on bind)",
     "bind: 127.0.0.1\nlisteners:\n  - {cache: a, resp: 7000}\n"
     "  - {cache: b, memcache: '127.0.0.1:7000'}\n",
     "4: listeners[1]: 127.0.0.1:7000 is listeners[0]'s too (line 3)"),
    ("two listeners on one [IPV6]:PORT",
     "listeners:\n  - {cache: a, resp: '[::1]:7001'}\n  - {cache: a, resp: '127.0.0.1:7001'}\n"
     "  - {cache: b, resp: '[::1]:7001'}\n",
     "4: listeners[2]: [::1]:7001 is listeners[0]'s too (line 2)"),
    ("a YAML syntax error", "cache: a\n  bind: b\nlisteners:\n  - resp: 0\n",
     "2: YAML syntax: mapping values are not allowed in this context"),
    ("an unclosed flow list", "listeners: [{resp: 0}\ncache: a\n",
     "2: YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence at line 1)"),
    ("a list at the top level", "- cache: a\n",
     "1: (top level): must be a mapping of options (key: value), not a list"),
    ("a second document", "listeners:\n  - resp: 0\n---\ncache: b\n",
     "4: a second YAML document: a config file holds one"),
]


def run_refused(path, wrap=()):
    """The proxy's run with this file: a CompletedProcess; one that is
    still running at the watchdog (it took the file and served) is killed
    and returned with returncode None."""
    env = {k: v for k, v in os.environ.items() if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")}
    argv = [*wrap, proxy_path, "--config", path]
    try:
        return subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=pt.WATCHDOG, env=env)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(argv, None, e.stdout or b"", e.stderr or b"")


def check_refused(res, what, path, want, wrap=()):
    p = run_refused(path, wrap)
    err = p.stderr.decode(errors="replace")
    res.check(f"refused: {what}",
              p.returncode == 2 and want in err.splitlines() and not p.stdout,
              f"exit {p.returncode}; stdout {p.stdout!r}; stderr {err!r}; wanted {want!r}")


def refusals(res, proxy):
    global proxy_path
    proxy_path = proxy  # for run_refused()
    for what, text, tail in REFUSALS:
        path = write_config(text)
        check_refused(res, what, path, f"momento-proxy: {path}:{tail}")
    # A value the target options check: their own words, after FILE:LINE.
    path = write_config("endpoint: 'no port'\nlisteners:\n  - resp: 0\n")
    p = run_refused(path)
    err = p.stderr.decode(errors="replace")
    res.check("refused: a bad endpoint, with the file and line",
              p.returncode == 2 and err.startswith(f"momento-proxy: {path}:1: invalid --endpoint"),
              f"exit {p.returncode}; stderr {err!r}")
    # A YAML tag would change what the text means (the review: !!binary
    # made the password the base64 text itself).
    path = write_config("requirepass: !!binary c2VjcmV0\nlisteners:\n  - resp: 0\n")
    check_refused(res, "a value with a YAML tag", path,
                  f"momento-proxy: {path}:1: requirepass: has a YAML tag "
                  "(tag:yaml.org,2002:binary): give the value plain")
    # 64 listeners in the file leave no room for --resp-port: refused, not
    # dropped (the review: it served the 64 and ignored the port).
    path = write_config("listeners:\n" + "".join(
        f"  - {{cache: c, resp: 127.0.0.1:{20000 + i}}}\n" for i in range(64)))
    p = subprocess.run([proxy_path, "--config", path, "--resp-port", "0"], capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=pt.WATCHDOG)
    err = p.stderr.decode(errors="replace")
    res.check("refused: --resp-port beside 64 listeners",
              p.returncode == 2 and "invalid --resp-port '0': beside the config file's "
              "listeners makes over 64" in err and not p.stdout,
              f"exit {p.returncode}; stderr {err!r}")
    path = os.path.join(TMP.name, "missing.yaml")
    check_refused(res, "a missing file", path, f"momento-proxy: --config {path}: No such file or "
                  "directory")
    check_refused(res, "a directory", TMP.name, f"momento-proxy: --config {TMP.name}: Is a "
                  "directory")
    path = write_config(b"cache: a\xff\nlisteners:\n  - resp: 0\n")
    check_refused(res, "bytes that are not UTF-8", path,
                  f"momento-proxy: {path}: byte 8: not YAML text: invalid leading UTF-8 octet")
    path = write_config(b"# padding\n" * 110000 + b"listeners:\n  - resp: 0\n")
    check_refused(res, "a file over 1 MiB", path,
                  f"momento-proxy: {path}: over 1048576 bytes: too large for a config file")
    # An unreadable file: run as nobody when the test runs as root (who
    # reads any file). The same file readable is read (and refused for its
    # unknown key), so the refusal is the file's mode, not the path's.
    wrap = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            res.skipped += 1
            print("skip - refused: an unreadable file (running as root, without setpriv to "
                  "run the proxy as another user)")
            return
        wrap = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        os.chmod(TMP.name, 0o711)
    path = write_config("cache: a\ntimeout: 5\nlisteners:\n  - resp: 0\n", 0o644)
    check_refused(res, "a file readable by the proxy's user is read", path,
                  f"momento-proxy: {path}:2: timeout: unknown key (the keys are --help's long "
                  "options, and listeners)", wrap)
    os.chmod(path, 0o000)
    check_refused(res, "an unreadable file", path,
                  f"momento-proxy: --config {path}: Permission denied", wrap)


proxy_path = None


def shared_channels(res, proxy):
    """PUBLISH counts the subscribers of every listener of its cache, and
    none of another cache's (the review found each listener counting its
    own: PUBLISH on a second port of one cache answered 0 while the
    subscriber on the first received the message)."""
    text = ("listeners:\n  - {cache: pa, resp: 127.0.0.1:0}\n"
            "  - {cache: pa, resp: 127.0.0.1:0}\n  - {cache: pb, resp: 127.0.0.1:0}\n")
    px = pt.start_proxy_config(proxy, write_config(text), 3)
    try:
        a1, a2, b = px.listeners
        sub = rconn(a1).pubsub()
        sub.subscribe("ch")
        first = sub.get_message(timeout=pt.WATCHDOG)
        res.check("pub/sub: the subscription is confirmed",
                  first is not None and first.get("type") == "subscribe", repr(first))
        res.check("pub/sub: PUBLISH on the subscriber's port counts it",
                  rconn(a1).publish("ch", "m1") == 1)
        res.check("pub/sub: PUBLISH on another port of the same cache counts it",
                  rconn(a2).publish("ch", "m2") == 1)
        res.check("pub/sub: PUBLISH on another cache's port counts none",
                  rconn(b).publish("ch", "m3") == 0)
        got = []
        while len(got) < 2:
            m = sub.get_message(timeout=pt.WATCHDOG)
            if m is None:
                break
            if m.get("type") == "message":
                got.append(m["data"])
        res.check("pub/sub: the subscriber hears its cache's two messages, in order",
                  got == [b"m1", b"m2"], repr(got))
        sub.close()
    finally:
        px.stop()


def main():
    pt.run_proxy_checks(refusals, example, override, spellings, headers, requirepass,
                        shared_channels)

if __name__ == "__main__":
    main()
