#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_proxy.sh: bulkhead-broker as a forward proxy, host only. A test CA
# (openssl) signs a local HTTPS echo upstream on 127.0.0.1; requests go in on the broker's
# Unix socket as a guest's would, and every byte coming back is searched for the secret.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
TOOLS=$(cd "$BUILD/tests" 2> /dev/null && pwd)
ECHO=$TOOLS/https-echo
CLIENT=$TOOLS/proxy-client
require "broker proxy suite" "$BROKER" "$ECHO" "$CLIENT" openssl

D=$TMP

SECRET='s3cr3t-T0KEN-abcdef-9876'
B64=$(printf %s "$SECRET" | base64 -w0)
BASIC=$(printf %s "x-access-token:$SECRET" | base64 -w0)

# Test PKI: our CA; a leaf for localhost + 127.0.0.1; one from a stranger CA; one for the
# wrong name.
mkcert() { # NAME SAN CA
	openssl req -newkey rsa:2048 -nodes -keyout "$D/$1.key" -out "$D/$1.csr" -subj "/CN=$1" \
		2> /dev/null &&
		printf 'subjectAltName=%s\n' "$2" > "$D/$1.ext" &&
		openssl x509 -req -in "$D/$1.csr" -CA "$D/$3.pem" -CAkey "$D/$3.key" \
			-CAcreateserial -out "$D/$1.pem" -days 1 -extfile "$D/$1.ext" 2> /dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/ca.key" -out "$D/ca.pem" -days 1 \
	-subj /CN=bulkhead-test-ca 2> /dev/null &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/stranger.key" \
		-out "$D/stranger.pem" -days 1 -subj /CN=stranger-ca 2> /dev/null &&
	mkcert good "DNS:localhost,IP:127.0.0.1" ca &&
	mkcert badca "DNS:localhost,IP:127.0.0.1" stranger &&
	mkcert badname "DNS:wrong.test" ca
if [ $? -ne 0 ] || [ ! -s "$D/badname.pem" ]; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi

# start_upstream NAME ARGS...: starts an echo upstream on 127.0.0.1; sets $port.
start_upstream() {
	name=$1
	shift
	"$ECHO" "$@" > "$D/$name.port" 2> "$D/$name.err" &
	pids="$pids $!"
	i=0
	while [ ! -s "$D/$name.port" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	port=$(cat "$D/$name.port")
}
start_upstream good --cert "$D/good.pem" --key "$D/good.key" \
	--also "echo:$SECRET:$B64:$BASIC" --log "$D/up.log"
GOOD=$port
start_upstream badca --cert "$D/badca.pem" --key "$D/badca.key"
BADCA=$port
start_upstream badname --cert "$D/badname.pem" --key "$D/badname.key"
BADNAME=$port
start_upstream plain
PLAIN=$port

LOOP='"allow_addresses": ["127.0.0.1", "::1"]'
cat > "$D/rules.json" << RULES
{
  "secrets": [
    { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $GOOD,
                          "path_prefix": "/bearer/", $LOOP } ] },
    { "name": "BAS", "inject": { "basic": "x-access-token" },
      "destinations": [ { "scheme": "https", "host": "127.0.0.1", "port": $GOOD,
                          "path_prefix": "/basic/", $LOOP } ] },
    { "name": "QK", "inject": { "query": "key" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $GOOD,
                          "method": "GET", "path_prefix": "/q/", $LOOP } ] }
  ],
  "allow": [
    { "scheme": "https", "host": "localhost", "port": $GOOD, "path_prefix": "/open/", $LOOP },
    { "scheme": "https", "host": "localhost", "port": $BADCA, $LOOP },
    { "scheme": "https", "host": "localhost", "port": $BADNAME, $LOOP },
    { "scheme": "http", "host": "127.0.0.1", "port": $PLAIN }
  ]
}
RULES
printf '{"TOK": "%s", "BAS": "%s", "QK": "%s"}\n' "$SECRET" "$SECRET" "$SECRET" \
	> "$D/secrets.json"
chmod 600 "$D/secrets.json"

