#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/ws_peer.py: both ends of a WebSocket through the broker, with Debian's
# python3-websockets (the client and server Python programs use).
#   serve  --cert PEM --key KEY --ctl DIR     a TLS WebSocket server; prints its port
#   client --broker SOCK --port N --ca PEM --script NAME [--path P]
#   raw    --broker SOCK --port N --ca PEM --frames HEX   hostile frames after a handshake:
#          prints the close code the broker answers with (or "none")
# The server greets each connection ("hello"), echoes what it gets (text as text, bytes as
# bytes), and on "say-token" sends the X-Api-Key it received (text and binary), on "big" a
# 1 MiB message in 64 KiB fragments, on "close-me" closes with 4002 and a reason naming the
# token, on "hold-close" stops answering anything (a close included) for 8 s; a message
# equal to that key is answered "placeholder-ok". What it saw (extensions,
# messages, the close code it got) goes to DIR/<path>.json when the connection ends. /ext
# answers the handshake with an extension no one offered. The client goes through the
# broker's CONNECT and TLS with the session CA, runs a script and prints JSON.
import asyncio
import base64
import hashlib
import json
import os
import socket
import ssl
import sys
import time

import websockets
import websockets.exceptions

async def handler(ws, path):
    ctl = handler.ctl
    key = ws.request_headers.get("X-Api-Key", "")
    seen = {"key_received": bool(key), "extensions": [e.name for e in ws.extensions],
            "messages": [], "close_code": None, "close_reason": None}
    name = path.strip("/").split("?")[0] or "root"
    try:
        await ws.send("hello")
        async for m in ws:
            seen["messages"].append(m if isinstance(m, str) else "<%d bytes>" % len(m))
            if m == "say-token":
                await ws.send("token=" + key)
                await ws.send(b"bin:" + key.encode())
            elif m == "big":
                await ws.send(("x" * 65536) for _ in range(16))
            elif m == "close-me":
                await ws.close(4002, "bye " + key)
            elif m == "hold-close":  # busy for 8 s: no close is answered meanwhile
                time.sleep(8)
            elif key and m == key:
                await ws.send("placeholder-ok")
            else:
                try:  # the client may have closed already: what it sent is still read
                    await ws.send(m)
                except websockets.exceptions.ConnectionClosed:
                    pass
    except websockets.exceptions.ConnectionClosed:
        pass
    seen["close_code"], seen["close_reason"] = ws.close_code, ws.close_reason
    with open(os.path.join(ctl, name + ".json"), "w") as f:
        json.dump(seen, f)


def odd_headers(path, headers):
    """/ext: the 101 names an extension no one offered; /badproto a subprotocol."""
    if path.startswith("/ext"):
        return {"Sec-WebSocket-Extensions": "permessage-deflate"}
    if path.startswith("/badproto"):
        return {"Sec-WebSocket-Protocol": "not-offered"}
    return {}


async def serve(a):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(a["cert"], a["key"])
    handler.ctl = a["ctl"]
    async with websockets.serve(handler, "127.0.0.1", 0, ssl=ctx,
                                extra_headers=odd_headers, subprotocols=["chat.v1"],
                                max_size=None) as srv:
        print(srv.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


def tunnel(a):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(a["broker"])
    hp = b"localhost:%d" % int(a["port"])
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp, hp))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("CONNECT refused: %r" % head[:80])
    s.setblocking(False)
    return s


