#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_audit.sh: every request that reached the broker has exactly one audit
# record, whatever ended it — an answer, a refusal, the upstream failing, the guest resetting
# its connection, going silent or closing it mid-body after the head (with its credential)
# went upstream. Records name every injected secret and the port of denied requests. A real
# broker, real upstreams (Python's http.server), guests forced down each path.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$(cd "$BUILD/tests" 2> /dev/null && pwd)/proxy-client
RECORD=$(cd "$(dirname "$0")/../tools" && pwd)/record_upstream.py
require "audit suite" "$BROKER" "$CLIENT" python3
D=$TMP

python3 "$RECORD" "$D/up.log" > "$D/up.port" &
pids="$pids $!"
UP=$(wait_port "$D/up.port")
python3 "$RECORD" "$D/dead.log" --close-after-head > "$D/dead.port" &
pids="$pids $!"
DEAD=$(wait_port "$D/dead.port")
# An upstream that answers 404 under /nf/ and 500 elsewhere: its errors are its own.
python3 - > "$D/err.port" << 'PY' &
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(404 if self.path.startswith("/nf/") else 500)
        self.send_header("Content-Length", "0")
        self.end_headers()
s = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
pids="$pids $!"
ERR=$(wait_port "$D/err.port")

LOOP='"allow_addresses": ["127.0.0.1"]'
cat > "$D/rules.json" << RULES
{ "secrets": [
    { "name": "KEY_A", "inject": { "header": "X-Key-A", "value": "{}" },
      "destinations": [ { "scheme": "http", "host": "127.0.0.1", "port": $UP,
                          "path_prefix": "/api/", $LOOP },
                        { "scheme": "http", "host": "127.0.0.1", "port": $DEAD, $LOOP },
                        { "scheme": "http", "host": "127.0.0.1", "port": $ERR, $LOOP } ] },
    { "name": "KEY_B", "inject": { "query": "key_b" },
      "destinations": [ { "scheme": "http", "host": "127.0.0.1", "port": $UP,
                          "path_prefix": "/api/two/", $LOOP } ] } ] }
RULES
printf '{"KEY_A": "aaaa-1111", "KEY_B": "bbbb-2222"}\n' > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/b.sock
AUDIT=$D/audit.log
"$BROKER" --listen "$SOCK" --rules "$D/rules.json" --secrets-file "$D/secrets.json" \
	--audit "$AUDIT" --session s1 --io-timeout 1 2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ -z "$UP" ] || [ -z "$DEAD" ] || [ -z "$ERR" ] || [ ! -S "$SOCK" ]; then
	not_ok "upstreams and broker start" "$(cat "$D/broker.log")"
	plan_done
	exit 1
fi

# guest PATH HOW: a guest that sends a POST head (Expect: 100-continue, so the broker writes
# to it) and half of a 100000-byte body, then resets its connection (closes it with the
# broker's bytes unread), goes silent past the broker's 1 s timeout, or closes its side.
guest() {
	python3 - "$SOCK" "$1" "$2" << 'PY'
import socket, sys, time
sock, path, how = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
s.sendall(("POST http://127.0.0.1:%s%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n"
           "Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n" % (
               path.split("/", 1)[0], "/" + path.split("/", 1)[1],
               path.split("/", 1)[0])).encode() + b"x" * 50000)
time.sleep(0.5)
if how == "reset":
    s.close()  # the 100 Continue is unread: the broker's next read fails with ECONNRESET
elif how == "silent":
    time.sleep(2.5)
    s.close()
else:
    s.shutdown(socket.SHUT_WR)
    s.recv(65536)
    s.close()
PY
}
# record PATH: the audit lines for that path.
record() { grep -F "\"path\":\"$1\"" "$AUDIT"; }
# one_record NAME PATH PATTERN...: exactly one line for PATH, matching every PATTERN.
one_record() {
	name=$1 path=$2
	shift 2
	lines=$(record "$path")
	n=$(printf '%s' "$lines" | grep -c .)
	good=1
	for pat in "$@"; do printf '%s' "$lines" | grep -q -- "$pat" || good=0; done
	if [ "$n" = 1 ] && [ $good = 1 ]; then
		ok "$name"
	else
		not_ok "$name" "records for $path: $n (want 1, matching: $*)" "$lines"
	fi
}

guest "$UP/api/reset" reset
guest "$UP/api/silent" silent
guest "$UP/api/closed" closed
sleep 0.5 # the broker's threads write their records
one_record "guest reset mid-body after the head went upstream: recorded once, as such" \
	/api/reset '"outcome":"guest_reset"' '"decision":"allow"' '"secrets":\["KEY_A"\]' \
	'"bytes_out":[1-9]'
one_record "guest silent past the timeout mid-body: recorded once, as such" /api/silent \
	'"outcome":"guest_timeout"' '"bytes_out":[1-9]'
one_record "guest closing its side mid-body: recorded once, as such" /api/closed \
	'"outcome":"guest_closed"' '"bytes_out":[1-9]'
if grep -q '^REQ POST /api/reset' "$D/up.log" && grep -q '^REQ POST /api/silent' "$D/up.log"
then
	ok "(those heads did reach the upstream, with the credential)"
else
	not_ok "(those heads did reach the upstream)" "$(cat "$D/up.log")"
fi

printf 'GET http://127.0.0.1:%s/api/two/x HTTP/1.1\r\nConnection: close\r\n\r\n' "$UP" |
	"$CLIENT" raw "$SOCK" > "$D/two.out"
one_record "two secrets injected: both named" /api/two/x '"secrets":\["KEY_A","KEY_B"\]' \
	'"outcome":"answered"' '"status":200'
