"""HyperPod software and health: UpdateClusterSoftware, StartClusterHealthCheck (and the
deep_health_check fault), List/DescribeClusterEvent(s)."""

from __future__ import annotations

from typing import Any

from sim.aws.errors import AwsError
from sim.aws.faults import Fault
from sim.aws.hyperpod.base import HyperPodBase
from sim.aws.hyperpod.model import (
    page_of,
)


class SoftwareOps(HyperPodBase):
    """Patching, deep health checks and cluster events."""

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
        page, token = page_of(events, p)
        return {"Events": page, "NextToken": token}

    def describe_cluster_event(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["ClusterName"])
        for event in cluster.events:
            if event["EventId"] == p["EventId"]:
                return {"EventDetails": dict(event)}
        raise AwsError(
            "ResourceNotFound", f"Event {p['EventId']} not found in cluster {cluster.name}."
        )

    def _fault_health_check(self, fault: Fault) -> None:
        with self.ctx.lock:
            cluster, nodes = self._fault_nodes(fault)
            for node in nodes:
                self._health_check(cluster, node)
            self.ctx.flush()
