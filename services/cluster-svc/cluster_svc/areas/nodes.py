"""The nodes area: node health reads, batch node operations, deep health checks, node recovery,
and the node watcher that records nodes and reports failures and replacements as events.

Read routes (`qry.cluster.nodes`, `qry.cluster.node`) take the cluster's references as the
gateway resolved them from the read model: `cluster`, `hyperpod_cluster` (ARN) and
`eks_cluster` (name).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import asyncpg
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes import (
    KubeNode,
    NodeRecord,
    action_plan,
    action_workflow,
    diff_nodes,
    health_check_plan,
    health_check_workflow,
    join_nodes,
    node_recovery_workflow,
    read_recovery,
    record_of,
    recovery_plan,
    summary,
)
from shared.contracts.nodes import (
    NODE_ACTION_COMMANDS,
    NODE_ID_PATTERN,
    DeleteNodes,
    RebootNodes,
    ReplaceNodes,
    SetNodeRecovery,
    StartDeepHealthCheck,
)
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.logging import get_logger
from shared.operations import append_event
from shared.queries import BadRequest
from shared.service import ServiceRuntime

log = get_logger("cluster_svc.nodes")

NODES = query_subject("cluster", "nodes")
NODE = query_subject("cluster", "node")
_WATCH_LOCK = "hyperpilot.nodes:"


class WatchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    node_watch_seconds: float = Field(
        5.0, gt=0, description="How often the node watcher lists each active cluster's nodes"
    )


def _ref(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required", "ask through GET /api/v1/clusters/{name}/nodes")
    return value


async def _kube_or_none(port: HyperPodNodes, access: ClusterAccess) -> list[KubeNode] | None:
    try:
        return await port.kube_nodes(access)
    except StageError as exc:
        log.warning("kubernetes nodes unreadable", cluster=access.name, error=str(exc))
        return None


async def observe(
    port: HyperPodNodes, hyperpod_cluster: str, access: ClusterAccess | None
) -> tuple[str | None, list[dict[str, Any]], bool]:
    """(NodeRecovery, one health view per node, whether Kubernetes was readable)."""
    instances, recovery = await asyncio.gather(
        port.list_nodes(hyperpod_cluster), port.node_recovery(hyperpod_cluster)
    )
    kube = await _kube_or_none(port, access) if access is not None else None
    mode = recovery.mode if recovery is not None else None
    return mode, join_nodes(instances, kube, mode), kube is not None


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    kube = ports.kube if isinstance(ports.kube, EksKubeFactory) else EksKubeFactory(aws.region)
    port = HyperPodNodes(aws, kube)

    async def nodes(request: dict[str, Any]) -> Any:
        hyperpod = _ref(request, "hyperpod_cluster")
        access = await port.eks_access(_ref(request, "eks_cluster"))
        mode, views, readable = await observe(port, hyperpod, access)
        return {
            "cluster": request.get("cluster"),
            "node_recovery": mode,
            "kubernetes_readable": readable,
            "summary": summary(views),
            "nodes": views,
        }

    async def node(request: dict[str, Any]) -> Any:
        hyperpod = _ref(request, "hyperpod_cluster")
        node_id = _ref(request, "node_id")
        if not re.match(NODE_ID_PATTERN, node_id):
            raise BadRequest(
                f"{node_id!r} is not a node id", "use a node_id like i-0123456789abcdef0"
            )
        access = await port.eks_access(_ref(request, "eks_cluster"))
        mode, views, readable = await observe(port, hyperpod, access)
        view = next((v for v in views if v["node_id"] == node_id), None)
        if view is None:
            return None
        details, events = await asyncio.gather(
            port.describe_node(hyperpod, node_id), port.node_events(hyperpod, node_id)
        )
        return {
            **view,
            "node_recovery": mode,
            "kubernetes_readable": readable,
            "details": _jsonable(details or {}),
            "events": events,
        }

    async def plan_action(payload: dict[str, Any], kind: str) -> Plan:
        command = NODE_ACTION_COMMANDS[kind].from_payload(payload)
        return action_plan(command, await port.list_nodes(command.hyperpod_cluster))

    async def plan_reboot(payload: dict[str, Any]) -> Plan:
        return await plan_action(payload, "reboot")

    async def plan_replace(payload: dict[str, Any]) -> Plan:
        return await plan_action(payload, "replace")

    async def plan_delete(payload: dict[str, Any]) -> Plan:
        return await plan_action(payload, "delete")

    async def plan_health_check(payload: dict[str, Any]) -> Plan:
        command = StartDeepHealthCheck.from_payload(payload)
        return health_check_plan(command, await port.list_nodes(command.hyperpod_cluster))

    async def plan_recovery(payload: dict[str, Any]) -> Plan:
        command = SetNodeRecovery.from_payload(payload)
        return recovery_plan(command, await read_recovery(port, command))

    async def watcher(runtime: ServiceRuntime) -> None:
        await watch(runtime.pool, port, WatchSettings().node_watch_seconds)

    return Area(
        workflows={
            RebootNodes.__name__: action_workflow(port, "reboot"),
            ReplaceNodes.__name__: action_workflow(port, "replace"),
            DeleteNodes.__name__: action_workflow(port, "delete"),
            StartDeepHealthCheck.__name__: health_check_workflow(port),
            SetNodeRecovery.__name__: node_recovery_workflow(port),
        },
        planners={
            RebootNodes.__name__: plan_reboot,
            ReplaceNodes.__name__: plan_replace,
            DeleteNodes.__name__: plan_delete,
            StartDeepHealthCheck.__name__: plan_health_check,
            SetNodeRecovery.__name__: plan_recovery,
        },
        read_routes={NODES: nodes, NODE: node},
        companions=(watcher,),
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


# ---- the node watcher ----------------------------------------------------------------------


async def watch(pool: asyncpg.Pool, port: HyperPodNodes, interval: float) -> None:
    """Every `interval` seconds, observe each active managed cluster and record what changed."""
    while True:
        try:
            await watch_once(pool, port)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("node watch pass failed", error=f"{type(exc).__name__}: {exc}")
        await asyncio.sleep(interval)


async def watch_once(pool: asyncpg.Pool, port: HyperPodNodes) -> int:
    """One pass over the active managed clusters; returns the number of events appended."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, hyperpod_cluster_arn, eks_cluster_arn, endpoint, ca_data FROM clusters"
            " WHERE status = 'active' AND managed AND hyperpod_cluster_arn IS NOT NULL"
        )
    counts = await asyncio.gather(*(_watch_cluster(pool, port, row) for row in rows))
    return sum(counts)


