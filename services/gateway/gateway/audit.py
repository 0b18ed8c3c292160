"""The audit log's writes that the gateway makes itself: every event is audited by the database
function that writes it (`write_event`; the event row is its audit row, migration 0010), so what the gateway does without an operation is recorded as an event: token
administration (gateway.auth), invokes of an endpoint (`record_invoke`: who, from which
face, the endpoint, its cluster, the path and the answer's status; never the request or the
answer) and pod terminal sessions (`record_terminal`: who, the pod, start and end, never a
line typed).
"""

from __future__ import annotations

import asyncpg
from fastapi import Request

from gateway.deps import get_source
from shared.contracts.events import Event
from shared.operations import append_event


class EndpointInvoked(Event):
    """A request sent to an endpoint's model server through the gateway, and its answer's
    status (`error`: the refusal's code when it did not reach the model server)."""

    what = "endpoint_invoked"
    cluster: str
    endpoint: str
    path: str
    status: int
    error: str | None = None


async def record_invoke(
    request: Request,
    pool: asyncpg.Pool,
    *,
    cluster: str,
    endpoint: str,
    path: str,
    status: int,
    error: str | None = None,
) -> None:
    """Record an invoke by the request's (authenticated) principal."""
    event = EndpointInvoked(
        cluster=cluster, endpoint=endpoint, path=path, status=status, error=error
    )
    await _record(pool, "inference", event, request.state.principal.name, await get_source(request))


async def _record(
    pool: asyncpg.Pool, domain: str, event: Event, principal: str, source: str
) -> None:
    """An event with no operation, by `principal` from `source`."""
    async with pool.acquire() as conn:
        await append_event(
            conn,
            operation_id=None,
            domain=domain,
            event=event,
            principal=principal,
            source=source,
        )


class PodTerminalOpened(Event):
    """A pod terminal session began (who is the event's principal); nothing typed is kept."""

    what = "pod_terminal_opened"
    cluster: str
    namespace: str
    pod: str
    container: str | None = None


class PodTerminalClosed(PodTerminalOpened):
    """A pod terminal session ended: how many lines it ran and how long it lasted."""

    what = "pod_terminal_closed"
    lines: int = 0
    seconds: float = 0.0


async def record_terminal(
    pool: asyncpg.Pool,
    principal: str,
    phase: str,
    *,
    cluster: str,
    namespace: str,
    pod: str,
    container: str | None,
    lines: int = 0,
    seconds: float = 0.0,
    source: str = "ui",
) -> None:
    """Record a terminal session's start (`opened`) or end (`closed`)."""
    where = {"cluster": cluster, "namespace": namespace, "pod": pod, "container": container}
    event: Event = (
        PodTerminalOpened(**where)
        if phase == "opened"
        else PodTerminalClosed(**where, lines=lines, seconds=seconds)
    )
    await _record(pool, "workload", event, principal, source)
