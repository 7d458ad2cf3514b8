#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/stream_scale.py: many long-lived streams through the broker at once, as guests
# hold them: Server-Sent Events (an MCP client's GET stream) and WebSockets.
#   serve --cert PEM --key KEY
#       An HTTPS upstream: GET /sse answers text/event-stream and holds it open; a WebSocket
#       server (python3-websockets) echoes what it gets. Prints {"sse": PORT, "ws": PORT}.
#       SIGUSR1 sends round N+1 to every open stream, with the Authorization header its request
#       carried: an SSE event {"round":N,"auth":"..."} (JSON, as LLM and MCP servers send), a
#       WebSocket message "round=N auth=...".
#   hold --host H --sse-port P --ws-port P --sse N --ws N SOCK...
#       Opens N SSE streams and N WebSockets spread over the session sockets SOCK..., each
#       through a CONNECT tunnel and TLS checked against that session's CA (fetched from the
#       socket as bulkhead-init does), and waits for each stream's first message. Then reads
#       commands on stdin, answering each with one JSON line on stdout:
#         open              how many of each are open, how many failed, the first failure
#         round N SECRET    every stream must get round N, no SECRET in it and the broker's
#                           redaction in its place; every WebSocket then echoes one message
#         ended SOCK        every stream through SOCK must end (its session ended): how many did
#         quit
import asyncio
import json
import os
import resource
import signal
import ssl
import socket
import sys

import websockets

TIMEOUT = 60.0
OPEN_AT_ONCE = 32
REDACTED = b"[bulkhead:redacted]"


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def arg(argv, name, default=None):
    if name in argv:
        return argv[argv.index(name) + 1]
    return default


# --- the upstream -------------------------------------------------------------------------

class Upstream:
    def __init__(self):
        self.sse = set()  # (writer, auth)
        self.ws = set()
        self.round = 0

    async def sse_client(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        auth = b""
        for line in head.split(b"\r\n")[1:]:
            if line.lower().startswith(b"authorization:"):
                auth = line.split(b":", 1)[1].strip()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
        self.chunk(writer, b'data: {"hello":1}\n\n')
        me = (writer, auth)
        self.sse.add(me)
        try:
            await reader.read()  # until the broker closes it
        except ConnectionError:
            pass
        self.sse.discard(me)
        writer.close()

    @staticmethod
    def chunk(writer, data):
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    async def ws_client(self, ws, path=None):
        del path
        self.ws.add(ws)
        try:
            await ws.send("hello")
            async for m in ws:
                await ws.send(m)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.ws.discard(ws)

    def broadcast(self):
        self.round += 1
        for writer, auth in list(self.sse):
            try:
                self.chunk(writer, b'data: {"round":%d,"auth":"%s"}\n\n' % (self.round, auth))
            except (ConnectionError, RuntimeError):
                pass
        for ws in list(self.ws):
            auth = ws.request_headers.get("Authorization", "")
            asyncio.ensure_future(self.ws_send(ws, "round=%d auth=%s" % (self.round, auth)))

    @staticmethod
    async def ws_send(ws, text):
        try:
            await ws.send(text)
        except websockets.ConnectionClosed:
            pass


async def serve(argv):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(arg(argv, "--cert"), arg(argv, "--key"))
    up = Upstream()
    sse = await asyncio.start_server(up.sse_client, "127.0.0.1", 0, ssl=ctx, backlog=4096)
    ws = await websockets.serve(up.ws_client, "127.0.0.1", 0, ssl=ctx, backlog=4096,
                                ping_interval=None, compression=None)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, up.broadcast)
    print(json.dumps({"sse": sse.sockets[0].getsockname()[1],
                      "ws": list(ws.sockets)[0].getsockname()[1]}), flush=True)
    await asyncio.Event().wait()


# --- the guests ---------------------------------------------------------------------------

async def recv_head(loop, sock):
    data = b""
    while b"\r\n\r\n" not in data:
        got = await loop.sock_recv(sock, 1)  # never past the head: TLS follows it
        if not got:
            raise ConnectionError("the broker closed before its answer's head")
        data += got
        if len(data) > 8192:
            raise ConnectionError("an answer head past 8 KiB")
    return data


