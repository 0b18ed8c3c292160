"""The state every HyperPod operation shares: the clusters, lookups, what the Kubernetes
emulator sees of a node, and the timed transitions of nodes (boot, reboot, replace, deep
health check) and their events."""

from __future__ import annotations

import ipaddress
import logging
import uuid
from collections.abc import Callable

from sim.aws.context import SimContext, instance_id
from sim.aws.errors import AwsError
from sim.aws.faults import Fault
from sim.aws.hyperpod.hardware import after_reboot, found
from sim.aws.hyperpod.model import (
    Cluster,
    EksLink,
    Group,
    Node,
    Placement,
)
from sim.interfaces import NodeFaultHooks, SimNode

log = logging.getLogger(__name__)
HP = "sagemaker.amazonaws.com"


class HyperPodBase:
    """The clusters and what every operation family does with their nodes."""

    def __init__(self, ctx: SimContext, eks: EksLink) -> None:
        self.ctx = ctx
        self.clusters: dict[str, Cluster] = {}
        self._eks = eks
        ctx.eks_nodes = self.nodes_for_eks

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
        fault = node.hardware
        if fault is not None and node.status == "Failure":
            labels[f"{HP}/fault-type"] = fault.fault_type
            labels[f"{HP}/fault-reason"] = fault.fault_reason
            if fault.found_by_health_check:
                labels[f"{HP}/deep-health-check-status"] = "Failed"
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
        if node.status == "Failure" and node.hardware is not None:
            replace = node.hardware.needs_replacement
            return "UnschedulablePendingReplacement" if replace else "UnschedulablePendingReboot"
        if node.status == "Failure":
            automatic = cluster.config.get("NodeRecovery") == "Automatic"
            return "UnschedulablePendingReplacement" if automatic else "Unschedulable"
        if node.message and "Reboot" in node.message:
            return "UnschedulablePendingReboot"
        return "Unschedulable"

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
            node.hardware = None  # a new instance: the old one's fault went with it
            self._event(
                cluster,
                f"Node {old} replaced by {node.instance_id}.",
                resource="Instance",
                group=node.group,
                node_id=node.instance_id,
            )
            self._bring_up(cluster, node)

        self._node_later(cluster, node, delay, done)

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

        def done() -> None:
            if node.hardware is None:
                self._set_status(cluster, node, "Running")
            else:
                node.hardware = found(node.hardware)
                self._hardware_failed(cluster, node)

        self._node_later(cluster, node, self.ctx.profile.deep_health_check, done)

    def _reboot(self, cluster: Cluster, node: Node) -> None:
        """Reboot `node`: Pending for the profile's `node_reboot`, then Running, or Failure again
        if its hardware fault survives a reboot."""
        self._set_status(cluster, node, "Pending", "Rebooting")
        self._event(
            cluster,
            f"Node {node.instance_id} reboot started.",
            resource="Instance",
            group=node.group,
            node_id=node.instance_id,
        )

        def done() -> None:
            healed = node.hardware is not None and node.hardware.heals_on_reboot
            node.hardware = after_reboot(node.hardware) if node.hardware else None
            if node.hardware is None or node.hardware.latent:
                self._set_status(cluster, node, "Running")
                if healed:
                    self._tell_kubernetes(
                        cluster, lambda kube, eks: kube.node_fault_cleared(eks, node.instance_id)
                    )
            else:
                self._hardware_failed(cluster, node, rebooted=True)

        self._node_later(cluster, node, self.ctx.profile.node_reboot, done)

    def _hardware_failed(self, cluster: Cluster, node: Node, rebooted: bool = False) -> None:
        """`node`'s hardware fault shows: Failure, the events, and with NodeRecovery=Automatic
        what the health label asks for (a reboot, or a replacement)."""
        fault = node.hardware
        assert fault is not None
        message = fault.message + ("; the reboot did not clear it" if rebooted else "")
        self._set_status(cluster, node, "Failure", message)
        self._event(
            cluster,
            f"Node {node.instance_id} failed health checks: {message}",
            "Error",
            "Instance",
            node.group,
            node.instance_id,
        )
        self._report_to_kubernetes(cluster, node, fault.reason, message)
        if cluster.config.get("NodeRecovery") != "Automatic":
            return
        detect = self.ctx.profile.node_replace * 0.25
        if fault.needs_replacement:
            rest = self.ctx.profile.node_replace * 0.75
            self._node_later(cluster, node, detect, lambda: self._replace(cluster, node, rest))
        else:
            self._node_later(cluster, node, detect, lambda: self._reboot(cluster, node))

    def _report_to_kubernetes(
        self, cluster: Cluster, node: Node, reason: str, message: str
    ) -> None:
        """The Node's Warning event (after its labels and status are synced)."""
        self._tell_kubernetes(
            cluster, lambda kube, eks: kube.node_fault(eks, node.instance_id, reason, message)
        )

    def _tell_kubernetes(
        self, cluster: Cluster, call: Callable[[NodeFaultHooks, str], None]
    ) -> None:
        """`call` the emulator's node fault hooks once it has the cluster's current nodes."""
        eks, kube = cluster.eks_name, self.ctx.kube
        if eks is None or not isinstance(kube, NodeFaultHooks) or not self.ctx.eks_kube_ready(eks):
            return
        self.ctx.flush()
        try:
            call(kube, eks)
        except Exception:
            log.exception("node fault hook of %s failed", eks)

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
