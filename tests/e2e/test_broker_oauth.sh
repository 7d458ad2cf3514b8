#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_oauth.sh: OAuth 2 vault entries (broker/cred.h, token_cache.h), host
# only: a shared broker with a vault holding an oauth2-refresh and an oauth2-client-credentials
# entry, against a local authorization and resource server built on Debian's python3-oauthlib
# (tests/tools/oauth_provider.py) whose access tokens expire in 2 s and whose refresh tokens
# rotate at every use. Requests across three expiries; the rotated refresh token written back
# (a restarted broker goes on with it); a 401 drops the token once, never in a loop; a token
# endpoint that is down, then back; one that hangs, answers garbage, non-JSON or too much; a
# revoked refresh token (503 naming the secret, the other entry still served, a new entry put
# is taken); the narrower scope a rule asks for; the audit record's kind, token id and expiry;
# `vault put --kind` refusals and `vault list`; no token, refresh token or client secret in
# anything the client received, the broker's words or its records.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
PROVIDER=$(dirname "$0")/../tools/oauth_provider.py
require "OAuth 2 entries" "$BROKER" "$CLIENT" openssl curl py:oauthlib
D=$TMP
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
export XDG_CONFIG_HOME="$D/cfg"
V="$XDG_CONFIG_HOME/bulkhead/vault"
CSECRET='client-S3cret-4471' RT0='rt-initial-5521-qq'
"$PY" "$PROVIDER" "$D/up.pem" "$D/up.key" "$D/issued.log" 2 agent "$CSECRET" "$RT0" \
	> "$D/up.port" 2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")
