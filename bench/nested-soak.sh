#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (bench/nested.sh boots it): SESSIONS whole sessions in a row under bulkhead-vmm,
# each checked (its output and exit code) and each under a deadline of its own (timeout(1),
# 120 s): a hang shows as status 124 with the session's number, never as a stalled run.
# Prints the count of good sessions, failures by status, and the time per session.
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
B=$BUILD/bin/bulkhead
N=${SESSIONS:-100}
TMP=$(mktemp -d /tmp/nested-soak.XXXXXX)

good=0 bad=0
: > "$TMP/t"
i=1
while [ $i -le "$N" ]; do
	t0=$(now_us)
	out=$(timeout -s KILL 120 "$B" run --engine kvm -- sh -c "echo session $i; exit $((i % 7))" 2> "$TMP/err" < /dev/null)
	rc=$?
	echo $(($(now_us) - t0)) >> "$TMP/t"
	if [ "$rc" = $((i % 7)) ] && [ "$out" = "session $i" ]; then
		good=$((good + 1))
	else
		bad=$((bad + 1))
		echo "session $i: status $rc, output '$out', stderr: $(head -c 300 "$TMP/err")"
	fi
	i=$((i + 1))
done
awk -v n="$N" -v g="$good" -v b="$bad" -v p50="$(median "$TMP/t")" -v p90="$(percentile 90 "$TMP/t")" \
	-v max="$(sort -n "$TMP/t" | tail -n 1)" 'BEGIN {
	printf "%d sessions under bulkhead-vmm in a row: %d good, %d bad; per session p50 %.0f ms, p90 %.0f ms, max %.0f ms\n",
		n, g, b, p50 / 1000, p90 / 1000, max / 1000 }'
rm -rf "$TMP"
[ "$bad" -eq 0 ]
