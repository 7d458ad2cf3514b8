#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_h2.sh: HTTP/2 from the guest (broker/h2_front.c) through the real
# broker, with Debian's curl (its HTTP/2 is nghttp2's) as the client and an HTTPS/1.1 upstream
# (tests/tools/h1_upstream.py). curl reaches the broker's session socket through a TCP relay,
# as it reaches the guest's relay in a VM, and chooses h2 in the tunnel's TLS:
#  - a GET over h2 gets the token injected, and the token the upstream echoes (body, field)
#    scrubbed; a client that offers only HTTP/1.1 gets HTTP/1.1;
#  - bodies up (3 MB with a length, and without one), trailers down (scrubbed), server-sent
#    events streamed;
#  - 30 requests multiplexed on one connection, each with its own audit record;
#  - refusals inside a stream (a Host that is not the CONNECT host, fields past the bound)
#    leave the connection's other streams alone;
#  - hostile frames (tests/tools/h2_raw.py): Rapid Reset, a CONTINUATION flood, a SETTINGS
#    flood, a CR LF in a field, an upper-case name, a bad preface, a head that stalls. Each
#    ends its stream or connection, and the broker goes on with as many threads as before.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
TOOLS=$(dirname "$0")/../tools
require "HTTP/2 suite" "$BROKER" "$CLIENT" python3 openssl curl
if ! curl --version | grep -q 'HTTP2'; then
	skip "HTTP/2 suite" "this curl has no HTTP/2"
	plan_done
	exit 0
fi
D=$TMP
SECRET='sk-h2-T0ken-0123456789abcdef'
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
python3 "$TOOLS/h1_upstream.py" --cert "$D/up.pem" --key "$D/up.key" --secret "$SECRET" \
	> "$D/up.port" 2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")
cat > "$D/rules.json" << RULES
{ "secrets": [ { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "path_prefix": "/", "allow_addresses": ["127.0.0.1"] } ] } ] }
RULES
printf '{"TOK": "%s"}\n' "$SECRET" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
if [ -z "$PORT" ] || ! relayed_broker "$D" --head-timeout 2; then
	not_ok "upstream, broker and relay start" "$(cat "$D/up.err" "$D/broker.log" "$D/relay.err")"
	plan_done
	exit 1
