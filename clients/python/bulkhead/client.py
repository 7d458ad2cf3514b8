# SPDX-License-Identifier: Apache-2.0
"""The client of a `bulkhead serve` daemon: sessions, events, approvals, health, pool."""
from __future__ import annotations

import http.client
import json
from typing import Any, Dict, Generator, List, Mapping, Optional, Union

from ._http import BulkheadError, Transport, default_socket, quote_id, with_query
from .session import Session
from .types import Approval, Event, Health, PoolState, SessionInfo, approvals_from_json


class Bulkhead:
    """Talks to the daemon on `socket` (default: see default_socket()). `timeout` bounds each
    socket operation in seconds (None: wait as long as it takes, as a session's boot or a
    long command may)."""

    def __init__(self, socket: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.socket = socket or default_socket()
        self._t = Transport(self.socket, timeout)

    def session(
        self,
        image: Optional[str] = None,
        work: Optional[str] = None,
        scope: Union[str, Mapping[str, Any], None] = None,
        env: Optional[Mapping[str, str]] = None,
        timeout_s: Optional[float] = None,
        mem_mib: Optional[int] = None,
        cpus: Optional[int] = None,
        pool: bool = True,
        work_ro: Optional[bool] = None,
        vault: Optional[str] = None,
        ca_file: Optional[str] = None,
        broker: Optional[str] = None,
        mem_limit_mib: Optional[int] = None,
        audit: Optional[str] = None,
    ) -> Session:
        """Creates a session and returns it once its guest is ready (from the pool unless
        pool=False or what it asks cannot be bound to a booted guest)."""
        req: Dict[str, Any] = {}
        for k, v in (("image", image), ("work", work), ("work_ro", work_ro), ("vault", vault),
                     ("ca_file", ca_file), ("broker", broker), ("timeout_s", timeout_s),
                     ("mem_mib", mem_mib), ("cpus", cpus), ("mem_limit_mib", mem_limit_mib),
                     ("audit", audit)):
            if v is not None:
                req[k] = v
        if scope is not None:
            req["scope"] = scope if isinstance(scope, str) else dict(scope)
        if env is not None:
            req["env"] = dict(env)
        if not pool:
            req["pool"] = False
        return Session(self._t, SessionInfo.from_json(self._t.json("POST", "/v1/sessions", req)))

    def get_session(self, id: str) -> Session:
        return Session(self._t, SessionInfo.from_json(
            self._t.json("GET", f"/v1/sessions/{quote_id(id)}")))

    def sessions(self) -> List[Session]:
        """Every session the daemon knows (ended ones too, until deleted)."""
        o = self._t.json("GET", "/v1/sessions")
        return [Session(self._t, SessionInfo.from_json(s)) for s in o.get("sessions", [])]

    def events(self, since: Optional[int] = None) -> Generator[Event, None, None]:
        """Lifecycle events as they happen, after the kept ones newer than `since`. The
        generator holds a connection open until it is closed (or garbage-collected)."""
        conn, resp = self._t.open("GET", with_query("/v1/events", {"since": since}))
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    raise BulkheadError(0, f"events: the stream broke: {e}") from e
                if not line:
                    return
                if line.strip():
                    try:
                        yield Event.from_json(json.loads(line))
                    except (ValueError, AttributeError) as e:
                        raise BulkheadError(0, f"events: a bad line: {line[:200]!r}") from e
        finally:
            resp.close()
            conn.close()

    def approvals(self) -> List[Approval]:
        return approvals_from_json(self._t.json("GET", "/v1/approvals"))

    def approve(self, id: str, reason: Optional[str] = None) -> None:
        self._t.json("POST", f"/v1/approvals/{quote_id(id)}/approve",
                     {} if reason is None else {"reason": reason})

    def deny(self, id: str, reason: Optional[str] = None) -> None:
        self._t.json("POST", f"/v1/approvals/{quote_id(id)}/deny",
                     {} if reason is None else {"reason": reason})

    def health(self) -> Health:
        return Health.from_json(self._t.json("GET", "/v1/health"))

    def pool(self) -> PoolState:
        return PoolState.from_json(self._t.json("GET", "/v1/pool"))
