"""inference-svc's read model in PostgreSQL: every SQL statement of the service.

- the `endpoints` rows as each operation writes them, in the transaction that starts it
  (`*_started`) and the one that ends it (`*_finished`, which returns the events the ending
  publishes); `recorded` attaches them to the domain's workflows by command type
  (`shared.read_model`);
- the reads the workflows, plans and queries decide from (`cluster`, `endpoint_spec`, ...);
- the status watcher's changes (`endpoint_observed`: a compare-and-set and its event)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from inference_svc.domain.status import Observed
from shared.contracts.events import Event
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointDeleted,
    EndpointDeployed,
    EndpointScaled,
    EndpointStatusChanged,
    PoolWorkerAssigned,
    ScaleEndpoint,
)
from shared.operations import append_event
from shared.read_model import Writes, finishing, starting
from shared.read_model import recorded as with_writes
from shared.stages import Outcome, Workflow

Row = dict[str, Any]
# An endpoint row `e` whose last operation is still at work (pending or running).
IN_PROGRESS = (
    "EXISTS (SELECT 1 FROM operations o WHERE o.id = e.operation_id"
    " AND o.status IN ('pending', 'running'))"
)


# ---- reads -----------------------------------------------------------------------------------


async def cluster(pool: asyncpg.Pool, name: str) -> Row | None:
    """The cluster's row in the `clusters` read model (its endpoint and CA)."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    return None if row is None else dict(row)


async def endpoint_spec(pool: asyncpg.Pool, cluster: str, name: str) -> Row | None:
    async with pool.acquire() as conn:
        spec: Row | None = await conn.fetchval(
            "SELECT spec FROM endpoints WHERE cluster = $1 AND name = $2", cluster, name
        )
    return spec


async def endpoint_objects(pool: asyncpg.Pool, cluster: str, name: str) -> list[Row]:
    """The objects the endpoint's last deploy recorded (kind, name, api_version)."""
    async with pool.acquire() as conn:
        objects: list[Row] | None = await conn.fetchval(
            "SELECT objects FROM endpoints WHERE cluster = $1 AND name = $2", cluster, name
        )
    return objects or []


async def in_progress(pool: asyncpg.Pool, cluster: str, name: str) -> bool:
    """Whether an operation on the endpoint is pending or running."""
    async with pool.acquire() as conn:
        working = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM endpoints e"
            f" WHERE e.cluster = $1 AND e.name = $2 AND {IN_PROGRESS})",
            cluster,
            name,
        )
    return bool(working)


