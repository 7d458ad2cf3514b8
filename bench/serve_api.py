# SPDX-License-Identifier: Apache-2.0
# bench/serve_api.py: HTTP/1.1 to `bulkhead serve` on its Unix socket, for the serve benches
# (serve_latency.py, serve_scope_latency.py): use(SOCKET), then call(METHOD, PATH, BODY).
import http.client
import json
import socket

_sock = None


def use(path):
    global _sock
    _sock = path


class Conn(http.client.HTTPConnection):
    def __init__(self, timeout=600):
        super().__init__("bulkhead", timeout=timeout)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(_sock)


def call(method, path, body=None):
    """(status, the answer's JSON) of one request."""
    c = Conn()
    c.request(method, path, body=json.dumps(body) if body is not None else None)
    r = c.getresponse()
    out = json.loads(r.read() or b"null")
    c.close()
    return r.status, out
