#!/usr/bin/env python3
"""No output of any example, and no error message, contains the API key.
The examples run with a fake key whose every part carries a marker, so they
fail to connect and print their errors; the output must hold no trace of the
key. Malformed keys of each format go through the same check.

A real-looking key makes the examples resolve and dial Momento-style
hostnames, so every run happens inside an empty network namespace
(`unshare -n`): no DNS query or connection can leave the machine.
Usage: check_secrets.py BUILD_DIR"""
import base64
import shutil
import json
import os
import subprocess
import sys

from appcheck import check, finish

build = sys.argv[1]


def b64url(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


MARK = "SeCrEtMaRkEr"
jwt = f"{b64url({'alg': 'HS256'})}.{b64url({'t': 'g', 'id': MARK + 'claims'})}.{MARK}signature"
v1 = base64.b64encode(json.dumps({"api_key": MARK + "token", "endpoint": "localhost"}).encode()).decode()
legacy = f"{b64url({'alg': 'none'})}.{b64url({'c': 'cache.localhost', 'cp': 'control.localhost', 'x': MARK})}.{MARK}sig"
needles = [MARK, jwt, v1, jwt.split(".")[1], MARK.lower()]


def leaks(text):
    return [n for n in needles if n in text]


def isolated():
    """A command prefix for an empty network namespace, or None."""
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n"] if probe.returncode == 0 else None


prefix = isolated()
if prefix is None:
    print("SKIP: cannot make an empty network namespace (unshare -n); running the examples "
          "with a real-looking key would send DNS queries off this machine")
    sys.exit(77)

runs = [
    ("hello, current key", [f"{build}/examples/hello"], {"MOMENTO_API_KEY": jwt, "MOMENTO_ENDPOINT": "localhost"}),
    ("hello, v1 key", [f"{build}/examples/hello"], {"MOMENTO_API_KEY": v1}),
    ("hello, legacy token", [f"{build}/examples/hello"], {"MOMENTO_API_KEY": legacy}),
    ("load-gen", [f"{build}/apps/load-gen", "--duration", "1", "--timeout-ms", "300",
                  "--stats-interval", "0.5"], {"MOMENTO_API_KEY": jwt, "MOMENTO_ENDPOINT": "localhost"}),
    ("request-coalescing", [f"{build}/apps/request-coalescing", "--duration", "0.5",
                            "--timeout-ms", "300"], {"MOMENTO_API_KEY": v1}),
    # Malformed keys: the reason must name the problem, never the key.
    ("truncated v1 key", [f"{build}/examples/hello"], {"MOMENTO_API_KEY": v1[:-3]}),
    ("current key without endpoint", [f"{build}/examples/hello"], {"MOMENTO_API_KEY": jwt}),
    ("key with a space", [f"{build}/apps/load-gen", "--duration", "0.5"], {"MOMENTO_API_KEY": MARK + " x"}),
]
for name, args, extra in runs:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOMENTO_")}
    env.update(extra)
    p = subprocess.run(prefix + args, capture_output=True, text=True, timeout=60, env=env)
    out = p.stdout + p.stderr
    check(f"{name}: ran and reported", len(out.strip()) > 0, out)
    check(f"{name}: output holds no part of the key", not leaks(out), str(leaks(out)))
    if name.startswith(("truncated", "current key without", "key with")):
        check(f"{name}: refused with a reason", p.returncode != 0 and ("key" in out.lower()), out)
finish()
