#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/stream_lockstep.py: a streaming upstream and a client that prove each message of
# a streamed answer reaches the client before the next one is sent: the upstream writes
# message k+1 only once the client has said (a file in the control directory) that it holds
# message k, so a relay that keeps messages back is caught by order, not by a clock.
#   serve  --cert PEM --key KEY --ctl DIR          (prints its port on stdout)
#   client --broker SOCK --url URL --ctl DIR --id ID [--tunnel --ca PEM]
# With ?pause=S the upstream waits S seconds before each message after the first instead of
# waiting for acknowledgements; the client's --close-after K hangs up after K messages.
# /sse, /sse-crlf, /sse-cr, /ndjson and /plain answer ?n=N messages (SSE events ended by LF,
# CRLF or a lone CR, NDJSON lines, plain text lines); each message carries the request's
# X-Api-Key (or its ?key=) when ?echo=1. Hostile heads: /slow-head sends its head a byte
# every 0.2 s; /fold folds the echoed key across two header lines (obs-fold).
import http.client
import http.server
import json
import os
import socket
import ssl
import sys
import time
import urllib.parse

ACK_WAIT = 3.0  # how long the upstream waits for a message's acknowledgement


def wait_for(path, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.005)
    return False


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        n, sid = int(q.get("n", ["4"])[0]), q.get("id", ["x"])[0]
        echo = q.get("echo", ["0"])[0] == "1"
        pause = float(q.get("pause", ["0"])[0])  # seconds before each message after the first
        kinds = {"/sse": ("text/event-stream", "data: %s\n\n"),
                 "/sse-crlf": ("text/event-stream; charset=utf-8", "data: %s\r\n\r\n"),
                 "/sse-cr": ("text/event-stream", "data: %s\r\r"),
                 "/ndjson": ("application/x-ndjson", "%s\n"),
                 "/plain": ("text/plain", "%s\n")}
        if u.path in ("/slow-head", "/fold"):
            return self.hostile_head(u.path, self.headers.get("X-Api-Key") or "")
        if u.path not in kinds:
            self.send_error(404)
            return
        ctype, fmt = kinds[u.path]
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        ctl = self.server.ctl
        late = []
        for k in range(1, n + 1):
            msg = {"k": k, "delta": "word%d " % k}
            if echo:
                msg["key"] = self.headers.get("X-Api-Key") or q.get("key", [""])[0]
            data = (fmt % json.dumps(msg)).encode()
            if pause and k > 1:
                time.sleep(pause)
            open(os.path.join(ctl, "%s.sent.%d" % (sid, k)), "w").close()
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            except OSError:  # the broker gave up on the stream
                break
            if pause:
                continue
            if k < n and not wait_for(os.path.join(ctl, "%s.ack.%d" % (sid, k)), ACK_WAIT):
                late.append(k)
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        with open(os.path.join(ctl, "%s.late" % sid), "w") as f:
            f.write(" ".join(map(str, late)))


    def hostile_head(self, path, key):
        half = len(key) // 2
        head = (b"HTTP/1.1 200 OK\r\nX-Echo: %s\r\n %s\r\nContent-Length: 2\r\n\r\nok"
                % (key[:half].encode(), key[half:].encode()))
        try:
            if path == "/fold":
                self.wfile.write(head)
                self.wfile.flush()
                return
            for i in range(len(head)):  # 0.2 s a byte: about 15 s for the whole head
                self.wfile.write(head[i:i + 1])
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:  # the broker gave up on it
            pass
        self.close_connection = True


def serve(a):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.ctl = a["ctl"]
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(a["cert"], a["key"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def messages(kind, buf):
    """Complete messages in BUF and the rest."""
    sep = {"sse": None, "lines": b"\n"}[kind]
    out = []
    while True:
        if sep is None:
            cut = [(buf.find(s), len(s)) for s in (b"\r\n\r\n", b"\n\n", b"\r\r")]
            cut = [c for c in cut if c[0] >= 0]
            if not cut:
                return out, buf
            i, l = min(cut)
        else:
            i, l = buf.find(sep), 1
            if i < 0:
                return out, buf
        out.append(buf[:i])
        buf = buf[i + l:]


def client(a):
    u = urllib.parse.urlsplit(a["url"])
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(30)
    sock.connect(a["broker"])
    if "tunnel" in a:
        hp = u.netloc
        sock.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp.encode(), hp.encode()))
        head = b""
        while b"\r\n\r\n" not in head:
            b = sock.recv(1)
            if not b:
                break
            head += b
        if not head.startswith(b"HTTP/1.1 200"):
            print(json.dumps({"error": head.decode(errors="replace")}))
            return 1
        ctx = ssl.create_default_context(cafile=a["ca"])
        sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
        target = u.path + ("?" + u.query if u.query else "")
    else:
        target = a["url"]
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\n\r\n"
                 % (target.encode(), u.netloc.encode()))
    r = http.client.HTTPResponse(sock)
    r.begin()
    kind = "sse" if "/sse" in u.path else "lines"
    got, buf, early, body = [], b"", [], b""
    while True:
        try:
            b = r.read1(65536)
        except http.client.IncompleteRead:  # cut before its last chunk
            body += b"<cut>"
            break
        if not b:
            break
        body += b
        buf += b
        msgs, buf = messages(kind, buf)
        for m in msgs:
            k = len(got) + 1
            # The upstream sends k+1 only after this acknowledgement: if it is already
            # sent, message k was held back until then.
            if os.path.exists(os.path.join(a["ctl"], "%s.sent.%d" % (a["id"], k + 1))):
                early.append(k)
            got.append(m.decode(errors="replace"))
            open(os.path.join(a["ctl"], "%s.ack.%d" % (a["id"], k)), "w").close()
        if "close-after" in a and len(got) >= int(a["close-after"]):
            sock.close()
            break
    print(json.dumps({"status": r.status, "messages": got, "held": early,
                      "content_type": r.getheader("Content-Type"),
                      "body": body.decode(errors="replace")}))
    return 0


def main():
    cmd, args, a, i = sys.argv[1], sys.argv[2:], {}, 0
    while i < len(args):
        k = args[i].lstrip("-")
        if k == "tunnel":
            a[k] = True
            i += 1
        else:
            a[k] = args[i + 1]
            i += 2
    return serve(a) if cmd == "serve" else client(a)


if __name__ == "__main__":
    sys.exit(main())
