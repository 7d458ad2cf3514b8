#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/record_upstream.py: a plain-HTTP test upstream on 127.0.0.1 built on Python's
own http.server, a lenient parser like many real servers (it splits the request line on any
whitespace and does not know a header name with a space before its colon). It appends every
request it receives to LOG, one line each: "REQ <method> <path> | <header>: <value> | ...",
reads its body (Content-Length, or chunked) and answers 200 with keep-alive. --close-after-head makes it drop the connection instead of
answering, as a failing upstream would. --echo makes it an upstream that repeats what it was
given, to every client: it keeps each X-Api-Key it receives as the server reads it (without the
blanks at its ends); GET /seen answers them all, GET /stream sends one Server-Sent Event, waits
for a GET /release (at most 20 s), then sends them all as a second event and ends. Prints its
port on stdout.

usage: record_upstream.py LOG [--close-after-head] [--echo]
"""
import http.server
import socketserver
import sys
import threading
import urllib.parse

LOG = sys.argv[1]
CLOSE = "--close-after-head" in sys.argv[2:]
ECHO = "--echo" in sys.argv[2:]
lock = threading.Lock()
seen = []
released = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self):
        fields = " | ".join(f"{k}: {v}" for k, v in self.headers.items())
        with lock, open(LOG, "a") as f:
            f.write(f"REQ {self.command} {self.path} | {fields}\n")
            key = self.headers.get("X-Api-Key")
            if key is not None and key.strip(" \t") not in seen:
                seen.append(key.strip(" \t"))

    def echo(self):
        """--echo's answers; False for a path it does not know."""
        path = urllib.parse.urlsplit(self.path).path
        if path == "/release":
            released.set()
            body = b"released\n"
        elif path == "/seen":
            with lock:
                body = ("seen: %s\n" % " ".join(seen)).encode()
        elif path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b"data: {\"open\": 1}\n\n")
            self.wfile.flush()
            released.wait(20)
            with lock:
                self.wfile.write(("data: [\"%s\"]\n\n" % '", "'.join(seen)).encode())
            return True
        else:
            return False
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def handle_one(self):
        self.record()
        if CLOSE:
            self.close_connection = True
            return
        length = self.headers.get("Content-Length")
        if length and length.isdigit():
            self.rfile.read(int(length))
        elif (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            self.read_chunked()
        if ECHO and self.echo():
            return
        body = b"recorded\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_chunked(self):
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if not size:
                break
            self.rfile.read(size + 2)
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_one


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client gone mid-request (the tests make some) is no error here


srv = Server(("127.0.0.1", 0), Handler)
print(srv.server_address[1], flush=True)
srv.serve_forever()
