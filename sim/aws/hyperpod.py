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
- Node ids are EC2 instance ids (`i-` + 17 hex); NodeLogicalIds are stable across replacement.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sim.aws import moto_state
from sim.aws.account import TrainingPlan
from sim.aws.context import SimContext, instance_id, lower_alnum
from sim.aws.errors import AwsError
from sim.aws.faults import Fault
from sim.interfaces import SimNode

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_CLUSTER_CONFIG_KEYS = (
    "VpcConfig",
    "Orchestrator",
    "NodeRecovery",
    "TieredStorageConfig",
    "NodeProvisioningMode",
    "ClusterRole",
    "RestrictedInstanceGroups",
)


@dataclass
class Node:
    instance_id: str
    logical_id: str
    group: str
    instance_type: str
    status: str
    zone_name: str
    zone_id: str
    subnet_id: str | None
    ip: str
    launch_time: datetime
    message: str | None = None
    last_software_update: datetime | None = None
    gen: int = 0


@dataclass
class Group:
    spec: dict[str, Any]
    target: int
    status: str = "Creating"
    image_id: str | None = None

    @property
    def name(self) -> str:
        return str(self.spec["InstanceGroupName"])

    @property
    def instance_type(self) -> str:
        return str(self.spec["InstanceType"])


@dataclass
class Cluster:
    name: str
    cluster_id: str
    arn: str
    creation_time: datetime
    status: str
    config: dict[str, Any]
    auto_scaling: dict[str, Any] | None
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    failure_message: str | None = None
    tags: list[dict[str, str]] = field(default_factory=list)
    gen: int = 0
    next_ip: int = 10

    @property
    def eks_name(self) -> str | None:
        arn = (self.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        return str(arn).rsplit("/", 1)[-1] if arn else None


class EksLink(Protocol):
    """What HyperPod needs from EKS: is the cluster there, and the access of its nodes."""

    def is_active(self, arn_or_name: str) -> bool: ...

    def authentication_mode(self, arn: str) -> str | None: ...

    def grant_node_role(self, arn: str, role_arn: str) -> None: ...

    def revoke_node_role(self, arn: str, role_arn: str) -> None: ...


@dataclass
class Placement:
    zone_name: str
    zone_id: str
    subnet_id: str | None
    cidr: str


class HyperPod:
    """The HyperPod part of SageMaker's API."""

    def __init__(self, ctx: SimContext, eks: EksLink) -> None:
        self.ctx = ctx
        self.clusters: dict[str, Cluster] = {}
        self._eks = eks
        ctx.eks_nodes = self.nodes_for_eks
        ctx.faults.register_action("node_failure", self._fail_nodes)
        ctx.faults.register_action("deep_health_check", self._fault_health_check)

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

    # ---- lookups -------------------------------------------------------------------------

    def find(self, name_or_arn: str) -> Cluster | None:
        for cluster in self.clusters.values():
            if name_or_arn in (cluster.name, cluster.arn):
                return cluster
        return None

    def _get(self, name_or_arn: str) -> Cluster:
        cluster = self.find(name_or_arn)
        if cluster is None:
            raise AwsError("ResourceNotFound", f"Cluster {name_or_arn} not found.")
        return cluster

    def nodes_for_eks(self, eks_name: str) -> list[SimNode]:
        """Every HyperPod node attached to EKS cluster `eks_name`, as the emulator sees it."""
        result: list[SimNode] = []
        for cluster in self.clusters.values():
            if cluster.eks_name != eks_name:
                continue
            for node in cluster.nodes.values():
                result.append(self._sim_node(cluster, node))
        return result

    def _sim_node(self, cluster: Cluster, node: Node) -> SimNode:
        group = cluster.groups.get(node.group)
        kube = (group.spec.get("KubernetesConfig") if group else None) or {}
        labels = {
            "sagemaker.amazonaws.com/cluster-name": cluster.name,
            "sagemaker.amazonaws.com/instance-group-name": node.group,
            "sagemaker.amazonaws.com/node-health-status": self._health_label(cluster, node),
            "node.kubernetes.io/instance-type": node.instance_type,
            "topology.kubernetes.io/zone": node.zone_name,
            "topology.k8s.aws/zone-id": node.zone_id,
            **(kube.get("Labels") or {}),
        }
        taints = [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in kube.get("Taints") or []
        ]
        return SimNode(
            instance_id=node.instance_id,
            instance_group=node.group,
            instance_type=node.instance_type,
            status=node.status,
            availability_zone=node.zone_name,
            hyperpod_cluster=cluster.name,
            labels=labels,
            taints=taints,
        )

    @staticmethod
    def _health_label(cluster: Cluster, node: Node) -> str:
        if node.status == "Running":
            return "Schedulable"
        if node.status == "Failure":
            automatic = cluster.config.get("NodeRecovery") == "Automatic"
            return "UnschedulablePendingReplacement" if automatic else "Unschedulable"
        if node.message and "Reboot" in node.message:
            return "UnschedulablePendingReboot"
        return "Unschedulable"

    # ---- validation of references --------------------------------------------------------

    def _check_role(self, arn: str | None, what: str) -> None:
        if arn and not moto_state.role_exists(self.ctx.account_id, arn):
            raise AwsError(
                "ValidationException", f"{what} {arn} does not exist or cannot be assumed."
            )

    def _placements(self, vpc: dict[str, Any] | None) -> list[Placement]:
        """Where nodes may go: the subnets of `vpc`, or every zone of the region."""
        if not vpc:
            return [
                Placement(name, zid, None, "10.1.0.0/16")
                for name, zid in moto_state.zones(self.ctx.account_id, self.ctx.region)
            ]
        for group_id in vpc.get("SecurityGroupIds", []):
            if not moto_state.security_group_exists(self.ctx.account_id, self.ctx.region, group_id):
                raise AwsError("ValidationException", f"Security group {group_id} does not exist.")
        result = []
        for subnet_id in vpc.get("Subnets", []):
            info = moto_state.subnet(self.ctx.account_id, self.ctx.region, subnet_id)
            if info is None:
                raise AwsError("ValidationException", f"Subnet {subnet_id} does not exist.")
            result.append(Placement(info.zone_name, info.zone_id, info.subnet_id, info.cidr))
        return result

    def _group_placements(
        self, cluster_vpc: dict[str, Any] | None, spec: dict[str, Any]
    ) -> list[Placement]:
        instance_type = spec["InstanceType"]
        candidates = self._placements(spec.get("OverrideVpcConfig") or cluster_vpc)
        offered = [p for p in candidates if self.ctx.account.offered_in(instance_type, p.zone_id)]
        if not offered:
            zones = ", ".join(sorted({p.zone_id for p in candidates}))
            raise AwsError(
                "ValidationException",
                f"Instance type {instance_type} is not supported in the Availability Zones of the "
                f"subnets provided for instance group {spec['InstanceGroupName']} ({zones}).",
            )
        plan = self._plan_of(spec)
        if plan is not None:
            plan_zones = {
                c.availability_zone_id for c in plan.capacity if c.instance_type == instance_type
            }
            offered = [p for p in offered if p.zone_id in plan_zones]
            if not offered:
                raise AwsError(
                    "ValidationException",
                    f"None of the subnets of instance group {spec['InstanceGroupName']} is in the "
                    f"Availability Zone of training plan {plan.name} ({', '.join(sorted(plan_zones))}).",
                )
        return offered

    def _plan_of(self, spec: dict[str, Any]) -> TrainingPlan | None:
        arn = spec.get("TrainingPlanArn")
        if not arn:
            return None
        plan = self.ctx.account.training_plan(arn)
        if plan is None:
            raise AwsError("ValidationException", f"Training plan {arn} does not exist.")
        if plan.status != "Active":
            raise AwsError(
                "ValidationException", f"Training plan {plan.name} is {plan.status}, not Active."
            )
        return plan

    def plan_in_use(self, plan_arn: str, instance_type: str | None = None) -> int:
        """Instances of a training plan held by instance groups."""
        used = 0
        for cluster in self.clusters.values():
            for group in cluster.groups.values():
                if group.spec.get("TrainingPlanArn") in (plan_arn,) and instance_type in (
                    None,
                    group.instance_type,
                ):
                    used += group.target
        return used

    def _check_plan_capacity(self, spec: dict[str, Any], current: int) -> None:
        plan = self._plan_of(spec)
        if plan is None:
            return
        instance_type = spec["InstanceType"]
        total = plan.total(instance_type)
        available = total - self.plan_in_use(plan.arn, instance_type) + current
        if total == 0 or spec["InstanceCount"] > available:
            raise AwsError(
                "ValidationException",
                f"Training plan {plan.name} has {max(available, 0)} {instance_type} instances "
                f"available; instance group {spec['InstanceGroupName']} asks for "
                f"{spec['InstanceCount']}.",
            )

    def _usage(self, instance_type: str) -> int:
        used = 0
        for cluster in self.clusters.values():
            if cluster.status in ("Failed", "Deleting"):
                continue
            for group in cluster.groups.values():
                if group.instance_type == instance_type and not group.spec.get("TrainingPlanArn"):
                    used += group.target
        return used

    def _check_quota(self, instance_type: str, delta: int) -> None:
        if delta <= 0:
            return
        quota = self.ctx.account.cluster_quota(instance_type)
        if quota is None:
            return
        used = self._usage(instance_type)
        if used + delta > quota.value:
            raise AwsError(
                "ResourceLimitExceeded",
                f"The account-level service limit '{quota.name}' is {int(quota.value)} Instances, "
                f"with current utilization of {used} Instances and a request delta of {delta} "
                "Instances. Please use AWS Service Quotas to request an increase for this quota. "
                "If AWS Service Quotas is not available, contact AWS support to request an "
                "increase for this quota.",
            )

    def _check_group_spec(self, spec: dict[str, Any]) -> None:
        if not spec.get("InstanceType"):
            raise AwsError(
                "ValidationException",
                f"Instance group {spec['InstanceGroupName']} must specify InstanceType.",
            )
        self._check_role(spec.get("ExecutionRole"), "Execution role")

    # ---- nodes ---------------------------------------------------------------------------

    def _new_node(
        self, cluster: Cluster, group: Group, placements: list[Placement], index: int
    ) -> Node:
        placement = placements[index % len(placements)]
        network = ipaddress.ip_network(placement.cidr, strict=False)
        cluster.next_ip += 1
        ip = str(
            network.network_address + (cluster.next_ip % max(network.num_addresses - 2, 1)) + 1
        )
        node = Node(
            instance_id=instance_id(),
            logical_id=f"{group.name}-{uuid.uuid4().hex[:12]}",
            group=group.name,
            instance_type=group.instance_type,
            status="Pending",
            zone_name=placement.zone_name,
            zone_id=placement.zone_id,
            subnet_id=placement.subnet_id,
            ip=ip,
            launch_time=self.ctx.now(),
        )
        cluster.nodes[node.instance_id] = node
        return node

    def _set_status(
        self, cluster: Cluster, node: Node, status: str, message: str | None = None
    ) -> None:
        node.status = status
        node.message = message
        node.gen += 1
        self._changed(cluster)

    def _changed(self, cluster: Cluster) -> None:
        if cluster.eks_name:
            self.ctx.nodes_changed(cluster.eks_name)

    def _node_later(
        self, cluster: Cluster, node: Node, delay: float, action: Callable[[], None]
    ) -> None:
        """Run `action` after `delay` unless the node changed or went away meanwhile."""
        gen = node.gen

        def fire() -> None:
            if cluster.nodes.get(node.instance_id) is node and node.gen == gen:
                action()

        self.ctx.scheduler.after(delay, fire)

    def _cluster_later(
        self,
        cluster: Cluster,
        delay: float,
        action: Callable[[], None],
        *,
        same_operation: bool = True,
    ) -> None:
        """Run `action` after `delay` if the cluster still exists (and, with `same_operation`,
        no later cluster-wide operation superseded the one that scheduled it)."""
        gen = cluster.gen

        def fire() -> None:
            if self.clusters.get(cluster.cluster_id) is not cluster:
                return
            if same_operation and cluster.gen != gen:
                return
            action()

        self.ctx.scheduler.after(delay, fire)

    def _bring_up(self, cluster: Cluster, node: Node) -> None:
        """A booted node: on-start deep health checks first if its group asks for them."""
        group = cluster.groups.get(node.group)
        if group is not None and group.spec.get("OnStartDeepHealthChecks"):
            self._set_status(
                cluster, node, "DeepHealthCheckInProgress", "Deep health check in progress"
            )
            self._node_later(
                cluster,
                node,
                self.ctx.profile.deep_health_check,
                lambda: self._set_status(cluster, node, "Running"),
            )
        else:
            self._set_status(cluster, node, "Running")

    def _remover(self, cluster: Cluster, node: Node) -> Callable[[], None]:
        return lambda: self._remove_node(cluster, node)

    def _remove_node(self, cluster: Cluster, node: Node) -> None:
        cluster.nodes.pop(node.instance_id, None)
        self._changed(cluster)

    def _event(
        self,
        cluster: Cluster,
        description: str,
        level: str = "Info",
        resource: str = "Cluster",
        group: str | None = None,
        node_id: str | None = None,
    ) -> None:
        cluster.events.append(
            {
                "EventId": str(uuid.uuid4()),
                "ClusterArn": cluster.arn,
                "ClusterName": cluster.name,
                "InstanceGroupName": group,
                "InstanceId": node_id,
                "ResourceType": resource,
                "EventTime": self.ctx.now(),
                "Description": description,
                "EventLevel": level,
            }
        )

    def _shortfall(self, group: Group, nodes: list[Node]) -> str | None:
        """The FailureMessage if capacity for `nodes` of `group` is missing, else None."""
        for zone_id in sorted({n.zone_id for n in nodes}):
            fault = self.ctx.faults.capacity_shortfall(group.instance_type, zone_id)
            if fault is not None:
                return (
                    f"InsufficientInstanceCapacity: We currently do not have sufficient "
                    f"{group.instance_type} capacity in the Availability Zone {zone_id} for "
                    f"instance group {group.name}. Our system will be working on provisioning "
                    "additional capacity. You can retry later or choose another Availability Zone."
                )
        return None

    # ---- cluster operations --------------------------------------------------------------

    def create_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["ClusterName"]
        if self.find(name) is not None:
            raise AwsError("ResourceInUse", f"Cluster {name} already exists.")
        groups = p.get("InstanceGroups") or []
        if not groups and not p.get("RestrictedInstanceGroups"):
            raise AwsError("ValidationException", "At least one instance group is required.")
        names = [g["InstanceGroupName"] for g in groups]
        if len(set(names)) != len(names):
            raise AwsError(
                "ValidationException", "Instance group names must be unique within a cluster."
            )
        orchestrator = p.get("Orchestrator") or {}
        eks_arn = (orchestrator.get("Eks") or {}).get("ClusterArn")
        if eks_arn:
            if not p.get("VpcConfig"):
                raise AwsError(
                    "ValidationException", "VpcConfig is required for an EKS-orchestrated cluster."
                )
            if not self._eks.is_active(eks_arn):
                raise AwsError(
                    "ValidationException", f"EKS cluster {eks_arn} does not exist or is not ACTIVE."
                )
            if self._eks.authentication_mode(eks_arn) not in ("API", "API_AND_CONFIG_MAP"):
                raise AwsError(
                    "ValidationException",
                    f"The authentication mode of EKS cluster {eks_arn} must be API or "
                    "API_AND_CONFIG_MAP for HyperPod to add access entries for its nodes.",
                )
        auto_scaling = p.get("AutoScaling")
        if auto_scaling and auto_scaling.get("Mode") == "Enable":
            if not eks_arn:
                raise AwsError("ValidationException", "AutoScaling requires an EKS orchestrator.")
            if not p.get("ClusterRole"):
                raise AwsError("ValidationException", "AutoScaling requires a ClusterRole.")
        self._check_role(p.get("ClusterRole"), "Cluster role")
        placements: dict[str, list[Placement]] = {}
        deltas: dict[str, int] = {}
        for spec in groups:
            self._check_group_spec(spec)
            placements[spec["InstanceGroupName"]] = self._group_placements(p.get("VpcConfig"), spec)
            self._check_plan_capacity(spec, 0)
            if not spec.get("TrainingPlanArn"):
                deltas[spec["InstanceType"]] = (
                    deltas.get(spec["InstanceType"], 0) + spec["InstanceCount"]
                )
        for instance_type, delta in deltas.items():
            self._check_quota(instance_type, delta)

        cluster_id = lower_alnum(12)
        cluster = Cluster(
            name=name,
            cluster_id=cluster_id,
            arn=self.ctx.arn("sagemaker", f"cluster/{cluster_id}"),
            creation_time=self.ctx.now(),
            status="Creating",
            config={k: p[k] for k in _CLUSTER_CONFIG_KEYS if p.get(k) is not None},
            auto_scaling=self._auto_scaling(auto_scaling),
            tags=list(p.get("Tags") or []),
        )
        self.clusters[cluster_id] = cluster
        for spec in groups:
            group = Group(
                spec=dict(spec), target=spec["InstanceCount"], image_id=spec.get("ImageId")
            )
            cluster.groups[group.name] = group
            for index in range(group.target):
                self._new_node(cluster, group, placements[group.name], index)
        self._changed(cluster)
        self._grant_node_roles(cluster)
        self._event(cluster, "Cluster creation started.")
        self._cluster_later(
            cluster, self.ctx.profile.hyperpod_create, lambda: self._finish_create(cluster)
        )
        return {"ClusterArn": cluster.arn}

    def _node_roles(self, cluster: Cluster) -> set[str]:
        return {str(g.spec["ExecutionRole"]) for g in cluster.groups.values()}

    def _grant_node_roles(self, cluster: Cluster) -> None:
        """HyperPod gives its nodes' execution roles HYPERPOD_LINUX access entries on EKS."""
        arn = (cluster.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        if arn:
            for role in sorted(self._node_roles(cluster)):
                self._eks.grant_node_role(arn, role)

    def _revoke_node_roles(self, cluster: Cluster) -> None:
        arn = (cluster.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        if not arn:
            return
        still_used = {
            role
            for other in self.clusters.values()
            if other is not cluster and other.eks_name == cluster.eks_name
            for role in self._node_roles(other)
        }
        for role in sorted(self._node_roles(cluster) - still_used):
            self._eks.revoke_node_role(arn, role)

    def _auto_scaling(self, spec: dict[str, Any] | None) -> dict[str, Any] | None:
        if not spec:
            return None
        return {**spec, "Status": "Creating" if spec.get("Mode") == "Enable" else "InService"}

    def _continuous(self, cluster: Cluster) -> bool:
        return cluster.config.get("NodeProvisioningMode") == "Continuous"

    def _finish_create(self, cluster: Cluster) -> None:
        continuous = self._continuous(cluster)
        for group in cluster.groups.values():
            nodes = [n for n in cluster.nodes.values() if n.group == group.name]
            message = self._shortfall(group, nodes) if nodes else None
            if message is None:
                continue
            if continuous:
                self._provision_later(cluster, group, nodes, message)
                continue
            cluster.status = "Failed"
            cluster.failure_message = message
            group.status = "Failed"
            for node in list(cluster.nodes.values()):
                self._remove_node(cluster, node)
            self._event(cluster, message, "Error", "InstanceGroup", group.name)
            self._event(cluster, "Cluster creation failed.", "Error")
            return
        for group in cluster.groups.values():
            group.status = "InService"
        for node in list(cluster.nodes.values()):
            if node.status == "Pending":
                self._bring_up(cluster, node)
        if cluster.auto_scaling is not None:
            cluster.auto_scaling["Status"] = "InService"
        cluster.status = "InService"
        self._event(cluster, "Cluster is InService.")

    # ---- continuous provisioning ---------------------------------------------------------

    def _provision_later(
        self, cluster: Cluster, group: Group, nodes: list[Node], message: str
    ) -> None:
        """Continuous mode: drop the nodes that got no capacity, say so, and retry later."""
        for node in nodes:
            self._remove_node(cluster, node)
        self._event(cluster, message, "Warn", "InstanceGroup", group.name)
        self._cluster_later(
            cluster,
            self.ctx.profile.node_boot,
            lambda: self._retry(cluster, group),
            same_operation=False,
        )

    def _retry(self, cluster: Cluster, group: Group) -> None:
        if cluster.groups.get(group.name) is not group or cluster.status == "Deleting":
            return
        present = sum(
            1
            for n in cluster.nodes.values()
            if n.group == group.name and n.status != "ShuttingDown"
        )
        missing = group.target - present
        if missing <= 0:
            return
        try:
            placements = self._group_placements(cluster.config.get("VpcConfig"), group.spec)
        except AwsError as err:
            self._event(cluster, err.message, "Warn", "InstanceGroup", group.name)
            self._cluster_later(
                cluster,
                self.ctx.profile.node_boot,
                lambda: self._retry(cluster, group),
                same_operation=False,
            )
            return
        nodes = [self._new_node(cluster, group, placements, present + i) for i in range(missing)]
        self._changed(cluster)
        self._boot_later(cluster, group, nodes)

    def _boot_later(self, cluster: Cluster, group: Group, nodes: list[Node]) -> None:
        """Continuous mode: new nodes boot on their own, the cluster staying InService."""

        def boot() -> None:
            live = [
                n for n in nodes if cluster.nodes.get(n.instance_id) is n and n.status == "Pending"
            ]
            if not live:
                return
            message = self._shortfall(group, live)
            if message is not None:
                self._provision_later(cluster, group, live, message)
                return
            for node in live:
                self._bring_up(cluster, node)

        self._cluster_later(cluster, self.ctx.profile.node_boot, boot, same_operation=False)

    def describe_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        result: dict[str, Any] = {
            "ClusterArn": cluster.arn,
            "ClusterName": cluster.name,
            "ClusterStatus": cluster.status,
            "CreationTime": cluster.creation_time,
            "FailureMessage": cluster.failure_message,
            "InstanceGroups": [self._group_details(cluster, g) for g in cluster.groups.values()],
        }
        for key in _CLUSTER_CONFIG_KEYS:
            if key in cluster.config and key != "RestrictedInstanceGroups":
                result[key] = cluster.config[key]
        if cluster.auto_scaling is not None:
            result["AutoScaling"] = cluster.auto_scaling
        return result

    def _group_details(self, cluster: Cluster, group: Group) -> dict[str, Any]:
        spec = group.spec
        current = sum(
            1
            for n in cluster.nodes.values()
            if n.group == group.name and n.status != "ShuttingDown"
        )
        details: dict[str, Any] = {
            "CurrentCount": current,
            "TargetCount": group.target,
            "InstanceGroupName": group.name,
            "InstanceType": group.instance_type,
            "Status": group.status,
        }
        for key in (
            "MinInstanceCount",
            "LifeCycleConfig",
            "ExecutionRole",
            "ThreadsPerCore",
            "InstanceStorageConfigs",
            "OnStartDeepHealthChecks",
            "TrainingPlanArn",
            "OverrideVpcConfig",
            "ScheduledUpdateConfig",
            "NetworkInterface",
            "CapacityRequirements",
        ):
            if spec.get(key) is not None:
                details["MinCount" if key == "MinInstanceCount" else key] = spec[key]
        details.setdefault("ThreadsPerCore", 2 if group.instance_type.startswith("ml.p") else 1)
        if spec.get("TrainingPlanArn"):
            details["TrainingPlanStatus"] = "Active"
        if group.image_id:
            details["CurrentImageId"] = group.image_id
            details["DesiredImageId"] = group.image_id
        kube = spec.get("KubernetesConfig")
        if kube:
            details["KubernetesConfig"] = {
                "CurrentLabels": kube.get("Labels") or {},
                "DesiredLabels": kube.get("Labels") or {},
                "CurrentTaints": kube.get("Taints") or [],
                "DesiredTaints": kube.get("Taints") or [],
            }
        return details

    def list_clusters(self, p: dict[str, Any]) -> dict[str, Any]:
        clusters = list(self.clusters.values())
        if p.get("NameContains"):
            clusters = [c for c in clusters if p["NameContains"] in c.name]
        if p.get("CreationTimeAfter"):
            clusters = [c for c in clusters if c.creation_time > p["CreationTimeAfter"]]
        if p.get("CreationTimeBefore"):
            clusters = [c for c in clusters if c.creation_time < p["CreationTimeBefore"]]
        if p.get("TrainingPlanArn"):
            clusters = [
                c
                for c in clusters
                if any(
                    g.spec.get("TrainingPlanArn") == p["TrainingPlanArn"] for g in c.groups.values()
                )
            ]
        key: Callable[[Cluster], Any] = (
            (lambda c: c.name) if p.get("SortBy") == "NAME" else (lambda c: c.creation_time)
        )
        clusters.sort(key=key, reverse=p.get("SortOrder", "Descending") == "Descending")
        page, token = _page(clusters, p)
        return {
            "ClusterSummaries": [
                {
                    "ClusterArn": c.arn,
                    "ClusterName": c.name,
                    "CreationTime": c.creation_time,
                    "ClusterStatus": c.status,
                    "TrainingPlanArns": sorted(
                        {
                            g.spec["TrainingPlanArn"]
                            for g in c.groups.values()
                            if g.spec.get("TrainingPlanArn")
                        }
                    ),
                }
                for c in page
            ],
            "NextToken": token,
        }

    def update_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status != "InService":
            raise AwsError(
                "ConflictException",
                f"Cluster {cluster.name} is in {cluster.status} status; it can be updated only "
                "when InService.",
            )
        orchestrator = p.get("Orchestrator")
        if orchestrator is not None and orchestrator != cluster.config.get("Orchestrator"):
            raise AwsError(
                "ValidationException", "The orchestrator of a cluster cannot be changed."
            )
        to_delete = list(p.get("InstanceGroupsToDelete") or [])
        for name in to_delete:
            if name not in cluster.groups:
                raise AwsError("ValidationException", f"Instance group {name} does not exist.")
        specs = p.get("InstanceGroups") or []
        vpc = cluster.config.get("VpcConfig")
        placements: dict[str, list[Placement]] = {}
        deltas: dict[str, int] = {}
        for spec in specs:
            self._check_group_spec(spec)
            existing = cluster.groups.get(spec["InstanceGroupName"])
            if existing is not None and existing.instance_type != spec["InstanceType"]:
                raise AwsError(
                    "ValidationException",
                    f"The instance type of instance group {existing.name} cannot be changed.",
                )
            if spec["InstanceGroupName"] in to_delete:
                raise AwsError(
                    "ValidationException",
                    f"Instance group {spec['InstanceGroupName']} cannot be updated and deleted at once.",
                )
            placements[spec["InstanceGroupName"]] = self._group_placements(vpc, spec)
            current = existing.target if existing is not None else 0
            self._check_plan_capacity(spec, current)
            if not spec.get("TrainingPlanArn"):
                deltas[spec["InstanceType"]] = (
                    deltas.get(spec["InstanceType"], 0) + spec["InstanceCount"] - current
                )
        for instance_type, delta in deltas.items():
            self._check_quota(instance_type, delta)
        auto_scaling = p.get("AutoScaling")
        role = p.get("ClusterRole", cluster.config.get("ClusterRole"))
        if auto_scaling and auto_scaling.get("Mode") == "Enable" and not role:
            raise AwsError("ValidationException", "AutoScaling requires a ClusterRole.")
        self._check_role(p.get("ClusterRole"), "Cluster role")

        for key in ("NodeRecovery", "TieredStorageConfig", "ClusterRole", "NodeProvisioningMode"):
            if p.get(key) is not None:
                cluster.config[key] = p[key]
        if auto_scaling is not None:
            cluster.auto_scaling = self._auto_scaling(auto_scaling)
        cluster.status = "Updating"
        cluster.failure_message = None
        cluster.gen += 1
        previous: dict[str, tuple[dict[str, Any], int] | None] = {}
        added: dict[str, list[Node]] = {}
        for spec in specs:
            name = spec["InstanceGroupName"]
            group = cluster.groups.get(name)
            previous[name] = (dict(group.spec), group.target) if group is not None else None
            if group is None:
                group = Group(spec=dict(spec), target=0, status="Creating")
                cluster.groups[name] = group
            else:
                group.spec = dict(spec)
                group.status = "Updating"
            count = spec["InstanceCount"]
            nodes = sorted(
                (n for n in cluster.nodes.values() if n.group == name), key=lambda n: n.launch_time
            )
            if count > len(nodes):
                added[name] = [
                    self._new_node(cluster, group, placements[name], index)
                    for index in range(len(nodes), count)
                ]
            for node in nodes[count:]:
                self._set_status(cluster, node, "ShuttingDown")
            group.target = count
        for name in to_delete:
            cluster.groups[name].status = "Deleting"
            for node in [n for n in cluster.nodes.values() if n.group == name]:
                self._set_status(cluster, node, "ShuttingDown")
        self._changed(cluster)
        self._grant_node_roles(cluster)
        if self._continuous(cluster):
            self._update_continuously(cluster, added, to_delete)
            return {"ClusterArn": cluster.arn}
        self._event(cluster, "Cluster update started.")
        self._cluster_later(
            cluster,
            self.ctx.profile.hyperpod_update,
            lambda: self._finish_update(cluster, previous, added, to_delete),
        )
        return {"ClusterArn": cluster.arn}

    def _update_continuously(
        self, cluster: Cluster, added: dict[str, list[Node]], deleted: list[str]
    ) -> None:
        """Continuous mode: the cluster and its groups stay InService while nodes come and go."""
        cluster.status = "InService"
        for group in cluster.groups.values():
            if group.name not in deleted:
                group.status = "InService"
        for name, nodes in added.items():
            self._boot_later(cluster, cluster.groups[name], nodes)

        def settle() -> None:
            for node in [n for n in cluster.nodes.values() if n.status == "ShuttingDown"]:
                self._remove_node(cluster, node)
            for name in deleted:
                cluster.groups.pop(name, None)
            if cluster.auto_scaling is not None:
                cluster.auto_scaling["Status"] = "InService"

        self._event(cluster, "Cluster update accepted (continuous provisioning).")
        self._cluster_later(cluster, self.ctx.profile.hyperpod_delete, settle, same_operation=False)

    def _finish_update(
        self,
        cluster: Cluster,
        previous: dict[str, tuple[dict[str, Any], int] | None],
        added: dict[str, list[Node]],
        deleted: list[str],
    ) -> None:
        failures: list[str] = []
        for name, nodes in added.items():
            group = cluster.groups[name]
            message = self._shortfall(group, nodes)
            if message is None:
                for node in nodes:
                    self._bring_up(cluster, node)
                continue
            failures.append(message)
            self._event(cluster, message, "Error", "InstanceGroup", name)
            for node in nodes:
                self._remove_node(cluster, node)
            before = previous.get(name)
            if before is None:
                del cluster.groups[name]
            else:
                group.spec, group.target = before
        for node in [n for n in cluster.nodes.values() if n.status == "ShuttingDown"]:
            self._remove_node(cluster, node)
        for name in deleted:
            cluster.groups.pop(name, None)
        for group in cluster.groups.values():
            group.status = "InService"
        if cluster.auto_scaling is not None:
            cluster.auto_scaling["Status"] = "InService"
        cluster.status = "InService"
        if failures:
            cluster.failure_message = " ".join(failures)
            self._event(cluster, "Cluster update rolled back.", "Error")
        else:
            self._event(cluster, "Cluster update completed.")

    def delete_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status == "Deleting":
            raise AwsError("ConflictException", f"Cluster {cluster.name} is already being deleted.")
        cluster.status = "Deleting"
        cluster.gen += 1
        for node in cluster.nodes.values():
            self._set_status(cluster, node, "ShuttingDown")
        for group in cluster.groups.values():
            group.status = "Deleting"

        def gone() -> None:
            self.clusters.pop(cluster.cluster_id, None)
            self._changed(cluster)
            self._revoke_node_roles(cluster)

        self._cluster_later(cluster, self.ctx.profile.hyperpod_delete, gone)
        return {"ClusterArn": cluster.arn}

    # ---- node operations -----------------------------------------------------------------

    def list_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        nodes = list(cluster.nodes.values())
        if p.get("InstanceGroupNameContains"):
            nodes = [n for n in nodes if p["InstanceGroupNameContains"] in n.group]
        if p.get("CreationTimeAfter"):
            nodes = [n for n in nodes if n.launch_time > p["CreationTimeAfter"]]
        if p.get("CreationTimeBefore"):
            nodes = [n for n in nodes if n.launch_time < p["CreationTimeBefore"]]
        key: Callable[[Node], Any] = (
            (lambda n: n.instance_id) if p.get("SortBy") == "NAME" else (lambda n: n.launch_time)
        )
        nodes.sort(key=key, reverse=p.get("SortOrder", "Ascending") == "Descending")
        page, token = _page(nodes, p)
        return {
            "ClusterNodeSummaries": [
                {
                    "InstanceGroupName": n.group,
                    "InstanceId": n.instance_id,
                    "NodeLogicalId": n.logical_id if p.get("IncludeNodeLogicalIds") else None,
                    "InstanceType": n.instance_type,
                    "LaunchTime": n.launch_time,
                    "LastSoftwareUpdateTime": n.last_software_update,
                    "InstanceStatus": _status(n),
                    "PrivateDnsHostname": _hostname(n),
                }
                for n in page
            ],
            "NextToken": token,
        }

    def _node(self, cluster: Cluster, node_id: str | None, logical_id: str | None) -> Node | None:
        for node in cluster.nodes.values():
            if node_id and node.instance_id == node_id:
                return node
            if logical_id and node.logical_id == logical_id:
                return node
        return None

    def describe_cluster_node(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if not p.get("NodeId") and not p.get("NodeLogicalId"):
            raise AwsError("ValidationException", "Either NodeId or NodeLogicalId is required.")
        node = self._node(cluster, p.get("NodeId"), p.get("NodeLogicalId"))
        if node is None:
            raise AwsError(
                "ResourceNotFound",
                f"Node {p.get('NodeId') or p.get('NodeLogicalId')} not found in cluster {cluster.name}.",
            )
        group = cluster.groups.get(node.group)
        spec = group.spec if group else {}
        kube = spec.get("KubernetesConfig") or {}
        return {
            "NodeDetails": {
                "InstanceGroupName": node.group,
                "InstanceId": node.instance_id,
                "NodeLogicalId": node.logical_id,
                "InstanceStatus": _status(node),
                "InstanceType": node.instance_type,
                "LaunchTime": node.launch_time,
                "LastSoftwareUpdateTime": node.last_software_update,
                "LifeCycleConfig": spec.get("LifeCycleConfig"),
                "OverrideVpcConfig": spec.get("OverrideVpcConfig"),
                "ThreadsPerCore": spec.get("ThreadsPerCore"),
                "InstanceStorageConfigs": spec.get("InstanceStorageConfigs"),
                "PrivatePrimaryIp": node.ip,
                "PrivateDnsHostname": _hostname(node),
                "Placement": {
                    "AvailabilityZone": node.zone_name,
                    "AvailabilityZoneId": node.zone_id,
                },
                "CurrentImageId": group.image_id if group else None,
                "KubernetesConfig": {
                    "CurrentLabels": kube.get("Labels") or {},
                    "DesiredLabels": kube.get("Labels") or {},
                    "CurrentTaints": kube.get("Taints") or [],
                    "DesiredTaints": kube.get("Taints") or [],
                }
                if kube
                else None,
                "CapacityType": "OnDemand",
            }
        }

    def _batch_targets(
        self, cluster: Cluster, p: dict[str, Any]
    ) -> list[tuple[str, str, Node | None]]:
        """(how the caller named it: NodeId|NodeLogicalId, the name, the node) per request item."""
        if not p.get("NodeIds") and not p.get("NodeLogicalIds"):
            raise AwsError("ValidationException", "Either NodeIds or NodeLogicalIds is required.")
        targets: list[tuple[str, str, Node | None]] = []
        for node_id in p.get("NodeIds") or []:
            targets.append(("NodeId", node_id, self._node(cluster, node_id, None)))
        for logical in p.get("NodeLogicalIds") or []:
            targets.append(("NodeLogicalId", logical, self._node(cluster, None, logical)))
        return targets

    def _batch_node_action(
        self,
        p: dict[str, Any],
        verb: str,
        act: Callable[[Cluster, Node], None],
        allowed: tuple[str, ...],
    ) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status in ("Creating", "Deleting", "Failed"):
            raise AwsError(
                "ValidationException",
                f"Cluster {cluster.name} is {cluster.status}; nodes cannot be {verb}.",
            )
        result: dict[str, list[Any]] = {
            "Successful": [],
            "Failed": [],
            "SuccessfulNodeLogicalIds": [],
            "FailedNodeLogicalIds": [],
        }
        for by, name, node in self._batch_targets(cluster, p):
            ok_key, failed_key = (
                ("Successful", "Failed")
                if by == "NodeId"
                else ("SuccessfulNodeLogicalIds", "FailedNodeLogicalIds")
            )
            if node is None:
                result[failed_key].append(
                    {
                        by: name,
                        "ErrorCode": "InstanceIdNotFound",
                        "Message": f"Node {name} not found.",
                    }
                )
            elif node.status not in allowed:
                result[failed_key].append(
                    {
                        by: name,
                        "ErrorCode": "InvalidInstanceStatus",
                        "Message": f"Node {name} is {node.status}; it cannot be {verb}.",
                    }
                )
            else:
                act(cluster, node)
                result[ok_key].append(name)
        return {k: v for k, v in result.items() if v or k in ("Successful", "Failed")}

    def batch_reboot_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        def reboot(cluster: Cluster, node: Node) -> None:
            self._set_status(cluster, node, "Pending", "Rebooting")
            self._event(
                cluster,
                f"Node {node.instance_id} reboot started.",
                resource="Instance",
                group=node.group,
                node_id=node.instance_id,
            )
            self._node_later(
                cluster,
                node,
                self.ctx.profile.node_reboot,
                lambda: self._set_status(cluster, node, "Running"),
            )

        return self._batch_node_action(p, "rebooted", reboot, ("Running", "Failure"))

    def batch_replace_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        def replace(cluster: Cluster, node: Node) -> None:
            self._replace(cluster, node, self.ctx.profile.node_replace)

        return self._batch_node_action(p, "replaced", replace, ("Running", "Failure"))

    def _replace(self, cluster: Cluster, node: Node, delay: float) -> None:
        """Replace `node`'s instance: Pending for `delay`, then a new instance id, Running."""
        self._set_status(cluster, node, "Pending", "Replacing instance")
        self._event(
            cluster,
            f"Node {node.instance_id} replacement started.",
            resource="Instance",
            group=node.group,
            node_id=node.instance_id,
        )

        def done() -> None:
            old = node.instance_id
            cluster.nodes.pop(old, None)
            node.instance_id = instance_id()
            node.launch_time = self.ctx.now()
            cluster.nodes[node.instance_id] = node
            self._event(
                cluster,
                f"Node {old} replaced by {node.instance_id}.",
                resource="Instance",
                group=node.group,
                node_id=node.instance_id,
            )
            self._bring_up(cluster, node)

        self._node_later(cluster, node, delay, done)

    def batch_delete_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        result: dict[str, list[Any]] = {"Successful": [], "Failed": []}
        logical_ok: list[str] = []
        logical_failed: list[dict[str, str]] = []
        for by, name, node in self._batch_targets(cluster, p):
            if node is None:
                error = {by: name, "Code": "NodeIdNotFound", "Message": f"Node {name} not found."}
                (result["Failed"] if by == "NodeId" else logical_failed).append(error)
                continue
            if node.status == "ShuttingDown":
                error = {
                    by: name,
                    "Code": "InvalidNodeStatus",
                    "Message": f"Node {name} is already shutting down.",
                }
                (result["Failed"] if by == "NodeId" else logical_failed).append(error)
                continue
            group = cluster.groups.get(node.group)
            if group is not None:
                group.target = max(group.target - 1, 0)
                group.spec["InstanceCount"] = group.target
            self._set_status(cluster, node, "ShuttingDown")
            self._node_later(
                cluster, node, self.ctx.profile.hyperpod_delete, self._remover(cluster, node)
            )
            (result["Successful"] if by == "NodeId" else logical_ok).append(name)
        response: dict[str, Any] = dict(result)
        if p.get("NodeLogicalIds"):
            response["SuccessfulNodeLogicalIds"] = logical_ok
            response["FailedNodeLogicalIds"] = logical_failed
        return response

    def batch_add_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        successful: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        deltas: dict[str, int] = {}
        for item in p["NodesToAdd"]:
            group = cluster.groups.get(item["InstanceGroupName"])
            if group is not None and not group.spec.get("TrainingPlanArn"):
                deltas[group.instance_type] = (
                    deltas.get(group.instance_type, 0) + item["IncrementTargetCountBy"]
                )
        for instance_type, delta in deltas.items():
            self._check_quota(instance_type, delta)
        for item in p["NodesToAdd"]:
            name, count = item["InstanceGroupName"], item["IncrementTargetCountBy"]
            group = cluster.groups.get(name)
            if group is None:
                failed.append(
                    {
                        "InstanceGroupName": name,
                        "ErrorCode": "InstanceGroupNotFound",
                        "FailedCount": count,
                        "Message": f"Instance group {name} not found.",
                    }
                )
                continue
            if group.status not in ("InService", "Updating") or cluster.status not in (
                "InService",
                "Updating",
            ):
                failed.append(
                    {
                        "InstanceGroupName": name,
                        "ErrorCode": "InvalidInstanceGroupStatus",
                        "FailedCount": count,
                        "Message": f"Instance group {name} is {group.status}.",
                    }
                )
                continue
            placements = self._group_placements(cluster.config.get("VpcConfig"), group.spec)
            existing = sum(1 for n in cluster.nodes.values() if n.group == name)
            nodes = [self._new_node(cluster, group, placements, existing + i) for i in range(count)]
            group.target += count
            group.spec["InstanceCount"] = group.target
            for node in nodes:
                successful.append(
                    {
                        "NodeLogicalId": node.logical_id,
                        "InstanceGroupName": name,
                        "Status": node.status,
                    }
                )
            self._changed(cluster)

            def boot(group: Group = group, nodes: list[Node] = nodes) -> None:
                live = [
                    n
                    for n in nodes
                    if cluster.nodes.get(n.instance_id) is n and n.status == "Pending"
                ]
                message = self._shortfall(group, live)
                if message is None:
                    for node in live:
                        self._bring_up(cluster, node)
                    return
                self._event(cluster, message, "Error", "InstanceGroup", group.name)
                for node in live:
                    self._remove_node(cluster, node)
                group.target -= len(live)
                group.spec["InstanceCount"] = group.target

            self._cluster_later(cluster, self.ctx.profile.node_boot, boot, same_operation=False)
        return {"Successful": successful, "Failed": failed}

    def update_cluster_software(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status != "InService":
            raise AwsError(
                "ConflictException",
                f"Cluster {cluster.name} is {cluster.status}; software can be updated only when InService.",
            )
        names = [g["InstanceGroupName"] for g in p.get("InstanceGroups") or []] or list(
            cluster.groups
        )
        for name in names:
            if name not in cluster.groups:
                raise AwsError("ValidationException", f"Instance group {name} does not exist.")
        cluster.status = "SystemUpdating"
        cluster.gen += 1
        updating = [n for n in cluster.nodes.values() if n.group in names and n.status == "Running"]
        for name in names:
            cluster.groups[name].status = "SystemUpdating"
            if p.get("ImageId"):
                cluster.groups[name].image_id = p["ImageId"]
        for node in updating:
            self._set_status(cluster, node, "SystemUpdating")

        def done() -> None:
            now = self.ctx.now()
            for node in updating:
                if cluster.nodes.get(node.instance_id) is node and node.status == "SystemUpdating":
                    node.last_software_update = now
                    self._set_status(cluster, node, "Running")
            for name in names:
                if name in cluster.groups:
                    cluster.groups[name].status = "InService"
            cluster.status = "InService"
            self._event(cluster, "Cluster software update completed.")

        self._event(cluster, "Cluster software update started.")
        self._cluster_later(cluster, self.ctx.profile.hyperpod_update, done)
        return {"ClusterArn": cluster.arn}

    def start_cluster_health_check(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        if cluster.status != "InService":
            raise AwsError(
                "ValidationException", f"Cluster {cluster.name} is {cluster.status}, not InService."
            )
        for config in p["DeepHealthCheckConfigurations"]:
            name = config["InstanceGroupName"]
            if name not in cluster.groups:
                raise AwsError("ValidationException", f"Instance group {name} does not exist.")
            wanted = set(config.get("InstanceIds") or [])
            for node in [n for n in cluster.nodes.values() if n.group == name]:
                if wanted and node.instance_id not in wanted:
                    continue
                if node.status == "Running":
                    self._health_check(cluster, node)
        return {"ClusterArn": cluster.arn}

    def _health_check(self, cluster: Cluster, node: Node) -> None:
        self._set_status(
            cluster, node, "DeepHealthCheckInProgress", "Deep health check in progress"
        )
        self._event(
            cluster,
            f"Deep health check started on {node.instance_id}.",
            resource="Instance",
            group=node.group,
            node_id=node.instance_id,
        )
        self._node_later(
            cluster,
            node,
            self.ctx.profile.deep_health_check,
            lambda: self._set_status(cluster, node, "Running"),
        )

    def list_cluster_events(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        events = list(cluster.events)
        for key, field_name in (
            ("InstanceGroupName", "InstanceGroupName"),
            ("NodeId", "InstanceId"),
            ("ResourceType", "ResourceType"),
        ):
            if p.get(key):
                events = [e for e in events if e.get(field_name) == p[key]]
        if p.get("EventTimeAfter"):
            events = [e for e in events if e["EventTime"] > p["EventTimeAfter"]]
        if p.get("EventTimeBefore"):
            events = [e for e in events if e["EventTime"] < p["EventTimeBefore"]]
        events.sort(
            key=lambda e: e["EventTime"], reverse=p.get("SortOrder", "Descending") == "Descending"
        )
        page, token = _page(events, p)
        return {"Events": page, "NextToken": token}

    def describe_cluster_event(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        for event in cluster.events:
            if event["EventId"] == p["EventId"]:
                return {"EventDetails": dict(event)}
        raise AwsError(
            "ResourceNotFound", f"Event {p['EventId']} not found in cluster {cluster.name}."
        )

    # ---- faults --------------------------------------------------------------------------

    def _fault_nodes(self, fault: Fault) -> tuple[Cluster, list[Node]]:
        if not fault.cluster:
            raise ValueError("the fault needs a cluster (name or ARN)")
        cluster = self.find(fault.cluster)
        if cluster is None:
            raise ValueError(f"no HyperPod cluster {fault.cluster!r}")
        if fault.node_ids:
            nodes = [n for n in cluster.nodes.values() if n.instance_id in fault.node_ids]
            if len(nodes) != len(set(fault.node_ids)):
                raise ValueError(f"not every node of {fault.node_ids} is in cluster {cluster.name}")
        else:
            nodes = [
                n
                for n in cluster.nodes.values()
                if n.status == "Running" and fault.instance_group in (None, n.group)
            ][:1]
            if not nodes:
                raise ValueError(f"cluster {cluster.name} has no Running node to act on")
            fault.node_ids = [nodes[0].instance_id]
        return cluster, nodes

    def _fail_nodes(self, fault: Fault) -> None:
        with self.ctx.lock:
            cluster, nodes = self._fault_nodes(fault)
            for node in nodes:
                self._set_status(cluster, node, "Failure", "Node failed health checks")
                self._event(
                    cluster,
                    f"Node {node.instance_id} failed health checks.",
                    "Error",
                    "Instance",
                    node.group,
                    node.instance_id,
                )
                if cluster.config.get("NodeRecovery") == "Automatic":
                    detect = self.ctx.profile.node_replace * 0.25

                    def start(node: Node = node) -> None:
                        self._replace(cluster, node, self.ctx.profile.node_replace * 0.75)

                    self._node_later(cluster, node, detect, start)
            self.ctx.flush()

    def _fault_health_check(self, fault: Fault) -> None:
        with self.ctx.lock:
            cluster, nodes = self._fault_nodes(fault)
            for node in nodes:
                self._health_check(cluster, node)
            self.ctx.flush()


def _status(node: Node) -> dict[str, Any]:
    status: dict[str, Any] = {"Status": node.status}
    if node.message:
        status["Message"] = node.message
    return status


def _hostname(node: Node) -> str:
    return "ip-" + node.ip.replace(".", "-") + ".ec2.internal"


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of `items` per MaxResults/NextToken (the token is the next offset)."""
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise AwsError("ValidationException", "Invalid NextToken") from None
    size = int(p.get("MaxResults") or 100)
    page = items[start : start + size]
    token = str(start + size) if start + size < len(items) else None
    return page, token
