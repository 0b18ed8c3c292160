"""HyperPod nodes through boto3 and the Kubernetes Nodes through the official client.

SageMaker: ListClusterNodes (with logical ids), DescribeClusterNode, BatchReboot/Replace/
DeleteClusterNodes (at most 25 ids a call, per-node `Failed[]`), StartClusterHealthCheck,
ListClusterEvents, DescribeCluster/UpdateCluster for NodeRecovery. Kubernetes: the Node list of
the EKS cluster, read with the client `adapters.k8s.EksKubeFactory` makes for it.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.nodes.actions import BATCH_OPERATIONS
from cluster_svc.domain.nodes.health import (
    INSTANCE_ID_LABEL,
    BatchResult,
    ClusterRecovery,
    KubeNode,
    NodeInstance,
)
from cluster_svc.domain.nodes.watch_plan import NODES_PER_PAGE
from shared.contracts.nodes import BATCH_LIMIT, NodeAction
from shared.errors import PermanentError

NOT_FOUND = "ResourceNotFound"
HYPERPOD_NODE_SELECTOR = "sagemaker.amazonaws.com/compute-type=hyperpod"
ACCESS_TTL = 300.0  # seconds an EKS endpoint + CA is reused before DescribeCluster again


def node_instance(summary: dict[str, Any]) -> NodeInstance:
    status = summary.get("InstanceStatus") or {}
    launch = summary.get("LaunchTime")
    return NodeInstance(
        node_id=str(summary["InstanceId"]),
        instance_group=str(summary.get("InstanceGroupName", "")),
        instance_type=str(summary.get("InstanceType", "")),
        status=str(status.get("Status", "Unknown")),
        message=status.get("Message") or None,
        logical_id=summary.get("NodeLogicalId") or None,
        launch_time=launch if isinstance(launch, datetime) else None,
        hostname=summary.get("PrivateDnsHostname") or None,
    )


def kube_node(obj: dict[str, Any]) -> KubeNode:
    """A Node as the API serves it (camelCase keys) or the client's `to_dict()` gives it
    (snake_case)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = dict(meta.get("labels") or {})
    conditions = status.get("conditions") or []
    name = str(meta.get("name", ""))
    instance = labels.get(INSTANCE_ID_LABEL)
    provider = str(spec.get("provider_id") or spec.get("providerID") or "")
    if instance is None and provider.rsplit("/", 1)[-1].startswith("i-"):
        instance = provider.rsplit("/", 1)[-1]
    return KubeNode(
        name=name,
        instance_id=instance,
        conditions={str(c.get("type")): str(c.get("status")) for c in conditions},
        condition_messages={str(c.get("type")): str(c.get("message") or "") for c in conditions},
        labels=labels,
        taints=[
            {k: str(v) for k, v in t.items() if v is not None and k in ("key", "value", "effect")}
            for t in spec.get("taints") or []
        ],
        unschedulable=bool(spec.get("unschedulable")),
    )


