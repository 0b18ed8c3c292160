"""Capacity now, from a cluster's Kubernetes Nodes and Pods (pure).

Per node: total = `status.allocatable`; allocated = the requests of the non-terminated pods bound
to it (phase neither Succeeded nor Failed), each pod's request being what the scheduler counts:
max(sum of its containers, any init container) plus its overhead, an extended resource given
only as a limit counting as its request; free = total - allocated. A node takes no new pods when
it is cordoned, not Ready or tainted by HyperPod's health label; it is unhealthy when not Ready
or its health label is not Schedulable. A pending pod is a non-terminated pod bound to no node.

Cost is the list price per hour of every node of a group (an unhealthy node bills all the same),
from the price table the caller passes (`cluster_svc.domain.prices`, read from the AWS Price List
API).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

from cluster_svc.domain.prices import PriceTable
from shared.boundary import TEAM_NAMESPACE_PREFIX
from shared.contracts.capacity import (
    NO_RESOURCES,
    Amount,
    ClusterCapacity,
    ClusterSummary,
    FleetCapacity,
    GroupCapacity,
    NodeCapacity,
    PendingPod,
    Resources,
    WorkloadCost,
)

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
MEMORY = "memory"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
INSTANCE_ID_LABEL = "sagemaker.amazonaws.com/instance-id"
TYPE_LABEL = "node.kubernetes.io/instance-type"
TERMINATED = frozenset({"Succeeded", "Failed"})
JOB_LABEL = "hyperpilot.dev/job"
UNGROUPED = "ungrouped"

# ---- quantities --------------------------------------------------------------------------------

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity ("8", "2048Gi", "500M", "1e9", "100m") as a number."""
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None or match.group(2) not in _SUFFIX:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from exc


def _whole(value: Decimal) -> int:
    """Rounded up, as Kubernetes rounds a quantity to its integer form."""
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    wanted = dict(resources.get("requests") or {})
    for name, qty in (resources.get("limits") or {}).items():
        wanted.setdefault(name, qty)
    out: dict[str, Decimal] = {}
    for name, qty in wanted.items():
        try:
            out[name] = quantity(qty)
        except ValueError:
            continue
    return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the scheduler counts for a pod: max(sum of containers, any init container) +
    overhead."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for name, qty in _container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + qty
    for container in spec.get("initContainers") or []:
        for name, qty in _container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), qty)
    for name, qty in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, Decimal(0)) + quantity(qty)
    return total


# ---- nodes and pods ----------------------------------------------------------------------------


