"""The log of every mutating call, so tests can prove a side effect happened exactly once.

Each entry says whether the call took effect (`applied`): a call refused by validation or by a
fault injected before it did not; a call answered with an error injected after it did.
"""

from __future__ import annotations

import base64
import itertools
import threading
from datetime import date, datetime
from typing import Any


def json_safe(value: Any) -> Any:
    """`value` with datetimes as ISO strings and bytes as base64, ready for JSON."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


class CallLog:
    """Mutating calls in arrival order, each with its parameters and outcome."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        self._seq = itertools.count(1)

    def record(
        self,
        *,
        service: str,
        operation: str,
        params: dict[str, Any],
        status: int,
        error: str | None,
        request_id: str,
        simulated: bool,
        applied: bool,
        at: datetime,
    ) -> None:
        entry = {
            "seq": next(self._seq),
            "time": at.isoformat(),
            "service": service,
            "operation": operation,
            "params": json_safe(params),
            "status": status,
            "error": error,
            "request_id": request_id,
            "simulated": simulated,
            "applied": applied,
        }
        with self._lock:
            self._entries.append(entry)

    def query(
        self, service: str | None = None, operation: str | None = None
    ) -> list[dict[str, Any]]:
        """Entries of `service` and `operation` (either None = any), oldest first."""
        with self._lock:
            return [
                dict(entry)
                for entry in self._entries
                if (service is None or entry["service"] == service)
                and (operation is None or entry["operation"] == operation)
            ]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
