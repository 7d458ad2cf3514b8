#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/ws_rtt.py: WebSocket echo round trips for bench/broker-ws.sh, with Debian's
# python3-websockets.
#   serve  --cert PEM --key KEY            a TLS echo server; prints its port. Each echo
#                                          carries the X-Api-Key it got (or as many x's).
#   client --url WSS-URL --ca PEM [--broker SOCK] [--n N]
#          N round trips of a 64-byte message, directly or through the broker's CONNECT
#          (then trusting the broker's session CA); one round trip's microseconds a line.
#   hold   --url WSS-URL --broker SOCK --n N
#          opens N WebSockets through the broker, says "open" and holds them until stdin ends.
import asyncio
import socket
import ssl
import sys
import time
import urllib.parse
import urllib.request

import websockets

FILLER = "x" * 36


async def echo(ws, path):
    key = ws.request_headers.get("X-Api-Key") or FILLER
    async for m in ws:
        await ws.send(m + key)


async def serve(a):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(a["cert"], a["key"])
    async with websockets.serve(echo, "127.0.0.1", 0, ssl=ctx, compression=None) as srv:
        print(srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


def session_ca(sock_path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(b"GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    return data[data.index(b"-----BEGIN"):].decode()


def tunnel(sock_path, hostport):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hostport, hostport))
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: %r" % head[:60])
    s.setblocking(False)
    return s


async def client(a):
    u = urllib.parse.urlsplit(a["url"])
    n = int(a.get("n", "200"))
    if "broker" in a:
        ctx = ssl.create_default_context(cadata=session_ca(a["broker"]))
        sock = tunnel(a["broker"], u.netloc.encode())
        ws = await websockets.connect(a["url"], sock=sock, ssl=ctx, server_hostname=u.hostname,
                                      compression=None)
    else:
        ctx = ssl.create_default_context(cafile=a["ca"])
        ws = await websockets.connect(a["url"], ssl=ctx, compression=None)
    msg = "m" * 64
    for _ in range(n):
        t0 = time.perf_counter_ns()
        await ws.send(msg)
        await ws.recv()
        print((time.perf_counter_ns() - t0) // 1000)
    await ws.close()


async def hold(a):
    u = urllib.parse.urlsplit(a["url"])
    ctx = ssl.create_default_context(cadata=session_ca(a["broker"]))
    held = []
    for _ in range(int(a["n"])):
        ws = await websockets.connect(a["url"], sock=tunnel(a["broker"], u.netloc.encode()),
                                      ssl=ctx, server_hostname=u.hostname, compression=None)
        await ws.send("m")
        await ws.recv()
        held.append(ws)
    print("open", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for ws in held:
        await ws.close()


def main():
    cmd, args, a, i = sys.argv[1], sys.argv[2:], {}, 0
    while i < len(args):
        a[args[i].lstrip("-")] = args[i + 1]
        i += 2
    asyncio.run({"serve": serve, "client": client, "hold": hold}[cmd](a))


if __name__ == "__main__":
    main()
