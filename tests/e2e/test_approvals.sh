#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# Per-request approval, host only: a shared broker (bulkhead broker) with a global policy that
# holds writes to one API and pushes to main; sessions registered as `bulkhead run --broker`
# registers them; `bulkhead approvals` deciding. Approve -> the request completes; deny -> 403
# naming the approval and the reason; an approval is used once and never covers a second
# request; 100 held requests from 10 sessions; a session's end denies what it has pending;
# an undecided approval expires.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BIN/bulkhead-broker
for f in "$ECHO" "$CLIENT" "$BROKER"; do
	if [ ! -x "$f" ]; then
		skip "approvals" "$f not built (make test builds it)"; plan_done; exit 0
	fi
done
command -v openssl > /dev/null || { skip "approvals" "openssl missing"; plan_done; exit 0; }
export BULKHEAD_RUNDIR="$TMP/run"
mkdir -m 700 "$BULKHEAD_RUNDIR"
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/up.log" > "$TMP/port" 2> /dev/null &
pids="$pids $!"
i=0; while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$TMP/port")
printf '{"TOK": "approval-test-secret-77c1"}\n' > "$TMP/secrets.json"
chmod 600 "$TMP/secrets.json"
cat > "$TMP/policy.json" << EOF2
{ "require_approval": [
    { "host": "localhost", "methods": ["POST", "DELETE"], "path_prefix": "/w/" },
    { "host": "localhost", "git_ref": "refs/heads/main" } ],
  "approval_ttl_seconds": 120 }
EOF2
cat > "$TMP/scope.json" << EOF2
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
"$BULKHEAD" broker --policy "$TMP/policy.json" --secrets-file "$TMP/secrets.json" \
	--ca-file "$TMP/ca.pem" --audit-dir "$TMP" 2> "$TMP/broker.log" &
pids="$pids $!"
CTL=$BULKHEAD_RUNDIR/broker.sock
wait_socket "$CTL" 5

