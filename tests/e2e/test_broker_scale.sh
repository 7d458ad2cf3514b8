#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_scale.sh: the shared broker's connection loop (broker/loop.c) against
# real sessions registered over its control socket, in front of https-echo; each case under
# both backends, io_uring and epoll, where this host has io_uring.
#  - The start-up line names the backend; asking for io_uring where it cannot run fails.
#  - Idle connections hold no thread: 400 of them leave the broker with a handful.
#  - Starvation: a session that opens connections until refused (each refusal answered 503,
#    audited over_limit) does not keep another session out: that one's request is served
#    within 5 s by closing one of the first session's idle connections (answered 503, audited
#    evicted).
#  - Bursts: 40 connections handed back and forth between the loop and the workers never
#    start more workers than --max-active.
#  - Busy connections: a session keeping 30 connections busy (heads half sent) holds at most
#    --max-active workers; another session is served meanwhile. A request of a session whose
#    workers are all busy waits its turn at most --head-timeout, then is answered 503, audited.
#  - Idle deadline: a silent connection, and one idle after a request, get 408 once
#    --idle-timeout passes, recorded idle_timeout.
#  - A session that ends closes its idle connections.
#  - Bodies buffered whole: past a session's or the broker's budget a request is answered 503
#    naming it, audited over_budget; what a request took comes back at its end.
#  - Busy connections are no shield: a session filling the broker with requests in progress
#    loses one of them (cut, answered 503, audited evicted) to another session's request.
#  - A request that stalls mid-body gets 408 once --io-timeout passes.
#  - Inside a CONNECT tunnel, a TLS handshake or a head's record sent a byte at a time is ended
#    by the head's deadline (--head-timeout), audited 408.
#  - The audit log's file system full: nothing is forwarded (503) until a record can be
#    written again; then requests are served.
#  - A burst near a full disk: every request served has its record. A session at its audit
#    quota (--audit-max-bytes) is refused; another is served.
#  - At a descriptor limit of 200 (hard), the broker's bound follows it: 300 connections
#    are answered, the broker stays up and serves another session.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BIN/bulkhead-broker
CONNS="python3 $(dirname "$0")/../tools/broker_conns.py"
require "broker scale" "$ECHO" "$CLIENT" "$BROKER" openssl python3
D=$TMP
if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" > "$D/port" 2> /dev/null &
pids="$pids $!"
i=0; while [ ! -s "$D/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
printf '{"TOK": "scale-test-secret-5517"}\n' > "$D/secrets.json"
chmod 600 "$D/secrets.json"
cat > "$D/scope.json" << EOF2
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2

# start TAG OPTIONS...: a shared broker with its audit directory, named TAG.
start() {
	tag=$1
	shift
	mkdir -m 700 "$D/$tag" "$D/$tag/audit"
	"$BROKER" --control "$D/$tag/ctl.sock" --secrets-file "$D/secrets.json" \
		--ca-file "$D/ca.pem" --audit-dir "$D/$tag/audit" "$@" 2> "$D/$tag/broker.log" &
	bpid=$!
	pids="$pids $bpid"
	wait_socket "$D/$tag/ctl.sock" 5
}
# register TAG NAME: session NAME on broker TAG ($holder: killing it ends the session).
register() { broker_register "$D/$1/ctl.sock" "$2" "$D/scope.json" "$D/$1/$2.sock" "$D/$1"; }
# field JSON KEY: one value of a broker_conns.py report.
field() { printf '%s' "$1" | python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(v if not isinstance(v, list) else "\n".join(map(str, v)))' "$2"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }
# per_second LOG RULE: the most records of RULE that LOG holds for any one second.
per_second() {
	grep "\"rule\":\"$2\"" "$1" | sed -n 's/.*"time":"\([^.]*\)\..*/\1/p' | uniq -c |
		awk '$1 > m { m = $1 } END { print m + 0 }'
}

backends="uring epoll"
start probe --event-loop uring
sleep 0.3
if ! grep -q "event loop: io_uring;" "$D/probe/broker.log"; then
	if grep -q "io_uring_setup" "$D/probe/broker.log"; then
		skip "the io_uring backend" "io_uring cannot run here: $(tail -n 1 "$D/probe/broker.log")"
		backends=epoll
	else
		not_ok "the broker starts with --event-loop uring" "$(cat "$D/probe/broker.log")"
	fi
else
	ok "--event-loop uring: the start-up line says io_uring, with the bounds"
fi
kill "$bpid" 2> /dev/null

for be in $backends; do
	# --- idle connections hold no thread; starvation ------------------------------------
	start "$be" --event-loop "$be" --max-conns-total 60 --idle-timeout 3
	be_pid=$bpid
	want=$([ "$be" = uring ] && echo io_uring || echo epoll)
	grep -q "event loop: $want; at most 60 connections" "$D/$be/broker.log" &&
		ok "$be: the start-up line names $want and the bound" ||
		not_ok "$be: start-up line" "$(cat "$D/$be/broker.log")"
	register "$be" a
	register "$be" b
	b_holder=$holder
	out=$($CONNS fair "$D/$be/a.sock" "$D/$be/b.sock" "$PORT" 90)
	kept=$(field "$out" kept)
	refused=$(field "$out" refused)
	n503=$(printf '%s\n' "$refused" | grep -c "^HTTP/1.1 503 Service Unavailable | bulkhead: connection refused: the broker is full (60 connections); this session holds 60, its fair share is 60")
	if [ "$kept" = 60 ] && [ "$n503" = 30 ]; then
		ok "$be: a session alone takes the broker's 60; each of 30 more is answered 503, naming the bound"
	else
		not_ok "$be: 60 kept, 30 answered 503" "$out"
	fi
	b_ms=$(field "$out" b_ms)
	if [ "$(field "$out" b_status)" = "HTTP/1.1 200 OK" ] && [ "$b_ms" -lt 5000 ]; then
		ok "$be: meanwhile another session's request is served (in $b_ms ms; bound 5000)"
	else
		not_ok "$be: the other session is served" "$out" "$(tail -n 5 "$D/$be/broker.log")"
	fi
	if field "$out" evicted | grep -q "bulkhead: the broker is full (60 connections): this idle connection was closed for another session's; this session holds 60, its fair share is 30"; then
		ok "$be: ... by closing one of the first session's idle connections, answered 503 with why"
	else
		not_ok "$be: an idle connection of the first session is closed for it" "$out"
	fi
	# At most 20 records a second one by one; the rest counted in one record, written a
	# second after the last (waited for, 3 s at most); the eviction recorded on its own.
	i=0
	while :; do
		one=$(grep -c '"rule":"limit:broker".*"outcome":"over_limit"' "$D/$be/audit/a.log")
		more=$(sed -n 's/.*"path":"- (\([0-9]*\) more like it.*/\1/p' "$D/$be/audit/a.log" |
			awk '{ s += $1 } END { print s + 0 }')
		[ $((one + more)) -lt 30 ] && [ $i -lt 30 ] || break
		sleep 0.1
		i=$((i + 1))
	done
	if [ $((one + more)) = 30 ] && [ "$(per_second "$D/$be/audit/a.log" limit:broker)" -le 20 ] &&
		grep -q '"rule":"limit:fair_share".*"outcome":"evicted"' "$D/$be/audit/a.log" &&
		grep -q '"status":200' "$D/$be/audit/b.log"; then
		ok "$be: audited: 30 refusals ($one one by one, $more counted) and the eviction in the first session's log, the request in the other's"
	else
		not_ok "$be: audit records" "one by one: $one, counted: $more, most in a second: $(per_second "$D/$be/audit/a.log" limit:broker)" \
			"$(cut -c1-200 "$D/$be/audit/a.log")" "$(cat "$D/$be/audit/b.log")"
	fi
	if grep -q "session a: connection refused: the broker is full" "$D/$be/broker.log"; then
		ok "$be: the host log says why connections were refused"
	else
		not_ok "$be: host log line" "$(tail -n 5 "$D/$be/broker.log")"
	fi

	# 400 idle connections (the bound raised) hold no thread each; 40 past the session's
	# bound are refused.
	start "$be-many" --event-loop "$be" --max-conns-total 1000 --max-conns 360
	register "$be-many" m
	mkfifo "$D/$be-many/in"
	$CONNS hold "$D/$be-many/m.sock" 400 < "$D/$be-many/in" > "$D/$be-many/hold.out" &
	pids="$pids $!"
	sleep 600 > "$D/$be-many/in" &
	hold_in=$!
	pids="$pids $hold_in"
	i=0; while [ ! -s "$D/$be-many/hold.out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	t=$(threads "$bpid")
	if [ "$(field "$(cat "$D/$be-many/hold.out")" kept)" = 360 ] && [ "$t" -lt 40 ]; then
		ok "$be: 360 idle connections held open (40 refused), the broker has $t threads"
	else
		not_ok "$be: idle connections hold no thread" "$(cat "$D/$be-many/hold.out")" "threads: $t"
	fi
	# The refusals past 20 a second are counted in one record, written a second after the
	# last while the session goes on, not left for its end.
	sleep 2
	one=$(grep -c '"rule":"limit:session".*"outcome":"over_limit"' "$D/$be-many/audit/m.log")
	more=$(sed -n 's/.*"path":"- (\([0-9]*\) more like it.*/\1/p' "$D/$be-many/audit/m.log" |
		awk '{ s += $1 } END { print s + 0 }')
	if [ $((one + more)) = 40 ] && [ "$more" -ge 1 ] &&
		[ "$(per_second "$D/$be-many/audit/m.log" limit:session)" -le 20 ]; then
		ok "$be: 40 refusals audited while the session lives: $one one by one, $more counted"
	else
		not_ok "$be: refusals counted and written" "one by one: $one, counted: $more" "$(tail -n 2 "$D/$be-many/audit/m.log")"
	fi
	kill "$bpid" "$hold_in" 2> /dev/null

	# 30 busy connections of one session hold --max-active (2) threads, not 30.
	start "$be-busy" --event-loop "$be" --max-active 2 --head-timeout 60
	register "$be-busy" x
	register "$be-busy" y
	mkfifo "$D/$be-busy/in"
	t0=$(threads "$bpid")
	$CONNS busy "$D/$be-busy/x.sock" 30 "$PORT" < "$D/$be-busy/in" > "$D/$be-busy/busy.out" &
	pids="$pids $!"
	sleep 600 > "$D/$be-busy/in" &
	busy_in=$!
	pids="$pids $busy_in"
	i=0; while [ ! -s "$D/$be-busy/busy.out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	t=$(threads "$bpid")
	printf 'GET http://localhost:%s/y HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" |
		timeout 10 "$CLIENT" raw "$D/$be-busy/y.sock" > "$D/$be-busy/y.out"
	# Two workers for the busy session, one for the other's request, one spare at most.
	if [ "$(head -n 1 "$D/$be-busy/y.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ] &&
		[ $((t - t0)) -le 4 ]; then
		ok "$be: 30 busy connections of a session add $((t - t0)) threads (--max-active 2); another session is served"
	else
		not_ok "$be: busy connections bounded by --max-active" "threads: $t0, then $t" "$(head -n 1 "$D/$be-busy/y.out")"
	fi
	kill "$bpid" "$busy_in" 2> /dev/null

	# 64 busy connections of one session (its --max-active, each holding a worker) do not
	# hold another session's request: workers past the first few start every 2 ms, not at the
	# loop's next sweep (a red-team round waited 14 s, the workers starting 4 a second).
	start "$be-pace" --event-loop "$be" --head-timeout 60
	register "$be-pace" x
	register "$be-pace" y
	mkfifo "$D/$be-pace/in"
	$CONNS busy "$D/$be-pace/x.sock" 64 "$PORT" < "$D/$be-pace/in" > "$D/$be-pace/busy.out" &
	pids="$pids $!"
	sleep 600 > "$D/$be-pace/in" &
	pace_in=$!
	pids="$pids $pace_in"
	i=0; while [ ! -s "$D/$be-pace/busy.out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	t0=$(date +%s%N)
	printf 'GET http://localhost:%s/y HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" |
		timeout 30 "$CLIENT" raw "$D/$be-pace/y.sock" > "$D/$be-pace/y.out"
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ "$(head -n 1 "$D/$be-pace/y.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ] && [ $ms -lt 5000 ]; then
		ok "$be: another session's request is served in $ms ms beside 64 busy connections"
	else
		not_ok "$be: another session's request beside 64 busy connections (within 5 s)" \
			"$ms ms" "$(head -n 1 "$D/$be-pace/y.out")"
	fi
	kill "$bpid" "$pace_in" 2> /dev/null

	# Bursts of requests handed back and forth between the loop and the workers: a new
	# worker starts only when every worker has a connection to serve, so the workers never
	# outnumber the connections served at once (--max-active 8), however work changes hands.
	start "$be-burst" --event-loop "$be" --max-active 8
	register "$be-burst" z
	t0=$(threads "$bpid")
	out=$($CONNS burst "$D/$be-burst/z.sock" "$PORT" 40 6)
	t=$(threads "$bpid")
	if [ "$(field "$out" ok)" = 240 ] && [ $((t - t0)) -le 8 ]; then
		ok "$be: 40 connections in bursts, 240 requests served by $((t - t0)) workers (--max-active 8)"
	else
		not_ok "$be: workers bounded by --max-active in bursts" "$out" "threads: $t0, then $t"
	fi
	kill "$bpid" 2> /dev/null

	# A request waiting for a worker behind its own session's busy ones (bodies sent a byte
	# at a time) is answered once its head's time (--head-timeout 2) has passed, not kept for
	# as long as they go on.
	start "$be-wait" --event-loop "$be" --max-active 2 --head-timeout 2 --io-timeout 30
	register "$be-wait" w
	out=$($CONNS trickle "$D/$be-wait/w.sock" 2 "$PORT" 8)
	ms=$(field "$out" ms)
	if [ "$(field "$out" status)" = "HTTP/1.1 503 Service Unavailable" ] &&
		[ "$(field "$out" why)" = "bulkhead: no worker for this request in 2 s: this session has 2 requests in progress, its limit now" ] &&
		[ "$ms" -ge 1500 ] 2> /dev/null && [ "$ms" -lt 6000 ] &&
		[ "$(field "$out" closed)" = True ] && [ "$(field "$out" reset)" = False ]; then
		ok "$be: a request waiting behind its session's 2 busy ones is answered 503 after $ms ms (--head-timeout 2), saying why, and closed cleanly"
	else
		not_ok "$be: the wait for a worker is bounded" "$out" "$(tail -n 3 "$D/$be-wait/broker.log")"
	fi
	if grep -q '"rule":"limit:active".*"status":503.*"outcome":"over_limit"' "$D/$be-wait/audit/w.log"; then
		ok "$be: ... and audited over_limit, limit:active"
	else
		not_ok "$be: the wait's end audited" "$(cat "$D/$be-wait/audit/w.log")"
	fi
	kill "$bpid" 2> /dev/null

	# --- the idle deadline ----------------------------------------------------------------
	out=$($CONNS idle "$D/$be/b.sock" "$PORT")
	silent=$(field "$out" silent)
	used=$(field "$out" used)
	case $silent in "HTTP/1.1 408 Request Timeout"*"bulkhead: idle for 3 s: connection closed"*) s_ok=1 ;; *) s_ok= ;; esac
	case $used in "HTTP/1.1 408 Request Timeout"*) u_ok=1 ;; *) u_ok= ;; esac
	if [ "$(field "$out" first)" = "HTTP/1.1 200 OK" ] && [ -n "$s_ok" ] && [ -n "$u_ok" ]; then
		ok "$be: a silent connection and one idle after a request get 408 after --idle-timeout 3 ($(field "$out" silent_s) s, $(field "$out" used_s) s)"
	else
		not_ok "$be: idle deadline" "$out"
	fi
	if [ "$(grep -c '"rule":"limit:idle".*"status":408.*"outcome":"idle_timeout"' "$D/$be/audit/b.log")" -ge 2 ]; then
		ok "$be: both idle closes audited"
	else
		not_ok "$be: idle closes audited" "$(cat "$D/$be/audit/b.log")"
	fi

	# --- a session that ends closes its idle connections ----------------------------------
	python3 - "$D/$be/b.sock" "$D/$be/end.ready" > "$D/$be/end.out" << 'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
