# SPDX-License-Identifier: Apache-2.0
# tests/node-clients/agent_ws.py: a WebSocket from a Python session for
# tests/e2e/test_stream_clients.sh, with Debian's python3-websockets. Version 10 has no proxy
# support of its own, so the script opens the CONNECT tunnel through HTTPS_PROXY itself (as
# its documentation says to) and hands the socket over; TLS inside trusts the session CA the
# guest was given (SSL_CERT_FILE). Echo, binary, the token echoed (scrubbed), 2 MiB each way,
# a close with code 4003. Usage: python3 agent_ws.py wss://HOST:PORT/ws
import asyncio
import os
import socket
import ssl
import sys
import urllib.parse

import websockets


def tunnel(target):
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    s = socket.create_connection((proxy.hostname, proxy.port or 3128), timeout=20)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("proxy refused: %r" % head[:80])
    s.setblocking(False)
    return s


async def main(url):
    u = urllib.parse.urlsplit(url)
    ws = await websockets.connect(url, sock=tunnel(u.netloc.encode()),
                                  ssl=ssl.create_default_context(), server_hostname=u.hostname,
                                  max_size=None)
    got = []
    for m in ("py-echo", b"\x00\xfe", "say-token", "say-token-2", "x" * (2 << 20), "big"):
        if m == "say-token-2":
            r = await ws.recv()  # say-token is answered twice: text, then binary
        else:
            await ws.send(m)
            r = await ws.recv()
        got.append(("hex:" + r.hex() if len(r) < 64 else "bin:%d" % len(r))
                   if isinstance(r, bytes) else (r if len(r) < 64 else "text:%d" % len(r)))
    await ws.close(4003, "python done")
    print("pyws got=%s close=%s" % (got, ws.close_code))


asyncio.run(main(sys.argv[1]))