# start_broker SOCK RULES LOG
start_broker() {
	"$BROKER" --listen "$1" --rules "$2" --secrets-file "$D/secrets.json" \
		--ca-file "$D/ca.pem" 2> "$3" &
	BPID=$!
	pids="$pids $BPID"
	wait_socket "$1" 5
}
SOCK=$D/broker.sock
start_broker "$SOCK" "$D/rules.json" "$D/broker.log"
if [ ! -S "$SOCK" ]; then
	not_ok "broker starts" "$(cat "$D/broker.log")"
	plan_done
	exit 1
fi
ok "broker starts and listens on its socket"

# req NAME: sends stdin through the broker; the answer lands in $D/NAME.out and is appended
# to $D/all.out (everything a guest would have received).
req() {
	"$CLIENT" raw "$SOCK" > "$D/$1.out"
	cat "$D/$1.out" >> "$D/all.out"
}
status_of() { head -n 1 "$D/$1.out" | tr -d '\r'; }

printf 'GET http://localhost:%s/bearer/a HTTP/1.1\r\nHost: localhost:%s\r\nAuthorization: Bearer guest-own\r\nProxy-Authorization: Basic Z3Vlc3Q=\r\nConnection: close\r\n\r\n' \
	"$GOOD" "$GOOD" | req bearer
check_eq "bearer: 200 through the broker" "HTTP/1.1 200 OK" "$(status_of bearer)"
if grep -qx "Authorization: Bearer $SECRET" "$D/up.log"; then
	ok "bearer: the upstream saw the injected header"
else
	not_ok "bearer: the upstream saw the injected header" "$(cat "$D/up.log")"
fi
if grep -q 'guest-own\|Z3Vlc3Q=\|Proxy-Authorization' "$D/up.log"; then
	not_ok "guest-supplied Authorization and Proxy-Authorization are removed" \
		"$(cat "$D/up.log")"
else
	ok "guest-supplied Authorization and Proxy-Authorization are removed"
fi
R='\[bulkhead:redacted\]'
if grep -q "Authorization: Bearer $R" "$D/bearer.out" &&
	grep -q "X-Echo: echo:$R:$R:eC1hY2Nlc3MtdG9rZW46$R" "$D/bearer.out" &&
	grep -q "^echo:$R:$R:eC1hY2Nlc3MtdG9rZW46$R" "$D/bearer.out"; then
	ok "echoed secret, its base64 and inside base64(user:secret) are scrubbed (head, body)"
else
	not_ok "echoed secret scrubbed" "$(cat "$D/bearer.out")"
fi

: > "$D/up.log"
printf 'GET http://127.0.0.1:%s/basic/b HTTP/1.1\r\nConnection: close\r\n\r\n' "$GOOD" |
	req basic
check_eq "basic: 200 to an IP-literal upstream (certificate IP checked)" "HTTP/1.1 200 OK" \
	"$(status_of basic)"
if grep -qx "Authorization: Basic $BASIC" "$D/up.log"; then
	ok "basic: the upstream saw Basic base64(user:secret)"
else
	not_ok "basic: the upstream saw Basic base64(user:secret)" "$(cat "$D/up.log")"
fi

: > "$D/up.log"
printf 'GET http://localhost:%s/q/c?a=1&key=guest&b=2 HTTP/1.1\r\nConnection: close\r\n\r\n' \
	"$GOOD" | req query
if head -n 1 "$D/up.log" | grep -qx "GET /q/c?a=1&b=2&key=$SECRET"; then
	ok "query: the guest's key= is replaced by the injected one"
else
	not_ok "query: the guest's key= is replaced by the injected one" "$(head -n 1 "$D/up.log")"
fi

: > "$D/up.log"
printf 'GET http://localhost:%s/bearer/p?t=BULKHEAD_SECRET_TOK HTTP/1.1\r\nX-Token: tok BULKHEAD_SECRET_TOK\r\nConnection: close\r\n\r\n' \
	"$GOOD" | req placeholder
if [ "$(status_of placeholder)" = "HTTP/1.1 200 OK" ] &&
	grep -qx "X-Token: tok $SECRET" "$D/up.log" && grep -q "t=$SECRET" "$D/up.log"; then
	ok "placeholders are replaced toward the secret's own destination"
