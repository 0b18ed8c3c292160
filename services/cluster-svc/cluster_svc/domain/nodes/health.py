"""What HyperPod and Kubernetes report about nodes (the port `NodesPort` reads), and the one
health view per node: HyperPod's instance status, the Kubernetes conditions and HyperPod's
health labels joined into one verdict with the next step."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shared.contracts.nodes import NodeAction

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"

DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"

INSTANCE_ID_LABEL = "sagemaker.amazonaws.com/instance-id"

PRESSURE_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")

IN_PROGRESS = frozenset({"Pending", "SystemUpdating", "DeepHealthCheckInProgress", "ShuttingDown"})


@dataclass(frozen=True)
class NodeInstance:
    """One node as HyperPod reports it (ListClusterNodes / DescribeClusterNode)."""

    node_id: str
    instance_group: str
    instance_type: str
    status: str  # Running | Failure | Pending | ShuttingDown | SystemUpdating | ...
    message: str | None = None
    logical_id: str | None = None
    launch_time: datetime | None = None
    hostname: str | None = None


@dataclass(frozen=True)
class KubeNode:
    """One Kubernetes Node: conditions, HyperPod's labels and taints."""

    name: str
    instance_id: str | None
    conditions: dict[str, str]  # type -> status (True|False|Unknown)
    condition_messages: dict[str, str]
    labels: dict[str, str]
    taints: list[dict[str, str]]
    unschedulable: bool = False


@dataclass(frozen=True)
class BatchResult:
    successful: list[str]
    failed: dict[str, dict[str, str]]  # node id -> {code, message}


@dataclass(frozen=True)
class ClusterRecovery:
    status: str  # the HyperPod cluster's status
    mode: str | None  # NodeRecovery: Automatic | None


class NodesPort(Protocol):
    async def list_nodes(self, cluster: str) -> list[NodeInstance]: ...

    async def describe_node(self, cluster: str, node_id: str) -> dict[str, Any] | None: ...

    async def batch(self, action: NodeAction, cluster: str, node_ids: list[str]) -> BatchResult: ...

    async def start_health_check(
        self, cluster: str, configurations: list[dict[str, Any]]
    ) -> None: ...

    async def node_recovery(self, cluster: str) -> ClusterRecovery | None: ...

    async def set_node_recovery(self, cluster: str, mode: str) -> None: ...

    async def node_events(self, cluster: str, node_id: str) -> list[dict[str, Any]]: ...


def next_step_for(health: str, status: str, label: str | None, recovery: str | None) -> str | None:
    """The escalation step that fits: investigate -> reboot -> replace."""
    if health == "healthy":
        return None
    if status == "Failure" or (label or "").startswith("UnschedulablePending"):
        if recovery == "Automatic":
            action = "reboots" if label == "UnschedulablePendingReboot" else "replaces"
            return (
                f"HyperPod {action} it (NodeRecovery=Automatic): watch the node events; if it"
                " does not recover, reboot it, then replace it"
            )
        if label == "UnschedulablePendingReplacement":
            # HyperPod's health agent found a fault a reboot does not clear (or a reboot did not)
            return (
                "replace it (POST .../nodes/replace): HyperPod marks it for replacement; a reboot"
                " will not clear this fault"
            )
        return (
            "investigate (GET .../nodes/{id}: conditions, taints, HyperPod events), then reboot it"
            " (POST .../nodes/reboot); if it still fails, replace it (POST .../nodes/replace)"
        )
    if status in IN_PROGRESS:
        return f"wait: the node is {status}"
    return (
        "investigate (GET .../nodes/{id}: conditions and events); if it stays unhealthy,"
        " reboot it, then replace it"
    )


def health_view(
    instance: NodeInstance,
    kube: KubeNode | None,
    recovery: str | None,
    kube_readable: bool = True,
) -> dict[str, Any]:
    """Instance status + Kubernetes conditions + HyperPod health label/taints, one verdict:
    healthy | degraded | unhealthy | busy (an operation is under way) | unregistered.
    With `kube_readable` False (the Kubernetes API did not answer) the instance status decides."""
    reasons: list[str] = []
    label = kube.labels.get(HEALTH_LABEL) if kube else None
    if instance.status == "Failure":
        health = "unhealthy"
        reasons.append(
            f"HyperPod reports the instance as Failure: {instance.message or 'no detail'}"
        )
    elif instance.status in IN_PROGRESS:
        health = "busy"
        reasons.append(
            f"instance is {instance.status}" + (f": {instance.message}" if instance.message else "")
        )
    elif not kube_readable:
        health = "healthy"
        reasons.append("Kubernetes was not readable: the verdict rests on HyperPod's status alone")
    elif kube is None:
        health = "unregistered"
        reasons.append("the instance runs but no Kubernetes node has registered for it")
    else:
        health = "healthy"
        ready = kube.conditions.get("Ready")
        if ready != "True":
            health = "unhealthy"
            detail = kube.condition_messages.get("Ready") or ""
            reasons.append(
                f"Kubernetes Ready is {ready or 'missing'}" + (f": {detail}" if detail else "")
            )
        if label is not None and label != "Schedulable":
            health = "unhealthy"
            reasons.append(f"HyperPod health label is {label}")
        pressure = [c for c in PRESSURE_CONDITIONS if kube.conditions.get(c) == "True"]
        if pressure and health == "healthy":
            health = "degraded"
        reasons += [f"{c} is True" for c in pressure]
        if kube.unschedulable and health == "healthy":
            health = "degraded"
            reasons.append("the node is cordoned")
    view: dict[str, Any] = {
        "node_id": instance.node_id,
        "logical_id": instance.logical_id,
        "instance_group": instance.instance_group,
        "instance_type": instance.instance_type,
        "instance_status": instance.status,
        "instance_message": instance.message,
        "launch_time": instance.launch_time.isoformat() if instance.launch_time else None,
        "hostname": instance.hostname,
        "health": health,
        "reasons": reasons,
        "next_step": next_step_for(health, instance.status, label, recovery),
        "kubernetes": None,
    }
    if kube is not None:
        view["kubernetes"] = {
            "node_name": kube.name,
            "conditions": dict(kube.conditions),
            "health_status": label,
            "deep_health_check_status": kube.labels.get(DEEP_HEALTH_LABEL),
            "taints": [dict(t) for t in kube.taints],
            "unschedulable": kube.unschedulable,
            "labels": {
                k: v for k, v in kube.labels.items() if k.startswith("sagemaker.amazonaws.com/")
            },
        }
    return view


def join_nodes(
    instances: Iterable[NodeInstance],
    kube_nodes: Iterable[KubeNode] | None,
    recovery: str | None,
) -> list[dict[str, Any]]:
    """One view per HyperPod node; `kube_nodes` None: the Kubernetes API was not readable."""
    by_instance: dict[str, KubeNode] = {}
    for k in kube_nodes or ():
        key = k.instance_id or k.name.removeprefix("hyperpod-")
        by_instance[key] = k
    readable = kube_nodes is not None
    views = [health_view(i, by_instance.get(i.node_id), recovery, readable) for i in instances]
    return sorted(views, key=lambda v: (v["instance_group"], v["node_id"]))


def summary(views: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for view in views:
        counts[view["health"]] = counts.get(view["health"], 0) + 1
    return counts
