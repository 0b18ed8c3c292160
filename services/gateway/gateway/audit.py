"""The audit log's writes that the gateway makes itself: every event is audited by the database
function that writes it (`write_event`; the event row is its audit row, migration 0010), so what the gateway does without an operation is recorded as an event: token
administration (gateway.auth) and invokes of an endpoint (`record_invoke`: who, from which
face, the endpoint, its cluster, the path and the answer's status; never the request or the
answer).
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
    async with pool.acquire() as conn:
        await append_event(
            conn,
            operation_id=None,
            domain="inference",
            event=EndpointInvoked(
                cluster=cluster, endpoint=endpoint, path=path, status=status, error=error
            ),
            principal=request.state.principal.name,
            source=await get_source(request),
        )
