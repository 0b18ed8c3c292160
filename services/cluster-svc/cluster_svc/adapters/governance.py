"""Task governance against AWS and the cluster: read actual state, run one call, and read what
"why is my job pending?" joins (Kueue's Workloads, ClusterQueues and WorkloadPriorityClasses,
the namespace's events).

Reads: DescribeCluster of HyperPod (its ARN, status and instance types), DescribeAddon of the
task-governance add-on, ListClusterSchedulerConfigs / DescribeClusterSchedulerConfig and
ListComputeQuotas / DescribeComputeQuota by the cluster's ARN (what is Deleted is gone). A call
whose effect is already there (an add-on or a quota already gone) counts as done; a
ConflictException (the object is busy, or its version moved on) is retried by the stage engine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from botocore import xform_name
from kubernetes import client as k8s

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory, KubeClient
from cluster_svc.domain.components.base import KubeObject
from cluster_svc.domain.features.steps import Apply, Call, Remove
from cluster_svc.domain.governance.actual import (
    GONE,
    GovernanceActual,
    QuotaActual,
    SchedulerActual,
    TeamStorage,
)
from cluster_svc.domain.governance.objects import team_volume
from shared.boundary import team_namespace
from shared.contracts.governance import TASK_GOVERNANCE_ADDON, GovernanceTarget
from shared.errors import PermanentError, StageError, TemporaryError

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta1"

ALREADY = {
    ("eks", "CreateAddon"): {"ResourceInUseException"},
    ("eks", "DeleteAddon"): {"ResourceNotFoundException"},
    ("sagemaker", "DeleteComputeQuota"): {"ResourceNotFound"},
    ("sagemaker", "DeleteClusterSchedulerConfig"): {"ResourceNotFound"},
}


class LiveGovernance:
    def __init__(self, aws: AwsClients, kube: EksKubeFactory) -> None:
        self.aws = aws
        self.kube = kube
        self.nodes = HyperPodNodes(aws, kube)

    async def client(self, eks_cluster: str) -> KubeClient:
        return self.kube(await self.nodes.eks_access(eks_cluster))

    async def observe(self, target: GovernanceTarget) -> GovernanceActual:
        hyperpod, addon = await asyncio.gather(
            self._hyperpod(target.hyperpod_cluster), self._addon(target.eks_cluster)
        )
        base = GovernanceActual(
            cluster=target.cluster,
            eks_cluster=target.eks_cluster,
            hyperpod_cluster=target.hyperpod_cluster,
            addon=addon,
        )
        if hyperpod is None:
            return base
        arn = str(hyperpod["ClusterArn"])
        scheduler, quotas = await asyncio.gather(self._scheduler(arn), self._quotas(arn))
        storage = await self._storage(target, sorted(quotas)) if target.bucket else {}
        return GovernanceActual(
            bucket=target.bucket,
            region=target.region,
            storage=storage,
            cluster=target.cluster,
            eks_cluster=target.eks_cluster,
            hyperpod_cluster=target.hyperpod_cluster,
            hyperpod_arn=arn,
            hyperpod_status=str(hyperpod.get("ClusterStatus")),
            instance_types=frozenset(
                str(g["InstanceType"])
                for g in hyperpod.get("InstanceGroups") or []
                if g.get("InstanceType")
            ),
            addon=addon,
            scheduler=scheduler,
            quotas=quotas,
        )

    async def _hyperpod(self, name: str) -> dict[str, Any] | None:
        try:
            answer: dict[str, Any] = await self.aws.call(
                "sagemaker", "describe_cluster", ClusterName=name
            )
        except PermanentError as exc:
            if exc.code in ("ResourceNotFound", "ValidationException"):
                return None
            raise
        return answer

    async def _addon(self, eks_cluster: str) -> str | None:
        try:
            found = await self.aws.call(
                "eks", "describe_addon", clusterName=eks_cluster, addonName=TASK_GOVERNANCE_ADDON
            )
        except PermanentError as exc:
            if exc.code == "ResourceNotFoundException":
                return None
            raise
        return str(found["addon"].get("status") or "")

    async def _pages(self, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await self.aws.call(
                "sagemaker", operation, **params, **({"NextToken": token} if token else {})
            )
            items += page.get(key) or []
            token = page.get("NextToken")
            if not token:
                return items

    async def _scheduler(self, arn: str) -> SchedulerActual | None:
        found = await self._pages(
            "list_cluster_scheduler_configs", "ClusterSchedulerConfigSummaries", ClusterArn=arn
        )
        live = [s for s in found if s.get("Status") not in GONE]
        if not live:
            return None
        try:
            answer = await self.aws.call(
                "sagemaker",
                "describe_cluster_scheduler_config",
                ClusterSchedulerConfigId=live[0]["ClusterSchedulerConfigId"],
            )
        except PermanentError as exc:
            if exc.code == "ResourceNotFound":
                return None
            raise
        return SchedulerActual(
            id=str(answer["ClusterSchedulerConfigId"]),
            name=str(answer["Name"]),
            version=int(answer["ClusterSchedulerConfigVersion"]),
            status=str(answer["Status"]),
            config=answer.get("SchedulerConfig") or {},
            failure=answer.get("FailureReason"),
        )

    async def _quotas(self, arn: str) -> dict[str, QuotaActual]:
        found = await self._pages("list_compute_quotas", "ComputeQuotaSummaries", ClusterArn=arn)
        live = [q for q in found if q.get("Status") not in GONE]
        described = await asyncio.gather(*(self._quota(q["ComputeQuotaId"]) for q in live))
        return {q.team: q for q in described if q is not None}

    async def _quota(self, quota_id: str) -> QuotaActual | None:
        try:
            answer = await self.aws.call(
                "sagemaker", "describe_compute_quota", ComputeQuotaId=quota_id
            )
        except PermanentError as exc:
            if exc.code == "ResourceNotFound":
                return None
            raise
        target = answer.get("ComputeQuotaTarget") or {}
        return QuotaActual(
            id=str(answer["ComputeQuotaId"]),
            name=str(answer["Name"]),
            team=str(target.get("TeamName")),
            version=int(answer["ComputeQuotaVersion"]),
            status=str(answer["Status"]),
            config=answer.get("ComputeQuotaConfig") or {},
            fair_share_weight=target.get("FairShareWeight"),
            activation=answer.get("ActivationState"),
            description=answer.get("Description") or None,
            failure=answer.get("FailureReason"),
        )

    async def _storage(self, target: GovernanceTarget, teams: list[str]) -> dict[str, TeamStorage]:
        if not teams or target.bucket is None:
            return {}
        kube = await self.client(target.eks_cluster)

        async def one(team: str) -> TeamStorage:
            volume, claim = team_volume(str(target.bucket), target.region, team)
            found = await asyncio.gather(
                kube.get("v1", "Namespace", team_namespace(team)),
                kube.get("v1", "PersistentVolume", volume["metadata"]["name"]),
                kube.get(
                    "v1", "PersistentVolumeClaim", claim["metadata"]["name"], team_namespace(team)
                ),
            )
            return TeamStorage(namespace=found[0] is not None, volume=found[1], claim=found[2])

        return dict(zip(teams, await asyncio.gather(*(one(t) for t in teams)), strict=True))

    async def execute(self, target: GovernanceTarget, step: Call | Apply | Remove) -> Any:
        if isinstance(step, Apply):
            return await (await self.client(target.eks_cluster)).apply(step.obj)
        if isinstance(step, Remove):
            return await (await self.client(target.eks_cluster)).delete(*step.ref)
        try:
            return await self.aws.call(step.service, xform_name(step.operation), **step.params)
        except PermanentError as exc:
            if exc.code in ALREADY.get((step.service, step.operation), set()):
                return None
            if exc.code == "ConflictException" and step.operation.startswith(("Update", "Delete")):
                raise TemporaryError(
                    exc.code, exc.message, "the object is busy or changed; read again and retry"
                ) from exc
            raise


# ---- what the pending explainer reads from the cluster ----------------------------------------


async def _read(kube: KubeClient, what: str, call: Any) -> Any:
    def run() -> Any:
        response: Any = call()
        return orjson.loads(response.data)

    try:
        return await asyncio.to_thread(run)
    except StageError:
        raise
    except k8s.ApiException as exc:
        if exc.status == 404:
            return {"items": []}
        raise kube.error(exc, what) from exc
    except Exception as exc:
        raise kube.error(exc, what) from exc


async def kueue_objects(kube: KubeClient, plural: str) -> list[KubeObject]:
    """Every object of a Kueue kind (cluster-wide; none when Kueue is not installed)."""
    found = await _read(
        kube, f"list {plural}", kube.api_path("apis", KUEUE_GROUP, KUEUE_VERSION, plural).get
    )
    items: list[KubeObject] = found.get("items") or []
    return items


async def namespace_events(kube: KubeClient, namespace: str) -> list[KubeObject]:
    found = await _read(
        kube,
        f"list events in {namespace}",
        kube.api_path("api", "v1", "namespaces", namespace, "events").get,
    )
    items: list[KubeObject] = found.get("items") or []
    return sorted(items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
