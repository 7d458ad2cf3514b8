#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/stream_delay.py: the delay of each server-sent event, from the upstream's write to the
# client's read (one host, one monotonic clock), for bench/broker-stream.sh.
#   serve  --cert PEM --key KEY                 (prints its port; GET /...?n=N&gap=MS)
#   client --url URL [--broker SOCK] [--ca PEM] (prints one delay in microseconds a line)
# Each event is a chat-completion-sized delta, {"t": <ns at write>, "delta": "..."}, and
# repeats the request's X-Api-Key when there is one (so the scrubber has work to do).
import http.client
import http.server
import json
import socket
import ssl
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        n, gap = int(q.get("n", ["50"])[0]), float(q.get("gap", ["20"])[0]) / 1000
        key = self.headers.get("X-Api-Key", "")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for k in range(n):
            time.sleep(gap)
            ev = {"t": time.monotonic_ns(), "delta": " token%d" % k, "key": key}
            data = b"data: %s\n\n" % json.dumps(ev).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def serve(a):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(a["cert"], a["key"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def client(a):
    u = urllib.parse.urlsplit(a["url"])
    if "broker" in a:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(a["broker"])
        target = a["url"]
    else:
        raw = socket.create_connection((u.hostname, u.port))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = ssl.create_default_context(cafile=a["ca"]).wrap_socket(
            raw, server_hostname=u.hostname)
        target = u.path + "?" + u.query
    sock.settimeout(60)
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), u.netloc.encode()))
    r = http.client.HTTPResponse(sock)
    r.begin()
    buf = b""
    while True:
        b = r.read1(65536)
        now = time.monotonic_ns()
        if not b:
            break
        buf += b
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            t = json.loads(ev[len(b"data: "):])["t"]
            print((now - t) // 1000)
    return 0 if r.status == 200 else 1


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    a = dict(zip([k.lstrip("-") for k in args[0::2]], args[1::2]))
    return serve(a) if cmd == "serve" else client(a)


if __name__ == "__main__":
    sys.exit(main())
