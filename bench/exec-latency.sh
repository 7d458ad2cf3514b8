#!/bin/sh
# Exec round trip: `bulkhead exec ID -- true` in a running session (vsock, the
# agent, a fork+exec in the guest), next to the host spawning `true` itself
# through a shell in the same run (what an exec costs without the VM boundary).
# Prints median and p99 of each and their ratio. Usage: RUNS=1000 bench/exec-latency.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-1000}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
id=$("$bin" start)
trap '"$bin" stop "$id" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

for i in $(seq "$RUNS"); do
	t0=$(date +%s%N)
	"$bin" exec "$id" -- true
	t1=$(date +%s%N)
	sh -c true
	t2=$(date +%s%N)
	echo $(((t1 - t0) / 1000)) >> "$tmp/exec"
	echo $(((t2 - t1) / 1000)) >> "$tmp/host"
done

stats() { sort -n "$1" | awk '{a[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; printf "%.2f %.2f", a[int((NR+1)/2)]/1000, a[i]/1000}'; }
engine=$("$bin" run -v -- true 2>&1 >/dev/null | sed -n 's/^bulkhead: engine: //p')
e=$(stats "$tmp/exec")
h=$(stats "$tmp/host")
echo "exec round trip, $RUNS runs; engine: $engine"
printf '%-44s median %8s ms   p99 %8s ms\n' "bulkhead exec ID -- true" ${e}
printf '%-44s median %8s ms   p99 %8s ms\n' "host: sh -c true (reference)" ${h}
echo "$e $h" | awk '{ printf "ratio exec/host: median %.1f, p99 %.1f\n", $1 / $3, $2 / $4 }'
