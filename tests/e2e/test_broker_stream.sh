#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_stream.sh: streamed answers through the real broker, host only. A
# lockstep upstream (tests/tools/stream_lockstep.py, real TLS) sends message k+1 of an SSE or
# NDJSON stream only once the client holds message k, from the secret's own destination with
# the token injected and echoed in every message: each message must arrive whole, before the
# next is sent, scrubbed (docs/THREAT-MODEL.md "Streamed responses"). Plain requests and
# CONNECT tunnels; a body with no message framing keeps the fixed lag; a secret holding a line
# end turns framing off; a stream may be silent up to --stream-idle-timeout, and a guest's
# hang-up ends the wait at once; a stream that parks between events (docs/THREAT-MODEL.md
# "Long-lived streams") serves the request pipelined behind it once it ends.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
TOOL=$(dirname "$0")/../tools/stream_lockstep.py
require "streamed answers suite" "$BROKER" "$CLIENT" python3 openssl

D=$TMP
SECRET='sk-Str3amT0ken-0123456789abcdef'
R='[bulkhead:redacted]'
mkdir -p "$D/ctl"

if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
python3 "$TOOL" serve --cert "$D/up.pem" --key "$D/up.key" --ctl "$D/ctl" > "$D/up.port" \
	2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")

start_broker() { # NAME SECRET-JSON-VALUE [INJECT-JSON [BROKER-OPTION...]]
	_name=$1 _sec=$2 _inj='{ "header": "X-Api-Key", "value": "{}" }'
	shift 2
	if [ $# -gt 0 ]; then
		_inj=$1
		shift
	fi
	cat > "$D/$_name.rules.json" << RULES
{
  "secrets": [
    { "name": "TOK", "inject": $_inj,
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/", "allow_addresses": ["127.0.0.1"] } ] }
  ]
}
RULES
	printf '{"TOK": "%s"}\n' "$_sec" > "$D/$_name.secrets.json"
	chmod 600 "$D/$_name.secrets.json"
	"$BROKER" --listen "$D/$_name.sock" --rules "$D/$_name.rules.json" \
		--secrets-file "$D/$_name.secrets.json" --ca-file "$D/ca.pem" "$@" 2> "$D/$_name.log" &
	pids="$pids $!"
	wait_socket "$D/$_name.sock" 5
	[ -S "$D/$_name.sock" ]
}
if [ -z "$PORT" ] || ! start_broker b "$SECRET"; then
	not_ok "upstream and broker start" "$(cat "$D/up.err" "$D/b.log" 2> /dev/null)"
	plan_done
	exit 1
fi
ok "a lockstep streaming upstream and a broker with an injected token"

# stream NAME SOCK PATH [--tunnel --ca PEM]: the client's JSON summary in $D/NAME.json.
stream() {
	_n1=$1 _s=$2 _p=$3
	shift 3
	python3 "$TOOL" client --broker "$_s" --url "https://localhost:$PORT$_p&id=$_n1" \
		--ctl "$D/ctl" --id "$_n1" "$@" > "$D/$_n1.json" 2> "$D/$_n1.err"
}
# field NAME EXPR: a Python expression over the summary j.
field() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$D/$1.json" "$2" 2> /dev/null
}
# Each message whole, none held back, the token replaced in each, nowhere in clear.
check_stream() { # NAME WHAT N
	if [ "$(field "$1" 'j["status"]')" = 200 ] &&
		[ "$(field "$1" 'len(j["messages"])')" = "$3" ] &&
		[ "$(field "$1" 'j["held"]')" = "[]" ] &&
		[ "$(field "$1" 'all("[bulkhead:redacted]" in m for m in j["messages"])')" = True ] &&
		[ "$(cat "$D/ctl/$1.late" 2> /dev/null)" = "" ] &&
		! grep -qF "$SECRET" "$D/$1.json"; then
		ok "$2: each of $3 messages arrives before the next is sent, token scrubbed"
	else
		not_ok "$2: messages as produced" "$(head -c 800 "$D/$1.json" "$D/$1.err")" \
			"late: $(cat "$D/ctl/$1.late" 2> /dev/null)"
	fi
}

# Plain requests (the guest's proxy shim sends these for http:// URLs; https by the rule).
stream sse "$D/b.sock" "/sse?n=5&echo=1"
check_stream sse "SSE (LF), token injected and echoed" 5
stream crlf "$D/b.sock" "/sse-crlf?n=4&echo=1"
check_stream crlf "SSE (CRLF)" 4
stream cr "$D/b.sock" "/sse-cr?n=4&echo=1"
check_stream cr "SSE (lone CR: the event ends at its CR, never waits for the next byte)" 4
stream nd "$D/b.sock" "/ndjson?n=4&echo=1"
check_stream nd "NDJSON" 4
if grep -q 'GET https://localhost:[0-9]*/ndjson -> 200 .*scrubbed=4 messages=4 ' "$D/b.log"; then
	ok "the broker's log counts the stream's messages and replacements"
else
	not_ok "messages in the broker's log" "$(grep ndjson "$D/b.log")"
fi
if [ "$(field sse 'j["content_type"]')" = text/event-stream ] &&
	[ "$(field sse 'j["messages"][0]')" = "data: {\"k\": 1, \"delta\": \"word1 \", \"key\": \"$R\"}" ]
then
	ok "an event is relayed byte for byte but for the replacement, Content-Type kept"
else
	not_ok "event bytes" "$(head -c 400 "$D/sse.json")"
fi

# Through a CONNECT tunnel, TLS ended at the session CA's leaf, as HTTPS clients do.
printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' |
	"$CLIENT" raw "$D/b.sock" > "$D/sessionca.out"
sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' "$D/sessionca.out" \
	> "$D/session-ca.pem"
stream tun "$D/b.sock" "/sse?n=4&echo=1" --tunnel --ca "$D/session-ca.pem"
check_stream tun "SSE inside a CONNECT tunnel" 4

# A stream that parks between its events (0.3 s apart, past the worker's linger), with a
# second request pipelined behind it and the guest's sending side shut at once (proxy-client
# raw): the events arrive scrubbed, then the second request's answer once the stream ended.
printf 'GET https://localhost:%s/sse?n=3&pause=0.3&echo=1&id=pipe HTTP/1.1\r\nHost: localhost:%s\r\n\r\nGET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' \
	"$PORT" "$PORT" | timeout 20 "$CLIENT" raw "$D/b.sock" > "$D/pipe.out" 2> "$D/pipe.err"
events=$(grep -c '^data: {"k": [123], .*\[bulkhead:redacted\]' "$D/pipe.out")
order=$(grep -n 'word3\|BEGIN CERTIFICATE' "$D/pipe.out" | cut -d: -f1 | tr '\n' ' ')
if [ "$events" = 3 ] && ! grep -qF "$SECRET" "$D/pipe.out" &&
	[ "$(echo $order | awk '{ print ($1 < $2) }')" = 1 ]; then
	ok "a parked stream with a request pipelined behind it and the guest's side half closed: 3 events scrubbed, then the second answer"
else
	not_ok "pipelined after a parked stream" "events: $events, lines: $order" \
		"$(head -c 1200 "$D/pipe.out")" "$(tail -n 3 "$D/b.log")"
fi

# A body without message framing is one message: its tail waits at the fixed lag (until more
# bytes or the end), so the first line is still held when the upstream gives up waiting.
stream plain "$D/b.sock" "/plain?n=2&echo=1"
if [ "$(field plain 'j["held"]')" = "[1]" ] && [ "$(cat "$D/ctl/plain.late")" = 1 ] &&
	[ "$(field plain 'j["body"].count("[bulkhead:redacted]")')" = 2 ] &&
	! grep -qF "$SECRET" "$D/plain.json"; then
	ok "text/plain: no framing, the fixed lag holds (whole and scrubbed at its end)"
else
	not_ok "text/plain keeps the fixed lag" "$(head -c 500 "$D/plain.json")"
fi

# A secret with a line end could be cut by a message end: framing is off for every response.
# (In a query parameter: a header cannot carry it.)
if start_broker nl 'line-one\nline-two-0123456789' '{ "query": "key" }'; then
	stream nl "$D/nl.sock" "/sse?n=2&echo=1"
	if [ "$(field nl 'j["held"]')" = "[1]" ] && [ "$(cat "$D/ctl/nl.late")" = 1 ] &&
		[ "$(field nl 'j["body"].count("[bulkhead:redacted]")')" = 2 ]; then
		ok "a secret holding LF: SSE back to the fixed lag, still scrubbed"
	else
		not_ok "a secret holding LF turns framing off" "$(head -c 500 "$D/nl.json")"
	fi
else
	not_ok "second broker starts" "$(cat "$D/nl.log")"
fi

# Silence: between a stream's messages the upstream may be quiet past --io-timeout, up to
# --stream-idle-timeout; a body without framing keeps --io-timeout; past the stream's bound
# it is cut. A guest that hangs up ends the broker's wait at once, not at the next message.
H='{ "header": "X-Api-Key", "value": "{}" }'
if start_broker quiet "$SECRET" "$H" --io-timeout 1 --stream-idle-timeout 4; then
	stream q1 "$D/quiet.sock" "/sse?n=2&pause=2.5&echo=1"
	stream q2 "$D/quiet.sock" "/plain?n=2&pause=2.5"
	if [ "$(field q1 'len(j["messages"])')" = 2 ] && ! grep -q '<cut>' "$D/q1.json" &&
		grep -q 'bulkhead-broker: event loop: .*streams silent 4 s' "$D/quiet.log"; then
		ok "an SSE stream silent 2.5 s between events outlives --io-timeout 1 (--stream-idle-timeout 4)"
	else
		not_ok "a quiet stream within --stream-idle-timeout" "$(head -c 500 "$D/q1.json" "$D/q1.err")"
	fi
	if grep -q '<cut>' "$D/q2.json" && [ "$(field q2 'j["body"].count("word2")')" = 0 ]; then
		ok "a text/plain body silent as long is cut at --io-timeout 1"
	else
		not_ok "an unframed body keeps --io-timeout" "$(head -c 500 "$D/q2.json" "$D/q2.err")"
	fi
	stream q3 "$D/quiet.sock" "/sse?n=2&pause=3&echo=1" --close-after 1
	i=0
	while ! grep -q '/sse -> 200 .*outcome=guest_closed' "$D/quiet.log" && [ $i -lt 40 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if grep -q '/sse -> 200 .*outcome=guest_closed' "$D/quiet.log" && [ $i -lt 40 ]; then
		ok "a guest hanging up on a silent stream ends the broker's wait at once (guest_closed)"
	else
		not_ok "a hang-up ends a silent stream's wait" "$(grep /sse "$D/quiet.log")"
	fi
else
	not_ok "the quiet broker starts" "$(cat "$D/quiet.log")"
fi
if start_broker short "$SECRET" "$H" --io-timeout 1 --stream-idle-timeout 1; then
	stream q4 "$D/short.sock" "/sse?n=2&pause=2.5&echo=1"
	if grep -q '<cut>' "$D/q4.json" && [ "$(field q4 'len(j["messages"])')" = 1 ]; then
		ok "a stream silent past --stream-idle-timeout is cut"
	else
		not_ok "a stream past its silence bound is cut" "$(head -c 500 "$D/q4.json" "$D/q4.err")"
	fi
else
	not_ok "the short broker starts" "$(cat "$D/short.log")"
fi

# Hostile heads from the secret's destination: a folded line would carry the token past the
# scrubber in two halves (refused, 502); a head trickled a byte at a time is cut at
# --head-timeout from its first byte (504), however short its silences.
if start_broker heads "$SECRET" "$H" --head-timeout 2; then
	printf 'GET https://localhost:%s/fold HTTP/1.1\r\nHost: localhost:%s\r\n\r\n' "$PORT" "$PORT" |
		"$CLIENT" raw "$D/heads.sock" > "$D/fold.out" 2>&1
	if head -n 1 "$D/fold.out" | grep -q '^HTTP/1.1 502 ' &&
		! grep -q 'Str3am' "$D/fold.out" && grep -q 'folded header line' "$D/heads.log"; then
		ok "a folded header line from the upstream is refused (502), no half of the token out"
	else
		not_ok "obs-fold refused" "$(head -c 400 "$D/fold.out")"
	fi
	t0=$(date +%s)
	printf 'GET https://localhost:%s/slow-head HTTP/1.1\r\nHost: localhost:%s\r\n\r\n' "$PORT" \
		"$PORT" | timeout 30 "$CLIENT" raw "$D/heads.sock" > "$D/slow.out" 2>&1
	t1=$(date +%s)
	if head -n 1 "$D/slow.out" | grep -q '^HTTP/1.1 504 Gateway Timeout' && [ $((t1 - t0)) -lt 10 ] &&
		grep -q "did not send its answer's head within 2 s" "$D/heads.log"; then
		ok "an upstream head trickled a byte each 0.2 s is cut at --head-timeout 2 (504)"
	else
		not_ok "upstream head deadline" "$((t1 - t0)) s: $(head -c 300 "$D/slow.out")"
	fi
else
	not_ok "the heads broker starts" "$(cat "$D/heads.log")"
fi

plan_done