else
	not_ok "placeholders replaced toward own destination" "$(cat "$D/placeholder.out")" \
		"$(cat "$D/up.log")"
fi

: > "$D/up.log"
printf 'GET http://localhost:%s/open/x HTTP/1.1\r\nX-Token: BULKHEAD_SECRET_TOK\r\nConnection: close\r\n\r\n' \
	"$GOOD" | req tripwire
if [ "$(status_of tripwire)" = "HTTP/1.1 403 Forbidden" ] && grep -q tripwire "$D/tripwire.out" &&
	[ ! -s "$D/up.log" ]; then
	ok "placeholder toward another destination (same host, other path): 403, nothing sent"
else
	not_ok "tripwire" "$(cat "$D/tripwire.out")"
fi

: > "$D/up.log"
printf 'GET http://localhost:%s/open/x HTTP/1.1\r\nConnection: close\r\n\r\n' "$GOOD" | req open
if [ "$(status_of open)" = "HTTP/1.1 200 OK" ] && ! grep -q Authorization "$D/up.log"; then
	ok "allow-listed destination: served without any credential"
else
	not_ok "allow-listed destination" "$(cat "$D/open.out")" "$(cat "$D/up.log")"
fi

printf 'GET http://example.com/ HTTP/1.1\r\nConnection: close\r\n\r\n' | req otherhost
if [ "$(status_of otherhost)" = "HTTP/1.1 403 Forbidden" ] &&
	grep -q 'no rule allows GET http://example.com/' "$D/otherhost.out"; then
	ok "another host is refused: 403 with the reason"
else
	not_ok "another host refused" "$(cat "$D/otherhost.out")"
fi

printf 'GET http://127.0.0.1:%s/ HTTP/1.1\r\nConnection: close\r\n\r\n' "$PLAIN" | req private
if [ "$(status_of private)" = "HTTP/1.1 403 Forbidden" ] && grep -q 'non-public' "$D/private.out"
then
	ok "loopback address not explicitly allowed is refused: 403"
else
	not_ok "private address refused" "$(cat "$D/private.out")"
fi

printf 'GET http://localhost:%s/ HTTP/1.1\r\nConnection: close\r\n\r\n' "$BADCA" | req badca
if [ "$(status_of badca)" = "HTTP/1.1 502 Bad Gateway" ] &&
	grep -q 'certificate verification failed' "$D/badca.out"; then
	ok "upstream certificate from an unknown CA: 502 ($(tail -n 1 "$D/badca.out"))"
else
	not_ok "unknown CA refused" "$(cat "$D/badca.out")"
fi
printf 'GET http://localhost:%s/ HTTP/1.1\r\nConnection: close\r\n\r\n' "$BADNAME" | req badname
if [ "$(status_of badname)" = "HTTP/1.1 502 Bad Gateway" ] &&
	grep -q 'verification failed.*mismatch' "$D/badname.out"; then
	ok "upstream certificate for another name: 502 ($(tail -n 1 "$D/badname.out"))"
else
	not_ok "wrong name refused" "$(cat "$D/badname.out")"
fi

printf 'GET http://localhost:%s/bearer/../repeat/3 HTTP/1.1\r\nConnection: close\r\n\r\n' \
	"$GOOD" | req dots
check_eq "dot segments in the path are refused" "HTTP/1.1 400 Bad Request" "$(status_of dots)"

# A second broker whose rules allow the whole upstream and bind the secret elsewhere: the
# secret is still scrubbed from a streamed, chunked response that carries it (raw and base64)
# cut into pieces of 1..7 bytes.
cat > "$D/rules2.json" << RULES
{ "allow": [ { "scheme": "https", "host": "localhost", "port": $GOOD, $LOOP } ],
  "secrets": [ { "name": "TOK", "inject": { "header": "X-Unused", "value": "{}" },
                 "destinations": [ { "scheme": "https", "host": "unused.test" } ] } ] }
