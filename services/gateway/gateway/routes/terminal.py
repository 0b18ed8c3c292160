"""A terminal for a pod, over the gateway's WebSocket:
`/api/v1/clusters/{name}/pods/{namespace}/{pod}/terminal/ws[?container=]`.

Operators only. The socket authenticates like the job-log socket (`Authorization`, or for a
browser the subprotocols `hyperpilot.bearer` and the token); a viewer's socket is accepted only
to say why it is refused (an `error` frame, then close code 4403). Each text frame is one
command line; workload-svc runs it in the container through the `pods/exec` subresource and the
answer frame carries its output and exit code.

With `tty=true` (and the terminal's `rows` and `cols`) it is a real terminal instead: `sh` runs
with a terminal in the container (`pods/exec` with `tty=true`, held by a workload-svc replica,
shared.contracts.terminal). Text frames in are JSON: `{"data": "<keystrokes>"}` or
`{"resize": {"rows": n, "cols": n}}`; frames out are `{"ready": true, "tty": true}`, then
`{"output": "<what the terminal shows>"}`, and `{"closed": true, "exit_code", "reason"}` when
the shell ends (then close code 1000).

Every session is an audited event when it opens and when it closes (who, the pod, the
container, the lines run and how long it lasted); what was typed and what came back are never
stored."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Query, WebSocket, WebSocketDisconnect

from gateway.audit import record_terminal
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.logs import _principal
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.terminal import MAX_COLS, MAX_INPUT, MAX_ROWS, MIN_SIZE, tty_subject

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/clusters", tags=["diagnostics"])

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
KubeName = Annotated[str, Path(min_length=1, max_length=253, pattern=r"^[a-z0-9][-a-z0-9.]*$")]
MAX_LINE = 4096


@router.websocket("/{name}/pods/{namespace}/{pod}/terminal/ws")
async def pod_terminal(
    websocket: WebSocket,
    name: ClusterNamePath,
    namespace: KubeName,
    pod: KubeName,
    container: Annotated[
        str | None, Query(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    ] = None,
    tty: Annotated[bool, Query(description="A real terminal (sh with a TTY)")] = False,
    rows: Annotated[int, Query(ge=MIN_SIZE, le=MAX_ROWS)] = 24,
    cols: Annotated[int, Query(ge=MIN_SIZE, le=MAX_COLS)] = 80,
) -> None:
    try:
        principal, subprotocol = await _principal(websocket)
    except ApiError as exc:
        await websocket.close(code=1008, reason=exc.message[:120])
        return
    await websocket.accept(subprotocol=subprotocol)
    if not principal.allows("operator"):
        await websocket.send_json(
            {
                "error": {
                    "code": "forbidden",
                    "message": f"a pod terminal needs the operator role; token {principal.name!r}"
                    f" has {principal.role}",
                    "hint": "use a token with the operator role",
                }
            }
        )
        await websocket.close(code=4403)
        return
    pool = websocket.app.state.pool
    bus = websocket.app.state.bus
    where = {"cluster": name, "namespace": namespace, "pod": pod, "container": container}
    await record_terminal(
        pool,
        principal.name,
        "opened",
        cluster=name,
        namespace=namespace,
        pod=pod,
        container=container,
    )
    started = time.monotonic()
    lines = 0
    try:
        if tty:
            lines = await _terminal(websocket, {**where, "rows": rows, "cols": cols})
        else:
            lines = await _line_mode(websocket, bus, where, pod, namespace)
    finally:
        with contextlib.suppress(Exception):
            await record_terminal(
                pool,
                principal.name,
                "closed",
                cluster=name,
                namespace=namespace,
                pod=pod,
                container=container,
                lines=lines,
                seconds=round(time.monotonic() - started, 1),
            )


async def _line_mode(
    websocket: WebSocket, bus: Any, where: dict[str, Any], pod: str, namespace: str
) -> int:
    """The line-by-line session (no `tty`): each line run in the pod, its answer sent back;
    the lines run, for the audit, when the browser goes."""
    lines = 0
    try:
        await websocket.send_json({"ready": True, "pod": pod, "namespace": namespace})
        while True:
            line = (await websocket.receive_text()).strip()
            if not line:
                continue
            if len(line) > MAX_LINE:
                await websocket.send_json(
                    {"error": {"code": "validation_error", "message": "the line is too long"}}
                )
                continue
            lines += 1
            try:
                answer = await query(bus, "workload", "exec", {**where, "line": line}, 40.0)
            except ApiError as exc:
                await websocket.send_json(
                    {"error": {"code": exc.code, "message": exc.message, "hint": exc.hint}}
                )
                continue
            await websocket.send_json(answer)
    except WebSocketDisconnect:
        return lines


async def _terminal(websocket: WebSocket, where: dict[str, Any]) -> int:
    """Relay one TTY session between the browser and the workload-svc replica holding it; the
    lines entered (Enter presses), for the audit."""
    bus = websocket.app.state.bus
    session = uuid.uuid4().hex
    if bus.nc is None:
        await websocket.send_json(
            {"error": {"code": "bus_unavailable", "message": "NATS is unreachable"}}
        )
        await websocket.close(code=1011)
        return 0
    output = await bus.nc.subscribe(tty_subject(session, "out"))
    lines = 0
    try:
        try:
            await query(bus, "workload", "tty", {**where, "session": session}, 40.0)
        except ApiError as exc:
            await websocket.send_json(
                {"error": {"code": exc.code, "message": exc.message, "hint": exc.hint}}
            )
            await websocket.close(code=1011)
            return 0
        await websocket.send_json({"ready": True, "tty": True, "pod": where["pod"]})

        async def shown() -> None:
            async for msg in output.messages:
                frame = orjson.loads(msg.data)
                await websocket.send_json(frame)
                if frame.get("closed"):
                    await websocket.close(code=1000)
                    return

        relay = asyncio.create_task(shown())
        try:
            while not relay.done():
                received = asyncio.create_task(websocket.receive_text())
                await asyncio.wait({received, relay}, return_when=asyncio.FIRST_COMPLETED)
                if relay.done():  # the shell ended: the socket is closed
                    received.cancel()
                    break
                text = received.result()
                try:
                    frame = orjson.loads(text)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(frame.get("data"), str) and len(frame["data"]) <= MAX_INPUT:
                    lines += frame["data"].count("\r")
                    keys = {"data": frame["data"]}
                elif isinstance(frame.get("resize"), dict):
                    keys = {"resize": frame["resize"]}
                else:
                    continue
                await bus.nc.publish(tty_subject(session, "in"), orjson.dumps(keys))
        except WebSocketDisconnect:
            pass
        finally:
            relay.cancel()
            with contextlib.suppress(Exception):
                await bus.nc.publish(tty_subject(session, "in"), orjson.dumps({"close": True}))
    finally:
        with contextlib.suppress(Exception):
            await output.unsubscribe()
    return lines
