#!/usr/bin/env bash
# The near cache against issue 50's targets, in one run on one momento-local
# (pinned to CPU 0, the clients to CPU 1), rounds alternating which side
# goes first, medians:
#   hot:      10 hot keys, 1000 in flight, gets only of keys that exist
#             (bench/near_bench: each get's next is submitted from its
#             callback), the coalescer alone vs the coalescer + a near
#             cache: ops/s (target >= 10x). Beside it request-coalescing's
#             phases 2 and 3 (load-gen's workers, --get-ratio 0.999: one
#             set per 999 gets, each set dropping its key's entry).
#   hotrtt:   the same pair with every Get held RTT_MS by the server (its
#             delay fault): a server a round trip away, as Momento is.
#   cpu:      client CPU per near-cache hit, long run minus short run at
#             1000 in flight (start-up and the prefill cancel out), with a
#             bound longer than the run, so that every get is a hit and
#             no refill's RPC is counted (target <= 1 us).
#   latency:  p50 of a hit at 1 in flight, the next get submitted from the
#             callback (the completion thread) and from the program's own
#             thread with momento_get_sync() (target <= 5 us).
#   rss:      FILL_OPS sets of distinct keys (100-byte values) through a
#             client with a NEAR_BYTES near cache, which fills and evicts:
#             peak RSS minus that of the same run without it (target
#             <= NEAR_BYTES + 10 %).
#   unique:   gets of keys never written (nothing to reuse: each MISS is
#             kept and never asked again), 100 in flight, with and without
#             a near cache: ops/s and client CPU per get (target within 3 %).
# Loopback only; every run is bounded by time or a count (and a timeout).
#   bench/near_cache.sh BUILD_DIR    ROUNDS=3 SECONDS_PER_RUN=3 ONLY="hot hotrtt cpu latency rss unique" RTT_MS="1 5"
# Environment: NEAR_BYTES (16 MiB; rss: RSS_NEAR_BYTES, 64 MiB), STALENESS_MS
# (100), CPU_SHORT / CPU_LONG (300000 / 3000000 gets), LAT_SECONDS (2),
# FILL_OPS (400000), RSS_ROUNDS (1), UNIQUE_SECONDS (3).
set -euo pipefail
build=${1:?usage: bench/near_cache.sh BUILD_DIR}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-3}
only=${ONLY:-hot hotrtt cpu latency rss unique}
near_bytes=${NEAR_BYTES:-16777216}
rss_near_bytes=${RSS_NEAR_BYTES:-67108864}
stale=${STALENESS_MS:-100}
cpu_short=${CPU_SHORT:-300000}
cpu_long=${CPU_LONG:-3000000}
lat_secs=${LAT_SECONDS:-2}
fill_ops=${FILL_OPS:-400000}
# A run of FILL_OPS sets takes 20-30 s over gRPC on the shared machine, and
# a full cache's peak RSS moves far less than the 10 % judged: one round.
rss_rounds=${RSS_ROUNDS:-1}
usecs=${UNIQUE_SECONDS:-3}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
nb="$build/bench/near_bench"
rc_app="$build/apps/request-coalescing"
pin_s="" pin_c=""
if command -v taskset > /dev/null; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; fi
has() { [[ " $only " == *" $1 "* ]]; }

nbrun() { # ARGS... -> near_bench's RESULT line; a failed run stops the script
    local out
    # shellcheck disable=SC2086 # $pin_c is a command prefix
    out=$(timeout 300 $pin_c "$nb" --endpoint "$ep" "$@") ||
        { echo "near_bench $*: failed"; echo "$out"; exit 1; }
    [ "$(field errors "$out")" = 0 ] || { echo "near_bench $*: errors"; echo "$out"; exit 1; }
    echo "$out"
}
near=(--near-cache-bytes "$near_bytes" --near-cache-staleness-ms "$stale")
ratio() { python3 -c "print('%.3f' % ($1 / $2))"; }
med() { tr ' ' '\n' <<< "$1" | grep . | median; }

wrap=$pin_s start_server
summary=()

