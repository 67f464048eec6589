#!/usr/bin/env python3
"""The examples, run for real: load-gen and request-coalescing for 2 s each
against the embedded server (and once against momento-local over
--endpoint), checking their JSON and SVG outputs and their option errors.
Usage: check_examples.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

build = sys.argv[1]
load_gen = os.path.join(build, "examples", "load-gen")
coalescing = os.path.join(build, "examples", "request-coalescing")
server = os.path.join(build, "server", "momento-local")
failures = 0
passed = 0
env = {k: v for k, v in os.environ.items() if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")}


def check(name, cond, detail=""):
    global failures, passed
    if cond:
        passed += 1
        print(f"ok - {name}")
    else:
        failures += 1
        print(f"not ok - {name} {detail}")


def run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


with tempfile.TemporaryDirectory() as tmp:
    # load-gen with no target: the embedded server, one line saying so.
    out = os.path.join(tmp, "lg.json")
    p = run([load_gen, "--duration", "2", "--rps", "400", "--stats-interval", "1", "--json", out])
    check("load-gen exits 0", p.returncode == 0, p.stderr)
    check("load-gen says it uses the bundled local server", "bundled local server at 127.0.0.1:" in p.stdout)
    check("load-gen prints interval stats", p.stdout.count("cumulative stats after") >= 2)
    r = json.load(open(out))
    check("load-gen: success == requests > 0", r["requests"] > 0 and r["success"] == r["requests"], r)
    check("load-gen: --rps caps the rate", r["ops_per_sec"] <= 400 * 1.1, r["ops_per_sec"])
    check("load-gen: get and set histograms", r["get"]["count"] > 0 and r["set"]["count"] > 0
          and r["set"]["p50_us"] <= r["set"]["p99_us"] <= r["set"]["max_us"])
    check("load-gen: server RPCs match requests", r["server"]["total"] == r["requests"], r["server"])
    check("load-gen: JSON has every field", all(k in r for k in
          ("config", "requests", "success", "refused", "errors", "ops_per_sec", "set", "get", "client_cpu_s", "wall_s", "server")))
    check("load-gen: every error category present", set(r["errors"]) ==
          {"unavailable", "deadline_exceeded", "resource_exhausted", "rst_stream", "cancelled", "other"})

    # Every load option at once, on two threads, open loop, zipf keys.
    out2 = os.path.join(tmp, "lg2.json")
    p = run([load_gen, "--duration", "2", "--concurrency", "8", "--threads", "2", "--rps", "300",
             "--open-loop", "--keys", "50", "--distribution", "zipf", "--payload-bytes", "10",
             "--timeout-ms", "2000", "--cache", "opts-cache", "--quiet", "--json", out2])
    check("load-gen with every option exits 0", p.returncode == 0, p.stderr)
    check("--quiet prints no interval stats", "cumulative stats after 1" not in p.stdout)
    r = json.load(open(out2))
    c = r["config"]
    check("options reach the run", c["concurrency"] == 8 and c["threads"] == 2 and c["open_loop"]
          and c["distribution"] == "zipf" and c["keys"] == 50 and c["cache"] == "opts-cache", c)
    check("two threads: success == requests > 0", r["requests"] > 0 and r["success"] == r["requests"], r)

    # --quiet with a short report interval: the main thread must sleep between
    # reports. (It once left its report deadline in the past when quiet and
    # spun on nanosleep, taking a whole CPU: client_cpu_s ~ wall_s after the
    # first second. At 20 requests/s an idle client uses a few percent.)
    out5 = os.path.join(tmp, "lg5.json")
    p = run([load_gen, "--duration", "4", "--concurrency", "1", "--rps", "20", "--stats-interval", "1",
             "--quiet", "--json", out5])
    r = json.load(open(out5))
    check("--quiet run does not spin between reports", p.returncode == 0
          and r["client_cpu_s"] < 0.5 * r["wall_s"], (r["client_cpu_s"], r["wall_s"]))

    # --endpoint --insecure against a separate momento-local.
    srv = subprocess.Popen([server, "--port", "0"], stdout=subprocess.PIPE, text=True)
    line = srv.stdout.readline().strip()
    endpoint = line.replace("listening on ", "")
    out3 = os.path.join(tmp, "lg3.json")
    p = run([load_gen, "--endpoint", endpoint, "--insecure", "--duration", "1", "--quiet", "--json", out3])
    srv.terminate()
    stats = srv.communicate(timeout=10)[0]
    r = json.load(open(out3))
    check("--endpoint --insecure reaches that server", p.returncode == 0 and r["success"] == r["requests"] > 0
          and r["server"] is None and f'"Set": {{"total": {r["set"]["count"]}' in stats, p.stdout + stats)

    # request-coalescing: before vs after.
    out4 = os.path.join(tmp, "rc.json")
    svg = os.path.join(tmp, "rc.svg")
    p = run([coalescing, "--duration", "2", "--rps", "0", "--concurrency", "200", "--quiet",
             "--json", out4, "--plot", svg])
    check("request-coalescing exits 0", p.returncode == 0, p.stderr)
    check("request-coalescing prints the before/after table",
          "| set, p99" in p.stdout and "Before Coalescing" in p.stdout and "After Coalescing" in p.stdout)
    r = json.load(open(out4))
    b, a = r["before"], r["after"]
    for name, ph in (("before", b), ("after", a)):
        check(f"{name}: success == requests > 0", ph["requests"] > 0 and ph["success"] == ph["requests"], ph)
    check("coalescing happens only in phase 2", "coalesced" not in b
          and a["coalesced"]["get"] + a["coalesced"]["set"] > 0, a.get("coalesced"))
    check("coalesced percentages are consistent", 0 < a["coalesced"]["pct_of_all"] <= 100)
    check("phase 2 sends fewer RPCs per request", a["server"]["total"] / a["requests"]
          < b["server"]["total"] / b["requests"], (a["server"], b["server"]))
    # Rate-capped, both phases issue about the same number of requests, so
    # phase 2 must send fewer RPCs outright.
    out5 = os.path.join(tmp, "rc5.json")
    p = run([coalescing, "--duration", "2", "--rps", "20000", "--concurrency", "1000", "--quiet",
             "--json", out5])
    r = json.load(open(out5))
    b5, a5 = r["before"], r["after"]
    check("rate-capped: phase 2 sends fewer server RPCs", p.returncode == 0
          and a5["server"]["total"] < b5["server"]["total"] and a5["success"] == a5["requests"] > 0,
          (b5["server"], a5["server"]))
    root = ET.parse(svg).getroot()
    lines = [e for e in root.iter() if e.tag.endswith("polyline")]
    check("SVG is well-formed with four series", len(lines) == 4)
    check("SVG series have points", all(len(e.get("points").split()) > 100 for e in lines))

    # Bad values: a clear message and exit status 2.
    for args in (["--concurrency", "0"], ["--rps", "-5"], ["--duration", "x"], ["--distribution", "pareto"],
                 ["--open-loop", "--rps", "0"], ["--endpoint", "nohost"], ["--insecure"], ["--threads", "99"],
                 ["--keys", "0", "--distribution", "zipf"], ["--bogus"], ["extra"]):
        p = run([load_gen] + args)
        check(f"load-gen {' '.join(args)} -> exit 2 with a message", p.returncode == 2 and p.stderr.strip(), p)
    p = run([load_gen, "--plot", "x.svg"])
    check("load-gen refuses --plot", p.returncode == 2)

    # Every request refused at submit (a cache name the library refuses):
    # the report shows the refusals and the run fails. (It once printed
    # "success 0 (100.0%)" and exited 0.)
    out3 = os.path.join(tmp, "refused.json")
    p = run([load_gen, "--duration", "1", "--cache", "bad\tname", "--json", out3])
    check("load-gen with nothing succeeding exits 1", p.returncode == 1, p)
    check("load-gen says nothing succeeded", "no request succeeded" in p.stderr, p.stderr)
    check("load-gen reports the refusals and their reason",
          "refused" in p.stdout and "invalid argument" in p.stdout and "(100.0%)" not in p.stdout, p.stdout)
    r = json.load(open(out3))
    check("load-gen JSON: refused > 0, success 0", r["refused"] > 0 and r["success"] == 0, r)
    p = run([coalescing, "--duration", "0.5", "--cache", "bad\tname", "--quiet"])
    check("request-coalescing with nothing succeeding exits 1",
          p.returncode == 1 and "no request succeeded" in p.stderr, p)
    for prog in (load_gen, coalescing):
        p = run([prog, "--help"])
        check(f"{os.path.basename(prog)} --help documents defaults", p.returncode == 0
              and "(default 10)" in p.stdout and "--open-loop" in p.stdout)

print(f"{passed} passed, {failures} failed")
sys.exit(1 if failures or not passed else 0)