RULES
SOCK2=$D/b2.sock
start_broker "$SOCK2" "$D/rules2.json" "$D/broker2.log"
printf 'GET http://localhost:%s/repeat/300 HTTP/1.1\r\nConnection: close\r\n\r\n' "$GOOD" |
	"$CLIENT" raw "$SOCK2" > "$D/rep.out"
cat "$D/rep.out" >> "$D/all.out"
n=$(grep -o 'bulkhead:redacted' "$D/rep.out" | wc -l)
if [ "$(head -n 1 "$D/rep.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ] && [ "$n" -eq 900 ]; then
	ok "streamed response, values split across reads: all 900 occurrences scrubbed"
else
	not_ok "streamed scrub" "redactions: $n (want 900)" "$(head -c 600 "$D/rep.out")"
fi

# Bodies, both framings, streamed to the upstream.
head -c 300000 /dev/zero | tr '\0' 'b' > "$D/body"
{
	printf 'POST http://localhost:%s/open/post HTTP/1.1\r\nContent-Length: 300000\r\nConnection: close\r\n\r\n' "$GOOD"
	cat "$D/body"
} | req post
check_eq "Content-Length body of 300000 bytes reaches the upstream" "1" \
	"$(grep -c 'X-Body-Bytes: 300000' "$D/post.out")"
{
	printf 'POST http://localhost:%s/open/post HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' "$GOOD"
	printf '5\r\nhello\r\n1000\r\n'
	head -c 4096 "$D/body"
	printf '\r\n0\r\n\r\n'
} | req chunked
check_eq "chunked request body reaches the upstream (4101 bytes)" "1" \
	"$(grep -c 'X-Body-Bytes: 4101' "$D/chunked.out")"

# Placeholders in request bodies: replaced toward the secret's own destination (the body
# re-measured), a trip anywhere else — also when the placeholder is cut across reads.
: > "$D/up.log"
BODY='{"token":"BULKHEAD_SECRET_TOK","n":1}'
WANT="{\"token\":\"$SECRET\",\"n\":1}"
printf 'POST http://localhost:%s/bearer/body HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
	"$GOOD" "${#BODY}" "$BODY" | req bodyph
if [ "$(status_of bodyph)" = "HTTP/1.1 200 OK" ] && grep -qxF "body: $WANT" "$D/up.log" &&
	grep -qx "Content-Length: ${#WANT}" "$D/up.log"; then
	ok "body placeholder toward its own destination: replaced, Content-Length re-measured"
else
	not_ok "body placeholder replaced" "$(cat "$D/bodyph.out")" "$(cat "$D/up.log")"
fi
: > "$D/up.log"
{
	printf 'POST http://localhost:%s/bearer/chunked HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' "$GOOD"
	printf '6\r\nk=BULK\r\n6\r\nHEAD_S\r\n9\r\nECRET_TOK\r\n2\r\n;e\r\n0\r\n\r\n'
} | req bodysplit
if [ "$(status_of bodysplit)" = "HTTP/1.1 200 OK" ] && grep -qxF "body: k=$SECRET;e" "$D/up.log"
then
	ok "a placeholder split across chunks is still replaced"
else
	not_ok "split body placeholder" "$(cat "$D/bodysplit.out")" "$(cat "$D/up.log")"
fi
: > "$D/up.log"
printf 'POST http://localhost:%s/open/body HTTP/1.1\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
	"$GOOD" "${#BODY}" "$BODY" | req bodytrip
if [ "$(status_of bodytrip)" = "HTTP/1.1 403 Forbidden" ] && grep -q tripwire "$D/bodytrip.out" &&
	[ ! -s "$D/up.log" ]; then
	ok "body placeholder toward another destination: 403, nothing sent"
else
	not_ok "body tripwire" "$(cat "$D/bodytrip.out")" "$(cat "$D/up.log")"
