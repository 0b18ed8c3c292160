"""The event log: a page after a sequence number, or a live stream resumable from one."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from gateway.deps import Broadcaster, Operator, Pool, Viewer, token_verifier
from gateway.limits import NonNegativeBigint, SeqHeader
from gateway.routes.models import EventRead
from gateway.routing import PrefixedRoute
from gateway.stream import KEEP_ALIVE, SubscriberTooSlow
from shared.operations import event_row

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1", tags=["events"])


@router.get("/events", response_model=list[EventRead], summary="Events after a sequence number")
async def list_events(
    pool: Pool,
    _: Viewer,
    after: Annotated[
        NonNegativeBigint, Query(description="Return events with seq greater than this")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    operation_id: uuid.UUID | None = None,
) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT * FROM events WHERE seq > $1 AND ($2::uuid IS NULL OR operation_id = $2)"
            " ORDER BY seq LIMIT $3",
            after,
            operation_id,
            limit,
        )
    return [event_row(r) for r in rows]


@router.get(
    "/events/stream",
    summary="Live events as Server-Sent Events; resume with `after` or Last-Event-ID",
    response_class=StreamingResponse,
)
async def stream_events(
    request: Request,
    broadcaster: Broadcaster,
    principal: Viewer,
    after: Annotated[NonNegativeBigint | None, Query()] = None,
    operation_id: uuid.UUID | None = None,
    last_event_id: Annotated[SeqHeader, Header()] = None,
) -> StreamingResponse:
    start = after
    if start is None:
        start = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0

    verifier = token_verifier(request.app)

    async def frames() -> AsyncIterator[bytes]:
        # One generator per subscriber, no task or timer per event: keep-alives come from the
        # broadcaster's live feed. The stream ends when its token is revoked (or replaced).
        with verifier.watch(principal) as revoked:
            events = broadcaster.subscribe(
                start, str(operation_id) if operation_id else None, ended=revoked
            )
            try:
                yield b"retry: 1000\n\n"
                with contextlib.suppress(SubscriberTooSlow):
                    async for event in events:
                        if event is KEEP_ALIVE:
                            yield b": keep-alive\n\n"
                            continue
                        yield (
                            f"id: {event['seq']}\nevent: {event['type']}\ndata: ".encode()
                            + orjson.dumps(event)
                            + b"\n\n"
                        )
                if revoked.done():
                    yield b": the token was revoked\n\n"
            finally:
                await events.aclose()

    return StreamingResponse(
        frames(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/audit", summary="The audit log: every event with its principal and source")
async def list_audit(
    pool: Pool,
    _: Operator,
    after: Annotated[NonNegativeBigint, Query()] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    principal: Annotated[str | None, Query(max_length=200)] = None,
    operation_id: uuid.UUID | None = None,
) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT * FROM audit_log WHERE seq > $1 AND ($2::text IS NULL OR principal = $2)"
            " AND ($3::uuid IS NULL OR operation_id = $3) ORDER BY seq LIMIT $4",
            after,
            principal,
            operation_id,
            limit,
        )
    return [
        {
            "seq": r["seq"],
            "event_id": str(r["event_id"]),
            "operation_id": str(r["operation_id"]) if r["operation_id"] else None,
            "type": r["type"],
            "subject": r["subject"],
            "principal": r["principal"],
            "source": r["source"],
            "payload": r["payload"],
            "occurred_at": r["occurred_at"].isoformat(),
            "recorded_at": r["recorded_at"].isoformat(),
        }
        for r in rows
    ]