open(sys.argv[2], "w").close()
t = time.monotonic()
try:
    print("closed" if s.recv(100) == b"" else "data", round(time.monotonic() - t, 1))
except OSError as e:
    print("error", e)
PY
	endpid=$!
	i=0; while [ ! -e "$D/$be/end.ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	sleep 0.2 # the loop has parked it
	kill "$b_holder" 2> /dev/null # session b's registration ends
	wait "$endpid"
	case $(cat "$D/$be/end.out") in
	"closed "*) ok "$be: ending a session closes its idle connections ($(cat "$D/$be/end.out"))" ;;
	*) not_ok "$be: ending a session closes its idle connections" "$(cat "$D/$be/end.out")" ;;
	esac
	kill "$be_pid" 2> /dev/null
done

# --- budgets for bodies buffered whole ------------------------------------------------------
start buf --buffer-limit-session 100000 --buffer-limit-total 150000
register buf s1
register buf s2
register buf s3
out=$($CONNS buffer "$D/buf/s1.sock" "$D/buf/s2.sock" "$D/buf/s3.sock" "$PORT")
case $(field "$out" session_over) in
"HTTP/1.1 503 Service Unavailable | bulkhead: the session's budget for bodies buffered whole is spent"*)
	ok "a body past the session's buffer budget: 503 at once, naming it" ;;
