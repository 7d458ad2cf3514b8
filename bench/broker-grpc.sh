#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/broker-grpc.sh: gRPC unary round trips (bench/grpc_rtt.py, Debian's python3-grpcio at
# both ends) in one run, interleaved: the same TLS gRPC server reached directly, through the
# broker on a path that gets no credential, and through the broker with a token injected as
# metadata (HTTP/2 on both sides of the broker: broker/h2_front.c, broker/h2_up.c; every
# answer scrubbed). Prints p50 and p99 of each and the ratios (the goal: the broker within
# 1 ms of direct at p50). Measured, never asserted.
# Then what open HTTP/2 streams cost the broker: HOLD server streams held open on one
# connection (each holds a thread: an HTTP/2 stream is served on a thread of its own), the broker's RSS
# and threads before and after.
# Usage: ROUNDS=5 N=200 HOLD=30 bench/broker-grpc.sh
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
N=${N:-200}
HOLD=${HOLD:-30}
BROKER=$BUILD/bin/bulkhead-broker
TOOL=$(dirname "$0")/grpc_rtt.py
RELAY=$(dirname "$0")/../tests/tools/tcp_relay.py
fail() {
	echo "broker-grpc: $*" >&2
	exit 1
}
[ -x "$BROKER" ] || fail "$BROKER is not built (make all)"
debian_python grpc || fail "python3-grpcio is missing (apt-get install python3-grpcio)"
for v in "$ROUNDS" "$N" "$HOLD"; do
	case $v in '' | *[!0-9]* | 0) fail "ROUNDS, N and HOLD are positive numbers" ;; esac
done
[ "$HOLD" -le 32 ] || fail "HOLD: at most 32 (the streams one connection may open at once)"

bench_tmp
bench_pki
"$PY" "$TOOL" serve --cert "$tmp/leaf.pem" --key "$tmp/leaf.key" > "$tmp/up.port" \
	2> "$tmp/up.err" &
pids="$pids $!"
wait_for -s "$tmp/up.port" || fail "the gRPC server did not start: $(cat "$tmp/up.err")"
PORT=$(cat "$tmp/up.port")
bench_broker_two_paths "$PORT"
"$PY" "$RELAY" "$tmp/b.sock" > "$tmp/relay.port" 2> "$tmp/relay.err" &
pids="$pids $!"
wait_for -s "$tmp/relay.port" || fail "the relay did not start: $(cat "$tmp/relay.err")"
PROXY=http://127.0.0.1:$(cat "$tmp/relay.port")
printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' |
	"$BUILD/tests/proxy-client" raw "$tmp/b.sock" |
	sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' > "$tmp/session-ca.pem"
[ -s "$tmp/session-ca.pem" ] || fail "no session CA from the broker (make test-programs)"

r=0
while [ $r -lt "$ROUNDS" ]; do
	"$PY" "$TOOL" client --port "$PORT" --ca "$tmp/ca.pem" --path /open/Unary --n "$N" \
		>> "$tmp/direct" || fail "the direct calls failed"
	"$PY" "$TOOL" client --port "$PORT" --ca "$tmp/session-ca.pem" --proxy "$PROXY" \
		--path /open/Unary --n "$N" >> "$tmp/plain" || fail "the calls through the broker failed"
	"$PY" "$TOOL" client --port "$PORT" --ca "$tmp/session-ca.pem" --proxy "$PROXY" \
		--path /cred/Unary --n "$N" >> "$tmp/cred" || fail "the credentialed calls failed"
	r=$((r + 1))
done
for f in direct plain cred; do
	[ "$(wc -l < "$tmp/$f")" -eq $((ROUNDS * N)) ] ||
		fail "$f: $(wc -l < "$tmp/$f") calls of $((ROUNDS * N))"
done
echo "gRPC unary round trip (64 bytes out, 100 back, one channel): $ROUNDS rounds x $N"
bench_three_rows 3
awk -v c="$p50_cred" -v p="$p50_plain" -v d="$p50_direct" 'BEGIN {
	printf "  at p50: credential %.2fx the no-credential path, %.2fx direct (+%.2f ms)\n",
		c / p, c / d, (c - d) / 1000 }'

bpid=$broker_pid
mem() { awk '/^VmRSS/ { r = $2 } /^Threads/ { t = $2 } END { print r, t }' "/proc/$bpid/status"; }
set -- $(mem)
rss0=$1 thr0=$2
mkfifo "$tmp/hold.in"
"$PY" "$TOOL" hold --port "$PORT" --ca "$tmp/session-ca.pem" --proxy "$PROXY" --n "$HOLD" \
	< "$tmp/hold.in" > "$tmp/hold.out" 2> "$tmp/hold.err" &
hpid=$!
exec 3> "$tmp/hold.in"
i=0
while ! grep -q open "$tmp/hold.out" && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
grep -q open "$tmp/hold.out" || fail "holding $HOLD streams failed: $(cat "$tmp/hold.err")"
set -- $(mem)
exec 3>&-
wait $hpid || true
awk -v n="$HOLD" -v r0="$rss0" -v r1="$1" -v t0="$thr0" -v t1="$2" 'BEGIN {
	printf "%d gRPC server streams held open on one connection (token injected): broker RSS %d -> %d KiB (%.0f KiB each), threads %d -> %d (%.2f each)\n",
		n, r0, r1, (r1 - r0) / n, t0, t1, (t1 - t0) / n }'
