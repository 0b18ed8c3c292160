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
- EventBridge (sim.aws.eventbridge) gets "SageMaker HyperPod Cluster State Change" when a
  cluster's status changes (Creating, InService, Updating, Deleting, Failed; nothing once it is
  gone: DescribeCluster's ClusterStatus has no state after Deleting,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html) and "SageMaker HyperPod Cluster Node Health
  Event" when a node turns unhealthy (Failure) or an unhealthy node turns healthy again.
"""

from __future__ import annotations

from sim.aws.context import SimContext
from sim.aws.eventbridge import ServiceEvents
from sim.aws.hyperpod.clusters import ClusterOps
from sim.aws.hyperpod.hardware import CATALOGUE
from sim.aws.hyperpod.model import Cluster, EksLink, Group, Handler, Node, Placement
from sim.aws.hyperpod.nodes import NodeOps
from sim.aws.hyperpod.software import SoftwareOps

STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"


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
        # (cluster ARN, NodeLogicalId) -> the health last sent: ("Unhealthy", reason) or
        # ("Healthy", None); a node never reported unhealthy is not in it
        self._sent_health: dict[tuple[str, str], tuple[str, str | None]] = {}
        ctx.change_watchers.append(self._state_changes)
        ctx.change_watchers.append(self._health_changes)

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
                STATE_CHANGE,
                [cluster.arn],
                {k: v for k, v in detail.items() if v is not None},
            )
        self._sent_status = seen

    def _health_changes(self) -> None:
        """A "SageMaker HyperPod Cluster Node Health Event" for each node that turned
        unhealthy (its instance `Failure`: a failed health check, a hardware fault, a failing
        deep health check) or, reported unhealthy before, turned healthy (`Running` again after
        a reboot or a replacement, under its new instance id). AWS: "Indicates when HyperPod
        detects unhealthy nodes or when unhealthy nodes transition to a healthy state"; detail
        ClusterName, ClusterArn, InstanceId, Tags and HealthSummary (HealthStatus,
        HealthStatusReason, RepairAction, Recommendation) ("Events that Amazon SageMaker AI sends
        to Amazon EventBridge", SageMaker HyperPod cluster node health,
        https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html).
        The reason, repair action and recommendation wordings are the simulator's. A node on
        its way (Pending, rebooting, under a deep health check) keeps the health last sent."""
        seen: dict[tuple[str, str], tuple[str, str | None]] = {}
        for cluster in self.clusters.values():
            for node in cluster.nodes.values():
                key = (cluster.arn, node.logical_id)
                last = self._sent_health.get(key)
                now: tuple[str, str | None] | None = None
                if node.status == "Failure":
                    now = ("Unhealthy", node.message)
                elif node.status == "Running" and last is not None and last[0] == "Unhealthy":
                    now = ("Healthy", None)
                if now is not None and now != last:
                    self.events.put(
                        "aws.sagemaker",
                        NODE_HEALTH,
                        [cluster.arn],
                        self._health_detail(cluster, node, now[0] == "Healthy"),
                    )
                    last = now
                if last is not None:
                    seen[key] = last
        self._sent_health = seen

    def _health_detail(self, cluster: Cluster, node: Node, healthy: bool) -> dict[str, object]:
        if healthy:
            summary = {
                "HealthStatus": "Healthy",
                "HealthStatusReason": f"Node {node.instance_id} passed its health checks.",
                "RepairAction": "None",
                "Recommendation": "None",
            }
        else:
            label = self._health_label(cluster, node)
            action = {
                "UnschedulablePendingReplacement": "Replace",
                "UnschedulablePendingReboot": "Reboot",
            }.get(label, "None")
            automatic = cluster.config.get("NodeRecovery") == "Automatic"
            summary = {
                "HealthStatus": "Unhealthy",
                "HealthStatusReason": node.message or "Node failed health checks",
                "RepairAction": action if automatic else "None",
                "Recommendation": (
                    f"HyperPod will {action.lower()} the node."
                    if automatic and action != "None"
                    else "Please reboot or replace the faulty node."
                ),
            }
        return {
            "ClusterName": cluster.name,
            "ClusterArn": cluster.arn,
            "InstanceId": node.instance_id,
            "Tags": {t["Key"]: t.get("Value", "") for t in cluster.tags},
            "HealthSummary": summary,
        }

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
