#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_limits.sh: what one session can take from a shared broker, measured on
# real shared brokers (bulkhead-broker --control) with sessions registered as `bulkhead run
# --broker` registers them, in front of https-echo.
#  - Requests held for approval keep their bodies in the broker's memory: past a session's or
#    the broker's budget of held bytes or requests, a request is answered 503 at once and
#    recorded as over_budget; what a decided request held is given back.
#  - A request head trickled a byte at a time gets 408 once its deadline passes.
#  - Past --max-conns, a session's new connections are closed at once, and another session is
#    still served.
#  - Started with a low soft RLIMIT_NOFILE, the broker raises it to the hard limit: one
#    session's idle connections do not stop another session being served.
#  - A stale control socket is replaced at start; a live one is refused.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BIN/bulkhead-broker
require "broker limits" "$ECHO" "$CLIENT" "$BROKER" openssl python3
export BULKHEAD_RUNDIR="$TMP/run"
mkdir -m 700 "$BULKHEAD_RUNDIR"
D=$TMP
if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" --log "$D/up.log" > "$D/port" 2> /dev/null &
pids="$pids $!"
i=0; while [ ! -s "$D/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
printf '{"TOK": "limits-test-secret-2291"}\n' > "$D/secrets.json"
chmod 600 "$D/secrets.json"
cat > "$D/policy.json" << EOF2
{ "require_approval": [ { "host": "localhost", "methods": ["POST"], "path_prefix": "/w/" } ],
  "approval_ttl_seconds": 120 }
EOF2
cat > "$D/scope.json" << EOF2
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
mkdir -m 700 "$D/audit"
"$BROKER" --control "$BULKHEAD_RUNDIR/broker.sock" --policy "$D/policy.json" \
	--secrets-file "$D/secrets.json" --ca-file "$D/ca.pem" --audit-dir "$D/audit" \
	--hold-limit-session 100000,2 --hold-limit-total 150000,3 --head-timeout 1 --max-conns 40 \
	2> "$D/broker.log" &
pids="$pids $!"
CTL=$BULKHEAD_RUNDIR/broker.sock
wait_socket "$CTL" 5

# register CTL NAME: a session NAME registered with the broker at CTL, held by a FIFO writer.
register() { broker_register "$1" "$2" "$D/scope.json" "$D/$2.sock" "$D"; }
# send NAME OUT PATH BYTES: a POST with a body of BYTES bytes on session NAME, in the background.
send() {
	{
		printf 'POST http://localhost:%s%s HTTP/1.1\r\nContent-Length: %s\r\nConnection: close\r\n\r\n' \
			"$PORT" "$3" "$4"
		head -c "$4" /dev/zero | tr '\0' x
	} | timeout 60 "$CLIENT" raw "$D/$1.sock" > "$D/$2" &
}
pending() { "$BIN/bulkhead" approvals list --json | grep -c '"id":'; }
wait_pending() {
	i=0; while [ "$(pending)" != "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}
status() { head -n 1 "$D/$1" | tr -d '\r'; }
over_budget() { # NAME OUT WHICH
	if [ "$(status "$2")" = "HTTP/1.1 503 Service Unavailable" ] &&
		grep -q "the $3's budget for requests held for approval is spent" "$D/$2"; then
		ok "$1: 503 at once, naming the $3's budget"
	else
		not_ok "$1: 503 over the $3's budget" "$(cat "$D/$2")" "$(tail -n 3 "$D/broker.log")"
	fi
}
register "$CTL" s1
register "$CTL" s2

send s1 a.out /w/a 1000
send s1 b.out /w/b 1000
wait_pending 2
send s1 c.out /w/c 1000
wait $!
over_budget "a third held request in a session allowed two" c.out session
send s2 d.out /w/d 1000
wait_pending 3
send s2 e.out /w/e 1000
wait $!
over_budget "a fourth held request in a broker allowed three, from another session" e.out broker
if [ "$(pending)" = 3 ] && [ ! -s "$D/a.out" ] && [ ! -s "$D/d.out" ]; then
	ok "the requests within the budgets are still held"
else
	not_ok "held requests within budget stay held" "pending: $(pending)"
fi
for id in $("$BIN/bulkhead" approvals list --json | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p'); do
	"$BIN/bulkhead" approvals deny "$id" > /dev/null 2>&1
done
wait_pending 0
send s1 big.out /w/big 150000
wait $!
over_budget "a 150000-byte body in a session allowed 100000 bytes" big.out session
if grep '"path":"/w/big"' "$D/audit/s1.log" | grep -q '"status":503,"outcome":"over_budget"'; then
	ok "the refused request is recorded: 503, over_budget"
else
	not_ok "over-budget request recorded" "$(cat "$D/audit/s1.log")"
fi
send s1 f.out /w/f 60000
wait_pending 1
if [ "$(pending)" = 1 ]; then
	ok "decided requests gave their budget back: a 60000-byte body is held again"
else
	not_ok "budget given back" "pending: $(pending)" "$(cat "$D/f.out")"
fi
"$BIN/bulkhead" approvals deny "$("$BIN/bulkhead" approvals list --json | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p')" > /dev/null 2>&1

# A head trickled a byte at a time: 408 once the 1-second deadline has passed.
python3 - "$D/s2.sock" "$PORT" > "$D/slow.out" << 'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
head = ("GET http://localhost:%s/slow HTTP/1.1\r\nX-Pad: %s\r\n\r\n" % (sys.argv[2], "p" * 200)).encode()
got = b""
s.settimeout(0.2)
for b in head:
    try:
        s.send(bytes([b]))
    except OSError:
        break
    try:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    except socket.timeout:
        pass
    except OSError:
        break
s.settimeout(5)
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
except OSError:
    pass
print(got.decode(errors="replace"))
PY
if head -n 1 "$D/slow.out" | grep -q '^HTTP/1.1 408 Request Timeout' &&
	grep -q '"status":408,"outcome":"guest_timeout"' "$D/audit/s2.log" && [ ! -s "$D/up.log" ]; then
	ok "a trickled head gets 408 within its deadline, recorded, and nothing goes upstream"
else
	not_ok "slow head: 408" "$(cat "$D/slow.out")" "$(grep 408 "$D/audit/s2.log")"
fi

# idle SOCK N: N connections to SOCK that send nothing; prints how many the broker refused at
# once, how many it kept, and how many of the refused were answered 503, then keeps those
# open until its stdin closes.
cat > "$D/idle.py" << 'PY'
import select, socket, sys, time
socks, failed = [], 0
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(sys.argv[1])
        socks.append(s)
    except OSError:
        failed += 1
time.sleep(1)
closed = answered = 0
for s in socks:
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        continue
    data = s.recv(4096)
    closed += 1
    if data.startswith(b"HTTP/1.1 503 ") and b"limit" in data:
        answered += 1
print(closed + failed, len(socks) - closed, answered, flush=True)
sys.stdin.read()
PY
# served NAME SOCK: one request on SOCK is answered within 10 s.
served() {
	printf 'GET http://localhost:%s/other HTTP/1.1\r\nConnection: close\r\n\r\n' "$PORT" |
		timeout 10 "$CLIENT" raw "$2" > "$D/other.out"
	if [ "$(status other.out)" = "HTTP/1.1 200 OK" ]; then
		ok "$1"
	else
		not_ok "$1" "$(cat "$D/other.out")" "$(tail -n 5 "$D/$3")"
	fi
}
mkfifo "$D/idle1.in"
python3 "$D/idle.py" "$D/s1.sock" 60 < "$D/idle1.in" > "$D/idle1.out" &
pids="$pids $!"
sleep 600 > "$D/idle1.in" &
idle1=$!
pids="$pids $!"
i=0; while [ ! -s "$D/idle1.out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
read -r n kept answered < "$D/idle1.out"
if [ -n "$n" ] && [ "$n" -ge 20 ] && [ "$kept" -ge 1 ] && [ "$kept" -le 40 ] &&
	[ "$answered" = "$n" ]; then
	ok "60 idle connections in a session allowed 40: $n refused at once, each answered 503, $kept kept"
else
	not_ok "the per-session connection cap holds, each refusal answered 503" \
		"refused at once: '$n', kept: '$kept', answered 503: '$answered'"
fi
served "... and another session is served meanwhile" "$D/s2.sock" broker.log
kill $idle1 2> /dev/null

# A broker started with a soft descriptor limit of 200 (the usual 1024, scaled down): 300 idle
# connections from one session need more; the broker must have raised its own limit.
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 2000 ]; then
	skip "descriptor limit raised" "the hard RLIMIT_NOFILE here is $(ulimit -Hn)"
else
	CTL2=$D/broker2.sock
	(ulimit -Sn 200 && exec "$BROKER" --control "$CTL2" --secrets-file "$D/secrets.json" \
		--ca-file "$D/ca.pem" 2> "$D/broker2.log") &
	pids="$pids $!"
	wait_socket "$CTL2" 5
	register "$CTL2" f1
	register "$CTL2" f2
	mkfifo "$D/idle2.in"
	python3 "$D/idle.py" "$D/f1.sock" 300 < "$D/idle2.in" > "$D/idle2.out" &
	pids="$pids $!"
	sleep 600 > "$D/idle2.in" &
	pids="$pids $!"
	i=0; while [ ! -s "$D/idle2.out" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	served "300 idle connections of one session (soft limit 200 at start): another is served" \
		"$D/f2.sock" broker2.log
fi

# The control socket at start: one left by a broker that died is replaced; a live broker's is
# refused, and that broker goes on serving; a file that is not a socket is left alone.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/stale.sock"
"$BROKER" --control "$D/stale.sock" --secrets-file "$D/secrets.json" 2> "$D/stale.log" &
pids="$pids $!"
i=0; while ! grep -q 'control socket' "$D/stale.log" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
register "$D/stale.sock" st1
if grep -q 'was left by a broker that is gone; replacing it' "$D/stale.log" &&
	grep -q '"ok":true' "$D/st1.reg"; then
	ok "a stale control socket is replaced, with a message, and the new broker serves"
else
	not_ok "stale control socket replaced" "$(cat "$D/stale.log" "$D/st1.reg")"
fi
timeout 10 "$BROKER" --control "$CTL" --secrets-file "$D/secrets.json" 2> "$D/live.log"
rc=$?
register "$CTL" s3
if [ $rc != 0 ] && grep -q 'a broker is already serving there' "$D/live.log" &&
	grep -q '"ok":true' "$D/s3.reg"; then
	ok "a live broker's control socket is refused; that broker still registers sessions"
else
	not_ok "live control socket refused" "rc=$rc" "$(cat "$D/live.log" "$D/s3.reg")"
fi
echo keep > "$D/plain"
timeout 10 "$BROKER" --control "$D/plain" --secrets-file "$D/secrets.json" 2> "$D/plain.log"
rc=$?
if [ $rc != 0 ] && [ "$(cat "$D/plain")" = keep ]; then
	ok "a file that is not a socket is not replaced: $(cat "$D/plain.log")"
else
	not_ok "a plain file is left alone" "rc=$rc" "$(cat "$D/plain.log")"
fi
plan_done