fi
: > "$D/up.log"
{
	printf 'POST http://localhost:%s/open/big HTTP/1.1\r\nContent-Length: 200040\r\nConnection: close\r\n\r\n' "$GOOD"
	head -c 200000 /dev/zero | tr '\0' x
	printf 'BULKHEAD_SECRET_TOK!!!!!!!!!!!!!!!!!!!!!'
} | req bigtrip
if [ "$(status_of bigtrip)" = "HTTP/1.1 403 Forbidden" ] && grep -q tripwire "$D/bigtrip.out" &&
	! grep -q 'body:' "$D/up.log"; then
	ok "a placeholder at the end of a 200 KB streamed body still trips; the request never completes upstream"
else
	not_ok "streamed body tripwire" "$(head -c 300 "$D/bigtrip.out")" "$(head -c 300 "$D/up.log")"
fi

: > "$D/up.log"
{
	printf 'POST http://localhost:%s/bearer/big HTTP/1.1\r\nContent-Length: 100019\r\nConnection: close\r\n\r\n' "$GOOD"
	head -c 100000 /dev/zero | tr '\0' y
	printf 'BULKHEAD_SECRET_TOK'
} | req bigph
if [ "$(status_of bigph)" = "HTTP/1.1 200 OK" ] && grep -qx 'Transfer-Encoding: chunked' "$D/up.log" &&
	grep -q "X-Body-Bytes: $((100000 + ${#SECRET}))" "$D/bigph.out"; then
	ok "a long body toward a secret's destination goes chunked, placeholder replaced"
else
	not_ok "long body placeholder" "$(head -c 300 "$D/bigph.out")" "$(head -c 300 "$D/up.log")"
fi

# Keep-alive: three pipelined requests on one connection.
printf 'GET http://localhost:%s/open/1 HTTP/1.1\r\n\r\nGET http://localhost:%s/bearer/2 HTTP/1.1\r\n\r\nGET http://localhost:%s/open/3 HTTP/1.1\r\nConnection: close\r\n\r\n' \
	"$GOOD" "$GOOD" "$GOOD" | req keepalive
check_eq "keep-alive: three requests on one connection answered" "3" \
	"$(grep -c '^HTTP/1.1 200' "$D/keepalive.out")"

# Malformed requests: 400 each, and the broker keeps serving.
bad() { # NAME PRINTF-FORMAT
	printf "$2" | req "$1"
	check_eq "malformed ($1): 400" "HTTP/1.1 400 Bad Request" "$(status_of "$1")"
}
bad cl_and_te 'POST http://localhost/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
bad bad_length 'POST http://localhost/ HTTP/1.1\r\nContent-Length: 1x\r\n\r\n'
bad two_lengths 'POST http://localhost/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'
bad not_http 'HELLO\r\n\r\n'
{
	printf 'GET http://localhost/ HTTP/1.1\r\nX-Huge: '
	head -c 70000 /dev/zero | tr '\0' a
	printf '\r\n\r\n'
} | req huge
check_eq "malformed (70 KB header): 400" "HTTP/1.1 400 Bad Request" "$(status_of huge)"
{
	printf 'GET http://localhost/ HTTP/1.1\r\n'
	i=0
	while [ $i -lt 200 ]; do
		printf 'X-%d: v\r\n' $i
		i=$((i + 1))
	done
	printf '\r\n'
} | req many
check_eq "malformed (200 headers): 400" "HTTP/1.1 400 Bad Request" "$(status_of many)"
printf 'GET http://localhost:%s/open/after HTTP/1.1\r\nConnection: close\r\n\r\n' "$GOOD" |
	req after
check_eq "after the malformed ones, a good request is still served" "HTTP/1.1 200 OK" \
	"$(status_of after)"

# A guest connection that sends half a head and then nothing holds only itself.
(printf 'GET http://localhost:%s/open/slow HTTP/1.1\r\nX-Slow: ' "$GOOD"; sleep 3) |
	"$CLIENT" raw "$SOCK" > /dev/null &
slow=$!
printf 'GET http://localhost:%s/open/fast HTTP/1.1\r\nConnection: close\r\n\r\n' "$GOOD" |
	req fast
check_eq "a stalled connection does not hold up another" "HTTP/1.1 200 OK" "$(status_of fast)"
if kill -0 $slow 2> /dev/null; then
	ok "(the stalled connection was still open meanwhile)"
else
	not_ok "(the stalled connection was still open meanwhile)"
