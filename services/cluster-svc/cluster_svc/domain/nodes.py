"""Nodes of a HyperPod cluster: one health view, batch actions, deep health checks, recovery.

Everything here is pure or written against `NodesPort` (adapters/hyperpod_nodes.py):
- `health_view` joins HyperPod's instance status, the Kubernetes node conditions and HyperPod's
  health labels and taints into one verdict with the next step;
- `decide_action` splits a reboot/replace/delete into API-sized batches and says which nodes are
  skipped (already in that state) or unknown; the dry run and the workflow both use it;
- `action_progress` reads what happened to each node since the batch calls;
- `diff_nodes` turns two observations of a cluster into events (failure, replacement, recovery);
- `decide_recovery` compares the cluster's NodeRecovery with the requested mode.

Escalation order (docs/node-operations.md): investigate -> reboot -> replace. Every failure
names the next step.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from shared.contracts.events import Event
from shared.contracts.nodes import (
    BATCH_LIMIT,
    NODE_ACTION_COMMANDS,
    DeleteNodes,
    NodeAction,
    NodeAdded,
    NodeFailed,
    NodeOperationFinished,
    NodeRecovered,
    NodeRemoved,
    NodeReplaced,
    NodeStatusChanged,
    RebootNodes,
    ReplaceNodes,
    SetNodeRecovery,
    StartDeepHealthCheck,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError, TemporaryError
from shared.stages import (
    Done,
    FinalHook,
    Outcome,
    Pending,
    Stage,
    StageContext,
    Submitted,
    Workflow,
)

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
INSTANCE_ID_LABEL = "sagemaker.amazonaws.com/instance-id"
PRESSURE_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
# Instance statuses a batch reboot or replace accepts; delete accepts all but ShuttingDown.
ACTIONABLE = frozenset({"Running", "Failure"})
IN_PROGRESS = frozenset({"Pending", "SystemUpdating", "DeepHealthCheckInProgress", "ShuttingDown"})
BATCH_OPERATIONS: dict[str, str] = {
    "reboot": "BatchRebootClusterNodes",
    "replace": "BatchReplaceClusterNodes",
    "delete": "BatchDeleteClusterNodes",
}
NodeActionCommand = RebootNodes | ReplaceNodes | DeleteNodes
# A node still Failure this long after its reboot was accepted did not come back.
SETTLE_SECONDS = 30.0


# ---- what the adapter reads ----------------------------------------------------------------


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


# ---- the health view -----------------------------------------------------------------------


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


# ---- batch actions -------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionDecision:
    action: NodeAction
    batches: list[list[str]]
    skipped: dict[str, str]  # node id -> why nothing is done to it
    unknown: list[str]

    @property
    def noop(self) -> bool:
        return not self.batches


def decide_action(
    action: NodeAction, requested: list[str], actual: Iterable[NodeInstance]
) -> ActionDecision:
    """Which requested nodes get the call, in batches of BATCH_LIMIT; the rest and why."""
    nodes = {n.node_id: n for n in actual}
    targets: list[str] = []
    skipped: dict[str, str] = {}
    unknown: list[str] = []
    for node_id in requested:
        node = nodes.get(node_id)
        if node is None:
            unknown.append(node_id)
        elif action == "delete":
            if node.status == "ShuttingDown":
                skipped[node_id] = "already shutting down"
            else:
                targets.append(node_id)
        elif node.status in ACTIONABLE:
            targets.append(node_id)
        else:
            skipped[node_id] = (
                f"is {node.status}"
                + (f" ({node.message})" if node.message else "")
                + f"; HyperPod {action}s only Running or Failure nodes"
            )
    batches = [targets[i : i + BATCH_LIMIT] for i in range(0, len(targets), BATCH_LIMIT)]
    return ActionDecision(action=action, batches=batches, skipped=skipped, unknown=unknown)


def unknown_nodes_error(cluster: str, unknown: list[str]) -> PermanentError:
    return PermanentError(
        "NodeNotFound",
        f"cluster {cluster} has no node {', '.join(unknown)}",
        f"list the nodes with GET /api/v1/clusters/{cluster}/nodes and use their node_id",
    )


def action_plan(
    command: RebootNodes | ReplaceNodes | DeleteNodes, actual: list[NodeInstance]
) -> Plan:
    decision = decide_action(command.action, command.node_ids, actual)
    if decision.unknown:
        raise unknown_nodes_error(command.cluster, decision.unknown)
    notes = [f"{node_id} is skipped: {why}" for node_id, why in decision.skipped.items()]
    if command.action == "replace":
        notes.append("a replaced node gets a new node id (a new instance); its logical id stays")
    if command.action == "delete":
        notes.append("each deleted node lowers its instance group's count by one")
    by_id = {n.node_id: n for n in actual}
    diff = {
        node_id: FieldChange(
            actual=by_id[node_id].status, requested=_requested_state(command.action)
        )
        for batch in decision.batches
        for node_id in batch
    }
    return Plan(
        command=type(command).__name__,
        target=f"{command.cluster}/nodes",
        noop=decision.noop,
        diff=diff,
        calls=[
            PlannedCall(
                service="sagemaker",
                operation=BATCH_OPERATIONS[command.action],
                params={"ClusterName": command.hyperpod_cluster, "NodeIds": batch},
            )
            for batch in decision.batches
        ],
        notes=notes,
    )


def _requested_state(action: str) -> str:
    return {"reboot": "rebooted", "replace": "replaced", "delete": "deleted"}[action]


def action_progress(
    action: str,
    submitted: Mapping[str, Mapping[str, Any]],
    now: Iterable[NodeInstance],
    elapsed: float,
) -> tuple[bool, dict[str, dict[str, Any]]]:
    """(every node finished, per-node results) for nodes whose batch call succeeded.

    `submitted`: node id -> {logical_id, instance_group} as it was before the call.
    """
    current = list(now)
    by_id = {n.node_id: n for n in current}
    by_logical = {n.logical_id: n for n in current if n.logical_id}
    results: dict[str, dict[str, Any]] = {}
    finished = True
    claimed: set[str] = set()
    for node_id, before in submitted.items():
        node = by_id.get(node_id)
        logical = before.get("logical_id")
        successor = by_logical.get(logical) if logical else None
        if successor is not None and successor.node_id == node_id:
            successor = None
        if successor is None and node is None:
            successor = _unclaimed_newcomer(current, before, set(submitted), claimed)
        if successor is not None:
            claimed.add(successor.node_id)
        if action == "delete":
            if node is None:
                results[node_id] = {"status": "deleted"}
            else:
                finished = False
                results[node_id] = {"status": "in_progress", "instance_status": node.status}
            continue
        if successor is not None:
            if successor.status == "Running":
                results[node_id] = {"status": "replaced", "replacement": successor.node_id}
            elif successor.status == "Failure":
                results[node_id] = {
                    "status": "failed",
                    "replacement": successor.node_id,
                    "message": f"the replacement {successor.node_id} failed too: {successor.message or 'no detail'}",
                    "hint": "read the cluster events (GET .../nodes/{id}); delete the node and add"
                    " capacity to its instance group if the instance type keeps failing",
                }
            else:
                finished = False
                results[node_id] = {
                    "status": "in_progress",
                    "replacement": successor.node_id,
                    "instance_status": successor.status,
                }
            continue
        if node is None:
            if action == "replace":
                finished = False
                results[node_id] = {"status": "in_progress", "instance_status": "Replacing"}
            else:
                results[node_id] = {
                    "status": "failed",
                    "message": "the node is gone from the cluster",
                    "hint": "list the nodes (GET .../nodes) to see what took its place",
                }
            continue
        if action == "reboot" and node.status == "Running":
            results[node_id] = {"status": "rebooted"}
        elif action == "reboot" and node.status == "Failure" and elapsed >= SETTLE_SECONDS:
            results[node_id] = {
                "status": "failed",
                "message": f"{node_id} is still Failure after its reboot: {node.message or 'no detail'}",
                "hint": f'replace it: POST .../nodes/replace {{"node_ids": ["{node_id}"]}}',
            }
        else:
            finished = False
            results[node_id] = {"status": "in_progress", "instance_status": node.status}
    return finished, results


def _unclaimed_newcomer(
    current: list[NodeInstance],
    before: Mapping[str, Any],
    submitted: set[str],
    claimed: set[str],
) -> NodeInstance | None:
    """Without logical ids: a node of the same group that was not there before the call."""
    known = set(before.get("group_members") or [])
    for node in current:
        if (
            node.instance_group == before.get("instance_group")
            and node.node_id not in known
            and node.node_id not in submitted
            and node.node_id not in claimed
        ):
            return node
    return None


def failures_error(
    action: str, cluster: str, results: Mapping[str, Mapping[str, Any]]
) -> PermanentError | None:
    failed = {k: v for k, v in results.items() if v.get("status") == "failed"}
    if not failed:
        return None
    detail = "; ".join(
        f"{k}: {v.get('message') or v.get('code')}" for k, v in sorted(failed.items())
    )
    hints = sorted({str(v.get("hint")) for v in failed.values() if v.get("hint")})
    next_step = {
        "reboot": f"replace the nodes that did not recover: POST /api/v1/clusters/{cluster}/nodes/replace",
        "replace": f"read the node events (GET /api/v1/clusters/{cluster}/nodes/{{id}}); delete nodes that"
        " keep failing and add capacity to their instance group",
        "delete": f"list the nodes (GET /api/v1/clusters/{cluster}/nodes) and retry the operation",
        "health_check": f"reboot the failed nodes (POST /api/v1/clusters/{cluster}/nodes/reboot); if"
        " they still fail, replace them",
    }[action]
    return PermanentError(
        "NodesFailed",
        f"{len(failed)} of {len(results)} nodes failed to {action.replace('_', ' ')}: {detail}",
        "; ".join(hints) if len(hints) == 1 else next_step,
    )


# ---- deep health checks --------------------------------------------------------------------


@dataclass(frozen=True)
class HealthCheckDecision:
    configurations: list[dict[str, Any]]
    targets: dict[str, str]  # node id -> instance group
    skipped: dict[str, str]
    unknown_nodes: list[str]
    unknown_groups: list[str]


def decide_health_check(
    command: StartDeepHealthCheck, actual: Iterable[NodeInstance]
) -> HealthCheckDecision:
    nodes = list(actual)
    by_id = {n.node_id: n for n in nodes}
    groups = {n.instance_group for n in nodes}
    unknown_nodes = [i for i in command.node_ids if i not in by_id]
    unknown_groups = [g for g in command.instance_groups if g not in groups]
    if command.node_ids:
        chosen = [by_id[i] for i in command.node_ids if i in by_id]
    else:
        wanted = set(command.instance_groups) or groups
        chosen = [n for n in nodes if n.instance_group in wanted]
    targets: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for node in chosen:
        if node.status == "Running":
            targets[node.node_id] = node.instance_group
        else:
            skipped[node.node_id] = f"is {node.status}; deep health checks run on Running nodes"
    configurations = []
    for group in sorted(set(targets.values())):
        ids = sorted(i for i, g in targets.items() if g == group)
        config: dict[str, Any] = {
            "InstanceGroupName": group,
            "DeepHealthChecks": [c.value for c in command.checks],
        }
        if command.node_ids:
            config["InstanceIds"] = ids
        configurations.append(config)
    return HealthCheckDecision(configurations, targets, skipped, unknown_nodes, unknown_groups)


def health_check_plan(command: StartDeepHealthCheck, actual: list[NodeInstance]) -> Plan:
    decision = decide_health_check(command, actual)
    _raise_unknown(command.cluster, decision)
    return Plan(
        command=type(command).__name__,
        target=f"{command.cluster}/nodes",
        noop=not decision.configurations,
        diff={
            i: FieldChange(actual="Running", requested="DeepHealthCheckInProgress")
            for i in decision.targets
        },
        calls=[
            PlannedCall(
                service="sagemaker",
                operation="StartClusterHealthCheck",
                params={
                    "ClusterName": command.hyperpod_cluster,
                    "DeepHealthCheckConfigurations": decision.configurations,
                },
            )
        ]
        if decision.configurations
        else [],
        notes=[f"{i} is skipped: {why}" for i, why in decision.skipped.items()]
        + ["checked nodes are unschedulable until their check ends"],
    )


def _raise_unknown(cluster: str, decision: HealthCheckDecision) -> None:
    if decision.unknown_nodes:
        raise unknown_nodes_error(cluster, decision.unknown_nodes)
    if decision.unknown_groups:
        raise PermanentError(
            "InstanceGroupNotFound",
            f"cluster {cluster} has no nodes in instance group {', '.join(decision.unknown_groups)}",
            f"use a group from GET /api/v1/clusters/{cluster}",
        )


def health_check_progress(
    targets: Mapping[str, str], now: Iterable[NodeInstance]
) -> tuple[bool, dict[str, dict[str, Any]]]:
    by_id = {n.node_id: n for n in now}
    results: dict[str, dict[str, Any]] = {}
    finished = True
    for node_id in targets:
        node = by_id.get(node_id)
        if node is None:
            results[node_id] = {
                "status": "failed",
                "message": "the node left the cluster during its check (replaced or deleted)",
                "hint": "list the nodes (GET .../nodes) and check its replacement",
            }
        elif node.status == "Running":
            results[node_id] = {"status": "passed"}
        elif node.status == "Failure":
            results[node_id] = {
                "status": "failed",
                "message": f"{node_id} failed its deep health check: {node.message or 'no detail'}",
                "hint": f'reboot it: POST .../nodes/reboot {{"node_ids": ["{node_id}"]}};'
                " if it still fails, replace it",
            }
        else:
            finished = False
            results[node_id] = {"status": "in_progress", "instance_status": node.status}
    return finished, results


# ---- node recovery -------------------------------------------------------------------------


def decide_recovery(actual: str | None, requested: str) -> dict[str, FieldChange]:
    """The diff: empty when the cluster already has the requested mode."""
    if actual == requested:
        return {}
    return {"node_recovery": FieldChange(actual=actual, requested=requested)}


def recovery_plan(command: SetNodeRecovery, actual: ClusterRecovery) -> Plan:
    diff = decide_recovery(actual.mode, command.mode.value)
    notes = []
    if diff and command.mode.value == "None":
        notes.append(
            "with None, a failed node stays failed until it is rebooted or replaced by hand"
        )
    return Plan(
        command=type(command).__name__,
        target=f"{command.cluster}/node-recovery",
        noop=not diff,
        diff=diff,
        calls=[
            PlannedCall(
                service="sagemaker",
                operation="UpdateCluster",
                params={
                    "ClusterName": command.hyperpod_cluster,
                    "NodeRecovery": command.mode.value,
                },
            )
        ]
        if diff
        else [],
        notes=notes,
    )


async def read_recovery(port: NodesPort, command: SetNodeRecovery) -> ClusterRecovery:
    found = await port.node_recovery(command.hyperpod_cluster)
    if found is None:
        raise PermanentError(
            "ResourceNotFound",
            f"HyperPod cluster {command.hyperpod_cluster} of {command.cluster} does not exist",
            "GET /api/v1/clusters/{name} shows the cluster's status; re-import it if it was recreated",
        )
    return found


# ---- workflows -----------------------------------------------------------------------------


async def _nodes(port: NodesPort, hyperpod_cluster: str) -> list[NodeInstance]:
    return await port.list_nodes(hyperpod_cluster)


def action_workflow(port: NodesPort, action: NodeAction) -> Workflow[Any]:
    command_type = NODE_ACTION_COMMANDS[action]
    stage_name = f"{action}_nodes"

    async def run(ctx: StageContext[NodeActionCommand]) -> Done | Submitted:
        command = ctx.cmd
        before = await _nodes(port, command.hyperpod_cluster)
        decision = decide_action(action, command.node_ids, before)
        if decision.unknown:
            raise unknown_nodes_error(command.cluster, decision.unknown)
        results: dict[str, dict[str, Any]] = {
            node_id: {"status": "skipped", "message": why}
            for node_id, why in decision.skipped.items()
        }
        if decision.noop:
            return Done({"results": results, "batches": 0}, noop=True)
        by_id = {n.node_id: n for n in before}
        submitted: dict[str, dict[str, Any]] = {}
        for batch in decision.batches:
            answer = await port.batch(action, command.hyperpod_cluster, batch)
            for node_id, error in answer.failed.items():
                results[node_id] = {
                    "status": "failed",
                    "code": error.get("code"),
                    "message": error.get("message"),
                    "hint": _batch_hint(action, error.get("code")),
                }
            for node_id in answer.successful:
                node = by_id[node_id]
                submitted[node_id] = {
                    "logical_id": node.logical_id,
                    "instance_group": node.instance_group,
                    "group_members": sorted(
                        n.node_id for n in before if n.instance_group == node.instance_group
                    ),
                }
                results[node_id] = {"status": "submitted"}
        outputs = {
            "results": results,
            "submitted": submitted,
            "batches": len(decision.batches),
            "submitted_at": time.time(),
        }
        if not submitted:
            return Done(outputs)
        return Submitted(f"{action}:{len(submitted)} nodes", outputs)

    async def poll(ctx: StageContext[NodeActionCommand]) -> Done | Pending:
        command = ctx.cmd
        own = ctx.own_outputs
        submitted = own.get("submitted") or {}
        elapsed = time.time() - float(own.get("submitted_at") or time.time())
        finished, progress = action_progress(
            action, submitted, await _nodes(port, command.hyperpod_cluster), elapsed
        )
        results = {**(own.get("results") or {}), **progress}
        if not finished:
            waiting = sum(1 for r in progress.values() if r["status"] == "in_progress")
            return Pending(
                f"{waiting} of {len(submitted)} nodes still being {_requested_state(action)}"
            )
        return Done({"results": results})

    async def verify(ctx: StageContext[NodeActionCommand]) -> Done:
        command = ctx.cmd
        results = ctx.outputs.get(stage_name, {}).get("results") or {}
        error = failures_error(action, command.cluster, results)
        if error is not None:
            raise error
        return Done(noop=ctx.outputs.get(stage_name, {}).get("batches") == 0)

    return Workflow(
        kind=command_type.kind(),
        domain=command_type.domain,
        command=command_type,
        stages=(
            Stage(
                stage_name, f"{action.capitalize()} nodes in batches of {BATCH_LIMIT}", run, poll
            ),
            Stage("verify", "Check every node's result", verify, needs=(stage_name,)),
        ),
        on_finish=_finish_with_results(action, stage_name),
    )


def _batch_hint(action: str, code: str | None) -> str:
    if code in ("InstanceIdNotFound", "NodeIdNotFound"):
        return "list the nodes (GET .../nodes): the node may have been replaced meanwhile"
    if action == "reboot":
        return "wait until the node is Running or Failure and reboot it again; if it keeps failing, replace it"
    if action == "replace":
        return "wait until the node is Running or Failure and replace it again"
    return "wait for the node's current operation to end, then delete it again"


def _finish_with_results(action: str, stage_name: str) -> FinalHook:
    async def finish(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        results = outcome.outputs.get(stage_name, {}).get("results") or {}
        if not results:
            return []
        cluster = str(outcome.command.get("cluster", ""))
        return [NodeOperationFinished(cluster=cluster, action=action, results=results)]

    return finish


def health_check_workflow(port: NodesPort) -> Workflow[Any]:
    async def run(ctx: StageContext[StartDeepHealthCheck]) -> Done | Submitted:
        command = ctx.cmd
        decision = decide_health_check(command, await _nodes(port, command.hyperpod_cluster))
        _raise_unknown(command.cluster, decision)
        skipped = {i: {"status": "skipped", "message": why} for i, why in decision.skipped.items()}
        if not decision.configurations:
            return Done({"results": skipped, "targets": {}}, noop=True)
        await port.start_health_check(command.hyperpod_cluster, decision.configurations)
        return Submitted(
            f"health-check:{len(decision.targets)} nodes",
            {
                "targets": decision.targets,
                "results": skipped,
                "checks": [c.value for c in command.checks],
            },
        )

    async def poll(ctx: StageContext[StartDeepHealthCheck]) -> Done | Pending:
        command = ctx.cmd
        targets = ctx.own_outputs.get("targets") or {}
        finished, progress = health_check_progress(
            targets, await _nodes(port, command.hyperpod_cluster)
        )
        if not finished:
            waiting = sum(1 for r in progress.values() if r["status"] == "in_progress")
            return Pending(f"{waiting} of {len(targets)} nodes still being checked")
        return Done({"results": {**(ctx.own_outputs.get("results") or {}), **progress}})

    async def verify(ctx: StageContext[StartDeepHealthCheck]) -> Done:
        command = ctx.cmd
        outputs = ctx.outputs.get("health_check", {})
        error = failures_error("health_check", command.cluster, outputs.get("results") or {})
        if error is not None:
            raise error
        return Done(noop=not outputs.get("targets"))

    return Workflow(
        kind=StartDeepHealthCheck.kind(),
        domain=StartDeepHealthCheck.domain,
        command=StartDeepHealthCheck,
        stages=(
            Stage("health_check", "Deep health check (StartClusterHealthCheck)", run, poll),
            Stage("verify", "Check every node's result", verify, needs=("health_check",)),
        ),
        on_finish=_finish_with_results("health_check", "health_check"),
    )


def node_recovery_workflow(port: NodesPort) -> Workflow[Any]:
    async def run(ctx: StageContext[SetNodeRecovery]) -> Done | Submitted:
        command = ctx.cmd
        actual = await read_recovery(port, command)
        diff = decide_recovery(actual.mode, command.mode.value)
        if not diff:
            return Done({"mode": actual.mode, "previous": actual.mode}, noop=True)
        if actual.status != "InService":
            raise TemporaryError(
                "ClusterBusy",
                f"HyperPod cluster {command.hyperpod_cluster} is {actual.status}; UpdateCluster"
                " needs InService",
                "retry the operation once the cluster is InService",
            )
        await port.set_node_recovery(command.hyperpod_cluster, command.mode.value)
        return Submitted(
            f"node-recovery:{command.mode.value}",
            {"previous": actual.mode, "mode": command.mode.value},
        )

    async def poll(ctx: StageContext[SetNodeRecovery]) -> Done | Pending:
        command = ctx.cmd
        actual = await read_recovery(port, command)
        if actual.status == "InService" and actual.mode == command.mode.value:
            return Done({"mode": actual.mode})
        if actual.status == "Failed":
            raise PermanentError(
                "ClusterFailed",
                f"HyperPod cluster {command.hyperpod_cluster} is Failed",
                "read its FailureMessage (GET /api/v1/clusters/{name}) before changing node recovery",
            )
        return Pending(f"cluster is {actual.status}, NodeRecovery {actual.mode}")

    return Workflow(
        kind=SetNodeRecovery.kind(),
        domain=SetNodeRecovery.domain,
        command=SetNodeRecovery,
        stages=(Stage("node_recovery", "Set NodeRecovery (UpdateCluster)", run, poll),),
    )


# ---- the watcher's diff --------------------------------------------------------------------


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


__all__ = [
    "ActionDecision",
    "BatchResult",
    "ClusterRecovery",
    "KubeNode",
    "NodeChanges",
    "NodeInstance",
    "NodeRecord",
    "NodesPort",
    "action_plan",
    "action_progress",
    "action_workflow",
    "decide_action",
    "decide_health_check",
    "decide_recovery",
    "diff_nodes",
    "health_check_plan",
    "health_check_workflow",
    "health_view",
    "join_nodes",
    "node_recovery_workflow",
    "record_of",
    "recovery_plan",
    "watch_changes",
]
