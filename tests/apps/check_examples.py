#!/usr/bin/env python3
"""The examples, run for real: load-gen and request-coalescing for 2 s each
against the embedded server (and once against momento-local over
--endpoint), checking their JSON and SVG outputs and their option errors;
then both with per-request deadlines spread over a range (--timeout-ms A:B),
against the embedded server and against a server that never answers, where
every request must time out and none before its own deadline; then both with
adaptive batching (--batch), checking that batches were sent, that fewer
RPCs than requests reached the server, and that every result was still the
request's own; then read-mostly loads (--get-ratio) and request-coalescing's
third phase (coalescing with a near cache). Last, the collection examples: leaderboard's answers are
recomputed from the scores it says it submitted, and session-store's
transcript must show the values it wrote, the counter it incremented and
the TTL behaviour it demonstrates. And topics-fanout: short runs in which
every publish must reach every subscriber, against the embedded server and
a separate one (whose counts must match), and one whose publishes the
server refuses, which must fail.
Usage: check_examples.py BUILD_DIR"""
import json
import os
import re
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import xml.etree.ElementTree as ET

from appcheck import check, finish, run, start_server, stop_server

build = sys.argv[1]
load_gen = os.path.join(build, "apps", "load-gen")
coalescing = os.path.join(build, "apps", "request-coalescing")
leaderboard = os.path.join(build, "apps", "leaderboard")
session_store = os.path.join(build, "apps", "session-store")
fanout = os.path.join(build, "apps", "topics-fanout")
server = os.path.join(build, "server", "momento-local")


class _Silent(socketserver.BaseRequestHandler):
    """An HTTP/2 peer that keeps the connection healthy and answers no call:
    it sends its SETTINGS, acknowledges the client's SETTINGS and PINGs (so
    keepalive does not close the connection), returns flow-control credit
    for DATA, and ignores everything else. Every gRPC call to it ends at its
    deadline, which is what the deadline checks need: momento-local delays
    only calls carrying a fault header, which the public API cannot add."""

    def handle(self):
        sock, buf, preface = self.request, b"", True
        sock.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            if preface:  # "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                if len(buf) < 24:
                    continue
                buf, preface = buf[24:], False
            out = b""
            while len(buf) >= 9:
                n = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + n:
                    break
                kind, flags, payload, buf = buf[3], buf[4], buf[9:9 + n], buf[9 + n:]
                if kind == 4 and not flags & 1:    # SETTINGS -> ACK
                    out += b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
                elif kind == 6 and not flags & 1:  # PING -> ACK
                    out += b"\x00\x00\x08\x06\x01\x00\x00\x00\x00" + payload
                elif kind == 0 and n:              # DATA -> connection WINDOW_UPDATE
                    out += b"\x00\x00\x04\x08\x00\x00\x00\x00\x00" + struct.pack(">I", n)
            if out:
                sock.sendall(out)


class _SilentServer(socketserver.ThreadingTCPServer):
    daemon_threads = True