*) not_ok "session buffer budget" "$out" ;;
esac
case $(field "$out" broker_over) in
"HTTP/1.1 503 Service Unavailable | bulkhead: the broker's budget for bodies buffered whole is spent"*)
	ok "a body past the broker's buffer budget (another session's): 503, naming it" ;;
*) not_ok "broker buffer budget" "$out" ;;
esac
if [ "$(field "$out" held_done)" = "HTTP/1.1 200 OK" ] &&
	[ "$(field "$out" after)" = "HTTP/1.1 200 OK | " ]; then
	ok "the bodies within budget are served, and what they took comes back"
else
	not_ok "budget given back" "$out"
fi
if grep -q '"status":503.*"outcome":"over_budget"' "$D/buf/audit/s1.log" &&
	grep -q '"status":503.*"outcome":"over_budget"' "$D/buf/audit/s3.log"; then
	ok "both refusals audited over_budget"
else
	not_ok "buffer refusals audited" "$(cat "$D/buf/audit/s1.log" "$D/buf/audit/s3.log")"
fi
kill "$bpid" 2> /dev/null

# --- a tunnel's TLS trickled: the head's deadline holds for its handshake and its records ---
start tls --head-timeout 2 --io-timeout 30
register tls t
for what in hello record; do
	out=$($CONNS tls-trickle "$D/tls/t.sock" "$PORT" "$what")
	s=$(field "$out" ended_s)
	if [ "$s" != None ] && [ "$(echo "$s >= 1.5 && $s < 6" | bc)" = 1 ]; then
		ok "a tunnel's TLS $what sent a byte every 0.3 s is ended after $s s (--head-timeout 2)"
	else
		not_ok "a trickled TLS $what is ended by the head's deadline" "$out"
	fi
