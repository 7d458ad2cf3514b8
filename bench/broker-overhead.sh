#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Broker overhead: keep-alive HTTP/1.1 GETs to a local HTTPS echo upstream, straight (verified TLS)
# and through bulkhead-broker's Unix socket as a guest's requests arrive (the broker injects a
# Bearer secret, opens verified TLS, scrubs the echoed secret), in the same run. Prints latency
# at each concurrency, the added p50, broker/direct throughput and the broker's CPU per request.
# Usage: DURATION=2 CONNS="1 8" ROUNDS=3 bench/broker-overhead.sh   (DURATION: seconds each run
# measures, or N: requests per run instead; WARMUP: unmeasured requests per connection first;
# ROUNDS: runs per side and concurrency, the median is shown)
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
DURATION=${DURATION:-2}
N=${N:-}
CONNS=${CONNS:-1 8}
WARMUP=${WARMUP:-100}
ROUNDS=${ROUNDS:-3}
LOAD=$BUILD/bench/http-load
ECHO=$BUILD/tests/https-echo
BROKER=$BUILD/bin/bulkhead-broker
for f in "$LOAD" "$ECHO" "$BROKER"; do
	if [ ! -x "$f" ]; then
		echo "broker-overhead: $f is not built (make bench-broker)" >&2
		exit 1
	fi
done
command -v openssl > /dev/null || {
	echo "broker-overhead: the openssl command is missing (apt-get install openssl)" >&2
	exit 1
}

tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2> /dev/null || :; done
	for p in $pids; do wait "$p" 2> /dev/null || :; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Throwaway test PKI: a CA and a leaf for localhost and 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 1 \
	-subj /CN=bulkhead-bench-ca 2> /dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" \
	-subj /CN=localhost 2> /dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$tmp/leaf.ext"
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
	-out "$tmp/leaf.pem" -days 1 -extfile "$tmp/leaf.ext" 2> /dev/null

# wait_for TEST FILE: up to 5 s for the file to appear.
wait_for() {
	i=0
	while ! test "$1" "$2" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	test "$1" "$2"
}

"$ECHO" --cert "$tmp/leaf.pem" --key "$tmp/leaf.key" > "$tmp/echo.port" 2> "$tmp/echo.err" &
pids="$pids $!"
wait_for -s "$tmp/echo.port" || {
	echo "broker-overhead: https-echo did not start: $(cat "$tmp/echo.err")" >&2
	exit 1
}
PORT=$(cat "$tmp/echo.port")

SECRET=bench-s3cret-$$-token
cat > "$tmp/rules.json" << RULES
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
                 "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                                     "path_prefix": "/bench/",
                                     "allow_addresses": ["127.0.0.1"] } ] } ],
  "allow": [] }
RULES
printf '{"TOK": "%s"}\n' "$SECRET" > "$tmp/secrets.json"
chmod 600 "$tmp/secrets.json"
"$BROKER" --listen "$tmp/broker.sock" --rules "$tmp/rules.json" \
	--secrets-file "$tmp/secrets.json" --ca-file "$tmp/ca.pem" --quiet 2> "$tmp/broker.err" &
BPID=$!
pids="$pids $BPID"
wait_for -S "$tmp/broker.sock" || {
	echo "broker-overhead: the broker did not start: $(cat "$tmp/broker.err")" >&2
	exit 1
}

# The upstream echoes the request head it got, so the broker's body carries the injected header,
# scrubbed: every measured response proves injection and scrubbing happened.
direct() { "$LOAD" --direct "https://127.0.0.1:$PORT/bench/x" --ca-file "$tmp/ca.pem" "$@"; }
via() {
	"$LOAD" --proxy-unix "$tmp/broker.sock" --url "http://localhost:$PORT/bench/x" \
		--expect "Authorization: Bearer [bulkhead:redacted]" "$@"
}

# field JSON NAME: one number from http-load's --json line.
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"; }
# cpu_ticks PID: user + system clock ticks so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

if [ -n "$N" ]; then
	amount=-n per_run="$N requests"
	set -- "$N"
else
	amount=-d per_run="$DURATION s"
	set -- "$DURATION"
fi
hz=$(getconf CLK_TCK)
: > "$tmp/rows"
for c in $CONNS; do
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		# Direct and broker alternate so drift in the machine hits both alike.
		d=$(direct -c "$c" "$amount" "$1" -w "$WARMUP" --label direct --json)
		b0=$(cpu_ticks "$BPID")
		v=$(via -c "$c" "$amount" "$1" -w "$WARMUP" --label broker --json)
		b1=$(cpu_ticks "$BPID")
		for k in p50_ms p99_ms rps reconnects; do
			field "$d" $k >> "$tmp/d.$c.$k"
			field "$v" $k >> "$tmp/v.$c.$k"
		done
		# Broker CPU per request, warm-up included in the requests it served.
		echo "$b0 $b1" | awk -v hz="$hz" -v n=$(($(field "$v" requests) + c * WARMUP)) \
			'{ printf "%.1f\n", ($2 - $1) * 1e6 / hz / n }' >> "$tmp/v.$c.cpu"
		r=$((r + 1))
	done
	row="$c"
	for s in d.$c.p50_ms d.$c.p99_ms v.$c.p50_ms v.$c.p99_ms d.$c.rps v.$c.rps v.$c.cpu; do
		row="$row $(median < "$tmp/$s")"
	done
	rc=0
	for s in d v; do
		rc=$((rc + $(awk '{ s += $1 } END { print s + 0 }' "$tmp/$s.$c.reconnects")))
	done
	echo "$row $rc" >> "$tmp/rows"
done

if kill -0 "$BPID" 2> /dev/null; then :; else
	echo "broker-overhead: the broker died: $(cat "$tmp/broker.err")" >&2
	exit 1
fi
echo "broker overhead: keep-alive GET to a local HTTPS echo, straight vs. through the broker"
echo "(inject + verified TLS + scrub); $per_run per run, median of $ROUNDS runs;" \
	"$(nproc) CPUs, load generator on the same CPUs"
printf '%5s %10s %10s %10s %10s %10s %12s %12s %7s %9s\n' conns "direct p50" "direct p99" \
	"broker p50" "broker p99" "added p50" "direct req/s" "broker req/s" ratio "broker us"
awk '{ printf "%5d %10.3f %10.3f %10.3f %10.3f %10.3f %12d %12d %7.2f %9.1f\n",
	$1, $2, $3, $4, $5, $4 - $2, $6, $7, ($6 > 0 ? $7 / $6 : 0), $8 }' "$tmp/rows"
echo "(latency in ms; \"broker us\": broker CPU time per request in microseconds)"
awk 'NR == 1 { a = $4 - $2; f = $1 } { r = $6 > 0 ? $7 / $6 : 0; c = $1 }
	END { printf "goal: added p50 <= 0.5 ms at %d conn: %.3f ms; throughput >= 50%% of " \
		"direct at %d conns: %.0f%%\n", f, a, c, r * 100 }' "$tmp/rows"
rc=$(awk '{ s += $9 } END { print s + 0 }' "$tmp/rows")
if [ "$rc" -gt 0 ]; then
	echo "note: $rc reconnects (a server closed kept-alive connections); each is counted in" \
		"the latency of the request that needed it"
fi
