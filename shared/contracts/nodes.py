"""Contracts of nodes: commands, their request specs and the events of node health.

Node operations escalate in the order investigate -> reboot -> replace (docs/node-operations.md):
a reboot keeps the instance, a replace swaps it for a new one (a new node id, the same logical
id), a delete removes it and lowers its instance group's count. Batch calls take at most
`BATCH_LIMIT` node ids; larger requests are split and every node's result is recorded.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from shared.contracts.cluster import DeepHealthCheck, NodeRecovery
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.validation import RuleViolation

BATCH_LIMIT = 25  # node ids per BatchReboot/Replace/DeleteClusterNodes call
MAX_NODES = 500  # node ids per request (20 batches)
NODE_ID_PATTERN = r"^i-[0-9a-f]{8,32}$"
GROUP_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"

_NODE_ID = re.compile(NODE_ID_PATTERN)
_GROUP = re.compile(GROUP_PATTERN)

NodeAction = Literal["reboot", "replace", "delete"]


def _unique_ids(ids: list[str]) -> list[str]:
    seen: set[str] = set()
    for node_id in ids:
        if node_id in seen:
            raise RuleViolation(f"node {node_id} is listed twice", "list each node id once")
        seen.add(node_id)
    return ids


# ---- request bodies (REST, MCP, UI) --------------------------------------------------------


class NodeIds(Spec):
    """The nodes a reboot, replace or delete acts on."""

    node_ids: list[str] = Field(
        min_length=1,
        max_length=MAX_NODES,
        description=f"HyperPod node ids (EC2 instance ids); split into calls of {BATCH_LIMIT}",
    )

    @field_validator("node_ids")
    @classmethod
    def _ids(cls, ids: list[str]) -> list[str]:
        for node_id in ids:
            if not isinstance(node_id, str) or not _matches(node_id):
                raise RuleViolation(
                    f"{node_id!r} is not a HyperPod node id",
                    "use the node_id of GET /api/v1/clusters/{name}/nodes, like i-0123456789abcdef0",
                )
        return _unique_ids(ids)


class HealthCheckRequest(Spec):
    """A deep health check: the nodes (or instance groups, or the whole cluster) and the checks."""

    node_ids: list[str] = Field(default_factory=list, max_length=MAX_NODES)
    instance_groups: list[str] = Field(default_factory=list, max_length=100)
    checks: list[DeepHealthCheck] = Field(
        default_factory=lambda: [
            DeepHealthCheck.INSTANCE_STRESS,
            DeepHealthCheck.INSTANCE_CONNECTIVITY,
        ],
        min_length=1,
        description="InstanceStress (GPU/CPU/memory stress) and/or InstanceConnectivity (EFA)",
    )

    @field_validator("node_ids")
    @classmethod
    def _ids(cls, ids: list[str]) -> list[str]:
        for node_id in ids:
            if not _matches(node_id):
                raise RuleViolation(
                    f"{node_id!r} is not a HyperPod node id",
                    "use the node_id of GET /api/v1/clusters/{name}/nodes, like i-0123456789abcdef0",
                )
        return _unique_ids(ids)

    @field_validator("instance_groups")
    @classmethod
    def _groups(cls, groups: list[str]) -> list[str]:
        for group in groups:
            if not _GROUP.match(group):
                raise RuleViolation(
                    f"{group!r} is not an instance group name",
                    "use a name from GET /api/v1/clusters/{name} (instance_groups)",
                )
        if len(set(groups)) != len(groups):
            raise RuleViolation("an instance group is listed twice", "list each group once")
        return groups

    @field_validator("checks")
    @classmethod
    def _checks(cls, checks: list[DeepHealthCheck]) -> list[DeepHealthCheck]:
        if len(set(checks)) != len(checks):
            raise RuleViolation("a check is listed twice", "list each check once")
        return checks


class NodeRecoveryChange(Spec):
    """Node recovery of a HyperPod cluster: Automatic (HyperPod reboots or replaces faulty
    nodes itself) or None (faulty nodes stay until an operator reboots or replaces them)."""

    mode: NodeRecovery


def _matches(node_id: str) -> bool:
    return bool(_NODE_ID.match(node_id))


# ---- commands ------------------------------------------------------------------------------


class NodeCommand(Command):
    """What every node command names: the cluster here and its HyperPod cluster (ARN)."""

    domain = "cluster"

    cluster: str
    region: str
    hyperpod_cluster: str  # ARN (or name) of the HyperPod cluster, resolved at accept time


class RebootNodes(NodeCommand):
    verb = "reboot_nodes"
    action: NodeAction = "reboot"
    node_ids: list[str]


class ReplaceNodes(NodeCommand):
    verb = "replace_nodes"
    action: NodeAction = "replace"
    node_ids: list[str]


class DeleteNodes(NodeCommand):
    verb = "delete_nodes"
    action: NodeAction = "delete"
    node_ids: list[str]


class StartDeepHealthCheck(NodeCommand):
    verb = "start_deep_health_check"
    node_ids: list[str] = []
    instance_groups: list[str] = []
    checks: list[DeepHealthCheck] = [
        DeepHealthCheck.INSTANCE_STRESS,
        DeepHealthCheck.INSTANCE_CONNECTIVITY,
    ]


class SetNodeRecovery(NodeCommand):
    verb = "set_node_recovery"
    mode: NodeRecovery


NODE_ACTION_COMMANDS: dict[str, type[RebootNodes | ReplaceNodes | DeleteNodes]] = {
    "reboot": RebootNodes,
    "replace": ReplaceNodes,
    "delete": DeleteNodes,
}


# ---- events (the node watcher and the node operations) -------------------------------------


class NodeStatusChanged(Event):
    what = "node_status_changed"
    cluster: str
    node_id: str
    instance_group: str
    previous: str
    status: str
    health: str


class NodeFailed(Event):
    what = "node_failed"
    cluster: str
    node_id: str
    instance_group: str
    status: str
    reasons: list[str] = []
    next_step: str | None = None


class NodeRecovered(Event):
    what = "node_recovered"
    cluster: str
    node_id: str
    instance_group: str


class NodeReplaced(Event):
    what = "node_replaced"
    cluster: str
    old_node_id: str
    new_node_id: str
    instance_group: str
    logical_id: str | None = None


class NodeAdded(Event):
    what = "node_added"
    cluster: str
    node_id: str
    instance_group: str
    status: str


class NodeRemoved(Event):
    what = "node_removed"
    cluster: str
    node_id: str
    instance_group: str


class NodeRecoveryChanged(Event):
    what = "node_recovery_changed"
    cluster: str
    previous: str | None
    mode: str


class NodeOperationFinished(Event):
    """Per-node results of a reboot, replace, delete or deep health check."""

    what = "node_operation_finished"
    cluster: str
    action: str
    results: dict[str, dict[str, Any]]
