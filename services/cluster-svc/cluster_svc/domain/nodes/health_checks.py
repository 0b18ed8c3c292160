"""Deep health checks: which nodes can be checked, their progress, and the workflow."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster_svc.domain.nodes.actions import (
    failures_error,
    finish_with_results,
    unknown_nodes_error,
)
from cluster_svc.domain.nodes.health import NodeInstance, NodesPort
from shared.contracts.nodes import StartDeepHealthCheck
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow


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


def health_check_workflow(port: NodesPort) -> Workflow[Any]:
    async def run(ctx: StageContext[StartDeepHealthCheck]) -> Done | Submitted:
        command = ctx.cmd
        decision = decide_health_check(command, await port.list_nodes(command.hyperpod_cluster))
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
        targets = ctx.own_outputs.get("targets") or {}
        finished, progress = health_check_progress(
            targets, await port.list_nodes(ctx.cmd.hyperpod_cluster)
        )
        if not finished:
            waiting = sum(1 for r in progress.values() if r["status"] == "in_progress")
            return Pending(f"{waiting} of {len(targets)} nodes still being checked")
        return Done({"results": {**(ctx.own_outputs.get("results") or {}), **progress}})

    async def verify(ctx: StageContext[StartDeepHealthCheck]) -> Done:
        outputs = ctx.outputs.get("health_check", {})
        error = failures_error("health_check", ctx.cmd.cluster, outputs.get("results") or {})
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
        on_finish=finish_with_results(StartDeepHealthCheck, "health_check", "health_check"),
    )
