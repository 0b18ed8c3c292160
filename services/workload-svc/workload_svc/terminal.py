"""The UI's pod terminal. A line at a time (`qry.workload.exec`): the line runs in the pod's
container through the `pods/exec` subresource and the answer is its output and exit code. Or a
real terminal (`qry.workload.tty`, shared.contracts.terminal): `sh` with `tty=true` and stdin,
held by the replica that opened it, its keystrokes and resizes coming in on the session's bus
subject and its output going out on another until the shell ends, the gateway closes it or
nothing is typed for `IDLE_SECONDS`. The gateway authorizes (operators only) and audits the
session; what is typed or shown is never logged."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Any

import orjson

from shared.bus import Bus
from shared.contracts.subjects import query_subject
from shared.contracts.terminal import MAX_COLS, MAX_INPUT, MAX_ROWS, MIN_SIZE, SESSION, tty_subject
from shared.logging import get_logger
from shared.queries import BadRequest
from shared.service import Area
from workload_svc.adapters.pod_exec import run_line
from workload_svc.adapters.pod_tty import PodTty
from workload_svc.spaces import SpaceClusters

log = get_logger("workload_svc.terminal")
EXEC = query_subject("workload", "exec")
TTY = query_subject("workload", "tty")
IDLE_SECONDS = 30 * 60.0  # a terminal nobody typed in for this long is closed
MAX_SESSIONS = 64  # open terminals one replica holds
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
MAX_LINE = 4096


def _name(request: dict[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = request.get(key)
    if optional and value in (None, ""):
        return None
    if not isinstance(value, str) or not NAME.match(value):
        raise BadRequest(f"{key} is missing or not a valid name", f"pass {key} as a DNS name")
    return value


def _size(request: dict[str, Any], key: str, most: int) -> int:
    value = request.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not MIN_SIZE <= value <= most:
        raise BadRequest(
            f"{key} must be a whole number from {MIN_SIZE} to {most}",
            f"send the terminal's {key} as the browser measures it",
        )
    return value


class Terminal:
    def __init__(self, clusters: SpaceClusters, bus: Bus | None = None) -> None:
        self.clusters = clusters
        self.bus = bus
        self.sessions: dict[str, PodTty] = {}
        self.relays: set[asyncio.Task[None]] = set()

    async def exec(self, request: dict[str, Any]) -> dict[str, Any]:
        cluster = _name(request, "cluster") or ""
        namespace = _name(request, "namespace") or ""
        pod = _name(request, "pod") or ""
        container = _name(request, "container", optional=True)
        line = request.get("line")
        if not isinstance(line, str) or not line.strip() or len(line) > MAX_LINE:
            raise BadRequest(
                f"line is empty or longer than {MAX_LINE} characters", "send one command line"
            )
        kube = await self.clusters.kube(cluster)
        answer = await run_line(kube, namespace, pod, container, line)
        return {"output": answer.output, "exit_code": answer.exit_code}

    async def tty(self, request: dict[str, Any]) -> dict[str, Any]:
        """Open a terminal for the session the gateway named; it runs until it ends."""
        session = request.get("session")
        if not isinstance(session, str) or not SESSION.match(session):
            raise BadRequest("session is missing or not 32 hex digits", "send uuid4().hex")
        cluster = _name(request, "cluster") or ""
        namespace = _name(request, "namespace") or ""
        pod = _name(request, "pod") or ""
        container = _name(request, "container", optional=True)
        rows, cols = _size(request, "rows", MAX_ROWS), _size(request, "cols", MAX_COLS)
        if self.bus is None or self.bus.nc is None:
            raise BadRequest("this replica has no bus connection for a terminal", "retry")
        if session in self.sessions:
            return {"session": session, "open": True}  # asked again: the same terminal
        if len(self.sessions) >= MAX_SESSIONS:
            raise BadRequest(
                f"this replica holds {MAX_SESSIONS} open terminals", "close one and retry"
            )
        kube: Any = await self.clusters.kube(cluster)
        tty = await kube._run(
            f"open a terminal in pod {namespace}/{pod}",
            lambda: PodTty.open(kube, namespace, pod, container, rows, cols),
        )
        self.sessions[session] = tty
        relay = asyncio.get_running_loop().create_task(self._relay(session, tty))
        self.relays.add(relay)
        relay.add_done_callback(self.relays.discard)
        return {"session": session, "open": True}

    async def _relay(self, session: str, tty: PodTty) -> None:
        """Keystrokes in, output out, until the shell ends, the gateway closes or idles out."""
        assert self.bus is not None and self.bus.nc is not None
        nc = self.bus.nc
        out = tty_subject(session, "out")
        typed = time.monotonic()
        closing: str | None = None

        async def keys(msg: Any) -> None:
            nonlocal typed, closing
            try:
                frame = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                return
            typed = time.monotonic()
            if frame.get("close"):
                closing = "closed by the client"
            elif isinstance(frame.get("data"), str) and len(frame["data"]) <= MAX_INPUT:
                await asyncio.to_thread(tty.write, frame["data"])
            elif isinstance(frame.get("resize"), dict):
                size = frame["resize"]
                with contextlib.suppress(BadRequest):
                    rows, cols = _size(size, "rows", MAX_ROWS), _size(size, "cols", MAX_COLS)
                    await asyncio.to_thread(tty.resize, rows, cols)

        subscription = await nc.subscribe(tty_subject(session, "in"), cb=keys)
        reason = "the shell ended"
        try:
            while closing is None:
                text, still_open = await asyncio.to_thread(tty.read)
                if text:
                    await nc.publish(out, orjson.dumps({"output": text}))
                if not still_open:
                    break
                if time.monotonic() - typed > IDLE_SECONDS:
                    closing = f"nothing was typed for {IDLE_SECONDS / 60:g} minutes"
            reason = closing or reason
        except Exception as exc:  # the stream broke: say so, then end the session
            reason = f"the terminal stream failed: {exc}"[:300]
            log.info("terminal stream failed", error=str(exc)[:200])
        finally:
            self.sessions.pop(session, None)
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
            code = tty.exit_code
            with contextlib.suppress(Exception):
                await asyncio.to_thread(tty.close)
            with contextlib.suppress(Exception):
                await nc.publish(
                    out, orjson.dumps({"closed": True, "exit_code": code, "reason": reason})
                )

    def area(self) -> Area:
        return Area(read_routes={EXEC: self.exec, TTY: self.tty})