if grep -q 'X-Key-A: aaaa-1111' "$D/up.log" && grep -q 'key_b=bbbb-2222' "$D/up.log"; then
	ok "(both were injected)"
else
	not_ok "(both were injected)" "$(cat "$D/up.log")"
fi

printf 'GET http://127.0.0.1:%s/x HTTP/1.1\r\nConnection: close\r\n\r\n' "$DEAD" |
	"$CLIENT" raw "$SOCK" > "$D/dead.out"
one_record "upstream closing after the head: recorded once, with the 502" /x \
	'"status":502' '"bytes_out":[1-9]' '"secrets":\["KEY_A"\]'

printf 'GET http://127.0.0.1:%s/denied HTTP/1.1\r\nConnection: close\r\n\r\n' "$UP" |
	"$CLIENT" raw "$SOCK" > /dev/null
printf 'GET http://nowhere.example/default-port HTTP/1.1\r\nConnection: close\r\n\r\n' |
	"$CLIENT" raw "$SOCK" > /dev/null
printf 'GET https://nowhere.example/tls-port HTTP/1.1\r\nConnection: close\r\n\r\n' |
	"$CLIENT" raw "$SOCK" > /dev/null
one_record "a denied request records its port" /denied "\"port\":$UP," '"decision":"deny"'
one_record "a denied request without a port records the scheme's (80)" /default-port \
	'"port":80,' '"decision":"deny"'
one_record "... and https's (443)" /tls-port '"port":443,' '"decision":"deny"'

# Pipelined requests on one connection: one record each.
printf 'GET http://127.0.0.1:%s/api/p1 HTTP/1.1\r\n\r\nGET http://127.0.0.1:%s/api/p2 HTTP/1.1\r\nConnection: close\r\n\r\n' \
	"$UP" "$UP" | "$CLIENT" raw "$SOCK" > /dev/null
one_record "pipelined: the first request has one record" /api/p1 '"outcome":"answered"'
one_record "pipelined: the second request has one record" /api/p2 '"outcome":"answered"'

# A request refused by the grammar after a good one: its own record, not the last one's.
printf 'GET http://127.0.0.1:%s/api/k1 HTTP/1.1\r\n\r\nGET http://127.0.0.1:%s/api/k2\013 HTTP/1.1\r\n\r\n' \
	"$UP" "$UP" | "$CLIENT" raw "$SOCK" > "$D/k.out"
one_record "keep-alive, then a malformed request: the good one has one record" /api/k1 \
	'"outcome":"answered"'
if tail -n 1 "$AUDIT" | grep -q '"method":"-",.*"status":400,"outcome":"refused"'; then
	ok "... and the malformed one its own (400, refused, nothing of the last request)"
else
	not_ok "the malformed request's own record" "$(tail -n 2 "$AUDIT")" "$(cat "$D/k.out")"
fi

# The decision is the broker's: an upstream's 404 or 500 is its status, not an "error".
get() { printf 'GET http://127.0.0.1:%s%s HTTP/1.1\r\nConnection: close\r\n\r\n' "$1" "$2" |
	"$CLIENT" raw "$SOCK" > /dev/null; }
get "$ERR" /nf/x
get "$ERR" /boom
one_record "an allowed request the upstream answers 404: decision allow, status 404" /nf/x \
	'"decision":"allow"' '"status":404' '"outcome":"answered"' '"secrets":\["KEY_A"\]'
one_record "... and 500: decision allow, status 500" /boom '"decision":"allow"' '"status":500'

# The path and query as the guest sent them, beyond 200 bytes, with a hash of the target:
# requests that differ only in their query, or past the record's cut, stay distinct.
LONG=/api/$(printf 'a%.0s' $(seq 1 300))
get "$UP" "$LONG?v=1"
get "$UP" "$LONG?v=2"
one_record "a 300-byte path and its query, recorded whole (1)" "$LONG?v=1" '"target_sha256":"[0-9a-f]\{64\}"'
one_record "... (2)" "$LONG?v=2" '"decision":"allow"'
get "$UP" "/api/two/q?guest=%7e1"
one_record "the query as sent, without the injected credential" "/api/two/q?guest=%7e1" \
	'"secrets":\["KEY_A","KEY_B"\]'
if grep -q '^REQ GET /api/two/q?guest=~1&key_b=bbbb-2222 ' "$D/up.log"; then
	ok "(the upstream got the canonical query and the credential)"
else
	not_ok "(the upstream got the canonical query and the credential)" "$(grep two/q "$D/up.log")"
fi
HUGE=/api/$(printf 'b%.0s' $(seq 1 3000))
get "$UP" "$HUGE?x=1"
get "$UP" "$HUGE?x=2"
cut=$(printf '%s' "$HUGE?x=1" | cut -c1-2048)
n=$(grep -c -F "\"path\":\"$cut\"," "$AUDIT")
shas=$(grep -F "\"path\":\"$cut\"," "$AUDIT" | sed 's/.*"target_sha256":"\([0-9a-f]*\)".*/\1/' | sort -u | wc -l)
if [ "$n" = 2 ] && [ "$shas" = 2 ]; then
	ok "targets longer than the record's 2048 bytes: cut there, told apart by target_sha256"
else
	not_ok "long targets cut and told apart" "records: $n, distinct hashes: $shas"
fi

"$BIN/bulkhead" audit verify "$AUDIT" > "$D/verify" 2>&1
check_eq "the audit log's chain verifies" 0 "$?"
if grep -qF -e aaaa-1111 -e bbbb-2222 "$AUDIT"; then
	not_ok "no secret value in the audit log"
else
	ok "no secret value in the audit log ($(wc -l < "$AUDIT") records)"
fi
plan_done
