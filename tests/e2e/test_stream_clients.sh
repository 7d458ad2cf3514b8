#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/e2e/test_stream_clients.sh: a real agent's streamed traffic, in sessions on images, with
# the clients users run, unchanged, and a token the guest never holds. In a Node session the
# openai client streams a chat completion and the official MCP TypeScript SDK's client lists
# and calls tools over Streamable HTTP (progress notifications, a notification on its GET
# stream), against the SDK's own server on the host (tests/node-clients/), and ws holds a
# WebSocket to the same server; in a Python
# session requests reads an NDJSON answer line by line. The upstream sends each message only
# once the guest has acknowledged the one before (through the broker), and python3-websockets
# holds a WebSocket from a third session. Every message must
# arrive as produced, the token injected upstream, echoed in every message and scrubbed, and
# found nowhere in the guest (output, what it wrote, its RAM).
. "$(dirname "$0")/lib.sh"

CLIENTS=tests/node-clients
require "streamed clients in sessions" "$BIN/bulkhead-broker" node mmdebstrap python3 openssl
if [ "$(id -u)" -ne 0 ]; then
	skip "streamed clients in sessions" "needs root (the session's overlay of the image)"
	plan_done
	exit 0
fi
rc=0
MODULES=$(sh ci/npm-modules.sh "$CLIENTS" 2> "$TMP/npm.err") || rc=$?
if [ $rc -eq 77 ]; then
	skip "streamed clients in sessions" "the MCP SDK and openai from npm: $(cat "$TMP/npm.err")"
	plan_done
	exit 0
elif [ $rc -ne 0 ]; then
	not_ok "npm ci of tests/node-clients" "$(tail -n 5 "$TMP/npm.err")"
	plan_done
	exit 1
fi
export BULKHEAD_RUNDIR="$TMP/run"
SECRET='tok-STREAM-5f2a9c01e7-clients'

if ! PY=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip) ||
	! NODE=$(sh tests/tools/test_image.sh node nodejs) ||
	! PYWS=$(sh tests/tools/test_image.sh pyws python3,python3-websockets); then
	not_ok "the test images are built (bulkhead image build)"
	plan_done
	exit 1
fi
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi

# The host side: the SDK's server and the streaming APIs, from a directory of their own.
mkdir -p "$TMP/host" "$TMP/work"
cp "$CLIENTS/upstream.mjs" "$TMP/host/"
ln -s "$MODULES" "$TMP/host/node_modules"
printf '%s' "$SECRET" > "$TMP/token"
(cd "$TMP/host" && exec node upstream.mjs --cert "$TMP/up.pem" --key "$TMP/up.key" \
	--token-file "$TMP/token" --state "$TMP/state.json") > "$TMP/port" 2> "$TMP/up.err" &
pids="$pids $!"
PORT=$(wait_port "$TMP/port")
if [ -z "$PORT" ]; then
	not_ok "the MCP server and streaming APIs start on the host" "$(cat "$TMP/up.err")"
	plan_done
	exit 1
fi
"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$SECRET" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
cat > "$TMP/scope.json" << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "path_prefix": "/", "allow_addresses": ["127.0.0.1"] } ] } ],
  "allow": [] }
SCOPE
BROKER="--scope $TMP/scope.json --vault $TMP/vault --ca-file $TMP/ca.pem --audit $TMP/audit.log"
state() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
	"$TMP/state.json" "$1" 2> /dev/null; }
no_secret() { # WHAT RAM-FILE
	if grep -qF "$SECRET" "$TMP/out" "$TMP/err" || grep -rqF "$SECRET" "$TMP/work"; then
		not_ok "$1: the token is nowhere in the output or the work share"
	elif [ ! -s "$2" ] || ! grep -qaF "[bulkhead:redacted]" "$2"; then
		not_ok "$1: the guest's RAM was kept for the scan and holds the answers"
	elif grep -qaF "$SECRET" "$2"; then
		not_ok "$1: the token is nowhere in the guest's RAM"
	else
		ok "$1: the token is nowhere in the output, the share or the guest's RAM"
	fi
}

# --- Node: openai and the MCP SDK ----------------------------------------------------------------
cp "$CLIENTS/agent.mjs" "$TMP/work/"
cp -RL "$MODULES" "$TMP/work/node_modules"
run_capture run --image "$NODE" --work "$TMP/work" --ram-file "$TMP/node.ram" --engine qemu \
	$BROKER -- node agent.mjs "https://localhost:$PORT"
check_eq "the Node agent's session exits 0" 0 "$rc"
if grep -qx 'openai deltas=5 text="Hello from a streamed answer; key=\[bulkhead:redacted\]"' "$TMP/out" &&
	[ "$(state 'j["late"].get("chat")')" = None ] && [ "$(state 'j["sent"]["chat"]')" = 4 ]; then
	ok "openai: a streamed chat completion, each delta as produced, the echoed token scrubbed"
