#!/usr/bin/env bash
# Topics fan-out (issue item 5): one publisher, 100 subscribers on one
# topic, apps/topics-fanout against momento-local on loopback (a
# separate process, so its CPU time is its own: /proc/PID/stat).
#   1. The highest deliveries per second with nothing lost: the publish
#      rate (× 100 subscribers = deliveries/s) starts at STEP messages/s
#      and grows by STEP_PCT % a step, STEP_SECONDS each on a fresh server,
#      until a run loses anything (a delivery missing, a discontinuity, a
#      connection loss, a failed publish) or delivers more than 5 % below
#      its target; a failing step is run once more before it counts (a
#      shared 2-core VM has hiccups). The last passing step is the maximum
#      (to within one step).
#   2. At half that rate, LAT_SECONDS for latency: end-to-end (publish to
#      subscriber callback) p50 / p99, and client and server CPU per
#      delivery; and LAT_SECONDS at half the target (TARGET_DPS / 2
#      deliveries/s), the other reading of "at half that rate".
# For each configuration of CONFIGS: "shared:N" - the library's default,
# the subscriptions of each of N clients sharing one server stream -, and
# "own:N" - one server stream per subscription (--own-streams), as the
# official SDKs do -, the subscribers spread over N libmomento clients
# (one completion thread each). The best maximum is the headline.
# Targets: >= 50,000 deliveries/s with nothing lost; p99 <= 10 ms at half
# that rate.
# Usage: bench/topics.sh [BUILD_DIR]   (default: build). Loopback only;
# every run is bounded by its duration and a timeout. Environment:
# SUBSCRIBERS (100), STEP (100), STEP_PCT (25), MAX_RATE (20000),
# STEP_SECONDS (3), LAT_SECONDS (10), PAYLOAD (64),
# CONFIGS ("shared:1 own:1 own:2"), TARGET_DPS (50000). About 6 minutes.
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/common.sh"
fanout="$build/apps/topics-fanout"
[ -x "$fanout" ] || { echo "build first: $fanout is missing"; exit 1; }
subs=${SUBSCRIBERS:-100}
step=${STEP:-100}
max_rate=${MAX_RATE:-20000}
step_s=${STEP_SECONDS:-3}
lat_s=${LAT_SECONDS:-10}
payload=${PAYLOAD:-64}
# shared: the subscriptions of a client share one server stream (the
# library's default); own: one stream each (--own-streams), as the official
# SDKs do. After the colon, the number of subscriber clients.
configs=${CONFIGS:-shared:1 own:1 own:2}
step_pct=${STEP_PCT:-25}
target_dps=${TARGET_DPS:-50000}
tck=$(getconf CLK_TCK)

# CPU seconds a process has used (user + system).
proc_cpu() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

# $1 = a configuration (MODE:CLIENTS), $2 = rate, $3 = seconds: one run on
# a fresh server; its JSON in $work/run.json plus "server_cpu_s"; prints
# nothing.
run_fanout() {
    start_server
    local cpu0 cpu1 rc=0 own=""
    [ "${1%%:*}" = own ] && own=--own-streams
    cpu0=$(proc_cpu "$pid")
    timeout $(( $3 + 60 )) "$fanout" --endpoint "$ep" --insecure --subscribers "$subs" $own \
        --clients "${1##*:}" --rate "$2" --duration "$3" --payload-bytes "$payload" --quiet \
        --json "$work/run.json" > "$work/fanout.out" 2> "$work/fanout.err" || rc=$?
    cpu1=$(proc_cpu "$pid")
    stop_server
    [ -s "$work/run.json" ] ||
        { echo "topics-fanout wrote no JSON (exit $rc):"; cat "$work/fanout.out" "$work/fanout.err"; exit 1; }
    python3 - "$work/run.json" "$cpu0" "$cpu1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["server_cpu_s"] = float(sys.argv[3]) - float(sys.argv[2])
r["server_cpu_us_per_delivery"] = r["server_cpu_s"] * 1e6 / r["delivered"] if r["delivered"] else 0
json.dump(r, open(sys.argv[1], "w"))
EOF
    rm -f "$work/last.err"
    [ -s "$work/fanout.err" ] && cp "$work/fanout.err" "$work/last.err"
    return 0
}

# Whether the last run passed: nothing lost and within 5 % of the target.
passed() {
    json "$work/run.json" "'yes' if r['lost'] == 0 and r['extra'] == 0 and r['discontinuities'] == 0 \
and r['connection_losses'] == 0 and r['publishes']['failed'] == 0 and r['publishes']['not_sent'] == 0 \
and r['malformed'] == 0 and r['ended_early'] == 0 \
and r['deliveries_per_sec'] >= 0.95 * $1 * $subs else 'no'"
}

# One line about the last run.
summary() {
    json "$work/run.json" "'%7.0f deliveries/s  lost %d  disc %d  p50 %.2f ms  p99 %.2f ms  client %.2f us  server %.2f us' % \
(r['deliveries_per_sec'], r['lost'], r['discontinuities'], r['delivery_latency_ms']['p50'], \
r['delivery_latency_ms']['p99'], r['client_cpu_us_per_delivery'], r['server_cpu_us_per_delivery'])"
}

