#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/serve-scope-latency.sh: from a create request to the first byte of a credentialed
# HTTPS answer in the guest (a token from the vault injected by its broker, an upstream on this
# host): pooled with a scope, cold with a scope, and as references in the same run a pooled
# create without a scope (to the first byte of `echo`) and the same request in a session already
# up; alone and with 10 creates at once (bench/serve_scope_latency.py).
# Usage: RUNS=10 BURSTS=2 sh bench/serve-scope-latency.sh
set -eu
. "$(dirname "$0")/lib.sh"
fail() { echo "serve-scope-latency: $*" >&2; exit 1; }
BUILD=${BUILD:-build}
RUNS=${RUNS:-10}
BURSTS=${BURSTS:-2}
bin=$(cd "$BUILD/bin" && pwd)/bulkhead
ECHO=$BUILD/tests/https-echo
[ -x "$ECHO" ] || fail "$ECHO missing (make test-programs)"
bench_tmp
bench_upstream "$ECHO"
export BULKHEAD_RUNDIR="$tmp/run" XDG_STATE_HOME="$tmp/xdg"
"$bin" vault init --vault "$tmp/vault" > /dev/null 2>&1
printf 'tok-bench-0123456789abcdef' | "$bin" vault put api --vault "$tmp/vault" > /dev/null 2>&1
"$bin" serve --socket "$tmp/s.sock" --state "$tmp/state" --pool 10 2> "$tmp/log" &
pids="$pids $!"
i=0
while [ ! -S "$tmp/s.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
python3 "$(dirname "$0")/serve_scope_latency.py" "$tmp/s.sock" "$PORT" "$tmp/vault" \
	"$tmp/ca.pem" "$RUNS" "$BURSTS"
