"""The `cluster_storage` rows, written as a claim is added to or removed from a cluster."""

from __future__ import annotations

import uuid

import asyncpg

from shared.contracts.events import Event
from shared.contracts.storage import (
    AddStorage,
    RemoveStorage,
    S3Storage,
    StorageAdded,
    StorageRemoved,
)
from shared.read_model import Writes, finishing, starting
from shared.stages import FINISHED, Outcome
from shared.storage_claims import FSX_DETAILS


async def _adding(conn: asyncpg.Connection, operation_id: uuid.UUID, cmd: AddStorage) -> None:
    storage = cmd.storage
    if isinstance(storage, S3Storage):
        created, bucket, file_system_id = storage.create, storage.bucket, None
    else:
        created, bucket = storage.file_system_id is None, None
        file_system_id = storage.file_system_id
    await conn.execute(
        "INSERT INTO cluster_storage (cluster, claim, kind, source, status, bucket,"
        " file_system_id, operation_id) VALUES ($1, $2, $3, $4, 'adding', $5, $6, $7)"
        " ON CONFLICT (cluster, claim) DO UPDATE SET status = 'adding', operation_id = $7,"
        " updated_at = now()",
        cmd.cluster,
        storage.claim,
        storage.kind,
        "created" if created else "existing",
        bucket,
        file_system_id,
        operation_id,
    )


async def _added(
    conn: asyncpg.Connection, _: uuid.UUID, cmd: AddStorage, outcome: Outcome
) -> list[Event]:
    claim = cmd.storage.claim
    if outcome.status not in FINISHED:
        await conn.execute(
            "UPDATE cluster_storage SET status = 'failed', updated_at = now()"
            " WHERE cluster = $1 AND claim = $2",
            cmd.cluster,
            claim,
        )
        return []
    source = outcome.outputs.get("source") or {}
    volume = outcome.outputs.get("volume") or {}
    details = {k: source[k] for k in FSX_DETAILS if source.get(k)}
    row = await conn.fetchrow(
        "UPDATE cluster_storage SET status = 'available', file_system_id = COALESCE($3,"
        " file_system_id), volume = $4, details = $5, updated_at = now()"
        " WHERE cluster = $1 AND claim = $2 RETURNING kind, source, bucket, file_system_id",
        cmd.cluster,
        claim,
        source.get("file_system_id"),
        volume.get("volume"),
        details,
    )
    if row is None:
        return []
    return [
        StorageAdded(
            cluster=cmd.cluster,
            claim=claim,
            kind=row["kind"],
            source=row["source"],
            bucket=row["bucket"],
            file_system_id=row["file_system_id"],
        )
    ]


async def _removing(conn: asyncpg.Connection, operation_id: uuid.UUID, cmd: RemoveStorage) -> None:
    await conn.execute(
        "UPDATE cluster_storage SET status = 'removing', operation_id = $3, updated_at = now()"
        " WHERE cluster = $1 AND claim = $2",
        cmd.cluster,
        cmd.claim.claim,
        operation_id,
    )


async def _removed(
    conn: asyncpg.Connection, _: uuid.UUID, cmd: RemoveStorage, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        await conn.execute(
            "UPDATE cluster_storage SET status = 'failed', updated_at = now()"
            " WHERE cluster = $1 AND claim = $2",
            cmd.cluster,
            cmd.claim.claim,
        )
        return []
    await conn.execute(
        "DELETE FROM cluster_storage WHERE cluster = $1 AND claim = $2",
        cmd.cluster,
        cmd.claim.claim,
    )
    deleted = (outcome.outputs.get("source") or {}).get("deleted")
    return [
        StorageRemoved(
            cluster=cmd.cluster, claim=cmd.claim.claim, deleted=[deleted] if deleted else []
        )
    ]


HOOKS: dict[str, Writes] = {
    AddStorage.__name__: (starting(AddStorage, _adding), finishing(AddStorage, _added)),
    RemoveStorage.__name__: (
        starting(RemoveStorage, _removing),
        finishing(RemoveStorage, _removed),
    ),
}
