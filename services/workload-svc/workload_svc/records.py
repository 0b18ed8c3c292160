"""The `jobs` read model, as each operation writes it: in the transaction that starts the
operation (`*_started`) and the one that ends it (`*_finished`, which returns the events the
ending publishes). `submit(workflow)` and the like attach them to the domain's workflows."""

from __future__ import annotations

import dataclasses
import uuid

import asyncpg

from shared.contracts.events import Event
from shared.contracts.workloads import (
    NAMESPACE,
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    JobCancelled,
    JobDeleted,
    JobSubmitted,
    SubmitJob,
    TrackingServerCreated,
)
from shared.stages import Outcome, Workflow
from workload_svc.domain.workflows import Job, rendered_of

Payload = dict[str, object]


def submit(workflow: Workflow[Job]) -> Workflow[Job]:
    """A submit or a model download: its row is made as it starts, settled as it ends."""
    parse = workflow.command
    assert parse is not None

    async def started(conn: asyncpg.Connection, operation_id: uuid.UUID, payload: Payload) -> None:
        await submit_started(conn, operation_id, parse.from_payload(payload))

    async def finished(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        return await submit_finished(
            conn, operation_id, parse.from_payload(outcome.command), outcome
        )

    return dataclasses.replace(workflow, on_start=started, on_finish=finished)


def cancel(workflow: Workflow[CancelJob]) -> Workflow[CancelJob]:
    return dataclasses.replace(workflow, on_finish=cancel_finished)


def delete(workflow: Workflow[DeleteJob]) -> Workflow[DeleteJob]:
    return dataclasses.replace(workflow, on_finish=delete_finished)


def tracking_server(workflow: Workflow[CreateTrackingServer]) -> Workflow[CreateTrackingServer]:
    return dataclasses.replace(workflow, on_finish=tracking_server_finished)


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
        NAMESPACE,
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    command = CancelJob.from_payload(outcome.command)
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
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    command = DeleteJob.from_payload(outcome.command)
    if outcome.status not in ("succeeded", "noop"):
        return []
    removed = await conn.execute(
        "DELETE FROM jobs WHERE cluster = $1 AND name = $2", command.cluster, command.name
    )
    if removed.endswith(" 0"):
        return []
    return [JobDeleted(cluster=command.cluster, name=command.name)]


async def tracking_server_finished(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    out = outcome.outputs.get("server") or {}
    name = CreateTrackingServer.from_payload(outcome.command).spec.name
    return [TrackingServerCreated(name=name, arn=str(out.get("arn")), url=out.get("url"))]
