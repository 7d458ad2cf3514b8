#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Broker overhead: HTTP/1.1 GETs to a local HTTPS echo upstream, straight (verified TLS) and
# through bulkhead-broker's Unix socket as a guest's requests arrive, in the same run: plain
# (absolute-form GET; the broker opens verified TLS upstream) and CONNECT (TLS inside the tunnel
# to the broker's leaf, verified against its session CA); keep-alive and a new connection per
# request; at each concurrency. The broker injects a Bearer secret and scrubs the echoed one.
# A third path, when HAProxy is installed: the same plain requests through HAProxy as a bare
# relay (TCP mode, its defaults: a thread per CPU; verified TLS upstream), the event-driven
# proxy of the field doing the least a relay can, to show what the hop itself costs here.
# Prints p50/p99 straight and through the broker, what the broker adds, both throughputs and
# their ratio, the relay's throughput and the broker's against it, and the broker's CPU per
# request; then the goals of issue 19, measured vs goal.
# Usage: DURATION=1 CONNS="1 8 64 512" MODES="plain connect" KEEPALIVE="1 0" ROUNDS=3 \
#        SOURCE=file|vault|oauth|aws bench/broker-overhead.sh
# (DURATION: seconds each run measures, or N: requests per run instead; WARMUP: unmeasured
# requests per connection first (default: about 200 per run with keep-alive, at least 1 per
# connection; about 20 per run without);
# ROUNDS: runs per row, the median is shown; LOOPS: the broker's --event-loop values to compare,
# by default every one its --help lists, or only its default when it lists none)
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
DURATION=${DURATION:-1}
N=${N:-}
CONNS=${CONNS:-1 8 64 512}
MODES=${MODES:-plain connect}
KEEPALIVE=${KEEPALIVE:-1 0}
WARMUP=${WARMUP:-}
ROUNDS=${ROUNDS:-3}
LOAD=$BUILD/bench/http-load
ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BUILD/bin/bulkhead-broker
fail() {
	echo "broker-overhead: $*" >&2
	exit 1
}
for f in "$LOAD" "$ECHO" "$CLIENT" "$BROKER"; do
	[ -x "$f" ] || fail "$f is not built (make bench-broker)"
done
command -v openssl > /dev/null || fail "the openssl command is missing (apt-get install openssl)"
for m in $MODES; do
	case $m in plain | connect) ;; *) fail "MODES: plain and/or connect, not $m" ;; esac
done
for k in $KEEPALIVE; do
	case $k in 0 | 1) ;; *) fail "KEEPALIVE: 1 (keep-alive) and/or 0 (a connection per request)" ;; esac
done
maxc=0
for c in $CONNS; do
	case $c in '' | *[!0-9]*) fail "CONNS: numbers from 1 to 1000, not $c" ;; esac
	[ "$c" -ge 1 ] && [ "$c" -le 1000 ] || fail "CONNS: numbers from 1 to 1000, not $c"
	[ "$c" -gt "$maxc" ] && maxc=$c
done
# The load generator holds a descriptor per connection (two while one closes and the next
# opens), the broker a few per guest connection: the soft limit up to the hard one.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge $((maxc * 4 + 64)) ] ||
	fail "$maxc connections need about $((maxc * 4 + 64)) descriptors; the hard limit is $hard"
ulimit -n "$hard" || fail "cannot raise the descriptor limit to $hard"
if [ -z "${LOOPS:-}" ]; then
	if "$BROKER" --help 2>&1 | grep -q -- '--event-loop'; then LOOPS="uring epoll"; else LOOPS=default; fi
fi

bench_tmp
bench_upstream "$ECHO"

# The reference relay: plain requests only (it answers no CONNECT).
RELAY=""
if command -v haproxy > /dev/null && printf '%s\n' "$MODES" | grep -qw plain; then
	cat > "$tmp/relay.cfg" << CFG
global
  maxconn 8192
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
listen relay
  bind unix@$tmp/relay.sock
  server up 127.0.0.1:$PORT ssl verify required ca-file $tmp/ca.pem verifyhost localhost
CFG
	haproxy -f "$tmp/relay.cfg" -db 2> "$tmp/relay.err" &
	pids="$pids $!"
	wait_for -S "$tmp/relay.sock" || fail "haproxy did not start: $(cat "$tmp/relay.err")"
	RELAY=haproxy
else
	echo "broker-overhead: no reference relay (haproxy is not installed, or MODES has no plain)" >&2
