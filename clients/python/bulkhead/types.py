# SPDX-License-Identifier: Apache-2.0
"""The API's objects as dataclasses (field names as in docs/API.md), each made from the JSON
the daemon answers; `raw` keeps that JSON whole."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class SessionInfo:
    """A session as the daemon describes it."""

    id: str
    state: str
    pooled: bool
    pool_miss: Optional[str]
    image: Optional[str]
    work: str
    work_ro: bool
    work_owned: bool
    broker: Optional[str]
    audit_log: Optional[str]
    mem_mib: int
    cpus: int
    timeout_s: float
    created_at: float
    ready_ms: float
    exit_code: Optional[int]
    end_reason: Optional[str]
    end_message: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "SessionInfo":
        return cls(
            id=str(o["id"]),
            state=str(o.get("state", "")),
            pooled=bool(o.get("pooled", False)),
            pool_miss=_opt_str(o.get("pool_miss")),
            image=_opt_str(o.get("image")),
            work=str(o.get("work", "")),
            work_ro=bool(o.get("work_ro", False)),
            work_owned=bool(o.get("work_owned", False)),
            broker=_opt_str(o.get("broker")),
            audit_log=_opt_str(o.get("audit_log")),
            mem_mib=int(o.get("mem_mib", 0)),
            cpus=int(o.get("cpus", 0)),
            timeout_s=float(o.get("timeout_s", 0)),
            created_at=float(o.get("created_at", 0)),
            ready_ms=float(o.get("ready_ms", 0)),
            exit_code=_opt_int(o.get("exit_code")),
            end_reason=_opt_str(o.get("end_reason")),
            end_message=_opt_str(o.get("end_message")),
            raw=o,
        )


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended: its exit code (None when a signal ended it), the signal (0: none);
    status is the shell's number for either (code, or 128 + signal)."""

    code: Optional[int]
    signal: int
    status: int


@dataclass(frozen=True)
class Result:
    """A finished command: exit_code is the shell's status (128 + N for signal N)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    signal: int = 0
    exec_id: str = ""


@dataclass(frozen=True)
class Event:
    """One line of /v1/events; fields beyond these (end_reason, exit_code, pooled, an
    approval's id, method and url) are in raw."""

    seq: int
    time: float
    type: str
    session: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "Event":
        return cls(
            seq=int(o.get("seq", 0)),
            time=float(o.get("time", 0)),
            type=str(o.get("type", "")),
            session=_opt_str(o.get("session")),
            raw=o,
        )


@dataclass(frozen=True)
class Approval:
    """A request held for a human's decision (as `bulkhead approvals list --json`)."""

    id: str
    session: Optional[str]
    method: Optional[str]
    url: Optional[str]
    rule: Optional[str]
    secret: Optional[str]
    sha256: Optional[str]
    expires: int
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "Approval":
        return cls(
            id=str(o["id"]),
            session=_opt_str(o.get("session")),
            method=_opt_str(o.get("method")),
            url=_opt_str(o.get("url")),
            rule=_opt_str(o.get("rule")),
            secret=_opt_str(o.get("secret")),
            sha256=_opt_str(o.get("sha256")),
            expires=int(o.get("expires", 0)),
            raw=o,
        )


@dataclass(frozen=True)
class PoolShape:
    """One pool: guests of one shape (`--pool N[:IMAGE][:mem=MIB][:cpus=N]`)."""
    size: int
    ready: int
    booting: int
    image: Optional[str]
    mem_mib: int
    cpus: int

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "PoolShape":
        return cls(
            size=int(o.get("size", 0)),
            ready=int(o.get("ready", 0)),
            booting=int(o.get("booting", 0)),
            image=_opt_str(o.get("image")),
            mem_mib=int(o.get("mem_mib", 0)),
            cpus=int(o.get("cpus", 0)),
        )


@dataclass(frozen=True)
class PoolState:
    """Every pool together, and each pool."""
    size: int
    ready: int
    booting: int
    image: Optional[str]
    pools: List[PoolShape]

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "PoolState":
        pools = o.get("pools")
        return cls(
            size=int(o.get("size", 0)),
            ready=int(o.get("ready", 0)),
            booting=int(o.get("booting", 0)),
            image=_opt_str(o.get("image")),
            pools=[PoolShape.from_json(p) for p in pools if isinstance(p, dict)]
            if isinstance(pools, list) else [],
        )


@dataclass(frozen=True)
class Health:
    ok: bool
    version: str
    sessions: int
    pool: PoolState

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "Health":
        pool = o.get("pool")
        return cls(
            ok=bool(o.get("ok", False)),
            version=str(o.get("version", "")),
            sessions=int(o.get("sessions", 0)),
            pool=PoolState.from_json(pool if isinstance(pool, dict) else {}),
        )


def approvals_from_json(o: Any) -> List[Approval]:
    items = o.get("approvals", []) if isinstance(o, dict) else []
    return [Approval.from_json(a) for a in items]
