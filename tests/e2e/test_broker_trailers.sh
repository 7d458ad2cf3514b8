#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_trailers.sh: a chunked answer's trailer fields through the real broker
# (gRPC's status travels there): relayed after the last chunk, scrubbed like head fields (a
# trailer echoing the injected token reaches the guest replaced), framing fields never
# relayed as trailers (Content-Range neither); a gRPC length that ends a message inside the
# token releases no part of it; and no compressed gRPC messages: the guest's offer of them
# never reaches a credential host, and one that sends them anyway is refused.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
require "trailer suite" "$BROKER" "$CLIENT" python3
D=$TMP
SECRET='tr41ler-t0ken-0123456789abcdef'

python3 - > "$D/up.port" 2> "$D/up.err" << 'PY' &
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        key = self.headers.get("X-Key", "")
        grpc = self.path.startswith("/grpc")
        self.send_response(200)
        self.send_header("Content-Type", "application/grpc" if grpc else "text/plain")
        # /grpcgz: gRPC's own compression, as a server that was offered it would answer.
        if self.path == "/grpcgz":
            self.send_header("Grpc-Encoding", "gzip")
        self.send_header("X-Offered", self.headers.get("Grpc-Accept-Encoding", "none"))
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Trailer", "Grpc-Status, X-Echo")
        self.end_headers()
        # /grpcsplit: a gRPC length prefix that ends a message inside the token the upstream
        # echoes (a guest can choose such lengths through any echo).
        body = (b"\x00\x00\x00\x00\x0a" + key.encode() if self.path == "/grpcsplit"
                else b"\x00\x00\x00\x00\x02hi" if grpc else b"hello")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
        self.wfile.write(b"0\r\nGrpc-Status: 0\r\nX-Echo: key=" + key.encode() +
                         b"\r\nContent-Length: 99\r\nContent-Range: bytes 0-1/99\r\n\r\n")
socketserver.ThreadingTCPServer.allow_reuse_address = True
s = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
pids="$pids $!"
UP=$(wait_port "$D/up.port")
cat > "$D/rules.json" << RULES
{ "secrets": [
    { "name": "KEY", "inject": { "header": "X-Key", "value": "{}" },
      "destinations": [ { "scheme": "http", "host": "127.0.0.1", "port": $UP,
                          "path_prefix": "/", "allow_addresses": ["127.0.0.1"] } ] } ] }
RULES
printf '{"KEY": "%s"}\n' "$SECRET" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/b.sock
"$BROKER" --listen "$SOCK" --rules "$D/rules.json" --secrets-file "$D/secrets.json" \
	2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ -z "$UP" ] || [ ! -S "$SOCK" ]; then
	not_ok "upstream and broker start" "$(cat "$D/up.err" "$D/broker.log" 2> /dev/null)"
	# gRPC's per-message compression would hide an echo from the scrubber: the guest's offer is
# not passed to a credential host, and compressed messages from one are refused.
ask /grpc 'Grpc-Accept-Encoding: gzip'
if grep -qx 'Grpc-Status: 0' "$D/out" && grep -qx 'X-Offered: none' "$D/out"; then
	ok "the guest's grpc-accept-encoding does not reach a credential host"
else
	not_ok "the guest's grpc-accept-encoding does not reach a credential host" "$(cat "$D/out")"
fi
ask /grpcgz
if head -n 1 "$D/out" | grep -q '^HTTP/1.1 502' && grep -q 'compressed gRPC' "$D/out"; then
	ok "compressed gRPC messages from a credential host: 502"
else
	not_ok "compressed gRPC messages from a credential host: 502" "$(head -c 400 "$D/out")"
fi
plan_done
	exit 1
fi

ask() { # PATH [FIELD]: the raw answer in $D/out
	printf 'GET http://127.0.0.1:%s%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n%sConnection: close\r\n\r\n' \
		"$UP" "$1" "$UP" "${2:+$2\r\n}" | "$CLIENT" raw "$SOCK" | tr -d '\r' > "$D/out"
}
ask /plain
if sed -n '/^0$/,$p' "$D/out" | grep -qx 'Grpc-Status: 0'; then
	ok "a trailer field reaches the guest after the last chunk"
else
	not_ok "a trailer field reaches the guest after the last chunk" "$(cat "$D/out")"
fi
if grep -q 'X-Echo: key=' "$D/out" && ! grep -q "$SECRET" "$D/out"; then
	ok "a trailer echoing the injected token is scrubbed"
else
	not_ok "a trailer echoing the injected token is scrubbed" "$(cat "$D/out")"
fi
# Strict only where trailers are relayed at all: a broker that dropped them all would pass.
if sed -n '/^0$/,$p' "$D/out" | grep -qx 'Grpc-Status: 0' &&
	! sed -n '/^0$/,$p' "$D/out" | grep -qi '^content-length' &&
	! sed -n '/^0$/,$p' "$D/out" | grep -qi '^content-range'; then
	ok "a framing field (Content-Length, Content-Range) is never relayed as a trailer"
else
	not_ok "a framing field is never relayed as a trailer" "$(cat "$D/out")"
fi
ask /grpcsplit
# gRPC bodies are not split at their length prefixes: a length is a message end anywhere,
# even inside a secret, and a flush there would release the secret's first half unmatched.
if grep -qx 'Grpc-Status: 0' "$D/out" && ! grep -q "$(printf %.10s "$SECRET")" "$D/out"; then
	ok "a gRPC message end inside the token releases no part of it"
else
	not_ok "a gRPC message end inside the token releases no part of it" "$(cat "$D/out")"
fi
# gRPC's per-message compression would hide an echo from the scrubber: the guest's offer is
# not passed to a credential host, and compressed messages from one are refused.
ask /grpc 'Grpc-Accept-Encoding: gzip'
if grep -qx 'Grpc-Status: 0' "$D/out" && grep -qx 'X-Offered: none' "$D/out"; then
	ok "the guest's grpc-accept-encoding does not reach a credential host"
else
	not_ok "the guest's grpc-accept-encoding does not reach a credential host" "$(cat "$D/out")"
fi
ask /grpcgz
if head -n 1 "$D/out" | grep -q '^HTTP/1.1 502' && grep -q 'compressed gRPC' "$D/out"; then
	ok "compressed gRPC messages from a credential host: 502"
else
	not_ok "compressed gRPC messages from a credential host: 502" "$(head -c 400 "$D/out")"
fi
plan_done