async def _watch_cluster(pool: asyncpg.Pool, port: HyperPodNodes, row: asyncpg.Record) -> int:
    name = str(row["name"])
    access = None
    if row["endpoint"] and row["ca_data"] and row["eks_cluster_arn"]:
        eks_name = str(row["eks_cluster_arn"]).rsplit("/", 1)[-1]
        access = ClusterAccess(name=eks_name, endpoint=row["endpoint"], ca_data=row["ca_data"])
    try:
        _, views, _ = await observe(port, str(row["hyperpod_cluster_arn"]), access)
    except StageError as exc:
        log.info("nodes not observable", cluster=name, error=str(exc))
        return 0
    try:
        return await record(pool, name, views)
    except asyncpg.ForeignKeyViolationError:
        return 0  # the cluster was forgotten meanwhile


async def record(pool: asyncpg.Pool, cluster: str, views: list[dict[str, Any]]) -> int:
    """Store one observation and append the events it implies, in one transaction. A lock per
    cluster makes concurrent watchers (several replicas) report each change once."""
    current = {v["node_id"]: record_of(v) for v in views}
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
        events = diff_nodes(cluster, previous, current) if baseline is not None else []
        gone = [k for k in previous if k not in current]
        if gone:
            await conn.execute(
                "DELETE FROM cluster_nodes WHERE cluster = $1 AND node_id = ANY($2::text[])",
                cluster,
                gone,
            )
        changed = [
            v for v in views if v["node_id"] not in previous or previous[v["node_id"]].view != v
        ]
        await conn.executemany(
            "INSERT INTO cluster_nodes (cluster, node_id, logical_id, instance_group,"
            " instance_type, instance_status, health, view)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            " ON CONFLICT (cluster, node_id) DO UPDATE SET logical_id = $3, instance_group = $4,"
            " instance_type = $5, instance_status = $6, health = $7, view = $8, updated_at = now()",
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
                for v in changed
            ],
        )
        await conn.execute(
            "INSERT INTO cluster_node_watch (cluster, observed_at) VALUES ($1, now())"
            " ON CONFLICT (cluster) DO UPDATE SET observed_at = now()",
            cluster,
        )
        for event in events:
            await append_event(
                conn, operation_id=None, domain="cluster", event=event, principal="cluster-svc"
            )
    return len(events)