# register NAME: a session NAME registered with the shared broker, held by a writer on a FIFO.
register() {
	broker_register "$CTL" "$1" "$TMP/scope.json" "$TMP/$1.sock" "$TMP"
	eval "holder_$1=\$holder"
}
# send NAME OUT METHOD PATH [BODY]: one request on session NAME's socket, in the background.
send() {
	body=${5:-}
	printf '%s http://localhost:%s%s HTTP/1.1\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
		"$3" "$PORT" "$4" "${#body}" "$body" | "$CLIENT" raw "$TMP/$1.sock" > "$TMP/$2" &
}
pending() { "$BULKHEAD" approvals list --json | grep -c '"id":'; }
wait_pending() { # N
	i=0; while [ "$(pending)" -lt "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}
ids() { "$BULKHEAD" approvals list --json | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p'; }
status() { head -n 1 "$TMP/$1" | tr -d '\r'; }

register s1
grep -q '"ok":true' "$TMP/s1.reg" && ok "a session registers with the shared broker" ||
	not_ok "session registers" "$(cat "$TMP/s1.reg" "$TMP/broker.log")"

send s1 get.out GET /w/items
wait $!
check_eq "a read-only request is not held" "HTTP/1.1 200 OK" "$(status get.out)"

send s1 post1.out POST /w/items '{"name":"x"}'
p1=$!
wait_pending 1
ID=$(ids)
"$BULKHEAD" approvals show "$ID" > "$TMP/show" 2>&1
if grep -q "^request: POST http://localhost:$PORT/w/items" "$TMP/show" &&
	grep -q '^sha256:  [0-9a-f]\{64\}$' "$TMP/show" && grep -q '^body:    {"name":"x"}' "$TMP/show" &&
	grep -q '^secret:  TOK' "$TMP/show" && grep -q '^session: s1' "$TMP/show" && [ ! -s "$TMP/post1.out" ] &&
	! grep -q 'POST /w/items' "$TMP/up.log"; then
	ok "a write is held: nothing upstream yet; show gives session, request, secret, body, SHA-256"
else
	not_ok "held write shown" "$(cat "$TMP/show")" "$(cat "$TMP/post1.out")"
fi
"$BULKHEAD" approvals approve "$ID" > /dev/null 2>&1
wait $p1
if [ "$(status post1.out)" = "HTTP/1.1 200 OK" ] && grep -q 'POST /w/items' "$TMP/up.log" &&
	grep -q 'X-Body-Bytes: 12' "$TMP/post1.out"; then
	ok "approve: the held request goes upstream, body and all, and its answer comes back"
else
	not_ok "approve completes the request" "$(cat "$TMP/post1.out")"
fi
"$BULKHEAD" approvals approve "$ID" > /dev/null 2> "$TMP/again"
rc=$?
if [ $rc != 0 ] && grep -q "no pending approval $ID" "$TMP/again"; then
	ok "an approval is used once: approving it again fails"
else
	not_ok "approval used once" "rc=$rc" "$(cat "$TMP/again")"
fi
send s1 post2.out POST /w/items '{"name":"x"}'
p2=$!
wait_pending 1
ID2=$(ids)
if [ -n "$ID2" ] && [ "$ID2" != "$ID" ]; then
	ok "the same request again is held again, under a new id"
else
	not_ok "a second request needs its own approval" "first=$ID second=$ID2"
fi
"$BULKHEAD" approvals deny "$ID2" --reason "not today" > /dev/null 2>&1
wait $p2
if [ "$(status post2.out)" = "HTTP/1.1 403 Forbidden" ] &&
	grep -q "approval $ID2 denied: not today" "$TMP/post2.out"; then
	ok "deny: 403 naming the approval and the reason"
else
	not_ok "deny gives 403 with reason" "$(cat "$TMP/post2.out")"
fi
grep "\"approval\":\"$ID\"" "$TMP/s1.log" | grep -q '"layer":"approval".*"status":200' &&
	grep "\"approval\":\"$ID2\"" "$TMP/s1.log" | grep -q '"decision":"deny"' &&
	ok "the audit log records both decisions with their approval ids and layer" ||
	not_ok "audit of approvals" "$(cat "$TMP/s1.log")"

# git pushes: held only when they update the guarded ref (read from the pushed commands).
Z=0000000000000000000000000000000000000000
A=1111111111111111111111111111111111111111
pkt() { printf '%04x%s' $((${#1} + 4)) "$1"; } # a pkt-line; its newline is optional
body_main="$(pkt "$Z $A refs/heads/main")0000PACK"
body_topic="$(pkt "$Z $A refs/heads/topic")0000PACK"
send s1 topic.out POST /repo.git/git-receive-pack "$body_topic"
wait $!
check_eq "a push to another ref is not held" "HTTP/1.1 200 OK" "$(status topic.out)"
send s1 main.out POST /repo.git/git-receive-pack "$body_main"
pm=$!
wait_pending 1
"$BULKHEAD" approvals show "$(ids)" > "$TMP/show"
if grep -q "^git ref: $Z $A refs/heads/main" "$TMP/show"; then
	ok "a push to main is held, and show lists the ref it updates"
else
	not_ok "push to main held with its ref" "$(cat "$TMP/show")"
fi
"$BULKHEAD" approvals approve "$(ids)" > /dev/null 2>&1
wait $pm
check_eq "the approved push goes through" "HTTP/1.1 200 OK" "$(status main.out)"

# 100 held requests from 10 sessions at once.
for s in 1 2 3 4 5 6 7 8 9 10; do register "m$s"; done
for s in 1 2 3 4 5 6 7 8 9 10; do
	for r in 1 2 3 4 5 6 7 8 9 10; do send "m$s" "m$s.$r.out" DELETE "/w/$s/$r"; done
done
wait_pending 100
nsess=$("$BULKHEAD" approvals list --json | sed -n 's/.*"session": "\(m[0-9]*\)".*/\1/p' | sort -u | wc -l)
check_eq "100 held requests from 10 sessions are all listed" "100 10" "$(pending) $nsess"
for id in $(ids); do "$BULKHEAD" approvals approve "$id" > /dev/null 2>&1 & done
wait_pending 0
i=0; while [ "$(cat "$TMP"/m[0-9]*.out 2> /dev/null | grep -c '^HTTP/1.1 200')" -lt 100 ] && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1)); done
check_eq "all 100 complete with 200 once approved" 100 "$(cat "$TMP"/m[0-9]*.out | grep -c '^HTTP/1.1 200')"

# A guest that gives up on a held request (closes its connection) withdraws it: it leaves
# the list at once, not when its approval would have expired (120 s here), recorded so.
register g1
send g1 gone.out POST /w/gone '{}'
pg=$!
wait_pending 1
kill "$pg"
i=0; while [ "$(pending)" -gt 0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(pending)" = 0 ] && grep -q '"path":"/w/gone".*"decision":"deny".*"outcome":"guest_closed"' "$TMP/g1.log" &&
	! grep -q 'POST /w/gone' "$TMP/up.log"; then
	ok "a held request whose guest closed its connection leaves the list within $((i / 10)).$((i % 10)) s, recorded guest_closed"
else
	not_ok "a held request withdrawn by its guest" "pending: $(pending)" "$(grep /w/gone "$TMP/g1.log")"
fi

# A held request whose connection is taken for another session (a broker of 4 connections,
# all of them held) is answered 503 at once, saying why, and leaves the list.
mkdir -m 700 "$BULKHEAD_RUNDIR/q1" "$TMP/q1"
"$BROKER" --control "$BULKHEAD_RUNDIR/q1/broker.ctl" --secrets-file "$TMP/secrets.json" \
	--ca-file "$TMP/ca.pem" --policy "$TMP/policy.json" --audit-dir "$TMP/q1" \
	--max-conns-total 4 2> "$TMP/q1.err" &
qpid=$!
pids="$pids $qpid"
wait_socket "$BULKHEAD_RUNDIR/q1/broker.ctl" 5
for q in qa qb; do
	broker_register "$BULKHEAD_RUNDIR/q1/broker.ctl" "$q" "$TMP/scope.json" "$TMP/$q.sock" "$TMP/q1"
done
for r in 1 2 3 4; do send qa "qa.$r.out" POST "/w/q$r" '{}'; done
wait_pending 4
send qb qb.out GET /w/read
wait $!
i=0; while ! grep -qs '^HTTP/1.1 503' "$TMP"/qa.*.out && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
cut=$(grep -l '^HTTP/1.1 503' "$TMP"/qa.*.out 2> /dev/null | head -n 1)
if [ "$(status qb.out)" = "HTTP/1.1 200 OK" ] && [ -n "$cut" ] &&
	grep -q 'withdrawn: the broker is full (4 connections).*closed for another session' "$cut" &&
	[ "$(pending)" = 3 ] && grep -q '"decision":"deny".*"outcome":"evicted"' "$TMP/q1/qa.log"; then
	ok "a held request taken for another session is answered 503 saying why, and leaves the list: $(tail -n 1 "$cut")"
else
	not_ok "a held request taken for another session" "qb: $(status qb.out)" "cut: $(cat "$cut" 2> /dev/null)" \
		"pending: $(pending)" "$(tail -n 3 "$TMP/q1.err")"
fi
kill "$qpid"
wait "$qpid" 2> /dev/null
rm -rf "$BULKHEAD_RUNDIR/q1"
wait_pending_none() { i=0; while [ "$(pending)" -gt 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done; }
wait_pending_none

# A session that ends denies what it has pending.
register e1
send e1 end.out POST /w/end '{}'
pe=$!
wait_pending 1
eval "kill \$holder_e1"
wait $pe
# (The session's guest is gone with it: its connection is cut, so the denial is in the log.)
if ! grep -q '^HTTP/1.1 200' "$TMP/end.out" && [ "$(pending)" = 0 ] &&
	grep -q '"decision":"deny".*' "$TMP/e1.log" && grep -q 'denied: the session ended' "$TMP/broker.log" &&
	! grep -q 'POST /w/end' "$TMP/up.log"; then
	ok "the session's end denies its pending approval; nothing reaches the upstream"
else
	not_ok "session end denies pending" "$(cat "$TMP/end.out")" "$(tail -n 3 "$TMP/broker.log")"
fi

# A private broker with a 2-second TTL: an undecided approval expires.
sed 's/"approval_ttl_seconds": 120/"approval_ttl_seconds": 2/' "$TMP/policy.json" > "$TMP/short.json"
mkdir -m 700 "$BULKHEAD_RUNDIR/p1"
"$BROKER" --listen "$TMP/p1.sock" --rules "$TMP/scope.json" --secrets-file "$TMP/secrets.json" \
	--ca-file "$TMP/ca.pem" --policy "$TMP/short.json" --control "$BULKHEAD_RUNDIR/p1/broker.ctl" \
	--session p1 2> "$TMP/p1.err" &
pids="$pids $!"
wait_socket "$BULKHEAD_RUNDIR/p1/broker.ctl" 5
send p1 ttl.out POST /w/ttl '{}'
pt=$!
wait_pending 1
listed=$(pending)
wait $pt
if [ "$listed" = 1 ] && [ "$(status ttl.out)" = "HTTP/1.1 403 Forbidden" ] &&
	grep -q 'expired' "$TMP/ttl.out"; then
	ok "a private broker's approval is listed too, and expires undecided: $(tail -n 1 "$TMP/ttl.out")"
else
	not_ok "TTL expiry" "listed=$listed" "$(cat "$TMP/ttl.out")"
fi
plan_done
