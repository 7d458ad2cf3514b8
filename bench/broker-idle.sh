#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Broker idle connections: a shared broker (bulkhead-broker --control) with SESSIONS sessions
# registered as `bulkhead run --broker` registers them, in front of a local HTTPS echo; CONNS
# idle connections to the session sockets, spread evenly (bench/idle_conns.c holds them), first
# connected and silent, then each after one completed keep-alive request. Prints the broker's
# RSS (VmRSS) before and after each, per idle connection, its threads and descriptors; then,
# with all of them still open, one request through each session on a new connection: its
# latency and how many sessions were served. Connections the broker refused or closed are
# counted and their first reason shown. Measured against the issue's goal, never asserted.
# Usage: SESSIONS=100 CONNS=10000 IDLE_REQUEST=ca|upstream bench/broker-idle.sh
# (IDLE_REQUEST: the keep-alive request on each held connection — ca: the session CA, which the
# broker answers itself, so each connection holds no upstream; upstream: a GET the broker
# forwards to the echo, so each also keeps its upstream TLS connection. LOOPS: the broker's
# --event-loop values, by default every one its --help lists, or only its default.)
set -eu
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
SESSIONS=${SESSIONS:-100}
CONNS=${CONNS:-10000}
IDLE_REQUEST=${IDLE_REQUEST:-ca}
IDLE=$BUILD/bench/idle-conns
ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BUILD/bin/bulkhead-broker
fail() {
	echo "broker-idle: $*" >&2
	exit 1
}
for f in "$IDLE" "$ECHO" "$CLIENT" "$BROKER"; do
	[ -x "$f" ] || fail "$f is not built (make bench-broker-idle)"
done
command -v openssl > /dev/null || fail "the openssl command is missing (apt-get install openssl)"
case $SESSIONS in '' | *[!0-9]*) fail "SESSIONS: a number from 1 to 4096, not $SESSIONS" ;; esac
case $CONNS in '' | *[!0-9]*) fail "CONNS: a number, not $CONNS" ;; esac
[ "$SESSIONS" -ge 1 ] && [ "$SESSIONS" -le 4096 ] || fail "SESSIONS: 1 to 4096, not $SESSIONS"
[ "$CONNS" -ge "$SESSIONS" ] || fail "CONNS ($CONNS) must be at least SESSIONS ($SESSIONS)"
case $IDLE_REQUEST in ca | upstream) ;; *) fail "IDLE_REQUEST: ca or upstream, not $IDLE_REQUEST" ;; esac
# idle-conns holds every connection, the broker at least as many; both start with the soft
# descriptor limit raised to the hard one (so does https-echo, for IDLE_REQUEST=upstream).
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge $((CONNS + SESSIONS + 64)) ] ||
	fail "$CONNS connections need more than $((CONNS + SESSIONS + 64)) descriptors; the hard limit is $hard"
ulimit -n "$hard" || fail "cannot raise the descriptor limit to $hard"
help=$("$BROKER" --help 2>&1 || :)
if [ -z "${LOOPS:-}" ]; then
	if printf '%s\n' "$help" | grep -q -- '--event-loop'; then LOOPS="uring epoll"; else LOOPS=default; fi
fi
# Deadlines the broker offers, at their longest, so what is measured is idle connections held,
# not connections ended by a deadline while the measurement runs (each phase takes seconds).
deadlines=""
for o in --io-timeout --head-timeout --idle-timeout; do
	if printf '%s\n' "$help" | grep -q -- "$o"; then deadlines="$deadlines $o 3600"; fi
done

bench_tmp
bench_upstream "$ECHO"
printf '{"TOK": "bench-idle-s3cret-%s"}\n' $$ > "$tmp/secrets.json"
chmod 600 "$tmp/secrets.json"
cat > "$tmp/scope.json" << EOF
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "path_prefix": "/bench/", "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF
EXPECT="Authorization: Bearer [bulkhead:redacted]"
if [ "$IDLE_REQUEST" = ca ]; then
	idle_target=/.well-known/bulkhead/ca.pem idle_expect="END CERTIFICATE"
	idle_what="GET of the session CA, which the broker answers itself (no upstream held)"
else
	idle_target=http://localhost:$PORT/bench/idle idle_expect=$EXPECT
	idle_what="GET forwarded to the echo (each connection also holds its upstream TLS)"
fi

