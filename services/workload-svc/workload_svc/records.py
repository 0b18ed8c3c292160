"""workload-svc's read model in PostgreSQL: every SQL statement of the service.

- the reads the workflows, plans and queries decide from (`cluster`, `job`, ...);
- the status watcher's changes (`job_observed`: a compare-and-set and its event);
- the `jobs` rows as each operation writes them, in the transaction that starts it
  (`*_started`) and the one that ends it (`*_finished`, which returns the events the ending
  publishes); `recorded` attaches them to the domain's workflows by command type
  (`shared.read_model`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from shared.contracts.events import Event
from shared.contracts.workloads import (
    NAMESPACE,
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    DownloadModel,
    JobCancelled,
    JobDeleted,
    JobStatusChanged,
    JobSubmitted,
    SubmitJob,
    TrackingServerCreated,
)
from shared.operations import append_event
from shared.read_model import Writes, finishing, starting
from shared.read_model import recorded as with_writes
from shared.stages import Outcome, Workflow
from workload_svc.domain.status import Observed
from workload_svc.domain.workflows import Job, rendered_of

Row = dict[str, Any]
# Only clusters that can be reached: a deleted or failed cluster's jobs keep their last
# observation.
_WATCHED = (
    "SELECT j.* FROM jobs j JOIN clusters c ON c.name = j.cluster"
    " WHERE j.status = ANY($1::text[]) AND c.status IN ('active', 'imported')"
    " AND c.endpoint IS NOT NULL"
)


# ---- reads -----------------------------------------------------------------------------------


async def cluster(pool: asyncpg.Pool, name: str) -> Row | None:
    """The cluster's row in the `clusters` read model (its endpoint and CA)."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    return None if row is None else dict(row)


async def reachable_clusters(pool: asyncpg.Pool) -> list[str]:
    """The clusters whose Kubernetes API is recorded and usable (active or imported)."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name FROM clusters WHERE status IN ('active', 'imported')"
            " AND endpoint IS NOT NULL AND ca_data IS NOT NULL ORDER BY name"
        )
    return [str(row["name"]) for row in rows]


async def instance_groups(pool: asyncpg.Pool, cluster: str) -> dict[str, str]:
    """The cluster's instance groups: name -> instance type."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, instance_type FROM instance_groups WHERE cluster = $1", cluster
        )
    return {r["name"]: r["instance_type"] for r in rows}


async def job(pool: asyncpg.Pool, cluster: str, name: str) -> Row | None:
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT * FROM jobs WHERE cluster = $1 AND name = $2", cluster, name
        )
    return None if row is None else dict(row)


async def watched_jobs(pool: asyncpg.Pool, statuses: tuple[str, ...]) -> list[Row]:
    """The jobs of these statuses on clusters that can be reached."""
    async with pool.acquire() as conn:
        return [dict(r) for r in await conn.fetch(_WATCHED, list(statuses))]


# ---- the status watcher's writes -------------------------------------------------------------


async def job_pods(pool: asyncpg.Pool, row: Row, pods: list[Any]) -> None:
    """The job's pods changed, nothing else did: no event."""
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE jobs SET pods = $3, updated_at = now() WHERE cluster = $1 AND name = $2",
            row["cluster"],
            row["name"],
            pods,
        )


async def job_observed(pool: asyncpg.Pool, row: Row, seen: Observed) -> bool:
    """Record the status the watcher saw, if the row is still as it was read (a replica may
    have recorded it first), with its `JobStatusChanged` event."""
    async with pool.acquire() as conn, conn.transaction():
        updated = await conn.execute(
            "UPDATE jobs SET status = $3, restarts = $4, budget = COALESCE($5, budget),"
            " faulty_pods = $6, pods = $7, reason = $8, message = $9, updated_at = now()"
            " WHERE cluster = $1 AND name = $2 AND status = $10 AND restarts = $11"
            " AND reason IS NOT DISTINCT FROM $12",
            row["cluster"],
            row["name"],
            seen.status,
            seen.restarts,
            seen.budget,
            seen.faulty_pods,
            seen.pods,
            seen.reason,
            seen.message,
            row["status"],
            row["restarts"],
            row["reason"],
        )
        if updated.endswith(" 0"):
            return False
        await append_event(
            conn,
            operation_id=None,
            domain="workload",
            event=JobStatusChanged(
                cluster=row["cluster"],
                name=row["name"],
                status=seen.status,
                previous=row["status"],
                restarts=seen.restarts,
                budget=seen.budget,
                faulty_pods=seen.faulty_pods,
                reason=seen.reason,
                message=seen.message,
            ),
            principal="system",
        )
    return True


