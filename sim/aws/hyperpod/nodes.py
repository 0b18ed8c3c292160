"""HyperPod nodes: List/DescribeClusterNode(s), BatchAdd/Delete/Reboot/ReplaceClusterNodes,
the node_failure fault and the hardware faults (sim.aws.hyperpod.hardware)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.aws.errors import AwsError
from sim.aws.faults import Fault
from sim.aws.hyperpod.capacity import Capacity
from sim.aws.hyperpod.hardware import fault_of
from sim.aws.hyperpod.model import (
    Cluster,
    Group,
    Node,
    hostname,
    node_status,
    page_of,
)


class NodeOps(Capacity):
    """Node operations."""

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
        page, token = page_of(nodes, p)
        return {
            "ClusterNodeSummaries": [
                {
                    "InstanceGroupName": n.group,
                    "InstanceId": n.instance_id,
                    "NodeLogicalId": n.logical_id if p.get("IncludeNodeLogicalIds") else None,
                    "InstanceType": n.instance_type,
                    "LaunchTime": n.launch_time,
                    "LastSoftwareUpdateTime": n.last_software_update,
                    "InstanceStatus": node_status(n),
                    "PrivateDnsHostname": hostname(n),
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
                "InstanceStatus": node_status(node),
                "InstanceType": node.instance_type,
                "LaunchTime": node.launch_time,
                "LastSoftwareUpdateTime": node.last_software_update,
                "LifeCycleConfig": spec.get("LifeCycleConfig"),
                "OverrideVpcConfig": spec.get("OverrideVpcConfig"),
                "ThreadsPerCore": spec.get("ThreadsPerCore"),
                "InstanceStorageConfigs": spec.get("InstanceStorageConfigs"),
                "PrivatePrimaryIp": node.ip,
                "PrivateDnsHostname": hostname(node),
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
        return self._batch_node_action(p, "rebooted", self._reboot, ("Running", "Failure"))

    def batch_replace_cluster_nodes(self, p: dict[str, Any]) -> dict[str, Any]:
        def replace(cluster: Cluster, node: Node) -> None:
            self._replace(cluster, node, self.ctx.profile.node_replace)

        return self._batch_node_action(p, "replaced", replace, ("Running", "Failure"))

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

    def _inject_hardware(self, fault: Fault) -> None:
        """The node (or the first Running one) gets the hardware fault; it shows at once unless
        only a deep health check finds it."""
        with self.ctx.lock:
            cluster, nodes = self._fault_nodes(fault)
            for node in nodes:
                node.hardware = fault_of(fault.kind, fault.message)
                if not node.hardware.latent:
                    self._hardware_failed(cluster, node)
            self.ctx.flush()