async def client(a):
    out = {}
    ctx = ssl.create_default_context(cafile=a["ca"])
    uri = "wss://localhost:%s%s" % (a["port"], a.get("path", "/echo"))
    script = a["script"]
    try:
        ws = await websockets.connect(uri, sock=tunnel(a), ssl=ctx,
                                      server_hostname="localhost", max_size=None,
                                      open_timeout=10, close_timeout=5,
                                      subprotocols=[a["proto"]] if "proto" in a else None)
    except websockets.exceptions.InvalidStatusCode as e:
        print(json.dumps({"handshake_status": e.status_code}))
        return 0
    except Exception as e:
        print(json.dumps({"handshake_error": repr(e)}))
        return 0
    out["extensions"] = [e.name for e in ws.extensions]
    out["subprotocol"] = ws.subprotocol
    out["greeting"] = await asyncio.wait_for(ws.recv(), 10)
    if script == "main":
        await ws.send("ping-text")
        out["echo_text"] = await ws.recv()
        await ws.send(b"\x00\x01binary\xff")
        r = await ws.recv()
        out["echo_binary"] = base64.b64encode(r).decode() if isinstance(r, bytes) else r
        await ws.send("say-token")
        out["token_text"] = await ws.recv()
        r = await ws.recv()
        out["token_binary"] = r.decode(errors="replace") if isinstance(r, bytes) else "<text>"
        await ws.send("BULKHEAD_SECRET_TOK")
        out["placeholder"] = await ws.recv()
        # A 3 MiB message from the client in 48 fragments, echoed whole.
        await ws.send(("%064d" % i) * 1024 for i in range(48))
        r = await ws.recv()
        out["big_up"] = [len(r), hashlib.sha256(r.encode()).hexdigest() ==
                         hashlib.sha256("".join(("%064d" % i) * 1024 for i in range(48))
                                        .encode()).hexdigest()]
        await ws.send("big")
        r = await ws.recv()
        out["big_down"] = len(r)
        pong = await ws.ping(b"are-you-there")
        await asyncio.wait_for(pong, 5)
        out["pong"] = True
        await ws.close(4001, "client bye")
    elif script == "burst":  # messages and the close in one go: none may be lost
        for i in range(5):
            await ws.send("b%d" % i)
        await ws.close(4005, "burst done")
    elif script == "server-close":
        await ws.send("close-me")
        try:
            while True:
                await asyncio.wait_for(ws.recv(), 10)
        except websockets.exceptions.ConnectionClosed:
            pass
    elif script == "hangup":  # the guest's transport goes, with no close frame
        await ws.send("hold-close")
        await asyncio.sleep(0.5)
        ws.transport.abort()
        out["aborted"] = True
        print(json.dumps(out))
        return 0
    elif script == "tripwire":
        await ws.send("BULKHEAD_SECRET_OTHER")
        try:
            while True:
                out.setdefault("after", []).append(await asyncio.wait_for(ws.recv(), 10))
        except websockets.exceptions.ConnectionClosed:
            pass
    elif script == "idle":
        try:
            await asyncio.wait_for(ws.recv(), 15)
        except websockets.exceptions.ConnectionClosed:
            pass
    await ws.wait_closed()
    out["close_code"], out["close_reason"] = ws.close_code, ws.close_reason
    print(json.dumps(out))
    return 0


def raw(a):
    """Hand-made frames (hex, sent as they are) after a real handshake."""
    s = tunnel(a)
    s.setblocking(True)
    t = ssl.create_default_context(cafile=a["ca"]).wrap_socket(s, server_hostname="localhost")
    key = base64.b64encode(os.urandom(16))
    t.sendall(b"GET /raw HTTP/1.1\r\nHost: localhost:%s\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
              b"Sec-WebSocket-Version: 13\r\n\r\n" % (a["port"].encode(), key))
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = t.recv(4096)
        if not b:
            break
        buf += b
    if not buf.startswith(b"HTTP/1.1 101"):
        print(json.dumps({"handshake": buf[:40].decode(errors="replace")}))
        return 0
    buf = buf[buf.index(b"\r\n\r\n") + 4:]
    t.sendall(bytes.fromhex(a["frames"]))
    code = "none"

    def need(n):
        nonlocal buf
        while len(buf) < n:
            b = t.recv(65536)
            if not b:
                raise EOFError
            buf += b

    try:
        while True:  # the broker's frames are unmasked: a 2-byte head, 126/127 extended
            need(2)
            op, ln = buf[0] & 15, buf[1] & 127
            hl = 2 + {126: 2, 127: 8}.get(ln, 0)
            need(hl)
            if ln >= 126:
                ln = int.from_bytes(buf[2:hl], "big")
            need(hl + ln)
            if op == 8:
                code = int.from_bytes(buf[hl:hl + 2], "big") if ln >= 2 else 0
                break
            buf = buf[hl + ln:]
    except (EOFError, OSError):
        pass
    print(json.dumps({"close_code": code}))
    return 0


def main():
    cmd, args, a, i = sys.argv[1], sys.argv[2:], {}, 0
    while i < len(args):
        a[args[i].lstrip("-")] = args[i + 1]
        i += 2
    if cmd == "raw":
        return raw(a)
    return asyncio.run(serve(a) if cmd == "serve" else client(a))


if __name__ == "__main__":
    sys.exit(main())