def check_deadlines(name, ph, spread, all_timed_out=False):
    """The deadline fields of one run (a load-gen result or a phase)."""
    check(f"{name}: deadline fields present", all(k in ph for k in
          ("timed_out", "timed_out_early", "timed_out_early_max_us", "timeout_late")), sorted(ph))
    check(f"{name}: the spread reaches the run", (ph["config"]["timeout_min_ms"],
          ph["config"]["timeout_max_ms"]) == spread, ph["config"])
    check(f"{name}: timed_out <= requests, == deadline_exceeded, early <= timed_out",
          ph["timed_out_early"] <= ph["timed_out"] <= ph["requests"]
          and ph["timed_out"] == ph["errors"]["deadline_exceeded"]
          and ph["timeout_late"]["count"] == ph["timed_out"] - ph["timed_out_early"], ph)
    check(f"{name}: no request timed out before its own deadline", ph["timed_out_early"] == 0
          and ph["timed_out_early_max_us"] == 0, (ph["timed_out_early"], ph["timed_out_early_max_us"]))
    if all_timed_out:
        check(f"{name}: every request timed out", ph["requests"] > 0
              and ph["timed_out"] == ph["requests"] and ph["success"] == 0, ph)


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
    check("load-gen: every get found its key's value", r["wrong_results"] == 0 and r["get_misses"] == 0
          and r["get_hits"] == r["get"]["count"], r)
    check("load-gen without --batch: one RPC per request, no batching",
          r["rpcs"] == r["requests"] == r["server"]["total"] and r["batching"] is None
          and r["config"]["batch"] is None and r["server"]["GetBatch"] == r["server"]["SetBatch"] == 0, r)
    check("load-gen prints the result checks and the RPCs sent",
          "results checked: " in p.stdout and ", 0 wrong" in p.stdout and "RPCs sent: " in p.stdout, p.stdout)
    check("load-gen's default get ratio is 0.5: set, then get", r["config"]["get_ratio"] == 0.5
          and "get ratio 0.5," in p.stdout and abs(r["get"]["count"] - r["set"]["count"]) <= 10, r["config"])

    def check_ratio(name, ph, ratio, workers):
        """A run with --get-ratio: each worker's gets are within one request
        of `ratio` of its requests, so the run's within one per worker;
        every HIT was its key's own value."""
        gets, sets = ph["get"]["count"], ph["set"]["count"]
        check(f"{name}: get_ratio {ratio} in the config", ph["config"]["get_ratio"] == ratio, ph["config"])
        check(f"{name}: success == requests > 0", ph["requests"] > 0 and ph["success"] == ph["requests"], ph)
        check(f"{name}: gets are {ratio} of requests within one request per worker",
              sets > 0 and abs(gets - ratio * (gets + sets)) <= workers, (gets, sets, workers))
        check(f"{name}: no wrong result; every get a HIT of its key's value or a miss",
              ph["wrong_results"] == 0 and ph["get_hits"] + ph["get_misses"] == gets, ph)

    # --get-ratio: read-mostly loads. 0.9 on 100 keys (the extra gets choose
    # keys as sets do, so some find keys no one has written yet: misses);
    # 0.75 with fresh keys on two threads (every get reads the key its
    # worker just set: no miss).
    out_g = os.path.join(tmp, "lg_ratio.json")
    p = run([load_gen, "--duration", "2", "--rps", "0", "--concurrency", "50", "--keys", "100",
             "--distribution", "zipf", "--get-ratio", "0.9", "--quiet", "--json", out_g])
    check("load-gen --get-ratio 0.9 exits 0, says so", p.returncode == 0 and "get ratio 0.9," in p.stdout, p)
    r = json.load(open(out_g))
    check_ratio("load-gen --get-ratio 0.9", r, 0.9, 50)
    check("load-gen --get-ratio 0.9: one RPC per request", r["rpcs"] == r["requests"] == r["server"]["total"]
          and r["server"]["Get"] == r["get"]["count"], r)
    p = run([load_gen, "--duration", "2", "--rps", "0", "--concurrency", "40", "--threads", "2",
             "--get-ratio", "0.75", "--quiet", "--json", out_g])
    r = json.load(open(out_g))
    check("load-gen --get-ratio 0.75 --keys 0 exits 0", p.returncode == 0, p)
    check_ratio("load-gen --get-ratio 0.75 --keys 0", r, 0.75, 40)
    check("load-gen --get-ratio 0.75 --keys 0: every get found the value its worker set",
          r["get_misses"] == 0 and r["get_hits"] == r["get"]["count"], r)
    # With a near cache on 10 hot keys: answers from memory, which are not
    # RPCs sent (the client's count is the server's).
    p = run([load_gen, "--duration", "2", "--rps", "5000", "--concurrency", "100", "--keys", "10",
             "--get-ratio", "0.95", "--near-cache-bytes", "1048576", "--near-cache-staleness-ms", "100",
             "--quiet", "--json", out_g])
    r = json.load(open(out_g))
    nc = r["near_cache"]
    check("load-gen --get-ratio 0.95 --near-cache-bytes exits 0, prints the near cache's line",
          p.returncode == 0 and "near cache: " in p.stdout, p)
    check_ratio("load-gen --get-ratio 0.95 with a near cache", r, 0.95, 100)
    check("load-gen near cache on 10 hot keys: hits > 0, settings in the JSON",
          nc is not None and nc["hits"] > 0 and nc["bytes"] == 1048576 and nc["staleness_ms"] == 100, nc)
    check("load-gen near cache: answers from memory are not RPCs, refreshes ahead are "
          "(client count == server's)",
          r["rpcs"] == r["server"]["total"] == r["requests"] - nc["hits"] - nc["miss_hits"] + nc["refreshes"],
          (r["rpcs"], r["server"], r["requests"], nc))

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
    p4_stdout = p.stdout
    check("request-coalescing exits 0", p.returncode == 0, p.stderr)
    check("request-coalescing prints the before/after table",
          "| set, p99" in p.stdout and "Before Coalescing" in p.stdout and "After Coalescing" in p.stdout)
    check("--quiet prints no phase heading over nothing",
          "phase 1:" not in p.stdout and "phase 2:" not in p.stdout, p.stdout)
    r = json.load(open(out4))
    b, a = r["before"], r["after"]
    for name, ph in (("before", b), ("after", a)):
        check(f"{name}: success == requests > 0", ph["requests"] > 0 and ph["success"] == ph["requests"], ph)
    check("coalescing happens only in phase 2", "coalesced" not in b
          and a["coalesced"]["get"] + a["coalesced"]["set"] > 0, a.get("coalesced"))
    check("coalesced percentages are consistent", 0 < a["coalesced"]["pct_of_all"] <= 100)
    check("phase 2 sends fewer RPCs per request", a["server"]["total"] / a["requests"]
          < b["server"]["total"] / b["requests"], (a["server"], b["server"]))
    # Rate-capped: phase 2 sends fewer server RPCs for what it is asked.
    # Counted per request: on a loaded machine phase 1 falls short of the
    # 20,000/s and phase 2 (cheaper, coalesced) does not, so the two phases
    # need not issue the same number of requests. An outright comparison
    # failed one fresh-clone run of ten (and one helper's run under ASan).
    out5 = os.path.join(tmp, "rc5.json")
    p = run([coalescing, "--duration", "2", "--rps", "20000", "--concurrency", "1000", "--quiet",
             "--json", out5])
    r = json.load(open(out5))
    b5, a5 = r["before"], r["after"]
    check("rate-capped: phase 2 sends fewer server RPCs per request", p.returncode == 0
          and a5["success"] == a5["requests"] > 0 and b5["requests"] > 0
          and a5["server"]["total"] / a5["requests"] < b5["server"]["total"] / b5["requests"],
          (b5["requests"], b5["server"], a5["requests"], a5["server"]))
    # The third phase, coalescing with a near cache, in the table and the
    # JSON of the first run; the near cache only in it.
    r = json.load(open(out4))
    n = r["after_near_cache"]
    check("request-coalescing table has the near-cache column and the new rows",
          "Coalescing + Near Cache" in p4_stdout and "| get, % answered by near cache" in p4_stdout
          and "| server RPCs per request" in p4_stdout
          and "| requests per second, limit" not in p4_stdout, p4_stdout)
    check("--quiet prints no phase 3 heading", "phase 3:" not in p4_stdout, p4_stdout)
    check("phase 3: success == requests > 0, no wrong result", n["requests"] > 0
          and n["success"] == n["requests"] and n["wrong_results"] == 0, n)
    check("phase 3 has the near cache (16 MiB, 100 ms by default), phases 1 and 2 none",
          n["near_cache"] is not None and n["near_cache"]["bytes"] == 16 << 20
          and n["near_cache"]["staleness_ms"] == 100 and b["near_cache"] is None and a["near_cache"] is None,
          (b["near_cache"], a["near_cache"], n["near_cache"]))
    check("phase 3 coalesces too", n["coalesced"]["get"] + n["coalesced"]["set"] > 0, n["coalesced"])

    def table_row(out, name):
        """A row of the table: its cells after the name."""
        for line in out.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == name:
                return cells[1:]
        return None

    per = table_row(p4_stdout, "server RPCs per request")
    check("server RPCs per request: each phase's server total / requests",
          per == [f"{ph['server']['total'] / ph['requests']:.3f}" for ph in (b, a, n)], (per, b["server"]))
    # Read-mostly and rate-capped on the 10 hot keys: the near cache answers
    # gets in phase 3, and the table shows the rate asked for.
    out_n = os.path.join(tmp, "rc_near.json")
    p = run([coalescing, "--duration", "2", "--rps", "5000", "--concurrency", "100", "--get-ratio", "0.95",
             "--near-cache-bytes", "1048576", "--near-cache-staleness-ms", "200", "--quiet",
             "--json", out_n])
    check("request-coalescing --get-ratio 0.95 --rps 5000 exits 0", p.returncode == 0, p)
    r = json.load(open(out_n))
    for name in ("before", "after", "after_near_cache"):
        check_ratio(f"request-coalescing --get-ratio 0.95, {name}", r[name], 0.95, 100)
    nc = r["after_near_cache"]["near_cache"]
    check("phase 3 on 10 hot keys: near-cache hits > 0, the options' size and bound",
          nc["hits"] > 0 and nc["bytes"] == 1048576 and nc["staleness_ms"] == 200, nc)
    check("the options set phase 3's near cache only",
          r["before"]["near_cache"] is None and r["after"]["near_cache"] is None, r["after"]["near_cache"])
    share = table_row(p.stdout, "get, % answered by near cache")
    looked = nc["hits"] + nc["miss_hits"] + nc["misses"]
    check("the table's near-cache share is the JSON's", share is not None and share[2]
          == f"{100 * (nc['hits'] + nc['miss_hits']) / looked:.1f}%", (share, nc))
    check("with --rps, the table has the rate asked for in every phase",
          table_row(p.stdout, "requests per second, limit") == ["5000"] * 3, p.stdout)
    check("the settings line gives the get ratio and phase 3's near cache",
          "get ratio 0.95," in p.stdout and "phase 3's near cache 1048576 bytes, 200 ms" in p.stdout, p.stdout)

    root = ET.parse(svg).getroot()
    lines = [e for e in root.iter() if e.tag.endswith("polyline")]
    check("SVG is well-formed with six series (get and set of three phases)", len(lines) == 6)
    check("SVG series have points", all(len(e.get("points").split()) > 100 for e in lines))
    settings = ["".join(e.itertext()) for e in root.iter() if e.get("id") == "settings"]
    check("SVG states the run's settings under its title", len(settings) == 1
          and "200 workers" in settings[0] and "no rate limit" in settings[0]
          and "2.0 s per phase" in settings[0], settings)
    # Wrapped to the picture's width: no line of it longer than 125
    # characters (about 750 px of 11 px text, from x = 80 of 900).
    tspans = [e.text or "" for e in root.iter() if e.tag.endswith("tspan")]
    check("SVG settings wrap within the picture", len(tspans) >= 2
          and all(len(t) <= 125 for t in tspans) and "".join(tspans) == settings[0], tspans)

    # Per-request deadlines spread over 50 ms .. 2 s (--timeout-ms A:B),
    # against the embedded server. Few requests time out here, but any that
    # does must not do so early; the report says how many did.
    out6 = os.path.join(tmp, "lg6.json")
    p = run([load_gen, "--duration", "2", "--rps", "0", "--concurrency", "100",
             "--timeout-ms", "50:2000", "--stats-interval", "1", "--json", out6])
    check("load-gen --timeout-ms 50:2000 exits 0", p.returncode == 0, p.stderr)
    check("load-gen prints timeouts and early timeouts",
          "deadlines 50 to 2000 ms" in p.stdout and "early 0 (before their own deadline)" in p.stdout, p.stdout)
    check_deadlines("load-gen 50:2000", json.load(open(out6)), (50, 2000))
    out7 = os.path.join(tmp, "rc7.json")
    p = run([coalescing, "--duration", "2", "--rps", "0", "--concurrency", "200", "--quiet",
             "--timeout-ms", "50:2000", "--json", out7])
    check("request-coalescing --timeout-ms 50:2000 exits 0", p.returncode == 0, p.stderr)
    check("request-coalescing table shows timeouts before and after",
          "| requests timed out" in p.stdout and "| timed out before own deadline" in p.stdout, p.stdout)
    r = json.load(open(out7))
    for name in ("before", "after"):
        check_deadlines(f"request-coalescing 50:2000 {name}", r[name], (50, 2000))
    check("a single --timeout-ms N is N:N", json.load(open(out2))["config"]["timeout_min_ms"] == 2000)

    # A server that never answers: every request times out, each at its own
    # deadline (20..300 ms), coalesced waiters too, though they share RPCs
    # with waiters whose deadlines differ. Nothing succeeds, so both tools
    # exit 1; their JSON is written first.
    silent = _SilentServer(("127.0.0.1", 0), _Silent)
    threading.Thread(target=silent.serve_forever, daemon=True).start()
    silent_ep = f"127.0.0.1:{silent.server_address[1]}"
    out8 = os.path.join(tmp, "lg8.json")
    p = run([load_gen, "--endpoint", silent_ep, "--insecure", "--duration", "1.5", "--rps", "0",
             "--concurrency", "50", "--timeout-ms", "20:300", "--quiet", "--json", out8])
    check("load-gen against a silent server exits 1", p.returncode == 1
          and "no request succeeded" in p.stderr, p)
    check_deadlines("load-gen, silent server", json.load(open(out8)), (20, 300), all_timed_out=True)
    out9 = os.path.join(tmp, "rc9.json")
    p = run([coalescing, "--endpoint", silent_ep, "--insecure", "--duration", "1.5", "--rps", "0",
             "--concurrency", "50", "--timeout-ms", "20:300", "--quiet", "--json", out9])
    check("request-coalescing against a silent server exits 1", p.returncode == 1, p)
    r = json.load(open(out9))
    for name in ("before", "after"):
        check_deadlines(f"request-coalescing, silent server, {name}", r[name], (20, 300),
                        all_timed_out=True)
    check("silent server: waiters with different deadlines shared RPCs",
          r["after"]["coalesced"]["get"] + r["after"]["coalesced"]["set"] > 0, r["after"]["coalesced"])
    silent.shutdown()
    silent.server_close()

    # Adaptive batching (--batch): 500 workers with no rate cap keep far more
    # than 16 RPCs in flight, so gets and sets queue and leave as batches.
    def check_batched(name, ph, spec, exact=True):
        """A run with --batch: the counters add up, batches were sent, fewer
        RPCs than requests, and every result was the request's own."""
        k = ph["batching"]
        check(f"{name}: batch settings reach the run", ph["config"]["batch"] == spec, ph["config"])
        check(f"{name}: success == requests > 0", ph["requests"] > 0 and ph["success"] == ph["requests"], ph)
        check(f"{name}: batches were sent, fewer RPCs than requests",
              k["batches"] > 0 and k["batched_keys"] >= 2 * k["batches"] and ph["rpcs"] < ph["requests"]
              and ph["rpcs_per_request"] < 1, (k, ph["rpcs"], ph["requests"]))
        check(f"{name}: keys-per-batch histogram sums to the batches",
              sum(k["keys_per_batch"].values()) == k["batches"], k)
        check(f"{name}: every queued request left once (batched, alone or ended)",
              k["queued"] == k["batched_keys"] + k["sent_alone"] + k["left_queue"]
              and k["queued_us_max"] <= k["queued_us_total"], k)
        check(f"{name}: every result was the request's own", ph["wrong_results"] == 0
              and ph["get_misses"] == 0 and ph["get_hits"] == ph["get"]["count"] > 0, ph)
        if exact:  # no timeouts, no retries: the client's count is the server's
            srv = ph["server"]
            check(f"{name}: RPCs counted by the client == by the server",
                  ph["rpcs"] == srv["total"] == srv["Get"] + srv["Set"] + srv["GetBatch"] + srv["SetBatch"]
                  and srv["GetBatch"] + srv["SetBatch"] == k["batches"], (ph["rpcs"], srv, k))

    defaults = {"min_in_flight": 16, "linger_us": 0, "max_keys": 64, "max_bytes": 1048576,
                "max_wait_us": 1000}
    out10 = os.path.join(tmp, "lg10.json")
    p = run([load_gen, "--duration", "2", "--rps", "0", "--concurrency", "500", "--batch", "--quiet",
             "--json", out10])
    check("load-gen --batch exits 0", p.returncode == 0, p.stderr)
    check("load-gen --batch says so and prints the counters",
          "batching 16:0:64:1048576:1000" in p.stdout and "batching: " in p.stdout and "keys per batch:" in p.stdout
          and "get batch" in p.stdout, p.stdout)
    check_batched("load-gen --batch", json.load(open(out10)), defaults)
    # Every field given, on two threads, with a small M: no batch above 8 keys.
    out11 = os.path.join(tmp, "lg11.json")
    p = run([load_gen, "--duration", "2", "--rps", "0", "--concurrency", "400", "--threads", "2",
             "--batch", "4:200:8:4096:500", "--quiet", "--json", out11])
    r = json.load(open(out11))
    check("load-gen --batch 4:200:8:4096:500 exits 0", p.returncode == 0, p.stderr)
    check_batched("load-gen --batch 4:200:8:4096:500", r, {"min_in_flight": 4, "linger_us": 200,
                  "max_keys": 8, "max_bytes": 4096, "max_wait_us": 500})
    check("max_keys 8: no batch of more than 8 keys",
          all(r["batching"]["keys_per_batch"][b] == 0 for b in ("9-16", "17-32", "33-64", "65-128", "129+")),
          r["batching"])
    # --batch=N and --batch 0 (off).
    out12 = os.path.join(tmp, "lg12.json")
    p = run([load_gen, "--duration", "0.5", "--rps", "0", "--concurrency", "50", "--batch=2",
             "--quiet", "--json", out12])
    check("--batch=2 keeps the other defaults", p.returncode == 0 and json.load(open(out12))["config"]["batch"]
          == dict(defaults, min_in_flight=2), p)
    p = run([load_gen, "--duration", "0.5", "--rps", "0", "--concurrency", "50", "--batch", "0",
             "--quiet", "--json", out12])
    r = json.load(open(out12))
    check("--batch 0 is off", p.returncode == 0 and r["batching"] is None and r["rpcs"] == r["requests"], r)
    # request-coalescing --batch: both phases batch; the coalescer composes.
    out13 = os.path.join(tmp, "rc13.json")
    p = run([coalescing, "--duration", "2", "--rps", "0", "--concurrency", "500", "--keys", "0",
             "--batch", "--quiet", "--json", out13])
    check("request-coalescing --batch exits 0", p.returncode == 0, p.stderr)
    check("request-coalescing --batch table has the batching rows",
          "| RPCs sent (client count)" in p.stdout and "| batches (GetBatch + SetBatch)" in p.stdout, p.stdout)
    r = json.load(open(out13))
    check_batched("request-coalescing --batch, before", r["before"], defaults)
    check_batched("request-coalescing --batch, after (coalescer)", r["after"], defaults)
    out14 = os.path.join(tmp, "rc14.json")
    p = run([coalescing, "--duration", "2", "--rps", "0", "--concurrency", "500", "--batch", "2",
             "--quiet", "--json", out14])
    r = json.load(open(out14))
    check("request-coalescing --batch 2 on 10 keys: every result its own, in both phases",
          p.returncode == 0 and all(r[ph]["wrong_results"] == 0 and r[ph]["get_misses"] == 0
                                    and r[ph]["success"] == r[ph]["requests"] > 0 for ph in ("before", "after")), r)
    # Batched requests against a server that never answers: each times out
    # at its own deadline, queued ones too (they never reach the wire).
    # With no bound on the queue's wait (W 0): with the default bound of
    # 1 ms they leave the queue long before the shortest deadline.
    silent = _SilentServer(("127.0.0.1", 0), _Silent)
    threading.Thread(target=silent.serve_forever, daemon=True).start()
    silent_ep = f"127.0.0.1:{silent.server_address[1]}"
    out15 = os.path.join(tmp, "lg15.json")
    # Queued requests can time out in the queue only in a run where some
    # waited there longer than their own deadline (20-300 ms). One run in
    # five or so none waited even 20 ms (the longest wait 0.07 ms: every
    # RPC's slot freed at once), and one in some forty waited long, but
    # less than its own deadline (the longest 61 ms: CI, 2026-12-07). So up
    # to three runs, for one in which a request left the queue at its
    # deadline; a library whose queue ignored deadlines fails all three.
    for attempt in range(3):
        p = run([load_gen, "--endpoint", silent_ep, "--insecure", "--duration", "1.5", "--rps", "0",
                 "--concurrency", "50", "--timeout-ms", "20:300", "--batch", "4:0:64:1048576:0", "--quiet",
                 "--json", out15])
        r = json.load(open(out15))
        if r["batching"]["left_queue"] > 0:
            break
    check("load-gen --batch against a silent server exits 1", p.returncode == 1, p)
    check_deadlines("load-gen --batch, silent server", r, (20, 300), all_timed_out=True)
    check("silent server: queued requests timed out where they waited, in one of 3 runs",
          r["batching"]["left_queue"] > 0 and r["rpcs"] < r["requests"], r["batching"])
    check("silent server: ...having waited at least the shortest deadline",
          r["batching"]["queued_us_max"] >= 20000, r["batching"])
    silent.shutdown()
    silent.server_close()

    # Bad values: a clear message and exit status 2.
    for args in (["--concurrency", "0"], ["--rps", "-5"], ["--duration", "x"], ["--distribution", "pareto"],
                 ["--open-loop", "--rps", "0"], ["--endpoint", "nohost"], ["--insecure"], ["--threads", "99"],
                 ["--keys", "0", "--distribution", "zipf"], ["--bogus"], ["extra"],
                 ["--timeout-ms", "300:50"], ["--timeout-ms", "0:50"], ["--timeout-ms", "50:"],
                 ["--timeout-ms", ":50"], ["--timeout-ms", "5:x"], ["--timeout-ms", "1:3600001"],
                 ["--batch", "16:0:1"], ["--batch", "100001"], ["--batch", "1:2:3:4:5"], ["--batch=x"],
                 ["--batch", "4:100001"], ["--batch", "4:0:64:1023"], ["--batch", "4:0:64:1024:100001"],
                 ["--batch", "4:0:64:1024:0:1"], ["--batch", "4:"], ["--batch=-1"],
                 ["--get-ratio", "0.4"], ["--get-ratio", "1"], ["--get-ratio", "x"], ["--get-ratio", "0.9x"]):
        p = run([load_gen] + args)
        check(f"load-gen {' '.join(args)} -> exit 2 with a message", p.returncode == 2 and p.stderr.strip(), p)
    p = run([load_gen, "--plot-log"])
    check("load-gen refuses --plot-log without --plot", p.returncode == 2 and "goes with --plot" in p.stderr, p)

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
              and "(default 10)" in p.stdout and "--open-loop" in p.stdout
              and "--timeout-ms A[:B]" in p.stdout and "--timeout-ms 50:2000" in p.stdout
              and "--batch [N[:L[:M[:B[:W]]]]]" in p.stdout and "16:0:64:1048576:1000" in p.stdout)


