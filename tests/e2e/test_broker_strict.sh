#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_strict.sh: request smuggling and lenient parsing through a real broker
# to real upstreams that record every request they receive: https-echo (TLS, http_parser 2.9
# non-strict, as lenient as the broker's own parser) and Python's http.server (plain HTTP,
# which splits request lines on any whitespace and ignores a header name with a space before
# its colon). Each malformed request must be refused with 400 and nothing of it may reach an
# upstream — above all no second request carrying an injected secret; well-formed ones, sent
# after, must reach them exactly as sent. Plain requests and requests in a CONNECT tunnel.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
TOOLS=$(cd "$BUILD/tests" 2> /dev/null && pwd)
ECHO=$TOOLS/https-echo
CLIENT=$TOOLS/proxy-client
RECORD=$(cd "$(dirname "$0")/../tools" && pwd)/record_upstream.py
require "strict parsing suite" "$BROKER" "$ECHO" "$CLIENT" openssl python3
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
D=$TMP

SECRET='strict-S3CRET-4821-zz'
PSECRET='plain-P4SS-9917-yy'

# wait_port FILE: the port a tool printed, once it has.
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$D/echo.log" > "$D/echo.port" \
	2> /dev/null &
pids="$pids $!"
GOOD=$(wait_port "$D/echo.port")
python3 "$RECORD" "$D/py.log" > "$D/py.port" 2> "$D/py.err" &
pids="$pids $!"
PY=$(wait_port "$D/py.port")
: > "$D/echo.log"
: > "$D/py.log"

LOOP='"allow_addresses": ["127.0.0.1"]'
cat > "$D/rules.json" << RULES
{ "secrets": [
    { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $GOOD,
                          "path_prefix": "/bearer/", $LOOP } ] },
    { "name": "PTOK", "inject": { "header": "X-Api-Key", "value": "{}" },
      "destinations": [ { "scheme": "http", "host": "127.0.0.1", "port": $PY,
                          "path_prefix": "/api/", $LOOP } ] } ] }
RULES
printf '{"TOK": "%s", "PTOK": "%s"}\n' "$SECRET" "$PSECRET" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/b.sock
"$BROKER" --listen "$SOCK" --rules "$D/rules.json" --secrets-file "$D/secrets.json" \
	--ca-file "$TMP/ca.pem" 2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ -z "$GOOD" ] || [ -z "$PY" ] || [ ! -S "$SOCK" ]; then
	not_ok "upstreams and broker start" "$(cat "$D/py.err" "$D/broker.log")"
	plan_done
	exit 1
fi

req() { "$CLIENT" raw "$SOCK" > "$D/$1.out"; } # NAME < request bytes
status_of() { head -n 1 "$D/$1.out" | tr -d '\r'; }
# nothing_upstream NAME: both upstreams' logs are still empty.
nothing_upstream() {
	if [ "$(status_of "$1")" = "HTTP/1.1 400 Bad Request" ] && [ ! -s "$D/echo.log" ] &&
		[ ! -s "$D/py.log" ]; then
		ok "$1: 400 ($(tail -n 1 "$D/$1.out" | cut -c11-90)), nothing reached an upstream"
	else
		not_ok "$1: 400 and nothing upstream" "$(cat "$D/$1.out")" \
			"https-echo got: $(cat "$D/echo.log")" "http.server got: $(cat "$D/py.log")"
	fi
	: > "$D/echo.log"
	: > "$D/py.log"
}

# The smuggles of issue 13: a space before the colon hides the framing from the broker, the
# upstream reads the body as a second request, and the body's placeholder is replaced with
# the secret on its way (the first request's rule allows it), outside the rule's path.
INNER='0\r\n\r\nGET /admin HTTP/1.1\r\nHost: localhost\r\nX-Stolen: BULKHEAD_SECRET_TOK\r\n\r\n'
N=$(printf "$INNER" | wc -c)
printf "POST http://localhost:$GOOD/bearer/x HTTP/1.1\r\nHost: localhost:$GOOD\r\nTransfer-Encoding : chunked\r\nConnection: close\r\n\r\n%x\r\n$INNER\r\n0\r\n\r\n" "$N" |
	req te_space
nothing_upstream te_space
PINNER='GET /admin HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Stolen: BULKHEAD_SECRET_PTOK\r\n\r\n'
N=$(printf "$PINNER" | wc -c)
printf "POST http://127.0.0.1:$PY/api/x HTTP/1.1\r\nHost: 127.0.0.1:$PY\r\nContent-Length : $N\r\nConnection: close\r\n\r\n$PINNER" |
	req cl_space