TOKEN_URL="https://localhost:$PORT/token"
control() { curl -s --cacert "$D/ca.pem" "https://localhost:$PORT/control/$1"; }
stat_of() { control stats | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
put_doc() { # NAME KIND JSON
	printf '%s' "$3" | "$BULKHEAD" vault put "$1" --kind "$2" > "$D/put.out" 2> "$D/put.err"
}
"$BULKHEAD" vault init > /dev/null 2>&1
put_doc API_TOKEN oauth2-refresh "{\"token_url\": \"$TOKEN_URL\", \"client_id\": \"agent\",
  \"client_secret\": \"$CSECRET\", \"refresh_token\": \"$RT0\", \"allow_addresses\": [\"127.0.0.1\"]}" ||
	not_ok "vault put --kind oauth2-refresh" "$(cat "$D/put.err")"
put_doc CC_TOKEN oauth2-client-credentials "{\"token_url\": \"$TOKEN_URL\", \"client_id\": \"agent\",
  \"client_secret\": \"$CSECRET\", \"scope\": \"read write\", \"client_auth\": \"body\",
  \"allow_addresses\": [\"127.0.0.1\"]}" ||
	not_ok "vault put --kind oauth2-client-credentials" "$(cat "$D/put.err")"
check_eq "vault put says the kind" "stored CC_TOKEN (${#CSECRET} bytes, oauth2-client-credentials)" \
	"$(sed "s/([0-9]* bytes/(${#CSECRET} bytes/" "$D/put.out")"

# Documents that are refused, each with a reason that quotes no value.
bad_doc() { # WHAT KIND JSON EXPECT
	if put_doc BAD "$2" "$3"; then
		not_ok "vault put refuses $1"
	elif grep -q "$4" "$D/put.err" && ! grep -q -e "$CSECRET" -e "$RT0" "$D/put.err"; then
		ok "vault put refuses $1: $(cat "$D/put.err")"
	else
		not_ok "vault put refuses $1, saying why without a value" "$(cat "$D/put.err")"
	fi
}
bad_doc "a plain-HTTP token URL" oauth2-refresh \
	"{\"token_url\": \"http://localhost/t\", \"client_id\": \"a\", \"refresh_token\": \"$RT0\"}" https://
bad_doc "a refresh entry without its refresh token" oauth2-refresh \
	"{\"token_url\": \"$TOKEN_URL\", \"client_id\": \"a\", \"client_secret\": \"$CSECRET\"}" refresh_token
bad_doc "an unknown key" oauth2-client-credentials \
	"{\"token_url\": \"$TOKEN_URL\", \"client_id\": \"a\", \"client_secret\": \"$CSECRET\", \"x\": 1}" '"x"'
bad_doc "a document that is not JSON" oauth2-refresh "refresh=$RT0" "not a JSON object"
bad_doc "user info in the token URL" oauth2-refresh \
	"{\"token_url\": \"https://u:$CSECRET@localhost/t\", \"client_id\": \"a\", \"refresh_token\": \"x\"}" "without user"
"$BULKHEAD" vault put BAD --kind nosuch < /dev/null > /dev/null 2> "$D/put.err"
grep -q 'oauth2-refresh' "$D/put.err" && ok "an unknown --kind names the kinds" ||
	not_ok "an unknown --kind names the kinds" "$(cat "$D/put.err")"

cat > "$D/scope.json" << EOF2
{ "secrets": [
    { "name": "API_TOKEN", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/api", "allow_addresses": ["127.0.0.1"] } ] },
    { "name": "CC_TOKEN", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "oauth_scope": "read",
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/cc", "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
mkdir -m 700 "$D/audit"
start_broker() {
	rm -f "$D/hold.a" "$D/ctl.sock" "$D/a.sock" "$D/a.reg"
	"$BROKER" --control "$D/ctl.sock" --vault "$V" --ca-file "$D/ca.pem" --audit-dir "$D/audit" \
		--io-timeout 4 2>> "$D/broker.log" &
	bpid=$!
	pids="$pids $bpid"
	wait_socket "$D/ctl.sock" 5
	broker_register "$D/ctl.sock" a "$D/scope.json" "$D/a.sock" "$D"
}
start_broker
# get PATH: one request through session a; the whole answer, also kept in $D/seen.
get() {
	printf 'GET https://localhost:%s%s HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' \
		"$PORT" "$1" "$PORT" | timeout 30 "$CLIENT" raw "$D/a.sock" | tee -a "$D/seen"
}
status() { get "$1" | head -n 1 | tr -d '\r'; }

check_eq "the first request gets an access token from the refresh token" "HTTP/1.1 200 OK" \
	"$(status /api/one)"
grep -q '"your_token": "\[bulkhead:redacted\]"' "$D/seen" &&
	ok "the API's echo of the access token is scrubbed" ||
	not_ok "the API's echo of the access token is scrubbed" "$(tail -c 300 "$D/seen")"
check_eq "one refresh so far" 1 "$(stat_of refresh)"
check_eq "a second request within the token's life needs no refresh" "HTTP/1.1 200 OK" \
	"$(status /api/two)"
check_eq "... still one refresh" 1 "$(stat_of refresh)"
n=0
for i in 1 2 3; do
	sleep 2.2
	[ "$(status /api/expiry$i)" = "HTTP/1.1 200 OK" ] && n=$((n + 1))
done
check_eq "requests across three expiries are all served" 3 "$n"
r=$(stat_of refresh)
[ "$r" -ge 4 ] && ok "each expiry was refreshed, each time with the rotated refresh token ($r)" ||
	not_ok "refreshed at each expiry with the rotated refresh token" "refreshes: $r; $(cat "$D/issued.log" | grep grant)"
grep -q 'grant=refresh_token .*error' "$D/issued.log" &&
	not_ok "no refresh was refused" "$(grep error "$D/issued.log")" || ok "no refresh was refused"

# The rotated refresh token is in the vault: a broker started again goes on with it.
kill "$holder" "$bpid" 2> /dev/null
wait "$bpid" 2> /dev/null
sleep 2.2
start_broker
check_eq "a restarted broker refreshes with the refresh token it wrote back" "HTTP/1.1 200 OK" \
	"$(status /api/after-restart)"
"$BULKHEAD" vault list > "$D/list.out" 2>&1
grep -q '^API_TOKEN .* oauth2-refresh$' "$D/list.out" &&
	grep -q '^    token: sha256:[0-9a-f]\{12\}, expires in [0-9]*s, refreshed [0-9]*s ago' "$D/list.out" &&
	ok "vault list shows the kind and the token's state" ||
	not_ok "vault list shows the kind and the token's state" "$(cat "$D/list.out")"

# A 401: the token that got it is dropped once and a new one obtained; never in a loop.
control revoke-access > /dev/null
check_eq "a revoked access token: the API's 401 reaches the client" "HTTP/1.1 401 Unauthorized" \
	"$(status /api/revoked)"
r=$(stat_of refresh)
check_eq "the next request gets a new token" "HTTP/1.1 200 OK" "$(status /api/renewed)"
check_eq "... with one refresh" $((r + 1)) "$(stat_of refresh)"
control revoke-access > /dev/null
r=$(stat_of refresh)
for i in 1 2 3 4 5 6 7 8; do status /api/hammer > /dev/null; done
n=$(($(stat_of refresh) - r))
[ "$n" -le 1 ] && ok "eight requests answered 401 make at most one refresh ($n)" ||
	not_ok "eight requests answered 401 make at most one refresh" "$n refreshes"

# The token endpoint down: a clear 503 naming the secret, no storm, then back.
control mode?m=down > /dev/null
sleep 2.2
t0=$(stat_of token_requests)
get /api/down > "$D/down.out"
case $(head -n 1 "$D/down.out" | tr -d '\r') in
"HTTP/1.1 503"*) grep -q 'API_TOKEN.*token endpoint localhost answered 503' "$D/down.out" &&
	ok "a token endpoint that is down: 503 naming the secret and why" ||
	not_ok "the 503 names the secret and why" "$(cat "$D/down.out")" ;;
*) not_ok "a token endpoint that is down: 503" "$(cat "$D/down.out")" ;;
esac
# (At once: one after another, a slow build's five could outlast the first backoff's second.)
# (Their own list: $pids is what lib.sh kills at the end, the provider and the broker with it.)
clients=
for i in 1 2 3 4 5; do
	status /api/down-again > /dev/null &
	clients="$clients $!"
done
# shellcheck disable=SC2086 # $clients is words
wait $clients
check_eq "five more requests at once do not ask the endpoint again (backoff)" 1 \
	$(($(stat_of token_requests) - t0))
control mode?m=ok > /dev/null
sleep 2.2
check_eq "the endpoint back: served again after the backoff" "HTTP/1.1 200 OK" "$(status /api/back)"

# served PATH: polls until a request is served (a backoff may still run); its last status.
served() {
	i=0
	while [ "$(status "$1")" != "HTTP/1.1 200 OK" ] && [ $i -lt 20 ]; do
		sleep 1
		i=$((i + 1))
	done
	status "$1"
}
# Broken answers: each a 503 with its reason, within the deadline, the broker serving on.
for m in garbage notjson huge hang; do
	control "mode?m=$m" > /dev/null
	sleep 2.2
	t=$(date +%s)
	get "/api/$m" > "$D/$m.out"
	el=$(($(date +%s) - t))
	st=$(head -n 1 "$D/$m.out" | tr -d '\r')
	case $st in
	"HTTP/1.1 503"*) ok "a token endpoint answering $m: 503 in ${el}s ($(tail -n 1 "$D/$m.out" | sed 's/.*not available: //'))" ;;
	*) not_ok "a token endpoint answering $m: 503" "$(cat "$D/$m.out")" ;;
	esac
	control mode?m=ok > /dev/null
	check_eq "... and then, the endpoint mended, served again" "HTTP/1.1 200 OK" \
		"$(served "/api/after-$m")"
	sleep 2.2 # the token expires: the next request asks the endpoint
done

# One refresh token, two scopes (session b's rule narrows it): each scope gets its token once,
# and a rotation by one is followed by the other, never a refresh in turn at every request.
sed '/"name": "API_TOKEN"/s/$/\n      "oauth_scope": "read",/' "$D/scope.json" > "$D/scope-b.json"
grep -c oauth_scope "$D/scope-b.json" | grep -q 2 || not_ok "session b's scope narrows API_TOKEN" "$(cat "$D/scope-b.json")"
broker_register "$D/ctl.sock" b "$D/scope-b.json" "$D/b.sock" "$D"
getb() {
	printf 'GET https://localhost:%s%s HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' \
		"$PORT" "$1" "$PORT" | timeout 30 "$CLIENT" raw "$D/b.sock" | tee -a "$D/seen" |
		head -n 1 | tr -d '\r'
}
# alternate NAME K: K requests in turn through sessions a and b; $n: how many were served, $r:
# the refreshes before them.
alternate() {
	r=$(stat_of refresh)
	n=0
	for i in $(seq "$2"); do
		[ "$(status /api/$1-a$i)" = "HTTP/1.1 200 OK" ] && n=$((n + 1))
		[ "$(getb /api/$1-b$i)" = "HTTP/1.1 200 OK" ] && n=$((n + 1))
	done
}
status /api/warm > /dev/null
alternate alt 4
check_eq "two scopes of one refresh token, alternating: all eight served" 8 "$n"
# One for the new scope, and one more if session a's token reached its refresh time meanwhile;
# a refresh in turn at each request would make eight.
n=$(($(stat_of refresh) - r))
[ "$n" -ge 1 ] && [ "$n" -le 2 ] && ok "... with a refresh for the new scope, none in turn ($n)" ||
	not_ok "alternating scopes refresh in turn" "$n refreshes for 8 requests"
grep -q 'grant=refresh_token scope=read ok' "$D/issued.log" &&
	ok "session b's token was asked for its narrower scope" ||
	not_ok "session b's token was asked for its narrower scope" "$(grep grant= "$D/issued.log" | tail -n 3)"
sleep 2.2
alternate exp 3
check_eq "after an expiry both scopes are served, each refreshing with the chain's newest token" 6 "$n"
n=$(($(stat_of refresh) - r))
[ "$n" -ge 2 ] && [ "$n" -le 3 ] && ok "... one refresh per scope ($n)" ||
	not_ok "one refresh per scope after an expiry" "$n refreshes for 6 requests"

# What only the token endpoint holds (the client's secret, refresh tokens) is scrubbed when an
# API repeats it; an endpoint repeating what it was sent in its error reaches neither the client
# nor the broker's log.
get /api/tattle > "$D/tattle.out"
grep -q '"client_secret": "\[bulkhead:redacted\]"' "$D/tattle.out" &&
	! grep -qF -e "$CSECRET" -e "$RT0" "$D/tattle.out" &&
	ok "an API repeating the client's secret and refresh tokens: all scrubbed" ||
	not_ok "an API repeating the client's secret and refresh tokens is scrubbed" "$(tail -n 1 "$D/tattle.out")"
control mode?m=tattle > /dev/null
sleep 2.2
get /api/tattled > "$D/tattled.out"
b64=$(printf 'agent:%s' "$CSECRET" | base64 -w0)
if grep -q '^HTTP/1.1 503' "$D/tattled.out" && grep -q 'an error code of its own' "$D/tattled.out" &&
	! grep -qF -e "$b64" -e "$CSECRET" "$D/tattled.out" "$D/broker.log"; then
	ok "an endpoint repeating the client's credentials in its error: only its status is said"
else
	not_ok "an endpoint's own words reach no one" "$(tail -n 1 "$D/tattled.out")"
fi
control mode?m=ok > /dev/null
check_eq "... and then served again" "HTTP/1.1 200 OK" "$(served /api/after-tattle)"

# An answer that rotated the refresh token but whose access token cannot be used: the new
# refresh token is kept (the old one has ended), so the next try succeeds. An expires_in
# written as a real is taken.
control mode?m=half > /dev/null
sleep 2.2
get /api/half > "$D/half.out"
grep -q 'no usable access_token' "$D/half.out" && ok "an unusable access token: 503 saying so" ||
	not_ok "an unusable access token: 503 saying so" "$(tail -n 1 "$D/half.out")"
control mode?m=float > /dev/null
check_eq "the refresh token it rotated is kept: the next try is served" "HTTP/1.1 200 OK" \
	"$(served /api/after-half)"
grep -q 'grant=refresh_token .*error.*invalid_grant' "$D/issued.log" &&
	not_ok "no refresh with an ended refresh token" "$(grep invalid_grant "$D/issued.log")" ||
	ok "no refresh was made with an ended refresh token"
control mode?m=ok > /dev/null

# Client credentials with the narrower scope the rule asks for.
check_eq "client credentials: served" "HTTP/1.1 200 OK" "$(status /cc/one)"
grep -q '^grant=client_credentials scope=read ok' "$D/issued.log" &&
	ok "the token was asked for the rule's narrower scope" ||
	not_ok "the rule's narrower scope was asked for" "$(grep grant= "$D/issued.log" | tail -n 3)"

# A revoked refresh token: 503 naming the secret, no retries; the other entry goes on; a new
# refresh token put in the vault is taken.
control revoke-refresh > /dev/null
sleep 2.2
get /api/refused > "$D/refused.out"
grep -q 'API_TOKEN.*invalid_grant.*bulkhead vault put' "$D/refused.out" &&
	ok "a revoked refresh token: 503 naming the secret, invalid_grant and what to do" ||
	not_ok "a revoked refresh token is named with what to do" "$(cat "$D/refused.out")"
t0=$(stat_of token_requests)
status /api/refused-again > /dev/null
check_eq "... and the endpoint is not asked again" "$t0" "$(stat_of token_requests)"
check_eq "the other entry is still served" "HTTP/1.1 200 OK" "$(status /cc/two)"
RT1='rt-reissued-7781-zz'
control "seed?rt=$RT1" > /dev/null
put_doc API_TOKEN oauth2-refresh "{\"token_url\": \"$TOKEN_URL\", \"client_id\": \"agent\",
  \"client_secret\": \"$CSECRET\", \"refresh_token\": \"$RT1\", \"allow_addresses\": [\"127.0.0.1\"]}"
check_eq "a new refresh token put in the vault is taken at once" "HTTP/1.1 200 OK" \
	"$(status /api/reissued)"

# The audit record names the kind, the token's id and expiry.
rec=$(grep -h '"path":"/api/reissued"' "$D"/audit/* | tail -n 1)
echo "$rec" | grep -q '"credentials":\[{"name":"API_TOKEN","kind":"oauth2-refresh","token_id":"sha256:[0-9a-f]\{12\}","expires_at":[0-9]*}\]' &&
	ok "the audit record names the kind, the token id and its expiry" ||
	not_ok "the audit record names the kind, the token id and its expiry" "$rec"
# A connection kept alive across many refreshes scrubs what is still to be scrubbed, not every
# token it ever saw: replaced tokens are scrubbed a while, but an entry's retired values hold
# at most 16 KiB, so with tokens of 8,003 characters at most two of them: once two were
# replaced, the broker's count of the forms a connection's scrubber holds grows no more.
control mode?m=big > /dev/null
mkfifo "$D/go"
"$PY" "$(dirname "$0")/../tools/keepalive_client.py" "$D/a.sock" "https://localhost:$PORT/api/keep" \
	"$D/go" > "$D/keep.out" 2> "$D/keep.err" &
pids="$pids $!"
exec 7> "$D/go"
forms() { sed -n 's|.*GET https://localhost:[0-9]*/api/keep -> 200 .* forms=\([0-9]*\) .*|\1|p' "$D/broker.log" | tail -n 1; }
sleep 2.2
for i in 1 2 3 4 5 6; do
	echo go >&7
	j=0; while [ "$(wc -l < "$D/keep.out")" -lt $i ] && [ $j -lt 100 ]; do sleep 0.05; j=$((j + 1)); done
	[ $i = 3 ] && f3=$(forms)
	[ $i -lt 6 ] && sleep 2.2
done
f6=$(forms)
exec 7>&-
control mode?m=ok > /dev/null
check_eq "six requests on one connection across five refreshes are served" 6 "$(grep -c '200 OK' "$D/keep.out")"
[ -n "$f3" ] && [ -n "$f6" ] && [ "$f6" -le "$f3" ] &&
	ok "its scrubber holds no more forms after five refreshes than after two ($f3, $f6)" ||
	not_ok "a kept-alive connection's scrubber stays bounded" "after two: $f3, after five: $f6"

# No token, refresh token or client secret anywhere it must not be.
leaks=0
for v in $(sed -n 's/^issued //p' "$D/issued.log") "$CSECRET" "$RT0" "$RT1"; do
	grep -qF "$v" "$D/seen" "$D/broker.log" "$D"/audit/* "$V.state" "$D/list.out" && leaks=$((leaks + 1))
done
check_eq "no token, refresh token or client secret in answers, logs, records or state" 0 "$leaks"
kill -0 "$bpid" 2> /dev/null && ok "the broker serves on" || not_ok "the broker is alive"
plan_done
