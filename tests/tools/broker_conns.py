#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/broker_conns.py: many connections to a broker's session sockets, for
tests/e2e/test_broker_scale.sh. Prints one JSON object; asserts nothing itself.

  fair A_SOCK B_SOCK PORT N   N idle connections to session A, then one request on session B
                              while they stay open; then which of A's were closed, and how
  idle SOCK PORT              a silent connection and one idle after a request: when and how
                              each was closed
  buffer S1 S2 S3 PORT        bodies buffered whole (60000-byte POSTs toward a secret's
                              destination) held part-sent on S1 and S2 while others ask
  busy SOCK N PORT            N connections each sending half a request head, held until
                              stdin closes; prints once they are all sent, and then what
                              those the broker answered or closed got
  hold SOCK N                 N silent connections, held until stdin closes; prints how many
                              were kept once they are all open
  tls-trickle SOCK PORT WHAT   a CONNECT to localhost:PORT, then the guest's TLS a byte every
                              0.3 s for up to 30 s: WHAT "hello" (the ClientHello) or
                              "record" (after a whole handshake, the record of a request
                              head); when and how the broker ended it
  burst SOCK PORT N ROUNDS    N keep-alive connections at once, each asking ROUNDS times with a
                              pause longer than a worker keeps a silent connection between
                              requests: how many were answered 200
  trickle SOCK N PORT SECONDS N connections each sending a POST's body a byte every 0.2 s for
                              SECONDS (their workers stay busy), and meanwhile one more
                              connection's whole GET: how and when it was answered
"""
import json
import select
import socket
import ssl
import sys
import time


def connect(path):
    """A connection to PATH. A Unix socket whose backlog is full refuses at once (EAGAIN)
    rather than wait: on a loaded host the broker's loop may not have accepted the last
    burst yet, so that is retried for up to 5 s, as a guest would retry; what these tests
    count are the broker's own answers."""
    deadline = time.monotonic() + 5
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def answered(s, wait):
    """What the broker sent on an otherwise silent connection within WAIT seconds:
    None (nothing, still open), b"" (closed without a word) or its bytes."""
    r, _, _ = select.select([s], [], [], wait)
    if not r:
        return None
    try:
        return s.recv(4096)
    except OSError:
        return b""


def request(s, port, close):
    s.sendall(b"GET http://localhost:%d/scale HTTP/1.1\r\nHost: localhost:%d\r\n%s\r\n"
              % (port, port, b"Connection: close\r\n" if close else b""))
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head.split(b"\r\n")[0].decode(errors="replace")


def fair(a_path, b_path, port, n):
    socks, refused = [], []
    for _ in range(n):
        try:
            socks.append(connect(a_path))
        except OSError as e:
            refused.append("connect: %s" % e)
    time.sleep(1)
    kept = []
    for s in socks:
        got = answered(s, 0)
        if got is None:
            kept.append(s)
        else:
            refused.append(got.decode(errors="replace").split("\r\n")[0] + " | " +
                           got.decode(errors="replace").split("\r\n\r\n")[-1].strip())
    t0 = time.monotonic()
    try:
        b = connect(b_path)
        b_status = request(b, port, True)
    except OSError as e:
        b_status = "failed: %s" % e
    b_ms = (time.monotonic() - t0) * 1000
    evicted = []
    ready, _, _ = select.select(kept, [], [], 1.0)
    for s in ready:
        got = answered(s, 0)
        if got is not None:
            evicted.append(got.decode(errors="replace").split("\r\n\r\n")[-1].strip())
    print(json.dumps({"opened": n, "kept": len(kept), "refused": refused,
                      "b_status": b_status, "b_ms": round(b_ms), "evicted": evicted}))


def idle(path, port):
    t0 = time.monotonic()
    silent = connect(path)
    used = connect(path)
    first = request(used, port, False)
    out = {"first": first}
    for name, s in (("silent", silent), ("used", used)):
        got = answered(s, 30)
        out[name] = None if got is None else got.decode(errors="replace")
        out[name + "_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(out))


def post_head(port, length):
    return (b"POST http://localhost:%d/buffer HTTP/1.1\r\nHost: localhost:%d\r\n"
            b"Content-Length: %d\r\n\r\n" % (port, port, length))


def whole_post(path, port):
    s = connect(path)
    s.sendall(post_head(port, 60000) + b"x" * 60000)
    s.settimeout(10)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data and (b" 503 " in data.split(b"\r\n")[0] or
                                          len(data) > 60000):
                break
    except OSError:
        pass
    text = data.decode(errors="replace")
    return text.split("\r\n")[0] + " | " + (text.split("\r\n\r\n", 1)[-1][:200].strip()
                                            if " 503 " in text.split("\r\n")[0] else "")


def buffer(s1, s2, s3, port):
    held1 = connect(s1)
    held1.sendall(post_head(port, 60000) + b"x" * 50000)
    held2 = connect(s2)
    held2.sendall(post_head(port, 60000) + b"x" * 50000)
    time.sleep(0.5)
    out = {"session_over": whole_post(s1, port), "broker_over": whole_post(s3, port)}
    held1.sendall(b"x" * 10000)
    held1.settimeout(10)
    first = request_status(held1)
    out["held_done"] = first.split("\r\n")[0]
    if " 200 " not in out["held_done"]:
        out["held_done_answer"] = first[-300:]
    held2.close()
    time.sleep(0.3)
    out["after"] = whole_post(s1, port)
    print(json.dumps(out))


def request_status(s):
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def busy(path, n, port):
    socks = []
    for _ in range(n):
        s = connect(path)
        s.sendall(b"GET http://localhost:%d/busy HTTP/1.1\r\nHost: local" % port)
        socks.append(s)
    time.sleep(0.5)
    print(json.dumps({"busy": len(socks)}), flush=True)
    sys.stdin.read()
    got = []
    for s in socks:
        try:
            a = answered(s, 0)
        except ConnectionResetError:
            a = b"(reset)"
        if a is not None:
            got.append(a.decode(errors="replace").replace("\r\n", " | "))
    print(json.dumps({"answers": got}), flush=True)


def hold(path, n):
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(path))
        except OSError:
            pass
    time.sleep(1)
    kept = [s for s in socks if answered(s, 0) is None]
    print(json.dumps({"opened": n, "kept": len(kept)}), flush=True)
    sys.stdin.read()


