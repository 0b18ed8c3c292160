"""Capacity kept up to date from a stream of Node and Pod changes (pure), answering what
`cluster_capacity` answers from a full list without reading every object again.

Each change costs the objects it touches: a pod's change re-derives the view of the node it is
bound to (or the pending entry), a node's change its own view and its group's sums; the sums
per group are kept by subtracting a node's old view and adding its new one. A read then costs
the groups (cluster summary and per-group totals) plus the page of nodes it answers, in the
(instance group, node name) order `cluster_capacity` lists them in; the running-time costs per
job and team cost the running pods of jobs and team namespaces.

Not thread-safe by itself: the caller serialises changes and reads (one lock per cluster).
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from cluster_svc.domain.capacity import (
    GPU,
    TERMINATED,
    TYPE_LABEL,
    UNGROUPED,
    Running,
    _costs,
    _node_view,
    _pending_view,
    costed,
    pod_requests,
)
from cluster_svc.domain.prices import PriceTable
from shared.contracts.capacity import (
    NO_RESOURCES,
    Amount,
    ClusterCapacity,
    ClusterSummary,
    GroupCapacity,
    NodeCapacity,
    PendingPod,
    Resources,
)
from shared.memory import compact_json

PodKey = tuple[str, str]  # (namespace, name)
NodeKey = tuple[str, str]  # (instance group or "", node name): the order nodes are listed in


# What the model keeps of each object: the fields capacity, costs and the pending explanation
# read. The rest (managedFields, annotations, volumes, env, a Node's images and nodeInfo) is
# dropped on arrival, as an informer's transform does (client-go's SharedInformer.SetTransform,
# whose documented use is stripping managedFields): a cluster's Pods are most of its memory.
_META = (
    "name",
    "namespace",
    "uid",
    "labels",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
)
_POD_SPEC = (
    "nodeName",
    "nodeSelector",
    "overhead",
    "priority",
    "priorityClassName",
    "schedulerName",
    "tolerations",
)
_POD_STATUS = ("phase", "conditions", "startTime", "reason", "message", "nominatedNodeName")
_CONTAINER_STATUS = ("name", "state", "lastState", "ready", "restartCount")
_NODE_STATUS = ("capacity", "allocatable", "conditions")


def _some(obj: Mapping[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: obj[k] for k in keys if obj and k in obj}


def _containers(found: Any) -> list[dict[str, Any]]:
    return [_some(c, ("name", "resources")) for c in found or []]


def kept_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a Pod the model reads."""
    spec: Mapping[str, Any] = pod.get("spec") or {}
    status: Mapping[str, Any] = pod.get("status") or {}
    kept_spec = _some(spec, _POD_SPEC)
    for key in ("containers", "initContainers"):
        if key in spec:
            kept_spec[key] = _containers(spec[key])
    kept_status = _some(status, _POD_STATUS)
    if "containerStatuses" in status:
        kept_status["containerStatuses"] = [
            _some(c, _CONTAINER_STATUS) for c in status["containerStatuses"] or []
        ]
    return {"metadata": _some(_meta(pod), _META), "spec": kept_spec, "status": kept_status}


def kept_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a Node the model reads."""
    return {
        "metadata": _some(_meta(node), _META),
        "spec": dict(node.get("spec") or {}),
        "status": _some(node.get("status"), _NODE_STATUS),
    }


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    meta = _meta(pod)
    return str(meta.get("namespace") or "default"), str(meta.get("name", ""))


@dataclass
class _Pod:
    held: dict[str, Any] | bytes  # the kept pod (`raw`)
    wanted: dict[str, Decimal]
    node: str | None  # bound and not terminated
    pending: PendingPod | None  # not terminated and bound to no node
    costed: bool  # ran or runs on a node, in a job or a team namespace (its cost is counted)

    @classmethod
    def of(
        cls,
        pod: dict[str, Any],
        wanted: dict[str, Decimal],
        node: str | None,
        pending: PendingPod | None,
        costed: bool,
    ) -> _Pod:
        """A costed pod is kept parsed: every capacity read reads it. Any other (a cluster's
        daemon pods are most of its Pods) is kept as compact JSON, read only for its
        namespace's pending explanation (`pods_in`): 1.4 KB a pod instead of 6.3 KB of dicts."""
        held = pod if costed else compact_json(pod)
        return cls(held, wanted, node, pending, costed)

    @property
    def raw(self) -> dict[str, Any]:
        held = self.held
        if isinstance(held, dict):
            return held
        parsed: dict[str, Any] = orjson.loads(held)
        return parsed