def parse_leaderboard(out):
    """What a leaderboard transcript says (either backend): the scores it
    submitted (with --verbose), its bonuses, and each answer it printed."""
    t = {"submitted": {}, "bonuses": [], "top": [], "band_top": [], "player": None}
    section = None
    for line in out.splitlines():
        if m := re.fullmatch(r"  submit (\S+) (\d+)", line):
            t["submitted"][m[1]] = int(m[2])
        elif m := re.fullmatch(r"bonus (\S+) \+(\d+) -> (\d+) \((?:increment_score|get_rank, upsert)\)", line):
            t["bonuses"].append((m[1], int(m[2]), int(m[3])))
        elif m := re.fullmatch(r"players on the board: (\d+) \(length\)", line):
            t["size"] = int(m[1])
        elif line.startswith("top 10 "):
            section = "top"
        elif line.startswith("the top 5 of them "):
            section = "band_top"
        elif m := re.fullmatch(r"(\S+): rank (\d+) of (\d+), score (\d+) \(get_rank descending(?:, get_score)?\)",
                               line):
            t["player"] = (m[1], int(m[2]), int(m[3]), int(m[4]))
        elif m := re.fullmatch(r"(\S+): not on the board \((?:get_rank and get_score missed|get_rank left it out)\)", line):
            t["player"] = (m[1], None, None, None)
        elif m := re.fullmatch(r"players scoring (\d+) to (\d+): (\d+) \((?:length_by_score|fetch_by_score pages)\)", line):
            t["band"] = (int(m[1]), int(m[2]), int(m[3]))
        elif section == "top" and (m := re.fullmatch(r"\s+\d+\. (\S+)\s+(\d+)", line)):
            t["top"].append((m[1], int(m[2])))
        elif section == "band_top" and (m := re.fullmatch(r"  (\S+)\s+(\d+)", line)):
            t["band_top"].append((m[1], int(m[2])))
    return t


