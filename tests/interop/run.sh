#!/usr/bin/env bash
# The interop suite: Momento's official Node.js SDK against momento-local.
# Skips (exit 77) only where node is absent. Installs the pinned SDK with
# `npm ci` when it is not installed yet.
set -euo pipefail
server_bin=$1
crosscheck_bin=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=server.sh
source "$here/server.sh" @gomomento/sdk
# Topics across both clients: a subscriber runs in the background until it
# prints "ready" (at most 10 s, else it is stopped), then the publisher runs;
# the subscriber then ends by its own bounded waits. Its lines follow the
# publisher's.
topics_cross() {  # SUBSCRIBER-FUNCTION PUBLISHER-FUNCTION
    local log sub rc=0
    log=$(mktemp)
    $1 > "$log" 2>&1 &
    sub=$!
    for _ in $(seq 100); do
        grep -qx ready "$log" && break
        kill -0 $sub 2>/dev/null || break
        sleep 0.1
    done
    if grep -qx ready "$log"; then
        $2 || rc=1
    else
        echo "not ok - the subscriber was not ready within 10 s"
        kill $sub 2>/dev/null || true
        rc=1
    fi
    wait $sub || rc=1
    grep -vx ready "$log" || true
    rm -f "$log"
    return $rc
}
c_subscribes() { "$crosscheck_bin" subscribe "$endpoint"; }
c_publishes() { "$crosscheck_bin" publish "$endpoint"; }
node_subscribes() { node "$here/cross.js" subscribe "$host" "$port"; }
node_publishes() { node "$here/cross.js" publish "$host" "$port"; }
status=0
node "$here/interop.js" "$host" "$port" || status=1
echo "# topics: the Node SDK's TopicClient"
node "$here/topics.js" "$host" "$port" || status=1
echo "# disposable tokens: the Node SDK's AuthClient, then a CacheClient with each token"
node "$here/tokens.js" "$host" "$port" || status=1
echo "# API keys: the Node SDK's AuthClient generates and refreshes, a CacheClient uses each key"
node "$here/api_keys.js" "$host" "$port" || status=1
# The same server state through both clients: each reads what the other wrote.
both_ways cross-check "$crosscheck_bin" "$here/cross.js" || status=1
echo "# cross-check topics: the Node SDK publishes, a libmomento subscriber checks"
topics_cross c_subscribes node_publishes || status=1
echo "# cross-check topics: libmomento publishes, a Node SDK subscriber checks"
topics_cross node_subscribes c_publishes || status=1
exit $status
