# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 over the daemon's Unix socket (http.client with an AF_UNIX connect), the default
socket path, and the mapping of error answers to BulkheadError."""
from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from typing import IO, Any, Dict, Mapping, Optional, Tuple, Union

Body = Union[bytes, IO[bytes], None]


class BulkheadError(Exception):
    """The daemon answered an error ({"error": ...} with an HTTP status), or could not be
    reached (status 0), or an exec ended with an error frame instead of an exit (status 500:
    the daemon failed to run it to its end)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


def default_socket() -> str:
    """Where `bulkhead serve` listens by default: $BULKHEAD_SOCKET, else serve.sock in the run
    directory base the CLI uses ($BULKHEAD_RUNDIR, /run/bulkhead as root, $XDG_RUNTIME_DIR/
    bulkhead, /tmp/bulkhead-UID)."""
    env = os.environ.get("BULKHEAD_SOCKET")
    if env:
        return env
    base = os.environ.get("BULKHEAD_RUNDIR")
    if not base:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if os.geteuid() == 0:
            base = "/run/bulkhead"
        elif xdg:
            base = os.path.join(xdg, "bulkhead")
        else:
            base = f"/tmp/bulkhead-{os.geteuid()}"
    return os.path.join(base, "serve.sock")


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose transport is a Unix stream socket."""

    def __init__(self, path: str, timeout: Optional[float] = None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


def quote_path(p: str) -> str:
    """A path under the work directory as URL path segments (slashes kept)."""
    return urllib.parse.quote(p, safe="/")


def quote_id(i: str) -> str:
    """An id as one URL path segment."""
    return urllib.parse.quote(i, safe="")


def with_query(path: str, query: Optional[Mapping[str, Any]]) -> str:
    if not query:
        return path
    q = {k: str(v) for k, v in query.items() if v is not None}
    return path + ("?" + urllib.parse.urlencode(q) if q else "")


def _body_length(body: Body) -> Optional[int]:
    if body is None:
        return 0
    if isinstance(body, (bytes, bytearray, memoryview)):
        return len(body)
    try:
        st = os.fstat(body.fileno())
        return st.st_size - body.tell()
    except (OSError, AttributeError, ValueError):
        return None  # not a plain file: sent chunked


class Transport:
    """Opens one connection per request (so a client may be shared between threads), sends it,
    and turns error answers into BulkheadError."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        self.path = path
        self.timeout = timeout

    def open(
        self,
        method: str,
        url: str,
        body: Body = None,
        content_type: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Tuple[UnixHTTPConnection, http.client.HTTPResponse]:
        """Sends a request and returns the connection and its response with the body unread;
        raises BulkheadError (and closes both) on an error status."""
        conn = UnixHTTPConnection(self.path, timeout if timeout is not None else self.timeout)
        headers: Dict[str, str] = {}
        if content_type:
            headers["Content-Type"] = content_type
        length = _body_length(body)
        try:
            if length is None:
                conn.request(method, url, body=body, headers=headers, encode_chunked=True)
            else:
                headers["Content-Length"] = str(length)
                conn.request(method, url, body=body, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise BulkheadError(0, f"bulkhead serve at {self.path}: {e}") from e
        if resp.status >= 400:
            data = resp.read()
            conn.close()
            raise BulkheadError(resp.status, error_message(data, resp.reason))
        return conn, resp

    def call(
        self,
        method: str,
        url: str,
        body: Body = None,
        content_type: Optional[str] = None,
    ) -> Tuple[int, bytes]:
        """A whole request: (status, body)."""
        conn, resp = self.open(method, url, body, content_type)
        try:
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise BulkheadError(0, f"bulkhead serve at {self.path}: {e}") from e
        finally:
            conn.close()

    def json(self, method: str, url: str, obj: Optional[Mapping[str, Any]] = None) -> Any:
        """A JSON request and its JSON answer (None for an empty body, as 204 has)."""
        body = None if obj is None else json.dumps(obj).encode()
        _, data = self.call(method, url, body, "application/json" if body is not None else None)
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError as e:
            raise BulkheadError(0, f"{method} {url}: the answer is not JSON: {e}") from e


def error_message(data: bytes, reason: str) -> str:
    """The "error" of an error answer; its raw text (or the HTTP reason) if it has none."""
    try:
        obj = json.loads(data)
        if isinstance(obj, dict) and isinstance(obj.get("error"), str):
            return str(obj["error"])
    except ValueError:
        pass
    text = data.decode("utf-8", "replace").strip()
    return text or reason