fi
wait $slow

out=$("$CLIENT" load "$SOCK" 500 "http://localhost:$GOOD/bearer/load" 2>&1)
check_eq "500 concurrent connections all complete with 200" "500 of 500" "$out"

# CONNECT with TLS interception: the broker's session CA (fetched the way bulkhead-init
# fetches it) signs a leaf per CONNECT host; requests inside the tunnel are decided like any
# other, and what comes back through the tunnel is scrubbed the same way.
printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' | req sessionca
sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' "$D/sessionca.out" \
	> "$D/session-ca.pem"
if openssl x509 -in "$D/session-ca.pem" -noout -text 2> /dev/null | grep -q 'CA:TRUE, pathlen:0'
then
	ok "the broker serves its session CA's certificate (CA:TRUE, pathlen:0)"
else
	not_ok "session CA certificate" "$(head -c 400 "$D/sessionca.out")"
fi
tunnel() { # NAME AUTHORITY SNI VERIFY-NAME CAFILE < request
	"$CLIENT" tunnel "$SOCK" "$2" "$3" "$4" "$5" > "$D/$1.out"
	cat "$D/$1.out" >> "$D/all.out"
}
inner_status() { sed -n 3p "$D/$1.out" | tr -d '\r'; }

: > "$D/up.log"
printf 'GET /bearer/t HTTP/1.1\r\nHost: localhost:%s\r\nAuthorization: Bearer guest-own\r\nConnection: close\r\n\r\n' \
	"$GOOD" | tunnel tbearer "localhost:$GOOD" localhost localhost "$D/session-ca.pem"
if [ "$(head -n 1 "$D/tbearer.out" | tr -d '\r')" = "HTTP/1.1 200 Connection established" ] &&
	[ "$(inner_status tbearer)" = "HTTP/1.1 200 OK" ] &&
	grep -qx "Authorization: Bearer $SECRET" "$D/up.log" && ! grep -q guest-own "$D/up.log"
then
	ok "CONNECT: TLS to the broker's leaf, the upstream sees the injected header only"
else
	not_ok "CONNECT with injection" "$(head -c 500 "$D/tbearer.out")" "$(cat "$D/up.log")"
fi
if grep -q "^echo:$R:$R:" "$D/tbearer.out"; then
	ok "CONNECT: the echoed secret is scrubbed inside the tunnel"
else
	not_ok "CONNECT: echo scrubbed" "$(cat "$D/tbearer.out")"
fi

: > "$D/up.log"
printf 'GET /basic/t HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$GOOD" |
	tunnel tip "127.0.0.1:$GOOD" - 127.0.0.1 "$D/session-ca.pem"
if [ "$(inner_status tip)" = "HTTP/1.1 200 OK" ] && grep -qx "Authorization: Basic $BASIC" "$D/up.log"
then
	ok "CONNECT to an IP literal: leaf with that IP, no SNI, Basic injected"
else
	not_ok "CONNECT to an IP literal" "$(head -c 500 "$D/tip.out")"
fi

: > "$D/up.log"
printf 'GET /bearer/t HTTP/1.1\r\nHost: localhost:%s\r\n\r\n' "$GOOD" |
	tunnel tsni "localhost:$GOOD" other.test localhost "$D/session-ca.pem"
if [ "$(inner_status tsni)" = "HTTP/1.1 400 Bad Request" ] &&
	grep -q 'TLS server name (other.test) does not match the CONNECT host' "$D/tsni.out" &&
	[ ! -s "$D/up.log" ]; then
	ok "SNI other than the CONNECT host: 400, nothing sent upstream"
else
	not_ok "SNI mismatch refused" "$(cat "$D/tsni.out")"
fi
printf 'GET /bearer/t HTTP/1.1\r\nHost: other.test\r\n\r\n' |
	tunnel thost "localhost:$GOOD" localhost localhost "$D/session-ca.pem"
if [ "$(inner_status thost)" = "HTTP/1.1 400 Bad Request" ] &&
	grep -q 'Host header does not match the CONNECT host' "$D/thost.out" && [ ! -s "$D/up.log" ]
