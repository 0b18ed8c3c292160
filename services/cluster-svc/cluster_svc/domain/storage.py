"""Storage buckets: the workflows that create and delete a shared-data bucket.

create: bucket -> (public-access block || encryption)   [the last two run concurrently]
delete: empty -> delete
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

import asyncpg

from shared.contracts.commands import CreateStorageBucket, DeleteStorageBucket
from shared.contracts.events import BucketCreated, BucketDeleted, Event
from shared.stages import Done, Outcome, Stage, StageContext, Workflow


class BucketStore(Protocol):
    async def exists(self, name: str) -> bool: ...
    async def create(self, name: str, region: str) -> None: ...
    async def block_public_access(self, name: str) -> bool: ...
    async def encrypt(self, name: str) -> bool: ...
    async def tag(self, name: str) -> None: ...
    async def empty(self, name: str) -> int: ...
    async def delete(self, name: str) -> None: ...


def bucket_arn(name: str) -> str:
    return f"arn:aws:s3:::{name}"


def create_bucket_workflow(buckets: BucketStore) -> Workflow[CreateStorageBucket]:
    async def bucket(ctx: StageContext[CreateStorageBucket]) -> Done:
        name = ctx.cmd.name
        if await buckets.exists(name):
            return Done({"arn": bucket_arn(name)}, noop=True)
        await buckets.create(name, ctx.cmd.region)
        await buckets.tag(name)
        return Done({"arn": bucket_arn(name)})

    async def public_access(ctx: StageContext[CreateStorageBucket]) -> Done:
        changed = await buckets.block_public_access(ctx.cmd.name)
        return Done(noop=not changed)

    async def encryption(ctx: StageContext[CreateStorageBucket]) -> Done:
        changed = await buckets.encrypt(ctx.cmd.name)
        return Done({"algorithm": "AES256"}, noop=not changed)

    return Workflow(
        kind=CreateStorageBucket.kind(),
        domain=CreateStorageBucket.domain,
        stages=(
            Stage("bucket", "Create the S3 bucket", bucket),
            Stage("public_access", "Block public access", public_access, needs=("bucket",)),
            Stage("encryption", "Turn on default encryption", encryption, needs=("bucket",)),
        ),
        on_start=_mark("creating"),
        on_finish=_finish_create,
        command=CreateStorageBucket,
    )


def delete_bucket_workflow(buckets: BucketStore) -> Workflow[DeleteStorageBucket]:
    async def empty(ctx: StageContext[DeleteStorageBucket]) -> Done:
        if not await buckets.exists(ctx.cmd.name):
            return Done({"objects_removed": 0}, noop=True)
        removed = await buckets.empty(ctx.cmd.name)
        return Done({"objects_removed": removed}, noop=removed == 0)

    async def delete(ctx: StageContext[DeleteStorageBucket]) -> Done:
        if not await buckets.exists(ctx.cmd.name):
            return Done(noop=True)
        await buckets.delete(ctx.cmd.name)
        return Done()

    return Workflow(
        kind=DeleteStorageBucket.kind(),
        domain=DeleteStorageBucket.domain,
        stages=(
            Stage("empty", "Remove the bucket's objects", empty),
            Stage("delete", "Delete the S3 bucket", delete, needs=("empty",)),
        ),
        on_start=_mark("deleting"),
        on_finish=_finish_delete,
        command=DeleteStorageBucket,
    )


def _mark(status: str) -> Any:
    async def mark(
        conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
    ) -> None:
        await conn.execute(
            "INSERT INTO storage_buckets (name, region, status, operation_id) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (name) DO UPDATE SET status = $3, operation_id = $4, updated_at = now()",
            command["name"],
            command["region"],
            status,
            operation_id,
        )

    return mark


async def _finish_create(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    name, region = outcome.command["name"], outcome.command["region"]
    if outcome.status not in ("succeeded", "noop"):
        await _set_status(conn, name, outcome.status)
        return []
    arn = bucket_arn(name)
    await conn.execute(
        "UPDATE storage_buckets SET status = 'available', arn = $2, updated_at = now() WHERE name = $1",
        name,
        arn,
    )
    return [BucketCreated(name=name, region=region, arn=arn)]


async def _finish_delete(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    name, region = outcome.command["name"], outcome.command["region"]
    if outcome.status not in ("succeeded", "noop"):
        await _set_status(conn, name, outcome.status)
        return []
    await conn.execute("DELETE FROM storage_buckets WHERE name = $1", name)
    return [BucketDeleted(name=name, region=region)]


async def _set_status(conn: asyncpg.Connection, name: str, status: str) -> None:
    await conn.execute(
        "UPDATE storage_buckets SET status = $2, updated_at = now() WHERE name = $1", name, status
    )