fi

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
# SOURCE=vault: the secret from an encrypted vault instead (each request reads it again and
# checks the vault file for a replacement: what that costs shows beside SOURCE=file).
source_opt="--secrets-file $tmp/secrets.json"
if [ "${SOURCE:-file}" = vault ]; then
	XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault init > /dev/null ||
		fail "bulkhead vault init failed"
	printf '%s' "$SECRET" | XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault put TOK ||
		fail "bulkhead vault put failed"
	source_opt="--vault $tmp/cfg/bulkhead/vault"
elif [ "$SOURCE" = oauth ]; then
	# SOURCE=oauth: an oauth2-refresh entry (tests/tools/oauth_provider.py, tokens for an hour):
	# the token is obtained once; each request then asks the cache for it.
	debian_python oauthlib || fail "SOURCE=oauth needs python3-oauthlib (make deps)"
	"$PY" "$(dirname "$0")/../tests/tools/oauth_provider.py" "$tmp/leaf.pem" "$tmp/leaf.key" \
		"$tmp/oauth.log" 3600 bench bench-client-S3cret rt-bench-0001 > "$tmp/oauth.port" \
		2> "$tmp/oauth.err" &
	pids="$pids $!"
	wait_for -s "$tmp/oauth.port" || fail "the token endpoint did not start: $(cat "$tmp/oauth.err")"
	XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault init > /dev/null ||
		fail "bulkhead vault init failed"
	printf '{"token_url": "https://localhost:%s/token", "client_id": "bench", "client_secret": "bench-client-S3cret", "refresh_token": "rt-bench-0001", "allow_addresses": ["127.0.0.1"]}' \
		"$(cat "$tmp/oauth.port")" |
		XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault put TOK --kind oauth2-refresh ||
		fail "bulkhead vault put --kind oauth2-refresh failed"
	source_opt="--vault $tmp/cfg/bulkhead/vault"
elif [ "$SOURCE" = aws ]; then
	# SOURCE=aws: an aws-sigv4 entry: no value goes in, each request is signed instead (the
	# Signature V4 HMAC chain over its head); the echo shows the broker's Authorization.
	XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault init > /dev/null ||
		fail "bulkhead vault init failed"
	printf '{"access_key_id": "AKIABENCHKEY00000000", "secret_access_key": "%s"}' "$SECRET" |
		XDG_CONFIG_HOME="$tmp/cfg" "$BUILD/bin/bulkhead" vault put TOK --kind aws-sigv4 ||
		fail "bulkhead vault put --kind aws-sigv4 failed"
	source_opt="--vault $tmp/cfg/bulkhead/vault"
	sed -e 's|"header": "Authorization", "value": "Bearer {}"|"aws_sigv4": { "service": "s3", "region": "us-east-1" }|' \
		-e 's|"destinations"|"s3": [ "bench/" ], "destinations"|' "$tmp/rules.json" > "$tmp/rules.aws"
	mv "$tmp/rules.aws" "$tmp/rules.json"
fi

# One broker per event loop, all up at once, so every round measures each beside the same
# direct run. Each serves its session CA as bulkhead-init fetches it, for the CONNECT runs.
for loop in $LOOPS; do
	opt=""
	[ "$loop" = default ] || opt="--event-loop $loop"
	# shellcheck disable=SC2086 # opt is one option and its value, or nothing
	# shellcheck disable=SC2086 # source_opt is one option and its value
	"$BROKER" --listen "$tmp/$loop.sock" --rules "$tmp/rules.json" $opt \
		$source_opt --ca-file "$tmp/ca.pem" --quiet 2> "$tmp/$loop.err" &
	echo $! > "$tmp/$loop.pid"
	pids="$pids $!"
	wait_for -S "$tmp/$loop.sock" || fail "the broker ($loop) did not start: $(cat "$tmp/$loop.err")"
	printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' |
		"$CLIENT" raw "$tmp/$loop.sock" |
		sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' > "$tmp/$loop.ca"
	grep -q 'END CERTIFICATE' "$tmp/$loop.ca" ||
		fail "the broker ($loop) did not serve its session CA: $(cat "$tmp/$loop.err")"
done