then
	ok "Host header other than the CONNECT host inside the tunnel: 400"
else
	not_ok "Host mismatch in a tunnel refused" "$(cat "$D/thost.out")"
fi
printf 'GET /open/x HTTP/1.1\r\nHost: localhost:%s\r\nX-Token: BULKHEAD_SECRET_TOK\r\n\r\n' \
	"$GOOD" | tunnel ttrip "localhost:$GOOD" localhost localhost "$D/session-ca.pem"
if [ "$(inner_status ttrip)" = "HTTP/1.1 403 Forbidden" ] && grep -q tripwire "$D/ttrip.out" &&
	[ ! -s "$D/up.log" ]; then
	ok "CONNECT: a placeholder toward another destination trips inside the tunnel too"
else
	not_ok "tripwire in a tunnel" "$(cat "$D/ttrip.out")"
fi
printf '' | tunnel tdeny example.com:443 example.com example.com "$D/session-ca.pem"
if [ "$(head -n 1 "$D/tdeny.out" | tr -d '\r')" = "HTTP/1.1 403 Forbidden" ] &&
	grep -q 'no https rule for example.com:443' "$D/tdeny.out"; then
	ok "CONNECT to a host no https rule names: 403 before any TLS"
else
	not_ok "CONNECT to another host refused" "$(cat "$D/tdeny.out")"
fi
printf '' | tunnel tplain "127.0.0.1:$PLAIN" - 127.0.0.1 "$D/session-ca.pem"
check_eq "CONNECT to a plain-http rule's host:port: 403" "HTTP/1.1 403 Forbidden" \
	"$(head -n 1 "$D/tplain.out" | tr -d '\r')"
printf 'GET /bearer/t HTTP/1.1\r\nHost: localhost:%s\r\n\r\n' "$GOOD" |
	tunnel tforeign "localhost:$GOOD" localhost localhost "$D/ca.pem"
check_eq "a client that does not trust the session CA refuses the broker's leaf" "tls-failed" \
	"$(sed -n 3p "$D/tforeign.out")"

# Every byte the client received, and the brokers' logs: no secret, in any form.
for form in "$SECRET" "$B64" "$BASIC"; do
	if grep -qF -- "$form" "$D/all.out" "$D/broker.log" "$D/broker2.log"; then
		not_ok "no secret form in what the guest received or the logs" "found: $form"
	else
		ok "no \"$(printf %s "$form" | cut -c1-6)...\" in the $(wc -c < "$D/all.out") bytes received or in the logs"
	fi
done
check_eq "one log line per request with status and rule" "1" \
	"$(grep -c "GET http://127.0.0.1:$GOOD/basic/b -> 200 rule=secret:BAS" "$D/broker.log")"

# Sanitizer builds (make SAN=address,undefined) report into the brokers' stderr.
if grep -q 'runtime error\|AddressSanitizer' "$D/broker.log" "$D/broker2.log"; then
	not_ok "no sanitizer report from the broker" "$(grep -h -A5 'runtime error\|AddressSanitizer' "$D/broker.log" "$D/broker2.log" | head -n 20)"
else
	ok "no sanitizer report from the broker"
fi

# Latency: the same upstream straight (TLS, keep-alive) and through the broker (keep-alive on
# both sides), same run; reported, never gated.
N=${BROKER_BENCH_N:-2000}
direct=$("$CLIENT" bench-direct "$GOOD" "$D/ca.pem" localhost /open/bench "$N" 2>&1)
via=$("$CLIENT" bench "$SOCK2" "http://localhost:$GOOD/open/bench" "$N" 2>&1)
if [ "$(echo "$direct" | wc -w)" -eq 3 ] && [ "$(echo "$via" | wc -w)" -eq 3 ]; then
	set -- $direct
	d50=$1 d90=$2 drps=$3
	set -- $via
	echo "# $N keep-alive requests: median direct $d50 us, via broker $1 us; p90 $d90 / $2 us;" \
		"req/s $drps / $3"
	ok "latency measured through the broker and direct"
else
	not_ok "latency measurement" "direct: $direct" "via: $via"
fi
plan_done
