#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/serve-latency.sh: the session API's create-to-first-byte, from the warm pool and cold,
# beside an exec in a running session and `bulkhead run` in the same run
# (bench/serve_latency.py). Usage: RUNS=15 sh bench/serve-latency.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-15}
bin=$(cd "$BUILD/bin" && pwd)/bulkhead
tmp=$(mktemp -d)
export BULKHEAD_RUNDIR="$tmp/run"
"$bin" serve --socket "$tmp/s.sock" --state "$tmp/state" --pool 1 2> "$tmp/log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
while [ ! -S "$tmp/s.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
python3 "$(dirname "$0")/serve_latency.py" "$tmp/s.sock" "$bin" "$RUNS"
