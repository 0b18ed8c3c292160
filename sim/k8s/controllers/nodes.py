"""Nodes: the nodes of the cluster's EKS managed node groups and the HyperPod instances the simulated AWS attaches.

HyperPod nodes carry HyperPod's labels (instance type, instance group, node health status,
deep health check status) and taints; their health follows the instance status the simulated
AWS reports, and NotReady nodes lose their pods after an eviction delay.
"""

from __future__ import annotations

import ipaddress
import itertools
import secrets
from typing import TYPE_CHECKING

from sim.interfaces import SimNode
from sim.k8s import gpu_devices
from sim.k8s.controllers.base import Controller, Rule, condition, set_condition
from sim.k8s.errors import ApiError
from sim.k8s.facts import NodeGroup, patch_version, private_dns_name
from sim.k8s.instances import capacity
from sim.k8s.store import Obj, clone
from sim.k8s.timeutil import now_iso

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

HP = "sagemaker.amazonaws.com"
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
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
        self._group_numbers = itertools.count()
        # node -> the label keys and (taint key, effect)s its node group put on it
        self._from_group: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}
        # node-group node -> the order it joined in (scale-in removes the newest first)
        self._joined: dict[str, int] = {}
        self._group_joins: dict[str, int] = {}  # group -> how many nodes it has had

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "evict-from-not-ready-node",
                "nodes",
                lambda n: not is_ready(n),
                self._evict,
                delay=eviction_delay,
            ),
            Rule(
                "hami-registers-devices",
                "daemonsets.apps",
                lambda d: (
                    (d["metadata"].get("namespace"), d["metadata"]["name"])
                    == gpu_devices.HAMI_PLUGIN
                ),
                lambda _d: self._refresh_gpus(),
            ),
        ]

    # -- GPU devices (whole GPUs, MIG partitions, HAMi virtual GPUs) --------------------

    def _hami_running(self) -> bool:
        return self.store.get("daemonsets.apps", *gpu_devices.HAMI_PLUGIN) is not None

    def _apply_gpus(self, node: Obj) -> None:
        """Set what the node's GPU device plugins advertise from its labels (sim.k8s.gpu_devices)."""
        meta = node["metadata"]
        labels = meta.setdefault("labels", {})
        instance_type = labels.get("node.kubernetes.io/instance-type", "")
        gpus = capacity(instance_type).gpus
        resources, extra_labels, annotations = gpu_devices.gpu_state(
            instance_type, gpus, labels, self._hami_running(), meta["name"]
        )
        if not gpus:
            return
        status = node.setdefault("status", {})
        for key in ("capacity", "allocatable"):
            held = status.setdefault(key, {})
            for name in [
                n for n in held if n == gpu_devices.GPU or n.startswith("nvidia.com/mig-")
            ]:
                del held[name]
            held.update(resources)
        labels.pop(gpu_devices.MIG_STATE, None)
        labels.update(extra_labels)
        notes = meta.get("annotations") or {}
        notes.pop(gpu_devices.HAMI_REGISTER, None)
        notes.update(annotations)
        if notes:
            meta["annotations"] = notes
        else:
            meta.pop("annotations", None)

    def _refresh_gpus(self) -> None:
        for existing in self.store.items("nodes"):
            node = clone(existing)
            self._apply_gpus(node)
            if node["metadata"] == existing["metadata"] and node["status"] == existing["status"]:
                continue
            updated = self.update("nodes", node)
            updated["status"] = node["status"]
            self.update_status("nodes", updated)

    # -- node objects ------------------------------------------------------------------

    def node_object(
        self,
        name: str,
        instance_type: str,
        zone: str,
        labels: dict[str, str],
        taints: list[Obj],
        provider_id: str,
        *,
        ip: str | None = None,
        kubelet_version: str | None = None,
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
        ip = ip or str(next(self._ips))
        kubelet = f"v{kubelet_version or self.server.kubernetes_version}-eks-sim"
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
                    {"type": "Hostname", "address": private_dns_name(ip, self.server.region)},
                ],
                "nodeInfo": {
                    "kubeletVersion": kubelet,
                    "kubeProxyVersion": kubelet,
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

    def sync_node_groups(self, groups: tuple[NodeGroup, ...]) -> None:
        """Make the nodes of the cluster's EKS managed node groups match the groups: as many
        as each group's desired size, labelled and tainted as the group says (EKS applies a
        group's labels and taints to its nodes); a scaled-in or deleted group's nodes are
        drained and removed, the newest first. A cluster without node groups has none of these
        nodes, so what only they could run stays Pending (Amazon EKS User Guide, Managed node
        groups: https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html)."""
        wanted = {group.name: group for group in groups}
        current: dict[str, list[Obj]] = {}
        for node in self.store.items("nodes"):
            group_name = (node["metadata"].get("labels") or {}).get(NODEGROUP_LABEL)
            if group_name is not None:
                current.setdefault(group_name, []).append(node)
        for group_name, nodes in current.items():
            nodes.sort(key=lambda node: self._joined.get(node["metadata"]["name"], -1))
            group = wanted.get(group_name)
            keep = group.size if group is not None else 0
            for node in nodes[keep:]:
                name = node["metadata"]["name"]
                self._evict(
                    node,
                    reason="NodeLost",
                    message=f"node {name} was removed with node group {group_name}'s scale-in"
                    if group is not None
                    else f"node {name} was removed with node group {group_name}",
                )
                self.delete("nodes", node)
                self._from_group.pop(name, None)
                self._joined.pop(name, None)
            if group is not None:
                for node in nodes[:keep]:
                    self._follow_group(node, group)
        for group in groups:
            for _ in range(len(current.get(group.name, [])), group.size):
                self.create("nodes", self._group_node(group))

    def _group_labels(self, group: NodeGroup) -> dict[str, str]:
        return {
            **dict(group.labels),
            NODEGROUP_LABEL: group.name,
            "eks.amazonaws.com/capacityType": group.capacity_type,
        }

    @staticmethod
    def _group_taints(group: NodeGroup) -> list[Obj]:
        return [
            {"key": key, "value": value, "effect": effect}
            if value
            else {"key": key, "effect": effect}
            for key, value, effect in group.taints
        ]

    def _group_node(self, group: NodeGroup) -> Obj:
        """A new node of `group`: EKS spreads a group's nodes over its subnets' zones (its Auto
        Scaling group balances them) and each takes a private address from its subnet (Amazon
        EKS User Guide, Managed node groups; Amazon EC2 Auto Scaling User Guide, Availability
        Zone balancing). A group whose subnets are not known gets the region's first zones."""
        n = next(self._group_numbers)
        if group.subnets:
            # the group's k-th node: zones in turn, addresses in order within each subnet
            k = self._group_joins.get(group.name, 0)
            self._group_joins[group.name] = k + 1
            zone, cidr = group.subnets[k % len(group.subnets)]
            net = ipaddress.ip_network(cidr, strict=False)
            # AWS reserves a subnet's first four addresses and its last (Amazon VPC User
            # Guide, Subnet CIDR blocks); every node-group node has its own number n
            ip = str(net[10 + n % max(net.num_addresses - 16, 1)])
        else:
            zone = f"{self.server.region}{'abc'[n % 3]}"
            ip = f"192.168.{n // 200}.{10 + n % 200}"
        name = private_dns_name(ip, self.server.region)
        self._joined[name] = n
        taints = self._group_taints(group)
        self._from_group[name] = (
            set(self._group_labels(group)),
            {(t["key"], t["effect"]) for t in taints},
        )
        return self.node_object(
            name,
            group.instance_type,
            zone,
            self._group_labels(group),
            taints,
            f"aws:///{zone}/i-0{secrets.token_hex(8)}",
            ip=ip,
            kubelet_version=patch_version(group.version) if group.version else None,
        )

    def _follow_group(self, node: Obj, group: NodeGroup) -> None:
        """A label or taint change of the group (UpdateNodegroupConfig) reaches its nodes; what
        else is on the node (kubectl label/taint, the not-ready taints) stays."""
        name = node["metadata"]["name"]
        labels_before, taints_before = self._from_group.get(name, (set(), set()))
        wanted_labels = self._group_labels(group)
        wanted_taints = self._group_taints(group)
        labels = {
            k: v
            for k, v in (node["metadata"].get("labels") or {}).items()
            if k not in labels_before
        } | wanted_labels
        taints = [
            t
            for t in node["spec"].get("taints") or []
            if (t["key"], t["effect"]) not in taints_before
        ] + wanted_taints
        self._from_group[name] = (
            set(wanted_labels),
            {(t["key"], t["effect"]) for t in wanted_taints},
        )
        if labels == node["metadata"].get("labels") and taints == (
            node["spec"].get("taints") or []
        ):
            return
        updated = clone(node)
        updated["metadata"]["labels"] = labels
        if taints:
            updated["spec"]["taints"] = taints
        else:
            updated["spec"].pop("taints", None)
        self.update("nodes", updated)

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
        self._apply_gpus(node)
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