fi
U=https://localhost:$PORT
R='[bulkhead:redacted]'
h2() { curl -sS --max-time 30 -x "http://127.0.0.1:$RELAY" --cacert "$D/session-ca.pem" "$@"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$bpid/status"; }
echo_records() { grep -c '"method":"[A-Z]*","host":"localhost".*"path":"/echo' "$D/audit"; }

# --- requests ----------------------------------------------------------------------------
h2 -D - -o "$D/b" -w '%{http_version}\n' "$U/echo" 2> "$D/e" | tr -d '\r' > "$D/h"
tail -n 1 "$D/h" > "$D/v"
if [ "$(cat "$D/v")" = 2 ] && grep -q '"key_ok": true' "$D/b" && grep -qxF "key=$R" "$D/b" &&
	grep -qixF "x-echo: key=$R" "$D/h" && ! grep -q "$SECRET" "$D/h" "$D/b"; then
	ok "GET over HTTP/2: the token injected, its echo scrubbed in the body and in a field"
else
	not_ok "GET over HTTP/2" "$(cat "$D/v" "$D/e" "$D/h" "$D/b" | head -c 800)"
fi
h2 --http1.1 -o /dev/null -w '%{http_version}\n' "$U/echo" > "$D/v" 2> "$D/e"
check_eq "a client that offers only HTTP/1.1 gets HTTP/1.1" "1.1" "$(cat "$D/v")"

head -c 3000000 /dev/urandom > "$D/big"
want="$(sha256sum < "$D/big" | cut -d' ' -f1) 3000000"
check_eq "3 MB up with a length: the upstream gets every byte" "$want" \
	"$(h2 --data-binary @"$D/big" "$U/sha" 2>&1)"
check_eq "3 MB up without a length (chunked to the upstream): every byte" "$want" \
	"$(h2 -T - "$U/sha" < "$D/big" 2>&1)"

h2 -D - -o "$D/b" "$U/trailers" 2> "$D/e" | tr -d '\r' > "$D/h"
if grep -qix 'grpc-status: 0' "$D/h" && grep -qixF "x-echo: key=$R" "$D/h" &&
	[ "$(cat "$D/b")" = hello ] && ! grep -q "$SECRET" "$D/h"; then
	ok "trailers come down as HTTP/2 trailers, the echoed token in them scrubbed"
else
	not_ok "trailers over HTTP/2" "$(cat "$D/e" "$D/h" "$D/b" | head -c 600)"
fi
check_eq "server-sent events stream down" "event 0 event 1 event 2 event 3 event 4 " \
	"$(h2 -N "$U/sse?n=5" | sed -n 's/^data: //p' | tr '\n' ' ')"

# A red-team finding (HTTP/1.1 as well): base64 wrapped with a LF, in NDJSON, where each LF
# ended a message, let the guest place the wrap inside the key and read both halves. Every
# place the wrap can fall, both versions: no half of the key decodes from what comes back.
leak=
for v in 2 1.1; do
	pad=30
	while [ $pad -le 62 ]; do
		h2 "--http$v" "$U/b64?pad=$pad" 2> /dev/null | tr -d '\n' | base64 -d 2> /dev/null |
			grep -q "$(printf %.12s "$SECRET")" && leak="$leak $v/$pad"
		pad=$((pad + 1))
	done
done
check_eq "base64 wrapped across the key in NDJSON: no part of it decodes (h2 and 1.1)" "" "$leak"

# --- many streams on one connection --------------------------------------------------------
before=$(echo_records)
conns=$(grep -c 'CONNECT https://localhost' "$D/broker.log")
urls=
i=0
while [ $i -lt 30 ]; do urls="$urls $U/echo?n=$i"; i=$((i + 1)); done
# shellcheck disable=SC2086
h2 -Z --parallel-max 30 $urls > "$D/many" 2> "$D/e"
n_ok=$(grep -c '"key_ok": true' "$D/many")
n_conn=$(($(grep -c 'CONNECT https://localhost' "$D/broker.log") - conns))
n_rec=$(($(echo_records) - before))
if [ "$n_ok" = 30 ] && [ "$n_conn" = 1 ] && [ "$n_rec" = 30 ]; then
	ok "30 requests multiplexed on one connection: all answered, 30 audit records"
else
	not_ok "30 multiplexed requests" "answered $n_ok, connections $n_conn, records $n_rec" \
		"$(head -c 300 "$D/e")"
fi

h2 -o "$D/b1" -w '%{http_code}\n' -H 'Host: elsewhere.example' "$U/echo" \
	--next -x "http://127.0.0.1:$RELAY" --cacert "$D/session-ca.pem" -o "$D/b2" \
	-w '%{http_code} %{num_connects}\n' "$U/echo" > "$D/codes" 2> "$D/e"
if [ "$(head -n 1 "$D/codes")" = 400 ] && grep -q 'does not match the CONNECT host' "$D/b1" &&
	[ "$(sed -n 2p "$D/codes")" = "200 0" ] && grep -q '"key_ok": true' "$D/b2"; then
	ok "a stream whose :authority is not the CONNECT host: 400; the connection goes on"
else
	not_ok "a refused stream" "$(cat "$D/codes" "$D/e" "$D/b1" | head -c 600)"
fi
big=$(head -c 24000 /dev/zero | tr '\0' a)
check_eq "fields past the bound: 431" 431 \
	"$(h2 -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$U/echo?big" 2>&1)"
# Refused by the HTTP/2 front itself, before any thread: each has its record too.
if grep -q '"path":"/echo?big".*"rule":"h2-stream".*"status":431.*"outcome":"refused"' \
	"$D/audit"; then
	ok "a stream the HTTP/2 front refuses (431) has its record"
else
	not_ok "streams the HTTP/2 front refuses are recorded" "$(grep h2-stream "$D/audit" | head -c 600)"
fi

