"""The node watcher's decision: two observations of a cluster's nodes turned into events
(failure, replacement, recovery) and the records to write (cluster_svc/records/nodes.py stores them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.contracts.events import Event
from shared.contracts.nodes import (
    NodeAdded,
    NodeFailed,
    NodeRecovered,
    NodeRemoved,
    NodeReplaced,
    NodeStatusChanged,
)


@dataclass(frozen=True)
class NodeRecord:
    """One node as the watcher last recorded it."""

    node_id: str
    instance_group: str
    status: str
    health: str
    logical_id: str | None = None
    view: dict[str, Any] = field(default_factory=dict, compare=False)


def record_of(view: Mapping[str, Any]) -> NodeRecord:
    return NodeRecord(
        node_id=str(view["node_id"]),
        instance_group=str(view["instance_group"]),
        status=str(view["instance_status"]),
        health=str(view["health"]),
        logical_id=view.get("logical_id"),
        view=dict(view),
    )


BAD = frozenset({"unhealthy"})


@dataclass(frozen=True)
class NodeChanges:
    """What one observation changes: the events to report and the records to write."""

    events: list[Event]
    gone: list[str]  # node ids no longer listed
    changed: list[dict[str, Any]]  # health views new or different from their record


def watch_changes(
    cluster: str,
    previous: Mapping[str, NodeRecord],
    views: list[dict[str, Any]],
    *,
    baseline: bool,
) -> NodeChanges:
    """The watcher's decision for one observation; the first one (no baseline) reports nothing."""
    current = {v["node_id"]: record_of(v) for v in views}
    return NodeChanges(
        events=diff_nodes(cluster, previous, current) if baseline else [],
        gone=[k for k in previous if k not in current],
        changed=[
            v for v in views if v["node_id"] not in previous or previous[v["node_id"]].view != v
        ],
    )


def diff_nodes(
    cluster: str, previous: Mapping[str, NodeRecord], current: Mapping[str, NodeRecord]
) -> list[Event]:
    """The events between two observations: replacements (old id -> new id, matched by logical
    id, else one-for-one within an instance group), failures, recoveries, status changes,
    additions and removals."""
    events: list[Event] = []
    gone = [p for k, p in previous.items() if k not in current]
    new = [c for k, c in current.items() if k not in previous]
    replaced: list[tuple[NodeRecord, NodeRecord]] = []
    new_by_logical = {n.logical_id: n for n in new if n.logical_id}
    for old in list(gone):
        successor = new_by_logical.get(old.logical_id) if old.logical_id else None
        if successor is not None:
            replaced.append((old, successor))
            gone.remove(old)
            new.remove(successor)
    for old in [g for g in gone if not g.logical_id and g.health in BAD | {"busy"}]:
        successor = next(
            (n for n in new if n.instance_group == old.instance_group and not n.logical_id), None
        )
        if successor is not None:
            replaced.append((old, successor))
            gone.remove(old)
            new.remove(successor)
    for old, successor in sorted(replaced, key=lambda p: p[0].node_id):
        events.append(
            NodeReplaced(
                cluster=cluster,
                old_node_id=old.node_id,
                new_node_id=successor.node_id,
                instance_group=old.instance_group,
                logical_id=successor.logical_id,
            )
        )
    for node in sorted(new, key=lambda n: n.node_id):
        events.append(
            NodeAdded(
                cluster=cluster,
                node_id=node.node_id,
                instance_group=node.instance_group,
                status=node.status,
            )
        )
    for node in sorted(gone, key=lambda n: n.node_id):
        events.append(
            NodeRemoved(cluster=cluster, node_id=node.node_id, instance_group=node.instance_group)
        )
    for node_id in sorted(set(previous) & set(current)):
        before, now = previous[node_id], current[node_id]
        if before.status != now.status:
            events.append(
                NodeStatusChanged(
                    cluster=cluster,
                    node_id=node_id,
                    instance_group=now.instance_group,
                    previous=before.status,
                    status=now.status,
                    health=now.health,
                )
            )
        if now.health in BAD and before.health not in BAD:
            events.append(
                NodeFailed(
                    cluster=cluster,
                    node_id=node_id,
                    instance_group=now.instance_group,
                    status=now.status,
                    reasons=list(now.view.get("reasons") or []),
                    next_step=now.view.get("next_step"),
                )
            )
        elif before.health in BAD and now.health == "healthy":
            events.append(
                NodeRecovered(cluster=cluster, node_id=node_id, instance_group=now.instance_group)
            )
    for node in new:
        if node.health in BAD:
            events.append(
                NodeFailed(
                    cluster=cluster,
                    node_id=node.node_id,
                    instance_group=node.instance_group,
                    status=node.status,
                    reasons=list(node.view.get("reasons") or []),
                    next_step=node.view.get("next_step"),
                )
            )
    return events
