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

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes.actions import action_plan, action_workflow
from cluster_svc.domain.nodes.health import KubeNode, join_nodes, summary
from cluster_svc.domain.nodes.health_checks import health_check_plan, health_check_workflow
from cluster_svc.domain.nodes.recovery import node_recovery_workflow, read_recovery, recovery_plan
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
from shared.queries import BadRequest
from shared.service import ServiceRuntime

log = get_logger("cluster_svc.nodes")

NODES = query_subject("cluster", "nodes")
NODE = query_subject("cluster", "node")


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
        workflows=records.recorded(
            {
                RebootNodes.__name__: action_workflow(port, "reboot"),
                ReplaceNodes.__name__: action_workflow(port, "replace"),
                DeleteNodes.__name__: action_workflow(port, "delete"),
                StartDeepHealthCheck.__name__: health_check_workflow(port),
                SetNodeRecovery.__name__: node_recovery_workflow(port),
            }
        ),
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
    clusters = await records.watched_clusters(pool)
    return sum(await asyncio.gather(*(_watch_cluster(pool, port, c) for c in clusters)))


async def _watch_cluster(
    pool: asyncpg.Pool, port: HyperPodNodes, cluster: records.WatchedCluster
) -> int:
    try:
        _, views, _ = await observe(port, cluster.hyperpod_cluster_arn, cluster.access)
    except StageError as exc:
        log.info("nodes not observable", cluster=cluster.name, error=str(exc))
        return 0
    return await records.record_nodes(pool, cluster.name, views)
