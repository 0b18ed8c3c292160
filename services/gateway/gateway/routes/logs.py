"""Job logs streamed to a browser over WebSocket: several pods, follow, tail, resume.

`GET /api/v1/clusters/{name}/jobs/{job}/logs/ws?pod=a&pod=b[&tail=N][&follow=false]
[&cursor=a@<uid>:<line>]` upgrades to a WebSocket. The gateway never talks to Kubernetes: for
each pod it asks workload-svc (`qry.workload.logs`, request/reply) for the lines from its cursor,
sends them on, and moves the cursor past them; when a page reports nothing new it waits and asks
again. Every frame names the pod, the pod instance (uid) and the number of its first line, so a
client that reconnects with `cursor=<pod>@<uid>:<next>` continues exactly after the last line it
received: nothing is lost or repeated. A pod recreated under the same name (a training restart)
has a new uid: the client gets a `restarted` frame and the new instance's lines from line 0.

Frames (JSON text): `{"type": "lines", "pod", "uid", "start", "lines": [...], "next"}`,
`{"type": "restarted", "pod", "uid"}`, `{"type": "end", "pod", "next", "reason"}`,
`{"type": "error", "pod", "code", "message", "hint"}`.

Authentication: `Authorization: Bearer <token>`, or for browsers (which cannot set headers on a
WebSocket) the subprotocols `hyperpilot.bearer` and the token. When that token is revoked (or
replaced by a rotation) the WebSocket ends at once: an `error` frame with no pod and the code
`unauthorized`, then close code 1008.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, WebSocket, WebSocketDisconnect

from gateway.auth import Principal, require_role
from gateway.deps import token_verifier
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.workloads import JOB_NAME_PATTERN

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/clusters", tags=["jobs"])

POD = re.compile(r"^[a-z0-9][-a-z0-9.]{0,252}$")
CURSOR = re.compile(r"^(?P<pod>[a-z0-9][-a-z0-9.]*)@(?P<uid>[-a-zA-Z0-9]*):(?P<line>[0-9]+)$")
IDLE_WAIT = 0.25  # seconds between asks when a pod has nothing new
RESTART_GRACE = 15.0  # seconds a failed pod is watched for a new instance before `end`
SUBPROTOCOL = "hyperpilot.bearer"


async def _principal(websocket: WebSocket) -> tuple[Principal, str | None]:
    verifier = token_verifier(websocket.app)
    header = websocket.headers.get("authorization")
    offered = [
        p.strip()
        for p in (websocket.headers.get("sec-websocket-protocol") or "").split(",")
        if p.strip()
    ]
    subprotocol = None
    if header is None and SUBPROTOCOL in offered:
        tokens = [p for p in offered if p != SUBPROTOCOL]
        header = f"Bearer {tokens[0]}" if tokens else None
        subprotocol = SUBPROTOCOL
    principal = await verifier.verify(header)
    require_role(principal, "viewer")
    return principal, subprotocol


class PodStream:
    """One pod's cursor and the loop that moves it."""

    def __init__(self, pod: str, uid: str | None, line: int, tail: int | None) -> None:
        self.pod = pod
        self.uid = uid
        self.line = line
        self.tail = tail


