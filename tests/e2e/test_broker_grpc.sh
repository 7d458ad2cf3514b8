#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_grpc.sh: HTTP/2 on both sides of the broker (broker/h2_front.c toward
# the guest, broker/h2_up.c toward the upstream). Debian's python3-grpcio at both ends
# (tests/tools/grpc_peer.py: the client through the broker's CONNECT with the session CA as its
# only root, the server speaking only HTTP/2), and Debian's curl against nghttpd, an upstream
# that speaks nothing but HTTP/2:
#  - unary: the token injected as metadata, its echo in trailing metadata scrubbed;
#  - server streaming: 20 messages arrive as they are sent, not at the end, and a stream
#    silent longer than --io-timeout (but within --stream-idle-timeout) goes on;
#  - client streaming: 3 MiB up in 48 messages, every byte;
#  - the token inside a message is never seen by the client;
#  - nghttpd: 2 MB down and 3 MB up (with and without a length) byte for byte; a HEAD;
#  - an HTTP/1.1 client to an upstream that speaks only HTTP/2: 502 with the reason.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
TOOLS=$(dirname "$0")/../tools
require "gRPC suite" "$BROKER" "$CLIENT" openssl curl
if ! debian_python grpc; then
	skip "gRPC suite" "python3-grpcio is not installed (make deps)"
	plan_done
	exit 0
fi
D=$TMP
SECRET='sk-gRPC-T0ken-0123456789abcdef'
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
"$PY" "$TOOLS/grpc_peer.py" serve --cert "$D/up.pem" --key "$D/up.key" --secret "$SECRET" \
	> "$D/grpc.port" 2> "$D/grpc.err" &
pids="$pids $!"
GPORT=$(wait_port "$D/grpc.port")
NPORT=
if command -v nghttpd > /dev/null; then
	mkdir "$D/htdocs"
	head -c 2000000 /dev/urandom > "$D/htdocs/big"
	# nghttpd takes a port, not 0: one the kernel just gave out and took back.
	NPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	nghttpd --htdocs="$D/htdocs" --echo-upload --address=127.0.0.1 "$NPORT" "$D/up.key" \
		"$D/up.pem" > "$D/nghttpd.log" 2>&1 &
	pids="$pids $!"
fi
dest() { # PORT: a destination of TOK
	printf '{ "scheme": "https", "host": "localhost", "port": %s, "path_prefix": "/",
	          "allow_addresses": ["127.0.0.1"] }' "$1"
}
cat > "$D/rules.json" << RULES
{ "secrets": [ { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
    "destinations": [ $(dest "$GPORT")${NPORT:+, $(dest "$NPORT")} ] } ] }
RULES
printf '{"TOK": "%s"}\n' "$SECRET" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
if [ -z "$GPORT" ] || ! relayed_broker "$D" --io-timeout 2 --stream-idle-timeout 30; then
	not_ok "gRPC server, broker and relay start" \
		"$(cat "$D/grpc.err" "$D/broker.log" "$D/relay.err")"
	plan_done
	exit 1
fi
R='[bulkhead:redacted]'

timeout 90 "$PY" "$TOOLS/grpc_peer.py" client --proxy "http://127.0.0.1:$RELAY" \
	--port "$GPORT" --ca "$D/session-ca.pem" > "$D/g.json" 2> "$D/g.err"
j() { "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
	"$D/g.json" "$1" 2> /dev/null; }
if [ "$(j 'j["unary"]')" = key_ok ] && [ "$(j 'j["trailing"]')" = "key=$R" ]; then
	ok "unary gRPC: the token injected as metadata, its echo in trailing metadata scrubbed"
else
	not_ok "unary gRPC" "$(head -c 600 "$D/g.json" "$D/g.err")" "$(tail -n 3 "$D/broker.log")"
fi
if [ "$(j 'len(j["stream"])')" = 20 ] && [ "$(j 'j["stream"][19]')" = "msg 19" ] &&
	[ "$(j 'int(j["stream_spread_s"] > 1.0)')" = 1 ]; then
	ok "server streaming: 20 messages, as they were sent ($(j 'j["stream_spread_s"]') s apart)"
else
	not_ok "server streaming" "$(head -c 600 "$D/g.json")"
fi
check_eq "a stream silent past --io-timeout, within --stream-idle-timeout, goes on" \
	"['before', 'after']" "$(j 'j["pause"]')"
if [ -n "$(j 'j["upload"]')" ] && [ "$(j 'j["upload"] == j["upload_want"]')" = True ]; then
	ok "client streaming: 3 MiB up in 48 messages, every byte"
else
	not_ok "client streaming" "$(head -c 600 "$D/g.json")"
fi
if [ -s "$D/g.json" ] && ! grep -q "$SECRET" "$D/g.json" "$D/g.err"; then
	ok "the token inside a message never reaches the client ($(j 'j["say"]'))"
else
	not_ok "the token inside a message never reaches the client" "$(head -c 400 "$D/g.json")"
fi
check_eq "every call has its audit record" 5 \
	"$(grep -c '"method":"POST","host":"localhost".*"path":"/t.Echo/' "$D/audit")"

# --- an upstream that speaks only HTTP/2 ---------------------------------------------------
if [ -z "$NPORT" ]; then
	skip "nghttpd as the upstream" "nghttpd is not installed (nghttp2-server; make deps)"
	plan_done
	exit 0
fi
h2() { curl -sS --max-time 30 -x "http://127.0.0.1:$RELAY" --cacert "$D/session-ca.pem" "$@"; }
N=https://localhost:$NPORT
head -c 3000000 /dev/urandom > "$D/up"
check_eq "nghttpd: 2 MB down, byte for byte" "$(sha256sum < "$D/htdocs/big")" \
	"$(h2 "$N/big" | sha256sum)"
check_eq "nghttpd: 3 MB up with a length, echoed byte for byte" "$(sha256sum < "$D/up")" \
	"$(h2 --data-binary @"$D/up" "$N/echo" | sha256sum)"
check_eq "nghttpd: 3 MB up without a length, echoed byte for byte" "$(sha256sum < "$D/up")" \
	"$(h2 -T - "$N/echo" < "$D/up" | sha256sum)"
check_eq "nghttpd: a HEAD" 200 "$(h2 -I -o /dev/null -w '%{http_code}' "$N/big")"
h2 --http1.1 -o "$D/b" -w '%{http_code}' "$N/big" > "$D/code" 2> /dev/null
if [ "$(cat "$D/code")" = 502 ] && grep -q 'closed or failed before answering' "$D/b"; then
	ok "an HTTP/1.1 client to an upstream that speaks only HTTP/2: 502, said why"
else
	not_ok "an HTTP/1.1 client to an HTTP/2-only upstream" "$(cat "$D/code" "$D/b")"
fi
kill -0 "$bpid" 2> /dev/null && ok "the broker is still up" ||
	not_ok "the broker is up" "$(tail -n 5 "$D/broker.log")"
plan_done
