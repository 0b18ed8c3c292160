"""Batch node actions (reboot, replace, delete): the decision that splits them into API-sized
batches and says which nodes are skipped or unknown (the dry run and the workflow both use
it), what happened to each node since, and the workflow."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_svc.domain.nodes.health import NodeInstance, NodesPort
from shared.contracts.events import Event
from shared.contracts.nodes import (
    BATCH_LIMIT,
    NODE_ACTION_COMMANDS,
    DeleteNodes,
    NodeAction,
    NodeCommand,
    NodeOperationFinished,
    RebootNodes,
    ReplaceNodes,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError
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

# Instance statuses a batch reboot or replace accepts; delete accepts all but ShuttingDown.
ACTIONABLE = frozenset({"Running", "Failure"})

BATCH_OPERATIONS: dict[str, str] = {
    "reboot": "BatchRebootClusterNodes",
    "replace": "BatchReplaceClusterNodes",
    "delete": "BatchDeleteClusterNodes",
}

NodeActionCommand = RebootNodes | ReplaceNodes | DeleteNodes


# A node still Failure this long after its reboot was accepted did not come back.
SETTLE_SECONDS = 30.0


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


def action_workflow(port: NodesPort, action: NodeAction) -> Workflow[Any]:
    command_type = NODE_ACTION_COMMANDS[action]
    stage_name = f"{action}_nodes"

    async def run(ctx: StageContext[NodeActionCommand]) -> Done | Submitted:
        command = ctx.cmd
        before = await port.list_nodes(command.hyperpod_cluster)
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
        own = ctx.own_outputs
        submitted = own.get("submitted") or {}
        elapsed = time.time() - float(own.get("submitted_at") or time.time())
        finished, progress = action_progress(
            action, submitted, await port.list_nodes(ctx.cmd.hyperpod_cluster), elapsed
        )
        results = {**(own.get("results") or {}), **progress}
        if not finished:
            waiting = sum(1 for r in progress.values() if r["status"] == "in_progress")
            return Pending(
                f"{waiting} of {len(submitted)} nodes still being {_requested_state(action)}"
            )
        return Done({"results": results})

    async def verify(ctx: StageContext[NodeActionCommand]) -> Done:
        results = ctx.outputs.get(stage_name, {}).get("results") or {}
        error = failures_error(action, ctx.cmd.cluster, results)
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
        on_finish=finish_with_results(command_type, action, stage_name),
    )


def _batch_hint(action: str, code: str | None) -> str:
    if code in ("InstanceIdNotFound", "NodeIdNotFound"):
        return "list the nodes (GET .../nodes): the node may have been replaced meanwhile"
    if action == "reboot":
        return "wait until the node is Running or Failure and reboot it again; if it keeps failing, replace it"
    if action == "replace":
        return "wait until the node is Running or Failure and replace it again"
    return "wait for the node's current operation to end, then delete it again"


def finish_with_results(command: type[NodeCommand], action: str, stage_name: str) -> FinalHook:
    async def finish(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
        results = outcome.outputs.get(stage_name, {}).get("results") or {}
        if not results:
            return []
        cluster = command.from_payload(outcome.command).cluster
        return [NodeOperationFinished(cluster=cluster, action=action, results=results)]

    return finish