def _ready(node: Mapping[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status")) == "True"
    return False


def _unhealthy_reasons(node: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(why it takes no new pods, why it is unhealthy)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = node.get("spec") or {}
    blocked: list[str] = []
    unhealthy: list[str] = []
    if not _ready(node):
        unhealthy.append("not Ready")
        blocked.append("not Ready")
    health = labels.get(HEALTH_LABEL)
    if health is not None and health != "Schedulable":
        unhealthy.append(f"health label {health}")
    if spec.get("unschedulable"):
        blocked.append("cordoned")
    for taint in spec.get("taints") or []:
        if taint.get("key") == HEALTH_LABEL and taint.get("effect") in ("NoSchedule", "NoExecute"):
            blocked.append(f"tainted {HEALTH_LABEL}={taint.get('value', '')}")
    if health is not None and health != "Schedulable" and not any("tainted" in b for b in blocked):
        blocked.append(f"health label {health}")
    return blocked, unhealthy


def _amount(allocatable: Mapping[str, Any], used: Mapping[str, Decimal], name: str) -> Amount:
    total = _whole(quantity(allocatable[name])) if name in allocatable else 0
    return Amount.of(total, _whole(used.get(name, Decimal(0))))


def _node_view(node: Mapping[str, Any], used: dict[str, Decimal], pods: int) -> NodeCapacity:
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    blocked, unhealthy = _unhealthy_reasons(node)
    provider = str((node.get("spec") or {}).get("providerID") or "").rsplit("/", 1)[-1]
    return NodeCapacity(
        name=str(meta.get("name", "")),
        instance_id=labels.get(INSTANCE_ID_LABEL)
        or (provider if provider.startswith("i-") else None),
        instance_group=labels.get(GROUP_LABEL),
        instance_type=labels.get(TYPE_LABEL),
        resources=Resources(
            gpus=_amount(allocatable, used, GPU),
            efa=_amount(allocatable, used, EFA),
            memory_bytes=_amount(allocatable, used, MEMORY),
        ),
        pods=pods,
        schedulable=not blocked,
        healthy=not unhealthy,
        reasons=list(dict.fromkeys(blocked + unhealthy)),
    )


def _scheduler_message(pod: Mapping[str, Any]) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason") or "") or None
    return None


def _pending_view(pod: Mapping[str, Any], wanted: dict[str, Decimal]) -> PendingPod:
    meta = pod.get("metadata") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return PendingPod(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        gpus=_whole(wanted.get(GPU, Decimal(0))),
        efa=_whole(wanted.get(EFA, Decimal(0))),
        memory_bytes=_whole(wanted.get(MEMORY, Decimal(0))),
        instance_group=selector.get(GROUP_LABEL),
        instance_type=selector.get(TYPE_LABEL),
        reason=_scheduler_message(pod),
    )


def _group(name: str, nodes: list[NodeCapacity], prices: PriceTable) -> GroupCapacity:
    instance_type = next((n.instance_type for n in nodes if n.instance_type), None)
    price = prices.instance(instance_type)
    resources = NO_RESOURCES
    for node in nodes:
        resources = resources + node.resources
    return GroupCapacity(
        name=name,
        instance_type=instance_type,
        nodes=len(nodes),
        schedulable_nodes=sum(1 for n in nodes if n.schedulable),
        resources=resources,
        price_per_node_hour=price,
        cost_per_hour=None if price is None else round(price * len(nodes), 4),
    )


@dataclass
class _Spend:
    pods: int = 0
    per_hour: float = 0.0
    hours: float = 0.0
    so_far: float = 0.0

    def add(self, per_hour: float, hours: float) -> None:
        self.pods += 1
        self.per_hour += per_hour
        self.hours = max(self.hours, hours)
        self.so_far += per_hour * hours

    def ended(self, per_hour: float, hours: float) -> None:
        """A pod that ran `hours` and finished: what it cost, nothing more from now on."""
        self.hours = max(self.hours, hours)
        self.so_far += per_hour * hours

    def view(self, namespace: str, name: str) -> WorkloadCost:
        return WorkloadCost(
            namespace=namespace,
            name=name,
            pods=self.pods,
            cost_per_hour=round(self.per_hour, 4),
            running_hours=round(self.hours, 4),
            cost_so_far=round(self.so_far, 4),
        )


def _instant(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def _started(pod: Mapping[str, Any]) -> datetime | None:
    return _instant((pod.get("status") or {}).get("startTime"))


def finished_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a finished pod's last container ended (its containers' terminated.finishedAt)."""
    status = pod.get("status") or {}
    ends = [
        _instant(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for c in status.get("containerStatuses") or []
    ]
    known = [e for e in ends if e is not None]
    return max(known) if known else None


def costed(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's cost is counted: it ran (or runs) on a node, in a job or a team's
    namespace; a finished one when it says when it ended."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if phase in TERMINATED:
        if finished_at(pod) is None:
            return False
    elif phase != "Running":
        return False
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    return bool((meta.get("labels") or {}).get(JOB_LABEL)) or namespace.startswith(
        TEAM_NAMESPACE_PREFIX
    )


@dataclass(frozen=True)
class _NodeRate:
    """What a node's pods share: its price per hour, its GPUs and memory."""

    price: float
    gpus: Decimal
    memory: Decimal

    @classmethod
    def of(cls, node: Mapping[str, Any], prices: PriceTable) -> _NodeRate | None:
        meta = node.get("metadata") or {}
        price = prices.instance((meta.get("labels") or {}).get(TYPE_LABEL))
        if price is None:
            return None
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpus = quantity(allocatable[GPU]) if GPU in allocatable else Decimal(0)
        memory = quantity(allocatable[MEMORY]) if MEMORY in allocatable else Decimal(0)
        return cls(price, gpus, memory)

    def per_hour(self, wanted: Mapping[str, Decimal]) -> float:
        """The pod's part of the node's price: its GPUs of the node's, or its memory's part
        where it asks no GPUs."""
        asked_gpus = wanted.get(GPU, Decimal(0))
        if self.gpus > 0 and asked_gpus > 0:
            share = asked_gpus / self.gpus
        elif self.memory > 0:
            share = wanted.get(MEMORY, Decimal(0)) / self.memory
        else:
            return 0.0
        return float(min(share, Decimal(1))) * self.price


Running = tuple[Mapping[str, Any], Mapping[str, Decimal], str]  # pod, its requests, its node


def workload_costs(
    nodes: Iterable[Mapping[str, Any]],
    running: Iterable[Running],
    prices: PriceTable,
    now: datetime,
) -> tuple[list[WorkloadCost], list[WorkloadCost]]:
    """(per job, per team) cost at list prices of their pods (see `WorkloadCost`): the running
    ones by the hour and so far, the finished ones still on the cluster for the time they ran."""
    rates = {str((n.get("metadata") or {}).get("name", "")): _NodeRate.of(n, prices) for n in nodes}
    jobs: dict[tuple[str, str], _Spend] = {}
    teams: dict[str, _Spend] = {}
    for pod, wanted, node_name in running:
        rate = rates.get(node_name)
        started = _started(pod)
        if rate is None or started is None:
            continue
        per_hour = rate.per_hour(wanted)
        ended = finished_at(pod) if (pod.get("status") or {}).get("phase") in TERMINATED else None
        hours = max(((ended or now) - started).total_seconds() / 3600, 0.0)
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        job = (meta.get("labels") or {}).get(JOB_LABEL)
        spends = [jobs.setdefault((namespace, str(job)), _Spend())] if job else []
        if namespace.startswith(TEAM_NAMESPACE_PREFIX):
            spends.append(teams.setdefault(namespace, _Spend()))
        for spend in spends:
            if ended is None:
                spend.add(per_hour, hours)
            else:
                spend.ended(per_hour, hours)
    return (
        [spend.view(ns, name) for (ns, name), spend in sorted(jobs.items())],
        [
            spend.view(ns, ns.removeprefix(TEAM_NAMESPACE_PREFIX))
            for ns, spend in sorted(teams.items())
        ],
    )


def cluster_capacity(
    cluster: str,
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    prices: PriceTable,
    now: datetime | None = None,
) -> ClusterCapacity:
    """Capacity of one cluster from its Nodes and Pods as the API serves them (camelCase)."""
    node_list = list(nodes)
    running: list[Running] = []
    names = {str((n.get("metadata") or {}).get("name", "")) for n in node_list}
    used: dict[str, dict[str, Decimal]] = {name: {} for name in names}
    counts: dict[str, int] = dict.fromkeys(names, 0)
    pending: list[PendingPod] = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in TERMINATED:
            bound = (pod.get("spec") or {}).get("nodeName")
            if now is not None and bound in used and costed(pod):
                running.append((pod, pod_requests(pod.get("spec") or {}), str(bound)))
            continue
        spec = pod.get("spec") or {}
        wanted = pod_requests(spec)
        bound = spec.get("nodeName")
        if not bound:
            pending.append(_pending_view(pod, wanted))
        elif bound in used:
            counts[bound] += 1
            for name, qty in wanted.items():
                used[bound][name] = used[bound].get(name, Decimal(0)) + qty
            if now is not None and costed(pod):
                running.append((pod, wanted, bound))
    views = sorted(
        (
            _node_view(n, used[str(n["metadata"]["name"])], counts[str(n["metadata"]["name"])])
            for n in node_list
        ),
        key=lambda v: (v.instance_group or "", v.name),
    )
    by_group: dict[str, list[NodeCapacity]] = {}
    for view in views:
        by_group.setdefault(view.instance_group or UNGROUPED, []).append(view)
    groups = [_group(name, members, prices) for name, members in sorted(by_group.items())]
    resources = NO_RESOURCES
    for group in groups:
        resources = resources + group.resources
    return ClusterCapacity(
        cluster=cluster,
        resources=resources,
        groups=groups,
        nodes=views,
        pending=sorted(pending, key=lambda p: (p.namespace, p.name)),
        cost_per_hour=round(sum(g.cost_per_hour or 0.0 for g in groups), 4),
        unpriced_instance_types=sorted(
            {g.instance_type or "unknown" for g in groups if g.cost_per_hour is None}
        ),
        prices=prices.source,
        **_costs(node_list, running, prices, now),
    )


def _costs(
    nodes: list[Mapping[str, Any]],
    running: list[Running],
    prices: PriceTable,
    now: datetime | None,
) -> dict[str, list[WorkloadCost]]:
    if now is None:  # no clock given: no running-time costs
        return {}
    jobs, teams = workload_costs(nodes, running, prices, now)
    return {"jobs": jobs, "teams": teams}


# ---- the fleet ---------------------------------------------------------------------------------


def summarize(capacity: ClusterCapacity) -> ClusterSummary:
    return ClusterSummary(
        cluster=capacity.cluster,
        readable=True,
        resources=capacity.resources,
        nodes=len(capacity.nodes),
        unschedulable_nodes=sum(1 for n in capacity.nodes if not n.schedulable),
        pending_pods=len(capacity.pending),
        pending_gpus=sum(p.gpus for p in capacity.pending),
        cost_per_hour=capacity.cost_per_hour,
    )


def unreadable(cluster: str, error: str) -> ClusterSummary:
    return ClusterSummary(cluster=cluster, readable=False, error=error)


def fleet(clusters: Iterable[ClusterSummary], prices: PriceTable) -> FleetCapacity:
    listed = sorted(clusters, key=lambda c: c.cluster)
    resources = NO_RESOURCES
    for summary in listed:
        resources = resources + summary.resources
    return FleetCapacity(
        clusters=listed,
        resources=resources,
        pending_pods=sum(c.pending_pods for c in listed),
        cost_per_hour=round(sum(c.cost_per_hour for c in listed), 4),
        prices=prices.source,
    )
