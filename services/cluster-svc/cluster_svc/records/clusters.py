"""The `clusters` and `cluster_components` rows: written as a cluster is created, deleted or
imported, its dependencies reconciled or its node recovery set."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from shared.contracts.commands import CreateCluster, DeleteCluster, ImportCluster
from shared.contracts.dependencies import DependenciesReconciled, ReconcileDependencies
from shared.contracts.events import ClusterCreated, ClusterDeleted, ClusterImported, Event
from shared.contracts.nodes import NodeRecoveryChanged, SetNodeRecovery
from shared.read_model import finishing, starting
from shared.stages import FINISHED, FinalHook, Hook, Outcome


async def set_cluster_status(conn: asyncpg.Connection, name: str, status: str) -> None:
    await conn.execute(
        "UPDATE clusters SET status = $2, updated_at = now() WHERE name = $1", name, status
    )


async def record_components(
    conn: asyncpg.Connection, cluster: str, components: Mapping[str, Mapping[str, Any]]
) -> None:
    await conn.executemany(
        "INSERT INTO cluster_components (cluster, component, version, status) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (cluster, component) DO UPDATE SET version = $3, status = $4, updated_at = now()",
        [
            (cluster, c, str(v.get("version", "")), str(v.get("status", "")))
            for c, v in components.items()
        ],
    )


async def _creating(conn: asyncpg.Connection, _: uuid.UUID, command: CreateCluster) -> None:
    await set_cluster_status(conn, command.spec.name, "creating")


async def _created(
    conn: asyncpg.Connection, _: uuid.UUID, command: CreateCluster, outcome: Outcome
) -> list[Event]:
    """Record the result; even a failed create keeps its outputs, so delete can clean it up."""
    name = command.spec.name
    eks = outcome.outputs.get("eks_cluster", {})
    hyperpod = outcome.outputs.get("hyperpod_cluster", {})
    await conn.execute(
        "UPDATE clusters SET status = $2, eks_cluster_arn = $3, hyperpod_cluster_arn = $4,"
        " endpoint = $5, ca_data = $6, oidc_issuer = $7, resources = $8, updated_at = now()"
        " WHERE name = $1",
        name,
        "active" if outcome.status in FINISHED else outcome.status,
        eks.get("cluster_arn"),
        hyperpod.get("cluster_arn"),
        eks.get("endpoint"),
        eks.get("ca_data"),
        eks.get("oidc_issuer"),
        outcome.outputs,
    )
    await record_components(
        conn, name, outcome.outputs.get("dependencies", {}).get("components", {})
    )
    if outcome.status not in FINISHED:
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


async def _deleting(conn: asyncpg.Connection, _: uuid.UUID, command: DeleteCluster) -> None:
    await set_cluster_status(conn, command.name, "deleting")


async def _deleted(
    conn: asyncpg.Connection, _: uuid.UUID, command: DeleteCluster, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        await set_cluster_status(conn, command.name, "delete_failed")
        return []
    await conn.execute("DELETE FROM clusters WHERE name = $1", command.name)
    return [ClusterDeleted(name=command.name)]


async def _importing(conn: asyncpg.Connection, _: uuid.UUID, command: ImportCluster) -> None:
    await set_cluster_status(conn, command.spec.eks_cluster_name, "importing")


async def _imported(
    conn: asyncpg.Connection, _: uuid.UUID, command: ImportCluster, outcome: Outcome
) -> list[Event]:
    name = command.spec.eks_cluster_name
    if outcome.status not in FINISHED:
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


async def _reconciled(
    conn: asyncpg.Connection, _: uuid.UUID, command: ReconcileDependencies, outcome: Outcome
) -> list[Event]:
    name = command.spec.name
    components: dict[str, dict[str, Any]] = outcome.outputs.get("dependencies", {}).get(
        "components", {}
    )
    await record_components(conn, name, components)
    if outcome.status not in FINISHED:
        return []
    return [DependenciesReconciled(cluster=name, components=components)]


async def _recovery_set(
    conn: asyncpg.Connection, _: uuid.UUID, command: SetNodeRecovery, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        return []
    await conn.execute(
        "UPDATE clusters SET spec = jsonb_set(spec, '{node_recovery}', to_jsonb($2::text)),"
        " updated_at = now() WHERE name = $1 AND spec ? 'node_recovery'",
        command.cluster,
        command.mode.value,
    )
    if outcome.status == "noop":
        return []
    previous = outcome.outputs.get("node_recovery", {}).get("previous")
    return [
        NodeRecoveryChanged(cluster=command.cluster, previous=previous, mode=command.mode.value)
    ]


HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    CreateCluster.__name__: (
        starting(CreateCluster, _creating),
        finishing(CreateCluster, _created),
    ),
    DeleteCluster.__name__: (
        starting(DeleteCluster, _deleting),
        finishing(DeleteCluster, _deleted),
    ),
    ImportCluster.__name__: (
        starting(ImportCluster, _importing),
        finishing(ImportCluster, _imported),
    ),
    ReconcileDependencies.__name__: (None, finishing(ReconcileDependencies, _reconciled)),
    SetNodeRecovery.__name__: (None, finishing(SetNodeRecovery, _recovery_set)),
}
