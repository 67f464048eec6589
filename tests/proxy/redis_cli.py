#!/usr/bin/env python3
"""redis-cli (redis-tools), a client no one here wrote, against
momento-proxy and against redis-server: the same invocations - a command
in argv, --no-raw, commands read from stdin, -x, -r, --pipe, and an
interactive session on a terminal (a pty, TERM=dumb so that linenoise
prints plainly; redis-cli then also asks COMMAND DOCS for its hints) -
must print the same and exit the same, the server's port taken out.

Usage: redis_cli.py [--target reference|proxy|both] --redis-server PATH
                    --redis-cli PATH --proxy PATH"""
import os
import pty
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytest as pt  # noqa: E402


def run_cli(cli, port, args, stdin=b"", timeout=pt.WATCHDOG):
    try:
        p = subprocess.run([cli, "-h", "127.0.0.1", "-p", str(port), *args], input=stdin,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ("timed out", timeout)
    clean = lambda b: b.replace(str(port).encode(), b"PORT")  # noqa: E731
    return (p.returncode, clean(p.stdout), clean(p.stderr))


def interactive(cli, port, lines, timeout=pt.WATCHDOG):
    """redis-cli on a pty: waits for each prompt (bounded), types a line,
    keeps what it prints up to the next prompt."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="dumb")
    env.pop("REDISCLI_HISTFILE", None)
    env["REDISCLI_HISTFILE"] = "/dev/null"
    p = subprocess.Popen([cli, "-h", "127.0.0.1", "-p", str(port)], stdin=slave, stdout=slave,
                         stderr=slave, env=env, close_fds=True)
    os.close(slave)
    prompt = f"127.0.0.1:{port}> ".encode()
    buf = b""

    def until(marker):
        nonlocal buf
        deadline = time.monotonic() + timeout
        while marker not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([master], [], [], left)
            if not r:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                chunk = b""
            if not chunk:
                return None
            buf += chunk
        out, buf = buf.split(marker, 1)
        return out

    out = []
    try:
        first = until(prompt)
        out.append(("start", first if first is None else first.replace(str(port).encode(), b"PORT")))
        for ln in lines:
            os.write(master, ln + b"\n")
            got = until(prompt)
            out.append((ln, None if got is None else got.replace(str(port).encode(), b"PORT")))
            if got is None:
                break
        os.write(master, b"quit\n")
        try:
            status = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = "did not exit"
        out.append(("quit", status))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=5)
        os.close(master)
    return out


def script(cli, port):
    rec = []

    def add(name, ans):
        rec.append((name, ans))

    add("PING", run_cli(cli, port, ["PING"]))
    add("SET k v", run_cli(cli, port, ["SET", "cli:k", "v"]))
    add("GET k", run_cli(cli, port, ["GET", "cli:k"]))
    add("GET missing", run_cli(cli, port, ["GET", "cli:missing"]))
    add("INCR of a string (an error)", run_cli(cli, port, ["INCR", "cli:k"]))
    add("unknown command", run_cli(cli, port, ["NOSUCHCOMMAND", "x"]))
    add("--no-raw GET k", run_cli(cli, port, ["--no-raw", "GET", "cli:k"]))
    add("--no-raw GET missing", run_cli(cli, port, ["--no-raw", "GET", "cli:missing"]))
    add("--no-raw MGET", run_cli(cli, port, ["--no-raw", "MGET", "cli:k", "cli:missing"]))
    add("--no-raw INCR", run_cli(cli, port, ["--no-raw", "INCR", "cli:n"]))
    add("--no-raw wrong arity", run_cli(cli, port, ["--no-raw", "GET"]))
    add("-r 3 PING", run_cli(cli, port, ["-r", "3", "PING"]))
    add("-x SET (value from stdin)", run_cli(cli, port, ["-x", "SET", "cli:x"],
                                             stdin=b"from stdin\n"))
    add("GET of the -x value", run_cli(cli, port, ["GET", "cli:x"]))
    add("commands read from stdin", run_cli(cli, port, [], stdin=(
        b"SET cli:s 10\nINCRBY cli:s 5\nGET cli:s\nGET cli:nope\nDEL cli:s cli:nope\n"
        b"EXISTS cli:s\nSET cli:t x EX 100\nEXPIRE cli:t 200\nECHO \"two words\"\nPING\n"
        b"MSET cli:a 1 cli:b 2\nMGET cli:a cli:nope cli:b\nBADCMD\n")))
    add("commands read from stdin, --no-raw", run_cli(cli, port, ["--no-raw"], stdin=(
        b"SET cli:s 10\nGET cli:s\nGET cli:nope\nMGET cli:s cli:nope\nINCR cli:s\nBADCMD\n")))
    n = 1000
    mass = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
        len(b"cli:p%d" % i), b"cli:p%d" % i, len(b"%d" % i), b"%d" % i) for i in range(n))
    add(f"--pipe of {n} SETs", run_cli(cli, port, ["--pipe"], stdin=mass,
                                                  timeout=2 * pt.WATCHDOG))
    add("GET after --pipe", run_cli(cli, port, ["MGET", "cli:p0", "cli:p500", "cli:p999"]))
    info = run_cli(cli, port, ["INFO"])
    add("INFO (its text is the server's own)", (info[0], info[1].startswith(b"# ")))
    session = interactive(cli, port, [
        b"SET cli:i 1", b"GET cli:i", b"GET cli:nope", b"INCR cli:i", b"MGET cli:i cli:nope",
        b"DEL cli:i", b"EXISTS cli:i", b"NOSUCH", b"GET", b"PING", b"ECHO \"a b\""])
    for name, ans in session:
        add(f"interactive: {name.decode() if isinstance(name, bytes) else name}", ans)
    return rec


def main():
    a = pt.parse_common_args(sys.argv[1:], extra=["--redis-cli"])
    pt.require_program(a.redis_server, "redis-server")
    pt.require_program(a.redis_cli, "redis-cli")
    res = pt.Results()
    red = pt.start_redis(a.redis_server)
    try:
        ref = script(a.redis_cli, red.port)
    finally:
        red.stop()
    res.check("redis-cli ran every step against redis-server",
              all(not (isinstance(x, tuple) and x and x[0] == "timed out") for _, x in ref))
    pt.end_if_reference(a, res, ref, width=400)
    pt.require_program(a.proxy, "momento-proxy")
    px = pt.start_proxy(a.proxy, memcache=False)
    try:
        got = script(a.redis_cli, px.ports["resp"])
    finally:
        status = px.stop()
    pt.compare_records(res, "redis-server", ref, got, {})
    res.check("momento-proxy exits 0 on SIGTERM", status == 0, f"exit status {status}")
    res.exit()


if __name__ == "__main__":
    main()
