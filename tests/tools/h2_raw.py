#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/h2_raw.py --broker SOCK --port N --ca PEM --case NAME: a hostile HTTP/2 client
# of the broker (Python's standard library only: frames written by hand, header blocks as
# HPACK literals without Huffman). It goes through the broker's CONNECT to localhost:N, makes
# TLS with the session CA offering only "h2", sends the case's frames and prints one line:
# what the broker did, as the frames it read back say it ("goaway <code>", "rst <code>",
# "headers", "closed", "nothing"), then the seconds that took.
#   rapid-reset     1,000 streams each opened and reset at once (CVE-2023-44487)
#   continuation    a HEADERS frame without END_HEADERS and 1,000 CONTINUATION frames
#   settings-flood  5,000 SETTINGS frames
#   head-stall      a HEADERS frame without END_HEADERS, then silence
#   bad-preface     a client preface that is not HTTP/2's
#   crlf-value      a request field whose value holds CR LF (HPACK carries any byte)
#   upper-name      a request field with an upper-case name
#   get             one plain GET /echo: "headers" when it is answered
#   slow32          32 streams of GET /slow (answered after 3 s) at once: prints how many
#                   streams got a HEADERS frame within --limit seconds ("streams N")
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def hint(n, prefix):  # an HPACK integer with a PREFIX-bit prefix (RFC 7541 5.1)
    top = (1 << prefix) - 1
    if n < top:
        return bytes([n])
    out, n = [top], n - top
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    return bytes(out + [n])


def literal(name, value):  # literal without indexing, new name, no Huffman
    return b"\x00" + hint(len(name), 7) + name + hint(len(value), 7) + value


def request(port, path=b"/echo", extra=()):
    fields = [(b":method", b"GET"), (b":scheme", b"https"), (b":path", path),
              (b":authority", b"localhost:%d" % port)] + list(extra)
    return b"".join(literal(n, v) for n, v in fields)


def connect(args):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(args["--broker"])
    port = int(args["--port"])
    s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost:%d\r\n\r\n" % (port, port))
    got = b""
    while b"\r\n\r\n" not in got:
        b = s.recv(1)
        if not b:
            raise SystemExit("the broker closed the CONNECT")
        got += b
    if b" 200 " not in got.split(b"\r\n")[0]:
        raise SystemExit("CONNECT refused: %r" % got[:80])
    ctx = ssl.create_default_context(cafile=args["--ca"])
    ctx.set_alpn_protocols(["h2"])
    t = ctx.wrap_socket(s, server_hostname="localhost")
    if t.selected_alpn_protocol() != "h2":
        raise SystemExit("no h2 in ALPN: %r" % t.selected_alpn_protocol())
    return t, port


def read_outcome(t, limit_s):
    """The first thing that says what the broker did with us."""
    t.settimeout(limit_s)
    buf = b""
    seen_headers = False
    try:
        while True:
            while len(buf) >= 9:
                n = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + n:
                    break
                kind, payload = buf[3], buf[9:9 + n]
                buf = buf[9 + n:]
                if kind == GOAWAY:
                    return "goaway %d" % struct.unpack(">I", payload[4:8])[0]
                if kind == RST:
                    return "rst %d" % struct.unpack(">I", payload[:4])[0]
                if kind == HEADERS:
                    seen_headers = True
                if kind == DATA and seen_headers:
                    return "headers"
            b = t.recv(65536)
            if not b:
                return "headers" if seen_headers else "closed"
            buf += b
    except (socket.timeout, TimeoutError):
        return "headers" if seen_headers else "nothing"
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return "headers" if seen_headers else "closed"


def count_headers(t, limit_s):
    """The streams that got a HEADERS frame within LIMIT_S seconds."""
    t.settimeout(0.5)
    buf, streams, end = b"", set(), time.monotonic() + limit_s
    while time.monotonic() < end:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n = int.from_bytes(buf[:3], "big")
            if buf[3] == HEADERS:
                streams.add(int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF)
            buf = buf[9 + n:]
        try:
            b = t.recv(65536)
        except (socket.timeout, TimeoutError):
            continue
        except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
            break
        if not b:
            break
        buf += b
    return len(streams)


def send(t, data):
    try:
        t.sendall(data)
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
        pass


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    case = args["--case"]
    limit = float(args.get("--limit", "30"))
    t, port = connect(args)
    t0 = time.monotonic()
    hello = PREFACE + frame(SETTINGS, 0, 0)
    if case == "bad-preface":
        send(t, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 64)
    elif case == "rapid-reset":
        out = [hello]
        for i in range(1000):
            sid = 2 * i + 1
            out.append(frame(HEADERS, END_HEADERS | END_STREAM, sid, request(port, b"/slow")))
            out.append(frame(RST, 0, sid, struct.pack(">I", 8)))
        send(t, b"".join(out))
    elif case == "continuation":
        block = request(port)
        out = [hello, frame(HEADERS, END_STREAM, 1, block[:4])]
        rest = block[4:] + literal(b"x-pad", b"p" * 8)
        for i in range(1000):
            out.append(frame(CONTINUATION, 0, 1, rest[i % len(rest):i % len(rest) + 1]))
        send(t, b"".join(out))
    elif case == "settings-flood":
        send(t, hello + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 65535)) * 5000)
    elif case == "head-stall":
        send(t, hello + frame(HEADERS, END_STREAM, 1, request(port)))
    elif case == "crlf-value":
        send(t, hello + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                              request(port, extra=[(b"x-a", b"1\r\nx-injected: 2")])))
    elif case == "upper-name":
        send(t, hello + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                              request(port, extra=[(b"X-Upper", b"1")])))
    elif case == "get":
        send(t, hello + frame(HEADERS, END_HEADERS | END_STREAM, 1, request(port)))
    elif case == "slow32":
        send(t, hello + b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1,
                                       request(port, b"/slow")) for i in range(32)))
        print("streams %d" % count_headers(t, limit), "%.1f" % (time.monotonic() - t0))
        return
    else:
        raise SystemExit("unknown case " + case)
    print(read_outcome(t, limit), "%.1f" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
