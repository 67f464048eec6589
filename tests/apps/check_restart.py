#!/usr/bin/env python3
"""load-gen for 10 s across a momento-local restart: errors during the gap,
successes after it (counted by the second server itself), no crash. Under
the ASan build (tests/memcheck.sh) a leak would fail the run too.
Usage: check_restart.py BUILD_DIR"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from appcheck import check, finish

build = sys.argv[1]
server = os.path.join(build, "server", "momento-local")
load_gen = os.path.join(build, "apps", "load-gen")


def start(port, stats):
    p = subprocess.Popen([server, "--port", str(port), "--cache", "load-gen", "--stats-json", stats],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    return p, int(line.rsplit(":", 1)[1])


with tempfile.TemporaryDirectory() as tmp:
    first, port = start(0, os.path.join(tmp, "first.json"))
    out = os.path.join(tmp, "lg.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOMENTO_")}
    lg = subprocess.Popen([load_gen, "--endpoint", f"127.0.0.1:{port}", "--insecure", "--duration", "10",
                           "--rps", "400", "--concurrency", "8", "--timeout-ms", "1000", "--quiet",
                           "--json", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=10)
    time.sleep(2)  # the gap
    second, _ = start(port, os.path.join(tmp, "second.json"))
    stdout, stderr = lg.communicate(timeout=60)
    second.send_signal(signal.SIGTERM)
    second.wait(timeout=10)
    check("load-gen survived the restart (exit 0)", lg.returncode == 0, stderr)
    check("both servers exited cleanly", first.returncode == 0 and second.returncode == 0)
    r = json.load(open(out))
    errors = sum(r["errors"].values())
    check("requests succeeded", r["success"] > 0, r)
    check("the gap produced errors", errors > 0, r["errors"])
    check("every request is a success or a counted error", r["success"] + errors == r["requests"], r)
    s1 = json.load(open(os.path.join(tmp, "first.json")))
    s2 = json.load(open(os.path.join(tmp, "second.json")))
    ok2 = s2["methods"].get("Set", {}).get("OK", 0) + s2["methods"].get("Get", {}).get("OK", 0)
    check("the first server answered before the stop", s1["total"] > 0, s1)
    check("the same client recovered: the second server answered", ok2 > 0, s2)
finish()