# --- hostile frames -----------------------------------------------------------------------
sleep 1
base=$(threads)
raw() { # CASE: what the broker did, and in how many seconds
	timeout 60 python3 "$TOOLS/h2_raw.py" --broker "$D/b.sock" --port "$PORT" \
		--ca "$D/session-ca.pem" --case "$1" --limit 20 2>&1 | tail -n 1
}
expect() { # CASE WHAT PATTERN...: one of the patterns matches what the broker did
	_case=$1 _what=$2
	shift 2
	_got=$(raw "$_case")
	for _p in "$@"; do
		case $_got in
		$_p)
			ok "$_what ($_got s)"
			return
			;;
		esac
	done
	not_ok "$_what" "$_got" "$(tail -n 3 "$D/broker.log")"
}
expect rapid-reset "Rapid Reset (1,000 streams opened and reset): GOAWAY" "goaway *"
expect continuation "1,000 CONTINUATION frames: the connection ends" "goaway *" "closed *"
expect settings-flood "5,000 SETTINGS frames: the connection ends" "goaway *" "closed *"
expect crlf-value "a CR LF inside a field value: the stream is reset" "rst 1 *"
expect upper-name "an upper-case field name: the stream is reset" "rst 1 *"
expect bad-preface "a preface that is not HTTP/2's: the connection ends" "closed *"
expect head-stall "a head that stalls past --head-timeout: GOAWAY" "goaway 0 [0-9]*"
expect get "after all that, a plain GET on a new connection is answered" "headers *"
i=0
while [ "$(threads)" -gt "$base" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check_eq "the broker's threads are back to what they were" "$base" "$(threads)"
# A stream reset by nghttp2 for a broken head (the CR LF, the upper-case name) is refused and
# recorded; streams the guest reset before a thread took them are recorded guest_closed.
if grep -q '"rule":"h2-stream".*"status":400.*"outcome":"refused"' "$D/audit" &&
	[ "$(grep -c '"path":"/slow".*"rule":"h2-stream".*"outcome":"guest_closed"' "$D/audit")" -ge 100 ]; then
	ok "reset streams are recorded: refused heads, and Rapid Reset's streams as guest_closed"
else
	not_ok "reset streams are recorded" \
		"$(grep -c 'h2-stream.*guest_closed' "$D/audit") guest_closed records"
fi

# A client gone mid-answer: its stream's thread ends, and its record says so.
h2 --max-time 1 "$U/slow" > /dev/null 2>&1
i=0
while ! grep -q '"path":"/slow".*"outcome":"guest_' "$D/audit" && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if grep -q '"path":"/slow".*"outcome":"guest_' "$D/audit"; then
	ok "a client that leaves mid-request: the stream's record says the guest went"
else
	not_ok "a client that leaves mid-request" "$(grep '/slow' "$D/audit" | tail -c 400)"
fi
# Streams at once, each on a thread: a session's are bounded (128), past the 32 a connection
# allows. Five connections of 32 held streams: 128 served, 32 answered 503 and recorded.
i=0 # the stream left mid-answer above holds its thread until its upstream answers
while [ "$(threads)" -gt "$base" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
refused_before=$(grep -c '"rule":"h2-stream".*"status":503' "$D/audit")
held=
for k in 1 2 3 4 5; do
	timeout 60 python3 "$TOOLS/h2_raw.py" --broker "$D/b.sock" --port "$PORT" \
		--ca "$D/session-ca.pem" --case slow32 --limit 12 > "$D/slow32.$k" 2>&1 &
	held="$held $!"
done
for p in $held; do wait "$p"; done
heads=$(cat "$D"/slow32.* | awk '/^streams/ { s += $2 } END { print s + 0 }')
over=$(($(grep -c '"rule":"h2-stream".*"status":503' "$D/audit") - refused_before))
if [ "$heads" = 160 ] && [ "$over" = 32 ] &&
	[ "$(grep -c '"path":"/slow".*"status":200' "$D/audit")" -ge 128 ]; then
	ok "160 HTTP/2 streams held at once by one session: 128 served, 32 refused 503 and recorded"
else
	not_ok "HTTP/2 streams at once are bounded per session" "heads $heads, refused $over" \
		"$(cat "$D"/slow32.*)"
fi
kill -0 "$bpid" 2> /dev/null && ok "the broker is still up" ||
	not_ok "the broker is up" "$(tail -n 5 "$D/broker.log")"
plan_done
