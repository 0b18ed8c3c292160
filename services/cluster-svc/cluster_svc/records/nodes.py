"""The node watcher's reads and writes: the clusters it watches and the `cluster_nodes` rows of
each observation, with the events the domain decided, in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes.watch import NodeRecord, watch_changes
from shared.operations import append_event

_WATCH_LOCK = "hyperpilot.nodes:"


@dataclass(frozen=True)
class WatchedCluster:
    """An active managed cluster with a HyperPod cluster, as the node watcher reaches it."""

    name: str
    hyperpod_cluster_arn: str
    access: ClusterAccess | None  # None: Kubernetes not reachable from what was recorded
    region: str | None = None  # the cluster's; None: the default region


async def watched_clusters(pool: asyncpg.Pool) -> list[WatchedCluster]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, region, hyperpod_cluster_arn, eks_cluster_arn, endpoint, ca_data"
            " FROM clusters"
            " WHERE status = 'active' AND managed AND hyperpod_cluster_arn IS NOT NULL"
        )
    clusters = []
    for row in rows:
        access = None
        if row["endpoint"] and row["ca_data"] and row["eks_cluster_arn"]:
            eks_name = str(row["eks_cluster_arn"]).rsplit("/", 1)[-1]
            access = ClusterAccess(name=eks_name, endpoint=row["endpoint"], ca_data=row["ca_data"])
        clusters.append(
            WatchedCluster(
                str(row["name"]), str(row["hyperpod_cluster_arn"]), access, str(row["region"])
            )
        )
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