# The upstream echoes the request head it got, so the broker's body carries the injected header,
# scrubbed: every measured response proves injection and scrubbing happened.
EXPECT="Authorization: Bearer [bulkhead:redacted]"
[ "${SOURCE:-file}" != aws ] || EXPECT="Authorization: AWS4-HMAC-SHA256 Credential=AKIABENCHKEY00000000/"
direct() { "$LOAD" --direct "https://127.0.0.1:$PORT/bench/x" --ca-file "$tmp/ca.pem" "$@"; }
via() { # LOOP MODE http-load-options...
	_l=$1 _m=$2
	shift 2
	if [ "$_m" = plain ]; then
		"$LOAD" --proxy-unix "$tmp/$_l.sock" --url "http://localhost:$PORT/bench/x" \
			--expect "$EXPECT" --label "$_l-$_m" "$@"
	else
		"$LOAD" --proxy-unix "$tmp/$_l.sock" --connect --ca-file "$tmp/$_l.ca" \
			--url "https://localhost:$PORT/bench/x" --expect "$EXPECT" --label "$_l-$_m" "$@"
	fi 2>&1
}
# field JSON NAME: one number from http-load's --json line.
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"; }
# cpu_ticks PID: user + system clock ticks so far (exited threads included).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# keep KEY JSON: a run's numbers into $tmp/KEY.*, one line per round.
keep() {
	for k in p50_ms p99_ms rps reconnects; do field "$2" $k >> "$tmp/$1.$k"; done
}
# failed KEY WHAT OUTPUT: a run that did not complete, counted and its first line kept.
failed() {
	echo x >> "$tmp/$1.failed"
	printf '%s: %s\n' "$2" "$(printf '%s\n' "$3" | grep -v '^{' | head -n 1)" >> "$tmp/failures"
}

if [ -n "$N" ]; then
	amount=-n per_run="$N requests"
	set -- "$N"
else
	amount=-d per_run="$DURATION s"
	set -- "$DURATION"
fi
hz=$(getconf CLK_TCK)
: > "$tmp/failures"
start=$(date +%s)
for ka in $KEEPALIVE; do
	kopt=""
	[ "$ka" = 1 ] || kopt=-k
	for c in $CONNS; do
		# Warm-up: about 200 requests per run with keep-alive, at least one per connection
		# (its TLS); a connection per request has little to warm beyond the broker's leaf for
		# CONNECT: about 20 requests, none per connection from 32 on.
		if [ "$ka" = 1 ]; then w=$(((200 + c - 1) / c)); else w=$((20 / c)); fi
		w=${WARMUP:-$w}
		r=1
		while [ "$r" -le "$ROUNDS" ]; do
			# Direct and each broker alternate, so drift in the machine hits all alike.
			# shellcheck disable=SC2086 # kopt: one option or nothing
			if d=$(direct -c "$c" "$amount" "$1" -w "$w" $kopt --label direct --json 2>&1); then
				keep "d.$ka.$c" "$d"
			else
				failed "d.$ka.$c" "direct, $c conns, keepalive=$ka" "$d"
			fi
			# shellcheck disable=SC2086 # kopt: one option or nothing
			if [ -n "$RELAY" ] && v=$("$LOAD" --proxy-unix "$tmp/relay.sock" -c "$c" \
				--url "http://localhost:$PORT/bench/x" "$amount" "$1" -w "$w" $kopt \
				--label relay --json 2>&1); then
				keep "r.$ka.$c" "$v"
			elif [ -n "$RELAY" ]; then
				failed "r.$ka.$c" "relay, $c conns, keepalive=$ka" "$v"
			fi
			for loop in $LOOPS; do
				bpid=$(cat "$tmp/$loop.pid")
				for m in $MODES; do
					key=$loop.$m.$ka.$c
					b0=$(cpu_ticks "$bpid")
					# shellcheck disable=SC2086
					if v=$(via "$loop" "$m" -c "$c" "$amount" "$1" -w "$w" $kopt --json); then
						b1=$(cpu_ticks "$bpid")
						keep "$key" "$v"
						# Broker CPU per request, warm-up included in those it served.
						echo "$b0 $b1" | awk -v hz="$hz" \
							-v n=$(($(field "$v" requests) + c * w)) \
							'{ printf "%.1f\n", ($2 - $1) * 1e6 / hz / n }' >> "$tmp/$key.cpu"
					else
						failed "$key" "$loop $m, $c conns, keepalive=$ka" "$v"
					fi
				done
			done
			r=$((r + 1))
		done
	done
done
took=$(($(date +%s) - start))

for loop in $LOOPS; do
	kill -0 "$(cat "$tmp/$loop.pid")" 2> /dev/null ||
		fail "the broker ($loop) died: $(tail -n 3 "$tmp/$loop.err")"
done
# med KEY NAME: the median over the rounds that completed, or "-" when none did.
med() { median "$tmp/$1.$2" 2> /dev/null || echo -; }
: > "$tmp/rows"
for loop in $LOOPS; do
	for m in $MODES; do
		for ka in $KEEPALIVE; do
			for c in $CONNS; do
				key=$loop.$m.$ka.$c
				nf=$(cat "$tmp/$key.failed" "$tmp/d.$ka.$c.failed" 2> /dev/null | wc -l)
				rc=$(cat "$tmp/$key.reconnects" "$tmp/d.$ka.$c.reconnects" 2> /dev/null |
					awk '{ s += $1 } END { print s + 0 }')
				rel=-
				[ "$m" = plain ] && rel=$(med "r.$ka.$c" rps)
				echo "$loop $m $ka $c $(med "d.$ka.$c" p50_ms) $(med "d.$ka.$c" p99_ms)" \
					"$(med "$key" p50_ms) $(med "$key" p99_ms) $(med "d.$ka.$c" rps)" \
					"$(med "$key" rps) $(med "$key" cpu) $nf $rc $rel" >> "$tmp/rows"
			done
		done
	done