class HyperPodNodes:
    """The node API of HyperPod clusters and the Nodes of their EKS clusters."""

    def __init__(self, aws: AwsClients, kube: EksKubeFactory) -> None:
        self.aws = aws
        self.kube = kube
        self._access: dict[str, tuple[float, ClusterAccess]] = {}

    # ---- SageMaker ---------------------------------------------------------------------

    async def list_nodes(self, cluster: str) -> list[NodeInstance]:
        params: dict[str, Any] = {
            "ClusterName": cluster,
            "IncludeNodeLogicalIds": True,
            "MaxResults": NODES_PER_PAGE,
        }
        nodes: list[NodeInstance] = []
        while True:
            try:
                page = await self.aws.call("sagemaker", "list_cluster_nodes", **params)
            except PermanentError as exc:
                raise _not_found(exc, cluster) from exc
            nodes += [node_instance(s) for s in page.get("ClusterNodeSummaries", [])]
            if not page.get("NextToken"):
                return nodes
            params["NextToken"] = page["NextToken"]

    async def describe_node(self, cluster: str, node_id: str) -> dict[str, Any] | None:
        try:
            answer = await self.aws.call(
                "sagemaker", "describe_cluster_node", ClusterName=cluster, NodeId=node_id
            )
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        details: dict[str, Any] = answer.get("NodeDetails") or {}
        return details

    async def batch(self, action: NodeAction, cluster: str, node_ids: list[str]) -> BatchResult:
        if len(node_ids) > BATCH_LIMIT:
            raise ValueError(f"a batch takes at most {BATCH_LIMIT} node ids")
        operation = _snake(BATCH_OPERATIONS[action])
        try:
            answer = await self.aws.call(
                "sagemaker", operation, ClusterName=cluster, NodeIds=node_ids
            )
        except PermanentError as exc:
            raise _not_found(exc, cluster) from exc
        failed = {
            str(f.get("NodeId")): {
                "code": str(f.get("ErrorCode") or f.get("Code") or "Failed"),
                "message": str(f.get("Message") or ""),
            }
            for f in answer.get("Failed") or []
        }
        successful = [str(i) for i in answer.get("Successful") or []]
        return BatchResult(successful=successful, failed=failed)

    async def start_health_check(self, cluster: str, configurations: list[dict[str, Any]]) -> None:
        try:
            await self.aws.call(
                "sagemaker",
                "start_cluster_health_check",
                ClusterName=cluster,
                DeepHealthCheckConfigurations=configurations,
            )
        except PermanentError as exc:
            raise _not_found(exc, cluster) from exc

    async def node_recovery(self, cluster: str) -> ClusterRecovery | None:
        try:
            answer = await self.aws.call("sagemaker", "describe_cluster", ClusterName=cluster)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        return ClusterRecovery(
            status=str(answer.get("ClusterStatus")), mode=answer.get("NodeRecovery")
        )

    async def set_node_recovery(self, cluster: str, mode: str) -> None:
        """UpdateCluster with NodeRecovery alone: no instance group is sent, so none changes."""
        try:
            await self.aws.call(
                "sagemaker", "update_cluster", ClusterName=cluster, NodeRecovery=mode
            )
        except PermanentError as exc:
            if exc.code == "ConflictException":
                raise PermanentError(
                    exc.code,
                    exc.message,
                    "another update is running on the cluster; retry once it is InService",
                ) from exc
            raise _not_found(exc, cluster) from exc

    async def node_events(self, cluster: str, node_id: str) -> list[dict[str, Any]]:
        """The node's recent HyperPod events, newest first (one page)."""
        try:
            page = await self.aws.call(
                "sagemaker",
                "list_cluster_events",
                ClusterName=cluster,
                NodeId=node_id,
                SortOrder="Descending",
                MaxResults=50,
            )
        except PermanentError as exc:
            raise _not_found(exc, cluster) from exc
        return [
            {
                "time": e["EventTime"].isoformat()
                if isinstance(e.get("EventTime"), datetime)
                else e.get("EventTime"),
                "level": e.get("EventLevel"),
                "resource": e.get("ResourceType"),
                "description": e.get("Description"),
            }
            for e in page.get("Events") or []
        ]

    async def newest_event(self, cluster: str) -> str | None:
        """The EventId of the cluster's newest HyperPod event (one call), None if it has none."""
        try:
            page = await self.aws.call(
                "sagemaker",
                "list_cluster_events",
                ClusterName=cluster,
                SortOrder="Descending",
                MaxResults=1,
            )
        except PermanentError as exc:
            raise _not_found(exc, cluster) from exc
        events = page.get("Events") or []
        return str(events[0]["EventId"]) if events else None

    # ---- Kubernetes --------------------------------------------------------------------

    async def eks_access(self, eks_cluster: str) -> ClusterAccess:
        cached = self._access.get(eks_cluster)
        if cached is not None and time.monotonic() - cached[0] < ACCESS_TTL:
            return cached[1]
        try:
            answer = await self.aws.call("eks", "describe_cluster", name=eks_cluster)
        except PermanentError as exc:
            if exc.code == "ResourceNotFoundException":
                raise PermanentError(
                    exc.code,
                    f"EKS cluster {eks_cluster} does not exist",
                    "GET /api/v1/clusters/{name} shows the cluster's status",
                ) from exc
            raise
        cluster = answer["cluster"]
        access = ClusterAccess(
            name=eks_cluster,
            endpoint=str(cluster["endpoint"]),
            ca_data=str(cluster["certificateAuthority"]["data"]),
        )
        self._access[eks_cluster] = (time.monotonic(), access)
        return access

    async def kube_nodes(self, access: ClusterAccess) -> list[KubeNode]:
        """HyperPod's Nodes of the EKS cluster (label compute-type=hyperpod)."""
        return await self.kube(access).nodes(HYPERPOD_NODE_SELECTOR, kube_node)


def _snake(operation: str) -> str:
    out = [operation[0].lower()]
    for ch in operation[1:]:
        out.append(f"_{ch.lower()}" if ch.isupper() else ch)
    return "".join(out)


def _not_found(exc: PermanentError, cluster: str) -> PermanentError:
    if exc.code == NOT_FOUND:
        return PermanentError(
            exc.code,
            f"HyperPod cluster {cluster} does not exist: {exc.message}",
            "GET /api/v1/clusters shows what is known; the cluster may have been deleted outside"
            " Hyperpilot",
        )
    if exc.code == "ValidationException" and exc.hint is None:
        return PermanentError(exc.code, exc.message, "the cluster must be InService for this")
    return exc