start=$SECONDS
declare -A best_rate best_dps lat_line lat_p50 lat_p99 lat_ccpu lat_scpu lat_ok tgt_ok tgt_p50 tgt_p99
tgt_half=$(( target_dps / 2 / subs ))
[ "$tgt_half" -ge 1 ] || tgt_half=1
for c in $configs; do
    echo "== $c: stepping the rate up by ${step_pct} %, from $step messages/s, ${step_s} s each, $subs subscribers"
    best_rate[$c]=0
    best_dps[$c]=0
    for (( rate = step; rate <= max_rate; rate = rate * (100 + step_pct) / 100 )); do
        run_fanout "$c" "$rate" "$step_s"
        ok=$(passed "$rate")
        if [ "$ok" != yes ]; then
            echo "   $rate msg/s: $(summary)  FAIL, once more"
            run_fanout "$c" "$rate" "$step_s"
            ok=$(passed "$rate")
        fi
        echo "   $rate msg/s: $(summary)  $([ "$ok" = yes ] && echo ok || echo FAIL)   ($((SECONDS - start)) s)"
        [ -f "$work/last.err" ] && sed 's/^/      /' "$work/last.err" | head -5
        [ "$ok" = yes ] || break
        best_rate[$c]=$rate
        best_dps[$c]=$(json "$work/run.json" "round(r['deliveries_per_sec'])")
    done
    if [ "${best_rate[$c]}" -eq 0 ]; then
        echo "   no rate passed"
        continue
    fi
    half=$(( best_rate[$c] / 2 ))
    [ "$half" -ge 1 ] || half=1
    echo "== $c: latency at half the maximum, $half messages/s ($((half * subs)) deliveries/s), ${lat_s} s"
    run_fanout "$c" "$half" "$lat_s"
    lat_ok[$c]=$(passed "$half")
    echo "   $half msg/s: $(summary)  $([ "${lat_ok[$c]}" = yes ] && echo ok || echo FAIL)"
    lat_p50[$c]=$(json "$work/run.json" "r['delivery_latency_ms']['p50']")
    lat_p99[$c]=$(json "$work/run.json" "r['delivery_latency_ms']['p99']")
    lat_ccpu[$c]=$(json "$work/run.json" "'%.2f' % r['client_cpu_us_per_delivery']")
    lat_scpu[$c]=$(json "$work/run.json" "'%.2f' % r['server_cpu_us_per_delivery']")
    lat_line[$c]="$(json "$work/run.json" "'publish p50 %.2f p99 %.2f ms; delivery p50 %.2f p90 %.2f p99 %.2f p999 %.2f max %.2f ms' % \
(r['publish_latency_ms']['p50'], r['publish_latency_ms']['p99'], r['delivery_latency_ms']['p50'], \
r['delivery_latency_ms']['p90'], r['delivery_latency_ms']['p99'], r['delivery_latency_ms']['p999'], \
r['delivery_latency_ms']['max'])")"
    echo "   ${lat_line[$c]}"
    # And at half the target's rate, whatever the maximum: the other
    # reading of "at half that rate".
    echo "== $c: latency at half the target, $tgt_half messages/s ($((tgt_half * subs)) deliveries/s), ${lat_s} s"
    run_fanout "$c" "$tgt_half" "$lat_s"
    tgt_ok[$c]=$(passed "$tgt_half")
    echo "   $tgt_half msg/s: $(summary)  $([ "${tgt_ok[$c]}" = yes ] && echo ok || echo FAIL)"
    tgt_p50[$c]=$(json "$work/run.json" "r['delivery_latency_ms']['p50']")
    tgt_p99[$c]=$(json "$work/run.json" "r['delivery_latency_ms']['p99']")
done

best=""
for c in $configs; do
    if [ -z "$best" ] || [ "${best_dps[$c]}" -gt "${best_dps[$best]}" ]; then best=$c; fi
done
echo
echo "| streams:clients | max deliveries/s, nothing lost (publish rate) | at half the max: p50 | p99 | client CPU / delivery | server CPU / delivery | at $((tgt_half * subs))/s: p50 | p99 |"
echo "|---|---|---|---|---|---|---|---|"
for c in $configs; do
    printf '| %s | %s (%s msg/s) | %s ms | %s ms | %s µs | %s µs | %s ms | %s ms |\n' "$c" "${best_dps[$c]}" \
        "${best_rate[$c]}" "${lat_p50[$c]:--}" "${lat_p99[$c]:--}" "${lat_ccpu[$c]:--}" "${lat_scpu[$c]:--}" \
        "${tgt_p50[$c]:--}" "${tgt_p99[$c]:--}"
done
t1=$(awk -v d="${best_dps[$best]}" -v t="$target_dps" 'BEGIN { print (d >= t ? "PASS" : "FAIL") }')
t2=$(awk -v p="${lat_p99[$best]:-1e9}" 'BEGIN { print (p <= 10 ? "PASS" : "FAIL") }')
t3=$(awk -v p="${tgt_p99[$best]:-1e9}" 'BEGIN { print (p <= 10 ? "PASS" : "FAIL") }')
echo
echo "best: $best; targets: >= $target_dps deliveries/s nothing lost: $t1;" \
     "p99 <= 10 ms at half the max: $t2; at half the target: $t3 ($((SECONDS - start)) s)"
echo "RESULT config=$best max_dps=${best_dps[$best]} max_rate=${best_rate[$best]} p50_ms=${lat_p50[$best]:-} p99_ms=${lat_p99[$best]:-} client_cpu_us=${lat_ccpu[$best]:-} server_cpu_us=${lat_scpu[$best]:-} half_target_p99_ms=${tgt_p99[$best]:-} target_dps=$t1 target_p99=$t2 target_p99_half_target=$t3"
