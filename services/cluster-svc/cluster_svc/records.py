"""cluster-svc's read model in PostgreSQL: every SQL statement of the service's workflows.

The workflows' start and finish hooks (written in the transactions that start and end an
operation) keep the `clusters`, `storage_buckets`, `instance_groups` and `cluster_components`
rows true; the node watcher's observations go to `cluster_nodes`. The domain decides, this
module stores: `recorded` attaches each command type's hooks to its workflow.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import asyncpg

from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes.watch import NodeRecord, watch_changes
from cluster_svc.domain.storage import bucket_arn
from shared.contracts.commands import (
    Command,
    CreateCluster,
    CreateStorageBucket,
    DeleteCluster,
    DeleteStorageBucket,
    ImportCluster,
)
from shared.contracts.dependencies import DependenciesReconciled, ReconcileDependencies
from shared.contracts.events import (
    BucketCreated,
    BucketDeleted,
    ClusterCreated,
    ClusterDeleted,
    ClusterImported,
    Event,
)
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    ClusterSoftwareUpdated,
    DeleteInstanceGroup,
    InstanceGroupAdded,
    InstanceGroupDeleted,
    InstanceGroupUpdated,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.contracts.nodes import NodeRecoveryChanged, SetNodeRecovery
from shared.operations import append_event
from shared.stages import FinalHook, Hook, Outcome, Workflow

C = TypeVar("C", bound=Command)
OK = ("succeeded", "noop")


def _starting(
    command: type[C], write: Callable[[asyncpg.Connection, uuid.UUID, C], Awaitable[None]]
) -> Hook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, payload: dict[str, Any]
    ) -> None:
        await write(conn, operation_id, command.from_payload(payload))

    return hook


def _finishing(
    command: type[C],
    write: Callable[[asyncpg.Connection, C, Outcome], Awaitable[list[Event]]],
) -> FinalHook:
    async def hook(
        conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
    ) -> list[Event]:
        return await write(conn, command.from_payload(outcome.command), outcome)

    return hook


# ---- clusters ------------------------------------------------------------------------------


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
    conn: asyncpg.Connection, command: CreateCluster, outcome: Outcome
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
        "active" if outcome.status in OK else outcome.status,
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
    if outcome.status not in OK:
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
    conn: asyncpg.Connection, command: DeleteCluster, outcome: Outcome
) -> list[Event]:
    if outcome.status not in OK:
        await set_cluster_status(conn, command.name, "delete_failed")
        return []
    await conn.execute("DELETE FROM clusters WHERE name = $1", command.name)
    return [ClusterDeleted(name=command.name)]


async def _importing(conn: asyncpg.Connection, _: uuid.UUID, command: ImportCluster) -> None:
    await set_cluster_status(conn, command.spec.eks_cluster_name, "importing")


async def _imported(
    conn: asyncpg.Connection, command: ImportCluster, outcome: Outcome
) -> list[Event]:
    name = command.spec.eks_cluster_name
    if outcome.status not in OK:
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
    conn: asyncpg.Connection, command: ReconcileDependencies, outcome: Outcome
) -> list[Event]:
    name = command.spec.name
    components: dict[str, dict[str, Any]] = outcome.outputs.get("dependencies", {}).get(
        "components", {}
    )
    await record_components(conn, name, components)
    if outcome.status not in OK:
        return []
    return [DependenciesReconciled(cluster=name, components=components)]


async def _recovery_set(
    conn: asyncpg.Connection, command: SetNodeRecovery, outcome: Outcome
) -> list[Event]:
    if outcome.status not in OK:
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


# ---- storage buckets -----------------------------------------------------------------------


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
    conn: asyncpg.Connection, command: CreateStorageBucket, outcome: Outcome
) -> list[Event]:
    if outcome.status not in OK:
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
    conn: asyncpg.Connection, command: DeleteStorageBucket, outcome: Outcome
) -> list[Event]:
    if outcome.status not in OK:
        await _set_bucket_status(conn, command.name, outcome.status)
        return []
    await conn.execute("DELETE FROM storage_buckets WHERE name = $1", command.name)
    return [BucketDeleted(name=command.name, region=command.region)]


# ---- instance groups -----------------------------------------------------------------------


async def _set_group_status(
    conn: asyncpg.Connection, cluster: str, names: list[str] | None, status: str
) -> None:
    if names is None:
        await conn.execute(
            "UPDATE instance_groups SET status = $2, updated_at = now() WHERE cluster = $1",
            cluster,
            status,
        )
        return
    await conn.execute(
        "UPDATE instance_groups SET status = $3, updated_at = now()"
        " WHERE cluster = $1 AND name = ANY($2::text[])",
        cluster,
        names,
        status,
    )


async def _record_subnet(conn: asyncpg.Connection, cluster: str, subnet: dict[str, Any]) -> None:
    """A compute subnet made for a group joins the cluster's recorded resources, so deleting
    the cluster deletes it too."""
    created = list(subnet.get("created") or [])
    if not created:
        return
    resources = await conn.fetchval(
        "SELECT resources FROM clusters WHERE name = $1 FOR UPDATE", cluster
    )
    if resources is None:
        return
    compute = dict(resources.get("compute_subnet") or {})
    compute["created"] = list(dict.fromkeys([*(compute.get("created") or []), *created]))
    zones = dict(compute.get("subnets") or {})
    zone = subnet.get("availability_zone_id")
    if zone and zone not in zones:
        zones[zone] = {
            "subnet_id": subnet["subnet_id"],
            "cidr": subnet.get("cidr"),
            "created": True,
        }
    compute["subnets"] = zones
    await conn.execute(
        "UPDATE clusters SET resources = $2, updated_at = now() WHERE name = $1",
        cluster,
        {**resources, "compute_subnet": compute},
    )


async def _group_adding(conn: asyncpg.Connection, _: uuid.UUID, add: AddInstanceGroup) -> None:
    await conn.execute(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " SELECT $1, $2, $3, $4, $5, 'adding' WHERE EXISTS (SELECT 1 FROM clusters WHERE name = $1)"
        " ON CONFLICT (cluster, name) DO NOTHING",
        add.cluster,
        add.group.name,
        add.group.instance_type,
        add.group.count,
        add.group.model_dump(mode="json"),
    )


async def _group_added(
    conn: asyncpg.Connection, add: AddInstanceGroup, outcome: Outcome
) -> list[Event]:
    subnet = outcome.outputs.get("compute_subnet") or {}
    await _record_subnet(conn, add.cluster, subnet)
    if outcome.status not in OK:
        await conn.execute(
            "DELETE FROM instance_groups WHERE cluster = $1 AND name = $2 AND status = 'adding'",
            add.cluster,
            add.group.name,
        )
        return []
    spec = {**add.group.model_dump(mode="json"), "subnet_id": subnet.get("subnet_id")}
    await conn.execute(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " SELECT $1, $2, $3, $4, $5, 'InService' WHERE EXISTS (SELECT 1 FROM clusters WHERE name = $1)"
        " ON CONFLICT (cluster, name) DO UPDATE SET instance_type = $3, count = $4, spec = $5,"
        " status = 'InService', updated_at = now()",
        add.cluster,
        add.group.name,
        add.group.instance_type,
        add.group.count,
        spec,
    )
    if outcome.status == "noop":
        return []
    return [
        InstanceGroupAdded(
            cluster=add.cluster,
            name=add.group.name,
            instance_type=add.group.instance_type,
            count=add.group.count,
            subnet_id=subnet.get("subnet_id"),
        )
    ]


async def _group_updating(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateInstanceGroup
) -> None:
    await _set_group_status(conn, update.cluster, [update.group], "updating")


async def _group_updated(
    conn: asyncpg.Connection, update: UpdateInstanceGroup, outcome: Outcome
) -> list[Event]:
    diff = (outcome.outputs.get("update_group") or {}).get("diff") or {}
    if outcome.status == "succeeded" and diff:
        requested = {k: v["requested"] for k, v in diff.items()}
        await conn.execute(
            "UPDATE instance_groups SET spec = spec || $3::jsonb,"
            " count = coalesce(($3::jsonb ->> 'count')::int, count), updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            update.cluster,
            update.group,
            requested,
        )
    await _set_group_status(conn, update.cluster, [update.group], "InService")
    if outcome.status != "succeeded" or not diff:
        return []
    return [InstanceGroupUpdated(cluster=update.cluster, name=update.group, changes=diff)]


async def _group_deleting(
    conn: asyncpg.Connection, _: uuid.UUID, delete: DeleteInstanceGroup
) -> None:
    await _set_group_status(conn, delete.cluster, [delete.group], "deleting")


async def _group_deleted(
    conn: asyncpg.Connection, delete: DeleteInstanceGroup, outcome: Outcome
) -> list[Event]:
    if outcome.status not in OK:
        await _set_group_status(conn, delete.cluster, [delete.group], "InService")
        return []
    await conn.execute(
        "DELETE FROM instance_groups WHERE cluster = $1 AND name = $2", delete.cluster, delete.group
    )
    if outcome.status == "noop":
        return []
    return [InstanceGroupDeleted(cluster=delete.cluster, name=delete.group)]


async def _software_updating(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateClusterSoftware
) -> None:
    await _set_group_status(conn, update.cluster, update.spec.instance_groups, "updating_software")


async def _software_updated(
    conn: asyncpg.Connection, update: UpdateClusterSoftware, outcome: Outcome
) -> list[Event]:
    await _set_group_status(conn, update.cluster, update.spec.instance_groups, "InService")
    if outcome.status != "succeeded":
        return []
    names = (outcome.outputs.get("update_software") or {}).get("instance_groups") or []
    return [ClusterSoftwareUpdated(cluster=update.cluster, instance_groups=list(names))]


# ---- the hooks of each command type --------------------------------------------------------

HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    CreateCluster.__name__: (
        _starting(CreateCluster, _creating),
        _finishing(CreateCluster, _created),
    ),
    DeleteCluster.__name__: (
        _starting(DeleteCluster, _deleting),
        _finishing(DeleteCluster, _deleted),
    ),
    ImportCluster.__name__: (
        _starting(ImportCluster, _importing),
        _finishing(ImportCluster, _imported),
    ),
    ReconcileDependencies.__name__: (None, _finishing(ReconcileDependencies, _reconciled)),
    CreateStorageBucket.__name__: (
        _starting(CreateStorageBucket, _bucket_marking("creating")),
        _finishing(CreateStorageBucket, _bucket_created),
    ),
    DeleteStorageBucket.__name__: (
        _starting(DeleteStorageBucket, _bucket_marking("deleting")),
        _finishing(DeleteStorageBucket, _bucket_deleted),
    ),
    AddInstanceGroup.__name__: (
        _starting(AddInstanceGroup, _group_adding),
        _finishing(AddInstanceGroup, _group_added),
    ),
    UpdateInstanceGroup.__name__: (
        _starting(UpdateInstanceGroup, _group_updating),
        _finishing(UpdateInstanceGroup, _group_updated),
    ),
    DeleteInstanceGroup.__name__: (
        _starting(DeleteInstanceGroup, _group_deleting),
        _finishing(DeleteInstanceGroup, _group_deleted),
    ),
    UpdateClusterSoftware.__name__: (
        _starting(UpdateClusterSoftware, _software_updating),
        _finishing(UpdateClusterSoftware, _software_updated),
    ),
    SetNodeRecovery.__name__: (None, _finishing(SetNodeRecovery, _recovery_set)),
}


def recorded(workflows: Mapping[str, Workflow[Any]]) -> dict[str, Workflow[Any]]:
    """The workflows, by command type, with the read-model writes of their command type."""
    result = {}
    for name, workflow in workflows.items():
        on_start, on_finish = HOOKS.get(name, (workflow.on_start, workflow.on_finish))
        result[name] = replace(workflow, on_start=on_start, on_finish=on_finish)
    return result


# ---- the node watcher ----------------------------------------------------------------------

_WATCH_LOCK = "hyperpilot.nodes:"


@dataclass(frozen=True)
class WatchedCluster:
    """An active managed cluster with a HyperPod cluster, as the node watcher reaches it."""

    name: str
    hyperpod_cluster_arn: str
    access: ClusterAccess | None  # None: Kubernetes not reachable from what was recorded


async def watched_clusters(pool: asyncpg.Pool) -> list[WatchedCluster]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, hyperpod_cluster_arn, eks_cluster_arn, endpoint, ca_data FROM clusters"
            " WHERE status = 'active' AND managed AND hyperpod_cluster_arn IS NOT NULL"
        )
    clusters = []
    for row in rows:
        access = None
        if row["endpoint"] and row["ca_data"] and row["eks_cluster_arn"]:
            eks_name = str(row["eks_cluster_arn"]).rsplit("/", 1)[-1]
            access = ClusterAccess(name=eks_name, endpoint=row["endpoint"], ca_data=row["ca_data"])
        clusters.append(WatchedCluster(str(row["name"]), str(row["hyperpod_cluster_arn"]), access))
    return clusters


async def record_nodes(pool: asyncpg.Pool, cluster: str, views: list[dict[str, Any]]) -> int:
    """Store one observation and append the events it implies, in one transaction; returns
    their number. A lock per cluster makes concurrent watchers (several replicas) report each
    change once; a cluster forgotten meanwhile records nothing."""
    try:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", _WATCH_LOCK + cluster)
            baseline = await conn.fetchval(
                "SELECT observed_at FROM cluster_node_watch WHERE cluster = $1", cluster
            )
            rows = await conn.fetch(
                "SELECT node_id, logical_id, instance_group, instance_status, health, view"
                " FROM cluster_nodes WHERE cluster = $1",
                cluster,
            )
            previous = {
                r["node_id"]: NodeRecord(
                    node_id=r["node_id"],
                    instance_group=r["instance_group"],
                    status=r["instance_status"],
                    health=r["health"],
                    logical_id=r["logical_id"],
                    view=dict(r["view"] or {}),
                )
                for r in rows
            }
            changes = watch_changes(cluster, previous, views, baseline=baseline is not None)
            if changes.gone:
                await conn.execute(
                    "DELETE FROM cluster_nodes WHERE cluster = $1 AND node_id = ANY($2::text[])",
                    cluster,
                    changes.gone,
                )
            await conn.executemany(
                "INSERT INTO cluster_nodes (cluster, node_id, logical_id, instance_group,"
                " instance_type, instance_status, health, view)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                " ON CONFLICT (cluster, node_id) DO UPDATE SET logical_id = $3,"
                " instance_group = $4, instance_type = $5, instance_status = $6, health = $7,"
                " view = $8, updated_at = now()",
                [
                    (
                        cluster,
                        v["node_id"],
                        v.get("logical_id"),
                        v["instance_group"],
                        v.get("instance_type"),
                        v["instance_status"],
                        v["health"],
                        v,
                    )
                    for v in changes.changed
                ],
            )
            await conn.execute(
                "INSERT INTO cluster_node_watch (cluster, observed_at) VALUES ($1, now())"
                " ON CONFLICT (cluster) DO UPDATE SET observed_at = now()",
                cluster,
            )
            for event in changes.events:
                await append_event(
                    conn, operation_id=None, domain="cluster", event=event, principal="cluster-svc"
                )
    except asyncpg.ForeignKeyViolationError:
        return 0
    return len(changes.events)
