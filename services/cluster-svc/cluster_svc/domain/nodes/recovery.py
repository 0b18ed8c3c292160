"""Node recovery: the cluster's NodeRecovery against the requested mode, and the workflow."""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.nodes.health import ClusterRecovery, NodesPort
from shared.contracts.nodes import SetNodeRecovery
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow


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
