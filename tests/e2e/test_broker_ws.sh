#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_ws.sh: WebSockets through the real broker, host only, with Debian's
# python3-websockets at both ends (tests/tools/ws_peer.py) over real TLS: the client through
# CONNECT and the session CA, the server a secret's destination that gets the token in the
# handshake. Echo of text and binary, a greeting sent with the 101, fragmented messages both
# ways, the token echoed (scrubbed, in text, binary and a close reason), a placeholder replaced
# toward its destination and tripped toward another, ping, close codes from each side, the
# idle bound, an extension no one offered, other upgrades; one audit record per WebSocket
# (docs/THREAT-MODEL.md "WebSockets").
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
PEER=$(dirname "$0")/../tools/ws_peer.py
require "WebSocket suite" "$BROKER" "$CLIENT" python3 openssl py:websockets

D=$TMP
SECRET='sk-W3bS0cketT0ken-0123456789abcdef'
mkdir -p "$D/ctl"
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
"$PY" "$PEER" serve --cert "$D/up.pem" --key "$D/up.key" --ctl "$D/ctl" > "$D/up.port" \
	2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")

start_broker() { # NAME [BROKER-OPTION...]
	_name=$1
	shift
	cat > "$D/$_name.rules.json" << RULES
{
  "secrets": [
    { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/", "allow_addresses": ["127.0.0.1"] } ] },
    { "name": "OTHER", "inject": { "header": "X-Other", "value": "{}" },
      "destinations": [ { "scheme": "https", "host": "other.example", "port": 443,
                          "path_prefix": "/" } ] }
  ]
}
RULES
	printf '{"TOK": "%s", "OTHER": "other-s3cret-value-0123456789"}\n' "$SECRET" \
		> "$D/$_name.secrets.json"
	chmod 600 "$D/$_name.secrets.json"
	"$BROKER" --listen "$D/$_name.sock" --rules "$D/$_name.rules.json" \
		--secrets-file "$D/$_name.secrets.json" --ca-file "$D/ca.pem" \
		--audit "$D/$_name.audit" "$@" 2> "$D/$_name.log" &
	pids="$pids $!"
	wait_socket "$D/$_name.sock" 5
	[ -S "$D/$_name.sock" ]
}
if [ -z "$PORT" ] || ! start_broker b; then
	not_ok "upstream and broker start" "$(cat "$D/up.err" "$D/b.log" 2> /dev/null)"
	plan_done
	exit 1
fi
session_ca() { # SOCK: its session CA in SOCK.ca.pem, as bulkhead-init fetches it
	printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' |
		"$CLIENT" raw "$1" |
		sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' > "$1.ca.pem"
}
session_ca "$D/b.sock"
ok "a WebSocket server (python3-websockets, TLS) and a broker with a token for it"

# ws NAME SOCK SCRIPT [PATH]: the client's JSON in $D/NAME.json.
ws() { # NAME SOCK SCRIPT [PATH [CLIENT-OPTION...]]
	_wn=$1 _s=$2 _sc=$3 _p=${4:-/$1}
	shift 3
	[ $# -gt 0 ] && shift
	timeout 60 "$PY" "$PEER" client --broker "$_s" --port "$PORT" --ca "$_s.ca.pem" \
		--script "$_sc" --path "$_p" "$@" > "$D/$_wn.json" 2> "$D/$_wn.err"
}
# j NAME EXPR: a Python expression over the JSON FILE's j.
j() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$1" "$2" 2> /dev/null
}
R='[bulkhead:redacted]'

ws main "$D/b.sock" main
srv=$D/ctl/main.json
if [ "$(j "$D/main.json" 'j["greeting"]')" = hello ] &&
	[ "$(j "$D/main.json" 'j["echo_text"]')" = ping-text ] &&
	[ "$(j "$D/main.json" 'j["echo_binary"]')" = AAFiaW5hcnn/ ] &&
	[ "$(j "$srv" 'j["key_received"]')" = True ]; then
	ok "handshake with the token injected; the 101's greeting, text and binary echoed as sent"
else
	not_ok "WebSocket echo" "$(head -c 600 "$D/main.json" "$D/main.err" "$srv")" \
		"$(tail -n 3 "$D/b.log")"
fi
if [ "$(j "$D/main.json" 'j["token_text"]')" = "token=$R" ] &&
	[ "$(j "$D/main.json" 'j["token_binary"]')" = "bin:$R" ] &&
	! grep -qF "$SECRET" "$D/main.json"; then
	ok "the token echoed in a text and a binary message reaches the client scrubbed"
else
	not_ok "messages scrubbed" "$(head -c 600 "$D/main.json")"
fi
if [ "$(j "$D/main.json" 'j["placeholder"]')" = placeholder-ok ]; then
	ok "a placeholder in the client's message reaches the token's destination as the token"
else
	not_ok "placeholder replaced in a message" "$(head -c 600 "$D/main.json")"
fi
if [ "$(j "$D/main.json" 'j["big_up"]')" = "[3145728, True]" ] &&
	[ "$(j "$D/main.json" 'j["big_down"]')" = 1048576 ]; then
	ok "fragmented messages both ways (3 MiB in 48 fragments up, 1 MiB in 16 down), whole"
else
	not_ok "fragmented messages" "$(head -c 600 "$D/main.json")"
fi
if [ "$(j "$D/main.json" 'j["pong"]')" = True ] &&
	[ "$(j "$D/main.json" 'j["extensions"]')" = "[]" ] &&
	[ "$(j "$srv" 'j["extensions"]')" = "[]" ]; then
	ok "ping answered; the client's permessage-deflate offer is not passed on (no extension)"
else
	not_ok "ping and extensions" "$(head -c 600 "$D/main.json" "$srv")"
fi
if [ "$(j "$srv" 'j["close_code"]')" = 4001 ] &&
	[ "$(j "$srv" 'j["close_reason"]')" = "client bye" ] &&
	[ "$(j "$D/main.json" 'j["close_code"]')" = 4001 ]; then
	ok "a close from the client reaches the server with its code and reason (4001)"
else
	not_ok "client close" "$(head -c 600 "$D/main.json" "$srv")"
fi
ws burst "$D/b.sock" burst
if [ "$(j "$D/ctl/burst.json" 'j["messages"]')" = "['b0', 'b1', 'b2', 'b3', 'b4']" ] &&
	[ "$(j "$D/ctl/burst.json" 'j["close_code"]')" = 4005 ]; then
	ok "five messages and a close sent at once all reach the server, then the close (4005)"
else
	not_ok "messages right before a close" "$(head -c 400 "$D/ctl/burst.json" "$D/burst.err")" "$(grep /burst "$D/b.log")"
fi
ws srvclose "$D/b.sock" server-close
if [ "$(j "$D/srvclose.json" 'j["close_code"]')" = 4002 ] &&
	[ "$(j "$D/srvclose.json" 'j["close_reason"]')" = "" ] &&
	! grep -qF "$SECRET" "$D/srvclose.json"; then
	ok "a close from the server reaches the client with its code (4002), a reason naming the token dropped"
else
	not_ok "server close" "$(head -c 600 "$D/srvclose.json" "$D/srvclose.err")"
fi

# A placeholder for a secret whose destination is elsewhere: the message goes nowhere, both
# sides are closed with 1008, the record says tripwire.
ws trip "$D/b.sock" tripwire
if [ "$(j "$D/trip.json" 'j["close_code"]')" = 1008 ] &&
	[ "$(j "$D/ctl/trip.json" '[m for m in j["messages"] if "OTHER" in m]')" = "[]" ] &&
	grep -q '"path":"/trip".*"decision":"tripwire"' "$D/b.audit"; then
	ok "a placeholder toward another host's secret: not sent, closed 1008, audited tripwire"
else
	not_ok "tripwire in a message" "$(head -c 400 "$D/trip.json" "$D/ctl/trip.json")" \
		"$(grep /trip "$D/b.audit")"
fi

# An upstream that accepts an extension no one offered (permessage-deflate would hide the
# messages from the scrubber): refused 502. Other upgrades: 501.
ws ext "$D/b.sock" main /ext
if [ "$(j "$D/ext.json" 'j.get("handshake_status")')" = 502 ] &&
	grep -q 'accepted a WebSocket extension none offered' "$D/b.log"; then
	ok "an upstream's unoffered extension in its 101 is refused (502)"
else
	not_ok "unoffered extension" "$(head -c 400 "$D/ext.json" "$D/ext.err")" "$(grep /ext "$D/b.log")"
fi
# A subprotocol: the one offered and chosen passes; one the client never offered is refused
# (the client itself checks, but not every client does).
ws proto "$D/b.sock" server-close /proto --proto chat.v1
ws badproto "$D/b.sock" main /badproto
if [ "$(j "$D/proto.json" 'j["subprotocol"]')" = chat.v1 ] &&
	[ "$(j "$D/badproto.json" 'j.get("handshake_status")')" = 502 ] &&
	grep -q 'chose a WebSocket subprotocol the client did not offer' "$D/b.log"; then
	ok "a subprotocol offered and chosen passes; one never offered is refused (502)"
else
	not_ok "subprotocols" "$(head -c 300 "$D/proto.json" "$D/badproto.json")"
fi
printf 'GET https://localhost:%s/x HTTP/1.1\r\nHost: localhost:%s\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n' \
	"$PORT" "$PORT" | "$CLIENT" raw "$D/b.sock" > "$D/h2c.out" 2>&1
printf 'GET https://localhost:%s/x HTTP/1.1\r\nHost: localhost:%s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n' \
	"$PORT" "$PORT" | "$CLIENT" raw "$D/b.sock" > "$D/nokey.out" 2>&1
if head -n 1 "$D/h2c.out" | grep -q '^HTTP/1.1 501 ' &&
	head -n 1 "$D/nokey.out" | grep -q '^HTTP/1.1 400 '; then
	ok "Upgrade: h2c is refused (501); a WebSocket handshake without a key (400)"
else
	not_ok "other upgrades" "$(head -c 300 "$D/h2c.out" "$D/nokey.out")"
fi

# Hostile frames from the guest, each answered with the close code RFC 6455 names, the broker
# serving on: unmasked (1002), invalid UTF-8 in a text message (1007), a length of 2^63 (1009,
# nothing allocated: its first payload byte is enough), a continuation with nothing to continue
# (1002), a 126-byte ping (wslay fails it with an empty close). Each WebSocket is recorded.
hostile() { # NAME HEX WANT
	timeout 30 "$PY" "$PEER" raw --broker "$D/b.sock" --port "$PORT" --ca "$D/b.sock.ca.pem" \
		--frames "$2" > "$D/raw-$1.json" 2> "$D/raw-$1.err"
	_got=$(j "$D/raw-$1.json" 'j.get("close_code")')
	[ "$_got" = "$3" ] || echo "$1: $_got, not $3: $(cat "$D/raw-$1.json" "$D/raw-$1.err"; grep /raw "$D/b.log" | tail -n 1)" >> "$D/hostile.bad"
}
hostile unmasked 810568656c6c6f 1002
hostile utf8 8184000000008081fffe 1007
hostile huge 81ff7fffffffffffffff0000000000 1009
hostile cont 808000000000 1002
hostile bigping 89fe007e00000000"$(printf '%0252d' 0)" 0
ws after "$D/b.sock" server-close
if [ ! -s "$D/hostile.bad" ] && [ "$(j "$D/after.json" 'j["close_code"]')" = 4002 ] &&
	[ "$(grep -c '/raw -> 101 .*by=broker' "$D/b.log")" = 5 ]; then
	ok "hostile frames from the guest get 1002, 1007, 1009 as RFC 6455 says; the broker serves on"
else
	not_ok "hostile frames" "$(cat "$D/hostile.bad" 2> /dev/null)" "$(head -c 300 "$D/after.json")" \
		"$(grep '/raw ' "$D/b.log")"
fi

# One record per WebSocket: messages each way, the close's code and who began it.
if grep -q '"path":"/main".*"status":101,"outcome":"answered".*"websocket":{"messages_out":6,"messages_in":8,"close_code":4001,"closed_by":"guest"}' "$D/b.audit" &&
	grep -q '"path":"/srvclose".*"websocket":{[^}]*"close_code":4002,"closed_by":"upstream"}' "$D/b.audit" &&
	[ "$(grep -c '"path":"/main"' "$D/b.audit")" = 1 ]; then
	ok "one audit record per WebSocket: messages each way, close code, who closed"
else
	not_ok "WebSocket audit records" "$(grep -E '/main|/srvclose' "$D/b.audit")"
fi
if "$BIN/bulkhead" audit verify "$D/b.audit" > /dev/null 2>&1; then
	ok "the audit log's chain verifies"
else
	not_ok "audit verify" "$("$BIN/bulkhead" audit verify "$D/b.audit" 2>&1)"
fi

# Silent both ways past --stream-idle-timeout: both sides get 1001.
if start_broker idle --stream-idle-timeout 1; then
	session_ca "$D/idle.sock"
	ws idle "$D/idle.sock" idle
	if [ "$(j "$D/idle.json" 'j["close_code"]')" = 1001 ] &&
		[ "$(j "$D/ctl/idle.json" 'j["close_code"]')" = 1001 ] &&
		grep -q '"path":"/idle".*"outcome":"idle_timeout"' "$D/idle.audit"; then
		ok "a WebSocket silent past --stream-idle-timeout 1 is closed 1001 on both sides"
	else
		not_ok "idle WebSocket" "$(head -c 400 "$D/idle.json" "$D/ctl/idle.json")"
	fi
else
	not_ok "the idle broker starts" "$(cat "$D/idle.log")"
fi

# A guest's hang-up ends its WebSocket at once, even when the upstream answers nothing (a
# red-team round saw the worker, the upstream's connection and the record wait for the 5 s
# close grace). The upstream is busy 8 s after "hold-close": this runs last.
t0=$(date +%s%N)
ws hangup "$D/b.sock" hangup
i=0
while ! grep -q '"path":"/hangup".*"outcome":"guest_closed"' "$D/b.audit" && [ $i -lt 100 ]; do
	sleep 0.05; i=$((i + 1))
done
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$(j "$D/hangup.json" 'j["aborted"]')" = True ] && [ $i -lt 100 ] && [ $ms -lt 3000 ]; then
	ok "a guest's hang-up ends its WebSocket at once, the upstream's close not waited for (recorded in $ms ms)"
else
	not_ok "a guest's hang-up ends its WebSocket at once" "$ms ms" "$(head -c 300 "$D/hangup.json" "$D/hangup.err")" \
		"$(grep /hangup "$D/b.audit")"
fi

plan_done
