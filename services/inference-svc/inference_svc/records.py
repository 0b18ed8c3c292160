"""The `endpoints` read model, as each operation writes it: in the transaction that starts the
operation (`*_started`) and the one that ends it (`*_finished`, which returns the events the
ending publishes). `deploy(workflow)` and the like attach them to the domain's workflows."""

from __future__ import annotations

import dataclasses
import uuid

import asyncpg

from shared.contracts.events import Event
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointDeleted,
    EndpointDeployed,
    EndpointScaled,
    PoolWorkerAssigned,
    ScaleEndpoint,
)
from shared.stages import Outcome, Workflow

Payload = dict[str, object]


def deploy(workflow: Workflow[DeployEndpoint]) -> Workflow[DeployEndpoint]:
    return dataclasses.replace(workflow, on_start=deploy_started, on_finish=deploy_finished)


def scale(workflow: Workflow[ScaleEndpoint]) -> Workflow[ScaleEndpoint]:
    return dataclasses.replace(workflow, on_finish=scale_finished)


def assign(workflow: Workflow[AssignPoolWorker]) -> Workflow[AssignPoolWorker]:
    return dataclasses.replace(workflow, on_finish=assign_finished)


def delete(workflow: Workflow[DeleteEndpoint]) -> Workflow[DeleteEndpoint]:
    return dataclasses.replace(workflow, on_start=delete_started, on_finish=delete_finished)


async def deploy_started(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: Payload
) -> None:
    deploy = DeployEndpoint.from_payload(command)
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    deploy = DeployEndpoint.from_payload(outcome.command)
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    command = ScaleEndpoint.from_payload(outcome.command)
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    command = AssignPoolWorker.from_payload(outcome.command)
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: Payload
) -> None:
    target = DeleteEndpoint.from_payload(command).target
    await conn.execute(
        "UPDATE endpoints SET status = 'deleting', operation_id = $3, updated_at = now()"
        " WHERE cluster = $1 AND name = $2",
        target.cluster,
        target.name,
        operation_id,
    )


async def delete_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    target = DeleteEndpoint.from_payload(outcome.command).target
    if outcome.status not in ("succeeded", "noop"):
        return []
    await conn.execute(
        "DELETE FROM endpoints WHERE cluster = $1 AND name = $2", target.cluster, target.name
    )
    return [EndpointDeleted(cluster=target.cluster, name=target.name)]
