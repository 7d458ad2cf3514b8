#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/broker-ws.sh: WebSocket echo round trips (bench/ws_rtt.py, Debian's python3-websockets
# at both ends), in one run, interleaved: the same TLS echo server reached directly, through
# the broker on a path that gets no credential, and through the broker with a token injected
# in the handshake and echoed in every message (so every message is scrubbed: docs/
# THREAT-MODEL.md "WebSockets"). Prints p50 and p99 of each and the credential's ratio to the
# no-credential path (the goal: within 1.2x). Measured, never asserted.
# Usage: ROUNDS=5 N=200 bench/broker-ws.sh
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
N=${N:-200}
BROKER=$BUILD/bin/bulkhead-broker
TOOL=$(dirname "$0")/ws_rtt.py
fail() {
	echo "broker-ws: $*" >&2
	exit 1
}
[ -x "$BROKER" ] || fail "$BROKER is not built (make all)"
PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import websockets' 2> /dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || fail "python3-websockets is missing (apt-get install python3-websockets)"
for v in "$ROUNDS" "$N"; do
	case $v in '' | *[!0-9]* | 0) fail "ROUNDS and N are positive numbers" ;; esac
done

bench_tmp
bench_pki
"$PY" "$TOOL" serve --cert "$tmp/leaf.pem" --key "$tmp/leaf.key" > "$tmp/up.port" \
	2> "$tmp/up.err" &
pids="$pids $!"
wait_for -s "$tmp/up.port" || fail "the echo server did not start: $(cat "$tmp/up.err")"
PORT=$(cat "$tmp/up.port")
bench_broker_two_paths "$PORT"

r=0
while [ $r -lt "$ROUNDS" ]; do
	"$PY" "$TOOL" client --url "wss://localhost:$PORT/open/e" --ca "$tmp/ca.pem" --n "$N" \
		>> "$tmp/direct" || fail "the direct WebSocket failed"
	"$PY" "$TOOL" client --url "wss://localhost:$PORT/open/e" --broker "$tmp/b.sock" \
		--n "$N" >> "$tmp/plain" || fail "the WebSocket through the broker failed"
	"$PY" "$TOOL" client --url "wss://localhost:$PORT/cred/e" --broker "$tmp/b.sock" \
		--n "$N" >> "$tmp/cred" || fail "the credentialed WebSocket failed"
	r=$((r + 1))
done
for f in direct plain cred; do
	[ "$(wc -l < "$tmp/$f")" -eq $((ROUNDS * N)) ] ||
		fail "$f: $(wc -l < "$tmp/$f") round trips of $((ROUNDS * N))"
done
echo "WebSocket echo round trip (64 bytes out, 100 back): $ROUNDS rounds x $N"
bench_three_rows 3
awk -v c="$p50_cred" -v p="$p50_plain" -v d="$p50_direct" 'BEGIN {
	printf "  credential at p50: %.2fx the no-credential path (goal: within 1.2x), %.2fx direct\n",
		c / p, c / d }'
