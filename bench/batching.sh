#!/usr/bin/env bash
# Adaptive batching (issue 15), one command, every mode in the same run:
#   throughput  1000 in flight, batching off and on (--batch: the library's
#               defaults) alternating over ROUNDS rounds: medians of ops/s,
#               client CPU per operation, and peak RSS of load-gen; RPCs per
#               operation as the server counted them;
#   latency     1 and 10 in flight, off and on alternating: medians of p50
#               and p99 (the higher of get's and set's);
#   sweep       1000 in flight, N (min in flight) in SWEEP_N x M (max keys)
#               in SWEEP_M, plus off, in SWEEP_ROUNDS rounds (each round runs
#               every setting once, in a rotated order): ops/s, CPU per
#               operation, keys per batch, peak RSS;
#               SWEEP_EXTRA adds settings (default: two lingers, 16:50:64 and
#               16:500:64);
#   instructions  1 and 10 in flight, off and on: callgrind instructions
#               per operation of load-gen (a run of INSTR_LONG s minus one
#               of INSTR_SHORT s, over the difference in operations), which
#               says without timing noise that below N nothing changes;
#   moderate    10 and 100 in flight, N (min in flight) in MODERATE_N with
#               M 64, plus off, in SWEEP_ROUNDS rounds: ops/s, CPU per
#               operation, p50/p99 (where a small N starts to batch);
#   rtt         a slow server, as a remote service would be: momento-local
#               holds every call RTT_DELAY_MS (bench/batching_rtt, its
#               delay-ms fault header), requests arrive open loop at random
#               at each of RTT_RATES per second, N in RTT_N (M 64) and off,
#               SWEEP_ROUNDS rounds: p50/p99 from arrival, CPU per operation
#               (what queueing behind N RPCs costs when the server is not the
#               bottleneck);
#   node        (with NODE=1) Momento's official Node.js SDK running the
#               seed's load pattern (bench/node_loadgen.js) beside load-gen
#               without and with --batch: client CPU per operation.
# Workload: load-gen, unique keys (nothing to coalesce), 100-byte values,
# one client thread, no rate cap, each worker set-then-get. momento-local is
# a child started fresh for every run and pinned to CPU 0, the client pinned
# to CPU 1. Client CPU is load-gen's own (its process CPU clock over the
# measured run; the server is another process). Every run's results are
# checked (success == requests, no wrong value, no miss) and its RPC count
# compared with the server's. Loopback only; every run is bounded in time.
# A run that fails its checks (a wrong value, a failed request, RPC counts
# that disagree) stops the script with status 1.
# Usage: bench/batching.sh [BUILD_DIR]   (default build). Environment:
#   ROUNDS (5), SECONDS_PER_RUN (5), LAT_SECONDS (5), SWEEP_SECONDS (4),
#   SWEEP_ROUNDS (2), SWEEP_N ("1 4 16 64"), SWEEP_M ("16 64 256"),
#   SWEEP_EXTRA ("16:50:64 16:500:64"), INSTR_SHORT (2), INSTR_LONG (6),
#   MODERATE_N ("1 4 16"), RTT_RATES ("2000 8000 30000"), RTT_DELAY_MS (2),
#   RTT_N ("1 4 16"), NODE (0), NODE_SECONDS (10),
#   ONLY (sections: throughput latency instructions sweep moderate rtt node)
set -euo pipefail
build=${1:-build}
lg="$build/apps/load-gen"
[ -x "$lg" ] || { echo "build first: $lg is missing"; exit 1; }
command -v taskset >/dev/null || { echo "taskset is missing: apt-get install util-linux"; exit 1; }
. "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)

rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-5}
lat_secs=${LAT_SECONDS:-5}
sweep_secs=${SWEEP_SECONDS:-4}
sweep_rounds=${SWEEP_ROUNDS:-2}
sweep_n=${SWEEP_N:-1 4 16 64}
sweep_m=${SWEEP_M:-16 64 256}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# run_lg TAG LOAD-GEN-ARGS...: one run against a fresh momento-local; appends
# one line of key=value results to $work/TAG.runs and prints it.
run_lg() {
    local tag=$1; shift
    wrap="taskset -c 0" start_server --cache load-gen --max-memory 1073741824 \
        --stats-json "$work/stats.json"
    local rc=0
    taskset -c 1 "$lg" --endpoint "$ep" --insecure --rps 0 --timeout-ms 30000 --quiet \
        --json "$work/lg.json" "$@" > "$work/lg.out" 2>&1 || rc=$?
    stop_server
    [ $rc -eq 0 ] || { cat "$work/lg.out"; echo "load-gen failed ($rc): $*"; exit 1; }
    local line
    line=$(python3 - "$work/lg.json" "$work/stats.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))["methods"]
srv = sum(m.get(k, {}).get("total", 0) for k in ("Get", "Set", "GetBatch", "SetBatch"))
n = r["requests"]
bad = []
if not (n > 0 and r["success"] == n):
    bad.append(f"success {r['success']} of {n}")
if r["wrong_results"] or r["get_misses"]:
    bad.append(f"wrong {r['wrong_results']} missed {r['get_misses']}")
if r["rpcs"] != srv:  # client count vs server count (no retries expected)
    bad.append(f"rpcs: client {r['rpcs']} server {srv}")
k = r["batching"] or {}
print(" ".join([
    f"ops_per_s={r['ops_per_sec']:.0f}",
    f"cpu_us_per_op={r['client_cpu_s'] * 1e6 / n:.2f}",
    f"p50_us={max(r['get']['p50_us'], r['set']['p50_us'])}",
    f"p99_us={max(r['get']['p99_us'], r['set']['p99_us'])}",
    f"rss_mb={r['max_rss_kb'] / 1024:.1f}",
    f"rpcs_per_op={srv / n:.4f}",
    f"keys_per_batch={k['batched_keys'] / k['batches'] if k.get('batches') else 0:.1f}",
    f"queued_us_mean={k['queued_us_total'] / k['queued'] if k.get('queued') else 0:.0f}",
    "check=" + ("ok" if not bad else "FAILED:" + ";".join(bad).replace(" ", "_")),
]))
PY
)
    echo "$tag $line" | tee -a "$work/$tag.runs"
    [[ $line == *check=ok* ]] || { echo "a run failed its checks"; exit 1; }
}

# med TAG KEY: the median of KEY over TAG's runs (the mean of the middle two
# for an even count).
med() {
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$work/$1.runs" |
        python3 -c "import statistics, sys; v = statistics.median(float(x) for x in sys.stdin); print(f'{v:.10g}')"
}
ratio() { python3 -c "print(round($1 / $2, 3))"; }

echo "== batching benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(loadavg)"
echo "   server CPU 0, client CPU 1; unique keys, 100-byte values, one client thread"
result="RESULT"