# measure LOOP: a broker, its sessions, the idle connections; idle-conns' lines to $tmp/LOOP.out.
measure() {
	ctl=$tmp/$1.ctl
	opt=""
	[ "$1" = default ] || opt="--event-loop $1"
	# shellcheck disable=SC2086 # opt, deadlines: options and values, or nothing
	"$BROKER" --control "$ctl" --secrets-file "$tmp/secrets.json" --ca-file "$tmp/ca.pem" \
		--quiet $deadlines $opt 2> "$tmp/$1.err" &
	bpid=$!
	pids="$pids $bpid"
	wait_for -S "$ctl" || fail "the broker ($1) did not start: $(cat "$tmp/$1.err")"
	# Every session's registration is held by one proxy-client reading a FIFO nobody writes.
	mkfifo "$tmp/$1.hold"
	sleep 100000 > "$tmp/$1.hold" &
	pids="$pids $!"
	socks=""
	s=1
	while [ "$s" -le "$SESSIONS" ]; do
		sock=$tmp/$1.$s.sock
		"$CLIENT" register "$ctl" "idle-$s" "$tmp/scope.json" "$sock" < "$tmp/$1.hold" \
			> "$tmp/$1.$s.reg" 2>&1 &
		pids="$pids $!"
		socks="$socks $sock"
		s=$((s + 1))
	done
	s=1
	while [ "$s" -le "$SESSIONS" ]; do
		wait_for -s "$tmp/$1.$s.reg" && grep -q '"ok":true' "$tmp/$1.$s.reg" ||
			fail "session idle-$s did not register with the broker ($1):" \
				"$(cat "$tmp/$1.$s.reg") $(tail -n 2 "$tmp/$1.err")"
		s=$((s + 1))
	done
	# shellcheck disable=SC2086 # socks: one path per session
	timeout 900 "$IDLE" -p "$bpid" -n "$CONNS" -i "$idle_target" -I "$idle_expect" \
		-u "http://localhost:$PORT/bench/session" -U "$EXPECT" $socks > "$tmp/$1.out" \
		2> "$tmp/$1.idle.err" || fail "idle-conns ($1) failed: $(tail -n 2 "$tmp/$1.idle.err")"
	kill -0 "$bpid" 2> /dev/null || fail "the broker ($1) died: $(tail -n 3 "$tmp/$1.err")"
}

# report LOOP: the table from idle-conns' key=value lines.
report() {
	echo "event loop: $1"
	awk -v s="$SESSIONS" -v n="$CONNS" '
	function v(line, k,   a) { return match(line, " " k "=[^ ]*") ? substr(line, RSTART + length(k) + 2, RLENGTH - length(k) - 2) : "" }
	function row(name, line, open, lost,   r) {
		r = v(line, "rss_kib")
		printf "  %-18s %6s %7s %9.1f %10s %8s %6s\n", name, open, lost, r / 1024,
			(open > 0 && base != "" ? sprintf("%.1f", (r - base) / open) : "-"),
			v(line, "threads"), v(line, "fds")
		return r + 0
	}
	$1 == "base" { base = v($0, "rss_kib"); b = $0 }
	$1 == "silent" { si = $0 }
	$1 == "keepalive" { ka = $0 }
	$1 == "sessions" { se = $0 }
	$1 == "after" { af = $0 }
	$1 == "why" { why[++nw] = $0 }
	END {
		printf "  %-18s %6s %7s %9s %10s %8s %6s\n", "phase", "open", "lost", "RSS MiB",
			"KiB/conn", "threads", "fds"
		row("before", b, 0, "-")
		rs = row("connected, silent", si, v(si, "open"),
			v(si, "connect_failed") + v(si, "skipped") + v(si, "lost"))
		rk = row("keep-alive, idle", ka, v(ka, "open"),
			v(ka, "failed") + v(ka, "closed_after") + v(ka, "lost"))
		printf "  (open: connected, as the client sees it (one the broker never accepts counts" \
			" until a request on it fails); lost: not connected, refused, closed or failed in" \
			" that phase; KiB/conn: RSS above \"before\" per open connection)\n"
		printf "  silent: %s asked, %s connected (%s connect failures, %s not tried on a" \
			" stalled socket), %s closed or answered by the broker after connecting\n",
			v(si, "asked"), v(si, "opened"), v(si, "connect_failed"), v(si, "skipped"),
			v(si, "lost")
		printf "  keep-alive: %s requests on open connections, %s ok, %s failed, %s answered" \
			" with close, %s closed later\n", v(ka, "asked"), v(ka, "ok"), v(ka, "failed"),
			v(ka, "closed_after"), v(ka, "lost")
		printf "  one request per session (new connection, all held ones open): served %s of" \
			" %s", v(se, "served"), v(se, "sessions")
		if (v(se, "p50_ms") != "")
			printf "; latency p50 %s ms, p99 %s ms, max %s ms", v(se, "p50_ms"),
				v(se, "p99_ms"), v(se, "max_ms")
		printf "\n  held connections lost during that: %s; broker RSS then %.1f MiB\n",
			v(af, "held_lost"), v(af, "rss_kib") / 1024
		for (i = 1; i <= nw; i++) printf "  first reason, %s\n", substr(why[i], 5)
		ok = v(si, "open") + 0 >= 10000 && v(ka, "open") + 0 >= 10000 && s >= 100 &&
			v(se, "served") + 0 == s && rs < 200 * 1024 && rk < 200 * 1024
		printf "  goal: 10000 idle connections across 100 sessions with RSS under 200 MiB:" \
			" silent %.1f MiB with %s open, keep-alive %.1f MiB with %s open, %s of %s" \
			" sessions served: %s\n", rs / 1024, v(si, "open"), rk / 1024, v(ka, "open"),
			v(se, "served"), s, ok ? "met" : (n < 10000 || s < 100) ? \
			"not measured (CONNS and SESSIONS below the goal'"'"'s)" : "NOT met"
	}' "$tmp/$1.out"
}

start=$(date +%s)
for loop in $LOOPS; do
	measure "$loop"
done
echo "broker idle connections: a shared broker, $SESSIONS sessions, $CONNS idle connections" \
	"spread evenly over their sockets; keep-alive request: $idle_what."
echo "Broker deadlines:${deadlines:- none offered}; descriptor limit $(ulimit -n); $(nproc) CPUs;" \
	"$(($(date +%s) - start)) s."
for loop in $LOOPS; do
	report "$loop"
done
