"""Nodes: the cluster's system nodes and the HyperPod instances the simulated AWS attaches.

HyperPod nodes carry HyperPod's labels (instance type, instance group, node health status,
deep health check status) and taints; their health follows the instance status the simulated
AWS reports, and NotReady nodes lose their pods after an eviction delay.
"""

from __future__ import annotations

import ipaddress
import itertools
from typing import TYPE_CHECKING

from sim.interfaces import SimNode
from sim.k8s.controllers.base import Controller, Rule, condition, set_condition
from sim.k8s.errors import ApiError
from sim.k8s.facts import NodeGroup
from sim.k8s.instances import capacity
from sim.k8s.store import Obj, clone
from sim.k8s.timeutil import now_iso

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

HP = "sagemaker.amazonaws.com"
HEALTH_LABEL = f"{HP}/node-health-status"
DHC_LABEL = f"{HP}/deep-health-check-status"
HEALTH_TAINT = {"key": HEALTH_LABEL, "value": "Unschedulable", "effect": "NoSchedule"}
NOT_READY_TAINTS = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
]


def is_ready(node: Obj) -> bool:
    ready = condition(node, "Ready")
    return bool(ready and ready.get("status") == "True")


def eviction_delay(profile: object) -> float:
    """How long pods outlive their node's NotReady (300 s tolerations in EKS, scaled)."""
    return float(getattr(profile, "pod_schedule", 1.0)) * 5