def trickle(path, n, port, seconds):
    socks = []
    for _ in range(n):
        s = connect(path)
        s.sendall(post_head(port, 100000))
        socks.append(s)
    time.sleep(0.3)
    g = connect(path)
    t0 = time.monotonic()
    g.sendall(b"GET http://localhost:%d/scale HTTP/1.1\r\nHost: localhost:%d\r\n"
              b"Connection: close\r\n\r\n" % (port, port))
    got, first_ms, closed, reset = b"", None, False, False
    while time.monotonic() < t0 + seconds + 5 and not closed:
        r, _, _ = select.select([g], [], [], 0.2)
        if r:
            try:
                chunk = g.recv(65536)
            except ConnectionResetError:
                chunk, reset = b"", True
            if first_ms is None and chunk:
                first_ms = int((time.monotonic() - t0) * 1000)
            closed = not chunk
            got += chunk
        if time.monotonic() < t0 + seconds:
            for s in socks:
                try:
                    s.send(b"x")
                except OSError:
                    pass
    lines = got.decode(errors="replace").split("\r\n")
    why = [x for x in got.decode(errors="replace").split("\n") if x.startswith("bulkhead: ")]
    print(json.dumps({"status": lines[0], "why": why[0] if why else "", "ms": first_ms,
                      "closed": closed, "reset": reset}))


def burst(path, port, n, rounds):
    import threading
    ok = []

    def one(k):
        try:
            s = connect(path)
            for r in range(rounds):
                if request(s, port, False) == "HTTP/1.1 200 OK":
                    ok.append(1)
                time.sleep(0.06 + 0.002 * ((k + r) % 10))
            s.close()
        except OSError:
            pass
    workers = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    print(json.dumps({"asked": n * rounds, "ok": len(ok)}))


def session_ca(path):
    s = connect(path)
    s.sendall(b"GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    pem = data.partition(b"\r\n\r\n")[2].decode()
    return pem[pem.index("-----BEGIN"):]


def pump(sock, tls, out):
    """Moves the TLS object's output to the socket, all at once."""
    data = out.read()
    if data:
        sock.sendall(data)


def tls_trickle(path, port, what):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=session_ca(path))
    s = connect(path)
    s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost:%d\r\n\r\n" % (port, port))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            print(json.dumps({"ended_s": 0, "sent": 0, "of": 0, "got": 0,
                              "connect": head.decode(errors="replace")}))
            return
        head += chunk
    if not head.startswith(b"HTTP/1.1 200 "):
        print(json.dumps({"ended_s": 0, "sent": 0, "of": 0, "got": 0,
                          "connect": head.decode(errors="replace")}))
        return
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
    if what == "record":
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pump(s, tls, out)
                inc.write(s.recv(65536))
        pump(s, tls, out)
        tls.write(b"GET /x HTTP/1.1\r\nHost: localhost:%d\r\n\r\n" % port)
    else:
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
    pending = out.read()
    t0 = time.monotonic()
    sent, ended, got = 0, None, b""
    while time.monotonic() < t0 + 30 and ended is None:
        r, _, _ = select.select([s], [], [], 0.3)
        if r:
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                ended = time.monotonic() - t0
            got += chunk
        elif sent < len(pending):
            try:
                s.send(pending[sent:sent + 1])
                sent += 1
            except OSError:
                ended = time.monotonic() - t0
    print(json.dumps({"ended_s": None if ended is None else round(ended, 1),
                      "sent": sent, "of": len(pending), "got": len(got)}))


def main():
    mode = sys.argv[1]
    if mode == "fair":
        fair(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "idle":
        idle(sys.argv[2], int(sys.argv[3]))
    elif mode == "buffer":
        buffer(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif mode == "busy":
        busy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "hold":
        hold(sys.argv[2], int(sys.argv[3]))
    elif mode == "tls-trickle":
        tls_trickle(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "burst":
        burst(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "trickle":
        trickle(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit("usage: broker_conns.py fair|idle|buffer|busy|hold|burst|trickle|tls-trickle ...")


if __name__ == "__main__":
    main()
