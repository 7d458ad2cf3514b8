#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Exec round trip: `bulkhead exec ID -- true` in a running session (vsock, the
# agent, a fork+exec in the guest), next to the host spawning `true` itself
# through a shell in the same run (what an exec costs without the VM boundary).
# Prints median and p99 of each and their ratio. Usage: RUNS=1000 bench/exec-latency.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-1000}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
id=$("$bin" start)
trap '"$bin" stop "$id" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

for i in $(seq "$RUNS"); do
	t0=$(now_us)
	"$bin" exec "$id" -- true
	t1=$(now_us)
	sh -c true
	t2=$(now_us)
	echo $((t1 - t0)) >> "$tmp/exec"
	echo $((t2 - t1)) >> "$tmp/host"
done

# stats FILE: the median and p99 of FILE's microseconds, in ms.
stats() { echo "$(median "$1") $(percentile 99 "$1")" | awk '{ printf "%.2f %.2f", $1 / 1000, $2 / 1000 }'; }
engine=$("$bin" run -v -- true 2>&1 >/dev/null | sed -n 's/^bulkhead: engine: //p')
e=$(stats "$tmp/exec")
h=$(stats "$tmp/host")
echo "exec round trip, $RUNS runs; engine: $engine"
printf '%-44s median %8s ms   p99 %8s ms\n' "bulkhead exec ID -- true" ${e}
printf '%-44s median %8s ms   p99 %8s ms\n' "host: sh -c true (reference)" ${h}
echo "$e $h" | awk '{ printf "ratio exec/host: median %.1f, p99 %.1f\n", $1 / $3, $2 / $4 }'
