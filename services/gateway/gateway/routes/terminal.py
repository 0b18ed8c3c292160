"""A terminal for a pod, over the gateway's WebSocket:
`/api/v1/clusters/{name}/pods/{namespace}/{pod}/terminal/ws[?container=]`.

Operators only. The socket authenticates like the job-log socket (`Authorization`, or for a
browser the subprotocols `hyperpilot.bearer` and the token); a viewer's socket is accepted only
to say why it is refused (an `error` frame, then close code 4403). Each text frame is one
command line; workload-svc runs it in the container through the `pods/exec` subresource and the
answer frame carries its output and exit code. Every session is an audited event when it opens
and when it closes (who, the pod, the container, the lines run and how long it lasted); what was
typed and what came back are never stored."""

from __future__ import annotations

import contextlib
import time
from typing import Annotated

from fastapi import APIRouter, Path, Query, WebSocket, WebSocketDisconnect

from gateway.audit import record_terminal
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.logs import _principal
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN

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
        pass
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
