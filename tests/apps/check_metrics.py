#!/usr/bin/env python3
"""Runs apps/metrics-prometheus against its in-process local server and
checks what it prints: valid Prometheus text exposition (format 0.0.4), and
numbers that agree with the load it was asked for. Everything it prints comes
from the library's metrics hook, so this checks the hook end to end too.

Usage: check_metrics.py PATH/TO/metrics-prometheus
"""
import math
import os
import re
import subprocess
import sys

REQUESTS = 1200
ERROR_EVERY = 40

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(r"^(%s)(?:\{(%s(?:,%s)*)?\})? (\S+)$" % (NAME, LABEL, LABEL))
HELP = re.compile(r"^# HELP (%s) .+$" % NAME)
TYPE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)
PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fail(why):
    print("check_metrics: FAIL: " + why)
    sys.exit(1)


def parse(text):
    """Returns {family: (type, [(name, labels dict, value)])}, failing on
    anything the text format does not allow."""
    families = {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line:
            fail("line %d is empty" % n)
        if line.startswith("#"):
            m = TYPE.match(line)
            if m:
                if m.group(1) in families:
                    fail("line %d: TYPE of %s given twice" % (n, m.group(1)))
                families[m.group(1)] = (m.group(2), [])
                current = m.group(1)
            elif not HELP.match(line) and line.startswith(("# HELP", "# TYPE")):
                fail("line %d: malformed: %r" % (n, line))
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("line %d is not a sample: %r" % (n, line))
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        try:
            v = float(value)
        except ValueError:
            fail("line %d: value %r is not a float" % (n, value))
        if current is None:
            fail("line %d: sample before any TYPE" % n)
        kind = families[current][0]
        allowed = {current}
        if kind == "histogram":
            allowed = {current + "_bucket", current + "_sum", current + "_count"}
        if name not in allowed:
            fail("line %d: %s is not of family %s (%s)" % (n, name, current, kind))
        families[current][1].append((name, dict(PAIR.findall(labels)), v))
    return families


def main():
    exe = sys.argv[1]
    env = dict(os.environ)
    env.pop("MOMENTO_API_KEY", None)
    p = subprocess.run([exe, "--requests", str(REQUESTS), "--error-every", str(ERROR_EVERY),
                        "--concurrency", "8", "--seconds", "60"],
                       capture_output=True, text=True, timeout=100, env=env)
    if p.returncode != 0:
        fail("exit status %d; stderr:\n%s" % (p.returncode, p.stderr))
    if "each counted before its callback" not in p.stderr:
        fail("the example did not confirm its counts: %s" % p.stderr)
    fam = parse(p.stdout)

    for name, kind in (("momento_requests_total", "counter"),
                       ("momento_request_attempts_total", "counter"),
                       ("momento_request_bytes_total", "counter"),
                       ("momento_request_duration_seconds", "histogram")):
        if fam.get(name, (None,))[0] != kind:
            fail("%s is not a %s" % (name, kind))

    by_method = {}
    for _, labels, v in fam["momento_requests_total"][1]:
        key = (labels["method"], labels["status"])
        if key in by_method:
            fail("requests_total%r appears twice" % (key,))
        by_method[key] = v
    total = sum(by_method.values())
    if total != REQUESTS + 1:  # + the CreateCache before the load
        fail("%d requests counted, expected %d" % (total, REQUESTS + 1))
    if by_method.get(("CreateCache", "OK")) != 1:
        fail("no CreateCache OK: %r" % by_method)
    not_found = by_method.get(("Get", "CACHE_NOT_FOUND_ERROR"), 0)
    if not_found != REQUESTS // ERROR_EVERY:
        fail("%d NOT_FOUND gets, expected %d" % (not_found, REQUESTS // ERROR_EVERY))
    if by_method.get(("Set", "OK"), 0) != (REQUESTS + 3) // 4:
        fail("sets: %r" % by_method)

    # The histogram: per method, cumulative buckets in increasing `le`,
    # ending with +Inf = _count = that method's requests, and a _sum.
    hist = {}
    for name, labels, v in fam["momento_request_duration_seconds"][1]:
        h = hist.setdefault(labels["method"], {"buckets": [], "sum": None, "count": None})
        if name.endswith("_bucket"):
            h["buckets"].append((float(labels["le"]), v))
        elif name.endswith("_sum"):
            h["sum"] = v
        else:
            h["count"] = v
    for method, h in hist.items():
        les = [le for le, _ in h["buckets"]]
        counts = [c for _, c in h["buckets"]]
        if not les or les[-1] != math.inf:
            fail("%s: no +Inf bucket" % method)
        if les != sorted(set(les)):
            fail("%s: bucket bounds not increasing: %r" % (method, les))
        if counts != sorted(counts):
            fail("%s: buckets not cumulative: %r" % (method, counts))
        requests = sum(v for (m, _), v in by_method.items() if m == method)
        if h["count"] != counts[-1] or h["count"] != requests:
            fail("%s: _count %r, +Inf %r, requests %r" % (method, h["count"], counts[-1], requests))
        if h["sum"] is None or not h["sum"] > 0:
            fail("%s: _sum %r" % (method, h["sum"]))
    if set(hist) != {m for m, _ in by_method}:
        fail("histogram methods %r differ from counter methods" % sorted(hist))

    # No retries against a healthy local server: attempts = requests.
    for _, labels, v in fam["momento_request_attempts_total"][1]:
        requests = sum(c for (m, _), c in by_method.items() if m == labels["method"])
        if v != requests:
            fail("%s: %r attempts for %r requests" % (labels["method"], v, requests))

    # The official parser, when installed, must accept it too.
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        pass
    else:
        names = {f.name for f in text_string_to_metric_families(p.stdout)}
        if "momento_request_duration_seconds" not in names:
            fail("prometheus_client did not find the histogram: %r" % names)

    print("check_metrics: ok (%d requests, %d methods)" % (total, len(hist)))


if __name__ == "__main__":
    main()