done
if grep -q '"status":408,"outcome":"guest_timeout"' "$D/tls/audit/t.log" &&
	[ "$(grep -c '"status":408,"outcome":"guest_timeout"' "$D/tls/audit/t.log")" -ge 2 ]; then
	ok "... both audited 408 guest_timeout"
else
	not_ok "trickled TLS audited" "$(cat "$D/tls/audit/t.log")" "$(tail -n 4 "$D/tls/broker.log")"
fi
kill "$bpid" 2> /dev/null

# --- busy connections, a stalled body ------------------------------------------------------
start busy --max-conns-total 20 --io-timeout 2
register busy a
register busy b
mkfifo "$D/busy/in"
$CONNS busy "$D/busy/a.sock" 20 "$PORT" < "$D/busy/in" > "$D/busy/busy.out" &
pids="$pids $!"
sleep 600 > "$D/busy/in" &
busy_in=$!
pids="$pids $busy_in"
i=0; while [ ! -s "$D/busy/busy.out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
printf 'GET http://localhost:%s/b HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" |
	timeout 10 "$CLIENT" raw "$D/busy/b.sock" > "$D/busy/b.out"
if [ "$(head -n 1 "$D/busy/b.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ] &&
	grep -q "session a: the broker is full (20 connections): this busy connection was closed for another session's" "$D/busy/broker.log" &&
	grep -q '"rule":"limit:fair_share".*"outcome":"evicted"' "$D/busy/audit/a.log"; then
	ok "a session holding the whole broker with requests in progress loses one to another session's request, audited"
else
	not_ok "busy connections are evicted too" "$(head -n 1 "$D/busy/b.out")" "$(tail -n 3 "$D/busy/broker.log")"
fi
kill "$busy_in" 2> /dev/null
i=0; while [ "$(wc -l < "$D/busy/busy.out")" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
answers=$(tail -n 1 "$D/busy/busy.out")
case $answers in
*'"HTTP/1.1 503 Service Unavailable | '*'bulkhead: the broker is full (20 connections): this busy connection was closed for another session'"'"'s'*)
	ok "... and the request cut is answered 503, saying why" ;;
*) not_ok "the busy connection cut is answered" "$answers" ;;
esac
stall=$(python3 - "$D/busy/b.sock" "$PORT" << 'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(15)
port = int(sys.argv[2])
s.sendall(b"POST http://localhost:%d/stall HTTP/1.1\r\nHost: localhost:%d\r\n"
          b"Content-Length: 100\r\n\r\n0123456789" % (port, port))
data = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError as e:
    data += b" (%s)" % str(e).encode()
print(data.decode(errors="replace").replace("\r\n", " | "))
PY
)
case $stall in
"HTTP/1.1 408 Request Timeout |"*"bulkhead: the request stalled: nothing arrived for 2 s"*)
	ok "a body that stalls gets 408 after --io-timeout, saying so" ;;