nothing_upstream cl_space
# A control character in the target: the prefix check saw "/api/..<TAB>", a server that
# splits on whitespace serves "/api/.." (the parent), with the secret.
printf "GET http://127.0.0.1:$PY/api/..\t HTTP/1.1\r\nConnection: close\r\n\r\n" | req tab_target
nothing_upstream tab_target
printf "GET http://127.0.0.1:$PY/api/..\f HTTP/1.1\r\nConnection: close\r\n\r\n" | req ff_target
nothing_upstream ff_target

# bad NAME FORMAT: each is refused with 400 and nothing reaches the upstream. The targets are
# all allowed (the secret's path): only the grammar refuses them.
bad() {
	printf "$2" | req "$1"
	nothing_upstream "$1"
}
P="http://127.0.0.1:$PY/api"
H="Host: 127.0.0.1:$PY\r\n"
bad obs_fold "POST $P/a HTTP/1.1\r\n${H}X-A: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n"
bad space_before_first_header "GET $P/a HTTP/1.1\r\n X-A: a\r\n${H}\r\n"
bad bare_lf "GET $P/a HTTP/1.1\n${H}\n"
bad bare_cr "GET $P/a HTTP/1.1\r\n${H}X-A: a\rTransfer-Encoding: chunked\r\n\r\n"
bad nul_in_value "GET $P/a HTTP/1.1\r\n${H}X-A: a\000b\r\n\r\n"
bad vt_in_value "GET $P/a HTTP/1.1\r\n${H}X-A: a\013b\r\n\r\n"
bad del_in_value "GET $P/a HTTP/1.1\r\n${H}X-A: a\177b\r\n\r\n"
bad name_not_token "GET $P/a HTTP/1.1\r\n${H}X(A): b\r\n\r\n"
bad http_1_2 "GET $P/a HTTP/1.2\r\n${H}\r\n"
bad http_2_0 "GET $P/a HTTP/2.0\r\n${H}\r\n"
bad http_0_9 "GET $P/a\r\n\r\n"
bad two_spaces "GET  $P/a HTTP/1.1\r\n${H}\r\n"
bad space_in_target "GET $P/a b HTTP/1.1\r\n${H}\r\n"
bad fragment "GET $P/a#x HTTP/1.1\r\n${H}\r\n"
bad backslash "GET $P/a\\\\..\\\\b HTTP/1.1\r\n${H}\r\n"
bad non_ascii_target "GET $P/\303\251 HTTP/1.1\r\n${H}\r\n"
bad bad_percent "GET $P/a%%zz HTTP/1.1\r\n${H}\r\n"
bad encoded_dots "GET $P/%%2e%%2e/admin HTTP/1.1\r\n${H}\r\n"
bad encoded_slash "GET $P%%2f..%%2fadmin HTTP/1.1\r\n${H}\r\n"
bad dot_dot_semicolon "GET $P/..;/admin HTTP/1.1\r\n${H}\r\n"
bad encoded_nul "GET $P/a%%00.txt HTTP/1.1\r\n${H}\r\n"
bad tab_in_method "GE\tT $P/a HTTP/1.1\r\n${H}\r\n"
bad sign_in_length "POST $P/a HTTP/1.1\r\n${H}Content-Length: +3\r\n\r\nabc"
bad two_lengths "POST $P/a HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
bad te_and_cl "POST $P/a HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
bad te_not_chunked "POST $P/a HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
bad te_in_http_1_0 "POST $P/a HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
bad host_mismatch "GET $P/a HTTP/1.1\r\nHost: localhost:$PY\r\n\r\n"

# A chunked body streams: its head (in the broker's own framing) is upstream before a bad
# chunk arrives. The request is then cut: the upstream never gets a complete message, so
# nothing after the bad chunk can be read there as a request of its own.
bad_chunk() { # NAME CHUNKS
	printf "POST http://localhost:$GOOD/bearer/c HTTP/1.1\r\nHost: localhost:$GOOD\r\nTransfer-Encoding: chunked\r\n\r\n$2" |
		req "$1"
	if [ "$(status_of "$1")" = "HTTP/1.1 400 Bad Request" ] &&
		[ "$(grep -c '^POST /bearer/c$' "$D/echo.log")" = 1 ] &&
		[ "$(grep -c '^[A-Z]* /' "$D/echo.log")" = 1 ] && ! grep -q '^body:' "$D/echo.log"; then
		ok "$1: 400 ($(tail -n 1 "$D/$1.out" | cut -c11-90)), the upstream got no complete request"
	else
		not_ok "$1: 400, request cut upstream" "$(cat "$D/$1.out")" "$(cat "$D/echo.log")"
	fi
	: > "$D/echo.log"
}
bad_chunk chunk_extension '3;x=1\r\nabc\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: localhost\r\n\r\n'
bad_chunk chunk_size_junk '3 z\r\nabc\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: localhost\r\n\r\n'
bad_chunk chunk_data_junk '3\r\nabcXX0\r\n\r\nGET /admin HTTP/1.1\r\nHost: localhost\r\n\r\n'
bad_chunk chunk_bare_lf '3\nabc\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: localhost\r\n\r\n'

