#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Two builds of bulkhead side by side in one run, interleaved so that the host's load falls on
# both alike: session start to exit (`bulkhead run -- true`) and the exec round trip
# (`bulkhead exec ID -- true` in a running session). For "does this change cost time":
# build the commit before it in another checkout and name both builds.
# Prints the medians of each and the ratio B/A.
# Usage: RUNS=20 EXECS=200 bench/builds-ab.sh BUILD_A BUILD_B
set -eu
a=${1:?usage: builds-ab.sh BUILD_A BUILD_B}
b=${2:?usage: builds-ab.sh BUILD_A BUILD_B}
RUNS=${RUNS:-20}
EXECS=${EXECS:-200}
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
ida= idb=
trap '[ -z "$ida" ] || "$a/bin/bulkhead" stop "$ida" > /dev/null 2>&1
      [ -z "$idb" ] || "$b/bin/bulkhead" stop "$idb" > /dev/null 2>&1; rm -rf "$tmp"' EXIT
for d in "$a" "$b"; do
	[ -x "$d/bin/bulkhead" ] || { echo "builds-ab: $d/bin/bulkhead missing" >&2; exit 2; }
done

for i in $(seq "$RUNS"); do
	for side in a b; do
		eval "d=\$$side"
		t0=$(now_us)
		"$d/bin/bulkhead" run -- true
		echo $(($(now_us) - t0)) >> "$tmp/run.$side"
	done
done
ida=$("$a/bin/bulkhead" start)
idb=$("$b/bin/bulkhead" start)
for i in $(seq "$EXECS"); do
	t0=$(now_us)
	"$a/bin/bulkhead" exec "$ida" -- true
	t1=$(now_us)
	"$b/bin/bulkhead" exec "$idb" -- true
	t2=$(now_us)
	echo $((t1 - t0)) >> "$tmp/exec.a"
	echo $((t2 - t1)) >> "$tmp/exec.b"
done

engine=$("$b/bin/bulkhead" run -v -- true 2>&1 > /dev/null | sed -n 's/^bulkhead: engine: //p')
echo "A = $a, B = $b; engine: $engine; $(nproc) cores"
for what in run exec; do
	ma=$(median "$tmp/$what.a")
	mb=$(median "$tmp/$what.b")
	n=$RUNS; [ $what = exec ] && n=$EXECS
	awk -v w="$what" -v n="$n" -v a="$ma" -v b="$mb" 'BEGIN {
		label = (w == "run") ? "bulkhead run -- true" : "bulkhead exec ID -- true"
		printf "%-26s %4d runs each: A median %8.2f ms, B median %8.2f ms, B/A %.3f\n",
		       label, n, a / 1000, b / 1000, b / a }'
done
