"""Container logs of simulated pods: what `kubectl logs` reads, with follow, tail and since."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sim.k8s.errors import ApiError, invalid
from sim.k8s.timeutil import parse_iso

MAX_LINES = 20000


@dataclass(frozen=True)
class LogOptions:
    tail: int | None
    since: float | None  # seconds back from now
    limit_bytes: int | None


def _int64(query: dict[str, str], key: str) -> int | None:
    """The query parameter conversion of PodLogOptions (strconv.ParseInt, a 400 when it fails)."""
    raw = query.get(key)
    if raw is None or raw == "":
        return None
    try:
        return int(raw, 10)
    except ValueError:
        raise ApiError(400, f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


def log_options(query: dict[str, str], pod: str) -> LogOptions:
    """Decode and validate pods/log parameters as the API server does: bad syntax is a 400
    (parameter decoding), bad values a 422 (core validation ValidatePodLogOptions)."""
    tail = _int64(query, "tailLines")
    since_seconds = _int64(query, "sinceSeconds")
    limit_bytes = _int64(query, "limitBytes")
    since_time = None
    if query.get("sinceTime"):
        raw = query["sinceTime"]
        try:
            since_time = parse_iso(raw).timestamp()
        except ValueError:
            raise ApiError(
                400,
                f'parsing time "{raw}" as "2006-01-02T15:04:05Z07:00": cannot parse "{raw}" as '
                '"2006"',
            ) from None
    causes = []
    if tail is not None and tail < 0:
        causes.append(("tailLines", f"Invalid value: {tail}: must be greater than or equal to 0"))
    if limit_bytes is not None and limit_bytes < 1:
        causes.append(("limitBytes", f"Invalid value: {limit_bytes}: must be greater than 0"))
    if since_seconds is not None and since_time is not None:
        causes.append(("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif since_seconds is not None and since_seconds < 1:
        causes.append(("sinceSeconds", f"Invalid value: {since_seconds}: must be greater than 0"))
    if causes:
        raise invalid(
            "PodLogOptions",
            "",
            pod,
            [{"reason": "FieldValueInvalid", "field": f, "message": m} for f, m in causes],
        )
    since = float(since_seconds) if since_seconds is not None else None
    if since_time is not None:
        since = max(0.0, time.time() - since_time)
    return LogOptions(tail, since, limit_bytes)


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


@dataclass
class ContainerLog:
    lines: list[tuple[float, str]] = field(default_factory=list)
    previous: list[tuple[float, str]] = field(default_factory=list)
    running: bool = True
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class LogBook:
    """Per-container log lines; lives on the API server's loop (writers call from that loop)."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, str, str], ContainerLog] = {}

    def _get(self, namespace: str, pod: str, container: str) -> ContainerLog:
        key = (namespace, pod, container)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = ContainerLog()
        return log

    def write(self, namespace: str, pod: str, container: str, line: str) -> None:
        log = self._get(namespace, pod, container)
        log.lines.append((time.time(), line))
        if len(log.lines) > MAX_LINES:
            del log.lines[: len(log.lines) - MAX_LINES]
        log.wake()

    def restart(self, namespace: str, pod: str, container: str) -> None:
        log = self._get(namespace, pod, container)
        log.previous, log.lines, log.running = log.lines, [], True
        log.wake()

    def stop(self, namespace: str, pod: str, container: str) -> None:
        log = self._get(namespace, pod, container)
        log.running = False
        log.wake()

    def forget_pod(self, namespace: str, pod: str) -> None:
        for key in [k for k in self.logs if k[0] == namespace and k[1] == pod]:
            self.logs[key].running = False
            self.logs[key].wake()
            del self.logs[key]

    def lines(self, namespace: str, pod: str, container: str) -> list[str]:
        return [text for _, text in self._get(namespace, pod, container).lines]

    @staticmethod
    def _select(
        lines: list[tuple[float, str]], tail: int | None, since: float | None
    ) -> list[tuple[float, str]]:
        if since is not None:
            cutoff = time.time() - since
            lines = [entry for entry in lines if entry[0] >= cutoff]
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        return lines

    @staticmethod
    def _render(entry: tuple[float, str], timestamps: bool) -> bytes:
        text = f"{_stamp(entry[0])} {entry[1]}" if timestamps else entry[1]
        return (text + "\n").encode()

    def read(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail: int | None = None,
        since: float | None = None,
        timestamps: bool = False,
        previous: bool = False,
        limit_bytes: int | None = None,
    ) -> bytes:
        log = self._get(namespace, pod, container)
        chosen = self._select(log.previous if previous else log.lines, tail, since)
        data = b"".join(self._render(e, timestamps) for e in chosen)
        return data[:limit_bytes] if limit_bytes else data

    async def follow(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        tail: int | None = None,
        since: float | None = None,
        timestamps: bool = False,
        disconnected: asyncio.Event | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield what is there, then every new line, until the container stops."""
        log = self._get(namespace, pod, container)
        chosen = self._select(log.lines, tail, since)
        sent = len(log.lines)
        if chosen:
            yield b"".join(self._render(e, timestamps) for e in chosen)
        while True:
            current = self.logs.get((namespace, pod, container))
            if current is not log:
                return
            if len(log.lines) > sent:
                new = log.lines[sent:]
                sent = len(log.lines)
                yield b"".join(self._render(e, timestamps) for e in new)
                continue
            if not log.running:
                return
            if disconnected is not None and disconnected.is_set():
                return
            waiter = log.changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), timeout=1.0)
            if len(log.lines) < sent:  # restarted: a new container instance
                sent = 0