# The same grammar inside a CONNECT tunnel (the session CA signs the broker's leaf).
printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' | req ca
sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' "$D/ca.out" > "$D/sca.pem"
tunnel() { "$CLIENT" tunnel "$SOCK" "localhost:$GOOD" localhost localhost "$D/sca.pem" > "$D/$1.out"; }
N=$(printf "$INNER" | wc -c)
printf "POST /bearer/x HTTP/1.1\r\nHost: localhost:$GOOD\r\nTransfer-Encoding : chunked\r\n\r\n%x\r\n$INNER\r\n0\r\n\r\n" "$N" |
	tunnel t_te_space
if [ "$(sed -n 3p "$D/t_te_space.out" | tr -d '\r')" = "HTTP/1.1 400 Bad Request" ] &&
	grep -q 'before its colon' "$D/t_te_space.out" && [ ! -s "$D/echo.log" ]; then
	ok "in a tunnel: Transfer-Encoding with a space before the colon is refused, nothing upstream"
else
	not_ok "tunnel smuggle refused" "$(cat "$D/t_te_space.out")" "$(cat "$D/echo.log")"
fi
: > "$D/echo.log"
printf "GET /bearer/..\t HTTP/1.1\r\nHost: localhost:$GOOD\r\n\r\n" | tunnel t_tab
if [ "$(sed -n 3p "$D/t_tab.out" | tr -d '\r')" = "HTTP/1.1 400 Bad Request" ] &&
	[ ! -s "$D/echo.log" ]; then
	ok "in a tunnel: a TAB in the target is refused, nothing upstream"
else
	not_ok "tunnel TAB refused" "$(cat "$D/t_tab.out")" "$(cat "$D/echo.log")"
fi
: > "$D/echo.log"

# Well-formed requests still pass, and the upstreams see exactly them: one connection with a
# Content-Length body, a chunked body with a trailer, and a GET, pipelined.
printf "POST $P/one HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabcPOST $P/two HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\nX-Trailer: t\r\n\r\nGET $P/three HTTP/1.1\r\n${H}Connection: close\r\n\r\n" |
	req good
got=$(sed 's/ |.*//' "$D/py.log" | tr '\n' ',')
if [ "$(grep -c '^HTTP/1.1 200' "$D/good.out")" = 3 ] &&
	[ "$got" = "REQ POST /api/one,REQ POST /api/two,REQ GET /api/three," ] &&
	[ "$(grep -c "X-Api-Key: $PSECRET" "$D/py.log")" = 3 ]; then
	ok "well-formed pipelined requests: the upstream received exactly those three, each with its secret"
else
	not_ok "well-formed requests pass unchanged" "$(cat "$D/good.out")" "$(cat "$D/py.log")"
fi
# A malformed request after a good one on the same connection is still answered with 400.
: > "$D/py.log"
printf "GET $P/keep HTTP/1.1\r\n${H}\r\nGET $P/..\t HTTP/1.1\r\n${H}\r\n" | req keep_bad
if [ "$(grep -c '^HTTP/1.1 ' "$D/keep_bad.out")" = 2 ] && grep -q '^HTTP/1.1 400' "$D/keep_bad.out" &&
	[ "$(sed 's/ |.*//' "$D/py.log" | tr '\n' ,)" = "REQ GET /api/keep," ]; then
	ok "a good request then a malformed one: 200, then 400; the upstream got only the first"
else
	not_ok "good then malformed on one connection" "$(cat "$D/keep_bad.out")" "$(cat "$D/py.log")"
fi
printf "GET /bearer/ok HTTP/1.1\r\nHost: localhost:$GOOD\r\nConnection: close\r\n\r\n" | tunnel t_good
if [ "$(sed -n 3p "$D/t_good.out" | tr -d '\r')" = "HTTP/1.1 200 OK" ] &&
	[ "$(grep -c '^GET ' "$D/echo.log")" = 1 ] && grep -q "^GET /bearer/ok" "$D/echo.log"; then
	ok "a well-formed request in a tunnel: the upstream received exactly it"
else
	not_ok "tunnel request passes" "$(cat "$D/t_good.out")" "$(cat "$D/echo.log")"
fi
if grep -q 'runtime error\|AddressSanitizer' "$D/broker.log"; then
	not_ok "no sanitizer report from the broker" "$(grep -A5 'runtime error\|AddressSanitizer' "$D/broker.log" | head -n 20)"
else
	ok "no sanitizer report from the broker"
fi
plan_done
