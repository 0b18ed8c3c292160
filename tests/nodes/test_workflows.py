"""The node workflows' stages against a fake port: batches, per-node results, noop, next steps."""

from __future__ import annotations

import pytest

from cluster_svc.domain.nodes.actions import action_workflow
from cluster_svc.domain.nodes.health_checks import health_check_workflow
from cluster_svc.domain.nodes.recovery import node_recovery_workflow
from shared.contracts.cluster import NodeRecovery
from shared.contracts.nodes import (
    DeleteNodes,
    RebootNodes,
    ReplaceNodes,
    SetNodeRecovery,
    StartDeepHealthCheck,
)
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done, Pending, Submitted
from tests.nodes.fakes import FakeNodes, context, nid

REFS = {"cluster": "c1", "region": "us-east-1", "hyperpod_cluster": "arn:hp/c1"}


async def test_a_reboot_of_thirty_nodes_is_two_calls_and_reports_every_node() -> None:
    port = FakeNodes(30)
    workflow = action_workflow(port, "reboot")
    act, verify = workflow.stages
    command = RebootNodes(**REFS, node_ids=[nid(i) for i in range(30)]).model_dump(mode="json")
    submitted = await act.run(context(command))
    assert isinstance(submitted, Submitted)
    assert [len(ids) for _, ids in port.calls] == [25, 5]
    assert act.poll is not None
    assert isinstance(await act.poll(context(command, own=submitted.outputs)), Pending)
    port.settle()
    done = await act.poll(context(command, own=submitted.outputs))
    assert isinstance(done, Done)
    assert {r["status"] for r in done.outputs["results"].values()} == {"rebooted"}
    assert len(done.outputs["results"]) == 30
    outputs = {"reboot_nodes": {**submitted.outputs, **done.outputs}}
    assert (await verify.run(context(command, outputs=outputs))) == Done(noop=False)


async def test_a_node_the_api_refuses_fails_the_operation_with_its_result_and_next_step() -> None:
    port = FakeNodes(3)
    port.refuse[nid(2)] = "InvalidInstanceStatus"
    act, verify = action_workflow(port, "reboot").stages
    command = RebootNodes(**REFS, node_ids=[nid(1), nid(2)]).model_dump(mode="json")
    submitted = await act.run(context(command))
    assert isinstance(submitted, Submitted)
    assert submitted.outputs["results"][nid(2)]["status"] == "failed"
    port.settle()
    assert act.poll is not None
    done = await act.poll(context(command, own=submitted.outputs))
    assert isinstance(done, Done)
    assert done.outputs["results"][nid(1)] == {"status": "rebooted"}
    with pytest.raises(PermanentError) as raised:
        await verify.run(context(command, outputs={"reboot_nodes": done.outputs}))
    assert raised.value.code == "NodesFailed"
    assert nid(2) in raised.value.message and "1 of 2" in raised.value.message


async def test_replace_reports_the_new_node_id() -> None:
    port = FakeNodes(2)
    act, _ = action_workflow(port, "replace").stages
    command = ReplaceNodes(**REFS, node_ids=[nid(0)]).model_dump(mode="json")
    submitted = await act.run(context(command))
    assert isinstance(submitted, Submitted)
    port.settle()
    assert act.poll is not None
    done = await act.poll(context(command, own=submitted.outputs))
    assert isinstance(done, Done)
    result = done.outputs["results"][nid(0)]
    assert result["status"] == "replaced" and result["replacement"] in port.nodes


async def test_deleting_nodes_already_shutting_down_is_a_noop_without_calls() -> None:
    port = FakeNodes(2)
    await port.batch("delete", "arn:hp/c1", [nid(0)])
    port.calls.clear()
    act, verify = action_workflow(port, "delete").stages
    command = DeleteNodes(**REFS, node_ids=[nid(0)]).model_dump(mode="json")
    done = await act.run(context(command))
    assert isinstance(done, Done) and done.noop and port.calls == []
    assert done.outputs["results"][nid(0)]["status"] == "skipped"
    verified = await verify.run(context(command, outputs={"delete_nodes": done.outputs}))
    assert isinstance(verified, Done) and verified.noop


async def test_unknown_nodes_fail_before_any_call() -> None:
    port = FakeNodes(1)
    act, _ = action_workflow(port, "replace").stages
    with pytest.raises(PermanentError) as raised:
        await act.run(context(ReplaceNodes(**REFS, node_ids=[nid(5)]).model_dump(mode="json")))
    assert raised.value.code == "NodeNotFound" and port.calls == []


async def test_a_failed_deep_health_check_says_reboot_next() -> None:
    port = FakeNodes(2)
    run_stage, verify = health_check_workflow(port).stages
    command = StartDeepHealthCheck(**REFS).model_dump(mode="json")
    submitted = await run_stage.run(context(command))
    assert isinstance(submitted, Submitted)
    assert port.calls[0][1][0]["InstanceGroupName"] == "gpu"
    port.settle()
    port.nodes[nid(1)] = port.nodes[nid(1)].__class__(
        nid(1), "gpu", "ml.g5.8xlarge", "Failure", "GPU stress failed", "gpu-1"
    )
    assert run_stage.poll is not None
    done = await run_stage.poll(context(command, own=submitted.outputs))
    assert isinstance(done, Done)
    assert done.outputs["results"][nid(0)] == {"status": "passed"}
    with pytest.raises(PermanentError) as raised:
        await verify.run(
            context(command, outputs={"health_check": {**submitted.outputs, **done.outputs}})
        )
    assert "reboot" in str(raised.value.hint)


async def test_node_recovery_is_a_noop_when_equal_and_one_update_otherwise() -> None:
    port = FakeNodes(1, mode="Automatic")
    (stage,) = node_recovery_workflow(port).stages
    same = SetNodeRecovery(**REFS, mode=NodeRecovery.AUTOMATIC).model_dump(mode="json")
    result = await stage.run(context(same))
    assert isinstance(result, Done) and result.noop and port.calls == []
    change = SetNodeRecovery(**REFS, mode=NodeRecovery.NONE).model_dump(mode="json")
    port.status = "Updating"
    with pytest.raises(TemporaryError):
        await stage.run(context(change))
    port.status = "InService"
    submitted = await stage.run(context(change))
    assert isinstance(submitted, Submitted)
    assert port.calls == [("update_cluster", {"NodeRecovery": "None"})]
    assert submitted.outputs == {"previous": "Automatic", "mode": "None"}
    assert stage.poll is not None
    assert await stage.poll(context(change)) == Done({"mode": "None"})
