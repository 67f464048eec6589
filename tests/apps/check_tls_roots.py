#!/usr/bin/env python3
"""--tls-roots FILE in every example that takes a target (apps/common/
target.c), against momento-local serving TLS with a certificate from a
private CA made here with the openssl command (as tests/lib/
test_tls.c makes its own):

- load-gen with --tls-roots CA succeeds, every request through TLS;
- without it, it fails clearly: exit 1, the handshake error on stderr with
  a hint naming --tls-roots, every request UNAVAILABLE, none reaching the
  server; with the roots of another CA, the hint asks whether that file is
  the right CA; against a plaintext server the hint is --insecure;
- request-coalescing, leaderboard, session-store, topics-fanout and
  metrics-prometheus each complete a short run with --tls-roots, and fail
  without it;
- a missing file, a file with no certificate, --tls-roots with --insecure
  and --tls-roots with no TLS target are option errors (exit 2) in each.
Skipped (77) when the openssl command is missing. Loopback only; every run
bounded.
Usage: check_tls_roots.py BUILD_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from appcheck import check, finish, run, start_server, stop_server
import appcheck

appcheck.detail_limit = 3000

build = sys.argv[1]
ex = lambda name: os.path.join(build, "apps", name)  # noqa: E731
server = os.path.join(build, "server", "momento-local")

if not shutil.which("openssl"):
    print("SKIP: the openssl command is not installed; it makes the test certificates")
    sys.exit(77)


def make_certs(d):
    """Two CAs; a server certificate for 127.0.0.1 and localhost signed by
    the first."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        ["req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=libmomento-examples-ca"],
        ["req", "-x509", *key, "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2",
         "-subj", "/CN=another-ca"],
        ["req", *key, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=momento-local"],
        ["x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "srv.pem", "-days", "2", "-extfile", "srv.ext"],
    ]
    with open(os.path.join(d, "srv.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for s in steps:
        subprocess.run(["openssl", *s], cwd=d, check=True, capture_output=True, timeout=60)


def start_tls_server(d):
    """momento-local serving TLS with the certificate make_certs() made."""
    return start_server(server, "--tls-cert", os.path.join(d, "srv.pem"),
                        "--tls-key", os.path.join(d, "srv.key"))


with tempfile.TemporaryDirectory() as d:
    make_certs(d)
    ca, other_ca = os.path.join(d, "ca.pem"), os.path.join(d, "other-ca.pem")
    srv, ep = start_tls_server(d)
    out = os.path.join(d, "lg.json")

    # load-gen, trusting the CA: every request succeeds over TLS.
    p = run([ex("load-gen"), "--endpoint", ep, "--tls-roots", ca, "--duration", "1", "--rps", "200",
             "--quiet", "--json", out])
    r = trusted = json.load(open(out)) if os.path.exists(out) else {}
    check("load-gen --tls-roots CA: exit 0", p.returncode == 0, p)
    check("load-gen --tls-roots CA: says TLS with the given roots",
          f"target {ep} (TLS, trusting --tls-roots)" in p.stdout, p.stdout)
    check("load-gen --tls-roots CA: success == requests > 0",
          r.get("requests", 0) > 0 and r["success"] == r["requests"] and r["wrong_results"] == 0, r)
    os.remove(out)

    # Without it: the system's roots do not know the CA. A clear failure.
    p = run([ex("load-gen"), "--endpoint", ep, "--duration", "1", "--rps", "50", "--timeout-ms", "3000",
             "--quiet", "--json", out])
    r = json.load(open(out)) if os.path.exists(out) else {}
    check("load-gen without --tls-roots: exit 1, nothing succeeded",
          p.returncode == 1 and "no request succeeded" in p.stderr, p)
    check("load-gen without --tls-roots: the handshake failure, once, with the hint",
          p.stderr.count(f"TLS handshake with {ep} failed: Handshake failed") == 1
          and "certificate verify failed" in p.stderr
          and "pass it with --tls-roots FILE" in p.stderr, p.stderr)
    check("load-gen without --tls-roots: every request UNAVAILABLE",
          r.get("requests", 0) > 0 and r["success"] == 0 and r["errors"]["unavailable"] == r["requests"], r)

    # A plaintext server (momento-local without --tls-cert) reached over TLS:
    # the hint is --insecure, not a CA file.
    plain = subprocess.Popen([server, "--port", "0"], stdout=subprocess.PIPE, text=True)
    plain_ep = plain.stdout.readline().strip().replace("listening on ", "")
    p = run([ex("load-gen"), "--endpoint", plain_ep, "--duration", "1", "--rps", "50",
             "--timeout-ms", "3000", "--quiet"])
    stop_server(plain)
    check("load-gen over TLS to a plaintext server: exit 1, the hint is --insecure",
          p.returncode == 1 and f"{plain_ep} does not speak TLS" in p.stderr
          and "needs --insecure" in p.stderr and "--tls-roots FILE" not in p.stderr, p.stderr)

    # Another CA's roots: refused as well, and the hint is about that file.
    p = run([ex("load-gen"), "--endpoint", ep, "--tls-roots", other_ca, "--duration", "1", "--rps", "50",
             "--timeout-ms", "3000", "--quiet"])
    check("load-gen --tls-roots of another CA: exit 1, the hint names the file",
          p.returncode == 1 and f"is {other_ca} the CA that signed" in p.stderr, p)
    stats = stop_server(srv)
    m = re.search(r'"Set": \{"total": (\d+)', stats)
    # Only the trusted run's sets reached the server (load-gen's cache is
    # created by CreateCache, which is not a Set).
    check("the server saw only the trusted run's requests",
          m is not None and int(m[1]) == trusted.get("set", {}).get("count", -1) > 0, stats)

    # Every other example, trusting the CA, then not.
    others = [
        ("request-coalescing", ["--duration", "0.5", "--rps", "200", "--concurrency", "20", "--quiet"]),
        ("leaderboard", ["--players", "20"]),
        ("session-store", ["--ttl-ms", "1000"]),
        ("topics-fanout", ["--duration", "0.5", "--subscribers", "2", "--rate", "50", "--quiet"]),
        ("metrics-prometheus", ["--requests", "200"]),
    ]
    srv, ep = start_tls_server(d)
    for name, args in others:
        p = run([ex(name), "--endpoint", ep, "--tls-roots", ca] + args)
        check(f"{name} --tls-roots CA: exit 0", p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
        p = run([ex(name), "--endpoint", ep] + args, timeout=180)
        check(f"{name} without --tls-roots: exit 1, the handshake failure named",
              p.returncode == 1 and "TLS handshake with" in p.stderr and "--tls-roots FILE" in p.stderr,
              (p.returncode, p.stderr[-1500:]))
    stop_server(srv)

    # Option errors, in every example that takes a target.
    nopem = os.path.join(d, "srv.ext")
    for name in ["load-gen"] + [n for n, _ in others]:
        cases = (
            (["--endpoint", "127.0.0.1:1", "--tls-roots", os.path.join(d, "missing.pem")], "--tls-roots"),
            (["--endpoint", "127.0.0.1:1", "--tls-roots", nopem], "no PEM certificate"),
            (["--endpoint", "127.0.0.1:1", "--insecure", "--tls-roots", ca], "--insecure is plaintext"),
            (["--tls-roots", ca], "needs a TLS target"),
        )
        for args, why in cases:
            p = run([ex(name)] + args)
            check(f"{name} {' '.join(os.path.basename(a) for a in args)} -> exit 2, '{why}'",
                  p.returncode == 2 and why in p.stderr, p)
        p = run([ex(name), "--help"])
        check(f"{name} --help lists --tls-roots", p.returncode == 0 and "--tls-roots FILE" in p.stdout, p.stdout)

finish()
