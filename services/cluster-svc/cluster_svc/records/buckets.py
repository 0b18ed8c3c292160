"""The `storage_buckets` rows, written as a bucket is created or deleted."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import asyncpg

from cluster_svc.domain.storage import bucket_arn
from shared.contracts.commands import CreateStorageBucket, DeleteStorageBucket
from shared.contracts.events import BucketCreated, BucketDeleted, Event
from shared.read_model import finishing, starting
from shared.stages import FINISHED, FinalHook, Hook, Outcome

BucketCommand = CreateStorageBucket | DeleteStorageBucket


def _bucket_marking(
    status: str,
) -> Callable[[asyncpg.Connection, uuid.UUID, BucketCommand], Awaitable[None]]:
    async def mark(
        conn: asyncpg.Connection, operation_id: uuid.UUID, command: BucketCommand
    ) -> None:
        await conn.execute(
            "INSERT INTO storage_buckets (name, region, status, operation_id) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (name) DO UPDATE SET status = $3, operation_id = $4, updated_at = now()",
            command.name,
            command.region,
            status,
            operation_id,
        )

    return mark


async def _set_bucket_status(conn: asyncpg.Connection, name: str, status: str) -> None:
    await conn.execute(
        "UPDATE storage_buckets SET status = $2, updated_at = now() WHERE name = $1", name, status
    )


async def _bucket_created(
    conn: asyncpg.Connection, _: uuid.UUID, command: CreateStorageBucket, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        await _set_bucket_status(conn, command.name, outcome.status)
        return []
    arn = bucket_arn(command.name)
    await conn.execute(
        "UPDATE storage_buckets SET status = 'available', arn = $2, updated_at = now() WHERE name = $1",
        command.name,
        arn,
    )
    return [BucketCreated(name=command.name, region=command.region, arn=arn)]


async def _bucket_deleted(
    conn: asyncpg.Connection, _: uuid.UUID, command: DeleteStorageBucket, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        await _set_bucket_status(conn, command.name, outcome.status)
        return []
    await conn.execute("DELETE FROM storage_buckets WHERE name = $1", command.name)
    return [BucketDeleted(name=command.name, region=command.region)]


HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    CreateStorageBucket.__name__: (
        starting(CreateStorageBucket, _bucket_marking("creating")),
        finishing(CreateStorageBucket, _bucket_created),
    ),
    DeleteStorageBucket.__name__: (
        starting(DeleteStorageBucket, _bucket_marking("deleting")),
        finishing(DeleteStorageBucket, _bucket_deleted),
    ),
}
