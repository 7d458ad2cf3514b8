#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/broker-ws.sh: WebSocket echo round trips (bench/ws_rtt.py, Debian's python3-websockets
# at both ends), in one run, interleaved: the same TLS echo server reached directly, through
# the broker on a path that gets no credential, and through the broker with a token injected
# in the handshake and echoed in every message (so every message is scrubbed: docs/
# THREAT-MODEL.md "WebSockets"). Prints p50 and p99 of each and the credential's ratio to the
# no-credential path (the goal: within 1.2x). Measured, never asserted.
# Then what an open WebSocket costs the broker: HOLD of them opened and held (quiet, each waits
# without a thread: docs/THREAT-MODEL.md "Long-lived streams"), the broker's RSS and threads
# before and after (bench/broker-streams.sh does this for 2,000 streams across 100 sessions).
# Usage: ROUNDS=5 N=200 HOLD=48 bench/broker-ws.sh
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
N=${N:-200}
HOLD=${HOLD:-48}
BROKER=$BUILD/bin/bulkhead-broker
TOOL=$(dirname "$0")/ws_rtt.py
fail() {
	echo "broker-ws: $*" >&2
	exit 1
}
[ -x "$BROKER" ] || fail "$BROKER is not built (make all)"
debian_python websockets || fail "python3-websockets is missing (apt-get install python3-websockets)"
for v in "$ROUNDS" "$N" "$HOLD"; do
	case $v in '' | *[!0-9]* | 0) fail "ROUNDS, N and HOLD are positive numbers" ;; esac
done
[ "$HOLD" -le 60 ] || fail "HOLD: at most 60 (a session serves 64 connections at once)"

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

# The cost of open WebSockets: the broker's RSS (KiB) and threads, before and after.
bpid=$broker_pid
mem() { awk '/^VmRSS/ { r = $2 } /^Threads/ { t = $2 } END { print r, t }' "/proc/$bpid/status"; }
set -- $(mem)
rss0=$1 thr0=$2
mkfifo "$tmp/hold.in"
"$PY" "$TOOL" hold --url "wss://localhost:$PORT/cred/e" --broker "$tmp/b.sock" --n "$HOLD" \
	< "$tmp/hold.in" > "$tmp/hold.out" 2> "$tmp/hold.err" &
hpid=$!
exec 3> "$tmp/hold.in"
wait_for -s "$tmp/hold.out" || fail "holding $HOLD WebSockets failed: $(cat "$tmp/hold.err")"
i=0
while ! grep -q open "$tmp/hold.out" && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
grep -q open "$tmp/hold.out" || fail "holding $HOLD WebSockets failed: $(cat "$tmp/hold.err")"
set -- $(mem)
exec 3>&-
wait $hpid || true
awk -v n="$HOLD" -v r0="$rss0" -v r1="$1" -v t0="$thr0" -v t1="$2" 'BEGIN {
	printf "%d WebSockets held open (token injected): broker RSS %d -> %d KiB (%.0f KiB each), threads %d -> %d (%.2f each)\n",
		n, r0, r1, (r1 - r0) / n, t0, t1, (t1 - t0) / n }'