async def session_ca(loop, path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    await loop.sock_connect(sock, path)
    await loop.sock_sendall(sock, b"GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\n"
                                  b"Connection: close\r\n\r\n")
    data = b""
    while True:
        got = await loop.sock_recv(sock, 65536)
        if not got:
            break
        data += got
    sock.close()
    pem = data[data.index(b"-----BEGIN CERTIFICATE-----"):]
    ctx = ssl.create_default_context(cadata=pem.decode())
    return ctx


async def tunnel(loop, path, host, port):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    await loop.sock_connect(sock, path)
    await loop.sock_sendall(sock, b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                            (host.encode(), port, host.encode(), port))
    head = await recv_head(loop, sock)
    if not head.startswith(b"HTTP/1.1 200"):
        sock.close()
        raise ConnectionError("CONNECT answered " + head.split(b"\r\n")[0].decode())
    return sock


class SseStream:
    def __init__(self, reader, writer):
        self.reader, self.writer, self.buf, self.open = reader, writer, b"", True

    async def until(self, needle):
        while needle not in self.buf:
            got = await self.reader.read(65536)
            if not got:
                self.open = False
                raise ConnectionError("the SSE stream ended")
            self.buf += got
        at = self.buf.index(needle)
        end = self.buf.find(b"\n\n", at)
        while end < 0:
            got = await self.reader.read(65536)
            if not got:
                self.open = False
                raise ConnectionError("the SSE stream ended mid-event")
            self.buf += got
            end = self.buf.find(b"\n\n", at)
        event, self.buf = self.buf[at:end], self.buf[end + 2:]
        return event


async def open_sse(loop, path, ctx, host, port, i):
    sock = await tunnel(loop, path, host, port)
    reader, writer = await asyncio.open_connection(sock=sock, ssl=ctx, server_hostname=host)
    writer.write(b"GET /sse?i=%d HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n\r\n"
                 % (i, host.encode(), port))
    await writer.drain()
    s = SseStream(reader, writer)
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError("GET /sse answered " + head.split(b"\r\n")[0].decode())
    await s.until(b'data: {"hello":1}')
    return s


async def open_ws(loop, path, ctx, host, port):
    sock = await tunnel(loop, path, host, port)
    ws = await websockets.connect("wss://%s:%d/ws" % (host, port), sock=sock, ssl=ctx,
                                  server_hostname=host, ping_interval=None, compression=None, open_timeout=TIMEOUT)
    if await ws.recv() != "hello":
        raise ConnectionError("the WebSocket's first message is not hello")
    return ws


def check(text, n, secret):
    return secret not in text and REDACTED in text


async def round_sse(s, n, secret):
    event = await s.until(b'"round":%d,' % n)
    return check(event, n, secret)


async def round_ws(ws, n, secret):
    while True:
        m = await ws.recv()
        if m.startswith("round=%d " % n):
            break
    ok = check(m.encode(), n, secret)
    await ws.send("echo %d" % n)
    return ok and await ws.recv() == "echo %d" % n


async def hold(argv):
    loop = asyncio.get_running_loop()
    host = arg(argv, "--host", "localhost")
    sse_port, ws_port = int(arg(argv, "--sse-port")), int(arg(argv, "--ws-port"))
    n_sse, n_ws = int(arg(argv, "--sse", "0")), int(arg(argv, "--ws", "0"))
    socks = [a for a in argv if a.endswith(".sock")]
    cas = [await session_ca(loop, p) for p in socks]
    gate = asyncio.Semaphore(OPEN_AT_ONCE)
    why = []

    async def one(kind, i):
        k = i % len(socks)
        async with gate:
            try:
                if kind == "sse":
                    return k, await asyncio.wait_for(
                        open_sse(loop, socks[k], cas[k], host, sse_port, i), TIMEOUT)
                return k, await asyncio.wait_for(
                    open_ws(loop, socks[k], cas[k], host, ws_port), TIMEOUT)
            except (OSError, ssl.SSLError, asyncio.TimeoutError, ValueError,
                    websockets.WebSocketException, asyncio.IncompleteReadError) as e:
                why.append("%s %d: %s" % (kind, i, e or type(e).__name__))
                return None

    sse = await asyncio.gather(*(one("sse", i) for i in range(n_sse)))
    ws = await asyncio.gather(*(one("ws", i) for i in range(n_ws)))
    sse_at = [t for t in sse if t]
    ws_at = [t for t in ws if t]
    sse = [s for _, s in sse_at]
    ws = [w for _, w in ws_at]

    def say(d):
        print(json.dumps(d), flush=True)

    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = (await reader.readline()).decode().split()
        if not line or line[0] == "quit":
            break
        if line[0] == "open":
            say({"sse": len(sse), "ws": len(ws), "failed": len(why),
                 "why": why[0] if why else ""})
        elif line[0] == "round":
            n, secret = int(line[1]), line[2].encode()

            async def guard(coro):
                try:
                    return await asyncio.wait_for(coro, TIMEOUT)
                except (OSError, asyncio.TimeoutError, websockets.WebSocketException,
                        asyncio.IncompleteReadError):
                    return False

            a = await asyncio.gather(*(guard(round_sse(s, n, secret)) for s in sse))
            b = await asyncio.gather(*(guard(round_ws(w, n, secret)) for w in ws))
            say({"sse_ok": sum(a), "sse": len(sse), "ws_ok": sum(b), "ws": len(ws)})
        elif line[0] == "ended":
            k = socks.index(line[1])

            async def sse_end(st):
                while await st.reader.read(65536):
                    pass
                return True

            async def ws_end(w):
                await w.wait_closed()
                return True

            async def ends(coro):
                try:
                    return await asyncio.wait_for(coro, TIMEOUT)
                except asyncio.TimeoutError:
                    return False
                except (OSError, websockets.WebSocketException):
                    return True  # gone, if not cleanly (no TLS close_notify)

            a = await asyncio.gather(*(ends(sse_end(st)) for j, st in sse_at if j == k))
            b = await asyncio.gather(*(ends(ws_end(w)) for j, w in ws_at if j == k))
            say({"ended": sum(a) + sum(b), "of": len(a) + len(b)})
    for s in sse:
        s.writer.close()
    for w in ws:
        await w.close()
    os._exit(0)


def main():
    raise_nofile()
    if len(sys.argv) < 2 or sys.argv[1] not in ("serve", "hold"):
        sys.exit("usage: stream_scale.py serve|hold ...")
    asyncio.run(serve(sys.argv) if sys.argv[1] == "serve" else hold(sys.argv))


if __name__ == "__main__":
    main()