def check_leaderboard(name, p, player="player-0001"):
    """Recomputes every answer from the submitted scores and bonuses."""
    check(f"{name}: exits 0", p.returncode == 0, p.stderr)
    t = parse_leaderboard(p.stdout)
    want = dict(t["submitted"])
    check(f"{name}: lists its submissions and four bonuses", len(want) > 0 and len(t["bonuses"]) == 4,
          p.stdout[-2000:])
    for who, amount, got in t["bonuses"]:
        check(f"{name}: bonus for {who} returns the new score", got == want.get(who, 0) + amount,
              (who, want.get(who), amount, got))
        want[who] = want.get(who, 0) + amount
    # Descending order is ascending reversed: ties by name, reversed too.
    board = sorted(((s, n) for n, s in want.items()), reverse=True)
    check(f"{name}: length is every player", t.get("size") == len(want), (t.get("size"), len(want)))
    check(f"{name}: the top 10, in order, with the scores submitted",
          t["top"] == [(n, s) for s, n in board[:10]], (t["top"], board[:10]))
    check(f"{name}: the big bonus leads", t["top"][:1] == [(t["bonuses"][2][0], t["bonuses"][2][2])],
          t["top"][:1])
    ranked = {n: i + 1 for i, (s, n) in enumerate(board)}
    if player in want:
        check(f"{name}: {player}'s rank and score", t["player"] == (player, ranked[player], len(want),
              want[player]), (t["player"], ranked[player], want[player]))
    else:
        check(f"{name}: {player} is not on the board", t["player"] == (player, None, None, None),
              t["player"])
    lo, hi, count = t.get("band", (None, None, None))
    in_band = [(n, s) for s, n in board if lo is not None and lo <= s <= hi]
    check(f"{name}: the count in the band", count == len(in_band), (t.get("band"), len(in_band)))
    check(f"{name}: the band's top 5, in order", t["band_top"] == in_band[:5], (t["band_top"], in_band[:5]))
    return t


