"""Accepting a command: persist the operation and its outbox row, answer 202."""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from fastapi.responses import JSONResponse

from gateway.auth import Principal
from gateway.errors import ApiError
from gateway.queries import query
from shared.bus import Bus
from shared.contracts.commands import Command
from shared.contracts.subjects import owning_service
from shared.operations import IdempotencyConflict, create_operation

_KEY = re.compile(r"^[A-Za-z0-9._:\-]{1,200}$")


def check_idempotency_key(key: str | None) -> str | None:
    if key is not None and not _KEY.match(key):
        raise ApiError(
            400,
            "invalid_idempotency_key",
            "Idempotency-Key must be 1-200 characters of letters, digits, '.', '_', ':' or '-'",
            hint="use a UUID",
            fields=[
                {
                    "field": "header.Idempotency-Key",
                    "rule": "pattern",
                    "message": "invalid characters or length",
                    "hint": "use a UUID",
                }
            ],
        )
    return key


async def accept(
    pool: asyncpg.Pool,
    command: Command,
    *,
    target_type: str,
    target_id: str,
    request: dict[str, Any],
    principal: Principal,
    source: str,
    idempotency_key: str | None,
    reserve: Callable[[asyncpg.Connection, uuid.UUID], Awaitable[None]] | None = None,
) -> JSONResponse:
    key = check_idempotency_key(idempotency_key)
    async with pool.acquire() as conn:
        try:
            accepted = await create_operation(
                conn,
                command,
                target_type=target_type,
                target_id=target_id,
                request=request,
                principal=principal.name,
                source=source,
                idempotency_key=key,
                reserve=reserve,
            )
        except IdempotencyConflict as exc:
            raise ApiError(
                409,
                "idempotency_conflict",
                "this Idempotency-Key was already used with a different request",
                hint="use a new key for a new request, or resend the original body",
                extra={"operation_id": str(exc.operation_id)},
            ) from exc
    operation_id = str(accepted.operation_id)
    return JSONResponse(
        {
            "operation_id": operation_id,
            "status_url": f"/api/v1/operations/{operation_id}",
            "created": accepted.created,
        },
        status_code=202,
        headers={"Location": f"/api/v1/operations/{operation_id}"},
    )


async def dry_run(bus: Bus, command: Command) -> JSONResponse:
    """The plan of a mutation, computed by its domain service from actual state; nothing is
    stored or changed."""
    plan = await query(
        bus,
        owning_service(command.domain),
        "plan",
        {"type": type(command).__name__, "payload": command.model_dump(mode="json")},
    )
    return JSONResponse({"dry_run": True, "plan": plan}, status_code=200)
