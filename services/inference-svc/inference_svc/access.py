"""Where a cluster's endpoints live: its Kubernetes API (endpoint and CA from the `clusters` read
model), the recorded endpoints, and the actual state plans and statuses are computed from."""

from __future__ import annotations

from typing import Any, Protocol

import asyncpg

from inference_svc import records
from inference_svc.domain.plan import ClusterFacts, served_kinds
from inference_svc.domain.render import (
    ENDPOINT_LABEL,
    ROLE_LABEL,
    KubeObject,
    render,
    scale_target,
    service_name,
)
from inference_svc.domain.status import Observed, observe_deployment, observe_operator
from shared.boundary import priority_class_object, team_queue
from shared.contracts.gpu import node_fractions
from shared.contracts.inference import EndpointSpec
from shared.errors import PermanentError

USABLE = ("active", "imported")
HYPERPOD_NODES = "sagemaker.amazonaws.com/compute-type=hyperpod"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


class ProxyReply(Protocol):
    status: int
    body: bytes
    content_type: str


KUEUE_API = "kueue.x-k8s.io/v1beta1"  # a team's LocalQueue and WorkloadPriorityClass


class Kube(Protocol):
    async def serves(self, api_version: str, kind: str) -> bool: ...

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> KubeObject | None: ...

    async def apply(self, obj: KubeObject) -> KubeObject: ...

    async def merge_patch(
        self, api_version: str, kind: str, name: str, namespace: str, patch: KubeObject
    ) -> KubeObject: ...

    async def delete(self, api_version: str, kind: str, name: str, namespace: str) -> bool: ...

    async def pods(self, namespace: str, selector: str) -> list[KubeObject]: ...

    async def nodes(self, selector: str = "") -> list[KubeObject]: ...

    async def services(self, namespace: str, selector: str) -> list[KubeObject]: ...

    async def proxy(
        self, namespace: str, service: str, port: int, path: str, body: bytes
    ) -> ProxyReply: ...


KubeFactory = Any  # adapters.k8s.KubeClients: a Kube per cluster endpoint


