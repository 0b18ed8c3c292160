"""Where a cluster's workloads live: its endpoint from the `clusters` read model, the Kubernetes
client for it, and the actual state the rules and plans are computed from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import asyncpg

from shared.boundary import priority_class_object, team_queue
from shared.contracts.gpu import node_fractions
from shared.contracts.workloads import NAMESPACE, S3_CLAIM
from shared.errors import PermanentError
from workload_svc import records
from workload_svc.domain.elastic_rules import HyperPodFacts, hyperpod_facts
from workload_svc.domain.instance_types import accelerators
from workload_svc.domain.plan import ClusterFacts, GroupFacts
from workload_svc.domain.render import GROUP_LABEL, HPJ_API, HPJ_KIND, JOB_LABEL, RAY_API, RAY_KIND

KubeObject = dict[str, Any]
USABLE = ("active", "imported")
# HAMi's device plugin DaemonSet (its chart, release hami in kube-system): HAMi is installed
HAMI_PLUGIN = ("hami-device-plugin", "kube-system")
KUEUE_API = "kueue.x-k8s.io/v1beta1"  # the LocalQueue and WorkloadPriorityClass of a team


class Kube(Protocol):
    async def serves(self, api_version: str, kind: str) -> bool: ...

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> KubeObject | None: ...

    async def apply(self, obj: KubeObject, *, dry_run: bool = False) -> KubeObject: ...

    async def delete(self, api_version: str, kind: str, name: str, namespace: str) -> bool: ...

    async def pods(self, namespace: str, selector: str) -> list[KubeObject]: ...

    async def nodes(self, selector: str) -> list[KubeObject]: ...

    async def claim_exists(self, namespace: str, name: str) -> bool: ...

    async def pod(self, namespace: str, name: str) -> KubeObject | None: ...

    async def scrape(self, namespace: str, pod: str, port: int, path: str = "metrics") -> str: ...

    async def bearer(self) -> str: ...

    async def pods_in(self, namespace: str | None, selector: str = "") -> list[KubeObject]: ...

    async def events(
        self, namespace: str | None, field_selector: str | None, limit: int
    ) -> list[KubeObject]: ...

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str | None = None,
        previous: bool = False,
        tail: int | None = None,
    ) -> str: ...

    async def put_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        annotations: dict[str, str] | None = None,
    ) -> None: ...

    async def secret_exists(self, namespace: str, name: str) -> bool: ...

    async def secret_keys(self, namespace: str) -> list[KubeObject]: ...


class Endpoint(Protocol):
    eks_name: str
    endpoint: str
    ca_data: str


class HyperPodClusters(Protocol):
    async def describe_cluster(self, region: str, cluster: str) -> dict[str, Any] | None: ...


class KubeFactory(Protocol):
    def __call__(self, target: Any, region: str | None = None) -> Kube: ...


EndpointMaker = Any  # adapters.k8s.ClusterEndpoint: built by the caller that knows the adapter


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def _eks_name(row: dict[str, Any]) -> str:
    resources: dict[str, Any] = row["resources"] or {}
    spec: dict[str, Any] = row["spec"] or {}
    if row["managed"]:
        return str((resources.get("eks_cluster") or {}).get("cluster_name") or row["name"])
    return str(spec.get("eks_cluster_name") or row["name"])


class Clusters:
    """Reach a cluster recorded in the read model; read the facts its jobs are checked against."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        kubes: KubeFactory,
        endpoint: EndpointMaker,
        hyperpod: HyperPodClusters | None = None,
    ) -> None:
        self.pool = pool
        self.kubes = kubes
        self.endpoint = endpoint
        self.hyperpod = hyperpod

    async def row(self, cluster: str, *, any_status: bool = False) -> dict[str, Any]:
        """The cluster's record; refused unless it is usable (active or imported) with its
        Kubernetes API recorded, or (`any_status`, for reads) the API is recorded at all."""
        row = await records.cluster(self.pool, cluster)
        if row is None:
            raise PermanentError(
                "ClusterNotFound",
                f"cluster {cluster} is not known here",
                "GET /api/v1/clusters lists the clusters",
            )
        usable = any_status or row["status"] in USABLE
        if not usable or not row["endpoint"] or not row["ca_data"]:
            raise PermanentError(
                "ClusterNotReady",
                f"cluster {cluster} is {row['status']} and its Kubernetes API is not recorded yet",
                "wait for the cluster's operation to finish",
            )
        return row

    async def kube(self, cluster: str, *, any_status: bool = False) -> Kube:
        row = await self.row(cluster, any_status=any_status)
        # the EKS token is signed for the cluster's region (clusters live in several)
        endpoint = self.endpoint(_eks_name(row), row["endpoint"], row["ca_data"])
        return self.kubes(endpoint, row.get("region"))

    async def eks_name(self, cluster: str) -> str:
        """The EKS cluster's name of a usable cluster."""
        return _eks_name(await self.row(cluster))

    async def groups(self, cluster: str) -> dict[str, str]:
        return await records.instance_groups(self.pool, cluster)

    async def facts(
        self,
        cluster: str,
        api_version: str,
        kind: str,
        name: str,
        group: str | None,
        secrets: Iterable[str] = (),
        elastic: bool = False,
        namespace: str = NAMESPACE,
        team: str | None = None,
        priority: str | None = None,
    ) -> ClusterFacts:
        """What a job is checked against; `secrets`: the Kubernetes Secrets its secret_env
        names (those missing from the jobs' namespace are `missing_secrets`); `elastic`: read
        the HyperPod cluster's description too (the elastic rules need it)."""
        kube = await self.kube(cluster)
        recorded = await self.groups(cluster)
        nodes = await kube.nodes("sagemaker.amazonaws.com/compute-type=hyperpod")
        by_group: dict[str, list[KubeObject]] = {}
        for node in nodes:
            label = ((node.get("metadata") or {}).get("labels") or {}).get(GROUP_LABEL)
            if label:
                by_group.setdefault(label, []).append(node)
        groups: dict[str, GroupFacts] = {}
        for group_name in set(recorded) | set(by_group):
            members = by_group.get(group_name, [])
            gpus = [
                _quantity((n.get("status") or {}).get("allocatable", {}).get("nvidia.com/gpu", 0))
                for n in members
            ]
            efa = [
                _quantity(
                    (n.get("status") or {}).get("allocatable", {}).get("vpc.amazonaws.com/efa", 0)
                )
                for n in members
            ]
            instance_type = recorded.get(group_name) or (
                ((members[0].get("metadata") or {}).get("labels") or {}).get(
                    "node.kubernetes.io/instance-type"
                )
                if members
                else None
            )
            published = accelerators(instance_type)
            partitions, hami_devices, hami_memory = node_fractions(members)
            groups[group_name] = GroupFacts(
                name=group_name,
                instance_type=instance_type,
                nodes=len(members),
                gpus_per_node=min(gpus) if gpus else (published[0] if published else None),
                efa_per_node=min(efa) if efa else (published[1] if published else None),
                partitions=partitions,
                hami_devices=hami_devices,
                hami_memory_mib=hami_memory,
            )
        kinds: set[str] = set()
        for api, served in ((HPJ_API, HPJ_KIND), (RAY_API, RAY_KIND)):
            if served == kind and await kube.serves(api, served):
                kinds.add(served)
        return ClusterFacts(
            groups=groups,
            storage=await kube.claim_exists(namespace, S3_CLAIM),
            kinds=frozenset(kinds),
            existing=await kube.get(api_version, kind, name, namespace),
            missing_secrets=frozenset(
                [s for s in sorted(set(secrets)) if not await kube.secret_exists(namespace, s)]
            ),
            hyperpod=await self.hyperpod_facts(cluster) if elastic else None,
            hami_installed=await kube.get("apps/v1", "DaemonSet", *HAMI_PLUGIN) is not None,
            namespace=namespace,
            team_queue=None
            if team is None
            else await kube.get(KUEUE_API, "LocalQueue", team_queue(team), namespace) is not None,
            priority_class=None
            if priority is None
            else await kube.get(
                KUEUE_API, "WorkloadPriorityClass", priority_class_object(priority), namespace
            )
            is not None,
        )

    async def hyperpod_facts(self, cluster: str) -> HyperPodFacts | None:
        """The HyperPod cluster's live description (None: no HyperPod cluster recorded)."""
        row = await self.row(cluster)
        arn = row.get("hyperpod_cluster_arn")
        if self.hyperpod is None or not arn:
            return None
        found = await self.hyperpod.describe_cluster(row["region"], arn)
        return None if found is None else hyperpod_facts(found)

    async def pods_of(self, kube: Kube, job: str, namespace: str = NAMESPACE) -> list[KubeObject]:
        return await kube.pods(namespace, f"{JOB_LABEL}={job}")

    async def apply(self, cluster: str, obj: KubeObject) -> None:
        await (await self.kube(cluster)).apply(obj)

    async def delete(
        self, cluster: str, api_version: str, kind: str, name: str, namespace: str = NAMESPACE
    ) -> bool:
        return await (await self.kube(cluster)).delete(api_version, kind, name, namespace)

    async def put_secret(
        self,
        cluster: str,
        name: str,
        data: dict[str, str],
        annotations: dict[str, str],
        namespace: str = NAMESPACE,
    ) -> None:
        """Create or replace a Secret in the jobs' namespace."""
        await (await self.kube(cluster)).put_secret(namespace, name, data, annotations)

    async def recorded(self, cluster: str, name: str) -> dict[str, Any] | None:
        return await records.job(self.pool, cluster, name)