if has hot; then
    echo "== hot: 10 keys, 1000 in flight, gets only, ${secs} s; coalescer alone vs + near cache"
    co="" nc="" rc2="" rc3="" hits=""
    for r in $(seq "$rounds"); do
        order="off on"; [ $((r % 2)) = 0 ] && order="on off"
        for side in $order; do
            if [ "$side" = off ]; then
                l=$(nbrun --mode coalesce --workers 1000 --keys 10 --op get --seconds "$secs")
                co+="$(field ops_per_s "$l") "
            else
                l=$(nbrun --mode coalesce "${near[@]}" --workers 1000 --keys 10 --op get --seconds "$secs")
                nc+="$(field ops_per_s "$l") "
                hits+="$(python3 -c "print('%.4f' % ($(field near_hits "$l") / $(field ops "$l")))") "
            fi
            echo "round $r: coalesce near=$side: ${l#RESULT near_bench }"
        done
        # request-coalescing runs its three phases in this order; phases 2
        # (coalescing) and 3 (+ a near cache) are the pair compared.
        # shellcheck disable=SC2086
        timeout $((secs * 3 * 4 + 60)) $pin_c "$rc_app" --endpoint "$ep" --insecure --concurrency 1000 \
            --keys 10 --rps 0 --duration "$secs" --get-ratio 0.999 --quiet --json "$work/rc.json" \
            --near-cache-bytes "$near_bytes" --near-cache-staleness-ms "$stale" > /dev/null
        json "$work/rc.json" "'ok' if all(r[p]['wrong_results'] == 0 and r[p]['success'] == r[p]['requests'] for p in ('after', 'after_near_cache')) else 'bad'" |
            grep -q ok || { echo "request-coalescing: a failed check"; exit 1; }
        a=$(json "$work/rc.json" "'%.0f' % r['after']['ops_per_sec']")
        n=$(json "$work/rc.json" "'%.0f' % r['after_near_cache']['ops_per_sec']")
        answered=$(json "$work/rc.json" "'%.3f' % ((r['after_near_cache']['near_cache']['hits'] + r['after_near_cache']['near_cache']['miss_hits']) / max(1, r['after_near_cache']['near_cache']['hits'] + r['after_near_cache']['near_cache']['miss_hits'] + r['after_near_cache']['near_cache']['misses']))")
        rc2+="$a " rc3+="$n "
        echo "round $r: request-coalescing --get-ratio 0.999: coalescing $a ops/s, + near cache $n ops/s ($answered of its gets answered from memory)"
    done
    co_m=$(med "$co") nc_m=$(med "$nc") rc2_m=$(med "$rc2") rc3_m=$(med "$rc3")
    echo "RESULT near_cache hot coalescer_ops_per_s=$co_m near_ops_per_s=$nc_m ratio=$(ratio "$nc_m" "$co_m") near_hit_share=$(med "$hits") rc_coalescing_ops_per_s=$rc2_m rc_near_ops_per_s=$rc3_m rc_ratio=$(ratio "$rc3_m" "$rc2_m")"
    summary+=("hot keys, ops/s near ÷ coalescer alone: $(ratio "$nc_m" "$co_m") (near_bench, gets only), $(ratio "$rc3_m" "$rc2_m") (request-coalescing, --get-ratio 0.999); target >= 10")
fi

# The same pair with the server a round trip away: momento-local holds
# every Get RTT_MS (its delay fault, client-wide). On loopback the
# coalescer alone already answers ~100 gets per RPC in tens of
# microseconds; against a real network's round trip, what the near cache
# saves is that round trip.
if has hotrtt; then
    for d in ${RTT_MS:-1 5}; do
        echo "== hot, Gets held ${d} ms by the server: coalescer alone vs + near cache"
        co="" nc=""
        for r in $(seq "$rounds"); do
            order="off on"; [ $((r % 2)) = 0 ] && order="on off"
            for side in $order; do
                if [ "$side" = off ]; then
                    l=$(nbrun --mode coalesce --workers 1000 --keys 10 --op get --seconds "$secs" --delay-ms "$d")
                    co+="$(field ops_per_s "$l") "
                else
                    l=$(nbrun --mode coalesce "${near[@]}" --workers 1000 --keys 10 --op get --seconds "$secs" --delay-ms "$d")
                    nc+="$(field ops_per_s "$l") "
                fi
                echo "round $r: coalesce near=$side delay ${d} ms: ${l#RESULT near_bench }"
            done
        done
        co_m=$(med "$co") nc_m=$(med "$nc")
        echo "RESULT near_cache hotrtt delay_ms=$d coalescer_ops_per_s=$co_m near_ops_per_s=$nc_m ratio=$(ratio "$nc_m" "$co_m")"
        summary+=("hot keys, Gets held ${d} ms, ops/s near ÷ coalescer alone: $(ratio "$nc_m" "$co_m"); target >= 10")
    done
fi

