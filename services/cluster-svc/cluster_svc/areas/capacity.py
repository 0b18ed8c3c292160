"""The capacity area: GPUs, EFA and memory total / allocated / free per node, instance group,
cluster and fleet, from the EKS cluster's Nodes and Pods (`cluster_svc.domain.capacity`).

Read routes: `qry.cluster.capacity` takes `cluster` and `eks_cluster` (the names the gateway
resolved from its read model) and, for one page of the nodes, `limit` and `after` (the
`next_after` of the page before); `qry.cluster.fleet-capacity` takes `clusters` (a list of those)
and `unreadable` (clusters the gateway could not name an EKS cluster for, with why).

The reads answer from the cluster's watched model (`adapters/capacity_watch.py`), started by
the first read; while its first lists are not done within its bound, from a full list instead.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.capacity_watch import CapacityWatches, ClusterCapacityWatch
from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR, HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory, KubeClient
from cluster_svc.adapters.pricing import PriceList
from cluster_svc.areas import Area
from cluster_svc.domain.capacity import cluster_capacity, fleet, summarize, unreadable
from cluster_svc.domain.capacity_model import NodeKey, kept_node, kept_pod
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.prices import infrastructure_per_hour, with_infrastructure
from shared.contracts.capacity import ClusterCapacity, ClusterSummary, InfrastructureFacts
from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.queries import BadRequest
from shared.regions import region_scope

CAPACITY = query_subject("cluster", "capacity")
FLEET_CAPACITY = query_subject("cluster", "fleet-capacity")


def _name(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required", "ask through GET /api/v1/clusters/{name}/capacity")
    return value


MAX_PAGE = 500


def _infrastructure(request: dict[str, Any]) -> InfrastructureFacts:
    """The NAT gateways and file systems the gateway read from the cluster's record."""
    try:
        return InfrastructureFacts.model_validate(request.get("infrastructure") or {})
    except ValidationError as exc:
        raise BadRequest(
            f"infrastructure is not the cluster's recorded NAT gateways and file systems: {exc}",
            "ask through GET /api/v1/clusters/{name}/capacity",
        ) from exc


def _page(request: dict[str, Any]) -> tuple[NodeKey | None, int | None]:
    """The page of nodes asked for: (the cursor, the limit); (None, None) for every node."""
    limit = request.get("limit")
    if limit is not None and (
        not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE
    ):
        raise BadRequest(
            f"limit {limit!r} is not a page size: an integer from 1 to {MAX_PAGE}",
            "leave limit out for every node, or ask for at most 500",
        )
    after = request.get("after")
    if after is None:
        return None, limit
    if not isinstance(after, str) or after.count("/") != 1:
        raise BadRequest(
            f"after {after!r} is not a node cursor (<instance_group>/<node name>)",
            "send the next_after of the page before, or leave after out for the first page",
        )
    group, name = after.split("/")
    return (group, name), limit


def cursor(key: NodeKey) -> str:
    return f"{key[0]}/{key[1]}"


def build(
    aws: AwsClients,
    ports: ClusterPorts,
    prices: PriceList,
    watches: CapacityWatches | None = None,
) -> Area:
    kube = ports.kube if isinstance(ports.kube, EksKubeFactory) else EksKubeFactory(aws.region)
    port = HyperPodNodes(aws, kube)
    watched = watches if watches is not None else CapacityWatches()

    async def watch_of(eks_cluster: str) -> tuple[KubeClient, ClusterCapacityWatch | None]:
        access = await port.eks_access(eks_cluster)
        client = kube(access)
        return client, await watched.of(eks_cluster, client)

    async def live(cluster: str, client: KubeClient) -> ClusterCapacity:
        nodes, pods, table = await asyncio.gather(
            client.nodes(HYPERPOD_NODE_SELECTOR, kept_node),
            client.all_pods(kept_pod),
            prices.table(),
        )
        return cluster_capacity(cluster, nodes, pods, table, datetime.now(UTC))

    async def read(
        cluster: str, eks_cluster: str, after: NodeKey | None, limit: int | None
    ) -> ClusterCapacity:
        client, watch = await watch_of(eks_cluster)
        table = await prices.table()
        now = datetime.now(UTC)
        if watch is not None:
            (answer, more), total = watch.read(
                lambda m: (m.capacity(cluster, table, now, after=after, limit=limit), m.node_count)
            )
        else:
            whole = await live(cluster, client)
            views = [
                v for v in whole.nodes if after is None or (v.instance_group or "", v.name) > after
            ]
            more = limit is not None and len(views) > limit
            answer = whole.model_copy(update={"nodes": views[:limit] if limit else views})
            total = len(whole.nodes)
        last = answer.nodes[-1] if more and answer.nodes else None
        return answer.model_copy(
            update={
                "node_total": total,
                "next_after": cursor((last.instance_group or "", last.name)) if last else None,
            }
        )

    async def capacity(request: dict[str, Any]) -> Any:
        after, limit = _page(request)
        facts = _infrastructure(request)
        answer = await read(_name(request, "cluster"), _name(request, "eks_cluster"), after, limit)
        return with_infrastructure(answer, facts, await prices.table()).model_dump(mode="json")

    async def summary(ref: dict[str, Any]) -> ClusterSummary:
        with region_scope(ref.get("region")):  # each cluster of the fleet in its own region
            return await summary_here(ref)

    async def summary_here(ref: dict[str, Any]) -> ClusterSummary:
        cluster = _name(ref, "cluster")
        facts = _infrastructure(ref)
        try:
            client, watch = await watch_of(_name(ref, "eks_cluster"))
            table = await prices.table()
            if watch is not None:
                found = watch.read(lambda m: m.summary(cluster, table))
            else:
                found = summarize(await live(cluster, client))
        except StageError as exc:
            return unreadable(cluster, exc.message)
        extra = infrastructure_per_hour(facts, table)
        return found.model_copy(update={"cost_per_hour": round(found.cost_per_hour + extra, 4)})

    async def fleet_capacity(request: dict[str, Any]) -> Any:
        refs = request.get("clusters") or []
        skipped = request.get("unreadable") or []
        if not isinstance(refs, list) or not isinstance(skipped, list):
            raise BadRequest(
                "clusters and unreadable are lists", "ask through GET /api/v1/capacity"
            )
        read_ones = await asyncio.gather(*(summary(ref) for ref in refs))
        others = [unreadable(_name(s, "cluster"), str(s.get("error") or "")) for s in skipped]
        return fleet([*read_ones, *others], await prices.table()).model_dump(mode="json")

    return Area(read_routes={CAPACITY: capacity, FLEET_CAPACITY: fleet_capacity})
