#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/h1_upstream.py --cert PEM --key KEY --secret S: an HTTPS/1.1 upstream on 127.0.0.1 (its
# port printed on stdout) for the HTTP/2 suite, answering
#   /echo        200, JSON of what it got: method, path, whether the X-Api-Key it received is
#                S (key_ok: the token was injected), Cookie, the field names; the key is also
#                echoed in the body and in an X-Echo field (so a test sees it scrubbed)
#   /sha         the SHA-256 and length of the request body (Content-Length or chunked)
#   /trailers    a chunked body, then trailers Grpc-Status: 0 and X-Echo: the key
#   /sse?n=N     N server-sent events, 50 ms apart
#   /b64?pad=N   as application/x-ndjson, the base64 of N "x" and the key, wrapped at 76
#                columns as MIME does (the guest picks where the wrap falls in the key)
#   /slow        200 after 3 s
#   anything else 404
import base64
import hashlib
import http.server
import json
import socketserver
import ssl
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n else b""

    def send(self, status, data, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        key = self.headers.get("X-Api-Key", "")
        data = self.body()
        if url.path == "/echo":
            j = {"method": self.command, "path": self.path, "key_ok": key == SECRET,
                 "cookie": self.headers.get("Cookie"), "fields": sorted(self.headers.keys()),
                 "body_len": len(data)}
            self.send(200, (json.dumps(j) + "\nkey=" + key + "\n").encode(),
                      extra=[("X-Echo", "key=" + key)])
        elif url.path == "/sha":
            self.send(200, ("%s %d\n" % (hashlib.sha256(data).hexdigest(), len(data))).encode(),
                      "text/plain")
        elif url.path == "/trailers":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "Grpc-Status, X-Echo")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n0\r\nGrpc-Status: 0\r\nX-Echo: key=" +
                             key.encode() + b"\r\n\r\n")
        elif url.path == "/sse":
            n = int(urllib.parse.parse_qs(url.query).get("n", ["3"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                ev = b"data: event %d\n\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
        elif url.path == "/b64":
            pad = int(urllib.parse.parse_qs(url.query).get("pad", ["0"])[0])
            b = base64.b64encode(b"x" * pad + key.encode()).decode()
            wrapped = "\n".join(b[i:i + 76] for i in range(0, len(b), 76)) + "\n"
            self.send(200, wrapped.encode(), "application/x-ndjson")
        elif url.path == "/slow":
            time.sleep(3)
            self.send(200, b"slow\n", "text/plain")
        else:
            self.send(404, b"no such path\n", "text/plain")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any


SECRET = None


def main():
    global SECRET
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    SECRET = args["--secret"]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args["--cert"], args["--key"])
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    socketserver.ThreadingTCPServer.request_queue_size = 256  # many streams at once
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler, bind_and_activate=True)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
