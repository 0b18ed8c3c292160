"""The cluster read model, written in the transactions that start and end cluster operations."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from shared.contracts.commands import CreateCluster, DeleteCluster, ImportCluster
from shared.contracts.events import ClusterCreated, ClusterDeleted, ClusterImported, Event
from shared.stages import Outcome


async def set_status(conn: asyncpg.Connection, name: str, status: str) -> None:
    await conn.execute(
        "UPDATE clusters SET status = $2, updated_at = now() WHERE name = $1", name, status
    )


async def creating(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
) -> None:
    await set_status(conn, CreateCluster.from_payload(command).spec.name, "creating")


async def created(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    """Record the result; even a failed create keeps its outputs, so delete can clean it up."""
    command = CreateCluster.from_payload(outcome.command)
    name = command.spec.name
    eks = outcome.outputs.get("eks_cluster", {})
    hyperpod = outcome.outputs.get("hyperpod_cluster", {})
    await conn.execute(
        "UPDATE clusters SET status = $2, eks_cluster_arn = $3, hyperpod_cluster_arn = $4,"
        " endpoint = $5, ca_data = $6, oidc_issuer = $7, resources = $8, updated_at = now()"
        " WHERE name = $1",
        name,
        "active" if outcome.status in ("succeeded", "noop") else outcome.status,
        eks.get("cluster_arn"),
        hyperpod.get("cluster_arn"),
        eks.get("endpoint"),
        eks.get("ca_data"),
        eks.get("oidc_issuer"),
        outcome.outputs,
    )
    components = outcome.outputs.get("dependencies", {}).get("components", {})
    await conn.executemany(
        "INSERT INTO cluster_components (cluster, component, version, status) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (cluster, component) DO UPDATE SET version = $3, status = $4, updated_at = now()",
        [
            (name, c, str(v.get("version", "")), str(v.get("status", "")))
            for c, v in components.items()
        ],
    )
    if outcome.status not in ("succeeded", "noop"):
        return []
    await conn.executemany(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " VALUES ($1, $2, $3, $4, $5, 'InService')"
        " ON CONFLICT (cluster, name) DO UPDATE SET instance_type = $3, count = $4, spec = $5,"
        " status = 'InService', updated_at = now()",
        [
            (name, g.name, g.instance_type, g.count, g.model_dump(mode="json"))
            for g in command.spec.instance_groups
        ],
    )
    await conn.execute(
        "INSERT INTO active_cluster (singleton, name) VALUES (true, $1)"
        " ON CONFLICT (singleton) DO UPDATE SET name = coalesce(active_cluster.name, $1)",
        name,
    )
    return [
        ClusterCreated(
            name=name,
            eks_cluster_arn=eks.get("cluster_arn"),
            hyperpod_cluster_arn=hyperpod.get("cluster_arn"),
        )
    ]


async def deleting(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
) -> None:
    await set_status(conn, DeleteCluster.from_payload(command).name, "deleting")


async def deleted(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    name = DeleteCluster.from_payload(outcome.command).name
    if outcome.status not in ("succeeded", "noop"):
        await set_status(conn, name, "delete_failed")
        return []
    await conn.execute("DELETE FROM clusters WHERE name = $1", name)
    return [ClusterDeleted(name=name)]


async def importing(
    conn: asyncpg.Connection, operation_id: uuid.UUID, command: dict[str, Any]
) -> None:
    await set_status(conn, ImportCluster.from_payload(command).spec.eks_cluster_name, "importing")


async def imported(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    name = ImportCluster.from_payload(outcome.command).spec.eks_cluster_name
    if outcome.status not in ("succeeded", "noop"):
        # Nothing was imported: forget the reservation so the name can be used again.
        await conn.execute("DELETE FROM clusters WHERE name = $1 AND status = 'importing'", name)
        return []
    eks = outcome.outputs.get("describe_eks", {})
    hyperpod = outcome.outputs.get("describe_hyperpod", {})
    await conn.execute(
        "UPDATE clusters SET status = 'imported', eks_cluster_arn = $2, hyperpod_cluster_arn = $3,"
        " endpoint = $4, ca_data = $5, oidc_issuer = $6, updated_at = now() WHERE name = $1",
        name,
        eks.get("cluster_arn"),
        hyperpod.get("cluster_arn"),
        eks.get("endpoint"),
        eks.get("ca_data"),
        eks.get("oidc_issuer"),
    )
    return [
        ClusterImported(
            name=name,
            eks_cluster_arn=str(eks.get("cluster_arn")),
            hyperpod_cluster_arn=hyperpod.get("cluster_arn"),
        )
    ]