def _gpus(node: KubeObject) -> int:
    try:
        return int(
            str(((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0))
        )
    except ValueError:
        return 0


class Clusters:
    """Reach a cluster recorded in the read model; read the facts its endpoints are checked on."""

    def __init__(self, pool: asyncpg.Pool, kubes: KubeFactory, endpoint: Any) -> None:
        self.pool = pool
        self.kubes = kubes
        self.endpoint = endpoint  # adapters.k8s.ClusterEndpoint, given by the composition root

    async def kube(self, cluster: str) -> Kube:
        row = await records.cluster(self.pool, cluster)
        if row is None:
            raise PermanentError(
                "ClusterNotFound",
                f"cluster {cluster} is not known here",
                "GET /api/v1/clusters lists the clusters",
            )
        if row["status"] not in USABLE or not row["endpoint"] or not row["ca_data"]:
            raise PermanentError(
                "ClusterNotReady",
                f"cluster {cluster} is {row['status']} and its Kubernetes API is not recorded yet",
                "wait for the cluster's operation to finish",
            )
        resources: dict[str, Any] = row["resources"] or {}
        spec: dict[str, Any] = row["spec"] or {}
        if row["managed"]:
            eks = (resources.get("eks_cluster") or {}).get("cluster_name") or row["name"]
        else:
            eks = spec.get("eks_cluster_name") or row["name"]
        # the EKS token is signed for the cluster's region (clusters live in several)
        endpoint = self.endpoint(eks, row["endpoint"], row["ca_data"])
        kube: Kube = self.kubes(endpoint, row.get("region"))
        return kube

    async def facts(self, cluster: str, spec: EndpointSpec) -> ClusterFacts:
        kube = await self.kube(cluster)
        gpus: dict[str, int] = {}
        partitions: dict[str, dict[str, int]] = {}
        hami: dict[str, tuple[int, int]] = {}
        for node in await kube.nodes(HYPERPOD_NODES):
            labels = (node.get("metadata") or {}).get("labels") or {}
            instance_type = labels.get(INSTANCE_TYPE_LABEL)
            if instance_type:
                # the most one node of the type offers: its groups may be partitioned apart
                gpus[instance_type] = max(gpus.get(instance_type, 0), _gpus(node))
                offered, devices, memory = node_fractions([node])
                held = partitions.setdefault(instance_type, {})
                for resource, count in offered.items():
                    held[resource] = max(held.get(resource, 0), count)
                if devices and (devices, memory) > hami.get(instance_type, (0, 0)):
                    hami[instance_type] = (devices, memory)
        served: set[str] = set()
        for api, kind in served_kinds():
            if await kube.serves(api, kind):
                served.add(kind)
        actual: dict[tuple[str, str], KubeObject] = {}
        for obj in render(spec):
            found = await kube.get(
                obj["apiVersion"], obj["kind"], obj["metadata"]["name"], spec.namespace
            )
            if found is not None:
                actual[(obj["kind"], obj["metadata"]["name"])] = found
        recorded = [
            old
            for old in await records.endpoint_objects(self.pool, cluster, spec.name)
            if (old["kind"], old["name"]) not in actual
            and await kube.get(old["api_version"], old["kind"], old["name"], spec.namespace)
            is not None
        ]
        governed: dict[str, bool | None] = {"team_queue": None, "priority_class": None}
        if spec.team is not None:
            queue = await kube.get(KUEUE_API, "LocalQueue", team_queue(spec.team), spec.namespace)
            governed["team_queue"] = queue is not None
            if spec.priority is not None:
                found = await kube.get(
                    KUEUE_API,
                    "WorkloadPriorityClass",
                    priority_class_object(spec.priority),
                    spec.namespace,
                )
                governed["priority_class"] = found is not None
        return ClusterFacts(
            **governed,
            cluster=cluster,
            gpus_by_instance_type=gpus,
            partitions_by_instance_type=partitions,
            hami_by_instance_type=hami,
            served=frozenset(served),
            actual=actual,
            recorded=recorded,
        )

    async def recorded(self, cluster: str, name: str) -> EndpointSpec:
        spec = await records.endpoint_spec(self.pool, cluster, name)
        if spec is None:
            raise PermanentError(
                "EndpointNotFound",
                f"endpoint {name} is not known on cluster {cluster}",
                "GET /api/v1/endpoints lists the endpoints",
            )
        return EndpointSpec.from_payload(spec)

    async def present(self, cluster: str, spec: EndpointSpec) -> list[KubeObject]:
        """The endpoint's objects that exist now, in apply order (a pool's model Services too)."""
        kube = await self.kube(cluster)
        found: list[KubeObject] = []
        for obj in render(spec):
            actual = await kube.get(
                obj["apiVersion"], obj["kind"], obj["metadata"]["name"], spec.namespace
            )
            if actual is not None:
                found.append(obj)
        if spec.service == "model_pool":
            for model_service in await self.pool_services(kube, spec):
                found.append(model_service)
        return found

    async def pool_services(self, kube: Kube, spec: EndpointSpec) -> list[KubeObject]:
        """The per-model Services of a pool (created as workers are assigned)."""
        services = await kube.services(spec.namespace, f"{ENDPOINT_LABEL}={spec.name}")
        return [
            {"apiVersion": "v1", "kind": "Service", "metadata": s["metadata"]}
            for s in services
            if s["metadata"]["name"] != spec.name
        ]

    async def scale_object(self, cluster: str, spec: EndpointSpec) -> KubeObject | None:
        api_version, kind, name = scale_target(spec)
        return await (await self.kube(cluster)).get(api_version, kind, name, spec.namespace)

    async def in_progress(self, cluster: str, name: str) -> bool:
        """Whether an operation on the endpoint is pending or running."""
        return await records.in_progress(self.pool, cluster, name)

    async def observe(
        self, cluster: str, spec: EndpointSpec, *, creating: bool = False
    ) -> Observed:
        """The endpoint as its cluster shows it; `creating`: an operation is deploying it."""
        kube = await self.kube(cluster)
        api_version, kind, name = scale_target(spec)
        resource = await kube.get(api_version, kind, name, spec.namespace)
        if spec.kind in ("managed", "jumpstart"):
            return observe_operator(resource, creating=creating)
        pods = await kube.pods(spec.namespace, f"{ENDPOINT_LABEL}={spec.name},{ROLE_LABEL}=worker")
        external = spec.service == "external" or bool(
            spec.kind == "sglang" and spec.router and spec.router.service == "external"
        )
        service = None
        if spec.service != "model_pool":
            service = await kube.get("v1", "Service", service_name(spec), spec.namespace)
        return observe_deployment(resource, pods, service, external, creating=creating)
