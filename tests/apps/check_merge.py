#!/usr/bin/env python3
"""load-gen --merge and the latency charts, checked against raw samples.

Three load-gen processes run at the same time (two against one
momento-local, one against another that refuses past 50 requests/s, so
there are errors to sum), each writing its --json and, with --samples, every
latency it recorded. This script rebuilds the histograms from those samples
with its own implementation of apps/common/histogram.c, and checks:

- each run's JSON histograms (buckets, count, min, max, sum, percentiles)
  are exactly the histogram of that run's samples: the JSON is lossless;
- `load-gen --merge` of the three gives the percentiles of ONE histogram
  fed every sample of all three runs (exact, not approximately), with
  requests, errors and the other counters summed and throughput over the
  span the runs covered, in its text and its JSON;
- merging one file prints that run's own final report, line for line, and
  merging a merge gives the same report again;
- files that cannot be merged exactly are refused with status 2;
- the SVG charts (load-gen --plot, a merge's, request-coalescing's; linear
  and --plot-log): every point of every curve is where the JSON's histogram
  puts it on the chart's own axis, in milliseconds, and a log axis starts
  at the decade of the fastest request.
Every load is bounded (1.5 to 2 s) and on loopback.
Usage: check_merge.py BUILD_DIR"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from appcheck import check, env, finish, run, start_server, stop_server
import appcheck

appcheck.detail_limit = 3000

build = sys.argv[1]
load_gen = os.path.join(build, "apps", "load-gen")
coalescing = os.path.join(build, "apps", "request-coalescing")
server = os.path.join(build, "server", "momento-local")


# ------------------------------------------------ histogram.c, in Python

LINEAR, SUB, MAX_SHIFT = 256, 128, 40
NBUCKETS = LINEAR + MAX_SHIFT * SUB


def h_index(v):
    if v < LINEAR:
        return v
    shift = v.bit_length() - 1 - 7
    if shift > MAX_SHIFT:
        return NBUCKETS - 1
    return LINEAR + (shift - 1) * SUB + ((v >> shift) - SUB)


def h_low(i):
    if i < LINEAR:
        return i
    shift = (i - LINEAR) // SUB + 1
    return ((i - LINEAR) % SUB + SUB) << shift


def h_high(i):
    if i < LINEAR:
        return i
    return h_low(i) + (1 << ((i - LINEAR) // SUB + 1)) - 1


class Hist:
    """A histogram as histogram.c builds it: from samples, or from JSON."""

    def __init__(self, samples=(), js=None):
        self.buckets, self.count, self.sum = {}, 0, 0
        self.min = self.max = None
        for v in samples:
            i = h_index(v)
            self.buckets[i] = self.buckets.get(i, 0) + 1
            self.count += 1
            self.sum += v
            self.min = v if self.min is None else min(self.min, v)
            self.max = v if self.max is None else max(self.max, v)
        if js is not None:
            for lo, hi, n in js["buckets"]:
                assert (h_low(h_index(lo)), h_high(h_index(lo))) == (lo, hi), (lo, hi)
                self.buckets[h_index(lo)] = n
            self.count, self.sum = js["count"], js["sum_us"]
            self.min, self.max = (js["min_us"], js["max_us"]) if self.count else (None, None)

    def quantile(self, q):
        """hist_quantile(): the high end of the bucket holding the
        ceil(q * count)-th value, clamped to [min, max]."""
        if not self.count:
            return 0
        if q <= 0:
            return self.min
        if q >= 1:
            return self.max
        rank = int(q * self.count)
        if rank < q * self.count:
            rank += 1
        rank = max(rank, 1)
        seen = 0
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if seen >= rank:
                return min(max(h_high(i), self.min), self.max)
        return self.max

    def as_json(self):
        """What json_hist() writes for this histogram."""
        q = self.quantile
        return {"count": self.count, "min_us": self.min or 0, "p50_us": q(0.5), "p90_us": q(0.9),
                "p99_us": q(0.99), "p999_us": q(0.999), "max_us": self.max or 0, "sum_us": self.sum,
                "buckets": [[h_low(i), h_high(i), self.buckets[i]] for i in sorted(self.buckets)]}

    def text(self, name):
        """lg_print_stats()'s latency line: p99 and p99.9 only with enough
        samples to tell them from the maximum (100, 1000), "-" otherwise."""
        q = self.quantile
        p99 = q(0.99) if self.count >= 100 else "-"
        p999 = q(0.999) if self.count >= 1000 else "-"
        return (f"  {name} latency us: count {self.count} min {self.min or 0} p50 {q(0.5)} p90 {q(0.9)} "
                f"p99 {p99} p99.9 {p999} max {self.max or 0}")


def read_samples(path):
    out = {"set": [], "get": [], "late": []}
    for line in open(path):
        op, us = line.split()
        out[op].append(int(us))
    return out


def final_block(stdout):
    return stdout[stdout.index("final:"):] if "final:" in stdout else None


# ------------------------------------------------------------ the charts

def check_svg(name, path, hists, log):
    """Every point of every curve where the histogram puts it, on the
    chart's own latency axis (ms); `hists` maps data-series to a Hist."""
    root = ET.parse(path).getroot()
    axis = next((e for e in root.iter() if e.get("id") == "latency-axis"), None)
    check(f"{name}: well-formed, with a latency axis", axis is not None)
    if axis is None:
        return
    scale, lo, hi = axis.get("data-scale"), float(axis.get("data-min-ms")), float(axis.get("data-max-ms"))
    top, bottom = float(axis.get("data-top")), float(axis.get("data-bottom"))
    texts = [e.text or "" for e in root.iter() if e.tag.endswith("text")]
    check(f"{name}: the axis is in milliseconds, {'log' if log else 'linear'}",
          scale == ("log" if log else "linear")
          and ("latency (milliseconds, log scale)" if log else "latency (milliseconds)") in texts, (scale, texts))
    fastest = min(h.min for h in hists.values() if h.count) / 1000
    if log:
        check(f"{name}: the log axis starts at the fastest request's decade",
              lo <= max(fastest, 0.001) < lo * 10 + 1e-12 and math.log10(hi / lo) >= 1
              and abs(math.log10(lo) - round(math.log10(lo))) < 1e-9, (lo, hi, fastest))
    else:
        check(f"{name}: the linear axis starts at 0", lo == 0 and hi > 0, (lo, hi))

    def y_of(ms):
        ms = min(max(ms, lo), hi)
        frac = (math.log10(ms) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log \
            else (ms - lo) / (hi - lo)
        return bottom - (bottom - top) * frac

    lines = {e.get("data-series"): e.get("points") for e in root.iter() if e.tag.endswith("polyline")}
    check(f"{name}: one curve per series", set(lines) == set(hists), (set(lines), set(hists)))
    for series, h in hists.items():
        pts = [tuple(map(float, p.split(","))) for p in (lines.get(series) or "").split()]
        bad = []
        for s, (x, y) in enumerate(pts):
            nines = 5.0 * s / 200.0
            want = h.quantile(1.0 - 10 ** -nines) / 1000
            if abs(x - (80 + 600 * nines / 5.0)) > 0.06 or abs(y - y_of(want)) > 0.06:
                bad.append((s, x, y, want, y_of(want)))
        check(f"{name}: '{series}' has 201 points, each at its percentile's latency",
              len(pts) == 201 and not bad, bad[:5])


# ------------------------------------------------------------- the runs

with tempfile.TemporaryDirectory() as tmp:
    f = lambda name: os.path.join(tmp, name)  # noqa: E731
    srv, ep = start_server(server)
    limited, ep_limited = start_server(server, "--max-rps", "50")
    # Three processes at once, each its own load; the third is refused
    # past 50 requests/s, so the merge has errors to add.
    runs = {
        "a": ["--endpoint", ep, "--insecure", "--concurrency", "6", "--rps", "300"],
        "b": ["--endpoint", ep, "--insecure", "--concurrency", "4", "--rps", "200", "--payload-bytes", "50"],
        "c": ["--endpoint", ep_limited, "--insecure", "--concurrency", "4", "--rps", "200",
              "--timeout-ms", "5000"],
    }
    procs = {k: subprocess.Popen([load_gen, "--duration", "2", "--quiet", "--cache", "merge-test",
                                  "--json", f(k + ".json"), "--samples", f(k + ".txt")] + a,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for k, a in runs.items()}
    outs = {k: p.communicate(timeout=60) for k, p in procs.items()}
    stop_server(srv)
    stop_server(limited)
    for k in ("a", "b"):
        check(f"run {k} exits 0", procs[k].returncode == 0, outs[k])
    check("run c exits 0 (some requests succeed)", procs["c"].returncode == 0, outs["c"])
    js = {k: json.load(open(f(k + ".json"))) for k in runs}
    smp = {k: read_samples(f(k + ".txt")) for k in runs}
    check("run c had errors (the server refused past 50/s)", js["c"]["errors"]["resource_exhausted"] > 0,
          js["c"]["errors"])

    # Each run's JSON is its samples' histogram, exactly.
    for k in runs:
        check(f"run {k}: no wrong result (each process has its own fresh keys)",
              js[k]["wrong_results"] == 0, js[k]["wrong_results"])
        for op, key in (("set", "set"), ("get", "get"), ("late", "timeout_late")):
            want = Hist(smp[k][op]).as_json()
            got = {x: js[k][key].get(x) for x in want}
            check(f"run {k}: JSON '{key}' is the histogram of its {len(smp[k][op])} samples",
                  got == want, (got, want))
        check(f"run {k}: a sample per successful request", len(smp[k]["set"]) + len(smp[k]["get"])
              == js[k]["success"] > 0, (js[k]["success"], len(smp[k]["set"]), len(smp[k]["get"])))

    # The merge of all three.
    p = run([load_gen, "--merge", f("a.json"), f("b.json"), f("c.json"), "--json", f("m.json"),
             "--plot", f("m.svg"), "--plot-log"])
    check("load-gen --merge exits 0", p.returncode == 0, p)
    check("--merge says what it merged", "merged 3 runs from 3 files" in p.stdout, p.stdout)
    check("--merge notes that the runs' configs differ", "differs in config.payload_bytes" in p.stderr,
          p.stderr)
    m = json.load(open(f("m.json")))
    for op, key in (("set", "set"), ("get", "get"), ("late", "timeout_late")):
        every = smp["a"][op] + smp["b"][op] + smp["c"][op]
        h = Hist(every)
        want = h.as_json()
        got = {x: m[key].get(x) for x in want}
        check(f"merged '{key}': the histogram of all {len(every)} samples of the three runs, "
              "percentiles exact", got == want, (got, want))
        if op != "late":
            check(f"merged text: the {op} latency line of all samples", h.text(op) in p.stdout,
                  (h.text(op), p.stdout))
    s3 = lambda field: sum(js[k][field] for k in runs)  # noqa: E731
    check("merged counts are summed", all(m[x] == s3(x) for x in
          ("requests", "success", "refused", "timed_out", "timed_out_early", "get_hits", "get_misses",
           "wrong_results", "rpcs")), {x: (m[x], s3(x)) for x in ("requests", "success", "rpcs")})
    check("merged errors are summed, category by category", all(
          m["errors"][e] == sum(js[k]["errors"][e] for k in runs) for e in m["errors"])
          and m["errors"]["resource_exhausted"] > 0, m["errors"])
    starts = {k: js[k]["started_at"] for k in runs}
    span = max(starts[k] + js[k]["wall_s"] for k in runs) - min(starts.values())
    check("merged wall time: from the first start to the last end",
          abs(m["wall_s"] - span) < 1e-5 and m["started_at"] == min(starts.values()), (m["wall_s"], span))
    check("merged throughput: all requests over that span",
          abs(m["ops_per_sec"] - m["requests"] / m["wall_s"]) <= 0.06
          and f"throughput {m['requests'] / m['wall_s']:.0f} requests/s over {m['wall_s']:.2f} s" in p.stdout,
          (m["ops_per_sec"], p.stdout))
    # The runs overlapped, so the summed rate is close to the sum of rates.
    check("merged throughput ~ the runs' rates summed (they ran together)",
          0.8 * s3("ops_per_sec") <= m["ops_per_sec"] <= 1.01 * s3("ops_per_sec"),
          (m["ops_per_sec"], s3("ops_per_sec")))
    check("merged config: workers and rates summed", m["config"]["concurrency"] == 14
          and m["config"]["rps"] == 700 and m["config"]["threads"] == 3, m["config"])
    check("merged JSON says so; client CPU summed", m["merged"]["runs"] == 3
          and 0 <= m["merged"]["start_spread_s"] < 2 and abs(m["client_cpu_s"] - s3("client_cpu_s")) < 1e-6,
          (m["merged"], m["client_cpu_s"], s3("client_cpu_s")))
    check("merged JSON has every field a run's has", set(js["a"]) <= set(m), set(js["a"]) - set(m))
    check_svg("merged chart, log scale", f("m.svg"), {"get": Hist(js=m["get"]), "set": Hist(js=m["set"])},
              log=True)

    # One file: the run's own report, line for line; a merge of a merge
    # is the same report again.
    p1 = run([load_gen, "--merge", f("a.json")])
    check("--merge of one run prints that run's final report", p1.returncode == 0
          and final_block(p1.stdout) == final_block(outs["a"][0]), (p1.stdout, outs["a"][0]))
    p2 = run([load_gen, "--merge", f("m.json")])
    check("--merge of a merge prints the same report", p2.returncode == 0
          and final_block(p2.stdout) == final_block(p.stdout) and "merged 3 runs from 1 file" in p2.stdout,
          (p2.stdout, p.stdout))

    # load-gen --plot, linear; request-coalescing --plot-log.
    p = run([load_gen, "--duration", "1.5", "--rps", "400", "--quiet", "--json", f("lg.json"),
             "--plot", f("lg.svg")])
    r = json.load(open(f("lg.json")))
    check("load-gen --plot exits 0", p.returncode == 0, p)
    check_svg("load-gen chart, linear", f("lg.svg"), {"get": Hist(js=r["get"]), "set": Hist(js=r["set"])},
              log=False)
    p = run([coalescing, "--duration", "1.5", "--rps", "0", "--concurrency", "200", "--quiet",
             "--json", f("rc.json"), "--plot", f("rc.svg"), "--plot-log"])
    r = json.load(open(f("rc.json")))
    check("request-coalescing --plot --plot-log exits 0", p.returncode == 0, p)
    check_svg("request-coalescing chart, log scale", f("rc.svg"),
              {f"{op}, {name}": Hist(js=r[ph][op]) for op in ("get", "set")
               for name, ph in (("before", "before"), ("after", "after"), ("near cache", "after_near_cache"))},
              log=True)

    # Files that cannot be merged exactly, and options that do not go with
    # --merge: status 2 and a message.
    a = json.load(open(f("a.json")))
    bad = {
        "old.json": dict(a, set={k: v for k, v in a["set"].items() if k != "buckets"}),
        "bounds.json": dict(a, get=dict(a["get"], buckets=[[301, 302, a["get"]["count"]]])),
        "count.json": dict(a, get=dict(a["get"], count=a["get"]["count"] + 1)),
        "rc.json": json.load(open(f("rc.json"))),
    }
    for name, doc in bad.items():
        json.dump(doc, open(f(name), "w"))
    open(f("broken.json"), "w").write('{"requests": 1,')
    for name, why in (("old.json", "no buckets"), ("bounds.json", "not one of this histogram's"),
                      ("count.json", "the buckets hold"), ("rc.json", "request-coalescing"),
                      ("broken.json", "expected a key at byte"), ("missing.json", "cannot open")):
        p = run([load_gen, "--merge", f("a.json"), f(name)])
        check(f"--merge refuses {name}: exit 2, '{why}'", p.returncode == 2 and why in p.stderr, p)
    for args in (["--merge"], ["--merge", f("a.json"), "--rps", "5"],
                 ["--merge", f("a.json"), "--endpoint", "127.0.0.1:1"], ["--plot-log"], [f("a.json")],
                 ["--samples"]):
        p = run([load_gen] + args)
        check(f"load-gen {' '.join(os.path.basename(x) for x in args)} -> exit 2 with a message",
              p.returncode == 2 and p.stderr.strip(), p)
    for args in (["--merge", f("a.json")], ["--samples", f("x.txt")]):
        p = run([coalescing] + args)
        check(f"request-coalescing refuses {args[0]}", p.returncode == 2 and "only load-gen" in p.stderr, p)
    p = run([load_gen, "--help"])
    check("load-gen --help documents --merge, --plot, --plot-log, --samples", p.returncode == 0
          and all(o in p.stdout for o in ("--merge", "--plot PATH.svg", "--plot-log", "--samples PATH")),
          p.stdout)

finish()