@dataclass
class _Group:
    nodes: int = 0
    schedulable: int = 0
    totals: list[int] = field(default_factory=lambda: [0] * 6)  # gpus, efa, memory: total, used
    members: set[str] = field(default_factory=set)
    instance_type: str | None = None
    type_known: bool = False  # instance_type is current

    def add(self, view: NodeCapacity, sign: int) -> None:
        self.nodes += sign
        self.schedulable += sign if view.schedulable else 0
        r = view.resources
        for i, amount in enumerate((r.gpus, r.efa, r.memory_bytes)):
            self.totals[2 * i] += sign * amount.total
            self.totals[2 * i + 1] += sign * amount.allocated

    def resources(self) -> Resources:
        t = self.totals
        return Resources(
            gpus=Amount.of(t[0], t[1]),
            efa=Amount.of(t[2], t[3]),
            memory_bytes=Amount.of(t[4], t[5]),
        )


def _group_name(view: NodeCapacity) -> str:
    return view.instance_group or UNGROUPED


def _order(view: NodeCapacity) -> NodeKey:
    return view.instance_group or "", view.name


class CapacityModel:
    """The capacity of one cluster, from `replace_*` (a list) and `*_event` (a watch event)."""

    def __init__(self) -> None:
        self._nodes: dict[str, Mapping[str, Any]] = {}
        self._views: dict[str, NodeCapacity] = {}
        self._order: list[NodeKey] = []
        self._groups: dict[str, _Group] = {}
        self._pods: dict[PodKey, _Pod] = {}
        self._on_node: dict[str, dict[PodKey, _Pod]] = {}
        self._pending: dict[PodKey, PendingPod] = {}
        self._pending_gpus = 0
        self._costed: dict[PodKey, _Pod] = {}
        self._by_namespace: dict[str, dict[str, _Pod]] = {}

    # ---- changes -------------------------------------------------------------------------

    def replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of the Nodes: what it lacks is gone, the rest as listed."""
        self.retain_nodes(set(self.put_nodes(nodes)))

    def put_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> list[str]:
        """Nodes of a list (one page of it), each as listed; their names."""
        names = []
        for node in nodes:
            names.append(str(_meta(node).get("name", "")))
            self.node_event("MODIFIED", node)
        return names

    def retain_nodes(self, names: Container[str]) -> None:
        """The end of a list: the Nodes it did not name are gone."""
        for name in [n for n in self._nodes if n not in names]:
            self.node_event("DELETED", self._nodes[name])

    def replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """A fresh list of the Pods: what it lacks is gone, the rest as listed."""
        self.retain_pods(set(self.put_pods(pods)))

    def put_pods(self, pods: Iterable[Mapping[str, Any]]) -> list[PodKey]:
        """Pods of a list (one page of it), each as listed, each node's view derived once
        after every pod is in; their keys."""
        keys = []
        touched: set[str] = set()
        for pod in pods:
            key = pod_key(pod)
            keys.append(key)
            touched.update(self._put_pod(key, pod))
        self._refresh_each(touched)
        return keys

    def retain_pods(self, keys: Container[PodKey]) -> None:
        """The end of a list: the Pods it did not name are gone."""
        touched: set[str] = set()
        for key in [k for k in self._pods if k not in keys]:
            old = self._pods.pop(key)
            self._unlink(key, old)
            touched.add(old.node or "")
        self._refresh_each(touched)

    def _refresh_each(self, names: set[str]) -> None:
        for name in names - {""}:
            self._refresh(name)

    def node_event(self, kind: str, node: Mapping[str, Any]) -> None:
        name = str(_meta(node).get("name", ""))
        if kind == "DELETED":
            if self._nodes.pop(name, None) is not None:
                self._drop_view(name)
            return
        self._nodes[name] = kept_node(node)
        self._refresh(name)

    def pod_event(self, kind: str, pod: Mapping[str, Any]) -> None:
        key = pod_key(pod)
        if kind == "DELETED":
            old = self._pods.pop(key, None)
            if old is not None:
                self._unlink(key, old)
                if old.node is not None:
                    self._refresh(old.node)
            return
        for name in self._put_pod(key, pod) - {""}:
            self._refresh(name)

    def _put_pod(self, key: PodKey, pod: Mapping[str, Any]) -> set[str]:
        """Store the pod; the nodes (or "") whose view it changes."""
        old = self._pods.pop(key, None)
        if old is not None:
            self._unlink(key, old)
        new = self._pod(pod)
        self._pods[key] = new
        self._link(key, new)
        before = old.node if old is not None else None
        return {before or "", new.node or ""}

    def _pod(self, given: Mapping[str, Any]) -> _Pod:
        pod = kept_pod(given)
        status = pod.get("status") or {}
        spec = pod.get("spec") or {}
        wanted = pod_requests(spec)
        if status.get("phase") in TERMINATED:  # allocates nothing; what it cost still counts
            return _Pod.of(pod, wanted, None, None, costed(pod))
        bound = spec.get("nodeName")
        if not bound:
            return _Pod.of(pod, wanted, None, _pending_view(pod, wanted), False)
        return _Pod.of(pod, wanted, str(bound), None, costed(pod))

    def _link(self, key: PodKey, pod: _Pod) -> None:
        self._by_namespace.setdefault(key[0], {})[key[1]] = pod
        if pod.node is not None:
            self._on_node.setdefault(pod.node, {})[key] = pod
        if pod.pending is not None:
            self._pending[key] = pod.pending
            self._pending_gpus += pod.pending.gpus
        if pod.costed:
            self._costed[key] = pod

    def _unlink(self, key: PodKey, pod: _Pod) -> None:
        in_ns = self._by_namespace.get(key[0])
        if in_ns is not None:
            in_ns.pop(key[1], None)
            if not in_ns:
                del self._by_namespace[key[0]]
        if pod.node is not None:
            bound = self._on_node.get(pod.node)
            if bound is not None:
                bound.pop(key, None)
                if not bound:
                    del self._on_node[pod.node]
        if pod.pending is not None:
            self._pending.pop(key, None)
            self._pending_gpus -= pod.pending.gpus
        self._costed.pop(key, None)

    def _drop_view(self, name: str) -> None:
        view = self._views.pop(name, None)
        if view is None:
            return
        key = _order(view)
        at = bisect.bisect_left(self._order, key)
        if at < len(self._order) and self._order[at] == key:
            del self._order[at]
        group = self._groups[_group_name(view)]
        group.add(view, -1)
        group.members.discard(name)
        group.type_known = False
        if not group.members:
            del self._groups[_group_name(view)]

    def _refresh(self, name: str) -> None:
        """Re-derive the view of node `name` from the node and the pods bound to it."""
        node = self._nodes.get(name)
        if node is None:
            return  # pods bound to a node that is not a HyperPod node (or not listed yet)
        used: dict[str, Decimal] = {}
        bound = self._on_node.get(name) or {}
        for pod in bound.values():
            for resource, qty in pod.wanted.items():
                used[resource] = used.get(resource, Decimal(0)) + qty
        view = _node_view(node, used, len(bound))
        old = self._views.get(name)
        if old == view:
            return
        if old is not None:
            self._drop_view(name)
        self._views[name] = view
        bisect.insort(self._order, _order(view))
        group = self._groups.setdefault(_group_name(view), _Group())
        group.add(view, 1)
        group.members.add(name)
        group.type_known = False

    # ---- reads ---------------------------------------------------------------------------

    @property
    def node_count(self) -> int:
        return len(self._views)

    @property
    def pod_count(self) -> int:
        """Every pod seen, terminated ones too."""
        return len(self._pods)

    def _group_type(self, group: _Group) -> str | None:
        if not group.type_known:
            views = sorted((self._views[m] for m in group.members), key=lambda v: v.name)
            group.instance_type = next((v.instance_type for v in views if v.instance_type), None)
            group.type_known = True
        return group.instance_type

    def groups(self, prices: PriceTable) -> list[GroupCapacity]:
        out = []
        for name, group in sorted(self._groups.items()):
            instance_type = self._group_type(group)
            price = prices.instance(instance_type)
            out.append(
                GroupCapacity(
                    name=name,
                    instance_type=instance_type,
                    nodes=group.nodes,
                    schedulable_nodes=group.schedulable,
                    resources=group.resources(),
                    price_per_node_hour=price,
                    cost_per_hour=None if price is None else round(price * group.nodes, 4),
                )
            )
        return out

    def page(self, after: NodeKey | None, limit: int | None) -> tuple[list[NodeCapacity], bool]:
        """The nodes after `after` in listing order, at most `limit`; and whether more follow."""
        start = 0 if after is None else bisect.bisect_right(self._order, after)
        end = len(self._order) if limit is None else min(start + limit, len(self._order))
        views = [self._views[name] for _, name in self._order[start:end]]
        return views, end < len(self._order)

    def nodes(self) -> list[NodeCapacity]:
        return self.page(None, None)[0]

    def pending(self, namespace: str | None = None) -> list[PendingPod]:
        """The pending pods (of `namespace`), in (namespace, name) order."""
        if namespace is None:
            return [self._pending[k] for k in sorted(self._pending)]
        pods = self._by_namespace.get(namespace) or {}
        found = (pods[name].pending for name in sorted(pods))
        return [p for p in found if p is not None]

    def pods_in(self, namespace: str) -> list[dict[str, Any]]:
        """The Pods of `namespace` as last seen."""
        return [p.raw for p in (self._by_namespace.get(namespace) or {}).values()]

    def capacity(
        self,
        cluster: str,
        prices: PriceTable,
        now: datetime | None = None,
        *,
        after: NodeKey | None = None,
        limit: int | None = None,
        namespace: str | None = None,
    ) -> tuple[ClusterCapacity, bool]:
        """What `cluster_capacity` answers, its nodes one page (`after`, `limit`) and its
        pending pods those of `namespace` when given; and whether more nodes follow."""
        groups = self.groups(prices)
        resources = NO_RESOURCES
        for group in groups:
            resources = resources + group.resources
        views, more = self.page(after, limit)
        running: list[Running] = [
            (pod.raw, pod.wanted, node)
            for pod in self._costed.values()
            if (node := str((pod.raw.get("spec") or {}).get("nodeName") or "")) in self._nodes
        ]
        answer = ClusterCapacity(
            cluster=cluster,
            resources=resources,
            groups=groups,
            nodes=views,
            pending=self.pending(namespace),
            cost_per_hour=round(sum(g.cost_per_hour or 0.0 for g in groups), 4),
            unpriced_instance_types=sorted(
                {g.instance_type or "unknown" for g in groups if g.cost_per_hour is None}
            ),
            prices=prices.source,
            **_costs(self._priced_nodes(running), running, prices, now),
        )
        return answer, more

    def _priced_nodes(self, running: list[Running]) -> list[Mapping[str, Any]]:
        return [self._nodes[n] for n in {node for _, _, node in running}]

    def summary(self, cluster: str, prices: PriceTable) -> ClusterSummary:
        """`summarize` of the whole capacity, from the groups and the pending counters."""
        groups = self.groups(prices)
        resources = NO_RESOURCES
        for group in groups:
            resources = resources + group.resources
        return ClusterSummary(
            cluster=cluster,
            readable=True,
            resources=resources,
            nodes=sum(g.nodes for g in groups),
            unschedulable_nodes=sum(g.nodes - g.schedulable_nodes for g in groups),
            pending_pods=len(self._pending),
            pending_gpus=self._pending_gpus,
            cost_per_hour=round(sum(g.cost_per_hour or 0.0 for g in groups), 4),
        )

    def fitting(self, instance_type: str | None) -> list[NodeCapacity]:
        """The nodes of `instance_type` (every node for None), in listing order."""
        return [
            v
            for v in (self._views[name] for _, name in self._order)
            if instance_type is None or v.instance_type == instance_type
        ]


__all__ = ["GPU", "TYPE_LABEL", "CapacityModel", "NodeKey", "pod_key"]