else
	not_ok "openai streams a chat completion" "$(head -c 600 "$TMP/out")" "$(tail -n 5 "$TMP/err")" \
		"$(cat "$TMP/state.json")"
fi
grep -qx 'mcp tools=count,notify' "$TMP/out" && ok "MCP SDK: initialize and tools/list over Streamable HTTP" ||
	not_ok "MCP SDK: tools/list" "$(head -c 600 "$TMP/out")" "$(tail -n 5 "$TMP/err")"
R='\[bulkhead:redacted\]'
if grep -qx "mcp count progress=\[\"step 1 key=$R\",\"step 2 key=$R\",\"step 3 key=$R\"\] result=\"counted to 3, key=$R\"" "$TMP/out" &&
	[ "$(state 'j["late"].get("progress")')" = None ]; then
	ok "MCP SDK: tools/call with each progress notification as it is sent, scrubbed"
else
	not_ok "MCP SDK: tools/call with progress" "$(grep '^mcp count' "$TMP/out")" "$(cat "$TMP/state.json")"
fi
if grep -qx "mcp notify result=\"notified: acknowledged\" logged=\[\"on the GET stream, key=$R\"\]" "$TMP/out" &&
	[ "$(state 'j["get_stream"]')" = acknowledged ]; then
	ok "MCP SDK: a server notification on the GET stream arrives while the stream stays open"
else
	not_ok "MCP SDK: a notification on the GET stream" "$(grep '^mcp notify' "$TMP/out")" \
		"$(cat "$TMP/state.json")"
fi
# ws: the greeting-free echo, binary, the token in text and binary (scrubbed), 3 MiB up and 1 MiB
# down whole, the client's close code at the server; no extension although both offer one.
BINTOK=$(printf 'bin:[bulkhead:redacted]' | od -An -tx1 | tr -d ' \n')
if grep -qxF "ws got=[\"echo-me\",\"hex:000102ff\",\"token=[bulkhead:redacted]\",\"hex:$BINTOK\",\"text:3145728\",\"text:1048576\"] close=4001" "$TMP/out" &&
	[ "$(state 'j["ws"]["close"]')" = "[4001, 'agent done']" ] &&
	[ "$(state 'repr(j["ws"]["extensions"])')" = "''" ]; then
	ok "ws: echo, binary, the token scrubbed in text and binary, large messages, a close with its code"
else
	not_ok "ws through the broker" "$(grep '^ws ' "$TMP/out")" "$(tail -n 5 "$TMP/err")" \
		"$(cat "$TMP/state.json")"
fi
no_secret "Node session" "$TMP/node.ram"

# --- Python: requests reads an NDJSON stream line by line ----------------------------------------
rm -rf "$TMP/work"
mkdir "$TMP/work"
cp "$CLIENTS/agent.py" "$TMP/work/"
run_capture run --image "$PY" --work "$TMP/work" --ram-file "$TMP/py.ram" --engine qemu \
	$BROKER -- python3 agent.py "https://localhost:$PORT"
if [ "$rc" = 0 ] && grep -qx "requests lines=4 text=\"Streamed line by line; key=$R\"" "$TMP/out" &&
	[ "$(state 'j["late"].get("ndjson")')" = None ] && [ "$(state 'j["sent"]["ndjson"]')" = 3 ]; then
	ok "Python requests: an NDJSON answer line by line, each as produced, scrubbed"
else
	not_ok "Python requests reads NDJSON as produced" "rc=$rc" "$(head -c 600 "$TMP/out")" \
		"$(tail -n 5 "$TMP/err")" "$(cat "$TMP/state.json")"
fi
no_secret "Python session" "$TMP/py.ram"
# --- Python: python3-websockets through the proxy ------------------------------------------------
rm -rf "$TMP/work"
mkdir "$TMP/work"
cp "$CLIENTS/agent_ws.py" "$TMP/work/"
run_capture run --image "$PYWS" --work "$TMP/work" --ram-file "$TMP/pyws.ram" --engine qemu \
	$BROKER -- python3 agent_ws.py "wss://localhost:$PORT/ws"
if [ "$rc" = 0 ] && grep -qxF "pyws got=['py-echo', 'hex:00fe', 'token=[bulkhead:redacted]', 'hex:$BINTOK', 'text:2097152', 'text:1048576'] close=4003" "$TMP/out" &&
	[ "$(state 'j["ws"]["close"]')" = "[4003, 'python done']" ]; then
	ok "python3-websockets: echo, binary, the token scrubbed in text and binary, large messages, a close"
else
	not_ok "python3-websockets through the broker" "rc=$rc" "$(head -c 600 "$TMP/out")" \
		"$(tail -n 5 "$TMP/err")" "$(cat "$TMP/state.json")"
fi
no_secret "Python WebSocket session" "$TMP/pyws.ram"
check_eq "the upstream refused nothing: every request carried the injected token" 0 \
	"$(state 'j["refused"]')"

plan_done