def check_collection_examples():
    """leaderboard and session-store."""
    # leaderboard, against the embedded server: every answer it prints is
    # recomputed here from the scores it submitted.
    p = run([leaderboard, "--seed", "7", "--verbose"])
    check("leaderboard says it uses the bundled local server", "bundled local server at 127.0.0.1:" in p.stdout)
    t = check_leaderboard("leaderboard --seed 7", p)
    check("leaderboard submitted 1000 scores in 10 calls", len(t["submitted"]) == 1000
          and "submitted 1000 scores in 10 put_elements calls" in p.stdout, p.stdout[-500:])
    check("leaderboard deletes its board at the end", p.stdout.rstrip().endswith("deleted (done)"))
    q = run([leaderboard, "--seed", "7"])
    check("leaderboard: the same seed gives the same board", q.returncode == 0
          and parse_leaderboard(q.stdout)["top"] == t["top"], q.stdout)
    q = run([leaderboard, "--seed", "8"])
    check("leaderboard: another seed gives another board", q.returncode == 0
          and parse_leaderboard(q.stdout)["top"] != t["top"], q.stdout)
    # A band with nobody in it, a player who is not on the board.
    check_leaderboard("leaderboard, 20 players, ghost", run([leaderboard, "--players", "20", "--verbose",
                      "--player", "ghost", "--band", "200000:300000"]), player="ghost")
    check_leaderboard("leaderboard, the newcomer", run([leaderboard, "--players", "50", "--verbose",
                      "--player", "newcomer", "--band", "0:99999"]), player="newcomer")

    # The same questions of Momento's leaderboard service: the same answers,
    # recomputed the same way (its ties, by id, are the names' order).
    p = run([leaderboard, "--service", "leaderboard", "--seed", "7", "--verbose"])
    check_leaderboard("leaderboard --service leaderboard", p)
    check("leaderboard --service leaderboard: 10 upsert calls",
          "submitted 1000 scores in 10 leaderboard_upsert calls" in p.stdout, p.stdout[-500:])
    check("leaderboard --service leaderboard deletes its leaderboard",
          p.stdout.rstrip().endswith("leaderboard 'weekly-scores' deleted (done)"), p.stdout[-300:])
    check_leaderboard("leaderboard --service leaderboard, 20 players, ghost",
                      run([leaderboard, "--service", "leaderboard", "--players", "20", "--verbose",
                           "--player", "ghost", "--band", "200000:300000"]), player="ghost")
    check_leaderboard("leaderboard --service leaderboard, the newcomer",
                      run([leaderboard, "--service", "leaderboard", "--players", "50", "--verbose",
                           "--player", "newcomer", "--band", "0:99999"]), player="newcomer")
    # A band wider than one page (8192): the count pages through it.
    p = run([leaderboard, "--service", "leaderboard", "--players", "20000", "--verbose",
             "--band", "0:99999"])
    check_leaderboard("leaderboard --service leaderboard, a band of many pages", p,
                      player="player-00001")
    check("leaderboard --service: bad --service", run([leaderboard, "--service", "zset"]).returncode == 2)

    # Against a separate momento-local: the RPCs arrive there, and the
    # board is left with --keep.
    srv, endpoint = start_server(server)
    p = run([leaderboard, "--endpoint", endpoint, "--insecure", "--keep", "--verbose"])
    stats = stop_server(srv)
    check_leaderboard("leaderboard --endpoint --insecure", p)
    check("leaderboard --endpoint reaches that server", '"SortedSetPut": {"total": 10' in stats
          and '"SortedSetGetRank": {"total": 1' in stats, stats)

    # session-store: the transcript must show what was written.
    p = run([session_store, "--views", "4", "--sessions", "4"])
    out = p.stdout
    check("session-store exits 0", p.returncode == 0, p.stderr)
    check("session-store says it uses the bundled local server", "bundled local server at 127.0.0.1:" in out)
    check("session-store creates every session", "creating 4 sessions, one async set_fields each" in out
          and "created 4 sessions (4 callbacks, each SUCCESS)" in out
          and all(f"  session:{i}: user=" in out for i in range(1, 5)), out)
    check("session-store reads back one field", "session:1 user = alice (get_field)" in out, out)
    check("session-store reads several fields, a missing one as such",
          "  user = alice\n  cart = sku-1000,sku-2000\n  coupon: no such field\n" in out, out)
    views = [int(v) for v in re.findall(r"session:1 page_views -> (\d+) \(increment\)", out)]
    check("session-store increments the counter from 0", views == [1, 2, 3, 4], views)
    m = re.search(r"session:1, the whole session \(fetch\): (.*)", out)
    fetched = dict(kv.split("=", 1) for kv in m[1].split(", ")) if m else {}
    check("session-store's fetch shows every field and the counter's value",
          fetched.get("user") == "alice" and fetched.get("cart") == "sku-1000,sku-2000"
          and fetched.get("page_views") == "4" and "last_seen" in fetched, fetched)
    check("session-store removes a field", "cart removed (remove_field), 3 fields left (length)" in out
          and "session:1 cart: no such field (get_field missed)" in out, out)
    ttl = [int(v) for v in re.findall(r"session:1 TTL [^:]*: (\d+) ms", out)]
    check("session-store: the TTL ran for the wait", len(ttl) == 3 and 0 < ttl[0] <= 3000 - 1000, ttl)
    check("session-store: a write with refresh 0 leaves the TTL running",
          len(ttl) == 3 and ttl[1] <= ttl[0], ttl)
    check("session-store: a write with refresh 1 resets it", len(ttl) == 3 and 3000 - 300 <= ttl[2] <= 3000,
          ttl)
    m = re.search(r"every session now \(4 async fetches[^\n]*\n((?:  session:.*\n)+)", out)
    final = dict(re.findall(r"  (session:\d+): (.*)", m[1])) if m else {}
    check("session-store: the refreshed session is still there, with its counter",
          "page_views=4" in final.get("session:1", "") and "cart=" not in final.get("session:1", ""), final)
    check("session-store: the deleted and the expired sessions are gone",
          all(final.get(f"session:{i}") == "gone" for i in (2, 3, 4)), final)
    check("session-store ends the last session", out.rstrip().endswith("session:1 deleted (delete)"), out)

    srv, endpoint = start_server(server)
    p = run([session_store, "--endpoint", endpoint, "--insecure", "--ttl-ms", "1500"])
    stats = stop_server(srv)
    check("session-store --endpoint --insecure exits 0", p.returncode == 0, p.stderr)
    check("session-store --endpoint reaches that server", '"DictionarySet": {"total": 5' in stats
          and '"DictionaryFetch": {"total": 4' in stats and '"DictionaryIncrement": {"total": 3' in stats,
          stats)

    # Errors reach the user: a server that refuses past a few calls per
    # second makes some call fail; each program says which and exits 1.
    for prog, args in ((leaderboard, []), (session_store, ["--sessions", "40"])):
        srv, endpoint = start_server(server, "--max-rps", "10")
        p = run([prog, "--endpoint", endpoint, "--insecure", *args])
        stop_server(srv)
        check(f"{os.path.basename(prog)} reports a refused call and exits 1", p.returncode == 1
              and re.search(r"\w failed: LIMIT_EXCEEDED_ERROR \(.*\): .*rate", p.stderr), (p.returncode, p.stderr))
    p = run([leaderboard, "--endpoint", "127.0.0.1:1", "--insecure", "--players", "5"])
    check("leaderboard with no server: SERVER_UNAVAILABLE, exit 1", p.returncode == 1
          and "create_cache failed: SERVER_UNAVAILABLE" in p.stderr, p)

    # Options: --help, and bad values exit 2 with a message.
    for prog, default in ((leaderboard, "(default 1000)"), (session_store, "(default 3000)")):
        p = run([prog, "--help"])
        check(f"{os.path.basename(prog)} --help", p.returncode == 0 and "--endpoint HOST:PORT" in p.stdout
              and "--insecure" in p.stdout and default in p.stdout, p.stdout)
    for prog, args in ((leaderboard, ["--players", "0"]), (leaderboard, ["--players", "x"]),
                       (leaderboard, ["--band", "5:4"]), (leaderboard, ["--band", "5"]),
                       (leaderboard, ["--seed", "-1"]), (leaderboard, ["--player", ""]),
                       (session_store, ["--sessions", "2"]), (session_store, ["--ttl-ms", "999"]),
                       (session_store, ["--views", "0"])):
        p = run([prog] + args)
        check(f"{os.path.basename(prog)} {' '.join(args)} -> exit 2 with a message",
              p.returncode == 2 and "invalid" in p.stderr, p)
    for prog in (leaderboard, session_store):
        for args in (["--insecure"], ["--endpoint", "nohost"], ["--bogus"], ["extra"]):
            p = run([prog] + args)
            check(f"{os.path.basename(prog)} {' '.join(args)} -> exit 2 with a message",
                  p.returncode == 2 and p.stderr.strip(), p)