async def watched_endpoints(pool: asyncpg.Pool, statuses: tuple[str, ...]) -> list[Row]:
    """The endpoints of these statuses that no operation is working on."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT e.* FROM endpoints e WHERE e.status = ANY($1::text[]) AND NOT {IN_PROGRESS}",
            list(statuses),
        )
    return [dict(row) for row in rows]


async def endpoint_observed(pool: asyncpg.Pool, row: Row, seen: Observed) -> bool:
    """Record the status the watcher saw, if the row is still as it was read (a replica may
    have recorded it first), with its `EndpointStatusChanged` event."""
    async with pool.acquire() as conn, conn.transaction():
        updated = await conn.fetchval(
            "UPDATE endpoints SET status = $3, replicas = $4, ready_replicas = $5,"
            " address = $6, message = $7, updated_at = now()"
            " WHERE cluster = $1 AND name = $2 AND status = $8 AND replicas = $9"
            " AND ready_replicas = $10 RETURNING name",
            row["cluster"],
            row["name"],
            seen.status,
            seen.replicas,
            seen.ready_replicas,
            seen.address,
            seen.message,
            row["status"],
            row["replicas"],
            row["ready_replicas"],
        )
        if updated is None:
            return False
        await append_event(
            conn,
            operation_id=None,
            domain="inference",
            event=EndpointStatusChanged(
                cluster=row["cluster"],
                name=row["name"],
                status=seen.status,
                previous=row["status"],
                ready_replicas=seen.ready_replicas,
                replicas=seen.replicas,
                message=seen.message,
            ),
            principal="system:inference-svc",
        )
    return True


# ---- the operations' writes ------------------------------------------------------------------


async def deploy_started(
    conn: asyncpg.Connection, operation_id: uuid.UUID, deploy: DeployEndpoint
) -> None:
    spec = deploy.spec
    await conn.execute(
        "INSERT INTO endpoints (cluster, name, namespace, kind, spec, status, replicas,"
        " operation_id) VALUES ($1, $2, $3, $4, $5, 'deploying', $6, $7)"
        " ON CONFLICT (cluster, name) DO UPDATE SET spec = EXCLUDED.spec, kind = EXCLUDED.kind,"
        " namespace = EXCLUDED.namespace, replicas = EXCLUDED.replicas,"
        " operation_id = EXCLUDED.operation_id, updated_at = now()",
        deploy.cluster,
        spec.name,
        spec.namespace,
        spec.kind,
        spec.model_dump(mode="json"),
        spec.replicas,
        operation_id,
    )


async def deploy_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, deploy: DeployEndpoint, outcome: Outcome
) -> list[Event]:
    spec = deploy.spec
    available = outcome.outputs.get("available") or {}
    objects = (outcome.outputs.get("apply") or {}).get("objects") or []
    if outcome.status in ("succeeded", "noop"):
        await conn.execute(
            "UPDATE endpoints SET status = 'available', objects = $3, replicas = $4,"
            " ready_replicas = $5, address = $6, message = NULL, updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            deploy.cluster,
            spec.name,
            objects,
            int(available.get("replicas") or spec.replicas),
            int(available.get("ready_replicas") or 0),
            available.get("address"),
        )
        if outcome.status == "succeeded":
            return [
                EndpointDeployed(
                    cluster=deploy.cluster,
                    name=spec.name,
                    kind=spec.kind,
                    objects=[f"{o['kind']}/{o['name']}" for o in objects],
                )
            ]
        return []
    error = outcome.error or {}
    await conn.execute(
        "UPDATE endpoints SET status = 'failed', message = $3, updated_at = now()"
        " WHERE cluster = $1 AND name = $2",
        deploy.cluster,
        spec.name,
        str(error.get("message") or outcome.status),
    )
    return []


async def scale_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: ScaleEndpoint, outcome: Outcome
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    target = command.target
    row = await conn.fetchrow(
        "SELECT spec FROM endpoints WHERE cluster = $1 AND name = $2",
        target.cluster,
        target.name,
    )
    if row is not None:
        spec = dict(row["spec"]) | {"replicas": command.replicas}
        available = outcome.outputs.get("available") or {}
        await conn.execute(
            "UPDATE endpoints SET spec = $3, replicas = $4, ready_replicas = $5,"
            " status = 'available', updated_at = now() WHERE cluster = $1 AND name = $2",
            target.cluster,
            target.name,
            spec,
            command.replicas,
            int(available.get("ready_replicas") or 0),
        )
    previous = (outcome.outputs.get("apply") or {}).get("previous")
    return [
        EndpointScaled(
            cluster=target.cluster,
            name=target.name,
            replicas=command.replicas,
            previous=previous,
        )
    ]


async def assign_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: AssignPoolWorker, outcome: Outcome
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    out = outcome.outputs.get("assign") or {}
    return [
        PoolWorkerAssigned(
            cluster=command.target.cluster,
            name=command.target.name,
            pod=command.pod,
            model=command.model,
            previous=out.get("previous"),
        )
    ]


async def delete_started(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: DeleteEndpoint
) -> None:
    target = command.target
    await conn.execute(
        "UPDATE endpoints SET status = 'deleting', operation_id = $3, updated_at = now()"
        " WHERE cluster = $1 AND name = $2",
        target.cluster,
        target.name,
        operation_id,
    )


async def delete_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: DeleteEndpoint, outcome: Outcome
) -> list[Event]:
    target = command.target
    if outcome.status not in ("succeeded", "noop"):
        return []
    await conn.execute(
        "DELETE FROM endpoints WHERE cluster = $1 AND name = $2", target.cluster, target.name
    )
    return [EndpointDeleted(cluster=target.cluster, name=target.name)]


WRITES: dict[str, Writes] = {
    DeployEndpoint.__name__: (
        starting(DeployEndpoint, deploy_started),
        finishing(DeployEndpoint, deploy_finished),
    ),
    ScaleEndpoint.__name__: (None, finishing(ScaleEndpoint, scale_finished)),
    AssignPoolWorker.__name__: (None, finishing(AssignPoolWorker, assign_finished)),
    DeleteEndpoint.__name__: (
        starting(DeleteEndpoint, delete_started),
        finishing(DeleteEndpoint, delete_finished),
    ),
}


def recorded(workflows: Mapping[str, Workflow[Any]]) -> dict[str, Workflow[Any]]:
    return with_writes(workflows, WRITES)
