# SPDX-License-Identifier: Apache-2.0
"""Python client of `bulkhead serve` (docs/API.md): sessions in fresh microVMs, commands with
streamed output, files, events and approvals, over the daemon's Unix socket. Standard library
only.

    from bulkhead import Bulkhead
    with Bulkhead().session(work=".") as s:
        print(s.run("python3 x.py").stdout.decode())
"""
from ._http import BulkheadError, UnixHTTPConnection, default_socket
from .client import Bulkhead
from .session import Command, Exec, Session
from .types import (Approval, Event, ExitStatus, Health, PoolShape, PoolState, Result,
                    SessionInfo)

__all__ = [
    "Approval", "Bulkhead", "BulkheadError", "Command", "Event", "Exec", "ExitStatus", "Health",
    "PoolShape", "PoolState", "Result", "Session", "SessionInfo", "UnixHTTPConnection",
    "default_socket",
]
__version__ = "0.1.0"