*) not_ok "a stalled body is answered 408" "$stall" ;;
esac
kill "$bpid" 2> /dev/null

# --- the audit log's file system full ----------------------------------------------------
mkdir "$D/full"
if ! mount -t tmpfs -o size=256k,mode=0700 tmpfs "$D/full" 2> "$D/mount.err"; then
	skip "a full audit file system stops forwarding" "cannot mount a small tmpfs here: $(cat "$D/mount.err")"
else
	"$BROKER" --control "$D/full.sock" --secrets-file "$D/secrets.json" \
		--ca-file "$D/ca.pem" --audit-dir "$D/full" 2> "$D/full.log" &
	fpid=$!
	wait_socket "$D/full.sock" 5
	mkdir -m 700 "$D/fa"
	ln -s "$D/full.sock" "$D/fa/ctl.sock"
	register fa s
	get() { printf 'GET http://localhost:%s/%s HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" "$1" |
		timeout 10 "$CLIENT" raw "$D/fa/s.sock" | head -c 400 | tr -d '\r'; }
	first=$(get before | head -n 1)
	dd if=/dev/zero of="$D/full/filler" bs=4k 2> /dev/null
	full=$(get during)
	rm -f "$D/full/filler"
	after=$(get after | head -n 1)
	case $full in
	"HTTP/1.1 503 Service Unavailable"*"the session's audit log has no room left on its disk; nothing is forwarded until it can be"*)
		f_ok=1 ;;
	*) f_ok= ;;
	esac
	if [ "$first" = "HTTP/1.1 200 OK" ] && [ -n "$f_ok" ] && [ "$after" = "HTTP/1.1 200 OK" ]; then
		ok "the audit log's file system full: 503 and nothing forwarded; served again once a record fits"
	else
		not_ok "a full audit file system stops forwarding" "before: $first" "during: $full" "after: $after"
	fi
	# 40 requests at once with room for a few records: each one answered 200 has its record.
	dd if=/dev/zero of="$D/full/filler" bs=4k count=$(($(df -k --output=avail "$D/full" | tail -n 1) / 4 - 50)) 2> /dev/null
	python3 - "$D/fa/s.sock" "$PORT" > "$D/burst.out" << 'PY'