def check_fanout_run(name, p, r, subscribers, embedded=True):
    """A topics-fanout run that should have lost nothing: every successful
    publish reached every subscriber once, and the report adds up."""
    pub = r["publishes"]
    check(f"{name}: exits 0", p.returncode == 0, (p.returncode, p.stderr[-2000:]))
    check(f"{name}: every publish attempted and succeeded", pub["planned"] > 0
          and pub["attempted"] == pub["succeeded"] == pub["planned"] and pub["failed"] == 0
          and pub["refused"] == 0 and pub["not_sent"] == 0, pub)
    check(f"{name}: delivered == expected == publishes x subscribers",
          r["delivered"] == r["expected"] == pub["succeeded"] * subscribers > 0
          and r["lost"] == 0 and r["extra"] == 0 and r["malformed"] == 0, r)
    check(f"{name}: nothing reported by the subscriptions", r["discontinuities"] == 0
          and r["connection_losses"] == 0 and r["ended_early"] == 0 and r["stats_mismatches"] == 0
          and not r["silent_loss"] and not r["still_arriving"] and r["ok"], r)
    for h, n in (("publish_latency_ms", pub["succeeded"]), ("delivery_latency_ms", r["delivered"])):
        q = r[h]
        check(f"{name}: {h} has a sample each, ordered quantiles", q["count"] == n
              and 0 <= q["p50"] <= q["p90"] <= q["p99"] <= q["p999"] <= q["max"], q)
    check(f"{name}: CPU per delivery reported", r["client_cpu_s"] > 0
          and r["client_cpu_us_per_delivery"] > 0
          and (r["server_cpu_s"] is not None) == embedded, r)
    check(f"{name}: the text report says the same", f"delivered {r['delivered']} of {r['expected']}"
          " expected" in p.stdout and "lost 0;" in p.stdout and "LOST IN SILENCE" not in p.stdout, p.stdout)