done

echo "broker overhead: GET to a local HTTPS echo, straight vs. through the broker (inject +"
echo "verified TLS upstream + scrub); plain: absolute-form GET; connect: CONNECT, then TLS to the"
echo "broker's leaf (session CA, verified) inside; ka 1: keep-alive, ka 0: a new connection"
echo "(TCP+TLS straight; Unix socket [+ CONNECT + TLS] to the broker) per request, counted in"
echo "its latency. $per_run per run, median of $ROUNDS runs alternating direct and broker;" \
	"$(nproc) CPUs, load generator on the same CPUs; ${took} s."
printf '%-7s %-7s %2s %5s %8s %8s %8s %8s %8s %8s %9s %9s %6s %9s %7s %7s\n' loop mode ka conns \
	"dir p50" "dir p99" "brk p50" "brk p99" "add p50" "add p99" "dir req/s" "brk req/s" \
	ratio "rel req/s" brk/rel "brk us"
awk 'function ms(v) { return v == "-" ? v : sprintf("%.3f", v) }
function rps(v) { return v == "-" ? v : sprintf("%d", v) }
function ratio(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
{
	ok = ($5 != "-" && $7 != "-")
	printf "%-7s %-7s %2s %5s %8s %8s %8s %8s %8s %8s %9s %9s %6s %9s %7s %7s%s\n", $1, $2, $3, $4,
		ms($5), ms($6), ms($7), ms($8), ok ? sprintf("%.3f", $7 - $5) : "-", ok ? sprintf("%.3f", $8 - $6) : "-",
		rps($9), rps($10), ratio($10, $9), rps($14), ratio($10, $14), $11,
		($12 > 0 ? "  (" $12 " runs failed)" : "")
}' "$tmp/rows"
echo "(latency in ms; add: broker minus direct; ratio: broker/direct req/s; rel: the reference"
echo "relay, ${RELAY:-not run}, plain only; brk/rel: broker/relay req/s; brk us: broker CPU"
echo "time per request in microseconds, set-up included)"

# The goals of issue 19, measured vs goal, per loop, mode and keep-alive; never asserted.
# shellcheck disable=SC2086 # CONNS: a list, one number per line
lo=$(printf '%s\n' $CONNS | sort -n | head -n 1)
awk -v lo="$lo" '
function verdict(ok) { return ok ? "met" : "NOT met" }
{ g = $1 " " $2 " ka=" $3; if (!(g in seen)) { seen[g] = 1; order[++n] = g } }
$4 == 8 || $4 == 64 {
	if ($9 != "-" && $10 != "-" && $9 > 0) {
		r = $10 / $9
		rel = ($14 != "-") ? sprintf("; the relay %.2f", $14 / $9) : ""
		tp[g] = tp[g] sprintf(" %s conns %.2f (%s%s);", $4, r, verdict(r >= 0.8), rel)
	} else tp[g] = tp[g] sprintf(" %s conns failed;", $4)
}
$4 == lo {
	if ($5 != "-" && $7 != "-") {
		a50 = $7 - $5; a99 = $8 - $6
		lat[g] = sprintf(" added p50 %.3f ms (goal <= 0.1: %s), added p99 %.3f ms (goal <= 1: %s) at %s conn",
			a50, verdict(a50 <= 0.1), a99, verdict(a99 <= 1), lo)
	} else lat[g] = " latency at " lo " conn: failed"
}
END {
	for (i = 1; i <= n; i++) {
		g = order[i]
		printf "goal [%s]: throughput >= 0.8 of direct at 8 and 64 conns:%s%s\n", g,
			tp[g] == "" ? " (8 and 64 not in CONNS);" : tp[g], lat[g]
	}
}' "$tmp/rows"
rc=$(awk '{ s += $13 } END { print s + 0 }' "$tmp/rows")
if [ "$rc" -gt 0 ]; then
	echo "note: $rc reconnects in keep-alive runs (a server closed kept-alive connections);" \
		"each is counted in the latency of the request that needed it"
fi
if [ -s "$tmp/failures" ]; then
	echo "runs that failed (not in the medians):"
	sort "$tmp/failures" | uniq -c | sed 's/^/  /'
fi