import socket, sys, threading
port, codes = int(sys.argv[2]), []
def one(i):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
    s.sendall(b"GET http://localhost:%d/burst-%d-%s HTTP/1.1\r\nConnection: close\r\n\r\n" % (port, i, b"p" * 6000))
    data = b""
    try:
        while True:
            c = s.recv(65536)
            if not c: break
            data += c
    except OSError:
        pass
    codes.append(data[9:12].decode())
ts = [threading.Thread(target=one, args=(i,)) for i in range(40)]
[t.start() for t in ts]; [t.join() for t in ts]
print(codes.count("200"), codes.count("503"))
PY
	read -r n200 n503 < "$D/burst.out"
	rec=$(grep -c '"path":"/burst-.*"status":200' "$D/full/s.log")
	if [ -n "$n200" ] && [ "$n200" = "$rec" ] && [ $((n200 + n503)) = 40 ] && [ "$n503" -gt 0 ]; then
		ok "40 requests at once with room for few records: $n200 served, each recorded; $n503 refused"
	else
		not_ok "a burst near a full disk: every request served is recorded" "served $n200, refused $n503, records $rec"
	fi
	rm -f "$D/full/filler"
	kill "$fpid" 2> /dev/null
	wait "$fpid" 2> /dev/null
	umount "$D/full"
