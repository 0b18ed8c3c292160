"""The nodes area: node health reads, batch node operations, deep health checks, node recovery,
and the node watcher that records nodes and reports failures and replacements as events.

Read routes (`qry.cluster.nodes`, `qry.cluster.node`) take the cluster's references as the
gateway resolved them from the read model: `cluster`, `hyperpod_cluster` (ARN) and
`eks_cluster` (name).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import NOT_FOUND, HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes.actions import action_plan, action_workflow
from cluster_svc.domain.nodes.health import KubeNode, join_nodes, summary
from cluster_svc.domain.nodes.health_checks import health_check_plan, health_check_workflow
from cluster_svc.domain.nodes.recovery import node_recovery_workflow, read_recovery, recovery_plan
from cluster_svc.domain.nodes.watch_plan import (
    ClusterWatch,
    full_cost,
    kubernetes_disagrees,
    next_step,
    only_resync_due,
    read_in_full,
    saw_newest,
)
from shared.aws_budget import WatchBudget
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
from shared.errors import PermanentError, StageError
from shared.logging import get_logger
from shared.queries import BadRequest
from shared.regions import region_scope
from shared.service import ServiceRuntime
from shared.wake import ClusterSignals

log = get_logger("cluster_svc.nodes")

NODES = query_subject("cluster", "nodes")
NODE = query_subject("cluster", "node")


class WatchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    node_watch_seconds: float = Field(
        5.0,
        gt=0,
        description=(
            "How often the node watcher reads each active cluster's Kubernetes nodes and checks"
            " its newest HyperPod event (one AWS call)"
        ),
    )
    node_watch_resync_seconds: float = Field(
        900.0,
        gt=0,
        description="How often the node watcher lists a cluster's nodes in AWS with no event",
    )
    # Defaults: an idle cluster of up to 100 nodes, its events flowing, asks for 20 calls an
    # hour (a full read of 3 calls each 900 s resync, an event check each 300 s between), within
    # its budget of 28; the drift watcher's 28 (an observation of 7 calls each 900 s) and the
    # event queue's long poll keep the cluster within 60 AWS calls an hour at most
    # (docs/performance.md).
    node_watch_aws_calls_per_cluster_hour: float = Field(
        28.0,
        gt=0,
        description="The most AWS calls the node watcher makes per cluster per hour (all replicas)",
    )
    node_watch_evented_seconds: float = Field(
        300.0,
        gt=0,
        description=(
            "While HyperPod's node health events for a cluster are read (its region's event"
            " queue), how often the node watcher still checks the cluster's AWS side; an event"
            " has it read at once"
        ),
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


def build(aws: AwsClients, ports: ClusterPorts, signals: ClusterSignals | None = None) -> Area:
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
        settings = WatchSettings()
        budget = WatchBudget(runtime.pool, "nodes", settings.node_watch_aws_calls_per_cluster_hour)
        nodes = NodeWatcher(
            runtime.pool,
            port,
            budget,
            resync=settings.node_watch_resync_seconds,
            signals=signals,
            quiet=settings.node_watch_evented_seconds,
        )
        await nodes.run(settings.node_watch_seconds)

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


class NodeWatcher:
    """Every `interval` seconds, each active managed cluster's nodes observed and recorded:
    Kubernetes every round, AWS as `domain/nodes/watch_plan.py` decides (a full read on a new
    HyperPod event or every `resync` seconds, else one call for the newest event), within the
    cluster's declared AWS calls per hour (`budget`, shared by every replica): a round the
    budget cannot pay for leaves the cluster's AWS side as last read.

    With `signals` (the node health events this replica receives, shared/wake.py), a cluster an
    event names is read in full at once, on credit down to one hour's budget of debt, and
    while its region's events flow a settled cluster's AWS side is checked at most every
    `quiet` seconds."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        port: HyperPodNodes,
        budget: WatchBudget,
        *,
        resync: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        signals: ClusterSignals | None = None,
        quiet: float = 60.0,
    ) -> None:
        self.pool = pool
        self.port = port
        self.budget = budget
        self.resync = resync
        self.clock = clock
        self.signals = signals
        self.quiet = quiet
        self.clusters: dict[str, ClusterWatch] = {}
        self.refreshed = 0  # clusters read at once on an event, for reports and tests

    async def run(self, interval: float) -> None:
        due = time.monotonic()
        while True:
            if time.monotonic() >= due:
                await self._guarded(self.once())
                due = time.monotonic() + interval
            left = max(0.0, due - time.monotonic())
            if self.signals is None:
                await asyncio.sleep(left)
                continue
            clusters = await self.signals.wait(left)
            if clusters:
                await self._guarded(self.refresh(clusters))

    async def _guarded(self, work: Awaitable[int]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("node watch pass failed", error=f"{type(exc).__name__}: {exc}")

    async def refresh(self, arns: set[str]) -> int:
        """Node health events named these HyperPod clusters: each watched one read now, AWS and
        Kubernetes; returns the number of events appended."""
        clusters = [
            c for c in await records.watched_clusters(self.pool) if c.hyperpod_cluster_arn in arns
        ]
        for cluster in clusters:
            self.clusters.setdefault(cluster.name, ClusterWatch()).changed = True
        self.refreshed += len(clusters)
        started = time.monotonic()
        appended = sum(await asyncio.gather(*(self._cluster(c, evented=True) for c in clusters)))
        if clusters:
            log.info(
                "node health event: nodes read now",
                clusters=[c.name for c in clusters],
                unread=[c.name for c in clusters if self.clusters[c.name].changed],
                events=appended,
                seconds=round(time.monotonic() - started, 3),
            )
        return appended

    async def once(self) -> int:
        """One pass over the active managed clusters; returns the number of events appended."""
        clusters = await records.watched_clusters(self.pool)
        for gone in set(self.clusters) - {c.name for c in clusters}:
            del self.clusters[gone]
        return sum(await asyncio.gather(*(self._cluster(c) for c in clusters)))

    async def _newest(self, arn: str, watch: ClusterWatch) -> str | None:
        try:
            return await self.port.newest_event(arn)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                raise
            # No events kept for this cluster (not Continuous provisioning): polled instead.
            watch.events = False
            return None

    async def _aws(
        self,
        cluster: records.WatchedCluster,
        watch: ClusterWatch,
        kube_ids: frozenset[str] | None,
        evented: bool = False,
    ) -> None:
        arn = cluster.hyperpod_cluster_arn
        if evented:
            # An event said the nodes changed: the whole read now, on credit down to an hour's
            # budget of debt, so a node failure is seen within seconds even when a create's
            # and a scale-up's reads have spent the burst. The debt is repaid before the next
            # check; past it (a storm of events) the cluster is read when the refill allows.
            cost = full_cost(watch)
            if await self.budget.spend(cluster.name, cost, overdraft=self.budget.per_hour):
                await self._read(cluster, watch, kube_ids, cost)
            return
        covered = self.signals is not None and self.signals.covers(arn)
        step = next_step(watch, self.clock(), self.resync, self.quiet if covered else None)
        if step == "quiet":
            return
        checked = step == "events"
        if not checked and only_resync_due(watch):
            # The resync, once a call is affordable, the rest on credit (an overdraft of the
            # read less one call): saving up for the whole read would stop the checks (or
            # starve the resync) meanwhile.
            cost = full_cost(watch)
            if await self.budget.spend(cluster.name, cost, overdraft=cost - 1):
                await self._read(cluster, watch, kube_ids, cost)
            return
        if checked:
            if not await self.budget.spend(cluster.name, 1):
                return
            watch.checked_at = self.clock()
            if not saw_newest(watch, await self._newest(arn, watch)) and watch.events:
                return
        cost = full_cost(watch) - (0 if watch.events else 1)
        if checked and watch.events:
            # A new event, found by a check the budget could pay for: the read that follows is
            # borrowed (at most one read's worth of debt, repaid before the next check), so a
            # change is seen within a check's refill, not after a full read's.
            await self.budget.charge(cluster.name, cost)
        elif not await self.budget.spend(cluster.name, cost):
            return
        await self._read(cluster, watch, kube_ids, cost)

    async def _read(
        self,
        cluster: records.WatchedCluster,
        watch: ClusterWatch,
        kube_ids: frozenset[str] | None,
        cost: int,
    ) -> None:
        """A full read of the cluster's AWS side, `cost` calls of it already taken."""
        arn = cluster.hyperpod_cluster_arn
        # The newest event first: one that lands during the listing is newer, and read again.
        newest = await self._newest(arn, watch) if watch.events else None
        instances, recovery = await asyncio.gather(
            self.port.list_nodes(arn), self.port.node_recovery(arn)
        )
        mode = recovery.mode if recovery is not None else None
        read_in_full(watch, self.clock(), instances, mode, newest, kube_ids)
        # The listing took more pages than the last one: those calls are spent too.
        await self.budget.charge(cluster.name, full_cost(watch) - (0 if watch.events else 1) - cost)

    async def _cluster(self, cluster: records.WatchedCluster, evented: bool = False) -> int:
        with region_scope(cluster.region):  # its reads go to the cluster's region
            return await self._cluster_in_region(cluster, evented)

    async def _cluster_in_region(self, cluster: records.WatchedCluster, evented: bool) -> int:
        watch = self.clusters.setdefault(cluster.name, ClusterWatch())
        access = cluster.access
        kube = await _kube_or_none(self.port, access) if access is not None else None
        kube_ids = None
        if kube is not None:
            kube_ids = frozenset(k.instance_id for k in kube if k.instance_id)
            kubernetes_disagrees(watch, kube_ids)
        try:
            await self._aws(cluster, watch, kube_ids, evented)
        except StageError as exc:
            log.info("nodes not observable", cluster=cluster.name, error=str(exc))
            return 0
        if watch.observed_at is None:
            return 0
        views = join_nodes(watch.instances, kube, watch.recovery)
        return await records.record_nodes(self.pool, cluster.name, views)