async def secret_written(pool: asyncpg.Pool, event: Event, principal: str, source: str) -> None:
    """A Secret written by a query (`hf_token`, `store_secret`): its event, names and keys only."""
    async with pool.acquire() as conn, conn.transaction():
        await append_event(
            conn,
            operation_id=None,
            domain="workload",
            event=event,
            principal=principal,
            source=source,
        )


# ---- the operations' writes ------------------------------------------------------------------


async def submit_started(conn: asyncpg.Connection, operation_id: uuid.UUID, command: Job) -> None:
    recipe, rendered, spec = rendered_of(command)
    budget = command.spec.run_policy.job_max_retry_count if isinstance(command, SubmitJob) else 6
    await conn.execute(
        "INSERT INTO jobs (cluster, name, recipe, api_version, kind, namespace, spec, status,"
        " budget, operation_id) VALUES ($1, $2, $3, $4, $5, $6, $7, 'submitting', $8, $9)"
        " ON CONFLICT (cluster, name) DO NOTHING",
        command.cluster,
        spec.name,
        recipe,
        rendered.api_version,
        rendered.kind,
        rendered.body["metadata"].get("namespace") or NAMESPACE,
        spec.model_dump(mode="json"),
        budget,
        operation_id,
    )


async def submit_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: Job, outcome: Outcome
) -> list[Event]:
    recipe, rendered, spec = rendered_of(command)
    cluster = command.cluster
    if outcome.status in ("succeeded", "noop"):
        await conn.execute(
            "UPDATE jobs SET status = 'pending', updated_at = now()"
            " WHERE cluster = $1 AND name = $2 AND operation_id = $3"
            " AND status = 'submitting'",
            cluster,
            spec.name,
            operation_id,
        )
        if outcome.status == "noop":
            return []
        return [JobSubmitted(cluster=cluster, name=spec.name, kind=rendered.kind, recipe=recipe)]
    # Refused or failed before anything ran: the row of this submit goes (a fixed resubmit
    # of the same name starts clean); a row another submit made is left alone.
    await conn.execute(
        "DELETE FROM jobs WHERE cluster = $1 AND name = $2 AND operation_id = $3"
        " AND status = 'submitting'",
        cluster,
        spec.name,
        operation_id,
    )
    return []


async def cancel_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: CancelJob, outcome: Outcome
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    await conn.execute(
        "UPDATE jobs SET status = 'cancelled', reason = 'Cancelled', updated_at = now()"
        " WHERE cluster = $1 AND name = $2",
        command.cluster,
        command.name,
    )
    return [JobCancelled(cluster=command.cluster, name=command.name)]


async def delete_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: DeleteJob, outcome: Outcome
) -> list[Event]:
    if outcome.status not in ("succeeded", "noop"):
        return []
    removed = await conn.execute(
        "DELETE FROM jobs WHERE cluster = $1 AND name = $2", command.cluster, command.name
    )
    if removed.endswith(" 0"):
        return []
    return [JobDeleted(cluster=command.cluster, name=command.name)]


async def tracking_server_finished(
    conn: asyncpg.Connection,
    operation_id: uuid.UUID,
    command: CreateTrackingServer,
    outcome: Outcome,
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    out = outcome.outputs.get("server") or {}
    name = command.spec.name
    return [TrackingServerCreated(name=name, arn=str(out.get("arn")), url=out.get("url"))]


WRITES: dict[str, Writes] = {
    SubmitJob.__name__: (
        starting(SubmitJob, submit_started),
        finishing(SubmitJob, submit_finished),
    ),
    DownloadModel.__name__: (
        starting(DownloadModel, submit_started),
        finishing(DownloadModel, submit_finished),
    ),
    CancelJob.__name__: (None, finishing(CancelJob, cancel_finished)),
    DeleteJob.__name__: (None, finishing(DeleteJob, delete_finished)),
    CreateTrackingServer.__name__: (
        None,
        finishing(CreateTrackingServer, tracking_server_finished),
    ),
}


def recorded(workflows: Mapping[str, Workflow[Any]]) -> dict[str, Workflow[Any]]:
    return with_writes(workflows, WRITES)