class NodeController(Controller):
    name = "node-controller"

    def __init__(self, server: ApiServer) -> None:
        super().__init__(server)
        self._ips = itertools.islice(ipaddress.ip_network("10.1.0.0/16").hosts(), 10, None)

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "evict-from-not-ready-node",
                "nodes",
                lambda n: not is_ready(n),
                self._evict,
                delay=eviction_delay,
            )
        ]

    # -- node objects ------------------------------------------------------------------

    def node_object(
        self,
        name: str,
        instance_type: str,
        zone: str,
        labels: dict[str, str],
        taints: list[Obj],
        provider_id: str,
    ) -> Obj:
        cap = capacity(instance_type)
        resources = {
            "cpu": str(cap.cpu),
            "memory": f"{cap.memory_gib}Gi",
            "pods": "110" if cap.cpu < 64 else "737",
            "ephemeral-storage": "500Gi",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if cap.gpus:
            resources["nvidia.com/gpu"] = str(cap.gpus)
        if cap.efa:
            resources["vpc.amazonaws.com/efa"] = str(cap.efa)
        if cap.neuron:
            resources["aws.amazon.com/neuron"] = str(cap.neuron)
            resources["aws.amazon.com/neuroncore"] = str(cap.neuron * 2)
        allocatable = dict(resources, cpu=f"{cap.cpu * 1000 - 90}m")
        ip = str(next(self._ips))
        base_labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/region": self.server.region,
            "topology.kubernetes.io/zone": zone,
        }
        base_labels.update(labels)
        now = now_iso()
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": base_labels},
            "spec": {"providerID": provider_id, "taints": taints}
            if taints
            else {"providerID": provider_id},
            "status": {
                "capacity": resources,
                "allocatable": allocatable,
                "conditions": [
                    {
                        "type": t,
                        "status": "False",
                        "reason": r,
                        "message": "",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                    for t, r in (
                        ("MemoryPressure", "KubeletHasSufficientMemory"),
                        ("DiskPressure", "KubeletHasNoDiskPressure"),
                        ("PIDPressure", "KubeletHasSufficientPID"),
                    )
                ]
                + [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "addresses": [
                    {"type": "InternalIP", "address": ip},
                    {"type": "Hostname", "address": f"ip-{ip.replace('.', '-')}.ec2.internal"},
                ],
                "nodeInfo": {
                    "kubeletVersion": f"v{self.server.kubernetes_version}-eks-sim",
                    "kubeProxyVersion": f"v{self.server.kubernetes_version}-eks-sim",
                    "containerRuntimeVersion": "containerd://1.7.27",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "osImage": "Amazon Linux 2023",
                    "kernelVersion": "6.1.0",
                    "machineID": name,
                    "systemUUID": name,
                    "bootID": name,
                },
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            },
        }

    def add_node_groups(self, groups: tuple[NodeGroup, ...]) -> None:
        """The nodes of the cluster's EKS managed node groups, as EKS labels them."""
        n = 0
        for group in groups:
            for _ in range(group.size):
                node = self.node_object(
                    f"ip-192-168-{n}-{10 + n}.ec2.internal",
                    group.instance_type,
                    f"{self.server.region}{'abc'[n % 3]}",
                    {
                        "eks.amazonaws.com/nodegroup": group.name,
                        "eks.amazonaws.com/capacityType": group.capacity_type,
                    },
                    [],
                    f"aws:///{self.server.region}a/i-0{n:016x}",
                )
                self.create("nodes", node)
                n += 1

    def sync_hyperpod(self, nodes: list[SimNode]) -> None:
        # a Pending instance has no node yet, unless it already joined (a reboot): then NotReady
        wanted = {
            f"hyperpod-{n.instance_id}": n
            for n in nodes
            if n.status != "Pending" or self.store.get("nodes", "", f"hyperpod-{n.instance_id}")
        }
        for node in self.store.items("nodes"):
            labels = node["metadata"].get("labels") or {}
            if (
                labels.get(f"{HP}/compute-type") == "hyperpod"
                and node["metadata"]["name"] not in wanted
            ):
                self._evict(
                    node, reason="NodeLost", message=f"node {node['metadata']['name']} was removed"
                )
                self.delete("nodes", node)
        for name, sim in wanted.items():
            self._sync_one(name, sim)

    def _sync_one(self, name: str, sim: SimNode) -> None:
        health = {
            "Running": "Schedulable",
            "DeepHealthCheckInProgress": "Unschedulable",
            "SystemUpdating": "Unschedulable",
            "Failure": "UnschedulablePendingReplacement",
            "ShuttingDown": "Unschedulable",
            "Pending": "UnschedulablePendingReboot",
        }.get(sim.status, "Unschedulable")
        labels = {
            f"{HP}/compute-type": "hyperpod",
            f"{HP}/instance-group-name": sim.instance_group,
            f"{HP}/cluster-name": sim.hyperpod_cluster,
            f"{HP}/instance-id": sim.instance_id,
            HEALTH_LABEL: health,
            DHC_LABEL: "InProgress" if sim.status == "DeepHealthCheckInProgress" else "Passed",
            "topology.k8s.aws/zone-id": sim.availability_zone,
        }
        labels.update(sim.labels)
        taints: list[Obj] = [dict(t) for t in sim.taints]
        if health != "Schedulable":
            taints.append(dict(HEALTH_TAINT))
        ready = sim.status not in ("Failure", "ShuttingDown", "Pending")
        existing = self.store.get("nodes", "", name)
        if existing is None:
            node = self.node_object(
                name,
                sim.instance_type,
                sim.availability_zone,
                labels,
                taints,
                f"aws:///{sim.availability_zone}/{sim.instance_id}",
            )
        else:
            node = clone(existing)
            node["metadata"]["labels"].update(labels)
            node["spec"]["taints"] = taints + [
                t
                for t in node["spec"].get("taints") or []
                if t["key"].startswith("node.kubernetes.io/") and not ready
            ]
        node["spec"]["unschedulable"] = sim.status == "SystemUpdating" or None
        if node["spec"]["unschedulable"] is None:
            node["spec"].pop("unschedulable")
        self._set_ready_fields(node, ready)
        if existing is None:
            self.create("nodes", node)
        else:
            updated = self.update("nodes", node)
            updated["status"] = node["status"]
            self.update_status("nodes", updated)

    def _set_ready_fields(self, node: Obj, ready: bool) -> None:
        status = node.setdefault("status", {})
        set_condition(
            status,
            "Ready",
            "True" if ready else "Unknown",
            "KubeletReady" if ready else "NodeStatusUnknown",
            "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
        )
        taints = [
            t
            for t in node["spec"].get("taints") or []
            if t.get("key") != "node.kubernetes.io/not-ready"
        ]
        if not ready:
            taints += [dict(t, timeAdded=now_iso()) for t in NOT_READY_TAINTS]
        if taints:
            node["spec"]["taints"] = taints
        else:
            node["spec"].pop("taints", None)

    def set_ready(self, name: str, ready: bool) -> None:
        existing = self.store.get("nodes", "", name)
        if existing is None:
            raise ApiError(404, f'nodes "{name}" not found')
        node = clone(existing)
        self._set_ready_fields(node, ready)
        self.update("nodes", node)
        node = clone(self.store.get("nodes", "", name) or node)
        self._set_ready_fields(node, ready)
        self.update_status("nodes", node)
        self.event(
            node,
            "NodeReady" if ready else "NodeNotReady",
            f"Node {name} status is now: {'NodeReady' if ready else 'NodeNotReady'}",
        )

    def set_health(self, name: str, status: str, reason: str) -> None:
        existing = self.store.get("nodes", "", name)
        if existing is None:
            raise ApiError(404, f'nodes "{name}" not found')
        node = clone(existing)
        node["metadata"]["labels"][HEALTH_LABEL] = status
        taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != HEALTH_LABEL]
        if status != "Schedulable":
            taints.append(dict(HEALTH_TAINT))
        node["spec"]["taints"] = taints
        if not taints:
            node["spec"].pop("taints")
        self.update("nodes", node)
        self.event(
            node,
            reason,
            f"node health status is now {status}",
            "Normal" if status == "Schedulable" else "Warning",
        )
        if status.startswith("UnschedulablePending"):
            self._evict(
                node, reason="NodeHealthFault", message=f"node {name} is {status} ({reason})"
            )
        instance = node["metadata"]["labels"].get(f"{HP}/instance-id", name)
        for listener in list(self.server.node_fault_listeners):
            listener(self.server.cluster, instance, status)

    # -- eviction ----------------------------------------------------------------------

    def _evict(self, node: Obj, reason: str = "NodeLost", message: str | None = None) -> None:
        name = node["metadata"]["name"]
        text = message or f"Node {name} which was running pod is unresponsive"
        for pod in self.store.items("pods"):
            if pod["spec"].get("nodeName") != name:
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            self.server.kubelet.fail_pod(
                pod["metadata"]["namespace"], pod["metadata"]["name"], reason, text
            )