def check_topics_fanout():
    """topics-fanout: short runs that must deliver everything, the counts
    checked against each other and against the server's."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "fan.json")
        p = run([fanout, "--duration", "1.5", "--publishers", "1", "--subscribers", "3", "--rate", "200",
                 "--json", out])
        check("topics-fanout says it uses the bundled local server",
              "bundled local server at 127.0.0.1:" in p.stdout, p.stdout)
        r = json.load(open(out))
        check_fanout_run("topics-fanout 1 x 3", p, r, 3)
        check("topics-fanout 1 x 3: 300 publishes at 200/s", r["publishes"]["planned"] == 300
              and 150 <= r["publishes"]["per_sec"] <= 220, r["publishes"])
        check("topics-fanout prints progress each second", p.stdout.count(" s: published ") >= 1, p.stdout)

        # Two publishers, subscribers spread over two clients.
        p = run([fanout, "--duration", "1", "--publishers", "2", "--subscribers", "5", "--clients", "2",
                 "--rate", "300", "--payload-bytes", "1000", "--in-flight", "4", "--quiet", "--json", out])
        r = json.load(open(out))
        check_fanout_run("topics-fanout 2 x 5 on 2 clients", p, r, 5)
        c = r["config"]
        check("topics-fanout: options reach the run", (c["publishers"], c["subscribers"], c["clients"],
              c["rate"], c["payload_bytes"], c["in_flight"]) == (2, 5, 2, 300, 1000, 4), c)
        check("--quiet prints no progress", " s: published " not in p.stdout, p.stdout)

        # Against a separate momento-local: its counts match the program's
        # (one more publish: the warm-up, to another topic). The two
        # subscriptions of one client share one server stream; with
        # --own-streams each has its own.
        for own, streams in (([], 1), (["--own-streams"], 2)):
            srv, endpoint = start_server(server)
            p = run([fanout, "--endpoint", endpoint, "--insecure", "--duration", "1", "--subscribers",
                     "2", "--rate", "100", "--quiet", "--json", out] + own)
            stats = stop_server(srv)
            r = json.load(open(out))
            check_fanout_run("topics-fanout --endpoint --insecure " + " ".join(own), p, r, 2,
                             embedded=False)
            m = re.search(r'"TopicPublish": \{"total": (\d+)', stats)
            n = re.search(r'"TopicSubscribe": \{"total": (\d+)', stats)
            check(f"topics-fanout --endpoint {' '.join(own)}: the server counted every publish and "
                  f"{streams} subscribe stream(s)",
                  m and int(m[1]) == r["publishes"]["succeeded"] + 1 and n and int(n[1]) == streams,
                  stats)
            check("topics-fanout --own-streams reaches the run",
                  r["config"]["own_streams"] == bool(own), r["config"])

        # Publishes refused by the server (--max-rps): counted as failed,
        # reported, and the run fails.
        srv, endpoint = start_server(server, "--max-rps", "20")
        p = run([fanout, "--endpoint", endpoint, "--insecure", "--duration", "1", "--subscribers", "2",
                 "--rate", "100", "--quiet", "--json", out])
        stop_server(srv)
        r = json.load(open(out))
        check("topics-fanout with publishes failing exits 1", p.returncode == 1 and not r["ok"]
              and r["publishes"]["failed"] > 0 and r["publishes"]["first_error"] is not None
              and r["expected"] == r["publishes"]["succeeded"] * 2, (p.returncode, r["publishes"]))
        check("topics-fanout names the publish error", "first publish error: " in p.stdout, p.stdout)

    p = run([fanout, "--help"])
    check("topics-fanout --help", p.returncode == 0 and "--endpoint HOST:PORT" in p.stdout
          and "--clients N" in p.stdout and "(default 10)" in p.stdout and "--json FILE" in p.stdout, p.stdout)
    for args in (["--payload-bytes", "15"], ["--subscribers", "0"], ["--publishers", "65"],
                 ["--clients", "0"], ["--rate", "0"], ["--rate", "x"], ["--duration", "0"],
                 ["--duration", "3601"], ["--in-flight", "0"], ["--topic", ""], ["--cache", ""],
                 ["--insecure"], ["--endpoint", "nohost"], ["--bogus"], ["extra"]):
        p = run([fanout] + args)
        check(f"topics-fanout {' '.join(args)} -> exit 2 with a message",
              p.returncode == 2 and p.stderr.strip(), p)


def check_transport_option(tmp_transport):
    """--transport protosocket in load-gen and request-coalescing: with the
    bundled server (its protosocket port opened for it) and with a separate
    momento-local named by --protosocket-endpoint; the option errors."""
    out = os.path.join(tmp_transport, "ps.json")
    p = run([load_gen, "--transport", "protosocket", "--duration", "1", "--rps", "0",
             "--concurrency", "50", "--quiet", "--json", out])
    check("load-gen --transport protosocket exits 0", p.returncode == 0, p)
    check("load-gen --transport protosocket names it in its first line",
          "over protosocket to 127.0.0.1:" in p.stdout, p.stdout)
    r = json.load(open(out))
    check("load-gen --transport protosocket: JSON says so, every request right",
          r["config"]["transport"] == "protosocket" and r["requests"] > 0
          and r["success"] == r["requests"] and r["wrong_results"] == 0, r["config"])
    # --dispatch: each thread's loop dispatches; over protosocket it also
    # works the connections (no I/O thread), with coalescing in
    # request-coalescing's second phase.
    for extra in (["--transport", "protosocket"], []):
        p = run([load_gen, "--dispatch", "--threads", "2", "--duration", "0.5", "--rps", "0",
                 "--concurrency", "50", "--timeout-ms", "20000", "--quiet", "--json", out]
                + extra)
        r = json.load(open(out)) if p.returncode == 0 else {"config": {}}
        check(f"load-gen --dispatch {' '.join(extra)}: JSON says so, every request right",
              r["config"].get("dispatch") is True and r.get("requests", 0) > 0
              and r["success"] == r["requests"] and r["wrong_results"] == 0, p)
    p = run([coalescing, "--transport", "protosocket", "--dispatch", "--duration", "0.5",
             "--rps", "0", "--concurrency", "100", "--quiet"])
    check("request-coalescing --transport protosocket --dispatch exits 0", p.returncode == 0, p)
    p = run([load_gen, "--dispatch", "--io-callbacks"])
    check("load-gen --dispatch --io-callbacks -> exit 2 with a message",
          p.returncode == 2 and "--dispatch" in p.stderr, p)
    p = run([load_gen, "--duration", "0.3", "--quiet", "--json", out])
    check("load-gen JSON says grpc by default",
          p.returncode == 0 and json.load(open(out))["config"]["transport"] == "grpc", p)
    p = run([coalescing, "--transport", "protosocket", "--duration", "0.5", "--rps", "0",
             "--concurrency", "100", "--quiet"])
    check("request-coalescing --transport protosocket exits 0", p.returncode == 0, p)

    srv = subprocess.Popen([server, "--port", "0", "--protosocket-port", "0"],
                           stdout=subprocess.PIPE, text=True)
    ep = srv.stdout.readline().strip().replace("listening on ", "")
    line = srv.stdout.readline().strip()
    check("momento-local --protosocket-port 0 prints its port",
          line.startswith("protosocket listening on "), line)
    ps_ep = line.replace("protosocket listening on ", "")
    p = run([load_gen, "--endpoint", ep, "--insecure", "--transport", "protosocket",
             "--protosocket-endpoint", ps_ep, "--duration", "0.5", "--quiet", "--json", out])
    r = json.load(open(out)) if p.returncode == 0 else {}
    check("load-gen --protosocket-endpoint to a separate server: every request right",
          p.returncode == 0 and r["success"] == r["requests"] > 0, p)
    stop_server(srv)

    for args in (["--transport", "quic"], ["--transport", ""],
                 ["--protosocket-endpoint", "nohost"],
                 ["--protosocket-endpoint", "127.0.0.1:1"],
                 ["--endpoint", "127.0.0.1:1", "--insecure", "--transport", "protosocket"]):
        for prog in (load_gen, coalescing):
            p = run([prog] + args)
            check(f"{os.path.basename(prog)} {' '.join(args)} -> exit 2 with a message",
                  p.returncode == 2 and p.stderr.strip(), p)


with tempfile.TemporaryDirectory() as d:
    check_transport_option(d)
check_collection_examples()
check_topics_fanout()
finish()
