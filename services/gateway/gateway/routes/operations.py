"""Operations: the unit of every mutation, with stages and events; retry of failed stages."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from gateway import keyset, pages
from gateway.deps import Broadcaster, Operator, Pool, Source, Viewer
from gateway.errors import ApiError
from gateway.routes.models import READ_ERRORS, OperationList, OperationRead, RetryAccepted
from gateway.routing import PrefixedRoute
from shared.boundary import api_path
from shared.operations import (
    TERMINAL,
    NotRetryable,
    OperationNotFound,
    load_operation,
    operation_summary,
    request_cancel,
    retry_operation,
)
from shared.pages import BadPageToken

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/operations", tags=["operations"])

STATUSES = ("pending", "running", "succeeded", "failed", "cancelled", "noop")


def _not_found(operation_id: uuid.UUID) -> ApiError:
    return ApiError(
        404,
        "not_found",
        f"operation {operation_id} does not exist",
        hint="list operations with GET /api/v1/operations",
    )


async def _repeated(
    conn: asyncpg.Connection, operation_id: uuid.UUID, principal: str, request: str
) -> tuple[str, dict[str, Any]] | None:
    """The retry rule for a request on an operation (`request` is the event it records,
    OperationRetried or CancelRequested): when the latest such request is this caller's same
    one, a repeat is its retry and answers it (the operation's status and what the request
    recorded) instead of asking again; after anything else asked of it, a request is new."""
    latest = await conn.fetchrow(
        "SELECT e.type, e.principal, e.payload, o.status FROM operations o"
        " JOIN events e ON e.operation_id = o.id WHERE o.id = $1"
        " AND e.type IN ('OperationRetried', 'CancelRequested') ORDER BY e.seq DESC LIMIT 1",
        operation_id,
    )
    if latest is None or (latest["type"], latest["principal"]) != (request, principal):
        return None
    return latest["status"], latest["payload"]


def _answer(operation_id: uuid.UUID, **outcome: Any) -> JSONResponse:
    return JSONResponse(
        {
            "operation_id": str(operation_id),
            "status_url": api_path("operations", operation_id),
            **outcome,
        },
        status_code=202,
    )


@router.get(
    "",
    response_model=OperationList,
    responses={**pages.paged(OperationList), **READ_ERRORS, **pages.BAD_TOKEN},
    summary="List operations, newest first, a page at a time",
)
async def list_operations(
    pool: Pool,
    _: Viewer,
    response: Response,
    status: Annotated[
        str | None, Query(pattern="^(pending|running|succeeded|failed|cancelled|noop)$")
    ] = None,
    kind: Annotated[str | None, Query(max_length=100)] = None,
    target_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    page_token: pages.PageToken = None,
) -> dict[str, Any]:
    key = pages.key_of("operations", page_token, 2)
    after = None if key is None else (pages.instant(key[0]), _operation_id(key[1]))
    async with pool.acquire() as conn:
        rows, total = await keyset.page(
            conn,
            "operations",
            ("created_at", "id"),
            after,
            limit,
            where="($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2)"
            " AND ($3::text IS NULL OR target_id = $3)",
            args=(status, kind, target_id),
            descending=True,
        )
    page = pages.send(
        response,
        "operations",
        rows,
        limit,
        total,
        lambda r: (r["created_at"].isoformat(), str(r["id"])),
    )
    return {"items": [operation_summary(r) for r in page]}


def _operation_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise pages.refused(BadPageToken("not a page token")) from None


@router.get(
    "/{operation_id}",
    response_model=OperationRead,
    summary="An operation with its stages and events; `wait` long-polls until it is terminal",
)
async def get_operation(
    operation_id: uuid.UUID,
    pool: Pool,
    broadcaster: Broadcaster,
    _: Viewer,
    wait: Annotated[
        float,
        Query(ge=0, le=60, description="Seconds to wait for a terminal status (0: answer now)"),
    ] = 0,
    events: Annotated[bool, Query(description="Include the operation's events")] = True,
) -> dict[str, Any]:
    deadline = time.monotonic() + wait
    while True:
        async with pool.acquire() as conn:
            op = await load_operation(conn, operation_id, with_events=events)
        if op is None:
            raise _not_found(operation_id)
        remaining = deadline - time.monotonic()
        if op["status"] in TERMINAL or remaining <= 0:
            return op
        await broadcaster.wait_for_change(min(remaining, 1.0))
        await asyncio.sleep(0)


@router.post(
    "/{operation_id}/retry",
    status_code=202,
    response_model=RetryAccepted,
    summary="Re-run the failed stages of a failed operation (finished stages are kept)",
)
async def retry(
    operation_id: uuid.UUID, pool: Pool, principal: Operator, source: Source
) -> JSONResponse:
    async with pool.acquire() as conn:
        try:
            stages = await retry_operation(
                conn, operation_id, principal=principal.name, source=source
            )
        except OperationNotFound:
            raise _not_found(operation_id) from None
        except NotRetryable as exc:
            repeated = await _repeated(conn, operation_id, principal.name, "OperationRetried")
            if repeated is not None:  # this caller's retry, running or finished
                return _answer(operation_id, retried_stages=repeated[1]["stages"])
            raise ApiError(
                409, "not_retryable", str(exc), hint="retry applies to failed operations only"
            ) from exc
    return _answer(operation_id, retried_stages=stages)


@router.post(
    "/{operation_id}/cancel",
    status_code=202,
    summary="Stop an operation: no new stage starts and waiting stages end as cancelled",
    description=(
        "A pending operation is cancelled at once. A running one stops at its next step; cloud"
        " work already submitted is not rolled back (delete the resource to remove it). A"
        " cancelled operation can be retried."
    ),
)
async def cancel(
    operation_id: uuid.UUID, pool: Pool, principal: Operator, source: Source
) -> JSONResponse:
    async with pool.acquire() as conn:
        repeated = await _repeated(conn, operation_id, principal.name, "CancelRequested")
        if repeated is not None:  # this caller's cancel: not asked (or recorded) twice
            status = repeated[0]
            return _answer(operation_id, status="cancelling" if status not in TERMINAL else status)
        try:
            status = await request_cancel(
                conn, operation_id, principal=principal.name, source=source
            )
        except OperationNotFound:
            raise _not_found(operation_id) from None
        except NotRetryable as exc:
            raise ApiError(409, "already_finished", str(exc), hint="nothing to cancel") from exc
    return _answer(operation_id, status=status)
