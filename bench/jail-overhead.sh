#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What the jail adds to a session's start: first the jail step alone (bench/jail_step.c), then
# whole sessions, `bulkhead run -- true` with the jail (the default) and with --no-jail,
# alternating in the same run. Prints medians and differences.
# Usage: RUNS=20 bench/jail-overhead.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-20}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib.sh"

# First the jail step alone: precise where a whole session's start is noisy.
if [ -x "$BUILD/bench/jail-step" ]; then
	"$BUILD/bench/jail-step" "$BUILD/bin" "$BUILD/lib/bulkhead" 200
else
	echo "(jail step alone: build it with 'make $BUILD/bench/jail-step')"
fi
echo "session start to exit with and without the jail, $RUNS runs each; $(nproc) cores"
for i in $(seq "$RUNS"); do
	t0=$(now_us)
	"$bin" run -- true
	t1=$(now_us)
	"$bin" run --no-jail -- true 2> /dev/null
	t2=$(now_us)
	echo $((t1 - t0)) >> "$tmp/jail"
	echo $((t2 - t1)) >> "$tmp/nojail"
done
j=$(median "$tmp/jail")
n=$(median "$tmp/nojail")
awk -v j="$j" -v n="$n" 'BEGIN {
	printf "%-32s median %9.1f ms\n", "bulkhead run -- true (jailed)", j / 1000
	printf "%-32s median %9.1f ms\n", "bulkhead run --no-jail -- true", n / 1000
	printf "jail adds %.2f ms (median difference)\n", (j - n) / 1000 }'
