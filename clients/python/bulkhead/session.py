# SPDX-License-Identifier: Apache-2.0
"""A session (a context manager that deletes it on exit) and a running command in it (an
iterator of its output as it comes, with stdin, signals and window size on the side)."""
from __future__ import annotations

import base64
import binascii
import http.client
import json
from types import TracebackType
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, Union

from ._http import Body, BulkheadError, Transport, UnixHTTPConnection, quote_id, quote_path, with_query
from .types import ExitStatus, Result, SessionInfo

Command = Union[str, Sequence[str]]


def command_argv(cmd: Command) -> List[str]:
    """A string runs through the guest's shell; a sequence is the argv itself."""
    if isinstance(cmd, str):
        return ["/bin/sh", "-c", cmd]
    argv = list(cmd)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("cmd: a string, or a non-empty sequence of strings")
    return argv


def _answer_int(raw: bytes, key: str) -> int:
    """The integer `key` of a JSON answer ({"size": N}, {"entries": N})."""
    try:
        v = json.loads(raw).get(key)
    except (ValueError, AttributeError):
        v = None
    if not isinstance(v, int):
        raise BulkheadError(0, f"the answer has no integer {key!r}: {raw[:200]!r}")
    return v


class Exec:
    """A command running in a session. Iterating yields ("stdout" | "stderr", bytes) chunks in
    the order the command wrote them; when it ends, `exit` holds how. An error frame from the
    daemon raises BulkheadError(500, ...). Closing it (or leaving its `with`) before the end
    disconnects, which ends the command."""

    def __init__(
        self, transport: Transport, conn: UnixHTTPConnection, resp: http.client.HTTPResponse
    ) -> None:
        self._t = transport
        self._conn = conn
        self._resp = resp
        self._done = False
        self.exit: Optional[ExitStatus] = None
        first = self._frame()
        if first is None or not isinstance(first.get("exec"), str):
            self.close()
            raise BulkheadError(0, f"exec: the stream did not start with its id: {first!r}")
        self.id: str = first["exec"]

    def _frame(self) -> Optional[Dict[str, Any]]:
        while True:
            try:
                line = self._resp.readline()
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise BulkheadError(0, f"exec: the stream broke: {e}") from e
            if not line:
                return None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                self.close()
                raise BulkheadError(0, f"exec: a frame is not JSON: {line[:200]!r}") from e
            if not isinstance(obj, dict):
                self.close()
                raise BulkheadError(0, f"exec: a frame is not an object: {line[:200]!r}")
            return obj

    def __iter__(self) -> Iterator[Tuple[str, bytes]]:
        return self

    def __next__(self) -> Tuple[str, bytes]:
        if self._done:
            raise StopIteration
        f = self._frame()
        if f is None:
            self.close()
            raise BulkheadError(0, "exec: the stream ended before the command's exit")
        for name in ("stdout", "stderr"):
            if name in f:
                try:
                    return name, base64.b64decode(f[name], validate=True)
                except (binascii.Error, TypeError) as e:
                    self.close()
                    raise BulkheadError(0, f"exec: {name} frame is not base64") from e
        if isinstance(f.get("exit"), dict):
            x = f["exit"]
            self.exit = ExitStatus(
                code=None if x.get("code") is None else int(x["code"]), signal=int(x.get("signal", 0)),
                status=int(x.get("status", 0)))
            self._drain()
            raise StopIteration
        self.close()
        if "error" in f:
            raise BulkheadError(500, str(f["error"]))
        raise BulkheadError(0, f"exec: unknown frame {f!r}")

    def _drain(self) -> None:
        """Reads to the stream's end after the last frame, so the daemon ends its answer
        cleanly (closing at once would cut it short); then closes."""
        try:
            rest = self._resp.read()
        except (OSError, http.client.HTTPException):
            rest = b""  # the answer's end is all that was left to read
        self.close()
        if rest.strip():
            raise BulkheadError(0, f"exec: frames after the exit: {rest[:200]!r}")

    def wait(self) -> Result:
        """Reads the rest of the output and the exit (what was iterated already is not in it)."""
        out: List[bytes] = []
        err: List[bytes] = []
        for name, data in self:
            (out if name == "stdout" else err).append(data)
        if self.exit is None:
            raise BulkheadError(0, "exec: closed before its exit")
        return Result(self.exit.status, b"".join(out), b"".join(err), self.exit.signal, self.id)

    def send_stdin(self, data: Union[bytes, str], eof: bool = False) -> None:
        """Writes to the command's stdin (an exec started with stdin_open=True)."""
        body = data.encode() if isinstance(data, str) else bytes(data)
        url = with_query(f"/v1/execs/{quote_id(self.id)}/stdin", {"eof": 1} if eof else None)
        self._t.call("POST", url, body, "application/octet-stream")

    def close_stdin(self) -> None:
        self.send_stdin(b"", eof=True)

    def signal(self, sig: Union[str, int]) -> None:
        """Sends a signal by name ("TERM") or number."""
        self._t.json("POST", f"/v1/execs/{quote_id(self.id)}/signal", {"signal": sig})

    def resize(self, rows: int, cols: int) -> None:
        """Sets the pseudo-terminal's size (an exec started with tty=True)."""
        self._t.json("POST", f"/v1/execs/{quote_id(self.id)}/resize", {"rows": rows, "cols": cols})

    def close(self) -> None:
        self._done = True
        self._resp.close()
        self._conn.close()

    def __enter__(self) -> "Exec":
        return self

    def __exit__(
        self, t: Optional[Type[BaseException]], v: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()


class Session:
    """A session of the daemon. `with` deletes it on leaving."""

    def __init__(self, transport: Transport, info: SessionInfo) -> None:
        self._t = transport
        self.info = info

    @property
    def id(self) -> str:
        return self.info.id

    def _url(self, tail: str = "") -> str:
        return f"/v1/sessions/{quote_id(self.id)}{tail}"

    def refresh(self) -> SessionInfo:
        self.info = SessionInfo.from_json(self._t.json("GET", self._url()))
        return self.info

    def pause(self) -> SessionInfo:
        """Saves the session's guest to disk and stops its VM (state "paused"); execs are
        refused until resume(). Its work directory stays where it is."""
        self.info = SessionInfo.from_json(self._t.json("POST", self._url("/pause")))
        return self.info

    def resume(self) -> SessionInfo:
        """Brings a paused session back in a new VM, its processes and memory as they were."""
        self.info = SessionInfo.from_json(self._t.json("POST", self._url("/resume")))
        return self.info

    def delete(self) -> SessionInfo:
        """Stops the session if it runs and removes it; returns its last state."""
        self.info = SessionInfo.from_json(self._t.json("DELETE", self._url()))
        return self.info

    def __enter__(self) -> "Session":
        return self

    def __exit__(
        self, t: Optional[Type[BaseException]], v: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        try:
            self.delete()
        except BulkheadError as e:
            if e.status != 404:  # deleted inside the block already
                raise

    def stream(
        self,
        cmd: Command,
        stdin: Union[bytes, str, None] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        tty: bool = False,
        rows: Optional[int] = None,
        cols: Optional[int] = None,
        stdin_open: bool = False,
    ) -> Exec:
        """Starts a command and returns it once it runs (its id known)."""
        req: Dict[str, Any] = {"cmd": command_argv(cmd)}
        if env is not None:
            req["env"] = dict(env)
        if cwd is not None:
            req["cwd"] = cwd
        if tty:
            req["tty"] = True
        if rows is not None:
            req["rows"] = rows
        if cols is not None:
            req["cols"] = cols
        if isinstance(stdin, str):
            req["stdin"] = stdin
        elif stdin is not None:
            req["stdin_b64"] = base64.b64encode(stdin).decode()
        if stdin_open:
            req["stdin_open"] = True
        conn, resp = self._t.open(
            "POST", self._url("/exec"), json.dumps(req).encode(), "application/json")
        return Exec(self._t, conn, resp)

    def run(
        self,
        cmd: Command,
        stdin: Union[bytes, str, None] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        tty: bool = False,
    ) -> Result:
        """Runs a command to its end: its exit code and every byte it wrote."""
        with self.stream(cmd, stdin=stdin, env=env, cwd=cwd, tty=tty) as ex:
            return ex.wait()

    def put_file(self, path: str, data: Union[bytes, str, Body], mode: Optional[int] = None) -> int:
        """Writes a file under the work directory (its directory must exist); returns its size."""
        body = data.encode() if isinstance(data, str) else data
        url = with_query(self._url("/files/" + quote_path(path)),
                         {"mode": f"{mode:04o}"} if mode is not None else None)
        _, raw = self._t.call("PUT", url, body, "application/octet-stream")
        return _answer_int(raw, "size")

    def get_file(self, path: str) -> bytes:
        return self._t.call("GET", self._url("/files/" + quote_path(path)))[1]

    def put_archive(self, dir: str, tar: Union[bytes, Body]) -> int:
        """Unpacks a tar stream under dir ("" is the work directory); returns its entry count."""
        _, raw = self._t.call("PUT", self._url("/archive/" + quote_path(dir)), tar, "application/x-tar")
        return _answer_int(raw, "entries")

    def get_archive(self, dir: str = "") -> bytes:
        """dir ("" is the work directory) as a tar stream."""
        return self._t.call("GET", self._url("/archive/" + quote_path(dir)))[1]