if has cpu; then
    echo "== cpu: client CPU per near-cache hit, ${cpu_long} minus ${cpu_short} gets, 1000 in flight"
    per=""
    for r in $(seq "$rounds"); do
        s=$(nbrun --mode plain --near-cache-bytes "$near_bytes" --near-cache-staleness-ms 600000 \
            --workers 1000 --keys 10 --op get --ops "$cpu_short" --seconds 120)
        l=$(nbrun --mode plain --near-cache-bytes "$near_bytes" --near-cache-staleness-ms 600000 \
            --workers 1000 --keys 10 --op get --ops "$cpu_long" --seconds 120)
        p=$(python3 -c "print('%.4f' % (($(field client_cpu_s "$l") - $(field client_cpu_s "$s")) * 1e6 / ($(field near_hits "$l") - $(field near_hits "$s"))))")
        per+="$p "
        echo "round $r: short ${s#RESULT near_bench }"
        echo "round $r: long ${l#RESULT near_bench }"
        echo "round $r: $p us CPU per hit"
    done
    echo "RESULT near_cache cpu_us_per_hit=$(med "$per") rounds=[${per% }]"
    summary+=("client CPU per near-cache hit: $(med "$per") us; target <= 1")
fi

if has latency; then
    echo "== latency: one get at a time, 1 hot key, ${lat_secs} s"
    cb="" sy=""
    for r in $(seq "$rounds"); do
        order="cb sync"; [ $((r % 2)) = 0 ] && order="sync cb"
        for side in $order; do
            extra=(); [ "$side" = sync ] && extra=(--sync)
            l=$(nbrun --mode plain "${near[@]}" --workers 1 --keys 1 --op get --latency --seconds "$lat_secs" "${extra[@]}")
            if [ "$side" = cb ]; then cb+="$(field p50_ns "$l") "; else sy+="$(field p50_ns "$l") "; fi
            echo "round $r: $side: ${l#RESULT near_bench }"
        done
    done
    cb_m=$(med "$cb") sy_m=$(med "$sy")
    echo "RESULT near_cache latency p50_ns_from_callback=$cb_m p50_ns_sync=$sy_m"
    summary+=("p50 of a hit at 1 in flight: $cb_m ns (next get from the callback), $sy_m ns (momento_get_sync from the program's thread); target <= 5000")
fi

if has rss; then
    echo "== rss: $fill_ops sets of distinct keys, 100 in flight, near cache of $rss_near_bytes bytes vs none"
    off="" on=""
    for r in $(seq "$rss_rounds"); do
        order="off on"; [ $((r % 2)) = 0 ] && order="on off"
        for side in $order; do
            extra=(); [ "$side" = on ] && extra=(--near-cache-bytes "$rss_near_bytes" --near-cache-staleness-ms 600000)
            l=$(nbrun --mode plain --workers 100 --keys 0 --op set --ops "$fill_ops" --seconds 120 "${extra[@]}")
            if [ "$side" = on ]; then
                [ "$(field near_evictions "$l")" -gt 0 ] || { echo "the near cache did not fill: $l"; exit 1; }
                on+="$(field max_rss_kb "$l") "
            else
                off+="$(field max_rss_kb "$l") "
            fi
            echo "round $r: near=$side: ${l#RESULT near_bench }"
        done
    done
    off_m=$(med "$off") on_m=$(med "$on")
    grow=$(python3 -c "print('%.3f' % (($on_m - $off_m) * 1024 / $rss_near_bytes))")
    echo "RESULT near_cache rss max_rss_kb_off=$off_m max_rss_kb_on=$on_m growth_over_max_bytes=$grow"
    summary+=("RSS growth with a full near cache: $grow of max_bytes ($off_m -> $on_m kB); target <= 1.10")
fi

if has unique; then
    echo "== unique: gets of keys never written, 100 in flight, ${usecs} s, near cache vs none"
    uo="" un="" co="" cn=""
    for r in $(seq "$rounds"); do
        order="off on"; [ $((r % 2)) = 0 ] && order="on off"
        for side in $order; do
            extra=(); [ "$side" = on ] && extra=("${near[@]}")
            l=$(nbrun --mode plain --workers 100 --keys 0 --op get --seconds "$usecs" "${extra[@]}")
            if [ "$side" = on ]; then un+="$(field ops_per_s "$l") "; cn+="$(field cpu_us_per_op "$l") ";
            else uo+="$(field ops_per_s "$l") "; co+="$(field cpu_us_per_op "$l") "; fi
            echo "round $r: near=$side: ${l#RESULT near_bench }"
        done
    done
    echo "RESULT near_cache unique ops_per_s_off=$(med "$uo") ops_per_s_on=$(med "$un") ops_ratio=$(ratio "$(med "$un")" "$(med "$uo")") cpu_us_per_op_off=$(med "$co") cpu_us_per_op_on=$(med "$cn") cpu_ratio=$(ratio "$(med "$cn")" "$(med "$co")")"
    summary+=("unique keys, near ÷ none: ops/s $(ratio "$(med "$un")" "$(med "$uo")"), CPU per get $(ratio "$(med "$cn")" "$(med "$co")"); target within 3 % (ops >= 0.97, CPU <= 1.03)")
fi
stop_server

echo "== summary (issue 50's targets)"
for s in "${summary[@]}"; do echo "  $s"; done
