"""SageMaker HyperPod clusters, simulated: lifecycle, instance groups, nodes that move.

What AWS does, and so what this does:
- CreateCluster answers at once with the ARN; the cluster is `Creating` with its nodes
  `Pending`, then `InService` after the profile's `hyperpod_create` with nodes `Running` (or
  first `DeepHealthCheckInProgress` when the group asks for on-start deep health checks).
- Insufficient capacity is not an API error for HyperPod: the create is accepted and the cluster
  ends `Failed` with a `FailureMessage` starting "InsufficientInstanceCapacity". A scale-up that
  meets no capacity rolls back: the cluster returns to `InService` at its former size with the
  reason in `FailureMessage` and an `Error` cluster event. (A fault with `mode="api"` fails the
  call itself instead, for the callers that must handle that.)
- Quotas ("<type> for cluster usage") are checked synchronously: ResourceLimitExceeded with
  AWS's wording. Subnets, security groups, roles, the EKS cluster and training plans are checked
  synchronously too: ValidationException naming what is wrong.
- With NodeProvisioningMode=Continuous the cluster and its groups stay `InService` while they
  scale; nodes that find no capacity are provisioned partially and retried until capacity
  returns (`Warn` events say so), as AWS documents for that mode.
- A node that fails is `Failure`; with NodeRecovery=Automatic HyperPod replaces it (a new
  instance id, the same logical id), with None it stays failed until BatchReplace/BatchReboot.
- Hardware faults (a reboot that does not heal, a GPU off the bus, an EFA error, a failing deep
  health check) stay with their instance and show as HyperPod and Kubernetes show them: see
  sim.aws.hyperpod.hardware.
- Node ids are EC2 instance ids (`i-` + 17 hex); NodeLogicalIds are stable across replacement.
"""

from __future__ import annotations

from sim.aws.context import SimContext
from sim.aws.eventbridge import ServiceEvents
from sim.aws.hyperpod.clusters import ClusterOps
from sim.aws.hyperpod.hardware import CATALOGUE
from sim.aws.hyperpod.model import Cluster, EksLink, Group, Handler, Node, Placement
from sim.aws.hyperpod.nodes import NodeOps
from sim.aws.hyperpod.software import SoftwareOps


class HyperPod(ClusterOps, NodeOps, SoftwareOps):
    """The HyperPod part of SageMaker's API."""

    def __init__(self, ctx: SimContext, eks: EksLink) -> None:
        super().__init__(ctx, eks)
        ctx.faults.register_action("node_failure", self._fail_nodes)
        ctx.faults.register_action("deep_health_check", self._fault_health_check)
        for kind in CATALOGUE:
            ctx.faults.register_action(kind, self._inject_hardware)
        self.events = ServiceEvents(ctx)
        self._sent_status: dict[str, str] = {}
        ctx.change_watchers.append(self._state_changes)

    def _state_changes(self) -> None:
        """A "SageMaker HyperPod Cluster State Change" event for each cluster whose status
        changed, its detail the cluster's configuration as DescribeCluster answers it ("Events
        that Amazon SageMaker AI sends to Amazon EventBridge", HyperPod cluster state change,
        https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html)."""
        seen: dict[str, str] = {}
        for cluster in self.clusters.values():
            seen[cluster.arn] = cluster.status
            if self._sent_status.get(cluster.arn) == cluster.status:
                continue
            detail = self.describe_cluster({"ClusterName": cluster.arn})
            self.events.put(
                "aws.sagemaker",
                "SageMaker HyperPod Cluster State Change",
                [cluster.arn],
                {k: v for k, v in detail.items() if v is not None},
            )
        self._sent_status = seen

    def operations(self) -> dict[str, Handler]:
        return {
            "CreateCluster": self.create_cluster,
            "DescribeCluster": self.describe_cluster,
            "ListClusters": self.list_clusters,
            "UpdateCluster": self.update_cluster,
            "DeleteCluster": self.delete_cluster,
            "ListClusterNodes": self.list_cluster_nodes,
            "DescribeClusterNode": self.describe_cluster_node,
            "BatchAddClusterNodes": self.batch_add_cluster_nodes,
            "BatchDeleteClusterNodes": self.batch_delete_cluster_nodes,
            "BatchRebootClusterNodes": self.batch_reboot_cluster_nodes,
            "BatchReplaceClusterNodes": self.batch_replace_cluster_nodes,
            "UpdateClusterSoftware": self.update_cluster_software,
            "StartClusterHealthCheck": self.start_cluster_health_check,
            "ListClusterEvents": self.list_cluster_events,
            "DescribeClusterEvent": self.describe_cluster_event,
        }


__all__ = ["Cluster", "EksLink", "Group", "HyperPod", "Node", "Placement"]
