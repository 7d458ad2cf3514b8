#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/broker-stream.sh: how late each server-sent event reaches the guest through the
# broker (bench/stream_delay.py: the upstream stamps each event as it writes it, the client
# subtracts on reading), in one run, interleaved: the same HTTPS stream reached directly,
# through the broker on a path that gets no credential, and through the broker with a token
# injected and echoed in every event (so every event is scrubbed and released at its end:
# docs/THREAT-MODEL.md "Streamed responses"). Prints p50 and p99 of each and the credential's
# cost against the no-credential path (the goal: p50 within 5 ms). Measured, never asserted.
# Usage: ROUNDS=5 EVENTS=50 GAP_MS=20 bench/broker-stream.sh
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
EVENTS=${EVENTS:-50}
GAP_MS=${GAP_MS:-20}
BROKER=$BUILD/bin/bulkhead-broker
TOOL=$(dirname "$0")/stream_delay.py
fail() {
	echo "broker-stream: $*" >&2
	exit 1
}
[ -x "$BROKER" ] || fail "$BROKER is not built (make all)"
command -v python3 > /dev/null || fail "python3 is missing (apt-get install python3)"
for v in "$ROUNDS" "$EVENTS" "$GAP_MS"; do
	case $v in '' | *[!0-9]* | 0) fail "ROUNDS, EVENTS and GAP_MS are positive numbers" ;; esac
done

bench_tmp
bench_pki
python3 "$TOOL" serve --cert "$tmp/leaf.pem" --key "$tmp/leaf.key" > "$tmp/up.port" \
	2> "$tmp/up.err" &
pids="$pids $!"
wait_for -s "$tmp/up.port" || fail "the streaming upstream did not start: $(cat "$tmp/up.err")"
PORT=$(cat "$tmp/up.port")
bench_broker_two_paths "$PORT"

Q="n=$EVENTS&gap=$GAP_MS"
r=0
while [ $r -lt "$ROUNDS" ]; do
	python3 "$TOOL" client --url "https://localhost:$PORT/open/s?$Q" --ca "$tmp/ca.pem" \
		>> "$tmp/direct" || fail "the direct stream failed"
	python3 "$TOOL" client --url "https://localhost:$PORT/open/s?$Q" --broker "$tmp/b.sock" \
		>> "$tmp/plain" || fail "the stream through the broker failed"
	python3 "$TOOL" client --url "https://localhost:$PORT/cred/s?$Q" --broker "$tmp/b.sock" \
		>> "$tmp/cred" || fail "the credentialed stream failed"
	r=$((r + 1))
done
for f in direct plain cred; do
	[ "$(wc -l < "$tmp/$f")" -eq $((ROUNDS * EVENTS)) ] ||
		fail "$f: $(wc -l < "$tmp/$f") events of $((ROUNDS * EVENTS))"
done
echo "SSE event delay, upstream write to client read: $ROUNDS rounds x $EVENTS events, $GAP_MS ms apart"
bench_three_rows 2
awk -v c="$p50_cred" -v p="$p50_plain" -v d="$p50_direct" 'BEGIN {
	printf "  credential'"'"'s cost at p50: %.2f ms (goal: within 5 ms); ratio to no credential %.2fx, to direct %.2fx\n",
		(c - p) / 1000, c / p, c / d }'
