"""The capacity area: GPUs, EFA and memory total / allocated / free per node, instance group,
cluster and fleet, from the EKS cluster's Nodes and Pods (`cluster_svc.domain.capacity`).

Read routes: `qry.cluster.capacity` takes `cluster` and `eks_cluster` (the names the gateway
resolved from its read model); `qry.cluster.fleet-capacity` takes `clusters` (a list of those)
and `unreadable` (clusters the gateway could not name an EKS cluster for, with why).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import orjson

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR, HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory, KubeClient
from cluster_svc.adapters.pricing import PriceList
from cluster_svc.areas import Area
from cluster_svc.domain.capacity import cluster_capacity, fleet, summarize, unreadable
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import KubeObject
from shared.contracts.capacity import ClusterCapacity, ClusterSummary
from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.queries import BadRequest

CAPACITY = query_subject("cluster", "capacity")
FLEET_CAPACITY = query_subject("cluster", "fleet-capacity")


def _name(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required", "ask through GET /api/v1/clusters/{name}/capacity")
    return value


async def _all_pods(kube: KubeClient) -> list[KubeObject]:
    """Every pod of every namespace, as the API serves it (camelCase keys): the JSON read as
    is, not through the client's models (thousands of pods are a read, not a conversion)."""

    def call() -> list[KubeObject]:
        response: Any = kube.core.list_pod_for_all_namespaces(_preload_content=False)
        items: list[KubeObject] = orjson.loads(response.data).get("items") or []
        return items

    try:
        return await asyncio.to_thread(call)
    except StageError:
        raise
    except Exception as exc:
        raise kube.error(exc, "list pods") from exc


def build(aws: AwsClients, ports: ClusterPorts, prices: PriceList) -> Area:
    kube = ports.kube if isinstance(ports.kube, EksKubeFactory) else EksKubeFactory(aws.region)
    port = HyperPodNodes(aws, kube)

    async def read(cluster: str, eks_cluster: str) -> ClusterCapacity:
        client = kube(await port.eks_access(eks_cluster))
        nodes, pods, table = await asyncio.gather(
            client.nodes(HYPERPOD_NODE_SELECTOR), _all_pods(client), prices.table()
        )
        return cluster_capacity(cluster, nodes, pods, table, datetime.now(UTC))

    async def capacity(request: dict[str, Any]) -> Any:
        answer = await read(_name(request, "cluster"), _name(request, "eks_cluster"))
        return answer.model_dump(mode="json")

    async def summary(ref: dict[str, Any]) -> ClusterSummary:
        cluster = _name(ref, "cluster")
        try:
            return summarize(await read(cluster, _name(ref, "eks_cluster")))
        except StageError as exc:
            return unreadable(cluster, exc.message)

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