fi

# --- a session's audit log quota ---------------------------------------------------------
start quota --audit-max-bytes 70000
register quota q1
register quota q2
n200=0 n503=0
for i in $(seq 1 20); do
	printf 'GET http://localhost:%s/q/%s HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" "$i" |
		timeout 10 "$CLIENT" raw "$D/quota/q1.sock" > "$D/quota/r.out"
	case $(head -n 1 "$D/quota/r.out" | tr -d '\r') in
	"HTTP/1.1 200 OK") n200=$((n200 + 1)) ;;
	"HTTP/1.1 503 Service Unavailable") grep -q "reached its quota of 70000 bytes" "$D/quota/r.out" && n503=$((n503 + 1)) ;;
	esac
done
printf 'GET http://localhost:%s/q2 HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" |
	timeout 10 "$CLIENT" raw "$D/quota/q2.sock" > "$D/quota/q2.out"
if [ "$n200" -ge 1 ] && [ $((n200 + n503)) = 20 ] && [ "$n503" -ge 1 ] &&
	[ "$(grep -c '"status":200' "$D/quota/audit/q1.log")" = "$n200" ] &&
	[ "$(head -n 1 "$D/quota/q2.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ]; then
	ok "a session at its audit quota: $n200 served and recorded, then 503 naming it; another session served"
else
	not_ok "audit quota per session" "served $n200, refused $n503" "$(head -n 1 "$D/quota/q2.out")"
fi
kill "$bpid" 2> /dev/null

# --- a hard descriptor limit of 200 --------------------------------------------------------
(ulimit -n 200 && exec "$BROKER" --control "$D/fd.sock" --secrets-file "$D/secrets.json" \
	--ca-file "$D/ca.pem" 2> "$D/fd.log") &
bpid=$!
pids="$pids $bpid"
wait_socket "$D/fd.sock" 5
mkdir -m 700 "$D/fd"
ln -s "$D/fd.sock" "$D/fd/ctl.sock"
register fd f1
register fd f2
out=$($CONNS fair "$D/fd/f1.sock" "$D/fd/f2.sock" "$PORT" 300)
bound=$(sed -n 's/.*; at most \([0-9]*\) connections.*/\1/p' "$D/fd.log")
if [ -n "$bound" ] && [ "$bound" -lt 100 ] && [ "$(field "$out" kept)" = "$bound" ] &&
	[ "$(field "$out" refused | grep -c '^HTTP/1.1 503 ')" = $((300 - bound)) ] &&
	[ "$(field "$out" b_status)" = "HTTP/1.1 200 OK" ] && kill -0 "$bpid" 2> /dev/null; then
	ok "descriptor limit 200: the bound follows it ($bound); the other $((300 - bound)) of 300 answered 503; another session served; the broker is up"
else
	not_ok "descriptor limit 200" "$out" "$(head -n 3 "$D/fd.log")"
fi
plan_done