if want throughput; then
    echo "== 1000 in flight: batching off / on (--batch), ${rounds} alternating rounds of ${secs} s"
    for r in $(seq "$rounds"); do
        # Alternate which mode goes first, so neither always follows the other.
        if [ $((r % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
        for mode in $order; do
            if [ $mode = on ]; then
                run_lg t_on --concurrency 1000 --duration "$secs" --batch
            else
                run_lg t_off --concurrency 1000 --duration "$secs"
            fi
        done
        echo "   (load average $(loadavg))"
    done
    off_ops=$(med t_off ops_per_s); on_ops=$(med t_on ops_per_s)
    off_cpu=$(med t_off cpu_us_per_op); on_cpu=$(med t_on cpu_us_per_op)
    off_rss=$(med t_off rss_mb); on_rss=$(med t_on rss_mb)
    echo "medians: off ${off_ops} ops/s, ${off_cpu} us CPU/op, ${off_rss} MB, $(med t_off rpcs_per_op) RPCs/op"
    echo "         on  ${on_ops} ops/s, ${on_cpu} us CPU/op, ${on_rss} MB, $(med t_on rpcs_per_op) RPCs/op, $(med t_on keys_per_batch) keys/batch"
    result+=" ops_ratio=$(ratio "$on_ops" "$off_ops") cpu_ratio=$(ratio "$on_cpu" "$off_cpu")"
    result+=" on_cpu_us=$on_cpu off_cpu_us=$off_cpu on_rss_mb=$on_rss off_rss_mb=$off_rss"
fi

if want latency; then
    for n in 1 10; do
        echo "== ${n} in flight: batching off / on, ${rounds} alternating rounds of ${lat_secs} s"
        for r in $(seq "$rounds"); do
            if [ $((r % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
            for mode in $order; do
                if [ $mode = on ]; then
                    run_lg "l${n}_on" --concurrency $n --duration "$lat_secs" --batch
                else
                    run_lg "l${n}_off" --concurrency $n --duration "$lat_secs"
                fi
            done
        done
        for q in p50_us p99_us; do
            off=$(med "l${n}_off" $q); on=$(med "l${n}_on" $q)
            echo "medians ${q}: off $off, on $on (ratio $(ratio "$on" "$off"))"
            result+=" lat${n}_${q%_us}_ratio=$(ratio "$on" "$off")"
        done
        echo "   (load average $(loadavg))"
    done
fi

if want instructions; then
    command -v valgrind >/dev/null || { echo "valgrind is missing"; exit 1; }
    ishort=${INSTR_SHORT:-2}; ilong=${INSTR_LONG:-6}
    # cg_lg ARGS...: "instructions requests" of one load-gen run under callgrind.
    cg_lg() {
        wrap="taskset -c 0" start_server --cache load-gen --max-memory 1073741824
        taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$lg" \
            --endpoint "$ep" --insecure --rps 0 --timeout-ms 30000 --quiet --json "$work/cg.json" "$@" \
            > /dev/null 2>&1 || { stop_server; echo "load-gen under callgrind failed: $*"; exit 1; }
        stop_server
        echo "$(cg_total "$work/cg.out") $(json "$work/cg.json" "r['requests']")"
    }
    echo "== callgrind: load-gen instructions per operation, ${ilong} s minus ${ishort} s runs"
    for n in 1 10; do
        for mode in off on; do
            extra=(); [ $mode = on ] && extra=(--batch)
            read -r is rs <<<"$(cg_lg --concurrency $n --duration "$ishort" "${extra[@]}")"
            read -r il rl <<<"$(cg_lg --concurrency $n --duration "$ilong" "${extra[@]}")"
            per=$(( (il - is) / (rl - rs) ))
            echo "${n} in flight, batching ${mode}: ${per} instructions per operation ($rs and $rl operations)"
            eval "instr_${mode}=$per"
        done
        result+=" instr${n}_off=$instr_off instr${n}_on=$instr_on"
    done
fi

if want sweep; then
    settings="off"
    for n in $sweep_n; do for m in $sweep_m; do settings+=" $n:0:$m"; done; done
    settings+=" ${SWEEP_EXTRA-16:50:64 16:500:64}"
    count=$(wc -w <<<"$settings")
    echo "== sweep at 1000 in flight: N in {$sweep_n} x M in {$sweep_m} (+ off), ${sweep_rounds} rounds of ${sweep_secs} s each"
    for r in $(seq "$sweep_rounds"); do
        # Rotate the order each round, so drift does not favour one setting.
        rot=$(( (r - 1) * count / sweep_rounds ))
        order=$(tr ' ' '\n' <<<"$settings" | awk -v k=$rot -v c=$count '{a[NR]=$0} END {for (i=0;i<c;i++) print a[(i+k)%c+1]}')
        for s in $order; do
            tag="s_${s//:/_}"
            if [ "$s" = off ]; then
                run_lg "$tag" --concurrency 1000 --duration "$sweep_secs"
            else
                run_lg "$tag" --concurrency 1000 --duration "$sweep_secs" --batch "$s"
            fi
        done
        echo "   (load average $(loadavg))"
    done
    printf '%-12s %10s %12s %10s %14s %8s\n' setting "ops/s" "CPU us/op" "RPCs/op" "keys/batch" "RSS MB"
    for s in $settings; do
        tag="s_${s//:/_}"
        printf '%-12s %10s %12s %10s %14s %8s\n' "$s" "$(med "$tag" ops_per_s)" "$(med "$tag" cpu_us_per_op)" \
            "$(med "$tag" rpcs_per_op)" "$(med "$tag" keys_per_batch)" "$(med "$tag" rss_mb)"
    done
fi

if want moderate; then
    moderate_n=${MODERATE_N:-1 4 16}
    for n in 10 100; do
        settings="off"
        for b in $moderate_n; do settings+=" $b:0:64"; done
        count=$(wc -w <<<"$settings")
        echo "== ${n} in flight: N in {$moderate_n} with M 64 (+ off), ${sweep_rounds} rounds of ${sweep_secs} s each"
        for r in $(seq "$sweep_rounds"); do
            rot=$(( (r - 1) * count / sweep_rounds ))
            order=$(tr ' ' '\n' <<<"$settings" | awk -v k=$rot -v c=$count '{a[NR]=$0} END {for (i=0;i<c;i++) print a[(i+k)%c+1]}')
            for s in $order; do
                tag="m${n}_${s//:/_}"
                if [ "$s" = off ]; then
                    run_lg "$tag" --concurrency $n --duration "$sweep_secs"
                else
                    run_lg "$tag" --concurrency $n --duration "$sweep_secs" --batch "$s"
                fi
            done
        done
        printf '%-12s %10s %12s %10s %14s %8s %8s\n' setting "ops/s" "CPU us/op" "RPCs/op" "keys/batch" "p50 us" "p99 us"
        for s in $settings; do
            tag="m${n}_${s//:/_}"
            printf '%-12s %10s %12s %10s %14s %8s %8s\n' "$s" "$(med "$tag" ops_per_s)" \
                "$(med "$tag" cpu_us_per_op)" "$(med "$tag" rpcs_per_op)" "$(med "$tag" keys_per_batch)" \
                "$(med "$tag" p50_us)" "$(med "$tag" p99_us)"
        done
        echo "   (load average $(loadavg))"
    done
fi

if want rtt; then
    rtt="$build/bench/batching_rtt"
    [ -x "$rtt" ] || { echo "build first: $rtt is missing"; exit 1; }
    delay=${RTT_DELAY_MS:-2}
    for rate in ${RTT_RATES:-2000 8000 30000}; do
        settings="off"
        for b in ${RTT_N:-1 4 16}; do settings+=" $b:0:64"; done
        count=$(wc -w <<<"$settings")
        echo "== server delay ${delay} ms, open loop at ${rate}/s: N in {${RTT_N:-1 4 16}} with M 64 (+ off), ${sweep_rounds} rounds of ${sweep_secs} s each"
        for r in $(seq "$sweep_rounds"); do
            rot=$(( (r - 1) * count / sweep_rounds ))
            order=$(tr ' ' '\n' <<<"$settings" | awk -v k=$rot -v c=$count '{a[NR]=$0} END {for (i=0;i<c;i++) print a[(i+k)%c+1]}')
            for s in $order; do
                tag="r${rate}_${s//:/_}"
                args=(); [ "$s" = off ] || args=(--batch "$s")
                wrap="taskset -c 0" start_server --cache load-gen --max-memory 1073741824
                line=$(taskset -c 1 "$rtt" --endpoint "$ep" --rate "$rate" --seconds "$sweep_secs" \
                    --delay-ms "$delay" "${args[@]}") || { stop_server; echo "batching_rtt failed: $line"; exit 1; }
                stop_server
                echo "$tag ${line#RESULT }" | tee -a "$work/$tag.runs"
            done
        done
        printf '%-12s %10s %12s %14s %8s %8s\n' setting "ops/s" "CPU us/op" "keys/batch" "p50 us" "p99 us"
        for s in $settings; do
            tag="r${rate}_${s//:/_}"
            printf '%-12s %10s %12s %14s %8s %8s\n' "$s" "$(med "$tag" ops_per_s)" \
                "$(med "$tag" cpu_us_per_op)" "$(med "$tag" keys_per_batch)" \
                "$(med "$tag" p50_us)" "$(med "$tag" p99_us)"
        done
        echo "   (load average $(loadavg))"
    done
fi

if want node && [ "${NODE:-0}" = 1 ]; then
    nsecs=${NODE_SECONDS:-10}
    sdk="$here/../tests/interop/node_modules/@gomomento/sdk"
    command -v node >/dev/null && [ -d "$sdk" ] || { echo "node or $sdk is missing"; exit 1; }
    echo "== the official Node.js SDK (seed's load pattern) vs load-gen, ${nsecs} s each, 1000 in flight"
    for r in $(seq "$rounds"); do
        wrap="taskset -c 0" start_server --cache load-gen --max-memory 1073741824
        taskset -c 1 node "$here/node_loadgen.js" "$ep" 1000 "$nsecs" > "$work/node.out" 2>&1 ||
            { cat "$work/node.out"; stop_server; echo "node load-gen failed"; exit 1; }
        stop_server
        line=$(grep '^RESULT ' "$work/node.out" | sed 's/^RESULT //')
        echo "node $line" | tee -a "$work/node.runs"
        run_lg n_off --concurrency 1000 --duration "$nsecs"
        run_lg n_on --concurrency 1000 --duration "$nsecs" --batch
    done
    node_cpu=$(med node cpu_us_per_op); off=$(med n_off cpu_us_per_op); on=$(med n_on cpu_us_per_op)
    echo "medians, client CPU us/op: Node SDK $node_cpu, load-gen $off, load-gen --batch $on"
    echo "   Node SDK ops/s $(med node ops_per_s); load average $(loadavg)"
    result+=" node_cpu_us=$node_cpu node_vs_loadgen=$(ratio "$node_cpu" "$off") node_vs_batched=$(ratio "$node_cpu" "$on")"
fi

echo "== load average after: $(loadavg)"
echo "$result target_cpu_ratio=0.25 target_ops_ratio=3 target_latency_ratio=1.05 target_rss_mb=20"