async def _follow(
    websocket: WebSocket,
    send_lock: asyncio.Lock,
    cluster: str,
    job: str,
    stream: PodStream,
    follow: bool,
) -> None:
    bus = websocket.app.state.bus
    stopped_since: float | None = None

    async def send(frame: dict[str, Any]) -> None:
        async with send_lock:
            await websocket.send_json(frame)

    while True:
        request: dict[str, Any] = {
            "cluster": cluster,
            "job": job,
            "pod": stream.pod,
            "from": stream.line,
        }
        if stream.uid:
            request["uid"] = stream.uid
        if stream.tail is not None:
            request["tail"] = stream.tail
        try:
            page = await query(bus, "workload", "logs", request)
        except ApiError as exc:
            if exc.code == "PodNotFound" and follow:
                stopped_since = stopped_since or time.monotonic()
                if time.monotonic() - stopped_since < RESTART_GRACE:
                    await asyncio.sleep(IDLE_WAIT)
                    continue
            await send(
                {
                    "type": "error",
                    "pod": stream.pod,
                    "code": exc.code,
                    "message": exc.message,
                    "hint": exc.hint,
                }
            )
            return
        stream.tail = None
        if page["restarted"] or (stream.uid is None and page["uid"]):
            if page["restarted"]:
                await send({"type": "restarted", "pod": stream.pod, "uid": page["uid"]})
            stream.uid = page["uid"]
        if page["lines"]:
            await send(
                {
                    "type": "lines",
                    "pod": stream.pod,
                    "uid": stream.uid,
                    "start": page["start"],
                    "lines": page["lines"],
                    "next": page["next"],
                }
            )
        stream.line = page["next"]
        if page["more"]:
            continue
        stopped_since = None if page["running"] else stopped_since or time.monotonic()
        # A clean exit is final; a failed pod may come back under the same name (a training
        # job's restart), so it is watched a little longer.
        finished = stopped_since is not None and (
            not follow
            or page.get("phase") == "Succeeded"
            or time.monotonic() - stopped_since > RESTART_GRACE
        )
        if not follow or finished:
            await send(
                {
                    "type": "end",
                    "pod": stream.pod,
                    "uid": stream.uid,
                    "next": stream.line,
                    "reason": "stopped" if not page["running"] else "caught up",
                }
            )
            return
        await asyncio.sleep(IDLE_WAIT)


@router.websocket("/{name}/jobs/{job}/logs/ws")
async def stream_logs(
    websocket: WebSocket,
    name: Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)],
    job: Annotated[str, Path(min_length=1, max_length=40, pattern=JOB_NAME_PATTERN)],
    pod: Annotated[list[str], Query()],
    cursor: Annotated[list[str] | None, Query()] = None,
    tail: Annotated[int | None, Query(ge=0, le=100000)] = None,
    follow: bool = True,
) -> None:
    try:
        principal, subprotocol = await _principal(websocket)
    except ApiError as exc:
        await websocket.close(code=1008, reason=exc.message[:120])
        return
    bad = [p for p in pod if not POD.match(p)]
    positions: dict[str, tuple[str | None, int]] = {}
    for item in cursor or []:
        match = CURSOR.match(item)
        if match is None:
            bad.append(item)
            continue
        positions[match["pod"]] = (match["uid"] or None, int(match["line"]))
    if bad or not pod:
        await websocket.close(code=1008, reason="pod names or cursors are not valid")
        return
    await websocket.accept(subprotocol=subprotocol)
    streams = [
        PodStream(p, *positions.get(p, (None, 0)), tail=None if p in positions else tail)
        for p in dict.fromkeys(pod)
    ]
    send_lock = asyncio.Lock()
    tasks = [
        asyncio.create_task(_follow(websocket, send_lock, name, job, s, follow)) for s in streams
    ]

    async def client_gone() -> None:
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                await websocket.receive_text()

    async def all_streams() -> None:
        await asyncio.gather(*tasks)

    with token_verifier(websocket.app).watch(principal) as revoked:
        watcher = asyncio.create_task(client_gone())
        streaming = asyncio.create_task(all_streams())
        try:
            await asyncio.wait([streaming, watcher, revoked], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in [*tasks, watcher, streaming]:
                task.cancel()
            await asyncio.gather(*tasks, watcher, streaming, return_exceptions=True)
        if revoked.done():
            with contextlib.suppress(Exception):
                await websocket.send_json(
                    {
                        "type": "error",
                        "pod": None,
                        "code": "unauthorized",
                        "message": "the token was revoked",
                        "hint": "ask an admin for a token",
                    }
                )
                await websocket.close(code=1008, reason="the token was revoked")
                return
    with contextlib.suppress(Exception):
        await websocket.close()
